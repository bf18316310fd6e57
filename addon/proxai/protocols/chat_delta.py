"""Chat: what the SDKs keep of a choice's delta for the conformance rules: whether the choice got
a role (openai-node, ``openai_chat.no_role``), and its lists as openai-python merges them
(docs/design/conformance.md, "Lists in a Chat delta"); a choice's or a tool call's ``index`` that
is no JSON integer as each SDK reads it (``choice_index``, ``tool_index``: openai-node finds
``"1"`` and ``1.0`` at place 1, openai-python refuses them for a choice and converts them for a
tool call). Sans-IO.

openai-python's ``ChatCompletionStreamState._accumulate_chunk`` folds each chunk's delta into the
choice's message with ``accumulate_delta`` (``lib/streaming/_deltas.py``): a list the message does
not hold yet is taken as it came (unless an entry has an ``index``: then it is merged as below),
a list of strings or numbers grows by the next one, and any other list is merged entry by entry by
each entry's ``index``: an object without one raises ``RuntimeError`` ("Expected list delta entry
to have an `index` key"). So a provider that sends ``annotations`` (OpenRouter's web plugin),
``reasoning_details`` or any list of objects in more than one chunk, without indexes, makes it
raise at the second; openai-node assigns every field it does not model to the message as it
comes (``Object.assign``), so it keeps the last chunk's list and loses the earlier ones. The rule
is ``openai_chat.delta_list_index``; an entry that is not an object, or an ``index`` that is not
an integer, makes it raise ``TypeError`` (``openai_chat.delta_list_entry``); a first list with an
indexed object is merged by index too, where nothing is lost to openai-node
(``openai_chat.delta_list_mixed``, ``openai_chat.delta_list_entry_first``). ``tool_calls`` have
their own rules; ``refusal``, ``role``, ``audio`` and ``function_call`` openai-python merges the same
way, openai-node in its own (``refusal_type``, ``audio_object``, ``function_call_fields``,
``function_call_beside``; a role: ``no_assistant``); ``content``: below.

What the message holds of each other field is kept per choice as its shape (``_typed``, the
grammar's conformance memo, under ``("list", choice, field)``; ``_fold_list``): nothing, a list of
strings and numbers as its length, any other list as its entries' shapes, an object as the
shapes of its keys (merged key by key). Only a delta's lists and objects are looked at (a field
that came as something else before its first list, which openai-python then leaves as it is, is
read as holding nothing: no provider sends one). Only a delta off the fast paths can carry a list
or an object (the fast paths take no delta that holds one: ``chat_fields``).
A field openai-node does not model whose list the message holds (not empty, or nested in an
object), given again in any form, is ``openai_chat.node_replaced_field`` (``_replaced``): a null
or a value that is no list openai-python leaves out (the message keeps the list), openai-node
assigns it; the grammar keeps those fields per choice (``ChatGrammar._listed``), and the fast path
declines a delta of choice 0 that carries one.
A ``content`` list after a string content (``""`` included, as a delta off the fast paths or any
text counted before) is left as it was by openai-python (note ``openai_chat.content_parts``), and
a content list that comes again without indexes is ``openai_chat.content_list_index`` (openai-node
appends each list to the content as a string, ``[object Object]``).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .chat import ChatGrammar

# the delta fields openai-node reads in its own way, and tool_calls (rules of their own)
_OWN = frozenset({"refusal", "role", "audio", "function_call", "tool_calls"})
_TEXT = "text"  # the content openai-python's message holds is a string
_KEPT = _OWN | {"content"}  # the fields openai-node's final message with a function_call keeps
NESTED = frozenset({list, dict})  # the values ``accumulate_delta`` merges into what it holds (chat_fields)
_SPENT_LIST = _TEXT  # a list openai-python raised on: nothing more is judged of it
_REFUSED = frozenset({"length", "content_filter"})  # the finish reasons the parse helpers refuse
_CALL_TYPES = frozenset({"function", "custom"})  # (a call of another type is no function call)
_ROLE = "role"  # ``_typed``'s key of choice 0's last role when it is not ``assistant``


def end_conforms(g: ChatGrammar) -> None:
    """The completion as the SDKs hold it at the end of the stream (``[DONE]`` or EOF): openai-python
    builds it from the first chunk whose ``object`` is ``chat.completion.chunk`` (``no_chunk`` when
    no chunk came at all, ``no_valid_chunk`` when none has it: ``get_final_completion`` asserts a
    snapshot); openai-node from the first chunk whatever its ``object`` (``_endRequest``: "request
    ended without sending any chunks"), then ``finalizeChatCompletion`` wants each choice's
    ``finish_reason``, ``role`` and tool-call ``type``, and ``finalChatCompletion`` an assistant
    message (``AbstractChatCompletionRunner`` ``_emitFinal``: choice 0 with the role ``assistant``,
    the last one a delta gave)."""
    if not g.acc.received:
        g.conform("openai_chat.no_chunk", "no chunk came before the end")
        return
    if not g._valid:
        g.conform("openai_chat.no_valid_chunk", "no chunk has object chat.completion.chunk")
    if missing := sorted(g.choices - g.finished_choices):
        g.conform("openai_chat.no_finish_reason", f"choice {missing[0]} got no finish_reason")
    if roleless := sorted(g.choices - g._roles):
        g.conform("openai_chat.no_role", f"choice {roleless[0]} got no role")
    if not g.choices:
        g.conform("openai_chat.no_assistant", "no chunk had a choice")
    elif (role := g._typed.get(_ROLE)) is not None and 0 in g._roles:
        g.conform("openai_chat.no_assistant", f"choice 0's role is {role!r}, not 'assistant'")
    untyped = [k for k in g.acc.tools if k not in g._typed]
    if untyped:
        g.conform("openai_chat.tool_call_type", f"tool call {untyped[0][1]} got no type")
    odd = [
        (k, t)
        for k, t in g._typed.items()
        if k in g.acc.tools and t is not UNINDEXED and (type(t) is not str or t not in _CALL_TYPES)
    ]
    if odd:  # openai-node's ``maybeParseChatCompletion``: only function calls (``custom``: its rule)
        (_, index), ttype = odd[0]
        g.conform("openai_chat.tool_call_not_function", f"tool call {index} has type {ttype!r}")
    _function_calls_end(g)
    for cidx in sorted(g.choices):  # openai-node's array of calls, with a hole where one never came
        given = sorted(
            {
                k[1]
                for k in g.acc.tools
                if k[0] == cidx and type(k[1]) is int and k[1] >= 0 and g._typed.get(k) is not UNINDEXED
            }
        )
        if given and given[-1] + 1 != len(given):
            hole = next(i for i in range(given[-1]) if i not in given)
            g.conform("openai_chat.tool_call_gap", f"choice {cidx}: tool call {hole} never came")
            return


def _function_call(g: ChatGrammar, cidx: int, fc: Any) -> None:
    """A legacy ``function_call`` as openai-node keeps it (``#accumulateChatCompletion``): the first
    one as it came, then a later ``name`` and ``arguments`` when they are not empty. Kept as
    ``_typed[("function_call", cidx)]``: [an object, a name, arguments]."""
    key = ("function_call", cidx)
    held = g._typed.get(key)
    obj = type(fc) is dict
    if held is None:
        g._typed[key] = [obj, bool(obj and fc.get("name")), obj and fc.get("arguments") is not None]
    elif obj:
        held[1] = held[1] or bool(fc.get("name"))
        held[2] = held[2] or bool(fc.get("arguments"))


def _function_calls_end(g: ChatGrammar) -> None:
    """openai-node's ``finalizeChatCompletion`` of a choice with a ``function_call``: it raises
    without its ``arguments`` or ``name`` (``openai_chat.function_call_fields``), and its message
    keeps only the content, refusal, role and audio: the tool calls and the fields it does not
    model are lost (``openai_chat.function_call_beside``)."""
    for key, held in list(g._typed.items()):
        if type(key) is not tuple or key[0] != "function_call":
            continue
        cidx = key[1]
        if not (held[0] and held[1] and held[2]):
            g.conform(
                "openai_chat.function_call_fields",
                f"choice {cidx}: a function_call without its name or arguments",
            )
            return
        lists = any(type(k) is tuple and k[:2] == ("list", cidx) and k[2] not in _KEPT for k in g._typed)
        reasoned = g._reasoned is not None if cidx == 0 else ("reasoned", cidx) in g._typed
        if any(k[0] == cidx for k in g.acc.tools) or lists or reasoned:
            g.conform(
                "openai_chat.function_call_beside",
                f"choice {cidx}: a function_call beside tool calls or other fields",
            )
            return


def calls_end(g: ChatGrammar, cidx: int, calls: list[Any] | None, finish: str | None = None) -> None:
    """The tool calls openai-node's ``ChatCompletionStream`` ``#addChunk`` ends at a chunk, once
    the chunk's deltas are in its snapshot: the current call when a delta names another index
    (``calls``) or when the choice has its ``finish_reason`` (``None``); ``#emitToolCallDoneEvent``
    raises for a call without its ``type`` then, though a later delta gives it one
    (``openai_chat.tool_call_type``)."""
    if NODE_LOST in g._typed:  # (openai-node's choice under no place has calls of its own)
        return
    if finish in _REFUSED:  # (the choice's finish_reason, once it comes: ``parsed_finish``)
        g._typed.setdefault(("finish", cidx), finish)
    cur = g._cur
    was = cur.get(cidx)
    for tc in calls or ():
        index = tc.get("index") if type(tc) is dict else None
        if type(index) is bool:  # openai-node's call under the key "true" / "false"
            index = "true" if index else "false"
            if tc.get("type"):
                g._typed[cidx, index] = tc["type"]
        elif type(index) is not int:
            continue
        if was is not None and was != index:
            _ended(g, cidx, was)
        was = cur[cidx] = index
    if calls is None and was is not None:
        _ended(g, cidx, was)


def parsed_finish(g: ChatGrammar) -> tuple[int, str | None]:
    """openai-python's ``parse_chat_completion`` (``get_final_completion``) raises for the first
    choice whose ``finish_reason`` is ``length`` or ``content_filter``, whichever choice it is
    (openai-node's ``#accumulateChatCompletion`` too, with a strict tool): that choice and its
    reason, else choice 0's (the stream's stop reason)."""
    refused = [(k[1], r) for k, r in g._typed.items() if type(k) is tuple and k[0] == "finish"]
    return min(refused) if refused else (0, g.acc.stop_reason)


def _ended(g: ChatGrammar, cidx: int, index: int | str) -> None:
    key = (cidx, index)
    if (type(index) is str or key in g.acc.tools) and key not in g._typed:
        g.conform("openai_chat.tool_call_type", f"tool call {index} ended without a type")


#: ``_typed``'s key while a chunk openai-python skips (its ``object`` is not a chunk's) is read
SKIPPED = "skipped"


def call_order(g: ChatGrammar, cidx: int, given: int, new: bool) -> None:
    """A tool-call delta's integer ``index`` (``new``: the call's first delta here) against the calls
    openai-python's message holds (``_typed[("calls", cidx)]``, counted off the chunks it skips):
    ``accumulate_delta`` inserts a call past them at the end, then ``tool_calls[index]`` raises
    ``IndexError`` when the index is past the end (``openai_chat.tool_call_index``; so is a new call
    whose index is not the count of the calls so far)."""
    memo = g._typed
    if SKIPPED in memo:
        return
    key = ("calls", cidx)
    held = memo.get(key, 0)
    if given == held:
        memo[key] = held + 1
    n = sum(1 for k in g.acc.tools if k[0] == cidx) if new else given
    if given > held or given != n:
        g.conform("openai_chat.tool_call_index", f"tool call {given} came before tool call {min(n, held)}")


def python_holds(g: ChatGrammar, given: int | None) -> bool:
    """A new call of choice 0 that the fast path may take the fragments of: one with an index, in a
    chunk openai-python reads (the fragments of any other go to the general path, ``call_order``)."""
    return given is not None and SKIPPED not in g._typed


#: ``_typed``'s key while the delta of a choice openai-node keeps under no place is read
NODE_LOST = "node_lost"
#: ``_typed`` of a call whose first delta had no index (openai-node keeps it under no index)
UNINDEXED: Any = object()


def tool_conforms(g: ChatGrammar, key: tuple[int, int], first: bool, tc: dict[str, Any]) -> None:
    """What the SDKs require of a tool call's deltas with an index (docs/design/conformance.md): a
    type (Node), a function in the first delta of a function call and in every later one, and no
    ``type`` but ``function`` after it (Python: ``null`` or another type fails its assertion that a
    function call stays one; Node's final completion refuses a call that is no function call,
    ``tool_calls_end``). A call whose first delta had no index has no call of its own in openai-node
    until a delta with its index comes: that one is its first there."""
    typed = g._typed
    ttype = tc.get("type")
    has_fn = type(tc.get("function")) is dict
    lost = NODE_LOST in typed  # a delta openai-node leaves out: no call of its own (nor type) there
    if first or typed.get(key) is UNINDEXED:
        if lost:
            if first:
                typed[key] = UNINDEXED
        elif ttype:
            typed[key] = ttype
        elif not first:
            del typed[key]  # openai-node's call at this index has no type yet
        if ttype == "function" and not has_fn:
            g.conform("openai_chat.tool_call_function", f"tool call {key[1]} starts without function")
        return
    was = typed.get(key)
    if was == "function" and (not has_fn or ("type" in tc and ttype != "function")):
        what = "without function" if not has_fn else f"with type {ttype!r}"
        g.conform("openai_chat.tool_call_delta", f"tool call {key[1]}: a later delta {what}")
    if ttype and not lost:
        typed[key] = ttype


# a string openai-node reads as an array index (``snapshot.choices["1"]`` is ``choices[1]``)
_CANONICAL = re.compile(r"0|[1-9][0-9]{0,8}")


def node_index(v: Any) -> int | None:
    """An ``index`` that is no JSON integer as openai-node reads it, a property of an array: a
    string of digits in canonical form or an integral float (``1.0`` is ``1`` once parsed) is that
    place; anything else (``"01"``, ``-1``, ``true``, null) no place in it (None)."""
    if type(v) is str:
        return int(v) if _CANONICAL.fullmatch(v) else None
    if type(v) is float and v.is_integer() and 0 <= v < 1e9:
        return int(v)
    return None


def choice_index(g: ChatGrammar, v: Any) -> tuple[int, bool]:
    """A choice's ``index`` that is not an integer (openai-python looks the choice up by it:
    ``TypeError``): the index to read it at, and whether openai-node keeps it there
    (``openai_chat.choice_index_type``) or under no index (``openai_chat.choice_no_index``: read as
    choice 0, its role and finish_reason not counted). A boolean openai-python reads as 0 or 1
    (``bool`` is an ``int``: ``choices[True]``), openai-node as no place (``choices["true"]``):
    ``openai_chat.choice_index_bool``, read as openai-python, its role and finish_reason not
    counted."""
    if type(v) is bool:
        g.conform("openai_chat.choice_index_bool", f"a choice with index {v!r}, read as {int(v)}")
        return int(v), False
    n = node_index(v)
    if n is None:
        g.conform("openai_chat.choice_no_index", f"a choice with index {v!r}")
        return 0, False
    g.conform("openai_chat.choice_index_type", f"a choice with index {v!r}, read as {n}")
    return n, True


def not_an_object(g: ChatGrammar, v: Any, what: str) -> None:
    """An entry of ``choices`` (``what``: "choice") or of a delta's ``tool_calls`` that is no
    object, which the grammar does not read: openai-python reads its ``index`` (or merges it into
    the calls) and raises; openai-node skips it, or raises on null."""
    if what == "choice":
        rule = "openai_chat.choice_null" if v is None else "openai_chat.choice_object"
    else:
        rule = "openai_chat.tool_call_null" if v is None else "openai_chat.tool_call_object"
    g.conform(rule, f"a {what} that is {str(v)[:40]}")


def tool_index(g: ChatGrammar, v: Any) -> int | None:
    """A tool-call delta's ``index``: an integer, or a string of digits or an integral float both
    SDKs read as that integer (openai-python's message model converts it, openai-node finds the
    call at that place): read so, a note. A boolean openai-python reads as 0 or 1 (``bool`` is an
    ``int``), openai-node as no place (``tool_calls["true"]``): ``openai_chat.tool_call_index_bool``,
    read as openai-python. None: no index either reads."""
    if type(v) is int:
        return v
    if type(v) is bool:
        g.conform("openai_chat.tool_call_index_bool", f"tool call index {v!r}, read as {int(v)}")
        return int(v)
    n = node_index(v)
    if n is not None:
        g.acc.finding_once("openai_chat.index_not_integer", "quirk", f"tool call index {v!r} read as {n}")
    return n


#: ``ChatGrammar._reasoned`` once openai-node's loss is found: a key no delta has
SPENT = "\0"


def node_replaced(g: ChatGrammar, field: str | None, delta: dict[str, Any]) -> None:
    """Choice 0's delta (another choice's: ``_reasoned_again``), where its reasoning text came in a
    field openai-node does not model (``g._reasoned``) or comes now (``field``): openai-node assigns
    such a field's value to the message at every chunk that carries it (``Object.assign``), so a
    later chunk with that field, null or another piece, replaces the text so far, where
    openai-python joins the pieces: ``openai_chat.node_replaced_field`` (DeepSeek's content chunks
    carry ``reasoning_content: null``). Then nothing more is looked at (``SPENT``)."""
    held = g._reasoned
    if held is None:
        g._reasoned = field
    elif held in delta:
        g._reasoned = SPENT
        g.conform(
            "openai_chat.node_replaced_field",
            f"choice 0: delta.{held} again after its text (openai-node keeps the last value)",
        )
    elif field is not None:
        g._reasoned = field


def _reasoned_again(g: ChatGrammar, cidx: int, delta: dict[str, Any]) -> None:
    """``node_replaced`` for a choice other than 0 (n > 1: always off the fast paths), its reasoning
    field kept as ``_typed[("reasoned", cidx)]``."""
    if g.broken is not None and _NODE_REPLACED in g.broken:
        return
    key = ("reasoned", cidx)
    held = g._typed.get(key)
    if held is not None and held in delta:
        g.conform(
            _NODE_REPLACED,
            f"choice {cidx}: delta.{held} again after its text (openai-node keeps the last value)",
        )
    elif delta.get(field := "reasoning_content") or delta.get(field := "reasoning"):
        g._typed[key] = field


def _indexed(entries: list[Any]) -> bool:
    return any(type(e) is dict and "index" in e for e in entries)


def _scalar(e: Any) -> bool:
    return isinstance(e, (str, int, float))  # (a bool is an int)


class _Raises(Exception):
    """openai-python's ``accumulate_delta`` raises here: ``RuntimeError`` (an object without an
    ``index``) or ``TypeError`` (an entry that is no object, an ``index`` that is no integer, an
    entry at that index that is no object)."""

    def __init__(self, name: str, what: str) -> None:
        super().__init__(what)
        self.name = name


# What openai-python's message holds of a value, as ``accumulate_delta`` folds deltas into it: its
# shape, not its text: "s" a string, "n" a number (or a boolean), None nothing, a dict of shapes; a
# list of strings and numbers only is its length (an int: it grows by the next list whatever that
# holds, without a scan), any other list the list of its entries' shapes.


def _shape(v: Any) -> Any:
    if type(v) is dict:
        return {k: _shape(x) for k, x in v.items()}
    if type(v) is list:
        return len(v) if all(_scalar(e) for e in v) else [_shape(e) for e in v]
    if v is None:
        return None
    return "s" if type(v) is str else "n" if _scalar(v) else None


def _fold_list(held: Any, value: list[Any]) -> Any:
    """The list ``held`` (a length, a list of shapes, or None: nothing) once ``value`` is folded in."""
    if held is None:
        if not _indexed(value):
            return _shape(value)  # taken as it came
        held = 0  # (an empty list, into which the entries are merged by index)
    if type(held) is int and (held or not _indexed(value)):  # strings and numbers: it grows
        grown = _shape(value)
        return held + grown if type(grown) is int else ["n"] * held + grown
    shapes: list[Any] = ["n"] * held if type(held) is int else held
    for entry in value:
        if type(entry) is not dict:
            raise _Raises("TypeError", f"an entry that is {str(entry)[:40]}")
        if "index" not in entry:
            raise _Raises("RuntimeError", "an object without an index")
        i = entry["index"]
        if not isinstance(i, int):
            raise _Raises("TypeError", f"an index that is {str(i)[:40]}")
        try:
            at = shapes[i]
        except IndexError:
            shapes.insert(i, _shape(entry))
            continue
        if type(at) is not dict:
            raise _Raises("TypeError", f"an object at index {i}, where the list holds no object")
        _fold_dict(at, entry)
    return shapes


_REPLACED = frozenset({"index", "type"})  # the keys ``accumulate_delta`` replaces, never joins


def _fold_dict(held: dict[Any, Any], delta: dict[Any, Any]) -> None:
    for k, v in delta.items():
        at = held.get(k)
        if k in _REPLACED or (at is None and not (type(v) is list and _indexed(v))):
            held[k] = _shape(v)  # (replaced, not joined)
        elif type(v) is list and (at is None or type(at) in (int, list)):
            held[k] = _fold_list(at, v)
        elif type(v) is dict and type(at) is dict:
            _fold_dict(at, v)
        # strings and numbers join, any other pair leaves what it holds


def delta_conforms(g: ChatGrammar, cidx: int, indexed: bool, delta: dict[str, Any]) -> None:
    """A choice's delta, not empty, read off the fast paths (``indexed``: the choice has an integer
    index): its role, each list or object field as openai-python merges it. A choice openai-node
    keeps under no place (``indexed`` false) is marked for its tool calls (``NODE_LOST``, until the
    delta is read)."""
    if not indexed:
        g._typed[NODE_LOST] = True
    if indexed and (role := delta.get("role")):
        g._roles.add(cidx)
        if cidx == 0:  # openai-node keeps the last role a delta gives (``no_assistant``)
            g._typed[_ROLE] = None if role == "assistant" else role
    if type(delta.get("content")) is str and ("list", cidx, "content") not in g._typed:
        g._typed["list", cidx, "content"] = _TEXT  # openai-python's message holds a string
    refusal = delta.get("refusal")
    if refusal and type(refusal) is not str:
        g.conform("openai_chat.refusal_type", f"choice {cidx}: a refusal that is {str(refusal)[:40]}")
    audio = delta.get("audio")
    if audio and type(audio) is not dict:
        g.conform("openai_chat.audio_object", f"choice {cidx}: an audio that is {str(audio)[:40]}")
    if delta.get("function_call"):
        _function_call(g, cidx, delta["function_call"])
    if cidx:  # (choice 0's reasoning field: ``node_replaced``, from the fast path too)
        _reasoned_again(g, cidx, delta)
    if g._listed is not None:  # (None but in a stream whose deltas brought a list Node does not model)
        _replaced(g, cidx, delta)
    for value in delta.values():  # (a list or an object is rare: the fields are looked at only then)
        if type(value) in NESTED:
            for field, entries in delta.items():
                if type(entries) in NESTED and field != "tool_calls":  # (tool_calls: rules of their own)
                    _merge(g, cidx, field, entries)
            return


_NODE_REPLACED = "openai_chat.node_replaced_field"


def _replaced(g: ChatGrammar, cidx: int, delta: dict[str, Any]) -> None:
    """A delta that carries again a field openai-node does not model whose list the choice's message
    holds (``g._listed``; or an object with a list), as a value openai-python does not merge into
    it: openai-node assigns it (``Object.assign``), so a null, a string, a number or an object
    replaces the list; openai-python leaves it out (the message keeps the list):
    ``node_replaced_field`` (a value merged into it: ``_merge``). Then nothing more is looked at
    (``g._listed`` None: the rule is named once)."""
    assert g._listed is not None
    held = g._listed.get(cidx)
    for field in held.intersection(delta) if held else ():
        value = delta[field]
        was = g._typed.get(("list", cidx, field))
        if was is not _SPENT_LIST and not _merged(was, value):  # (spent: openai-python raised on it)
            shown = "null" if value is None else str(value)[:40]
            kept = "(openai-node keeps it, openai-python the list)"
            g.conform(_NODE_REPLACED, f"choice {cidx}: delta.{field} {shown} after its list {kept}")
            g._listed = None
            return


def _merged(held: Any, value: Any) -> bool:
    """``accumulate_delta`` merges ``value`` into what the message holds (``held``, a shape): a list
    into a list, an object into an object; any other pair leaves what it holds."""
    if type(value) is list:
        return type(held) is int or type(held) is list
    return type(value) is dict and type(held) is dict


def _holds_list(shape: Any) -> bool:
    """The shape holds a list that is not empty, at its top or in an object (openai-node's last
    value of the field replaces it)."""
    if type(shape) is dict:
        return any(_holds_list(v) for v in shape.values())
    return bool(shape) and (type(shape) is int or type(shape) is list)


def _list_held(g: ChatGrammar, cidx: int, field: str) -> None:
    """The choice's message holds a list of ``field`` (not empty), which openai-node loses when the
    field comes again (``_replaced``)."""
    listed = g._listed
    if listed is None:
        listed = g._listed = {}
    listed.setdefault(cidx, set()).add(field)


def _merge(g: ChatGrammar, cidx: int, field: str, value: Any) -> None:
    """``delta[field]``, a list or an object, as openai-python merges it into what the choice's
    message holds (``_fold_list``, ``_fold_dict``; a list and an object do not merge: it leaves what
    it holds, ``_replaced``): where it raises, the rule; a field openai-node does not model whose
    list the message holds (or an object with a list) is marked (``_list_held``: openai-node keeps
    its last value, ``_replaced``); one that comes again as a value openai-python merges into it is
    ``node_replaced_field``."""
    memo = g._typed
    key = ("list", cidx, field)
    held = memo.get(key)
    if held is _TEXT or (field == "content" and held is None and g.acc.text_bytes):
        return  # a list is no string: openai-python leaves its content as it was
    if held is not None and not _merged(held, value):
        return
    again = bool(held)  # (a list of no entries loses none to openai-node)
    obj = type(value) is dict
    lost = _holds_list(held) if obj else again  # (before ``_fold_dict`` changes it)
    try:
        if not obj:
            memo[key] = _fold_list(held, value)
        elif held is None:
            memo[key] = _shape(value)  # a first object is taken as it came
        else:
            _fold_dict(held, value)  # merged key by key
    except _Raises as exc:
        if exc.name == "RuntimeError":  # (``content``: openai-node appends its parts as text)
            rule = (
                ("openai_chat.content_list_index" if field == "content" else "openai_chat.delta_list_index")
                if again
                else "openai_chat.delta_list_mixed"
            )
        else:
            rule = "openai_chat.delta_list_entry" if again else "openai_chat.delta_list_entry_first"
        if again and exc.name == "RuntimeError":
            what = "an object with a list" if obj else "a list"
            detail = f"choice {cidx}: delta.{field} again {what} whose objects have no index"
        else:
            detail = f"choice {cidx}: delta.{field}: {exc} (openai-python's {exc.name})"
        g.conform(rule, detail)
        memo[key] = _SPENT_LIST
        return
    if field in _KEPT or (g.broken is not None and _NODE_REPLACED in g.broken):
        return
    if lost:  # openai-python appends the strings and numbers, merges the objects by index
        what = "an object with a list" if obj else "a list"
        g.conform(
            _NODE_REPLACED, f"choice {cidx}: delta.{field} again {what} (openai-node keeps the last one)"
        )
        g._listed = None
    elif _holds_list(memo[key]):  # openai-node assigns the field at every chunk: a later value replaces it
        _list_held(g, cidx, field)
