"""The real-streams corpus: streams recorded from real providers by other open-source projects
(``tests/fixtures/real/``), read by the official SDKs and run through ProxAI.

``python -m corpus`` runs every stream through observe, normalize and both cross-protocol
translations, reads each output back with the client protocol's real Python SDK, and writes the
table into ``docs/real-streams.md``. The tests in ``tests/real/`` assert the same facts stream by
stream. docs/design/real-streams.md states the rules this checks.
"""
