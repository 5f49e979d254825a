"""Reading replies and tool calls from the shapes agents print, and writing prompts for them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ...results import ToolCall, Usage
from .._anthropic import anthropic_usage
from .._base import ChatReply, TargetError
from .._completion import completion_usage, count


def prompt_text(messages: Sequence[Mapping[str, object]]) -> tuple[str, str]:
    """`(system prompt, prompt)` for an agent that takes one text prompt.

    One user message is sent as it is; several messages (a history replayed into a new
    session) are written as `role: content` blocks.
    """
    system = "\n\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    rest = [m for m in messages if m.get("role") != "system"]
    if len(rest) == 1 and rest[0].get("role") == "user":
        return system, str(rest[0].get("content", ""))
    return system, "\n\n".join(f"{m.get('role')}: {m.get('content', '')}" for m in rest)


def tool_call(data: object) -> ToolCall:
    """A tool call from a mapping in any of the common shapes: AgentV's `{tool, input, output,
    duration_ms}`, convoeval's `{name, arguments, output, error}`, OpenAI's `{function: {name,
    arguments: "<json>"}}`."""
    if not isinstance(data, dict):
        raise TargetError(f"a tool call must be a mapping, got {type(data).__name__}")
    function = data.get("function")
    function = function if isinstance(function, dict) else {}
    name = data.get("name") or data.get("tool") or function.get("name")
    if not isinstance(name, str) or not name:
        raise TargetError(f"a tool call needs a `name` (or `tool`): {json.dumps(data, default=str)[:120]}")
    args = next((data[k] for k in ("arguments", "input", "args") if k in data), function.get("arguments", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError:
            args = {"_raw": args}
    if not isinstance(args, dict):
        args = {"_value": args}
    duration = data.get("duration_ms")
    error = data.get("error")
    call_id = data.get("id")
    return ToolCall(
        name=name,
        arguments=args,
        output=data.get("output", data.get("result")),
        id=call_id if isinstance(call_id, str) else None,
        duration_ms=float(duration) if isinstance(duration, (int, float)) else None,
        error=str(error) if error not in (None, False, "") else None,
    )


def reply_from_json(data: dict[str, object]) -> ChatReply:
    """A reply from AgentV's output JSON: `output` (messages with `content` and `tool_calls`)
    or `text`, plus `token_usage {input, output, cached}`, `cost_usd`, `duration_ms`, `session_id`;
    convoeval's `{text, tool_calls}` works too."""
    texts: list[str] = []
    calls = [tool_call(c) for c in _list(data.get("tool_calls"))]
    for message in _list(data.get("output") or data.get("output_messages")):
        if not isinstance(message, dict):
            continue
        content = message.get("content")
        if message.get("role", "assistant") == "assistant" and isinstance(content, str):
            texts.append(content)
        calls += [tool_call(c) for c in _list(message.get("tool_calls"))]
    text = data.get("text")
    usage = data.get("token_usage") or data.get("usage")
    session = data.get("session_id")
    return ChatReply(
        text=(text if isinstance(text, str) else "\n".join(t for t in texts if t)) or "",
        tool_calls=calls,
        usage=Usage(
            input_tokens=int(_number(usage, "input", "input_tokens")),
            output_tokens=int(_number(usage, "output", "output_tokens")),
            cached_input_tokens=int(_number(usage, "cached", "cached_input_tokens")),
        ),
        cost_usd=float(_number(data, "cost_usd")),
        latency_ms=float(_number(data, "duration_ms")),
        session_id=str(session) if session not in (None, "") else None,
    )


def mapped_usage(usage: object) -> Usage:
    """A `Usage` given as a mapping of its fields (`input_tokens`, `output_tokens`,
    `cached_input_tokens`, `cache_write_tokens`; one missing or no number is 0), or as an OpenAI
    chat completion's (`prompt_tokens`...) or Anthropic's (`cache_read_input_tokens`...) usage."""
    if isinstance(usage, dict) and "prompt_tokens" in usage:
        return completion_usage(usage)
    if isinstance(usage, dict) and usage.keys() & {"cache_read_input_tokens", "cache_creation_input_tokens"}:
        return anthropic_usage(usage)
    return Usage(**{name: count(usage, name) for name in Usage.model_fields})


def _list(value: object) -> list[object]:
    """`value` when it is a list, else no items."""
    return value if isinstance(value, list) else []


def _number(data: object, *keys: str) -> float:
    """The first of `keys` of a mapping that holds a non-zero number, else 0."""
    for key in keys:
        value = data.get(key) if isinstance(data, dict) else None
        if value and isinstance(value, int | float):
            return value
    return 0


def reply_from_text(text: str) -> ChatReply:
    """Output that is a JSON object with a known key is read as `reply_from_json`; anything
    else is the reply text."""
    stripped = text.strip()
    if stripped.startswith("{"):
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError:
            data = None
        if isinstance(data, dict) and {"output", "output_messages", "text", "tool_calls"} & data.keys():
            return reply_from_json(data)
    return ChatReply(text=stripped)
