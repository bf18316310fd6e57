"""Read a saved ``.flow`` file back: the ProxAI metadata of each LLM flow.

The demo (docs/usage.md, "The demo") saves annotated flows with ``mitmdump -w`` and prints a table from
them, read back with mitmproxy's ``FlowReader`` (only ``proxai.mitm`` imports mitmproxy).

Rule: the outcome of each saved flow (completed / closed / error / unfinished_tool,
docs/design/outcomes.md).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mitmproxy import http, io
from mitmproxy.exceptions import FlowReadException


@dataclass(frozen=True, slots=True)
class SavedFlow:
    method: str
    path: str
    headers: dict[str, str]  # only the x-proxai-* request headers (never credentials)
    status_code: int | None
    proxai: dict[str, Any] | None
    comment: str
    marked: str
    response_bytes: int = 0  # size of the stored response body (raw), 0 when none was stored


def read_saved_flows(path: str) -> list[SavedFlow]:
    """Every HTTP flow of the file; a truncated last record is ignored."""
    out: list[SavedFlow] = []
    with open(path, "rb") as fh:
        try:
            for f in io.FlowReader(fh).stream():
                if not isinstance(f, http.HTTPFlow):
                    continue
                meta = f.metadata.get("proxai")
                out.append(
                    SavedFlow(
                        method=f.request.method,
                        path=f.request.path,
                        headers={
                            k.lower(): v
                            for k, v in f.request.headers.items()  # type: ignore[no-untyped-call]
                            if k.lower().startswith("x-proxai")
                        },
                        status_code=f.response.status_code if f.response is not None else None,
                        proxai=meta if isinstance(meta, dict) else None,
                        comment=f.comment,
                        marked=f.marked,
                        response_bytes=len(f.response.raw_content or b"") if f.response is not None else 0,
                    )
                )
        except FlowReadException:
            pass
    return out
