"""Terminal-safe text: what came from the network or from a flow file, escaped before a terminal
shows it.

The rule is written down in ``docs/security.md`` ("Terminal output"). An upstream, a client or a
flow file someone sent can carry escape sequences (clipboard writes, window titles, screen clears,
cursor moves) or text-direction overrides that make a line read differently from what it holds.
``escape`` turns every such character into a visible ``\\xNN`` / ``\\uNNNN`` escape, so what reaches
the terminal is plain printable text. Every output path that prints strings ProxAI did not write
itself (the report, the ``proxai.*`` commands, log lines, flow comments, the contentview) calls it
on the final text. Pure and linear.
"""

from __future__ import annotations

import re

from proxai.redact import redact_text

# C0 controls (but tab / newline when kept), DEL, C1 controls, and the Unicode characters that
# reorder or hide text: bidirectional embeddings / overrides / isolates, the line and paragraph
# separators, zero-width joiners and marks, the byte-order mark.
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ufff9-\ufffb]"
)
_UNSAFE_ALL = re.compile(_UNSAFE.pattern[:1] + "\t\n" + _UNSAFE.pattern[1:])


def _visible(m: re.Match[str]) -> str:
    code = ord(m.group(0))
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape(text: str, *, newlines: bool = True) -> str:
    """``text`` with every control and text-reordering character shown as an escape.

    ``newlines``: keep ``\\n`` and ``\\t`` as they are (multi-line output ProxAI composed itself);
    pass False for one value that must stay on one line (a field of a table row, a log value)."""
    pattern = _UNSAFE if newlines else _UNSAFE_ALL
    return pattern.sub(_visible, text) if pattern.search(text) else text


def escape_json(text: str) -> str:
    """JSON text made terminal-safe and still valid JSON: the characters ``escape`` shows are
    written as ``\\uNNNN`` escapes (a JSON encoder already escapes C0 controls; C1 controls and
    the Unicode reordering characters are valid unescaped in JSON, and dangerous on a terminal)."""
    return _UNSAFE.sub(lambda m: f"\\u{ord(m.group(0)):04x}", text)


def log_safe(value: object) -> str:
    """One value for a log line: redacted (``proxai.redact``) and escaped onto one line."""
    return escape(redact_text(str(value)), newlines=False)
