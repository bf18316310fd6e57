"""What the events after ``response.completed`` that set a field do to openai-node's final response
(docs/design/conformance.md, "Responses: the events after response.completed").

openai-python's final response is ``response.completed``'s (``ResponseStreamState`` parses it there:
``_completed_response``; a later event changes it only by raising). openai-node's is the snapshot at
the end of the stream (``ResponseStream`` ``#endRequest``): ``response.completed``'s response with
every later event applied to it (``accumulateResponse``). An event that adds to it is
``SdkView.adds`` (``openai_responses.item_after_completed``); here are the events that set a field:

- a ``.done`` event (``openai_responses.done_after_completed``): ``output_item.done`` replaces the
  item at its ``output_index``, ``content_part.done`` / ``reasoning_summary_part.done`` the part,
  ``output_text.done``, ``refusal.done``, ``reasoning_text.done``, ``reasoning_summary_text.done``,
  ``function_call_arguments.done``, ``custom_tool_call_input.done``, ``mcp_call_arguments.done`` and
  ``code_interpreter_call_code.done`` the text, arguments, input or code (an absent one: none); an
  ``output_text`` part's or a message's also lists the text anew (``addOutputText``: a string
  ``output_text`` that ``response.completed`` carried is replaced);
- a call's status event (``openai_responses.status_after_completed``: ``web_search_call.searching``
  ... sets the call's ``status``);
- ``output_text.annotation.added`` sets the annotation at its index: the same annotation at an index
  ``response.completed``'s part has is no finding (``same_annotation``).

``sets`` says which rule an event breaks: the value it sets is another one than
``response.completed``'s response has there, as JSON reads (``same``: key order aside, ``1`` and
``1.0`` one number). A place ``response.completed``'s output lacks (an item or a part added after it,
which ``item_after_completed`` names; one openai-node does not have, where it raises and ``SdkView``
names that rule) is not judged here. Run for the events after ``response.completed`` alone, off the
grammar's paths (``responses_sdk.after_terminal``).
"""

from __future__ import annotations

from typing import Any

from proxai.protocols.anthropic_index import node_place

DONE_RULE = "openai_responses.done_after_completed"
STATUS_RULE = "openai_responses.status_after_completed"

_MISSING: Any = object()  # a field the event or the final response does not have
_NUMBER = (int, float)
_ITEM_DONE = "response.output_item.done"
_PART_DONE = "response.content_part.done"
_SUMMARY_PART_DONE = "response.reasoning_summary_part.done"
# a ``.done`` that sets a field -> (the item type openai-node applies it to, the item's list whose
# entry it sets (None: the item itself) and that entry's index field, the type that entry must have
# (None: any), the field it sets, from the event's field of that name)
_FIELD_DONE: dict[str, tuple[str, str | None, str | None, str | None, str]] = {
    "response.output_text.done": ("message", "content", "content_index", "output_text", "text"),
    "response.refusal.done": ("message", "content", "content_index", "refusal", "refusal"),
    "response.reasoning_text.done": ("reasoning", "content", "content_index", "reasoning_text", "text"),
    "response.reasoning_summary_text.done": ("reasoning", "summary", "summary_index", None, "text"),
    "response.function_call_arguments.done": ("function_call", None, None, None, "arguments"),
    "response.custom_tool_call_input.done": ("custom_tool_call", None, None, None, "input"),
    "response.mcp_call_arguments.done": ("mcp_call", None, None, None, "arguments"),
    "response.code_interpreter_call_code.done": ("code_interpreter_call", None, None, None, "code"),
}
# a call's status event -> (its item type, the status openai-node sets)
_STATUS = {
    f"response.{kind}.{status}": (kind, status)
    for kind, statuses in (
        ("code_interpreter_call", ("in_progress", "interpreting", "completed")),
        ("file_search_call", ("in_progress", "searching", "completed")),
        ("web_search_call", ("in_progress", "searching", "completed")),
        ("image_generation_call", ("in_progress", "generating", "completed")),
        ("mcp_call", ("in_progress", "completed", "failed")),
    )
    for status in statuses
}
#: every event ``sets`` judges
SETTING = frozenset({_ITEM_DONE, _PART_DONE, _SUMMARY_PART_DONE, *_FIELD_DONE, *_STATUS})


def same(a: object, b: object) -> bool:
    """``a`` and ``b`` are one JSON value as a JavaScript object holds it: an object's keys in any
    order, a number by its value (``1`` is ``1.0``; ``true`` is no number). Without recursion."""
    todo: list[tuple[Any, Any]] = [(a, b)]
    while todo:
        x, y = todo.pop()
        tx, ty = type(x), type(y)
        if tx in _NUMBER and ty in _NUMBER:
            if x != y:
                return False
        elif tx is not ty:
            return False
        elif tx is dict:
            if x.keys() != y.keys():
                return False
            todo.extend((v, y[k]) for k, v in x.items())
        elif tx is list:
            if len(x) != len(y):
                return False
            todo.extend(zip(x, y, strict=True))
        elif x != y:
            return False
    return True


def _entry(entries: object, index: object) -> Any:
    """openai-node's ``entries[index]`` where it finds one (``"0"``, ``0.0`` read as place 0), else
    ``_MISSING`` (it raises there, or the place came after ``response.completed``)."""
    if type(index) is not int:
        index = node_place(index)
    if type(entries) is not list or type(index) is not int or not 0 <= index < len(entries):
        return _MISSING
    found = entries[index]
    return found if found else _MISSING  # (``getOutput`` / ``getContent`` raise on a falsy entry)


def _texts_change(resp: dict[str, Any], output: list[Any]) -> bool:
    """openai-node's ``addOutputText`` on ``output`` gives another ``output_text`` than the one
    ``response.completed`` carried (a non-null one: ``cloneResponse`` keeps it)."""
    kept = resp.get("output_text")
    if kept is None:
        return False  # (openai-node listed the texts at response.completed too)
    texts = []
    for item in output:
        if type(item) is dict and item.get("type") == "message" and type(item.get("content")) is list:
            for part in item["content"]:
                if type(part) is dict and part.get("type") == "output_text":
                    text = part.get("text")
                    if text is not None and type(text) is not str:
                        return False  # (JavaScript's join of a non-string: not judged)
                    texts.append(text or "")
    return bool(kept != "".join(texts))


def sets(resp: dict[str, Any] | None, etype: str, obj: dict[str, Any]) -> str | None:
    """The rule the event after ``response.completed`` (``resp``: its response) breaks by setting a
    field of openai-node's final response to another value than ``resp`` has there, else None."""
    if resp is None or etype not in SETTING:
        return None
    output = resp.get("output")
    item = _entry(output, obj.get("output_index"))
    if type(item) is not dict:
        return None
    assert type(output) is list
    kind = item.get("type")
    if etype == _ITEM_DONE:
        new = obj.get("item")
        if type(new) is not dict:  # (null: both SDKs raise; another value: openai-python does)
            return None
        relisted = new.get("type") == "message" and _texts_change(
            resp, [new if entry is item else entry for entry in output]
        )
        return DONE_RULE if relisted or not same(item, new) else None
    status = _STATUS.get(etype)
    if status is not None:
        return STATUS_RULE if kind == status[0] and item.get("status", _MISSING) != status[1] else None
    if etype in (_PART_DONE, _SUMMARY_PART_DONE):
        part = obj.get("part")
        ptype = part.get("type") if type(part) is dict else None
        if etype == _SUMMARY_PART_DONE:
            entries = item.get("summary") if kind == "reasoning" else _MISSING
        elif (kind == "message" and part is not None and ptype != "reasoning_text") or (
            kind == "reasoning" and ptype == "reasoning_text"
        ):
            entries = item.get("content")
        else:
            return None  # openai-node does nothing with it (or raises on a null part: SdkView)
        index = obj.get("summary_index" if etype == _SUMMARY_PART_DONE else "content_index")
        old = _entry(entries, index)
        if old is _MISSING:
            return None
        relisted = kind == "message" and ptype == "output_text" and resp.get("output_text") is not None
        return DONE_RULE if not same(old, part) or (relisted and _texts_change(resp, output)) else None
    needs, listed, index_field, ptype, field = _FIELD_DONE[etype]
    if kind != needs:
        return None
    target = item
    if listed is not None and index_field is not None:
        target = _entry(item.get(listed), obj.get(index_field))
        if type(target) is not dict or (ptype is not None and target.get("type") != ptype):
            return None  # openai-node raises (SdkView), or sets a field of no object
    old, new = target.get(field, _MISSING), obj.get(field, _MISSING)
    changed = (old is _MISSING) != (new is _MISSING) or (old is not _MISSING and not same(old, new))
    relisted = etype == "response.output_text.done" and _texts_change(resp, output)
    return DONE_RULE if changed or relisted else None


def same_annotation(resp: dict[str, Any] | None, obj: dict[str, Any]) -> bool:
    """An ``output_text.annotation.added`` after ``response.completed`` sets the annotation that
    ``resp``'s part has at its ``annotation_index`` (openai-node's final response is unchanged)."""
    if resp is None:
        return False
    item = _entry(resp.get("output"), obj.get("output_index"))
    part = _entry(item.get("content"), obj.get("content_index")) if type(item) is dict else _MISSING
    if type(part) is not dict:
        return False
    old = _entry(part.get("annotations"), obj.get("annotation_index"))
    return old is not _MISSING and "annotation" in obj and same(old, obj["annotation"])
