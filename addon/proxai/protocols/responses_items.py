"""The Responses output item types as the grammar (``protocols/responses.py``) reads them: the
tool calls whose arguments stream and the field that holds them, the built-in items the client
executes, the tool kinds the client must answer, the items a translation may not leave out
(docs/design/translation.md, "What the client must act on"), a finished web search call in
neutral terms, the text a terminal response holds (``final_text``), and two checks of an item's
event the grammar makes (``item_seen``, ``open_item``), and a delta it does not read
(``delta_not_string``). Tables, conversions and checks, no reading
of the stream: the grammar's rules are in
docs/design/protocol-grammars.md, "OpenAI Responses".
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any, NoReturn

import orjson

from proxai.core.errors import SemanticStreamError, TranslationError
from proxai.core.model import Protocol
from proxai.stream.sink import WebSearchCall

from .common import Accum, nbytes
from .machine import as_dict, as_list, as_str

if TYPE_CHECKING:
    from .responses import ResponsesGrammar, _Item

# output item type -> tool kind (items whose arguments stream)
ARG_TOOLS: dict[str, str] = {"function_call": "function", "custom_tool_call": "custom", "mcp_call": "mcp"}
# the field that holds a tool item's whole argument string
ARG_FIELD = {"function_call": "arguments", "custom_tool_call": "input", "mcp_call": "arguments"}


# Built-in tool items the CLIENT executes (its answer quotes ``call_id``), and MCP approval
# requests (the client answers with ``approval_request_id`` = the item's ``id``): client calls,
# not server tools. Their arguments are the item's ``action`` / ``operation`` / ``arguments``.
CLIENT_ITEMS: dict[str, str] = {
    "local_shell_call": "client",
    "shell_call": "client",
    "apply_patch_call": "client",
    "computer_call": "client",
    "mcp_approval_request": "mcp_approval",
}


#: the tool kinds the client must answer (the stop class is then ``tool_use``)
CLIENT_KINDS = frozenset({"function", "custom", "client", "mcp_approval"})

#: Items a translation to another protocol may not leave out (docs/design/translation.md,
#: "What the client must act on"): a call the client must answer (built-in client tools, an MCP
#: approval request, a freeform tool call the client declared: none has a counterpart in Anthropic
#: or Chat's stream, and a request translated from them declares none of the built-in tools; a
#: freeform call of another name ran at the server: ``hosted_call``), or content that is the answer
#: itself (a generated image). A translated stream that meets one ends with a typed error in the
#: client's protocol naming the item type; an Anthropic or Chat client shown the rest would
#: believe the turn ended normally. Items executed at the server whose results sit beside the
#: answer (web search, file search, code interpreter, MCP calls, ...) are left out with a note.
MUST_REACH = frozenset(
    {
        "shell_call",
        "local_shell_call",
        "apply_patch_call",
        "computer_call",
        "mcp_approval_request",
        "custom_tool_call",
        "image_generation_call",
    }
)


def hosted_call(itype: str, name: str | None, custom_tools: frozenset[str]) -> bool:
    """A ``custom_tool_call`` whose name is not one of the client's declared custom tools: a call
    the server already ran (xAI's X Search, answered in the same response), not the client's:
    left out of a translation with a note, an error only when no answer follows it
    (docs/design/translation.md, "xAI's custom_tool_call"). The streaming grammar and the buffered
    reading (``translate/resp_from_responses.py``) both decide by this."""
    return itype == "custom_tool_call" and name not in custom_tools


def unanswered_hosted() -> TranslationError:
    """A response that ends on a hosted ``custom_tool_call`` with no message content after it:
    nothing the client could act on, and no answer (a normal end would hide it): the typed error."""
    return TranslationError(
        "the upstream ended on a 'custom_tool_call' item its server ran, with no answer after it:"
        " the client's protocol has no counterpart for it",
        "output[].type",
    )


def server_tool(itype: str) -> bool:
    """Hosted tools that run at the provider and stream no arguments (web_search_call, ...)."""
    return itype.endswith("_call") and itype not in ARG_TOOLS and itype not in CLIENT_ITEMS


def client_item_call(itype: str, item: dict[str, Any]) -> tuple[str | None, str, str]:
    """(the id the client's answer quotes, a name, the arguments as JSON) of a client item."""
    cid = as_str(item.get("id")) if itype == "mcp_approval_request" else as_str(item.get("call_id"))
    args = item.get("arguments")
    if type(args) is not str:
        args = orjson.dumps(item.get("action") or item.get("operation") or {}).decode()
    return cid, as_str(item.get("name")) or itype, args


def web_search_call(item_id: str, item: dict[str, Any]) -> WebSearchCall:
    """A finished ``web_search_call`` in neutral terms: its query (``action.query``, or the
    first of ``action.queries``) and the pages of ``action.sources`` (present when the request
    included them)."""
    action = as_dict(item.get("action"))
    query = as_str(action.get("query"))
    if query is None:
        queries = [q for q in as_list(action.get("queries")) if isinstance(q, str)]
        query = queries[0] if queries else None
    sources = tuple(
        (url, as_str(s.get("title")))
        for s in map(as_dict, as_list(action.get("sources")))
        if (url := as_str(s.get("url")))
    )
    return WebSearchCall(as_str(item.get("id")) or item_id, query, sources, Protocol.OPENAI_RESPONSES)


def cannot_reach(itype: str) -> NoReturn:
    """A ``MUST_REACH`` item in a translation to another protocol: the typed end of the stream."""
    raise TranslationError(
        f"the upstream answered with a {itype!r} item, which the client must act on and its"
        " protocol has no counterpart for",
        "output[].type",
    )


def final_text(acc: Accum, output: list[Any]) -> None:
    """The summary's text and refusal bytes at a streamed terminal event: the final object's where
    the deltas read less. Both SDKs' final object is that event's response, whose message items
    hold the text of deltas the SDKs pass over (an event whose payload has no ``type``) or that
    never came; a response that leaves its output out does not take the streamed text away
    (docs/design/protocol-grammars.md, "OpenAI Responses")."""
    text = refusal = 0
    for raw in output:
        item = as_dict(raw)
        if item.get("type") != "message":
            continue
        for part in as_list(item.get("content")):
            p = as_dict(part)
            ptype = p.get("type")
            if ptype == "output_text" and type(s := p.get("text")) is str:
                text += nbytes(s)
            elif ptype == "refusal" and type(s := p.get("refusal")) is str:
                refusal += nbytes(s)
    acc.text_bytes = max(acc.text_bytes, text)
    acc.refusal_bytes = max(acc.refusal_bytes, refusal)


def item_seen(g: ResponsesGrammar, obj: dict[str, Any], etype: str) -> None:
    """Observe-only, an item's event the summary does not read: its item looked up as a
    translation's reading looks it up (``ResponsesGrammar._item``), so both readings note the same
    ids (never a refusal)."""
    with contextlib.suppress(SemanticStreamError):
        g._item(obj, etype)


def open_item(iid: str, item: _Item, kind: str, etype: str) -> None:
    """The writer's check of an item's event: the item is of ``kind`` and not done."""
    if item.kind != kind:
        raise SemanticStreamError(f"{etype} inside a {item.kind} item ({iid!r})")
    if item.done:
        raise SemanticStreamError(f"{etype} for item {iid!r} after output_item.done")


def delta_not_string(g: ResponsesGrammar, item: tuple[str, _Item], etype: str) -> None:
    """A text, refusal or reasoning delta (of ``item``) whose ``delta`` is not a string: not read.
    openai-node appends it to its snapshot, which ``response.completed``'s response replaces;
    openai-python reads only an ``output_text`` one, and raises there (``SdkView``:
    ``openai_responses.text_delta_type``). Both SDKs accept the others: a note."""
    if etype != "response.output_text.delta":
        msg = f"{etype} for item {item[0]!r} without a string delta: not read"
        g.acc.finding_once("openai_responses.delta_not_string", "quirk", msg)
