"""Fault rules: which flows get which fault, validated once at the trust boundary.

A rule names a fault (``fault``), the flows it applies to (``filter``, a mitmproxy filter
expression the shell compiles and matches; empty: every LLM flow), how many of them (``count``:
the next N matching flows) and how often (``probability`` drawn from a generator seeded with
``seed``, so a run with the same flows in the same order faults the same ones), and where and how
the fault happens. docs/agent-testing.md is the user's guide, docs/design/faults.md the rules.

Rules come from the ``proxai_faults`` option (a TOML or JSON file, or inline rules) or from the
``proxai.fault`` command (one inline rule). The inline form is ``KIND key=value ...``, shell-quoted,
several rules separated by ``;``::

    http_error error=overloaded count=1
    stall at=tool_args seconds=30 filter="~u /v1/messages"
    slow rate=5 probability=0.5 seed=7

The rules are pydantic models, read here; ``proxai.faults.plan`` holds them in force. The shell
imports this module with the first rule it reads, so a proxy without faults never imports
pydantic (docs/design/footprint.md). Sans-IO: no clock, no mitmproxy.
"""

from __future__ import annotations

import json
import shlex
import tomllib
from pathlib import Path
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from proxai.core.errors import ConfigError
from proxai.faults.plan import STREAM_FAULTS, FaultError, FaultKind, Where


class FaultRule(BaseModel):
    """One rule. Fields that do not apply to its ``fault`` are refused, so a typo is an error."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    fault: FaultKind
    filter: str = ""
    count: int | None = Field(default=None, ge=1)
    probability: float = Field(default=1.0, ge=0.0, le=1.0)
    seed: int = 0
    # http_error / error_event: which provider error
    error: FaultError = "overloaded"
    # http_error: the status (default: the provider's own for ``error``) and a retry-after, seconds
    status: int | None = Field(default=None, ge=400, le=599)
    retry_after: float | None = Field(default=None, ge=0.0)
    # stream faults: where. ``start`` + ``after_events`` K: after the client's first K events;
    # ``first_token``: right before the first event that carries content; ``tool_args``: right
    # after the first argument delta of the first tool call (the middle of a tool call).
    at: Where = "start"
    after_events: int = Field(default=0, ge=0)
    # stall: seconds the client gets nothing
    seconds: float | None = Field(default=None, gt=0.0)
    # slow: content events per second at most
    rate: float | None = Field(default=None, gt=0.0)

    @model_validator(mode="after")
    def _fits_its_fault(self) -> Self:
        f = self.fault
        given = self.model_fields_set
        only: dict[str, frozenset[str]] = {
            "error": frozenset({"http_error", "error_event"}),
            "status": frozenset({"http_error"}),
            "retry_after": frozenset({"http_error"}),
            "at": STREAM_FAULTS,
            "after_events": STREAM_FAULTS,
            "seconds": frozenset({"stall"}),
            "rate": frozenset({"slow"}),
        }
        for name, kinds in only.items():
            if name in given and f not in kinds:
                raise ValueError(f"{name!r} does not apply to a {f} fault")
        if f == "stall" and self.seconds is None:
            raise ValueError("a stall fault needs seconds=S")
        if f == "slow" and self.rate is None:
            raise ValueError("a slow fault needs rate=R (content events per second)")
        if self.after_events and self.at != "start":
            raise ValueError("after_events counts from the start (at=start)")
        return self

    def describe(self) -> str:
        """The rule in its inline form (logs, the command's answer)."""
        data = self.model_dump(exclude_defaults=True)
        kind = data.pop("fault", self.fault)
        parts = [kind] + [f"{k}={shlex.quote(str(v))}" for k, v in data.items()]
        return " ".join(parts)


class _RulesFile(BaseModel):
    model_config = ConfigDict(extra="forbid", defer_build=True)

    fault: list[FaultRule] = Field(default_factory=list)


def _value(text: str) -> Any:
    """An inline value: a number or a boolean when it reads as one, else the text (pydantic
    then checks the field's type)."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(text.lower(), text)


def _errors(exc: ValidationError) -> str:
    parts = []
    for e in exc.errors():
        loc = ".".join(str(x) for x in e["loc"])
        msg = str(e["msg"]).removeprefix("Value error, ")
        parts.append(f"{loc}: {msg}" if loc else msg)
    return "; ".join(parts)


def parse_inline(spec: str) -> list[FaultRule]:
    """``KIND key=value ...`` rules, separated by ``;``."""
    rules: list[FaultRule] = []
    for part in spec.split(";"):
        if not part.strip():
            continue
        try:
            words = shlex.split(part)
        except ValueError as exc:
            raise ConfigError(f"fault rule {part.strip()!r}: {exc}") from exc
        kind, *pairs = words
        data: dict[str, Any] = {"fault": kind}
        for pair in pairs:
            key, eq, text = pair.partition("=")
            if not eq or not key:
                raise ConfigError(f"fault rule {part.strip()!r}: expected key=value, got {pair!r}")
            data[key] = text if key == "filter" else _value(text)
        try:
            rules.append(FaultRule.model_validate(data))
        except ValidationError as exc:
            raise ConfigError(f"fault rule {part.strip()!r}: {_errors(exc)}") from exc
    return rules


def parse_file(path: Path) -> list[FaultRule]:
    """A TOML (``[[fault]]`` tables) or JSON (``{"fault": [...]}`` or a list) rules file."""
    try:
        text = path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read the faults file {str(path)!r}: {exc.strerror}") from exc
    try:
        if path.suffix.lower() == ".json":
            raw: Any = json.loads(text)
            data = {"fault": raw} if isinstance(raw, list) else raw
        else:
            data = tomllib.loads(text.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise ConfigError(f"faults file {str(path)!r}: {exc}") from exc
    try:
        return _RulesFile.model_validate(data).fault
    except ValidationError as exc:
        raise ConfigError(f"faults file {str(path)!r}: {_errors(exc)}") from exc


def parse_option(value: str) -> list[FaultRule]:
    """The ``proxai_faults`` option: empty (no faults), a rules file, or inline rules."""
    value = value.strip()
    if not value:
        return []
    path = Path(value)
    if path.suffix.lower() in (".toml", ".json") and " " not in value:
        return parse_file(path)
    return parse_inline(value)
