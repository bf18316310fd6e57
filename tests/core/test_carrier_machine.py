"""The stream carrier's state machine (docs/design/carrier.md): the table, cell by cell; every
transition driven through the carrier's own calls; a refused event caught as a bug that leaves
the client's bytes alone; and the core driven with no mitmproxy at all.

Only the sans-IO core is imported here: the real observer, the real translators, hooks written
in the test.
"""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from proxai.core.errors import TranslationError
from proxai.core.model import ErrorKind, Outcome, Protocol, StreamSummary
from proxai.pipeline import carrier as carrier_module
from proxai.pipeline.carrier import (
    MACHINE,
    OPEN,
    TABLE,
    CarrierEvent,
    CarrierState,
    CarrierStateError,
    GuardAction,
    StreamCarrier,
)
from proxai.pipeline.flow import ClientSide, build_flow
from proxai.translate.stream import StreamTranslator

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
CHAT = (FIXTURES / "openai_chat" / "text.sse").read_bytes()
C, A = Protocol.OPENAI_CHAT, Protocol.ANTHROPIC_MESSAGES
S, E = CarrierState, CarrierEvent

# The table as docs/design/carrier.md states it, a row per state; ``-``: refused.
COLUMNS = (E.CHUNK, E.END, E.DEFER, E.CLOSE, E.FINISH, E.ABORT)
TABLE_TEXT = """
STREAMING   STREAMING  ENDING    PENDING   CLOSED    -         ABORTED
PENDING     PENDING    PENDING   PENDING   CLOSED    -         ABORTED
ENDING      -          -         -         CLOSED    FINISHED  ABORTED
CLOSED      CLOSED     CLOSED    CLOSED    CLOSED    -         CLOSED
FINISHED    FINISHED   FINISHED  FINISHED  FINISHED  -         FINISHED
ABORTED     ABORTED    ABORTED   ABORTED   ABORTED   -         ABORTED
"""
EXPECTED: dict[CarrierState, dict[CarrierEvent, CarrierState | None]] = {
    S[row[0]]: {e: None if cell == "-" else S[cell] for e, cell in zip(COLUMNS, row[1:], strict=True)}
    for row in (line.split() for line in TABLE_TEXT.strip().splitlines())
}


def _carrier(client: Protocol | None = None) -> StreamCarrier:
    pipe = build_flow(C, None if client is None else ClientSide(client, created=1))
    pipe.observer.headers(200, 0.0)
    return StreamCarrier(pipe, decoder=None)


def _events(data: bytes) -> list[bytes]:
    return [b + b"\n\n" for b in data.split(b"\n\n")[:-1]]


# -- the table --------------------------------------------------------------------------------------


@pytest.mark.parametrize("state", list(CarrierState))
@pytest.mark.parametrize("event", list(CarrierEvent))
def test_each_cell_of_the_table(state: CarrierState, event: CarrierEvent) -> None:
    expected = EXPECTED[state][event]
    if expected is None:
        with pytest.raises(CarrierStateError) as info:
            MACHINE.step(state, event)
        assert info.value.event == event and info.value.state is state
        assert str(info.value) == f"carrier: {event} in state {state.name}"
    else:
        assert MACHINE.step(state, event) is expected


def test_the_table_names_every_state_and_no_other_event() -> None:
    assert set(TABLE) == set(CarrierState)
    assert all(set(row) <= set(CarrierEvent) for row in TABLE.values())
    # Only ENDING finishes, and nothing leaves a state the stream cannot come back from.
    assert [s for s in CarrierState if MACHINE.allows(s, E.FINISH)] == [S.ENDING]
    for over in (S.CLOSED, S.FINISHED, S.ABORTED):
        assert set(TABLE[over].values()) == {over}
    assert {S.STREAMING, S.PENDING, S.ENDING} == OPEN


def test_the_refused_error_is_not_a_stream_error() -> None:
    """A refused event is our bug: never mistaken for an upstream or translation problem."""
    from proxai.core.errors import ProxaiError

    assert not issubclass(CarrierStateError, ProxaiError)


def test_only_the_transition_function_assigns_the_state() -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(StreamCarrier)))
    places = []
    for fn in ast.walk(tree):
        if not isinstance(fn, ast.FunctionDef):
            continue
        for node in ast.walk(fn):
            targets = node.targets if isinstance(node, ast.Assign) else []
            targets += [node.target] if isinstance(node, ast.AugAssign | ast.AnnAssign) else []
            for t in targets:
                if isinstance(t, ast.Attribute) and t.attr == "state":
                    places.append(fn.name)
    assert places == ["__init__", "_step"]


# -- every transition, driven through the carrier -----------------------------------------------------


def test_streaming_chunks_then_the_end_finishes() -> None:
    c = _carrier()
    seen: list[tuple[CarrierState, bool]] = []
    c.at_end_hooks = True

    def hook(car: StreamCarrier, _n: int, _now: float) -> None:
        seen.append((car.state, car.ending))

    c.on_chunk.append(hook)
    pieces = _events(CHAT)
    out = [c.feed(p, float(i)) for i, p in enumerate(pieces)]
    assert out == [[p] for p in pieces] and c.state is S.STREAMING
    assert c.feed(b"", 99.0) == [] and c.state is S.FINISHED
    # The hooks ran after each chunk while STREAMING, and once more in ENDING (the end check).
    assert seen == [(S.STREAMING, False)] * len(pieces) + [(S.ENDING, True)]
    assert c.summary is not None and c.summary.outcome is Outcome.COMPLETED


def test_a_deferred_error_goes_out_with_the_next_chunk_which_is_dropped() -> None:
    c = _carrier()
    closed: list[StreamCarrier] = []
    c.close_handlers.append(closed.append)
    first, second, *_ = _events(CHAT)
    assert c.feed(first, 1.0) == [first]
    assert c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 2.0) is False  # no injector
    assert c.state is S.PENDING
    # One error waits at a time: a second is not taken.
    assert c.inject_and_close(ErrorKind.TOOL_STALL, "stalled", 2.5) is False
    out = c.feed(second, 3.0)
    assert len(out) == 1 and b"silent" in out[0] and second not in out[0]
    assert c.state is S.CLOSED and c.closed is not None and c.closed.message == "silent"
    assert c.closed.out_of_band and closed == [c]
    assert c.summary is not None and c.summary.outcome is Outcome.ERROR
    assert c.upstream_bytes == len(first) + len(second)


def test_a_deferred_error_goes_out_at_the_end_without_the_close_handlers() -> None:
    c = _carrier()
    closed: list[StreamCarrier] = []
    c.close_handlers.append(closed.append)
    c.feed(_events(CHAT)[0], 1.0)
    c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 2.0)
    out = c.feed(b"", 3.0)
    assert len(out) == 1 and b"silent" in out[0]
    assert c.state is S.CLOSED and closed == []  # the shell ended the stream to deliver it


def test_an_injector_that_delivers_closes_at_once() -> None:
    c = _carrier()
    sent: list[bytes] = []

    def injector(_c: StreamCarrier, data: bytes) -> bool:
        sent.append(data)
        return True

    c.injector = injector
    assert c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 2.0) is True
    assert c.state is S.CLOSED and len(sent) == 1 and c.client_bytes == len(sent[0])
    assert c.feed(CHAT, 3.0) == [] and c.feed(b"", 4.0) == [] and c.state is S.CLOSED


def test_an_abort_while_an_error_waits() -> None:
    c = _carrier()
    c.inject_and_close(ErrorKind.IDLE_TIMEOUT, "silent", 2.0)
    summary = c.abort("connection reset", 3.0)
    assert c.state is S.ABORTED and summary.outcome is Outcome.ERROR
    assert summary.error is not None and summary.error.message == "connection reset"
    assert c.feed(CHAT, 4.0) == [] and c.feed(b"", 5.0) == [] and c.state is S.ABORTED
    assert c.abort("again", 6.0) is summary and c.inject_and_close(ErrorKind.UNKNOWN, "x", 7.0) is False


def test_a_hook_closes_and_what_follows_is_dropped() -> None:
    c = _carrier()
    ends: list[StreamSummary] = []
    c.on_end.append(lambda _c, s: ends.append(s))
    c.on_chunk.append(lambda _c, _n, _now: GuardAction(close=True, inject=b"event: x\n\n", message="cut"))
    first = _events(CHAT)[0]
    assert c.feed(first, 1.0) == [first, b"event: x\n\n"] and c.state is S.CLOSED
    assert c.feed(CHAT, 2.0) == [] and c.feed(b"", 3.0) == []
    assert c.inject_and_close(ErrorKind.UNKNOWN, "late", 4.0) is False
    assert c.abort("late", 5.0) is ends[0]
    # A second close still renders its bytes for the caller; the first outcome stays.
    assert c.close_with(GuardAction(close=True, inject=b"more"), 6.0) == b"more"
    assert c.state is S.CLOSED and c.closed is not None and c.closed.message == "cut" and len(ends) == 1


def test_the_end_check_closes_in_ending() -> None:
    c = _carrier()
    c.at_end_hooks = True
    c.on_chunk.append(
        lambda car, _n, _now: GuardAction(close=True, message="open call") if car.ending else None
    )
    c.feed(CHAT, 1.0)
    out = c.feed(b"", 2.0)
    assert len(out) == 1 and b"open call" in out[0]
    assert c.state is S.CLOSED and c.closed is not None and not c.closed.out_of_band


class FinishFails:
    """A real translator whose ``finish`` cannot write the end."""

    def __init__(self, inner: StreamTranslator) -> None:
        self.inner = inner
        self.client_protocol = inner.client_protocol

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)

    def finish(self) -> bytes:
        raise TranslationError("the end cannot be written")


def test_a_translation_failing_at_the_end_stays_closed_and_ends_once() -> None:
    c = _carrier(A)
    assert c.translator is not None
    c.translator = FinishFails(c.translator)
    ends: list[StreamSummary] = []
    c.on_end.append(lambda _c, s: ends.append(s))
    body = c.feed((FIXTURES / "openai_chat" / "truncated.sse").read_bytes(), 1.0)
    assert body and b"message_start" in body[0]
    out = c.feed(b"", 2.0)
    assert len(out) == 1 and out[0].startswith(b"event: error\n") and b"the end cannot be written" in out[0]
    assert c.state is S.CLOSED and c.translate_error == "the end cannot be written"
    assert len(ends) == 1 and ends[0] is c.summary and c.summary.outcome is Outcome.ERROR


def test_after_the_end_a_close_renders_bytes_and_the_carrier_stays_finished() -> None:
    c = _carrier()
    c.feed(CHAT, 1.0)
    c.feed(b"", 2.0)
    summary = c.summary
    assert c.state is S.FINISHED and summary is not None
    data = c.close_with(GuardAction(close=True, kind=ErrorKind.CONNECTION, message="fault"), 3.0)
    assert data.startswith(b'data: {"error"') and b"fault" in data
    assert c.state is S.FINISHED and c.closed is None and c.summary is summary
    assert c.feed(b"data: late\n\n", 4.0) == [] and c.abort("late", 5.0) is summary


# -- a refused event is a bug: caught, and the bytes stay the upstream's ------------------------------


def test_a_hook_feeding_the_carrier_in_ending_is_refused_and_the_stream_still_finishes() -> None:
    c = _carrier()
    c.at_end_hooks = True
    refused: list[CarrierStateError] = []

    def reenter(car: StreamCarrier, _n: int, now: float) -> GuardAction | None:
        if car.ending:
            try:
                car._end(now)  # a bug: the end's work entered again
            except CarrierStateError as exc:
                refused.append(exc)
                raise
            return None
        return None

    c.on_chunk.append(reenter)
    pieces = _events(CHAT)
    client = [b"".join(c.feed(p, 1.0)) for p in pieces]
    client.append(b"".join(c.feed(b"", 2.0)))
    assert b"".join(client) == CHAT  # observe-only: exactly the upstream's bytes
    assert [(e.event, e.state) for e in refused] == [(E.END, S.ENDING)]
    assert c.hook_errors == 1 and c.bugs == {"internal error in an on_chunk hook": 1}
    assert c.state is S.FINISHED and c.summary is not None and c.summary.outcome is Outcome.COMPLETED


def test_an_out_of_band_error_asked_for_in_ending_is_refused_not_lost_silently() -> None:
    c = _carrier()
    c.at_end_hooks = True

    def late(car: StreamCarrier, _n: int, now: float) -> None:
        if car.ending:
            car.inject_and_close(ErrorKind.UNKNOWN, "too late", now)

    c.on_chunk.append(late)
    c.feed(CHAT, 1.0)
    assert c.feed(b"", 2.0) == []
    assert c.hook_errors == 1 and c.state is S.FINISHED and c.closed is None


# -- the core alone ---------------------------------------------------------------------------------


def test_the_core_runs_without_mitmproxy() -> None:
    """A fresh interpreter imports the carrier, the observer and a translator, carries a stream
    observe-only and translated, and has not imported mitmproxy."""
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from proxai.core.model import Outcome, Protocol
        from proxai.pipeline.carrier import CarrierState, StreamCarrier
        from proxai.pipeline.flow import ClientSide, build_flow

        data = Path({str(FIXTURES / "openai_chat" / "text.sse")!r}).read_bytes()
        for translated in (False, True):
            side = ClientSide(Protocol.ANTHROPIC_MESSAGES, created=1) if translated else None
            pipe = build_flow(Protocol.OPENAI_CHAT, side)
            pipe.observer.headers(200, 0.0)
            c = StreamCarrier(pipe, decoder=None)
            out = b"".join(b"".join(c.feed(data[i : i + 100], i / 100)) for i in range(0, len(data), 100))
            out += b"".join(c.feed(b"", 99.0))
            assert c.state is CarrierState.FINISHED and c.summary.outcome is Outcome.COMPLETED
            if translated:
                assert out.startswith(b"event: message_start"), out[:80]
                assert out.endswith(b'data: {{"type":"message_stop"}}\\n\\n'), out[-80:]
            else:
                assert out == data
        assert not [m for m in sys.modules if m.split(".")[0] == "mitmproxy"]
        print("ok")
        """
    )
    addon = Path(carrier_module.__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=addon, timeout=120, check=False
    )
    assert done.returncode == 0 and done.stdout == "ok\n", done.stderr
