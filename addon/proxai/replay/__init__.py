"""Replay of recorded runs: requests answered from ``.flow`` files (docs/replay.md).

Sans-IO: ``match`` (a request's conversation with the volatile parts left out, and where two
differ), ``cassette`` (the recorded answers, served in recorded order; the divergence message of
a miss) and ``plan`` (what the client receives, and when). The mitmproxy side (options, the
loopback server that plays a plan, reading the files) is ``proxai.mitm.replay``. The rules:
docs/design/replay.md.
"""
