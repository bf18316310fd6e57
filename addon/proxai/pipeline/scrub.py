"""Removing the operator's key from a streamed reply on its way to the client (the rule is written in
docs/security.md, "The operator's key never reaches a client").

A route with ``auth = { env = "VAR" }`` sends the operator's key upstream. An upstream that quotes
the key it received (an "invalid API key" error, an echo) must not hand it to the client. Buffered
replies are scrubbed whole (``mitm/routing.py: scrub_operator_key``); a stream the route passes on
byte for byte (same protocol, not normalized) is scrubbed here, as it goes.

``KeyScrub`` replaces every occurrence of one secret in a byte stream fed in pieces, wherever the
pieces split it: the output is exactly ``whole_stream.replace(secret, replacement)``, whatever the
chunking. Only bytes that could be the start of the secret at the end of a piece are held back
(fewer than ``len(secret)``: memory is bounded by the key's length), until the next piece says
whether the secret goes on; ``flush`` hands them over at the end. A piece with no byte of a possible
match goes out as it came (the same object: nothing copied).

``ScrubbingStream`` wraps a stream callable (the carrier, or what sits on it) and scrubs what it
returns, optionally decoding it first (an upstream that compressed although asked not to). It is
installed only on flows whose route injects an env key: every other flow (observe-only included)
has no wrapper at all and gets exactly the upstream bytes.

Pure: no mitmproxy, no clock.
"""

from __future__ import annotations

from collections.abc import Callable

from proxai.core.decode import Decoder
from proxai.core.errors import DecodeError

StreamFn = Callable[[bytes], bytes | list[bytes]]


class KeyScrub:
    """Streamed ``replace(secret, replacement)``: ``feed`` each piece, ``flush`` at the end."""

    __slots__ = ("_first", "_held", "replacement", "secret")

    def __init__(self, secret: bytes, replacement: bytes) -> None:
        if not secret:
            raise ValueError("the secret to scrub is empty")
        self.secret = secret
        self.replacement = replacement
        self._first = secret[:1]
        self._held = b""  # a proper prefix of ``secret``: the end of what came, not yet sent

    @property
    def held(self) -> int:
        """How many bytes are held back (always fewer than ``len(secret)``)."""
        return len(self._held)

    def feed(self, data: bytes) -> bytes:
        """The bytes that can go out now, with every whole occurrence of the secret replaced."""
        if not data:
            return b""
        buf = self._held + data if self._held else data
        secret = self.secret
        n = len(secret)
        # Where the last whole occurrence ends (leftmost, non-overlapping: as ``bytes.replace``).
        # A held tail starts after it: a byte of a match is never held or matched twice.
        last_end = _end_of_last_match(buf, secret)
        cut = _tail_start(buf, secret, max(last_end, len(buf) - n + 1))
        self._held = buf[cut:] if cut < len(buf) else b""
        out = buf[:cut] if cut < len(buf) else buf
        if last_end:
            out = out.replace(secret, self.replacement)
        return out

    def flush(self) -> bytes:
        """What is still held: at the end of the stream it is not a secret (it never completed)."""
        out, self._held = self._held, b""
        return out


def _end_of_last_match(buf: bytes, secret: bytes) -> int:
    """The end of the last match of a left-to-right, non-overlapping scan (``bytes.replace``'s)."""
    n = len(secret)
    pos = buf.find(secret)
    end = 0
    while pos >= 0:
        end = pos + n
        pos = buf.find(secret, end)
    return end


def _tail_start(buf: bytes, secret: bytes, start: int) -> int:
    """Where the longest suffix of ``buf`` that begins at or after ``start`` and is a proper prefix
    of ``secret`` starts; ``len(buf)`` when there is none."""
    first = secret[:1]
    pos = buf.find(first, max(start, 0))
    while pos >= 0:
        if secret.startswith(buf[pos:]):
            return pos  # the leftmost candidate is the longest suffix
        pos = buf.find(first, pos + 1)
    return len(buf)


class ScrubbingStream:
    """A stream callable that scrubs one secret from what ``inner`` returns.

    ``decoder`` (optional) undoes a content-encoding first: the caller then removes the
    ``content-encoding`` header, since the client gets the decoded bytes. When that decoding fails
    the rest of the stream is not sent (what cannot be read cannot be scrubbed)."""

    __slots__ = ("decoder", "failed", "inner", "scrub", "sent")

    def __init__(
        self, inner: StreamFn, secret: bytes, replacement: bytes, decoder: Decoder | None = None
    ) -> None:
        self.inner = inner
        self.scrub = KeyScrub(secret, replacement)
        self.decoder = decoder
        self.failed: str | None = None
        self.sent = 0  # bytes the client got (a replaced key, a decoded reply: not the carrier's count)

    def __call__(self, chunk: bytes) -> bytes | list[bytes]:
        out = self.inner(chunk)
        pieces = [out] if isinstance(out, bytes) else out
        scrub = self.scrub
        sent: list[bytes] = []
        for piece in pieces:
            data = self._decode(piece) if self.decoder is not None else piece
            if data:
                sent.append(scrub.feed(data))
        if chunk == b"":
            if self.decoder is not None and self.failed is None:
                try:
                    sent.append(scrub.feed(self.decoder.flush()))
                except DecodeError as exc:
                    self.failed = str(exc)
            sent.append(scrub.flush())
        out = [p for p in sent if p]  # never b"" mid-stream
        self.sent += sum(len(p) for p in out)
        return out

    def _decode(self, piece: bytes) -> bytes:
        assert self.decoder is not None
        if self.failed is not None:
            return b""
        try:
            return self.decoder.feed(piece)
        except DecodeError as exc:
            self.failed = str(exc)
            return b""
