"""Reading replies and tool calls from the shapes agents print, and writing prompts for them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from ...results import ToolCall, Usage
from .._anthropic import anthropic_usage
from .._base import ChatReply, TargetConfig, TargetError
from .._completion import completion_usage, count
from .._prices import cache_prices, target_prices, usage_cost


def prompt_text(messages: Sequence[Mapping[str, object]]) -> tuple[str, str]:
    """`(system prompt, prompt)` for an agent that takes one text prompt.

    User messages alone (one, or a hint and the turn's message) are sent as they are, a blank
    line between; messages with the agent's answers among them (a history replayed into a new
    session) are written as `role: content` blocks.
    """
    system = "\n\n".join(str(m.get("content", "")) for m in messages if m.get("role") == "system")
    rest = [m for m in messages if m.get("role") != "system"]
    if rest and all(m.get("role") == "user" for m in rest):
        return system, "\n\n".join(str(m.get("content", "")) for m in rest)
    return system, "\n\n".join(f"{m.get('role')}: {m.get('content', '')}" for m in rest)


def turn_prompt(messages: Sequence[Mapping[str, object]]) -> str:
    """The newest user messages (those after the last assistant message), joined by a blank
    line: what the turn says, a hint sent before its message included."""
    said: list[str] = []
    for message in reversed(messages):
        if message.get("role") != "user":
            break
        said.insert(0, str(message.get("content", "")))
    return "\n\n".join(said)


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
    """A reply from AgentV's output JSON, read as AgentV's `cli` provider reads it
    (`parseOutputContent`): the text is the last assistant message of `output` (or
    `output_messages`; its text parts when its content is a list), else `text`; the tool calls
    are the messages' `tool_calls` (and a top-level `tool_calls`, convoeval's own shape); plus
    `token_usage {input, output, cached}`, `cost_usd`, `duration_ms`, `session_id`; the last
    assistant message's content parts are kept as the reply's `content`.

    Raises:
        TargetError: the output's `error` says the agent failed (AgentV's `target_task_failure`,
            an execution error), with what the turn spent.
    """
    calls = [tool_call(c) for c in _list(data.get("tool_calls"))]
    messages = [m for m in _list(data.get("output") or data.get("output_messages")) if isinstance(m, dict)]
    for message in messages:
        calls += [tool_call(c) for c in _list(message.get("tool_calls"))]
    contents = [m.get("content") for m in messages if m.get("role", "assistant") == "assistant"]
    answers = [(_content_text(c), c) for c in contents]
    answers = [(a, c) for a, c in answers if a is not None]
    text, parts = data.get("text"), None
    if answers:
        text, content = answers[-1]
        parts = content if isinstance(content, list) else None
    elif text is not None and not isinstance(text, str):
        text = json.dumps(text)
    usage = data.get("token_usage") or data.get("usage")
    session = data.get("session_id")
    cost = data.get("cost_usd")
    reply = ChatReply(
        text=text if isinstance(text, str) else "",
        tool_calls=calls,
        usage=(
            Usage(
                input_tokens=int(_number(usage, "input")),
                output_tokens=int(_number(usage, "output")),
                cached_input_tokens=int(_number(usage, "cached")),
            )
            if isinstance(usage, dict) and usage.keys() & {"input", "output", "cached"}
            else mapped_usage(usage)
        ),
        cost_usd=float(_number(data, "cost_usd")),
        cost_known=_is_number(cost),
        latency_ms=float(_number(data, "duration_ms")),
        session_id=str(session) if session not in (None, "") else None,
        content=parts,
    )
    error = data.get("error")
    if isinstance(error, str) and error.strip():
        raise TargetError(
            f"the agent reported an error: {error.strip()}",
            usage=reply.usage,
            cost_usd=reply.cost_usd,
            tool_calls=reply.tool_calls,
        )
    return reply


def _content_text(content: object) -> str | None:
    """A message's content as text, as AgentV reads it (`convertMessages`, `getTextContent`): a
    string as is, a list of content parts (`{type: text | image | file}`) as its text parts;
    anything else is no content (None)."""
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    if not parts or not all(isinstance(p, dict) and p.get("type") in ("text", "image", "file") for p in parts):
        return None
    return "\n".join(str(p.get("text", "")) for p in parts if p["type"] == "text")


def mapped_usage(usage: object) -> Usage:
    """A `Usage` given as a mapping of its fields (`input_tokens`, `output_tokens`,
    `cached_input_tokens`, `cache_write_tokens`; one missing or no number is 0), or as an OpenAI
    chat completion's (`prompt_tokens`...) or Anthropic's (`cache_read_input_tokens`...) usage."""
    if isinstance(usage, dict) and "prompt_tokens" in usage:
        return completion_usage(usage)
    if isinstance(usage, dict) and usage.keys() & {"cache_read_input_tokens", "cache_creation_input_tokens"}:
        return anthropic_usage(usage)
    return Usage(**{name: count(usage, name) for name in Usage.model_fields})


def priced(reply: ChatReply, config: TargetConfig) -> ChatReply:
    """`reply` with a cost: the one the agent reported, else its usage at the target's prices
    (`price_input_per_mtok` / `price_output_per_mtok`, else its model's list price), as an `http`
    agent's; known (`cost_known`) when the agent reported it or the prices are known."""
    if reply.cost_usd or reply.cost_known:
        reply.cost_known = True
        return reply
    model = config.model or ""
    prices, reply.cost_known = target_prices(model, config.price_input_per_mtok, config.price_output_per_mtok)
    cache = cache_prices(model, prices[0], own_input_price=config.price_input_per_mtok is not None)
    reply.cost_usd = usage_cost(reply.usage, prices, cache)
    return reply


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


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
        if isinstance(data, dict) and {"output", "output_messages", "text", "tool_calls", "error"} & data.keys():
            return reply_from_json(data)
    return ChatReply(text=stripped)
