"""How an LLM flow ended, in one line: the verdict, its marker, the flow comment and mitmdump's line
(docs/design/visibility.md, "One verdict per flow").

The verdict is the outcome of docs/metadata.md with one split: a ``completed`` flow whose answer the
upstream cut short is ``truncated``, because the SDKs treat it as a failure (the OpenAI helpers raise
on it) and it must never look like success. Cut short: by a token limit (Anthropic ``max_tokens``,
Chat ``length``, Responses ``max_output_tokens``), the context window (Anthropic
``model_context_window_exceeded``), a content filter (Chat ``content_filter``, Responses
``content_filter``, and Anthropic's ``refusal``, its streaming classifiers stopping the answer: the
shared stop-reason table renders it as the other two's content filter), and a Responses
``incomplete`` for any reason. A model's own refusal (a Chat ``refusal`` message ending with
``stop``, a Responses refusal part in a completed response) is a whole answer and not truncated;
Anthropic's ``pause_turn`` is a turn to continue, not a cut. The comment and mitmdump's line give
the reason (``truncated (content_filter)``). A translated flow is judged as its client saw it: the
stop reason is the one the translation gave the client (the shared stop-reason table), not the
upstream's raw one.

Pure: ``flow.metadata["proxai"]`` dicts in, strings out. Every string taken from the network (model
names, stop reasons, tool names, error kinds) is made terminal-safe here, since these lines reach
terminals (mitmdump, the console's flow list).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any

from proxai.core.model import Outcome, Protocol, StopClass
from proxai.outputs import cost
from proxai.protocols import conformance
from proxai.safety.termsafe import escape
from proxai.stream import stop_reasons

# ``isinstance(v, _MAPPING)`` is ``isinstance(v, Mapping)``: a dict is found by its own type first,
# without the ABC's ``__instancecheck__`` (a Python call, about 2,400 instructions, on every
# recorded flow several times); None, the commonest other value, is told apart before it.
_MAPPING = (dict, Mapping)


class Verdict(StrEnum):
    COMPLETED = "completed"
    TRUNCATED = "truncated"  # completed, but cut short (token limit, context window, content filter)
    CLOSED = "closed"
    ERROR = "error"
    UNFINISHED_TOOL = "unfinished_tool"


# Markers (mitmproxy emoji short codes, ``mitmproxy.utils.emoji``). A completed flow is not marked,
# so the marked flows are exactly the ones that need a look.
MARKERS: dict[str, str] = {
    Verdict.COMPLETED: "",
    Verdict.TRUNCATED: ":scissors:",
    Verdict.CLOSED: ":warning:",
    Verdict.ERROR: ":red_circle:",
    Verdict.UNFINISHED_TOOL: ":hourglass:",
}
GUARD_MARKER = ":hourglass:"  # an error the guard injected (idle timeout): the upstream went silent
GUARD_KINDS = frozenset({"tool_stall", "idle_timeout"})
# A flow whose stream an official SDK raises on (a conformance finding, docs/design/conformance.md)
# that no verdict marker already flags: typically one that ProxAI saw complete.
SDK_MARKER = ":boom:"
# What each marker means, for the docs and the legend of the view.
LEGEND: tuple[tuple[str, str], ...] = (
    ("(none)", "completed: the protocol's terminal event arrived"),
    (
        ":scissors:",
        "truncated: completed, but cut short: a token limit (max_tokens, length, max_output_tokens), the "
        "context window, a content filter (content_filter, Anthropic's refusal), any incomplete response",
    ),
    (":warning:", "closed: the stream ended before its terminal event"),
    (":red_circle:", "error: the upstream reported an error, or the stream broke"),
    (":hourglass:", "unfinished_tool, or the guard ended a stalled / silent stream"),
    (":boom:", "an official SDK raises on this stream (a conformance finding), though it may have completed"),
)

# The stop reasons that mean "cut short", in the protocol of the client that received them.
TRUNCATING_STOPS: dict[str, frozenset[str]] = {
    Protocol.ANTHROPIC_MESSAGES: frozenset({"max_tokens", "model_context_window_exceeded", "refusal"}),
    Protocol.OPENAI_CHAT: frozenset({"length", "content_filter"}),
}
# A Responses stop reason is the status of the response, or an incomplete one's
# ``incomplete_details.reason`` (``incomplete`` when it gave none): every stop reason but these
# statuses (the others the OpenAI SDK lists) is an incomplete response, whatever its reason.
RESPONSES_STATUSES = frozenset({"completed", "failed", "cancelled", "queued", "in_progress"})
# The reasons of an incomplete response the OpenAI SDK lists, and ProxAI's name for one without.
RESPONSES_INCOMPLETE = frozenset(
    {"max_output_tokens", "max_messages", "content_filter", "steered", "incomplete"}
)
# Classes that are a cut whatever protocol renders them.
TRUNCATING_CLASSES = frozenset({StopClass.MAX_TOKENS, StopClass.CONTENT_FILTER})
# What cut the answer, by the upstream's stop reason, for the view's sentence; any other reason:
# "the upstream".
TRUNCATION_CAUSES = {
    "max_tokens": "the token limit",
    "length": "the token limit",
    "max_output_tokens": "the token limit",
    "model_context_window_exceeded": "the model's context window",
    "content_filter": "a content filter",
    "refusal": "the upstream's safety classifiers",
    "max_messages": "the upstream's message limit",
    "steered": "a steer of the response",
}

SHORT_PROTOCOL = {
    "anthropic_messages": "anthropic",
    "openai_chat": "chat",
    "openai_responses": "responses",
}

# The terminal event each protocol's stream must end with (what a ``closed`` stream lacked): its
# short name, and the sentence the view says.
TERMINAL_EVENT = {
    "anthropic_messages": "message_stop",
    "openai_chat": "[DONE]",
    "openai_responses": "response.completed",
}
TERMINAL_EVENT_LONG = {
    "anthropic_messages": "the message_stop event",
    "openai_chat": "the data: [DONE] line",
    "openai_responses": "a response.completed, response.incomplete or response.failed event",
}


def terminal_safe(text: str) -> str:
    """``text`` with control characters (C0, DEL, C1; ESC above all) and line breaks escaped, so a
    string from the network cannot move a cursor, set a title or start a new line in a terminal
    (``proxai.safety.termsafe.escape`` on one line)."""
    return escape(text, newlines=False)


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _str(v: Any) -> str | None:
    return terminal_safe(v) if isinstance(v, str) and v else None


def client_protocol(meta: Mapping[str, Any]) -> str | None:
    """The protocol the client spoke, when the flow was translated (it differs from the upstream's)."""
    c = meta.get("client_protocol")
    if isinstance(c, str):
        return c
    for key in ("translation", "route"):
        tr = meta.get(key)
        if tr is not None and isinstance(tr, _MAPPING):
            for name in ("client_protocol", "client"):
                if isinstance(tr.get(name), str):
                    return str(tr[name])
    return None


def is_translated(meta: Mapping[str, Any]) -> bool:
    client = client_protocol(meta)
    return client is not None and client != meta.get("protocol")


def protocol_label(meta: Mapping[str, Any]) -> str:
    """``chat`` or, on a translated flow, ``client<-upstream`` (``anthropic<-chat``)."""
    proto = str(meta.get("protocol") or "?")
    short = SHORT_PROTOCOL.get(proto, proto)
    client = client_protocol(meta)
    if client and client != proto:
        return terminal_safe(f"{SHORT_PROTOCOL.get(client, client)}<-{short}")
    return terminal_safe(short)


# The members by value: ``StopClass(text)`` / ``Outcome(text)`` with the ``ValueError`` caught give
# the same, through the enum's call (several thousand instructions each, on every recorded flow).
_STOP_CLASSES: dict[str, StopClass] = {str(c): c for c in StopClass}
_OUTCOMES: dict[str, Outcome] = {str(o): o for o in Outcome}


def _stop_class(meta: Mapping[str, Any]) -> StopClass | None:
    return _STOP_CLASSES.get(str(meta.get("stop_class")))


def _translated_class(meta: Mapping[str, Any]) -> StopClass | None:
    """The class the translators gave the upstream's stop: they read its raw stop reason with the
    refusal text beside it (a Chat refusal message, a Responses refusal part: ``refusal``), where
    the summary's class reads the stop reason alone."""
    cls = _stop_class(meta)
    raw = meta.get("stop_reason")
    if cls is None or not isinstance(raw, str):
        return cls
    refusal = bool(meta.get("refusal_bytes"))
    protocol = meta.get("protocol")
    if protocol == Protocol.OPENAI_CHAT:
        return stop_reasons.from_chat(raw, has_refusal=refusal)
    if protocol == Protocol.OPENAI_RESPONSES:
        # the raw stop reason is the status, or an incomplete response's reason
        status, reason = (raw, None) if raw in RESPONSES_STATUSES else ("incomplete", raw)
        return stop_reasons.from_responses(
            status, reason, has_tool_calls=cls is StopClass.TOOL_USE, has_refusal=refusal
        )
    return cls


def client_stop_reason(meta: Mapping[str, Any]) -> str | None:
    """The stop reason the client received: the upstream's raw one, or on a translated flow the
    translation's rendering of its class in the client's protocol."""
    raw = meta.get("stop_reason")
    if not is_translated(meta):
        return raw if isinstance(raw, str) else None
    cls = _translated_class(meta)
    if cls is None:
        return None
    refusal = bool(meta.get("refusal_bytes"))
    client = client_protocol(meta)
    if client == Protocol.ANTHROPIC_MESSAGES:
        return stop_reasons.to_anthropic(cls)
    if client == Protocol.OPENAI_CHAT:
        return stop_reasons.to_chat(cls, has_refusal=refusal)
    if client == Protocol.OPENAI_RESPONSES:
        status, reason = stop_reasons.to_responses(cls, has_refusal=refusal)
        return reason or status
    return None


def truncating(protocol: str | None, stop: str | None) -> bool:
    """Whether a client of ``protocol`` that received the stop reason ``stop`` got an answer cut
    short (an unknown protocol: a reason that is a cut in any of the three)."""
    if stop is None:
        return False
    if protocol == Protocol.OPENAI_RESPONSES:
        return stop not in RESPONSES_STATUSES
    known = TRUNCATING_STOPS.get(str(protocol))
    if known is not None:
        return stop in known
    return stop in RESPONSES_INCOMPLETE or any(stop in stops for stops in TRUNCATING_STOPS.values())


def _client_cut(meta: Mapping[str, Any]) -> bool:
    """The stop reason the client received says its answer was cut short."""
    client = client_protocol(meta) or meta.get("protocol")
    return truncating(client if isinstance(client, str) else None, client_stop_reason(meta))


def _upstream_cut(meta: Mapping[str, Any]) -> bool:
    """The upstream cut the answer short (its own stop reason, or its class)."""
    raw = meta.get("stop_reason")
    protocol = meta.get("protocol")
    return _stop_class(meta) in TRUNCATING_CLASSES or truncating(
        protocol if isinstance(protocol, str) else None, raw if isinstance(raw, str) else None
    )


def verdict(meta: Mapping[str, Any]) -> Verdict | None:
    """The flow's verdict, or None when ProxAI recorded no outcome. ``truncated``: the upstream cut
    the answer short (whatever the translation told a client of another protocol)."""
    outcome = _OUTCOMES.get(str(meta.get("outcome")))
    if outcome is None:
        return None
    if outcome is Outcome.COMPLETED and _upstream_cut(meta):
        return Verdict.TRUNCATED
    return _VERDICTS[outcome]


# each outcome's verdict (``Verdict(str(outcome))``)
_VERDICTS: dict[Outcome, Verdict] = {o: Verdict(str(o)) for o in Outcome}


def _truncation_reason(meta: Mapping[str, Any]) -> str | None:
    """The reason a truncated flow's verdict gives: the stop reason the client received, or
    ``upstream <reason>`` when that one says nothing of the cut (terminal-safe)."""
    if _client_cut(meta):
        return _str(client_stop_reason(meta))
    raw = _str(meta.get("stop_reason"))
    return f"upstream {raw}" if raw else _str(meta.get("stop_class"))


def truncation_text(meta: Mapping[str, Any]) -> str:
    """The view's words for what cut a truncated flow short, and the reasons given:
    ``the token limit (length)``, ``a content filter (upstream refusal, the client got
    content_filter)``."""
    raw = _str(meta.get("stop_reason"))
    client = _str(client_stop_reason(meta))
    cause = TRUNCATION_CAUSES.get(str(raw), "the upstream")
    if is_translated(meta) and client != raw:
        return f"{cause} (upstream {raw}, the client got {client})"
    return f"{cause} ({raw or _str(meta.get('stop_class'))})"


def marker_for(meta: Mapping[str, Any]) -> str:
    """The ``flow.marked`` value of a flow ("" = not marked)."""
    v = verdict(meta)
    if v is None:
        return ""
    err = meta.get("error")
    if (
        v is Verdict.ERROR
        and err is not None
        and isinstance(err, _MAPPING)
        and err.get("kind") in GUARD_KINDS
    ):
        return GUARD_MARKER
    marker = MARKERS[v]
    if not marker and conformance.raising(meta):
        return SDK_MARKER
    return marker


def _tools(meta: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    tools = meta.get("tool_calls")
    return [t for t in tools if isinstance(t, _MAPPING)] if isinstance(tools, list) else []


def verdict_text(meta: Mapping[str, Any], *, upstream_side: bool = False) -> str:
    """The verdict with its reason: ``completed (tool_calls)``, ``truncated (max_tokens)``,
    ``error: rate_limited (HTTP 429)``, ``closed: no message_stop``, ``unfinished_tool in get_weather``."""
    v = verdict(meta)
    if v is None:
        return "?"
    raw = meta.get("stop_reason")
    if v is Verdict.TRUNCATED and not upstream_side:
        stop = _truncation_reason(meta)
    else:
        stop = _str(raw if upstream_side else client_stop_reason(meta))
    if v in (Verdict.COMPLETED, Verdict.TRUNCATED):
        if stop == str(v):  # Responses says "completed": its class says more
            stop = _str(meta.get("stop_class"))
        if meta.get("refusal_bytes") and stop != "refusal":
            stop = f"{stop}, refusal" if stop else "refusal"
        return f"{v} ({stop})" if stop else str(v)
    if v is Verdict.CLOSED:
        terminal = TERMINAL_EVENT.get(str(meta.get("protocol")))
        return f"closed: no {terminal}" if terminal else "closed"
    if v is Verdict.UNFINISHED_TOOL:
        names = list(
            dict.fromkeys(_str(t.get("name")) or "?" for t in _tools(meta) if not t.get("arguments_complete"))
        )
        return "unfinished_tool" + (" in " + "/".join(names) if names else "")
    err = meta.get("error")
    if err is not None and isinstance(err, _MAPPING) and err.get("kind"):
        status = _int(err.get("status"))
        return f"error: {_str(str(err['kind']))}" + (f" (HTTP {status})" if status else "")
    return "error"


def _tokens(meta: Mapping[str, Any]) -> str | None:
    usage = meta.get("usage")
    if not (usage is not None and isinstance(usage, _MAPPING)):
        return None
    i, o = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
    if i is None and o is None:
        return None
    return f"{'?' if i is None else i} in/{'?' if o is None else o} out"


def fault_label(meta: Mapping[str, Any]) -> str:
    """``injected fault stall`` for a flow ProxAI faulted on purpose (docs/agent-testing.md), so
    that nobody takes it for the upstream's doing; "" otherwise."""
    extra = meta.get("extra")
    fault = extra.get("fault") if (extra is not None and isinstance(extra, _MAPPING)) else None
    if not (fault is not None and isinstance(fault, _MAPPING)) or not fault.get("injected"):
        return ""
    return f"injected fault {_str(str(fault.get('fault')))}"


def replay_label(meta: Mapping[str, Any]) -> str:
    """``replayed from flow 2`` for a flow answered from a recorded run, ``replay miss`` for one no
    recording matched (docs/replay.md); "" otherwise."""
    replay = meta.get("replay")
    if not (replay is not None and isinstance(replay, _MAPPING)):
        return ""
    if replay.get("replayed"):
        index = replay.get("flow_index")
        return f"replayed from flow {index}" if isinstance(index, int) else "replayed"
    return "replay miss" if replay.get("miss") else ""


def price_text(meta: Mapping[str, Any]) -> str | None:
    """The flow's price (``$0.000345``), or None when it has none (the view says why)."""
    amount = cost.amount(meta)
    return None if amount is None else cost.format_amount(amount)


def sdk_label(meta: Mapping[str, Any]) -> str:
    """``SDK: openai-python raises IndexError, openai-node raises OpenAIError (openai_chat.choice_index)``
    for the first conformance finding on which an official SDK raises (``+N more`` findings of that
    kind); "" when no SDK raises on the stream."""
    found = [f for f in conformance.findings_of(meta) if f.get("raises")]
    if not found:
        return ""
    first = found[0]
    sdks = first.get("sdks")
    says = []
    for name, text in sdks.items() if (sdks is not None and isinstance(sdks, _MAPPING)) else ():
        reaction = str(text)
        if reaction.startswith("raises "):
            says.append(f"{str(name).split(' ', 1)[0]} {reaction.split(':', 1)[0]}")
    label = "SDK: " + ", ".join(says) + f" ({first.get('rule')})"
    if len(found) > 1:
        label += f" +{len(found) - 1} more"
    return terminal_safe(label)


def comment_line(meta: Mapping[str, Any]) -> str:
    """The one-line ``flow.comment``, verdict first (a narrow comment column still shows it):
    ``truncated (max_tokens) · anthropic claude-sonnet-4-5 · 25 in/8 out · $0.000195``; an injected
    fault is named right after the verdict, then an official SDK that raises on the stream."""
    parts = [verdict_text(meta)]
    fault = fault_label(meta)
    if fault:
        parts.append(fault)
    replay = replay_label(meta)
    if replay:
        parts.append(replay)
    sdk = sdk_label(meta)
    if sdk:
        parts.append(sdk)
    model = _str(meta.get("model"))
    parts.append(protocol_label(meta) + (f" {model}" if model else ""))
    tokens = _tokens(meta)
    if tokens:
        parts.append(tokens)
    price = price_text(meta)
    if price:
        parts.append(price)
    n = len(_tools(meta))
    if n:
        parts.append(f"{n} tool call{'s' if n != 1 else ''}")
    return terminal_safe(" · ".join(parts))  # the whole line, whatever a field holds


def _secs(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}s"


# mitmdump's colours (``mitmproxy.utils.vt_codes`` / miniclick style arguments) by verdict.
DUMP_STYLE: dict[str, dict[str, Any]] = {
    Verdict.COMPLETED: {},
    Verdict.TRUNCATED: {"fg": "yellow", "bold": True},
    Verdict.CLOSED: {"fg": "yellow", "bold": True},
    Verdict.UNFINISHED_TOOL: {"fg": "magenta", "bold": True},
    Verdict.ERROR: {"fg": "red", "bold": True},
}


def dump_line(meta: Mapping[str, Any]) -> str:
    """mitmdump's line for an LLM flow that ended: protocol, model, verdict (upper case when it is
    not a success, so it stands out without colour too), tokens, cost, time to first token, duration.
    ``proxai chat gpt-4.1 · TRUNCATED (length) · 25 in/8 out · $0.000114 · ttft 0.12s · 1.50s``."""
    model = _str(meta.get("model"))
    head = "proxai " + protocol_label(meta) + (f" {model}" if model else "")
    text = verdict_text(meta)
    if verdict(meta) is not Verdict.COMPLETED:
        word, sep, rest = text.partition(" ")
        text = word.upper() + sep + rest
    timing = meta.get("timing") if isinstance(meta.get("timing"), Mapping) else {}
    assert isinstance(timing, _MAPPING)
    parts = [head, text, *filter(None, [fault_label(meta), sdk_label(meta)]), _tokens(meta) or "- tokens"]
    price = price_text(meta)
    if price:
        parts.append(price)
    n = len(_tools(meta))
    if n:
        parts.append(f"{n} tool call{'s' if n != 1 else ''}")
    parts.append(f"ttft {_secs(_num(timing.get('first_token_s')))}")
    parts.append(_secs(_num(timing.get("total_s"))))
    return terminal_safe(" · ".join(parts))  # the whole line, whatever a field holds
