"""A message's headers read in one pass over their raw fields, for the hooks that run on every flow
(docs/performance.md, "Per-flow work: the request and responseheaders hooks").

mitmproxy's ``Headers`` lowercases every field's name on each lookup, through several Python calls,
and a missing header raises and catches a ``KeyError``: about as much work as the rest of a small
hook's step. These functions give what ``headers.get(name)``, ``name in headers``,
``message.get_content(strict=False)`` and ``{name: headers[name] for name in headers}`` give (the
values of a repeated header folded with ``", "`` in their order, as ``Headers`` folds them; names
and values decoded as ``Headers`` decodes them), with one loop over the fields. Names are passed as
lowercase bytes. ``put`` and ``drop`` change the fields as ``headers[name] = value`` and
``del headers[name]`` change them, for a routed request's rewrite (tests/mitm/test_fields.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mitmproxy import http


def header(headers: http.Headers, name: bytes) -> str | None:
    """``headers.get(name)``: the folded value of the fields named ``name`` (lowercase), or None."""
    found: str | None = None
    for key, value in headers.fields:
        if key.lower() == name:
            text = value.decode("utf-8", "surrogateescape")
            found = text if found is None else f"{found}, {text}"
    return found


def has(headers: http.Headers, name: bytes) -> bool:
    """``name in headers`` (``name`` lowercase)."""
    for key, _ in headers.fields:  # noqa: SIM110 (a loop: no generator made per call)
        if key.lower() == name:
            return True
    return False


def content(message: http.Message) -> bytes | None:
    """``message.get_content(strict=False)``: the raw body unless a content-encoding is named,
    then mitmproxy's decoding of it (the raw body when it cannot be decoded)."""
    raw = message.raw_content
    if raw is None or not header(message.headers, b"content-encoding"):
        return raw
    return message.get_content(strict=False)


def as_dict(headers: http.Headers) -> dict[str, str]:
    """``{name: headers[name] for name in headers}``: one entry per name (as first spelt), its
    fields' values folded, in the order the names first appear."""
    names: dict[bytes, str] = {}
    values: dict[bytes, list[str]] = {}
    for key, value in headers.fields:
        low = key.lower()
        text = value.decode("utf-8", "surrogateescape")
        if low in values:
            values[low].append(text)
        else:
            names[low] = key.decode("utf-8", "surrogateescape")
            values[low] = [text]
    return {names[low]: ", ".join(vs) for low, vs in values.items()}


def put(headers: http.Headers, name: bytes, value: str) -> None:
    """``headers[name] = value``: the first field of that name (any case) takes the value and keeps
    its spelling and place, the others go; without one, ``name`` as given is added last."""
    low = name.lower()
    raw = value.encode("utf-8", "surrogateescape")
    out: list[tuple[bytes, bytes]] = []
    found = False
    for field in headers.fields:
        if field[0].lower() != low:
            out.append(field)
        elif not found:
            out.append((field[0], raw))
            found = True
    if not found:
        out.append((name, raw))
    headers.fields = tuple(out)


def drop(headers: http.Headers, names: frozenset[bytes]) -> None:
    """``del headers[name]`` for each of ``names`` (lowercase) that it holds: every field of those
    names, in any case, removed."""
    kept = tuple(field for field in headers.fields if field[0].lower() not in names)
    if len(kept) != len(headers.fields):
        headers.fields = kept
