"""An invalid ProxAI option given with ``--set`` at start-up: a real mitmdump prints one clear line per
bad option (the option and the problem, no traceback) and exits 1 (proxai.mitm.option_errors)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from mitmproxy import exceptions
from mitmproxy.test import taddons

from proxai.mitm.addon import ProxAI

ROOT = Path(__file__).resolve().parents[2]


def _mitmdump(*sets: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    args = [str(Path(sys.executable).parent / "mitmdump"), "-s", str(ROOT / "addon" / "proxai.py")]
    args += ["--listen-host", "127.0.0.1", "-p", "0"]
    for s in sets:
        args += ["--set", s]
    # the timeout only guards against a mitmdump that runs on (the bug): it must exit by itself
    return subprocess.run(
        args,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        cwd=ROOT,
        env={**os.environ, **(env or {})},
    )


def _errors(proc: subprocess.CompletedProcess[str]) -> list[str]:
    out = proc.stdout + proc.stderr
    return [line.split("] ", 1)[1] for line in out.splitlines() if "] proxai: invalid option: " in line]


@pytest.mark.parametrize(
    ("setting", "error"),
    [
        (
            "proxai_faults=stall count=1",
            "proxai_faults: fault rule 'stall count=1': a stall fault needs seconds=S",
        ),
        (
            "proxai_otlp=ftp://collector:4318",
            "proxai_otlp: OTLP over HTTP needs an http or https URL, not 'ftp'",
        ),
    ],
)
def test_an_invalid_option_stops_mitmdump_with_one_line(setting: str, error: str) -> None:
    proc = _mitmdump(setting)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert _errors(proc) == [f"proxai: invalid option: {error}"]
    assert "Traceback" not in out
    assert out.rstrip().endswith("Error logged during startup, exiting...")


KEY = "sk-proj-" + "V" * 40  # a receiver's key, in a malformed headers variable


@pytest.mark.parametrize(
    ("env", "error"),
    [
        (
            {"OTEL_EXPORTER_OTLP_HEADERS": f"x-a=1,Authorization Bearer {KEY}"},
            "proxai_otlp: OTEL_EXPORTER_OTLP_HEADERS: item 2 is not key=value (values URL-encoded)",
        ),
        (
            {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
            "proxai_otlp: OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=grpc: proxai_otlp=otel exports OTLP over "
            "HTTP (http/protobuf) only",
        ),
    ],
)
def test_a_bad_standard_variable_stops_mitmdump_with_one_line(env: dict[str, str], error: str) -> None:
    proc = _mitmdump("proxai_otlp=otel", env=env)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert _errors(proc) == [f"proxai: invalid option: {error}"]
    assert "Traceback" not in out
    assert KEY not in out


def test_every_invalid_option_is_named_and_mitmdump_exits(tmp_path: Path) -> None:
    routes = tmp_path / "routes.toml"
    routes.write_text('[[route]]\nname = "x"\nupstream = "http://127.0.0.1:1/v1"\nprotocol = "nope"\n')
    faults = tmp_path / "faults.toml"
    faults.write_text('[[fault]]\nfault = "reset"\nwhen = "sometimes"\n')
    proc = _mitmdump(f"proxai_routes={routes}", f"proxai_faults={faults}", "proxai_tool_stall=soon")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert _errors(proc) == [
        f"proxai: invalid option: proxai_routes: routes file {routes}, line 4, field route[0].protocol: "
        "Input should be 'anthropic_messages', 'openai_chat' or 'openai_responses'",
        "proxai: invalid option: proxai_tool_stall: not a number of seconds: 'soon'",
        f"proxai: invalid option: proxai_faults: faults file '{faults}': fault.0.when: "
        "Extra inputs are not permitted",
    ]
    assert "Traceback" not in out
    assert out.rstrip().endswith("Errors logged during startup, exiting...")


def test_a_change_while_running_is_still_refused() -> None:
    # no start-up check watches (a change while running, or this test context): mitmproxy's contract,
    # the OptionsError, so that mitmproxy rolls the change back
    main = ProxAI()
    with taddons.context(main) as tctx:
        with pytest.raises(exceptions.OptionsError, match="proxai_faults: fault rule 'stall'"):
            tctx.configure(main.faults, proxai_faults="stall")
        with pytest.raises(exceptions.OptionsError, match="proxai_tool_stall: not a number"):
            tctx.configure(main.guard, proxai_tool_stall="soon")
        assert tctx.options.proxai_tool_stall != "soon"
