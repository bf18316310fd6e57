"""Run the fake upstream alone: ``python -m proxai.upstream --port 9000 [--tls] [--http2]``.

The fake upstream runs standalone for the demo and for manual poking with curl or the SDKs
(``base_url=http://127.0.0.1:9000`` for anthropic, ``.../v1`` for openai), so the five
provider-test paths (success, error, cancel, parallel tool calls, truncated tail) can be played
by hand (docs/design/upstream.md, "Realistic scenarios").
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading

from .profiles import PROFILES
from .scenarios import list_scenarios
from .server import FakeUpstream


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m proxai.upstream", description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    parser.add_argument("--tls", action="store_true", help="serve HTTPS with a throw-away CA")
    parser.add_argument("--http2", action="store_true", help="offer HTTP/2 (ALPN h2, or h2c prior knowledge)")
    parser.add_argument("--time-scale", type=float, default=1.0, help="multiply every scripted delay")
    parser.add_argument("--scenario", help="the scenario a model name that names none plays (e.g. agent)")
    parser.add_argument("--profile", choices=PROFILES, help="validate requests like a real server")
    parser.add_argument("--list", action="store_true", help="list the scenarios and exit")
    args = parser.parse_args(argv)
    if args.list:
        for name, summary in list_scenarios():
            print(f"{name:24} {summary}")
        return 0
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with FakeUpstream(
        tls=args.tls,
        http2=args.http2,
        time_scale=args.time_scale,
        host=args.host,
        port=args.port,
        scenario=args.scenario,
        profile=args.profile,
    ) as up:
        print(f"proxai fake upstream listening on {up.url}", flush=True)
        if up.ca_path:
            print(f"CA certificate: {up.ca_path}", flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
