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

from proxai.safety.redact import redact_text


# Printable text is left as it is; every other character (C0 / C1 controls, DEL, format characters
# such as the bidirectional overrides and zero-width marks, line and paragraph separators, unassigned
# and private-use code points) is shown as an escape. ``str.isprintable`` is the test: space is the
# one separator it accepts.
def _visible(ch: str) -> str:
    code = ord(ch)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _escape_line(line: str) -> str:
    return "".join(ch if ch.isprintable() else _visible(ch) for ch in line)


def escape(text: str, *, newlines: bool = True) -> str:
    """``text`` with every character that is not printable shown as an escape.

    ``newlines``: keep ``\\n`` and ``\\t`` as they are (multi-line output ProxAI composed itself);
    pass False for one value that must stay on one line (a field of a table row, a log value)."""
    if text.isprintable():
        return text
    if not newlines:
        return _escape_line(text)
    return "\n".join(
        "\t".join(p if p.isprintable() else _escape_line(p) for p in line.split("\t"))
        for line in text.split("\n")
    )


def escape_json(text: str) -> str:
    """JSON text made terminal-safe and still valid JSON: the characters ``escape`` shows are
    written as ``\\uNNNN`` escapes (a JSON encoder already escapes C0 controls; C1 controls and
    the Unicode reordering characters are valid unescaped in JSON, and dangerous on a terminal)."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() or ch in "\n\t" else _json_escape(ch) for ch in text)


def _json_escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000  # a UTF-16 surrogate pair, as JSON writes a character beyond the BMP
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def log_safe(value: object) -> str:
    """One value for a log line: redacted (``proxai.safety.redact``) and escaped onto one line."""
    return escape(redact_text(str(value)), newlines=False)
