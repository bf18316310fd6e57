"""The upstream's SSE comment lines in a writer's output (docs/design/protocol-grammars.md, "SSE
comment lines"): a gateway's keep-alive (``: OPENROUTER PROCESSING``) is written to a normalized or
translated client as it came, at its place among the events the writer writes, so the client hears
from the stream while the upstream works. Every official SDK's SSE decoder skips a line that
starts with ``:`` (docs/conformance.md).

The flow's observer hands each writer the lines (``Sink.comment``). While the source's stop waits
for its end (``Phase.TERMINAL``: a Chat ``finish_reason`` before ``[DONE]``, Anthropic's
``message_delta`` before ``message_stop``) the writer holds the stop, so the lines wait too and go
out right after the end: a comment never overtakes bytes of an event that came before it. What
waits is bounded (``MAX_HELD`` bytes of whole lines; past it a line is not written, the flow's
note counts it with the rest).
"""

from __future__ import annotations

MAX_HELD = 64 * 1024


class Comments:
    """A writer's comment lines that wait for the end of the client's stream."""

    __slots__ = ("held", "size")

    def __init__(self) -> None:
        self.held: list[bytes] = []
        self.size = 0

    def add(self, out: list[bytes], lines: bytes, *, hold: bool) -> None:
        """``lines`` (each with its LF) into ``out`` now, or (``hold``) at the end."""
        if not hold:
            if self.held:
                self.flush(out)
            out.append(lines)
        else:
            room = MAX_HELD - self.size
            if len(lines) > room:  # the whole lines that fit
                lines = lines[: lines.rfind(b"\n", 0, room) + 1]
            if lines:
                self.held.append(lines)
                self.size += len(lines)

    def flush(self, out: list[bytes]) -> None:
        """The lines that waited, after the end the writer just wrote into ``out``."""
        if self.held:
            out.extend(self.held)
            self.held.clear()
            self.size = 0
