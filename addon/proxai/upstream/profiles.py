"""Request validation profiles of the fake upstream: refuse what real servers refuse.

Without a profile the fake upstream accepts any body (the scenarios test streams, not
requests). With one, a request is first checked the way a real server checks it, and a
refusal is answered with that server's status and error shape, before any scenario plays:

- ``openai``: OpenAI's Chat Completions and Responses (unknown top-level fields:
  ``Unrecognized request argument supplied: X``; a token limit above the model's maximum; a
  reasoning setting for a model without reasoning, ``gpt-4*``: ``Unsupported parameter``);
- ``vllm``: a vLLM-style Chat server (a smaller known-field set: OpenAI-only fields such as
  ``verbosity`` or ``prompt_cache_key`` are refused; function tools only; ``max_tokens`` above
  the served model's limit);
- either profile checks ``/messages`` requests the way Anthropic does (unknown fields:
  ``X: Extra inputs are not permitted``; ``max_tokens`` above the model's maximum; a thinking
  budget that is not below ``max_tokens``).

``check`` is pure: the request body in, ``None`` or the refusal (status, JSON body) out.
docs/upstream.md, "Validation profiles", lists the rules.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Literal

ProfileName = Literal["openai", "vllm"]
PROFILES: tuple[ProfileName, ...] = ("openai", "vllm")

_CHAT_OPENAI = frozenset(
    {
        "model", "messages", "audio", "frequency_penalty", "function_call", "functions", "logit_bias",
        "logprobs", "max_completion_tokens", "max_tokens", "metadata", "modalities", "n",
        "parallel_tool_calls", "prediction", "presence_penalty", "prompt_cache_key",
        "prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier", "seed",
        "service_tier", "stop", "store", "stream", "stream_options", "temperature", "tool_choice",
        "tools", "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
    }
)  # fmt: skip
_CHAT_VLLM = frozenset(
    {
        "model", "messages", "frequency_penalty", "logit_bias", "logprobs", "max_completion_tokens",
        "max_tokens", "n", "parallel_tool_calls", "presence_penalty", "reasoning_effort",
        "response_format", "seed", "stop", "stream", "stream_options", "temperature", "tool_choice",
        "tools", "top_logprobs", "top_p", "user", "top_k", "min_p", "repetition_penalty",
        "chat_template_kwargs", "include_reasoning",
    }
)  # fmt: skip
_RESPONSES = frozenset(
    {
        "model", "input", "instructions", "background", "conversation", "include", "max_output_tokens",
        "max_tool_calls", "metadata", "parallel_tool_calls", "previous_response_id", "prompt",
        "prompt_cache_key", "prompt_cache_retention", "reasoning", "safety_identifier", "service_tier",
        "store", "stream", "stream_options", "temperature", "text", "tool_choice", "tools",
        "top_logprobs", "top_p", "truncation", "user", "client_metadata",
    }
)  # fmt: skip
_ANTHROPIC = frozenset(
    {
        "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream",
        "temperature", "top_k", "top_p", "tools", "tool_choice", "thinking", "service_tier",
        "container", "mcp_servers", "context_management", "output_config", "output_format",
    }
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Limits:
    max_output_tokens: int
    no_reasoning: tuple[str, ...]  # model globs without reasoning


_LIMITS: dict[ProfileName, Limits] = {
    "openai": Limits(128_000, ("gpt-4*", "gpt-3.5*")),
    "vllm": Limits(32_768, ()),
}
ANTHROPIC_MAX_OUTPUT = 128_000

Refusal = tuple[int, dict[str, Any]]


def _openai_error(message: str, param: str | None, code: str | None = None) -> Refusal:
    error = {"message": message, "type": "invalid_request_error", "param": param, "code": code}
    return 400, {"error": error}


def _vllm_error(message: str) -> Refusal:
    return 400, {"object": "error", "message": message, "type": "BadRequestError", "param": None, "code": 400}


def _anthropic_error(message: str) -> Refusal:
    return 400, {"type": "error", "error": {"type": "invalid_request_error", "message": message}}


def _int(v: object) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def check(profile: ProfileName, protocol: str, body: dict[str, Any]) -> Refusal | None:
    """The refusal a real server of ``profile`` gives this request, or ``None``."""
    if protocol == "anthropic_messages":
        return _anthropic(body)
    limits = _LIMITS[profile]
    model = body.get("model") if isinstance(body.get("model"), str) else ""
    if protocol == "openai_chat":
        known = _CHAT_OPENAI if profile == "openai" else _CHAT_VLLM
        limit_field, reasoning_field = "max_tokens", "reasoning_effort"
        if _int(body.get("max_completion_tokens")) is not None:
            limit_field = "max_completion_tokens"
    else:
        known, limit_field, reasoning_field = _RESPONSES, "max_output_tokens", "reasoning"
    for key in body:
        if key not in known:
            if profile == "vllm":
                return _vllm_error(
                    f"[{{'type': 'extra_forbidden', 'loc': ('body', '{key}'), "
                    "'msg': 'Extra inputs are not permitted'}]"
                )
            return _openai_error(f"Unrecognized request argument supplied: {key}", key)
    if profile == "vllm":
        for i, tool in enumerate(body.get("tools") or []):
            if not isinstance(tool, dict) or tool.get("type", "function") != "function":
                kind = tool.get("type") if isinstance(tool, dict) else tool
                return _vllm_error(f"tools.{i}.type: Input should be 'function' (got {kind!r})")
    requested = _int(body.get(limit_field))
    if requested is not None and requested > limits.max_output_tokens:
        if profile == "vllm":
            return _vllm_error(
                f"'{limit_field}' is too large: {requested}. This model's maximum context length is "
                f"{limits.max_output_tokens} tokens."
            )
        return _openai_error(
            f"{limit_field} is too large: {requested}. This model supports at most "
            f"{limits.max_output_tokens} completion tokens, whereas you provided {requested}.",
            limit_field,
            "invalid_value",
        )
    if body.get(reasoning_field) is not None and any(fnmatch.fnmatch(model, g) for g in limits.no_reasoning):
        return _openai_error(
            f"Unsupported parameter: '{reasoning_field}' is not supported with this model.",
            reasoning_field,
            "unsupported_parameter",
        )
    return None


def _anthropic(body: dict[str, Any]) -> Refusal | None:
    for key in body:
        if key not in _ANTHROPIC:
            return _anthropic_error(f"{key}: Extra inputs are not permitted")
    max_tokens = _int(body.get("max_tokens"))
    if max_tokens is None:
        return _anthropic_error("max_tokens: Field required")
    model = body.get("model")
    if max_tokens > ANTHROPIC_MAX_OUTPUT:
        return _anthropic_error(
            f"max_tokens: {max_tokens} > {ANTHROPIC_MAX_OUTPUT}, which is the maximum allowed number of "
            f"output tokens for {model}"
        )
    thinking = body.get("thinking")
    if isinstance(thinking, dict) and thinking.get("type") == "enabled":
        budget = _int(thinking.get("budget_tokens"))
        if budget is None or budget < 1024:
            return _anthropic_error(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        if budget >= max_tokens:
            return _anthropic_error(
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our "
                "documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
            )
    return None
