"""The one reader of an OpenAI chat-completions body (OpenAI-compatible servers, LiteLLM's
responses, llama.cpp's `create_chat_completion`)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field

from ..results import ToolCall, Usage
from ._base import TargetError


@dataclass
class Completion:
    """The first choice of a chat completion: its text, usage, tool calls and finish reason."""

    text: str
    usage: Usage
    tool_calls: list[ToolCall] = field(default_factory=list)
    finish_reason: str | None = None


def parse_completion(data: object, name: str) -> Completion:
    """Read `choices[0].message` and `usage` of a chat-completions body (`completion_usage`).

    Raises:
        TargetError: `NAME: malformed response: ...` when there is no `choices[0].message` or
            its content is not text (a missing content is the empty text).
    """
    choices = data.get("choices") if isinstance(data, dict) else None
    choice = choices[0] if isinstance(choices, list) and choices else None
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(choice, dict) or not isinstance(message, dict):
        raise TargetError(f"{name}: malformed response: no choices[0].message")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise TargetError(f"{name}: malformed response: message content is not text")
    usage = data.get("usage") if isinstance(data, dict) else None
    calls = message.get("tool_calls")
    finish = choice.get("finish_reason")
    return Completion(
        text=content or "",
        usage=completion_usage(usage),
        tool_calls=[_tool_call(c) for c in calls if isinstance(c, dict)] if isinstance(calls, list) else [],
        finish_reason=finish if isinstance(finish, str) else None,
    )


#: What a token count may be (a tuple: `isinstance` with `int | float` builds the union each time).
_NUMBER = (int, float)


def completion_usage(usage: object) -> Usage:
    """The `Usage` of a chat completion's `usage` (its `prompt_tokens` count the cached ones; the
    cache writes in `prompt_tokens_details.cache_write_tokens`, as OpenRouter and LiteLLM give
    them for a Claude model)."""
    details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
    return Usage(
        input_tokens=count(usage, "prompt_tokens"),
        output_tokens=count(usage, "completion_tokens"),
        cached_input_tokens=count(details, "cached_tokens"),
        cache_write_tokens=count(details, "cache_write_tokens"),
    )


def count(usage: object, key: str) -> int:
    """The token count `usage[key]` (0 when `usage` is no mapping or the count no finite number)."""
    value = usage.get(key) if isinstance(usage, dict) else None
    return int(value) if isinstance(value, _NUMBER) and math.isfinite(value) else 0


def _tool_call(call: dict[str, object]) -> ToolCall:
    """One `tool_calls` entry; arguments that are not a JSON object are kept under `_raw`
    (unparsable text) or `_value` (any other JSON)."""
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    raw = function.get("arguments") or "{}"
    arguments: object
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else dict(raw)
    except (json.JSONDecodeError, TypeError, ValueError):
        arguments = {"_raw": raw}
    if not isinstance(arguments, dict):
        arguments = {"_value": arguments}
    call_id = call.get("id")
    return ToolCall(
        name=str(function.get("name", "")), arguments=arguments, id=call_id if isinstance(call_id, str) else None
    )
