"""A recorded conversation (`transcript:`) as turns and the replies to replay.

Each user message (or run of user messages with no assistant message between them, even an
empty one) opens a turn; the assistant and tool messages up
to the next user message are that turn's reply: every assistant text of the turn in order,
joined by a blank line (text said alongside a tool call is graded too, as the agent targets
join theirs), with the tool calls of the turn (OpenAI `tool_calls` with their `tool` results
matched by id, or convoeval's own tool calls). A tool result is kept as the log wrote it (text
stays text); a call with no result keeps none. System messages before the first user message
are the conversation's input, and so is every message marked `source: input` (the recorded
input's history, such as an earlier assistant answer): never a graded reply, it goes with the
turn it came before.
A user message keeps its own tool calls (convoeval's shape, as tau2-bench's telecom user makes).
"""

from __future__ import annotations

import json

from ..results import Message, ToolCall
from ..spec import TranscriptMessage
from ..targets import ChatReply


def split_transcript(messages: list[TranscriptMessage]) -> tuple[list[Message], list[list[Message]], list[ChatReply]]:
    """`(initial messages, the user messages of each turn, the recorded reply of each turn)`."""
    initial: list[Message] = []
    turns: list[list[Message]] = []
    replies: list[ChatReply] = []
    texts: list[str] = []
    calls: list[ToolCall] = []
    by_id: dict[str, ToolCall] = {}
    answered = False  # an assistant message came in this turn (its text may be empty)
    pending: list[Message] = []  # input messages after a turn's reply: they open the next turn

    def close_turn() -> None:
        if turns and len(replies) < len(turns):
            replies.append(ChatReply(text="\n\n".join(texts), tool_calls=list(calls)))

    for m in messages:
        content = m.content or ""
        if m.source == "input" and (not turns or m.role != "user"):
            given = Message(role=m.role, content=content, source="input")
            given.tool_calls = [_tool_call(raw) for raw in m.tool_calls]
            if not turns:
                initial.append(given)
            elif answered or calls:
                pending.append(given)
            else:
                turns[-1].append(given)
            continue
        if m.role == "user":
            said = Message(role="user", content=content, source="user")
            if m.tool_calls:  # the user's own (tau2-bench's telecom user acts on its phone)
                said.tool_calls = [_tool_call(raw) for raw in m.tool_calls]
            if turns and turns[-1] and len(replies) == len(turns) - 1 and not answered and not calls:
                turns[-1].append(said)
                continue
            close_turn()
            texts, calls, answered = [], [], False
            turns.append([*pending, said])
            pending = []
        elif not turns:
            initial.append(Message(role=m.role, content=content, source="input"))
        elif m.role == "assistant":
            answered = True
            if content:
                texts.append(content)
            for raw in m.tool_calls:
                call = _tool_call(raw)
                calls.append(call)
                if call.id:
                    by_id[call.id] = call
        elif m.role == "tool":
            if m.tool_calls:  # convoeval's own tool messages carry the call
                calls.extend(_tool_call(raw) for raw in m.tool_calls)
            elif m.tool_call_id in by_id:
                by_id[m.tool_call_id].output = content
            else:
                calls.append(ToolCall(name=m.name or "tool", output=content, id=m.tool_call_id))
    close_turn()
    return initial, turns, replies


def _tool_call(raw: dict[str, object]) -> ToolCall:
    function = raw.get("function")
    if isinstance(function, dict):  # OpenAI: {id, type, function: {name, arguments: "<json>"}}
        arguments = function.get("arguments")
        parsed = _json_or_text(arguments)
        return ToolCall(
            name=str(function.get("name", "tool")),
            id=raw.get("id"),
            arguments=parsed if isinstance(parsed, dict) else {"value": parsed},
        )
    return ToolCall.model_validate(raw)


def _json_or_text(text: object) -> object:
    """OpenAI's `arguments` JSON text as the value it holds (text that is no JSON as it is)."""
    if not isinstance(text, str):
        return text
    try:
        return json.loads(text)
    except ValueError:
        return text
