"""Golden files for request and JSON-response translation, per direction and rule.

``tests/fixtures/translate/<from>-to-<to>/<case>.in.json``:

- ``req_*``: a client request in ``<from>``'s protocol; ``.out.json`` holds the upstream body
  in ``<to>``'s protocol plus what was dropped (thinking) and ignored (hints);
- ``resp_*``: an upstream JSON reply in ``<from>``'s protocol; ``.out.json`` holds the client
  body in ``<to>``'s protocol and the dropped counts;
- ``rej_*`` / ``rej_resp_*``: input that must be rejected; ``.err.json`` holds the exact field
  and message of the ``TranslationError``.

``PROXAI_UPDATE_GOLDEN=1`` rewrites the expected files (review the diff before committing).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from proxai.core.errors import TranslationError
from proxai.core.model import Protocol
from proxai.translate.request import translate_request
from proxai.translate.response import translate_response

ROOT = Path(__file__).resolve().parents[1] / "fixtures" / "translate"
UPDATE = os.environ.get("PROXAI_UPDATE_GOLDEN") == "1"
CREATED = 1_767_225_600

CASES = sorted(ROOT.glob("*/*.in.json"))


def _run(path: Path) -> tuple[str, dict[str, Any]]:
    frm, to = (Protocol(p) for p in path.parent.name.split("-to-"))
    case = path.name.removesuffix(".in.json")
    body = json.loads(path.read_text())
    is_response = case.startswith(("resp_", "rej_resp_"))
    try:
        if is_response:
            r = translate_response(body, frm, to, created=CREATED)
            out: dict[str, Any] = {"body": r.body, "dropped": r.dropped, "stop": str(r.stop)}
            if r.left_out:
                out["left_out"] = r.left_out
        else:
            t = translate_request(body, frm, to)
            out = {"body": t.body, "dropped": t.dropped, "ignored": list(t.ignored), "stream": t.stream}
            if t.notes:
                out["notes"] = list(t.notes)
    except TranslationError as exc:
        return "err", {"field": exc.field, "message": exc.reason}
    return "out", out


@pytest.mark.parametrize(
    "path", CASES, ids=[f"{p.parent.name}/{p.name.removesuffix('.in.json')}" for p in CASES]
)
def test_golden(path: Path) -> None:
    kind, got = _run(path)
    case = path.name.removesuffix(".in.json")
    expected_kind = "err" if case.startswith("rej_") else "out"
    expected_path = path.with_name(f"{case}.{expected_kind}.json")
    if UPDATE and kind == expected_kind:
        expected_path.write_text(json.dumps(got, indent=2, ensure_ascii=False) + "\n")
    assert kind == expected_kind, f"{case}: expected {expected_kind}, got {kind}: {got}"
    assert got == json.loads(expected_path.read_text())


def test_every_direction_has_cases() -> None:
    dirs = {p.parent.name for p in CASES}
    names = [str(p) for p in Protocol]
    assert dirs == {f"{a}-to-{b}" for a in names for b in names if a != b}
    for d in dirs:
        cases = [p.name for p in CASES if p.parent.name == d]
        assert any(c.startswith("req_") for c in cases), d
        assert any(c.startswith("resp_") for c in cases), d
        assert any(c.startswith("rej_") for c in cases), d
