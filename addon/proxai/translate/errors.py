"""Upstream error bodies in the client's protocol (docs/translation.md, "Errors").

An upstream 4xx/5xx (or a Responses body with ``status: "failed"``) is read in any of the
shapes vendors use (Anthropic ``{"type":"error","error":{...}}``, OpenAI ``{"error":{...}}``,
``{"error": "text"}``, FastAPI-style ``{"detail": ...}``, plain text), classified with
``proxai.core.errors.kinds.classify_error`` (prompt_too_long, rate_limited, overloaded,
authentication, ...) and rebuilt with ``proxai.core.errors.shapes.error_body`` in the client's shape,
so the client's SDK raises the matching exception class. The status follows the kind
(``http_status_for``), e.g. Anthropic's 529 overloaded becomes 503 for an OpenAI client; an
unclassified error keeps the upstream's status.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from proxai.core.errors.kinds import classify_error, error_message
from proxai.core.errors.shapes import error_body, http_status_for
from proxai.core.model import ErrorKind, Protocol

_MAX_TEXT = 2000


@dataclass(frozen=True, slots=True)
class TranslatedError:
    status: int
    body: bytes
    kind: ErrorKind
    message: str
    upstream_type: str | None


def is_failed_body(upstream: Protocol, body: dict[str, Any]) -> bool:
    """A 200 Responses body that reports a failure (``status: "failed"``)."""
    return upstream is Protocol.OPENAI_RESPONSES and body.get("status") == "failed"


def is_error_body(body: dict[str, Any]) -> bool:
    """A body that carries only an error (no ``choices`` / ``content`` / ``output``)."""
    if not any(k in body for k in ("choices", "content", "output")):
        return body.get("type") == "error" or isinstance(body.get("error"), dict | str)
    return False


def extract_error(raw: bytes) -> tuple[str, str | None]:
    """``(message, type-or-code)`` from an upstream error body of any common shape."""
    try:
        value: Any = orjson.loads(raw)
    except orjson.JSONDecodeError:
        text = raw[:_MAX_TEXT].decode("utf-8", "replace").strip()
        return (text or "the upstream returned an empty error body"), None
    if isinstance(value, dict):
        err = value.get("error")
        if isinstance(err, dict):
            msg = err.get("message")
            code = err.get("code") if isinstance(err.get("code"), str) else None
            etype = err.get("type") if isinstance(err.get("type"), str) else None
            return (
                msg if isinstance(msg, str) and msg else orjson.dumps(err).decode()[:_MAX_TEXT]
            ), code or etype
        if isinstance(err, str):
            return err, None
        for key in ("detail", "message"):
            if isinstance(value.get(key), str):
                return value[key], None
        return orjson.dumps(value).decode()[:_MAX_TEXT], None
    return str(value)[:_MAX_TEXT], None


def translate_error(raw: bytes, status: int, client: Protocol) -> TranslatedError:
    """The client-protocol error for an upstream error body ``raw`` sent with ``status``."""
    message, etype = extract_error(raw)
    message = error_message(message)
    kind = classify_error(message, status=status, type=etype)
    if kind in (ErrorKind.SERVER, ErrorKind.UNKNOWN):
        out_status = status if status >= 400 else 502
    else:
        out_status = http_status_for(kind, client)
    return TranslatedError(out_status, error_body(client, kind, message), kind, message, etype)
