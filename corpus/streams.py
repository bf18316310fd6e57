"""Loads the corpus: every ``tests/fixtures/real/<protocol>/*.sse`` file with the provenance row
``tests/fixtures/real/SOURCES.md`` gives for it (one table, one row per file)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from proxai.core.model import Protocol

ROOT = Path(__file__).resolve().parent.parent
REAL = ROOT / "tests" / "fixtures" / "real"
SOURCES = REAL / "SOURCES.md"

#: The folder of each protocol under ``tests/fixtures/real/``.
FOLDERS: dict[str, Protocol] = {
    "anthropic": Protocol.ANTHROPIC_MESSAGES,
    "chat": Protocol.OPENAI_CHAT,
    "responses": Protocol.OPENAI_RESPONSES,
}


@dataclass(frozen=True, slots=True)
class Stream:
    """One recorded stream and where it came from."""

    name: str  # "<folder>/<file>", the id tests and the table use
    path: Path
    protocol: Protocol
    provider: str
    repository: str
    rebuilt: bool  # the SSE framing was rebuilt from one payload per line

    def body(self) -> bytes:
        return self.path.read_bytes()


def _rows() -> dict[str, dict[str, str]]:
    """The provenance table of SOURCES.md, keyed by its ``file`` column."""
    header: list[str] | None = None
    rows: dict[str, dict[str, str]] = {}
    for line in SOURCES.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = None if not line.strip() else header
            continue
        cells = [c.strip().strip("`") for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        row = dict(zip(header, cells, strict=False))
        if "file" in row:
            rows[row["file"]] = row
    return rows


@cache
def load() -> tuple[Stream, ...]:
    """Every corpus stream, in name order. A file without a SOURCES.md row (or a row without a
    file) is an error: provenance is not optional."""
    rows = _rows()
    out: list[Stream] = []
    seen: set[str] = set()
    for folder, protocol in FOLDERS.items():
        for path in sorted((REAL / folder).glob("*.sse")):
            name = f"{folder}/{path.name}"
            row = rows.get(name)
            if row is None:
                raise LookupError(f"{name} has no row in {SOURCES}")
            seen.add(name)
            out.append(
                Stream(
                    name=name,
                    path=path,
                    protocol=protocol,
                    provider=row["provider"],
                    repository=row["repository"],
                    rebuilt=row["framing"] == "rebuilt",
                )
            )
    missing = sorted(set(rows) - seen)
    if missing:
        raise LookupError(f"SOURCES.md rows without a file: {missing}")
    return tuple(out)
