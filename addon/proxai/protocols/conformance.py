"""Conformance findings: where a stream departs from what the official SDKs require, and what each SDK
does with it (docs/design/conformance.md).

A stream can complete while an official SDK still fails on it. Each ``Rule`` is one such
requirement, with the reaction of the Python and the Node SDK of its protocol at the versions in
``SDK_VERSIONS``: ``raises`` (the class the SDK raises and the start of its message), ``loses``
(the SDK returns its final object, and ``loses`` says what is missing from it) or ``tolerates``
(the final object is whole). tests/conformance/ feeds a stream breaking each rule to the real SDKs
and checks every reaction written here.

The protocol grammars find the deviations while they read the stream: they call
``Accum.finding(rule_id, "quirk", detail)`` at the event that breaks the rule (the scanner counts
the data-less blocks it does not dispatch, which the OpenAI SDKs do dispatch). This module only
describes the rules and turns a flow's findings into ``flow.metadata["proxai"]["conformance"]``.
Sans-IO, no state.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import orjson

from proxai.core.model import Protocol
from proxai.protocols.json_fit import misfit
from proxai.protocols.machine import Finding

if TYPE_CHECKING:
    from proxai.protocols.common import ToolBuffer

_DUPLICATE_LOSES = (
    "the second block's content (its deltas go to the first block; a later index names the block "
    "before its own)"
)

SDK_VERSIONS: dict[str, str] = {
    "anthropic-python": "2.14.0",  # anthropic on PyPI
    "openai-python": "3.57.0",  # openai on PyPI
    "anthropic-node": "1.14.0",  # @anthropic-ai/sdk on npm
    "openai-node": "6.49.0",  # openai on npm
}

# (Python SDK, Node SDK) of each protocol
SDKS: dict[Protocol, tuple[str, str]] = {
    Protocol.ANTHROPIC_MESSAGES: ("anthropic-python", "anthropic-node"),
    Protocol.OPENAI_CHAT: ("openai-python", "openai-node"),
    Protocol.OPENAI_RESPONSES: ("openai-python", "openai-node"),
}


@dataclass(frozen=True, slots=True)
class Reaction:
    """What one SDK's stream helper (``.stream(...)`` and its final object) does with a stream that
    breaks the rule."""

    does: Literal["raises", "loses", "tolerates"]
    error: str | None = None  # raises: the class raised
    message: str = ""  # raises: how its message starts
    loses: str = ""  # loses: what the final object lacks

    def text(self) -> str:
        if self.does == "raises":
            return f"raises {self.error}" + (f": {self.message}" if self.message else "")
        if self.does == "loses":
            return f"loses {self.loses}"
        return "tolerates it"


@dataclass(frozen=True, slots=True)
class Rule:
    id: str
    protocol: Protocol
    requires: str  # what the SDKs require, in one line
    python: Reaction
    node: Reaction

    @property
    def raises(self) -> bool:
        """An official SDK raises on a stream that breaks this rule."""
        return self.python.does == "raises" or self.node.does == "raises"


A, C, R = Protocol.ANTHROPIC_MESSAGES, Protocol.OPENAI_CHAT, Protocol.OPENAI_RESPONSES

_JSON_PY = Reaction("raises", "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)")
_JSON_NODE = Reaction("raises", "OpenAIError", "Unexpected end of JSON input")

_RULES = (
    Rule(
        "anthropic_messages.unnamed_start",
        A,
        "`message_start` comes with an `event:` line (the SDKs skip events without one)",
        Reaction("raises", "AssertionError"),
        Reaction("raises", "AnthropicError", "request ended without sending any chunks"),
    ),
    Rule(
        "anthropic_messages.bom",
        A,
        "the stream does not start with a UTF-8 byte order mark before its first `event:` line "
        "(anthropic-python keeps the mark in that line's field name: the first event has no name, "
        "and the SDKs skip it)",
        Reaction("raises", "AssertionError"),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.unnamed_event",
        A,
        "every event has an `event:` line (the SDKs skip events without one)",
        Reaction("loses", loses="the unnamed events (their text, tool input, stop reason, usage)"),
        Reaction("loses", loses="the unnamed events (their text, tool input, stop reason, usage)"),
    ),
    Rule(
        "anthropic_messages.message_delta_usage",
        A,
        "`message_delta` carries `usage`",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'output_tokens'"),
        Reaction("raises", "AnthropicError", "Cannot read properties of undefined (reading 'output_tokens')"),
    ),
    Rule(
        "anthropic_messages.no_message_stop",
        A,
        "the stream ends with `message_stop`",
        Reaction("tolerates"),
        Reaction("raises", "AnthropicError", "stream ended without producing a Message with role=assistant"),
    ),
    Rule(
        "anthropic_messages.block_index",
        A,
        "a delta or stop names a block that started, by its place: block n is the n-th "
        "`content_block_start` (the SDKs append each block and look it up by `index`)",
        Reaction("raises", "IndexError", "list index out of range"),
        Reaction("loses", loses="the deltas that find no block at their index"),
    ),
    Rule(
        "anthropic_messages.tool_input_json",
        A,
        "a tool block's `input_json_delta` fragments join into JSON or a JSON object or array cut "
        "short or with more text after it (`tool_input_trailing`), not whitespace alone (the SDKs "
        "parse the input so far after each fragment)",
        Reaction("raises", "ValueError", "Unable to parse tool parameter JSON from model."),
        Reaction("raises", "AnthropicError"),
    ),
    Rule(
        "anthropic_messages.tool_input_partial",
        A,
        "no `input_json_delta` fragment leaves a tool block's input so far whitespace alone or a "
        "top-level string, number or literal cut short (anthropic-python parses it after every "
        "fragment but an empty one, anthropic-node the whole input once)",
        Reaction("raises", "ValueError", "Unable to parse tool parameter JSON from model."),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.tool_input_number",
        A,
        "a tool block's input does not end with a top-level number (anthropic-node's partial "
        "parser drops a number that ends the text as unfinished)",
        Reaction("tolerates"),
        Reaction("raises", "AnthropicError", "Unexpected end of JSON input"),
    ),
    Rule(
        "anthropic_messages.tool_input_depth",
        A,
        "a tool block's input nests no value in more than 200 objects or arrays (anthropic-python "
        "parses it with `jiter`, whose recursion limit is 200)",
        Reaction("raises", "ValueError", "Unable to parse tool parameter JSON from model."),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.tool_input_trailing",
        A,
        "a tool block's input that is a JSON object or array has nothing after it that "
        "anthropic-node's partial parser keeps (it drops whitespace, separators and a number or "
        "literal at the end; anthropic-python's partial parse reads the first value and no further)",
        Reaction("loses", loses="the text after the input's first JSON value"),
        Reaction("raises", "AnthropicError", "Unexpected non-whitespace character after JSON"),
    ),
    Rule(
        "anthropic_messages.tool_input_surrogate",
        A,
        "a tool block's input escapes no lone surrogate in a string (`\\ud800` without its low "
        "half: anthropic-python's partial parse, jiter's, refuses it; anthropic-node's `JSON.parse` "
        "reads it)",
        Reaction("raises", "ValueError", "Unable to parse tool parameter JSON from model."),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.tool_input_missing_after_stop",
        A,
        "every `input_json_delta` after `message_stop` in a `tool_use` or `server_tool_use` block "
        "carries a string `partial_json` (anthropic-python reads on after `message_stop` and "
        "encodes it; anthropic-node's final message is the one of `message_stop`)",
        Reaction("raises", "TypeError", "encoding without a string argument"),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.tool_input_after_stop",
        A,
        "no `input_json_delta` after `message_stop` leaves a tool block's fragments something "
        "anthropic-python's partial parse refuses (it reads on after `message_stop`, appends the "
        "fragment to its block's and parses them; anthropic-node's final message is the one of "
        "`message_stop`)",
        Reaction("raises", "ValueError", "Unable to parse tool parameter JSON from model."),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.message_delta_delta",
        A,
        "`message_delta` carries `delta`",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'stop_reason'"),
        Reaction("raises", "AnthropicError", "Cannot read properties of undefined (reading 'stop_reason')"),
    ),
    Rule(
        "anthropic_messages.block_start_block",
        A,
        "`content_block_start` carries a `content_block` object (anthropic-python appends "
        "`content_block.to_dict()`)",
        Reaction("raises", "AttributeError"),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.block_delta_delta",
        A,
        "`content_block_delta` carries `delta`",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'type'"),
        Reaction("raises", "AnthropicError", "Cannot read properties of"),
    ),
    Rule(
        "anthropic_messages.block_delta_object",
        A,
        "a `content_block_delta`'s `delta` is an object (anthropic-python reads its `type`)",
        Reaction("raises", "AttributeError"),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.delta_type",
        A,
        "a delta's type is its block's: text and citations in a text block, input_json in a "
        "tool_use block, thinking and signature in a thinking block (the SDKs drop any other)",
        Reaction("loses", loses="the delta (its text, thinking or tool input)"),
        Reaction("loses", loses="the delta (its text, thinking or tool input)"),
    ),
    Rule(
        "anthropic_messages.negative_index",
        A,
        "a delta's `index` is not negative (Python counts it from the end)",
        Reaction("tolerates"),
        Reaction("loses", loses="the delta (kept under a key that is not a place in the content)"),
    ),
    Rule(
        "anthropic_messages.index_type",
        A,
        "a delta's `index` is an integer, or a form of one both SDKs read (anthropic-python indexes "
        "its content with it, anthropic-node writes the delta back under it)",
        Reaction("raises", "TypeError", "list indices must be integers or slices"),
        Reaction("loses", loses="the delta (kept under a key that is not a place in the content)"),
    ),
    Rule(
        "anthropic_messages.index_type_python",
        A,
        "a delta's or stop's `index` is what anthropic-python reads as an integer (pydantic's lax "
        "int: anthropic-node reads a stop's as anything, and a delta's `[1]` as 1)",
        Reaction("raises", "TypeError", "list indices must be integers or slices"),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.index_form",
        A,
        'a delta\'s `index` that is not a JSON integer is written as its place (`"1"`, `1.0`; '
        'anthropic-node writes the delta back under the index as it came: `"01"`, `" 1"`, `true` '
        "are no places)",
        Reaction("tolerates"),
        Reaction("loses", loses="the delta (kept under a key that is not a place in the content)"),
    ),
    Rule(
        "anthropic_messages.duplicate_block_start",
        A,
        "each `content_block_start` has an index of its own (the SDKs append a second block for "
        "a repeated one and read every delta by its place: the repeated index's deltas go to the "
        "first block, a later index's to the block before the one it started)",
        Reaction("loses", loses=_DUPLICATE_LOSES),
        Reaction("loses", loses=_DUPLICATE_LOSES),
    ),
    Rule(
        "anthropic_messages.before_message_start",
        A,
        "nothing but `ping` comes before `message_start` (the SDKs read no event before it)",
        Reaction("loses", loses="the events before message_start"),
        Reaction("loses", loses="the events before message_start"),
    ),
    Rule(
        "anthropic_messages.no_message_start",
        A,
        "the stream has a `message_start`",
        Reaction("raises", "AssertionError"),
        Reaction("raises", "AnthropicError", "request ended without sending any chunks"),
    ),
    Rule(
        "anthropic_messages.second_message_start",
        A,
        "one `message_start` per stream",
        Reaction("tolerates"),
        Reaction("raises", "AnthropicError", "Unexpected event order, got message_start before receiving"),
    ),
    Rule(
        "anthropic_messages.after_message_stop",
        A,
        "nothing but `ping` follows `message_stop` (the SDKs read on to the end of the stream)",
        Reaction("tolerates"),
        Reaction("loses", loses="the events after message_stop (a message_delta's usage still counts)"),
    ),
    Rule(
        "anthropic_messages.error_after_stop",
        A,
        "no `error` event follows `message_stop` (the SDKs read on, and raise it)",
        Reaction("raises", "APIStatusError"),
        Reaction("raises", "APIError"),
    ),
    Rule(
        "anthropic_messages.message_delta_output_tokens",
        A,
        "`message_delta` usage carries `output_tokens` (the SDKs copy it)",
        Reaction("loses", loses="the output_tokens (None)"),
        Reaction("loses", loses="the output_tokens (None)"),
    ),
    Rule(
        "anthropic_messages.message_start_message",
        A,
        "`message_start` carries `message` (anthropic-python builds its message from "
        "`message.to_dict()`; anthropic-node's message is it)",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'to_dict'"),
        Reaction("raises", "AnthropicError", "request ended without sending any chunks"),
    ),
    Rule(
        "anthropic_messages.message_start_content",
        A,
        "`message_start`'s message carries a `content` list (anthropic-node maps it when the message "
        "ends, and pushes each block into it)",
        Reaction("tolerates"),
        Reaction("raises", "AnthropicError"),
    ),
    Rule(
        "anthropic_messages.block_start_content",
        A,
        "no `content_block_start` follows a `message_start` whose message has no `content` list "
        "(anthropic-python appends the block to it, anthropic-node pushes it)",
        Reaction("raises", "AttributeError"),
        Reaction("raises", "AnthropicError"),
    ),
    Rule(
        "anthropic_messages.message_start_usage",
        A,
        "`message_start` carries `message.usage` (the SDKs update it at `message_delta`)",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'output_tokens'"),
        Reaction("raises", "AnthropicError", "Cannot set properties of undefined (setting 'output_tokens')"),
    ),
    Rule(
        "anthropic_messages.event_json",
        A,
        "every named event but `ping` carries JSON (the SDKs parse it, whatever the event's name)",
        Reaction("raises", "JSONDecodeError", "Expecting value: line 1 column 1 (char 0)"),
        Reaction("raises", "AnthropicError", "Unexpected token"),
    ),
    Rule(
        "anthropic_messages.event_object",
        A,
        "every named event but `ping` carries a JSON object (the Python SDK reads its `type`)",
        Reaction("raises", "TypeError", "Unexpected event runtime type, after deserialising twice"),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.event_type",
        A,
        "a named event's payload carries its `type` (the SDKs read an event by it: one without is "
        "skipped, and what follows is judged as if it never came)",
        Reaction("loses", loses="the event (a block, a delta, a stop reason and usage)"),
        Reaction("loses", loses="the event (a block, a delta, a stop reason and usage)"),
    ),
    Rule(
        "anthropic_messages.no_block",
        A,
        "no text, citations, tool input, thinking or signature delta comes before the first block "
        "(Node reads the type of its last block)",
        Reaction("raises", "IndexError", "list index out of range"),
        Reaction("raises", "AnthropicError", "Cannot read properties of undefined (reading 'type')"),
    ),
    Rule(
        "anthropic_messages.text_start",
        A,
        "a text block's start carries its `text` string (Python adds each delta to it)",
        Reaction("raises", "TypeError", "unsupported operand type(s) for +="),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.thinking_start",
        A,
        "a thinking block's start carries its `thinking` string (the SDKs add each delta to it)",
        Reaction("raises", "TypeError", "unsupported operand type(s) for +="),
        Reaction("loses", loses="the thinking's start (a missing one reads `undefined`)"),
    ),
    Rule(
        "anthropic_messages.json_text",
        A,
        "with a `json_schema` output format (`output_config.format`) in the request: a text block "
        "that stops holds JSON (anthropic-python parses it at `content_block_stop` when the client "
        "passes `output_format=Model`)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.json_text_depth",
        A,
        "with a `json_schema` output format in the request: a stopped text block's JSON nests no "
        "value in more than 200 objects or arrays (anthropic-python's parser, pydantic's, stops "
        "there; anthropic-node's reads it)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("tolerates"),
    ),
    Rule(
        "anthropic_messages.json_schema",
        A,
        "with a `json_schema` output format in the request: a stopped text block's JSON fits the "
        "schema (the part judged: proxai/protocols/json_fit.py; anthropic-python validates it with "
        "the client's model)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.choice_index",
        C,
        "choice indexes first appear in order 0, 1, ...",
        Reaction("raises", "IndexError", "list assignment index out of range"),
        Reaction("raises", "OpenAIError", "Cannot read properties of undefined (reading 'message')"),
    ),
    Rule(
        "openai_chat.bom",
        C,
        "the stream does not start with a UTF-8 byte order mark before its first `data:` line "
        "(openai-python keeps the mark in that line's field name, which then names no field)",
        Reaction("loses", loses="the first chunk (its role, text, tool calls)"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.choice_no_index",
        C,
        "every choice has an integer `index` (openai-python looks its choice up by it)",
        Reaction("raises", "TypeError", "list indices must be integers or slices, not"),
        Reaction("loses", loses="the choice's delta (kept under no index, left out of the message)"),
    ),
    Rule(
        "openai_chat.choice_index_type",
        C,
        "every choice's `index` is a JSON integer, not a string of digits or a float (openai-python "
        'looks its choice up by it; openai-node reads `"1"` and `1.0` as 1)',
        Reaction("raises", "TypeError", "list indices must be integers or slices, not"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.choice_index_bool",
        C,
        "no choice's `index` is `true` or `false` (openai-python reads a boolean as 0 or 1, "
        "openai-node as no place in its choices)",
        Reaction("tolerates"),
        Reaction(
            "loses", loses="the choice's delta (kept under the key `true` / `false`, left out of the message)"
        ),
    ),
    Rule(
        "openai_chat.choice_object",
        C,
        "every entry of a chunk's `choices` is an object (openai-python reads its `index`; "
        "openai-node skips an entry that is not one)",
        Reaction("raises", "AttributeError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.choice_null",
        C,
        "no entry of a chunk's `choices` is null",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute"),
        Reaction("raises", "OpenAIError", "Cannot destructure property 'delta'"),
    ),
    Rule(
        "openai_chat.tool_call_index",
        C,
        "tool-call indexes first appear in order 0, 1, ... within a choice",
        Reaction("raises", "IndexError", "list index out of range"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.no_finish_reason",
        C,
        "every choice gets a `finish_reason`",
        Reaction("loses", loses="the finish_reason (None)"),
        Reaction("raises", "OpenAIError", "missing finish_reason for choice 0"),
    ),
    Rule(
        "openai_chat.chunk_object",
        C,
        'a chunk with choices has `"object": "chat.completion.chunk"` (the Python SDK skips any other)',
        Reaction("loses", loses="the chunk (its text, tool calls, finish_reason)"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.no_valid_chunk",
        C,
        'some chunk has `"object": "chat.completion.chunk"` (the Python SDK skips any other chunk, '
        "and without one it has no completion)",
        Reaction("raises", "AssertionError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.no_choices",
        C,
        "every chunk has a `choices` array",
        Reaction("raises", "TypeError", "'NoneType' object is not iterable"),
        Reaction("raises", "OpenAIError", "chunk.choices is not iterable"),
    ),
    Rule(
        "openai_chat.choice_delta",
        C,
        "every choice of a chunk has a `delta` object",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'to_dict'"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.delta_list_index",
        C,
        "a list of objects a choice's delta carries again (`annotations`, `reasoning_details`, any "
        "field openai-node does not model) gives each object an `index` (openai-python merges it "
        "into the list it holds by `index`)",
        Reaction("raises", "RuntimeError", "Expected list delta entry to have an `index` key"),
        Reaction("loses", loses="the earlier chunks' entries of the list (the last chunk's replaces them)"),
    ),
    Rule(
        "openai_chat.delta_list_entry",
        C,
        "a list a choice's delta carries again into a list of objects (`annotations`, "
        "`reasoning_details`, any field but `tool_calls`) holds only objects with an integer `index` "
        "(openai-python merges it by `index`)",
        Reaction("raises", "TypeError", "Unexpected"),
        Reaction("loses", loses="the earlier chunks' entries of the list (the last chunk's replaces them)"),
    ),
    Rule(
        "openai_chat.delta_list_mixed",
        C,
        "a choice's first list of a field (`annotations`, `reasoning_details` ...) does not hold objects "
        "with an `index` beside objects without one (openai-python merges a first list with an "
        "indexed object by `index`)",
        Reaction("raises", "RuntimeError", "Expected list delta entry to have an `index` key"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.delta_list_entry_first",
        C,
        "a choice's first list of a field that holds an object with an `index` holds only objects "
        "with an integer `index` (openai-python merges it by `index`)",
        Reaction("raises", "TypeError", "Unexpected"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.content_list_index",
        C,
        "a content given again as a list of parts (Mistral's reasoning models) gives each part an "
        "`index` (openai-python merges it into the parts it holds by `index`)",
        Reaction("raises", "RuntimeError", "Expected list delta entry to have an `index` key"),
        Reaction("loses", loses="the parts (it appends each list to the content as a string)"),
    ),
    Rule(
        "openai_chat.node_replaced_field",
        C,
        "a delta field openai-node does not model (`reasoning_content`, `reasoning`, a list such as "
        "`annotations`) comes in one chunk of a choice, not again after its value (openai-node "
        "assigns it at every chunk that carries it, null included; openai-python joins the pieces, "
        "and keeps a list where a value that is no list comes after it)",
        Reaction("tolerates"),
        Reaction(
            "loses",
            loses="the field's earlier values (a reasoning text keeps its last piece, or null; a list "
            "the value that came after it)",
        ),
    ),
    Rule(
        "openai_chat.refusal_type",
        C,
        "every delta's `refusal` is a string (openai-python keeps a first one as it came and joins "
        "only strings to a string; openai-node appends each to the refusal as text)",
        Reaction("loses", loses="a refusal piece whose type is not the first piece's"),
        Reaction("loses", loses="an object's content (appended as `[object Object]`)"),
    ),
    Rule(
        "openai_chat.audio_object",
        C,
        "a delta's `audio` is an object (openai-node reads its `id`, `data`, `transcript`, `expires_at`)",
        Reaction("tolerates"),
        Reaction("loses", loses="the audio (an empty object)"),
    ),
    Rule(
        "openai_chat.function_call_fields",
        C,
        "a legacy `function_call` is an object that gets its `name` and `arguments` (openai-node's "
        "final completion wants both)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "missing function_call."),
    ),
    Rule(
        "openai_chat.function_call_beside",
        C,
        "a choice with a legacy `function_call` has no tool calls nor fields openai-node does not model "
        "(`reasoning_content`, `annotations` ...: its final message with a `function_call` keeps only "
        "the content, refusal, role and audio)",
        Reaction("tolerates"),
        Reaction("loses", loses="the choice's tool calls and the fields it does not model"),
    ),
    Rule(
        "openai_chat.no_role",
        C,
        "every choice gets a `role`",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "missing role for choice 0"),
    ),
    Rule(
        "openai_chat.tool_call_no_index",
        C,
        "every tool-call delta has an integer `index`",
        Reaction("raises", "TypeError", "list indices must be integers or slices, not NoneType"),
        Reaction("loses", loses="the tool call (kept under no index, left out of the message)"),
    ),
    Rule(
        "openai_chat.tool_call_index_bool",
        C,
        "no tool-call delta's `index` is `true` or `false` (openai-python reads a boolean as 0 or 1, "
        "openai-node as no place in its calls)",
        Reaction("tolerates"),
        Reaction(
            "loses",
            loses="the tool-call delta (kept under the key `true` / `false`, left out of the message; "
            "without its `type` there, it raises tool call snapshot missing `type`)",
        ),
    ),
    Rule(
        "openai_chat.tool_call_object",
        C,
        "every entry of a delta's `tool_calls` is an object (openai-python reads its `index` or "
        "merges it into the calls; openai-node skips an entry that is not one)",
        Reaction("raises", "TypeError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.tool_call_null",
        C,
        "no entry of a delta's `tool_calls` is null",
        Reaction("raises", "TypeError", "Unexpected list delta entry is not a dictionary"),
        Reaction("raises", "OpenAIError", "Cannot destructure property 'index'"),
    ),
    Rule(
        "openai_chat.tool_call_type",
        C,
        "every tool call has its `type` when openai-node ends it: at a delta of another call, at its "
        "choice's `finish_reason`",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "tool call snapshot missing `type`"),
    ),
    Rule(
        "openai_chat.tool_call_not_function",
        C,
        "every tool call's `type` is `function` (openai-node's final completion refuses a call of "
        "any other type; a `custom` call: `custom_tool_call`)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "Currently only `function` tool calls are supported"),
    ),
    Rule(
        "openai_chat.tool_call_gap",
        C,
        "a choice's tool-call indexes leave no index unused below the highest (openai-node holds the "
        "calls in an array and reads each entry's `type` at the end)",
        Reaction("raises", "IndexError", "list index out of range"),
        Reaction("raises", "OpenAIError", "Cannot read properties of undefined (reading 'type')"),
    ),
    Rule(
        "openai_chat.tool_call_function",
        C,
        'the first delta of a `"type": "function"` tool call carries `function`',
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'name'"),
        Reaction("raises", "OpenAIError", "Cannot read properties of undefined (reading 'arguments')"),
    ),
    Rule(
        "openai_chat.tool_call_delta",
        C,
        'every later delta of a function tool call carries `function`, and a `type` only of `"function"` '
        "(openai-python asserts that a function call stays one)",
        Reaction("raises", "AssertionError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.finish_length",
        C,
        "no choice ends with `finish_reason` `length` (openai-python's final completion is parsed, "
        "and the parser refuses it)",
        Reaction("raises", "LengthFinishReasonError", "Could not parse response content as the length limit"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.finish_content_filter",
        C,
        "no choice ends with `finish_reason` `content_filter` (openai-python's final completion is "
        "parsed, and the parser refuses it)",
        Reaction(
            "raises", "ContentFilterFinishReasonError", "Could not parse response content as the request"
        ),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.finish_length_strict",
        C,
        "with a `strict` function tool in the request: no choice ends with `finish_reason` `length`",
        Reaction("raises", "LengthFinishReasonError", "Could not parse response content as the length limit"),
        Reaction("raises", "LengthFinishReasonError", "Could not parse response content as the length limit"),
    ),
    Rule(
        "openai_chat.finish_content_filter_strict",
        C,
        "with a `strict` function tool in the request: no choice ends with `finish_reason` `content_filter`",
        Reaction(
            "raises", "ContentFilterFinishReasonError", "Could not parse response content as the request"
        ),
        Reaction(
            "raises", "ContentFilterFinishReasonError", "Could not parse response content as the request"
        ),
    ),
    Rule(
        "openai_chat.strict_tool_arguments",
        C,
        "a call of a tool the request declares `strict` has arguments that are JSON or JSON cut short "
        "(the SDKs parse them as they stream)",
        Reaction("raises", "ValueError", "expected"),
        Reaction("raises", "OpenAIError", "SyntaxError"),
    ),
    Rule(
        "openai_chat.strict_tool_arguments_cut",
        C,
        "a call of a tool the request declares `strict` ends with whole JSON arguments (not cut "
        "short, nothing after them)",
        Reaction("raises", "JSONDecodeError"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_chat.strict_tool_arguments_partial",
        C,
        "no fragment leaves the arguments so far of a call of a tool the request declares `strict` "
        "whitespace alone or a top-level number cut short (`-`, `1.`, `1e`: both SDKs parse them "
        "after every fragment but an empty one)",
        Reaction("raises", "ValueError", "EOF while parsing a value"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_chat.strict_tool_arguments_scalar",
        C,
        "no fragment leaves the arguments so far of a call of a tool the request declares `strict` "
        "a top-level string or literal cut short (openai-python's partial parser reads them only "
        "whole)",
        Reaction("raises", "ValueError", "EOF while parsing a"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.strict_tool_arguments_depth",
        C,
        "the arguments of a call of a tool the request declares `strict` nest no value in more than "
        "200 objects or arrays (openai-python parses them with `jiter`, whose recursion limit is 200)",
        Reaction("raises", "ValueError", "recursion limit exceeded"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.json_content",
        C,
        "with a `json_schema` `response_format` in the request: a choice's content starts as JSON "
        "(openai-python parses it as it streams when the client passes `response_format=Model`)",
        Reaction("raises", "ValueError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.json_content_strict",
        C,
        "with a `json_schema` `response_format` and a `strict` function tool in the request: a "
        "choice's content starts as JSON (openai-node parses the final content too)",
        Reaction("raises", "ValueError"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_chat.json_content_whole",
        C,
        "with a `json_schema` `response_format` in the request: a choice's content is whole JSON, "
        "not cut short and nothing after it (openai-python parses the final content)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.json_content_whole_strict",
        C,
        "with a `json_schema` `response_format` and a `strict` function tool in the request: a "
        "choice's content is whole JSON (openai-node parses the final content too)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_chat.json_content_depth",
        C,
        "with a `json_schema` `response_format` in the request: a choice's content nests no value in "
        "more than 200 objects or arrays (openai-python parses it with `jiter`, whose recursion limit "
        "is 200)",
        Reaction("raises", "ValueError", "recursion limit exceeded"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.json_schema",
        C,
        "with a `json_schema` `response_format` in the request: a choice's JSON content fits the "
        "schema (the part judged: proxai/protocols/json_fit.py; openai-python validates it with the "
        "client's model)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.custom_tool_call",
        C,
        "every tool call is a `function` call (the stream helpers read a call's `function`; a "
        "`custom` call carries `custom`)",
        Reaction("raises", "AttributeError", "'dict' object has no attribute 'name'"),
        Reaction("raises", "OpenAIError", "missing choices[0].tool_calls[0].function.name"),
    ),
    Rule(
        "openai_chat.dataless_event",
        C,
        "every block with an `event:` line has data (the SDKs parse it as JSON)",
        _JSON_PY,
        _JSON_NODE,
    ),
    Rule(
        "openai_chat.dataless_block",
        C,
        "no block of only `id:` / `retry:` lines, nor a blank line once an `id:` came "
        "(the Python SDK parses it as JSON)",
        _JSON_PY,
        Reaction("tolerates"),
    ),
    Rule(
        "openai_chat.tail_json",
        C,
        "no payload that is not JSON (an empty `data:`) ends the stream after its chunks (the SDKs "
        "parse every payload before `[DONE]`)",
        Reaction("raises", "JSONDecodeError"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_chat.tail_object",
        C,
        "no JSON payload that is not an object (`null`, a number) ends the stream after its chunks "
        "(the SDKs read every payload before `[DONE]` as a chunk)",
        Reaction("raises", "AttributeError"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_chat.no_chunk",
        C,
        "a chunk comes before `[DONE]` (the SDKs build the completion from the chunks and read "
        "nothing after `[DONE]`)",
        Reaction("raises", "AssertionError"),
        Reaction("raises", "OpenAIError", "request ended without sending any chunks"),
    ),
    Rule(
        "openai_chat.no_assistant",
        C,
        "the completion has a choice 0 whose last `role` is `assistant` (openai-node's "
        "`finalChatCompletion` ends by looking for the assistant message)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "stream ended without producing a ChatCompletionMessage"),
    ),
    Rule(
        "openai_responses.created_first",
        R,
        "`response.created` is the first event",
        Reaction("raises", "RuntimeError", "Expected to have received `response.created` before"),
        Reaction(
            "raises", "OpenAIError", "When snapshot hasn't been set yet, expected 'response.created' event"
        ),
    ),
    Rule(
        "openai_responses.bom",
        R,
        "the stream does not start with a UTF-8 byte order mark before its first `data:` line "
        "(openai-python keeps the mark in that line's field name: the first event, "
        "`response.created`, is lost)",
        Reaction("raises", "RuntimeError", "Expected to have received `response.created` before"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.not_completed",
        R,
        "the stream ends with `response.completed` (not `response.incomplete` / `response.failed`)",
        Reaction("raises", "RuntimeError", "Didn't receive a `response.completed` event."),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.no_terminal",
        R,
        "the stream ends with a terminal event (`response.completed`)",
        Reaction("raises", "RuntimeError", "Didn't receive a `response.completed` event."),
        Reaction("loses", loses="the end: returns the last snapshot, status in_progress"),
    ),
    Rule(
        "openai_responses.unknown_event",
        R,
        (
            "every event's payload has a `type` the Node SDK's accumulator knows (both SDKs read an "
            "event by its payload's `type` alone, never by its `event:` name)"
        ),
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "Unhandled response stream event"),
    ),
    Rule(
        "openai_responses.completed_output",
        R,
        "`response.completed` carries `response.output`",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "rsp.output is not iterable"),
    ),
    Rule(
        "openai_responses.completed_output_object",
        R,
        "every entry of `response.completed`'s `response.output` is an object (openai-python reads "
        "each one's `type`; openai-node skips an entry that is not null)",
        Reaction("raises", "AttributeError", "'int' object has no attribute 'type'"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.completed_output_null",
        R,
        "no entry of `response.completed`'s `response.output` is null",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'type'"),
        Reaction("raises", "OpenAIError", "Cannot read properties of null (reading 'type')"),
    ),
    Rule(
        "openai_responses.lifecycle_output_null",
        R,
        "no entry of `response.created`'s, `queued`'s or `in_progress`'s `response.output` is null "
        "(after `response.created`, an item added at that index makes openai-python raise Duplicate "
        "response output index first: `output_index_repeated`)",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'type'"),
        Reaction("raises", "OpenAIError", "Cannot read properties of null (reading 'type')"),
    ),
    Rule(
        "openai_responses.lifecycle_output_object",
        R,
        "every entry of `response.created`'s, `queued`'s or `in_progress`'s `response.output` is an "
        "object or null (openai-python reads each item's identity: at a later lifecycle event, and at "
        "`response.completed` for `response.created`'s; openai-node skips an entry that is not a message)",
        Reaction("raises", "AttributeError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.item_content_null",
        R,
        "no part of a message's `content` in `output_item.added` or `output_item.done` is null",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "Cannot read properties of null (reading 'type')"),
    ),
    Rule(
        "openai_responses.output_index",
        R,
        "every item event's `output_index` names an added output item",
        Reaction("raises", "RuntimeError", "Received a content event for output index"),
        Reaction("raises", "OpenAIError", "missing output at index"),
    ),
    Rule(
        "openai_responses.output_position",
        R,
        "every item event's `output_index` is its item's position in openai-node's snapshot: items "
        "numbered 0, 1, ... as they are added, a lifecycle event's `response.output` replacing them",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "missing output at index"),
    ),
    Rule(
        "openai_responses.output_index_missing",
        R,
        "every item event openai-node reads by `output_index` (`output_item.done`, a refusal, "
        "annotation, `content_part.done`, reasoning or summary event) carries one (where openai-python "
        "reads the event too it raises as well: `output_index`)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "missing output at index undefined"),
    ),
    Rule(
        "openai_responses.python_output_index",
        R,
        "every item event's `output_index` is one an `output_item.added` gave (openai-python keys "
        "items by it; openai-node reads the item at that position)",
        Reaction("raises", "RuntimeError", "Received a content event for output index"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.output_index_repeated",
        R,
        "no two output items share an `output_index` (nor one of `response.created`'s output)",
        Reaction("raises", "RuntimeError", "Duplicate response output index"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.content_index",
        R,
        "an `output_text` delta or done names, by `content_index`, a part its message added "
        "(`content_part.added` first, parts numbered 0, 1, ...)",
        Reaction("raises", "IndexError", "list index out of range"),
        Reaction("raises", "OpenAIError", "missing content at index"),
    ),
    Rule(
        "openai_responses.python_content_index",
        R,
        "an `output_text` delta or done names, by `content_index`, a part openai-python's message "
        "has (the one `output_item.added` gave, with the parts added to it; openai-node reads the "
        "parts of a later lifecycle event's `response.output`)",
        Reaction("raises", "IndexError", "list index out of range"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.content_index_type",
        R,
        "an `output_text` delta or done for a message carries an integer `content_index`",
        Reaction("raises", "TypeError", "list indices must be integers or slices, not NoneType"),
        Reaction("raises", "OpenAIError", "missing content at index"),
    ),
    Rule(
        "openai_responses.python_content_index_type",
        R,
        "an `output_text` delta or done for a message carries a `content_index` openai-python "
        'reads as an integer (`"0"` or `0.0` only in an event its model validates: `"0"` then)',
        Reaction("raises", "TypeError", "list indices must be integers or slices, not"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.node_content_index",
        R,
        "a refusal, annotation, `content_part.done`, reasoning text or summary event names a part "
        "its item added (openai-node)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "missing content at index"),
    ),
    Rule(
        "openai_responses.text_part_type",
        R,
        "an `output_text` delta or done goes to an `output_text` part",
        Reaction("raises", "AssertionError"),
        Reaction("raises", "OpenAIError", "expected content to be 'output_text', got"),
    ),
    Rule(
        "openai_responses.node_part_type",
        R,
        "a refusal, annotation or reasoning-text event goes to a part of its type (openai-node)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "expected content to be"),
    ),
    Rule(
        "openai_responses.part_added_part",
        R,
        "`response.content_part.added` of a message carries `part` (openai-python appends "
        "`part.to_dict()`, openai-node reads `part.type`)",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'to_dict'"),
        Reaction("raises", "OpenAIError", "Cannot read properties of"),
    ),
    Rule(
        "openai_responses.python_part_added_part",
        R,
        "the `part` of a message's `response.content_part.added` is an object (openai-python "
        "appends `part.to_dict()`)",
        Reaction("raises", "AttributeError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.node_part_added_part",
        R,
        "`response.content_part.added` of a reasoning item, and `response.content_part.done` of a "
        "message or reasoning item, carry `part` (openai-node reads `part.type`)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "Cannot read properties of"),
    ),
    Rule(
        "openai_responses.part_text",
        R,
        "an `output_text` part that gets deltas was added with its `text`",
        Reaction("raises", "TypeError", "unsupported operand type(s) for +=: 'NoneType' and 'str'"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.text_delta_type",
        R,
        "an `output_text` delta carries its `delta` as a string (openai-python appends it to the "
        "part's text; openai-node appends whatever came to a snapshot `response.completed` replaces)",
        Reaction("raises", "TypeError", "can only concatenate str (not"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.arguments_delta_type",
        R,
        "a `function_call_arguments` delta carries its `delta` as a string (openai-python appends it "
        "to the call's arguments, after their `.done` too; openai-node to a snapshot "
        "`response.completed` replaces)",
        Reaction("raises", "TypeError", "can only concatenate str (not"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.delta_item_type",
        R,
        "an `output_text` delta or done goes to a message item, a `function_call_arguments` delta "
        "to a function_call item",
        Reaction("raises", "AssertionError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.call_arguments",
        R,
        "a function_call item that gets argument deltas was added with its `arguments` string",
        Reaction("raises", "TypeError", "unsupported operand type(s) for +=: 'NoneType' and 'str'"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.item_identity",
        R,
        "`output_item.done` gives the item added at its `output_index` (same type, id, call_id)",
        Reaction("raises", "RuntimeError", "Completed output item identity changed."),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.identity_conflict",
        R,
        "no two done output items share an identity (type, and the call_id of a call item or the "
        "id of another)",
        Reaction("raises", "RuntimeError", "Response snapshot has conflicting output identities."),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.snapshot_identity",
        R,
        "a later lifecycle event's `response.output` (`response.in_progress`, `response.queued`) "
        "holds one item per identity, and a done item's identity only with that item's id",
        Reaction("raises", "RuntimeError", "Response snapshot has conflicting output identities."),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.completed_identity",
        R,
        "`response.completed`'s output gives a done item's identity only with that item's id",
        Reaction("raises", "RuntimeError", "Completed response output identity changed."),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.unfinished_item",
        R,
        "every output item gets its `output_item.done` or is in `response.completed`'s output",
        Reaction("raises", "RuntimeError", "Cannot complete response with unfinished output items."),
        Reaction("loses", loses="the item (the final response is response.completed's, which lacks it)"),
    ),
    Rule(
        "openai_responses.lifecycle_response",
        R,
        "every lifecycle event (`response.in_progress`, `response.completed`, ...) carries `response`",
        Reaction("raises", "RuntimeError", "Lifecycle response identity changed."),
        Reaction("raises", "OpenAIError", "Cannot convert undefined or null to object"),
    ),
    Rule(
        "openai_responses.lifecycle_id",
        R,
        "every lifecycle event's `response.id` is `response.created`'s",
        Reaction("raises", "RuntimeError", "Lifecycle response identity changed."),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.lifecycle_output",
        R,
        "`response.created`, `response.in_progress`, ... carry `response.output`",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "rsp.output is not iterable"),
    ),
    Rule(
        "openai_responses.reasoning_summary",
        R,
        "a reasoning item that gets summary events (`reasoning_summary_part.added` / `.done`, "
        "`reasoning_summary_text.delta` / `.done`) was added with its `summary` array",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "Cannot read properties of"),
    ),
    Rule(
        "openai_responses.done_item",
        R,
        "every `output_item.done` carries its `item` (both SDKs read its `type`)",
        Reaction("raises", "AttributeError", "'NoneType' object has no attribute 'type'"),
        Reaction("raises", "OpenAIError", "Cannot read properties of"),
    ),
    Rule(
        "openai_responses.python_item_object",
        R,
        "the `item` of every `output_item.added` and `output_item.done` is an object, or null in an "
        "`output_item.added` (openai-python reads its `type`; openai-node reads a string's or a number's "
        "as undefined)",
        Reaction("raises", "AttributeError"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.node_added_item",
        R,
        "every `output_item.added` carries its `item` (openai-python skips one without it; openai-node "
        "reads its `type`)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "Cannot read properties of"),
    ),
    Rule(
        "openai_responses.part_annotations",
        R,
        "an `output_text.annotation.added` goes to a part with an `annotations` array (openai-node sets "
        "the annotation at its `annotation_index` there; openai-python does not read the event)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "Cannot set properties of"),
    ),
    Rule(
        "openai_responses.reasoning_content",
        R,
        "a reasoning item that gets a `reasoning_text` part has a `content` array, or a falsy `content` "
        "(openai-node makes an array of that one and pushes the part)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "output.content.push is not a function"),
    ),
    Rule(
        "openai_responses.message_content",
        R,
        "every message item has a `content` array: added, done and in a lifecycle event's output "
        "(openai-node lists the text of every message there, `addOutputText`: a string passes; "
        "openai-python reads an added one's only when a part comes, `message_content_part`)",
        Reaction("tolerates"),
        Reaction("raises", "OpenAIError", "output.content is not iterable"),
    ),
    Rule(
        "openai_responses.completed_message_content",
        R,
        "`response.completed`'s output messages have a `content` array (it is openai-python's final "
        "response; openai-node lists their text)",
        Reaction("loses", loses="the message's parts (its text)"),
        Reaction("raises", "OpenAIError", "output.content is not iterable"),
    ),
    Rule(
        "openai_responses.completed_content_scalar",
        R,
        "no message in `response.completed`'s output has a number or `true` for `content` "
        "(openai-python's `parse_response` iterates it)",
        Reaction("raises", "TypeError", "'"),
        Reaction("raises", "OpenAIError", "output.content is not iterable"),
    ),
    Rule(
        "openai_responses.completed_content_object",
        R,
        "no message in `response.completed`'s output has an object for `content` (openai-python's "
        "`parse_response` reads its keys as parts)",
        Reaction("raises", "AttributeError", "'str' object has no attribute 'type'"),
        Reaction("raises", "OpenAIError", "output.content is not iterable"),
    ),
    Rule(
        "openai_responses.completed_content_string",
        R,
        "no message in `response.completed`'s output has a string for `content` (openai-python's "
        "`parse_response` reads its characters as parts; openai-node's final parse maps it)",
        Reaction("raises", "AttributeError", "'str' object has no attribute 'type'"),
        Reaction("raises", "OpenAIError", "item.content.map is not a function"),
    ),
    Rule(
        "openai_responses.completed_content_empty",
        R,
        "no message in `response.completed`'s output has an empty string for `content` (openai-node's "
        "final parse maps it; openai-python reads no parts)",
        Reaction("loses", loses="the message's parts (its text)"),
        Reaction("raises", "OpenAIError", "item.content.map is not a function"),
    ),
    Rule(
        "openai_responses.message_content_part",
        R,
        "a content part is added only to a message whose `content` is an array (both SDKs append the "
        "part to it)",
        Reaction("raises", "AttributeError"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_responses.strict_tool_arguments",
        R,
        "a call of a function tool the request declares `strict` has JSON arguments (the SDKs parse "
        "them in the completed response)",
        Reaction("raises", "JSONDecodeError"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_responses.json_text",
        R,
        "with a `json_schema` `text.format` in the request: the final answer's text is JSON, and so "
        "is each final-answer `output_text.done`'s (openai-python parses both when the client passes "
        "`text_format=Model`)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.json_text_strict",
        R,
        "with a `json_schema` `text.format` and a `strict` function tool in the request: the final "
        "answer's text is JSON (openai-node parses it too)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("raises", "OpenAIError", "Unexpected token"),
    ),
    Rule(
        "openai_responses.json_text_depth",
        R,
        "with a `json_schema` `text.format` in the request: the final answer's JSON nests no value in "
        "more than 200 objects or arrays (openai-python's parser, pydantic's, stops there; "
        "openai-node's `JSON.parse` reads it)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.strict_tool_arguments_depth",
        R,
        "a call of a function tool the request declares `strict` nests its arguments in at most "
        "1,497 objects or arrays (openai-python's `json.loads` raises past CPython 3.12's C "
        "recursion limit; openai-node's `JSON.parse` reads it)",
        Reaction("raises", "RecursionError", "maximum recursion depth exceeded"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.json_schema",
        R,
        "with a `json_schema` `text.format` in the request: the final answer's JSON text fits the "
        "schema (the part judged: proxai/protocols/json_fit.py; openai-python validates it with the "
        "client's model)",
        Reaction("raises", "ValidationError", "1 validation error for"),
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.dataless_event",
        R,
        "every block with an `event:` line has data (the SDKs parse it as JSON)",
        _JSON_PY,
        _JSON_NODE,
    ),
    Rule(
        "openai_responses.dataless_block",
        R,
        "no block of only `id:` / `retry:` lines, nor a blank line once an `id:` came "
        "(the Python SDK parses it as JSON)",
        _JSON_PY,
        Reaction("tolerates"),
    ),
    Rule(
        "openai_responses.tail_json",
        R,
        "no payload that is not JSON (an empty `data:`) ends the stream or follows "
        "`response.completed` (the SDKs parse every payload to the end of the stream)",
        Reaction("raises", "JSONDecodeError"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_responses.tail_object",
        R,
        "no JSON payload that is not an object (`null`, a number) ends the stream or follows "
        "`response.completed` (the SDKs read every payload to the end of the stream as an event)",
        Reaction("raises", "AttributeError"),
        Reaction("raises", "OpenAIError"),
    ),
    Rule(
        "openai_responses.error_after_completed",
        R,
        "no payload after `response.completed` carries an `error` (both SDKs' stream layers read on "
        "to the end of the stream and raise it)",
        Reaction("raises", "APIError"),
        Reaction("raises", "APIError"),
    ),
    Rule(
        "openai_responses.error_empty",
        R,
        "no event carries an empty `error` object or list (openai-node's stream layer raises on any "
        "payload whose `error` is truthy in JavaScript; to openai-python `{}` and `[]` are falsy)",
        Reaction("tolerates"),
        Reaction("raises", "APIError"),
    ),
    Rule(
        "openai_responses.error_event_after_completed",
        R,
        "no `error` event follows `response.completed` (openai-node's `ResponseStream` rejects with "
        "the event itself; openai-python reads on)",
        Reaction("tolerates"),
        Reaction("raises", "Object"),
    ),
    Rule(
        "openai_responses.lifecycle_after_completed",
        R,
        "no lifecycle event (`response.failed`, `response.incomplete`, `response.in_progress` ...) "
        "follows `response.completed` (openai-node's final response is the last lifecycle event's; "
        "openai-python's stays `response.completed`'s)",
        Reaction("tolerates"),
        Reaction("loses", loses="response.completed's response (its final one is the later event's)"),
    ),
    Rule(
        "openai_responses.item_after_completed",
        R,
        "no item event that adds to the response (`output_item.added`, `content_part.added`, a "
        "delta ...) follows `response.completed` (openai-node applies it to its final response, "
        "response.completed's; openai-python's stays as it came)",
        Reaction("tolerates"),
        Reaction("loses", loses="response.completed's response as it came (the later events added to it)"),
    ),
    Rule(
        "openai_responses.done_after_completed",
        R,
        "no `.done` event after `response.completed` (`output_item.done`, `content_part.done`, "
        "`output_text.done`, `function_call_arguments.done` ...) sets another value than "
        "`response.completed`'s response has there (openai-node sets it in its final response, "
        "response.completed's; openai-python's stays as it came)",
        Reaction("tolerates"),
        Reaction(
            "loses",
            loses="response.completed's response as it came (the later event's value replaced its own)",
        ),
    ),
    Rule(
        "openai_responses.status_after_completed",
        R,
        "no call's status event (`web_search_call.in_progress`, `mcp_call.failed` ...) after "
        "`response.completed` sets another `status` than the call has in `response.completed`'s "
        "response (openai-node sets it in its final response; openai-python's stays as it came)",
        Reaction("tolerates"),
        Reaction("loses", loses="response.completed's response as it came (the call's status replaced)"),
    ),
)

RULES: dict[str, Rule] = {r.id: r for r in _RULES}

# Per protocol: the rule of a data-less block with an ``event:`` line, the rule of one without, and
# whether the SDK stops reading at the terminal event (Chat's ``[DONE]``; the Responses helpers read
# on to the end of the stream).
DATALESS_RULES: dict[Protocol, tuple[str, str, bool]] = {
    C: ("openai_chat.dataless_event", "openai_chat.dataless_block", True),
    R: ("openai_responses.dataless_event", "openai_responses.dataless_block", False),
}

# Per protocol: the rule of a payload that is not JSON, and of one that is JSON but no object, when
# the grammar tolerates it (after the stream's data, at its end or after the terminal event) where
# the SDKs parse it (docs/design/conformance.md, "The end of a stream").
TAIL_RULES: dict[Protocol, tuple[str, str]] = {
    C: ("openai_chat.tail_json", "openai_chat.tail_object"),
    R: ("openai_responses.tail_json", "openai_responses.tail_object"),
}

# The type a Responses event is read with when its payload has no ``type`` (absent, null, empty or
# not a string): both SDKs read an event by its payload's type alone (openai-python's accumulator
# has no branch for it, openai-node's raises "Unhandled response stream event"), never by its
# ``event:`` name, so the grammar reads it as a type no SDK knows (protocol-grammars.md).
UNTYPED = "(no type)"

# The event types openai-node 6.49.0's ResponseStream accumulates; any other raises there.
NODE_RESPONSES_EVENTS = frozenset(
    {
        "error",
        "keepalive",
        "response.audio.delta",
        "response.audio.done",
        "response.audio.transcript.delta",
        "response.audio.transcript.done",
        "response.code_interpreter_call.completed",
        "response.code_interpreter_call.in_progress",
        "response.code_interpreter_call.interpreting",
        "response.code_interpreter_call_code.delta",
        "response.code_interpreter_call_code.done",
        "response.completed",
        "response.content_part.added",
        "response.content_part.done",
        "response.created",
        "response.custom_tool_call_input.delta",
        "response.custom_tool_call_input.done",
        "response.failed",
        "response.file_search_call.completed",
        "response.file_search_call.in_progress",
        "response.file_search_call.searching",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.image_generation_call.completed",
        "response.image_generation_call.generating",
        "response.image_generation_call.in_progress",
        "response.image_generation_call.partial_image",
        "response.in_progress",
        "response.incomplete",
        "response.mcp_call.completed",
        "response.mcp_call.failed",
        "response.mcp_call.in_progress",
        "response.mcp_call_arguments.delta",
        "response.mcp_call_arguments.done",
        "response.mcp_list_tools.completed",
        "response.mcp_list_tools.failed",
        "response.mcp_list_tools.in_progress",
        "response.output_item.added",
        "response.output_item.done",
        "response.output_text.annotation.added",
        "response.output_text.delta",
        "response.output_text.done",
        "response.queued",
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_part.done",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_text.delta",
        "response.reasoning_text.done",
        "response.refusal.delta",
        "response.refusal.done",
        "response.web_search_call.completed",
        "response.web_search_call.in_progress",
        "response.web_search_call.searching",
    }
)


@dataclass(frozen=True, slots=True)
class Asked:
    """What the client's request asks of the SDKs' parse helpers, read once from the request
    (``proxai.pipeline.flow.request_asks``) and given to the flow's pipeline when it is built: the
    function tools it declares ``"strict": true`` and whether it asks for a ``json_schema`` format.
    Both SDKs parse such a tool's arguments as JSON, and openai-node then refuses a
    ``finish_reason`` ``length`` / ``content_filter`` as openai-python always does.
    ``custom_tools``: the custom (freeform) tools the client declares: a Responses
    ``custom_tool_call`` of another name is a call the server ran (``responses_items.hosted_call``);
    on a translated flow the client's request's (``ClientSide.custom_tools``), else the request's."""

    strict_tools: frozenset[str] = frozenset()
    # a ``json_schema`` format (Chat ``response_format``, Responses ``text.format``): a client that
    # parses with a model class (``text_format=Model``) has the answer's text parsed
    json_format: bool = False
    custom_tools: frozenset[str] = frozenset()
    # that format's JSON schema (``json_fit.misfit`` judges the answer with it), when it has one
    schema: Mapping[str, Any] | None = field(default=None, compare=False)


NOTHING_ASKED = Asked()


# (finish_reason, a strict tool in the request) -> the rule (Chat)
_FINISH = {
    ("length", False): "openai_chat.finish_length",
    ("content_filter", False): "openai_chat.finish_content_filter",
    ("length", True): "openai_chat.finish_length_strict",
    ("content_filter", True): "openai_chat.finish_content_filter_strict",
}
# (protocol, the arguments are JSON cut short) -> the rule of a strict tool's arguments that are not JSON
_STRICT_ARGS = {
    (C, False): "openai_chat.strict_tool_arguments",
    (C, True): "openai_chat.strict_tool_arguments_cut",
    (R, False): "openai_responses.strict_tool_arguments",
    (R, True): "openai_responses.strict_tool_arguments",
}
_CUSTOM_CALL = "openai_chat.custom_tool_call"
_STRICT_DEPTH = "openai_chat.strict_tool_arguments_depth"
_CONTENT_DEPTH = "openai_chat.json_content_depth"
_JSON_TEXT = ("openai_responses.json_text", "openai_responses.json_text_strict")  # (no strict tool, one)
_JSON_DEPTH = "openai_responses.json_text_depth"
_STRICT_DEPTH_R = "openai_responses.strict_tool_arguments_depth"
# (the content starts as JSON, a strict tool in the request) -> the rule of Chat content not JSON
_JSON_CONTENT = {
    (False, False): "openai_chat.json_content",
    (False, True): "openai_chat.json_content_strict",
    (True, False): "openai_chat.json_content_whole",
    (True, True): "openai_chat.json_content_whole_strict",
}
_ANTHROPIC_JSON = "anthropic_messages.json_text"
_ANTHROPIC_DEPTH = "anthropic_messages.json_text_depth"
# the rule of JSON that does not fit the request's schema
_JSON_SCHEMA = {
    A: "anthropic_messages.json_schema",
    C: "openai_chat.json_schema",
    R: "openai_responses.json_schema",
}
#: the rules ``judge_answer`` gives (at the end, and at an Anthropic text block's stop)
ANSWER_RULES = frozenset(_JSON_CONTENT.values()) | {
    *_JSON_TEXT,
    _JSON_DEPTH,
    _ANTHROPIC_JSON,
    _ANTHROPIC_DEPTH,
    *_JSON_SCHEMA.values(),
    _CONTENT_DEPTH,
}
#: the rules ``at_end`` gives
AT_END_RULES = (
    frozenset(_FINISH.values())
    | frozenset(_STRICT_ARGS.values())
    | frozenset(_JSON_CONTENT.values())
    | {
        _CUSTOM_CALL,
        _STRICT_DEPTH,
        _STRICT_DEPTH_R,
        _CONTENT_DEPTH,
        *_JSON_TEXT,
        _JSON_DEPTH,
        _JSON_SCHEMA[C],
        _JSON_SCHEMA[R],
    }
)


def at_end(
    protocol: Protocol,
    asked: Asked,
    stop_reason: str | None,
    tools: Iterable[ToolBuffer],
    texts: Iterable[str] = (),
    *,
    choice: int = 0,
) -> list[tuple[str, str]]:
    """The rules a stream that ended without a violation breaks, judged at its end from what the
    grammar read and the request (``asked``): a Chat ``custom`` tool call, the ``finish_reason``
    (Chat), the arguments of the strict tools' calls (the Responses helpers parse a completed
    response only)."""
    found: list[tuple[str, str]] = []
    tools = list(tools)
    if protocol is C:
        custom = [tb for tb in tools if tb.kind == "custom"]
        if custom:
            found.append((_CUSTOM_CALL, f"tool call {custom[0].id!r} is a custom call"))
    strict = asked.strict_tools
    finish = _FINISH.get((stop_reason or "", bool(strict))) if protocol is C else None
    if finish is not None:
        found.append((finish, f"choice {choice} ended with finish_reason {stop_reason!r}"))
    # the answers a parse helper parses: Responses in a completed response; Chat unless the
    # finish_reason refused the completion first
    if asked.json_format and (stop_reason == "completed" if protocol is R else finish is None):
        for text in texts:
            judged = judge_answer(protocol, asked, text)
            if judged is not None:
                found.append(judged)
                break
    if not strict or (protocol is R and stop_reason != "completed"):
        return found
    for tb in tools:
        if tb.kind == "function" and tb.name in strict and tb.finished and not tb.overflow:
            # JSON at any depth is valid (``json_valid``; Chat's depth is judged below); deeper
            # than orjson reads, openai-python's ``json.loads`` reads it or raises RecursionError
            # (past its interpreter's C recursion limit: ``_DEEP``), JSON or not
            deep = protocol is R and tb.final is not None and _brackets(tb.final) > _ORJSON_DEPTH
            if deep and _json(tb.final or "") is _DEEP:
                rule: str | None = _STRICT_DEPTH_R
            elif tb.valid:
                continue
            else:
                rule = _STRICT_ARGS.get((protocol, tb.json_prefix))
            if rule is not None:
                found.append(
                    (rule, f"the arguments of strict tool {tb.name!r} (call {tb.id!r}) are not JSON")
                )
            break
    if protocol is C:  # openai-python's partial parse after every fragment (jiter)
        for tb in tools:
            if tb.kind == "function" and tb.name in strict and tb.final is not None and too_deep(tb.final):
                where = f"the arguments of strict tool {tb.name!r} (call {tb.id!r})"
                found.append((_STRICT_DEPTH, f"{where} nest a value in more than {JITER_DEPTH} containers"))
                break
    return found


def judge_answer(protocol: Protocol, asked: Asked, text: str) -> tuple[str, str] | None:
    """The rule (and what broke it) a structured answer's text breaks, on a flow whose request asks
    for a ``json_schema`` format: a Chat choice's content, a Responses final answer's
    ``output_text``, an Anthropic text block's text. Not JSON: the protocol's rule (Chat: whether
    the content starts as JSON, which openai-python parses as it streams); JSON that does not fit
    the request's schema (``json_fit.misfit``): ``*.json_schema``. None: nothing to say. A Chat
    content with a value inside more than 200 containers: openai-python's ``jiter`` raises
    (``openai_chat.json_content_depth``; its value is not read, nor is the schema judged); a
    Responses answer's or an Anthropic text's JSON so deep: pydantic's parser (jiter) raises
    (``openai_responses.json_text_depth``, ``anthropic_messages.json_text_depth``)."""
    if protocol is C and too_deep(text):
        where = f"a choice's content nests a value in more than {JITER_DEPTH} containers"
        return _CONTENT_DEPTH, where
    value = _json(text)
    if value is _DEEP and protocol is not C and not deep_json(text):
        value = _NOT_JSON  # too deep for the standard parser, and not JSON either
    if value is _NOT_JSON:
        if protocol is C:
            starts = text.lstrip()[:1] in ("{", "[", "") and json_prefix(text, trailing=True)
            rule = _JSON_CONTENT[(starts, bool(asked.strict_tools))]
            return rule, "a choice's content is not JSON" + (" (it starts as JSON)" if starts else "")
        if protocol is R:
            return _JSON_TEXT[bool(asked.strict_tools)], "a final answer's output_text is not JSON"
        return _ANTHROPIC_JSON, "a text block's text is not JSON"
    if protocol is R and (value is _DEEP or too_deep(text)):  # pydantic's parser is jiter
        return _JSON_DEPTH, f"a final answer's JSON nests a value in more than {JITER_DEPTH} containers"
    if protocol is A and (value is _DEEP or too_deep(text)):
        return _ANTHROPIC_DEPTH, f"a text block's JSON nests a value in more than {JITER_DEPTH} containers"
    if asked.schema is None or value is _DEEP:
        return None
    bad = misfit(value, asked.schema)
    if bad is None:
        return None
    return _JSON_SCHEMA[protocol], f"the answer's JSON does not fit the request's schema: {bad}"


_ORJSON_DEPTH = 1024  # orjson refuses a document with more objects and arrays open at once


def _brackets(text: str) -> int:
    """How many objects and arrays ``text`` opens at most (two scans in C)."""
    return text.count("[") + text.count("{")


_NOT_JSON: Any = object()
_DEEP: Any = object()  # JSON too deep for the standard parser (its interpreter's C recursion limit)


def _json(text: str) -> Any:
    """The JSON value of ``text``, ``_NOT_JSON``, or ``_DEEP``; integers past 64 bits and values
    deeper than 1,024 levels (which orjson refuses) are read by the standard parser (the one
    openai-python parses a strict tool's arguments with), NaN and Infinity are not JSON."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        pass
    try:
        return json.loads(text, parse_constant=_no_constant)
    except ValueError:
        return _NOT_JSON
    except RecursionError:
        return _DEEP


def _no_constant(name: str) -> Any:
    raise ValueError(name)


_WS = " \t\n\r"
_LITERALS = ("true", "false", "null")


def json_prefix(text: str, *, trailing: bool = False) -> bool:
    """``text`` is JSON or the start of a JSON document cut short (what the SDKs' partial JSON
    parsers read): one value, whitespace around it, nothing after it (``trailing``: anything after
    a whole value)."""
    stack: list[str] = []  # "{" / "[" of the open containers
    expect = "value"  # value, key, colon, after (a value ended), end (the document's value ended)
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in _WS:
            i += 1
            continue
        if expect == "end":
            return trailing
        if expect in ("value", "key", "value_or_close", "key_or_close"):
            if (
                ch in "]}"
                and expect.endswith("_or_close")
                and stack
                and stack[-1] == ("[" if ch == "]" else "{")
            ):
                stack.pop()
                expect = "after" if stack else "end"
                i += 1
                continue
            if expect.startswith("key") and ch != '"':
                return False
            if ch == '"':
                i += 1
                while i < n and (c := text[i]) != '"':
                    if c < " ":  # a control character unescaped in a string: both parsers raise
                        return False
                    if c == "\\":
                        i += 1
                    i += 1
                if i >= n:
                    return True  # cut inside a string
                i += 1
                if expect.startswith("key"):
                    expect = "colon"
                else:
                    expect = "after" if stack else "end"
                continue
            if ch in "{[":
                stack.append(ch)
                expect = "key_or_close" if ch == "{" else "value_or_close"
                i += 1
                continue
            if ch in "-0123456789":
                j = i
                while j < n and text[j] in "-+.eE0123456789":
                    j += 1
                tok = text[i:j]
                if j < n and not _number(tok):
                    return False
                i = j
                expect = "after" if stack else "end"
                continue
            for lit in _LITERALS:
                rest = text[i : i + len(lit)]
                if lit.startswith(rest) and rest:
                    if len(rest) < len(lit):
                        return i + len(rest) >= n  # cut inside the literal
                    i += len(lit)
                    expect = "after" if stack else "end"
                    break
            else:
                return False
            continue
        if expect == "colon":
            if ch != ":":
                return False
            expect = "value"
            i += 1
            continue
        # after a value inside a container
        if ch == ",":
            expect = "key" if stack[-1] == "{" else "value"
        elif ch == ("]" if stack[-1] == "[" else "}"):
            stack.pop()
            expect = "after" if stack else "end"
        else:
            return False
        i += 1
    return True


#: ``jiter``'s recursion limit: the Python SDKs' partial JSON parser (and pydantic's) raises on a value
#: with more than this many objects or arrays open around it (an empty innermost one is no value)
JITER_DEPTH = 200
# what the depth count reads: a string (a key or a value), a bracket or separator, a scalar
_DEPTH_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[\[\]{}:,]|[^\s\[\]{}:,"]+')


# one token of JSON, after any whitespace: a bracket or separator (group 1), a string, a number, a
# literal
_JSON_TOKEN = re.compile(
    r'[ \t\n\r]*(?:([\[\]{}:,])|"(?:[^"\\\x00-\x1f]|\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4}))*"'
    r"|-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?|true|false|null)"
)
_OPENS = {"[": "value_or_close", "{": "key_or_close"}


def deep_json(text: str) -> bool:
    """``text`` is one whole JSON value, however deep it nests: read without recursion, for a text
    orjson refuses past 1,024 levels (and the standard parser past its stack), which openai-node's
    ``JSON.parse`` reads."""
    stack: list[str] = []
    expect = "value"  # value, value_or_close, key, key_or_close, colon, after, end
    pos = 0
    while (m := _JSON_TOKEN.match(text, pos)) is not None:
        pos = m.end()
        p = m.group(1)
        if p is None:  # a string, a number, a literal
            if expect in ("key", "key_or_close") and m.group().lstrip(_WS)[:1] == '"':
                expect = "colon"
            elif expect in ("value", "value_or_close"):
                expect = "after" if stack else "end"
            else:
                return False
        elif p in _OPENS:
            if expect not in ("value", "value_or_close"):
                return False
            stack.append(p)
            expect = _OPENS[p]
        elif p in "]}":
            opened = "[" if p == "]" else "{"
            if not stack or stack[-1] != opened or expect not in ("after", _OPENS[opened]):
                return False
            stack.pop()
            expect = "after" if stack else "end"
        elif p == ",":
            if expect != "after" or not stack:
                return False
            expect = "value" if stack[-1] == "[" else "key"
        elif expect == "colon":  # ":"
            expect = "value"
        else:
            return False
    return expect == "end" and not text[pos:].strip(_WS)


def too_deep(text: str) -> bool:
    """``text`` (JSON, or JSON cut short) holds a value inside more than ``JITER_DEPTH`` objects or
    arrays, where ``jiter`` raises "recursion limit exceeded" (measured: ``[`` x 201 then ``]`` x
    201 reads, ``[`` x 201 then ``1`` raises, as does ``[`` x 202; a key at that depth reads, its
    value raises). Counting brackets first (two scans in C) leaves almost every text at that."""
    if text.count("[") + text.count("{") <= JITER_DEPTH:
        return False
    depth = 0
    value = True  # a value may start here (not a key, not after a value)
    arrays: list[bool] = []  # each open container: an array
    for m in _DEPTH_TOKEN.finditer(text):
        c = m.group()[0]
        if c in "]}":
            if not arrays:
                return False
            arrays.pop()
            depth -= 1
            value = False
        elif c == ",":
            value = bool(arrays) and arrays[-1]
        elif c == ":":
            value = True
        elif value:
            if depth > JITER_DEPTH:
                return True
            value = c == "["
            if c in "[{":
                arrays.append(c == "[")
                depth += 1
    return False


def _number(tok: str) -> bool:
    try:
        float(tok)
    except ValueError:
        return False
    return tok[0] != "+" and not tok.startswith(("00", "-00"))


def metadata(findings: Iterable[Finding]) -> list[dict[str, Any]]:
    """``conformance`` in the summary: one entry per rule broken (the catalogue's rules only), in
    the order of the first event that broke it: that event's index (0-based, in the stream; for a
    data-less block the event after it, for the end of the stream the number of events), what the
    grammar saw there, and each SDK's reaction at its version."""
    first: dict[str, Finding] = {}
    for f in findings:
        if f.rule in RULES and (f.rule not in first or f.event < first[f.rule].event):
            first[f.rule] = f
    out: list[dict[str, Any]] = []
    for rule_id, found in sorted(first.items(), key=lambda kv: kv[1].event):
        rule = RULES[rule_id]
        py, node = SDKS[rule.protocol]
        out.append(
            {
                "rule": rule.id,
                "requires": rule.requires,
                "event_index": found.event,
                "detail": found.detail,
                "raises": rule.raises,
                "sdks": {
                    f"{py} {SDK_VERSIONS[py]}": rule.python.text(),
                    f"{node} {SDK_VERSIONS[node]}": rule.node.text(),
                },
            }
        )
    return out


# ``isinstance(v, _MAPPING)`` is ``isinstance(v, Mapping)``, a dict found by its own type without the
# ABC's ``__instancecheck__`` (a Python call); None is told apart before it.
_MAPPING = (dict, Mapping)


def findings_of(meta: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The conformance entries of a flow's summary (``flow.metadata["proxai"]``)."""
    extra = meta.get("extra")
    found = extra.get("conformance") if (extra is not None and isinstance(extra, _MAPPING)) else None
    if not isinstance(found, list):
        return []
    return [f for f in found if isinstance(f, _MAPPING)]


def raising(meta: Mapping[str, Any]) -> list[str]:
    """The rules of a flow's findings on which an official SDK raises."""
    return [str(f.get("rule")) for f in findings_of(meta) if f.get("raises")]
