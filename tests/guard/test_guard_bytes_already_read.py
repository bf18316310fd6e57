"""A time rule is judged once the bytes the proxy has already read are counted.

docs/design/guard.md, "Bytes already read count": a proxy that did not run for a while (a loaded
machine, a garbage collection) wakes up with its timer due and the upstream's bytes of that while
already read. The event loop runs the due timer before the read's task hands those bytes over, and
mitmproxy hands the chunks of one read over one by one; judged at once, a stall is reported before
argument deltas that had arrived (at 12 bytes here instead of 17). ``FlowGuard`` and ``WaitGuard``
judge through ``later`` (``after_reads``: three passes of the loop later, after the reads).

The first tests drive the guard with a clock and a queue for ``later``; the last ones run the real
asyncio ordering: a socket, a reading task that feeds the carrier one chunk at a time as
mitmproxy's connection handler does, and the loop blocked past the deadline while the upstream's
bytes arrive. Their guard reads a clock the test moves (``Clock``): the loop's timer is real, but
what the guard measures is only what the test set, so a machine that pauses the test anywhere
(a loaded machine, a garbage collection) changes no verdict and no figure.
"""

from __future__ import annotations

import asyncio
import selectors
import socket
import time
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from proxai.core.decode import make_decoder
from proxai.core.errors.shapes import error_event
from proxai.core.model import ErrorKind, Outcome, Protocol
from proxai.guard import GuardConfig
from proxai.mitm.carrier import Carrier
from proxai.mitm.guard_addon import FlowGuard, WaitGuard, after_reads
from proxai.pipeline.carrier import CarrierState
from proxai.pipeline.flow import FlowPipeline
from proxai.pipeline.observe import StreamObserver

from .test_flow_guard import ANTHROPIC_HEAD, PING, Rig, ev

P = Protocol.ANTHROPIC_MESSAGES
# The call's next fragment: 12 + 5 = 17 argument bytes, arguments still unfinished.
DELTA = ev(
    "content_block_delta",
    {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "input_json_delta", "partial_json": "tc/ho"},
    },
)


def stall_message(seconds: str, arg_bytes: int, limit: str = "10") -> str:
    return (
        f"ProxAI guard: tool call 'read_file' (id toolu_A) stalled: no argument delta for {seconds}s "
        f"(limit {limit}s, proxai_tool_stall) after {arg_bytes} argument bytes; "
        "the upstream stream was closed"
    )


class Later:
    """``later`` as a queue: ``run`` is the event loop's next pass."""

    def __init__(self) -> None:
        self.queue: list[Callable[[], None]] = []

    def __call__(self, fn: Callable[[], None]) -> None:
        self.queue.append(fn)

    def run(self) -> None:
        queue, self.queue = self.queue, []
        for fn in queue:
            fn()


def _head(r: Rig) -> None:
    for i, chunk in enumerate(ANTHROPIC_HEAD):
        assert r.feed(0.1 * i, chunk) == chunk  # the call's 12 bytes; its last delta at 0.2 s


def test_judged_at_once_the_stall_is_reported_before_a_delta_of_the_same_read() -> None:
    """What the shell no longer does (no ``later``): one read at 10.5 s holds a ping and then the
    call's next delta; the ping's chunk alone trips the rule, at 12 bytes."""
    r = Rig(P)
    _head(r)
    r.feed(10.5, PING)
    v = r.guard.verdict
    assert v is not None and v.message == stall_message("10.3", 12)


def test_data_path_judges_after_the_rest_of_the_read() -> None:
    later = Later()
    r = Rig(P, later=later)
    _head(r)
    # One read at 10.5 s, two chunks: a ping (the deadline passed: judged later), then the delta.
    assert r.feed(10.5, PING) == PING
    assert r.guard.verdict is None and len(later.queue) == 1
    assert r.feed(10.5, DELTA) == DELTA
    assert len(later.queue) == 1  # one judgement waits, however many chunks find the deadline passed
    later.run()
    assert r.guard.verdict is None and r.ended == []
    # The call then really stalls: the next ping's judgement, after its read, ends the stream.
    assert r.feed(21.0, PING) == PING
    assert r.guard.verdict is None
    later.run()
    v = r.guard.verdict
    assert v is not None and v.message == stall_message("10.5", 17)
    assert r.ended == [r.guard.flow]  # mitmproxy is asked to end the stream (out of band)...
    out = r.feed(21.1, b"")  # ...and calls the carrier with its end of message
    assert out == error_event(P, ErrorKind.TOOL_STALL, v.message)
    summary = r.carrier.summary
    assert summary is not None and summary.outcome is Outcome.UNFINISHED_TOOL
    assert summary.extra["guard"] == {**v.to_metadata(injected=True), "path": "data"}


def test_timer_path_judges_after_the_read_that_came_with_it() -> None:
    later = Later()
    r = Rig(P, later=later)
    _head(r)
    r.now = 10.5
    r.guard.on_timer()  # the due timer runs before the read's task...
    assert r.guard.verdict is None and len(later.queue) == 1
    assert r.feed(10.5, DELTA) == DELTA  # ...which hands over the delta read with it
    later.run()
    assert r.guard.verdict is None
    r.now = 20.6
    r.guard.on_timer()
    later.run()
    v = r.guard.verdict
    assert v is not None and v.message == stall_message("10.1", 17)
    assert r.ended == [r.guard.flow]
    assert r.feed(20.7, b"") == error_event(P, ErrorKind.TOOL_STALL, v.message)
    assert r.carrier.summary is not None
    assert r.carrier.summary.extra["guard"] == {**v.to_metadata(injected=True), "path": "timer"}


def test_a_judgement_after_the_stream_ended_does_nothing() -> None:
    later = Later()
    r = Rig(P, later=later)
    _head(r)
    r.feed(10.5, PING)  # judged later...
    stop = ev("content_block_stop", {"type": "content_block_stop", "index": 0})
    r.feed(10.5, stop)  # ...but the same read declares the call done: '{"path": "/e' is not JSON
    v = r.guard.verdict
    assert v is not None and v.kind == "abnormal_arguments"  # not a time rule: judged at once
    later.run()
    assert r.guard.verdict is v and r.guard.path == "data"
    assert r.carrier.state is CarrierState.CLOSED


# -- WaitGuard: response headers or a whole body read with the due timer --------------------------


def _wait_guard(later: Later, answers: list[Any]) -> tuple[WaitGuard, Any]:
    flow = SimpleNamespace(response=None)

    def answer(f: Any, response: Any) -> bool:
        answers.append(response)
        return True

    guard = WaitGuard(flow, 1.5, P, clock=lambda: 2.0, answer=answer, later=later)  # type: ignore[arg-type]
    return guard, flow


def test_wait_guard_headers_read_with_the_due_timer_are_not_answered() -> None:
    later, answers = Later(), []
    guard, flow = _wait_guard(later, answers)
    guard.on_timer()
    flow.response = SimpleNamespace(timestamp_end=None)  # the read's task: mitmproxy sets the response
    later.run()
    assert guard.answered is None and answers == []


def test_wait_guard_body_read_with_the_due_timer_is_not_answered() -> None:
    later, answers = Later(), []
    guard, flow = _wait_guard(later, answers)
    flow.response = SimpleNamespace(timestamp_end=None)
    guard.headers(streamed=False)  # now the whole body is waited for
    guard.on_timer()
    flow.response.timestamp_end = 2.0  # the rest of the body came with the timer
    later.run()
    assert guard.answered is None and answers == []


def test_wait_guard_answers_when_nothing_came() -> None:
    later, answers = Later(), []
    guard, flow = _wait_guard(later, answers)
    flow.response = SimpleNamespace(timestamp_end=None)
    guard.headers(streamed=False)
    guard.on_timer()
    later.run()
    assert guard.answered is not None and guard.answered["phase"] == "body"
    assert len(answers) == 1 and answers[0].status_code == 504


# -- the real event loop's order -----------------------------------------------------------------


class PollMissesOnce(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """A poll that reports nothing once (``miss``), as epoll does when a stop signal interrupted it
    and its timeout has passed by the time the process runs again."""

    miss = False

    def select(self, timeout: float | None = None) -> Any:
        if self.miss:
            self.miss = False
            return []
        return super().select(timeout)


class Clock:
    """The guard's clock: it moves only when the test moves it (``pass_``)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def pass_(self, seconds: float) -> None:
        self.now += seconds


def _blocked_proxy_run(*, timer: bool, miss: bool = False) -> tuple[FlowGuard, list[bytes], list[Any]]:
    """The upstream sends the head (12 argument bytes); the proxy then does not run while 0.3 s
    pass (the stall limit is 0.2 s) and the upstream sends a ping and the next delta (17 bytes);
    later the call stalls for real, 0.3 s more (the data path needs a chunk: a ping). ``miss``:
    the first poll after the proxy runs again does not report the bytes. Returns the guard, the
    chunks the carrier was fed, and what the guard had decided once the proxy had run again.

    The guard's clock moves only at those two points (``Clock``); the loop's timer is armed for
    the guard's deadline as a real delay (0.2 s), so the real block is as long as the clock's move:
    the timer is due when the proxy runs again."""
    cfg = GuardConfig(tool_stall=0.2, idle_timeout=0.0)
    selector = PollMissesOnce()
    clock = Clock()

    async def main() -> tuple[FlowGuard, list[bytes], list[Any]]:
        ours, theirs = socket.socketpair()
        reader, writer = await asyncio.open_connection(sock=ours)
        start = clock()
        observer = StreamObserver(P, start=start)
        observer.headers(200, start)
        carrier = Carrier(FlowPipeline(observer), decoder=make_decoder(None), clock=clock)
        guard = FlowGuard(
            cfg, object(), carrier, start=start, timer=timer, end_stream=lambda _f: True, later=after_reads()
        )  # type: ignore[arg-type]
        fed: list[bytes] = []

        async def connection_handler() -> None:
            # As mitmproxy's: one read, then its chunks handed to the carrier one by one.
            buf = b""
            while data := await reader.read(65535):
                buf += data
                *frames, buf = buf.split(b"\0")
                for frame in frames:
                    fed.append(frame)
                    carrier(frame)

        def send(*frames: bytes) -> None:
            theirs.sendall(b"".join(f + b"\0" for f in frames))

        async def until(done: Callable[[], bool]) -> None:
            for _ in range(100_000):  # passes of the loop, not time
                if done():
                    return
                await asyncio.sleep(0)
            raise AssertionError("the state was not reached")

        async def until_verdict() -> None:
            deadline = time.monotonic() + 30  # a bound on a state wait, not a timed assertion
            while guard.verdict is None and time.monotonic() < deadline:
                await asyncio.sleep(0.01)

        handler = asyncio.create_task(connection_handler())
        send(*ANTHROPIC_HEAD)
        await until(lambda: len(fed) == len(ANTHROPIC_HEAD))
        send(PING, DELTA)
        # The proxy does not run; the deadline passes with the bytes already there (the real
        # sleep makes the loop's timer due when it runs again).
        clock.pass_(0.3)
        time.sleep(0.3)
        selector.miss = miss
        await until(lambda: len(fed) == len(ANTHROPIC_HEAD) + 2 and not guard._judging)
        after_wake = [guard.verdict, [c.arguments_bytes for c in observer.open_tool_calls()]]
        clock.pass_(0.3)  # the call stalls for real
        if not timer:
            send(PING)
        await until_verdict()
        theirs.close()
        await handler
        writer.close()
        return guard, fed, after_wake

    with asyncio.Runner(loop_factory=lambda: asyncio.SelectorEventLoop(selector)) as runner:
        return runner.run(main())


def test_event_loop_timer_path_counts_the_delta_read_while_the_proxy_did_not_run() -> None:
    guard, fed, after_wake = _blocked_proxy_run(timer=True)
    assert after_wake == [None, [17]]
    v = guard.verdict
    assert v is not None and v.message == stall_message("0.3", 17, limit="0.2") and guard.path == "timer"
    assert fed == [*ANTHROPIC_HEAD, PING, DELTA]


def test_event_loop_data_path_counts_the_delta_of_the_same_read() -> None:
    guard, fed, after_wake = _blocked_proxy_run(timer=False)
    assert after_wake == [None, [17]]
    v = guard.verdict
    assert v is not None and v.message == stall_message("0.3", 17, limit="0.2") and guard.path == "data"
    assert fed == [*ANTHROPIC_HEAD, PING, DELTA, PING]


def test_event_loop_timer_path_when_the_first_poll_misses_the_bytes() -> None:
    guard, fed, after_wake = _blocked_proxy_run(timer=True, miss=True)
    assert after_wake == [None, [17]]
    v = guard.verdict
    assert v is not None and v.message == stall_message("0.3", 17, limit="0.2") and guard.path == "timer"
    assert fed == [*ANTHROPIC_HEAD, PING, DELTA]
