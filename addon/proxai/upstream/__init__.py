"""The embedded fake LLM upstream: a real loopback server that plays scripted scenarios.

All three protocols (Anthropic Messages, OpenAI Chat Completions, OpenAI Responses), streamed
and non-streamed, realistic shapes and timing.
``FakeUpstream`` runs in-process (tests, demo); ``python -m proxai.upstream`` runs it alone.
docs/upstream.md documents every scenario, the selection rules and the control headers.

Modules: ``server`` (thread + loop + TLS), ``http1`` / ``http2`` (transports), ``play``
(request -> scenario + renderer), ``playback`` (timing, keepalives, compression into a sink),
``scenarios`` (the scripts), ``agent`` (agent mode), ``profiles`` (request validation),
``ops`` (the script language), ``transcript`` (accumulated message), ``render_anthropic`` /
``render_chat`` / ``render_responses`` (one renderer per protocol), ``wire`` (shared
framing), ``compress`` (content-encoding), ``cert`` (throw-away CA).

Scenarios (``list_scenarios()``; model name or ``x-proxai-scenario`` header):

===========================  ================================================================
text                         plain text answer
parallel_tools               text + two tool calls with interleaved argument deltas
thinking                     thinking + signature / reasoning summary, then text
redacted_thinking            redacted thinking / encrypted reasoning, then text
max_tokens                   text cut by the token limit
refusal                      a refusal
error_midstream              some text, then an overloaded error event
truncated                    some text, then a clean end without terminal event
reset                        some text, then a connection / stream reset
dropped                      some text, then the connection closes mid-body
rate_limit                   HTTP 429 + retry-after
prompt_too_long              HTTP 400 with the protocol's wording
slow_tokens                  0.3 s between tokens (healthy)
long_reasoning               20 s thinking pause with keepalives (healthy)
tool_stall                   2nd of two parallel tool calls stalls 60 s, keepalives continue
total_stall                  60 s of silence mid tool arguments
idle_stall                   60 s of silence before any content
body_stall                   60 s of silence mid reply (not streamed: after headers, half body)
empty_tool_delta             empty argument deltas
args_in_done                 arguments only at the close (Responses: only in ``.done``)
last_fragment_in_finish      last argument fragment with the close (Chat: finish chunk)
cache_usage                  cache read / write tokens in usage
html_500                     HTTP 502 with an HTML body
malformed_json               one event with broken JSON
wrong_content_type           SSE labelled application/json (or no content-type)
huge_line                    one enormous line without newline
slowloris                    one byte at a time
big_stream                   a large stream (x-proxai-events deltas), generated lazily
gzip                         text with content-encoding gzip
agent                        a call of a declared tool, then a final answer (agent mode)
===========================  ================================================================

Rules: docs/design/upstream.md ("Realistic scenarios": the situations a real upstream
produces, among them the five paths every provider test covers: success, error, cancel,
parallel tool calls, truncated tail).
"""

from .play import RecordedRequest
from .scenarios import SCENARIOS, list_scenarios
from .server import FakeUpstream

__all__ = ["SCENARIOS", "FakeUpstream", "RecordedRequest", "list_scenarios"]
