"""The neutral form's values (``ir.value``): each class fields, constructs, compares, hashes,
prints, matches and copies (``dataclasses.replace``) exactly as the ``dataclass(frozen=True,
slots=True)`` it was, and mypy refuses an assignment to a field, which the frozen class refused
at run time (docs/performance.md, "The routed request hook, 2026-12-03 night")."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from proxai.translate import headers, ir, request

VALUES = [
    *(
        cls
        for cls in vars(ir).values()
        if isinstance(cls, type) and cls.__module__ == ir.__name__ and dataclasses.is_dataclass(cls)
        if cls not in (ir.UsageIR, ir.ResponseIR)  # mutable by design (built up by the readers)
    ),
    request.TranslatedRequest,
    headers.HeaderPlan,
]


def _frozen_twin(cls: type) -> type:
    """``cls`` as ``dataclass(frozen=True, slots=True)`` declares it."""
    specs: list[Any] = []
    for f in dataclasses.fields(cls):
        spec = dataclasses.field(default=f.default, default_factory=f.default_factory)
        specs.append((f.name, f.type, spec))
    return dataclasses.make_dataclass(cls.__name__, specs, frozen=True, slots=True)


def _args(cls: type, salt: str) -> list[str]:
    return [f"{salt}{i}" for i, _ in enumerate(dataclasses.fields(cls))]


def test_the_values_are_the_request_side_of_the_neutral_form() -> None:
    names = {cls.__name__ for cls in VALUES}
    assert {"RequestIR", "Message", "TextPart", "ToolDef", "RequestOptions", "TranslatedRequest"} <= names
    assert len(VALUES) == 20


@pytest.mark.parametrize("cls", VALUES, ids=lambda c: c.__name__)
def test_a_value_is_what_its_frozen_dataclass_was(cls: type) -> None:
    twin = _frozen_twin(cls)
    assert [(f.name, f.type, f.default, f.default_factory) for f in dataclasses.fields(cls)] == [
        (f.name, f.type, f.default, f.default_factory) for f in dataclasses.fields(twin)
    ]
    assert cls.__match_args__ == twin.__match_args__  # type: ignore[attr-defined]
    assert cls.__slots__ == twin.__slots__
    a, b = cls(*_args(cls, "a")), twin(*_args(cls, "a"))
    assert repr(a) == repr(b)
    assert hash(a) == hash(b)
    assert dataclasses.astuple(a) == dataclasses.astuple(b)
    assert a == cls(*_args(cls, "a"))
    assert a != cls(*_args(cls, "c"))
    assert hash(a) == hash(cls(*_args(cls, "a")))
    first = dataclasses.fields(cls)[0].name
    changed = dataclasses.replace(a, **{first: "z"})
    assert getattr(changed, first) == "z" and getattr(a, first) == "a0"  # a copy: ``a`` unchanged
    assert dataclasses.astuple(changed) == dataclasses.astuple(dataclasses.replace(b, **{first: "z"}))
    assert not hasattr(a, "__dict__")


def test_a_value_of_another_class_with_the_same_fields_differs() -> None:
    assert ir.TextPart("x", "at") != ir.RefusalPart("x", "at")
    assert ir.TextPart("x", "at") == ir.TextPart("x", "at")


def test_mypy_refuses_an_assignment_to_a_field(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import mypy.api as mypy  # a dev dependency (pyproject.toml), installed with the suite

    monkeypatch.setenv("MYPYPATH", str(Path(__file__).resolve().parents[2] / "addon"))
    program = (
        "import dataclasses\n"
        "from proxai.translate import ir, request\n"
        "p = ir.TextPart('a', 'b')\n"
        "p.text = 'c'\n"
        "o = ir.RequestOptions()\n"
        "o.strict = True\n"
        "r = request.TranslatedRequest({}, False, None)\n"
        "r.stream = True\n"
        "q = dataclasses.replace(ir.ToolChoice('auto', 'tool_choice'), mode='none')\n"
    )
    args = ["--config-file=", "--strict", f"--cache-dir={tmp_path}", "--follow-imports=silent", "-c", program]
    out, err, _ = mypy.run(args)
    assert [line for line in out.splitlines() if ": error:" in line] == [
        '<string>:4: error: Property "text" defined in "TextPart" is read-only  [misc]',
        '<string>:6: error: Property "strict" defined in "RequestOptions" is read-only  [misc]',
        '<string>:8: error: Property "stream" defined in "TranslatedRequest" is read-only  [misc]',
    ], (out, err)
