"""How a Responses client expects a call of one of its own tools back (docs/translation.md, "Calls
back to a Responses client").

A Responses client can declare tools that other protocols do not have: freeform (``custom``)
tools, tools inside a ``namespace`` and its own ``tool_search``. The request translator offers
them to the target as plain functions (a freeform tool takes one string argument ``input``; a
namespaced tool gets a flat name, ``mcp__docs__search``). The model's call of such a function
must reach the client in the shape the client declared, or the client cannot run it:

- a freeform tool: a ``custom_tool_call`` whose ``input`` is the function's ``input`` argument;
- a namespaced tool: a ``function_call`` with the tool's own ``name`` and its ``namespace``;
- the client's tool search: a ``tool_search_call`` (``execution: client``) with the arguments.

``ir.CallShape`` is that record (the Responses request parser sets it on each ``ToolDef``),
keyed by the flat name the target saw. Plain function tools have none: their calls go back
unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from proxai.translate.ir import FREEFORM_ARGUMENT, CallShape, ToolDef

#: flat name the target saw -> the shape the client declared
CallShapes = Mapping[str, CallShape]


def shapes_of(tools: Iterable[ToolDef]) -> dict[str, CallShape]:
    """The call shapes of a parsed request's tools (only the tools that have one)."""
    return {t.name: t.call_back for t in tools if t.call_back is not None}


def freeform_input(arguments: str) -> str:
    """The free text of a freeform tool's call from the arguments of its function form: the
    ``input`` string when the arguments are ``{"input": "..."}``, otherwise the arguments text
    itself (a model that did not follow the schema still has its words delivered, not lost)."""
    try:
        value = orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments
    if isinstance(value, dict) and isinstance(value.get(FREEFORM_ARGUMENT), str) and len(value) == 1:
        text: str = value[FREEFORM_ARGUMENT]
        return text
    return arguments


def search_arguments(arguments: str) -> Any:
    """A tool search call's arguments as the JSON value the client reads (``{}`` when empty)."""
    if not arguments.strip():
        return {}
    try:
        return orjson.loads(arguments)
    except orjson.JSONDecodeError:
        return arguments  # delivered as the model wrote it


def call_item(
    call_id: str, name: str, arguments: str, shape: CallShape | None, *, status: str, final: bool = True
) -> dict[str, Any]:
    """The Responses output item of one call of the target's function ``name`` with ``arguments``
    (its JSON text), in the shape the client declared. ``final`` False: the item as
    ``output_item.added`` shows it (no arguments yet)."""
    base: dict[str, Any] = {"id": call_id, "status": status, "call_id": call_id}
    if shape is None:
        return {**base, "type": "function_call", "name": name, "arguments": arguments if final else ""}
    if shape.item == "custom_tool_call":
        item = {**base, "type": "custom_tool_call", "name": shape.name}
        item["input"] = freeform_input(arguments) if final else ""
    elif shape.item == "tool_search_call":
        item = {**base, "type": "tool_search_call", "execution": "client"}
        item["arguments"] = search_arguments(arguments) if final else {}
    else:
        item = {**base, "type": "function_call", "name": shape.name, "arguments": arguments if final else ""}
    if shape.namespace is not None:
        item["namespace"] = shape.namespace
    return item
