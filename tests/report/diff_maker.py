"""Agent runs to compare: each a real ``anthropic`` SDK loop (one tool round trip) through its own
real mitmdump (with the ProxAI addon) against the fake upstream in agent mode, saved as a flow file.

``BASE_COMMAND`` and ``NEW_COMMAND`` make the model call ``bash`` with other arguments; the longer
command is streamed in more argument fragments (one output token each), so the usage and the cost
differ too. The tool's result, and so the final answer, is the same in both. ``replay`` runs the
same loop against a mitmdump that answers from a recording (``proxai_replay``, no upstream at all).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anthropic

from proxai.upstream import FakeUpstream
from tests.e2e.harness import running_mitmdump, tag

from .run_maker import anthropic_loop

BASE_COMMAND = "cat notes.txt"
NEW_COMMAND = "cat notes.txt | head -n 20 | sort"


@dataclass(frozen=True)
class Recorded:
    flow_file: Path
    answer: str  # what the SDK returned last


def record(workdir: Path, command: str, options: Mapping[str, str] | None = None) -> Recorded:
    """One run (two LLM flows) through a fresh mitmdump; returns once both flows are saved."""
    with (
        FakeUpstream(time_scale=0.05) as up,
        running_mitmdump(up.url, workdir=workdir, options=dict(options or {})) as md,
    ):
        t = tag()
        answer = anthropic_loop(md, t, command)
        md.wait_flows(t, 2)
    return Recorded(md.flow_path, answer)


NOWHERE = "http://127.0.0.1:9"  # the reverse target of a replay: nothing listens there


def replay(workdir: Path, recording: Path, command: str) -> Path:
    """The loop with ``command`` answered from ``recording`` at speed 0; the flow file of the run. A
    request no recording matches gets the divergence error, which ends the loop after one flow."""
    options = {"proxai_replay": str(recording), "proxai_replay_speed": "0"}
    with running_mitmdump(NOWHERE, workdir=workdir, options=options) as md:
        t = tag()
        try:
            anthropic_loop(md, t, command)
        except anthropic.BadRequestError:
            md.wait_flows(t, 1)
        else:
            md.wait_flows(t, 2)
    return md.flow_path
