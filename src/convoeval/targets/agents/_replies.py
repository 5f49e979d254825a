"""Reading replies and tool calls from the shapes agents print, and writing prompts for them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from ...results import ToolCall, Usage
from .._base import ChatReply, TargetError


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


def tool_call(data: Any) -> ToolCall:
    """A tool call from a mapping in any of the common shapes: AgentV's `{tool, input, output,
    duration_ms}`, convoeval's `{name, arguments, output, error}`, OpenAI's `{function: {name,
    arguments: "<json>"}}`."""
    if not isinstance(data, dict):
        raise TargetError(f"a tool call must be a mapping, got {type(data).__name__}")
    function: dict[str, Any] = data["function"] if isinstance(data.get("function"), dict) else {}
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
    return ToolCall(
        name=name,
        arguments=args,
        output=data.get("output", data.get("result")),
        id=data.get("id") if isinstance(data.get("id"), str) else None,
        duration_ms=float(duration) if isinstance(duration, (int, float)) else None,
        error=str(error) if error not in (None, False, "") else None,
    )


def reply_from_json(data: dict[str, Any]) -> ChatReply:
    """A reply from AgentV's output JSON: `output` (messages with `content` and `tool_calls`)
    or `text`, plus `token_usage {input, output}`, `cost_usd`, `duration_ms`, `session_id`;
    convoeval's `{text, tool_calls}` works too."""
    texts: list[str] = []
    calls = [tool_call(c) for c in data.get("tool_calls") or []]
    for message in data.get("output") or data.get("output_messages") or []:
        if not isinstance(message, dict):
            continue
        if message.get("role", "assistant") == "assistant" and isinstance(message.get("content"), str):
            texts.append(message["content"])
        calls += [tool_call(c) for c in message.get("tool_calls") or []]
    text = data.get("text") if isinstance(data.get("text"), str) else "\n".join(t for t in texts if t)
    usage = data.get("token_usage") or data.get("usage") or {}
    session = data.get("session_id")
    return ChatReply(
        text=text or "",
        tool_calls=calls,
        usage=Usage(
            input_tokens=int(usage.get("input") or usage.get("input_tokens") or 0),
            output_tokens=int(usage.get("output") or usage.get("output_tokens") or 0),
        ),
        cost_usd=float(data.get("cost_usd") or 0.0),
        latency_ms=float(data.get("duration_ms") or 0.0),
        session_id=str(session) if session not in (None, "") else None,
    )


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
