"""What the log readers (Inspect, AgentV, Langfuse, OpenTelemetry) share: message text from
content blocks, the transcript of a conversation logged as one model call per turn, and
unique test ids.

Every reader returns tests `{"id", "transcript", "metadata"?}` whose messages are
`{role, content, tool_calls?: [{name, arguments, id?, output?}], tool_call_id?, name?}`:
what a `transcript:` test reads.
"""

from __future__ import annotations

import json
import re
from typing import Required, TypedDict

from pydantic import JsonValue

from ._common import JsonObject, decode_json
from ._suite_types import RecordedCall

ROLES = ("system", "user", "assistant", "tool")


class LoggedMessage(TypedDict, total=False):
    """A message as a log reader returns it."""

    role: Required[str]
    content: Required[str]
    tool_calls: list[RecordedCall]
    tool_call_id: JsonValue
    name: JsonValue
    source: str


class LoggedTest(TypedDict, total=False):
    """A recorded conversation as a log reader returns it (a `transcript:` test): `error` and
    `budget_hit` say how it ended when it did not end normally (the test's fields of those names)."""

    id: Required[str]
    transcript: Required[list[LoggedMessage]]
    error: str
    budget_hit: str
    metadata: JsonObject


def text_of(content: JsonValue) -> str:
    """Plain text of a message content: a string, or the text of its blocks (`text`,
    `content`, or `refusal` fields; images and reasoning are left out)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and block.get("type", "text") in ("text", "output_text", "input_text"):
                value = block.get("text", block.get("content"))
                if isinstance(value, str):
                    parts.append(value)
        return "\n".join(parts)
    if isinstance(content, dict):
        if "content" in content or "text" in content:
            return text_of(content.get("content", content.get("text")))
        texts = [v for v in content.values() if isinstance(v, str)]
        return texts[0] if len(content) == 1 and texts else json.dumps(content, ensure_ascii=False)
    return str(content)


def arguments_of(raw: JsonValue) -> JsonObject:
    """Tool-call arguments as a mapping (JSON text is parsed; anything else is `{"value": ...}`)."""
    if isinstance(raw, str):
        try:
            raw = decode_json(raw)
        except ValueError:
            return {"value": raw}
    if isinstance(raw, dict):
        return raw
    return {} if raw is None else {"value": raw}


def tool_call_of(raw: JsonObject) -> RecordedCall:
    """A logged tool call in convoeval's shape, whatever shape logged it: OpenAI's `{id,
    function: {name, arguments}}`, LangChain's `{id, name, args}` (Langfuse's CallbackHandler
    logs these), Inspect's `{id, function, arguments}` or a flat `{id, name, arguments}`
    (OpenTelemetry's `tool_call` part, OpenLLMetry's indexed fields)."""
    function = raw.get("function")
    spec = function if isinstance(function, dict) else raw
    name = spec.get("name") or (function if isinstance(function, str) else None)
    call: RecordedCall = {
        "name": str(name or "tool"),
        "arguments": arguments_of(spec.get("arguments", spec.get("args"))),
    }
    if raw.get("id") is not None:
        call["id"] = raw["id"]
    return call


def merge_calls(calls: list[list[LoggedMessage]]) -> list[LoggedMessage]:
    """One transcript from a conversation logged as one model call per turn.

    Each call is its input messages followed by its output. A call whose messages start with
    the transcript so far adds only what follows; one that does not (the app sent only the
    new message) adds everything from its last user message on.
    """
    transcript: list[LoggedMessage] = []
    for messages in calls:
        if not messages:
            continue
        key = [_key(m) for m in messages]
        done = [_key(m) for m in transcript]
        if key[: len(done)] == done:
            transcript.extend(messages[len(done) :])
            continue
        users = [n for n, m in enumerate(messages) if m["role"] == "user"]
        start = users[-1] if users else 0
        if not transcript:
            start = 0
        transcript.extend(messages[start:])
    return transcript


def _key(message: LoggedMessage) -> tuple[str, str]:
    return message["role"], message["content"].strip()


def slug(text: str) -> str:
    return re.sub(r"[^\w.@:-]+", "-", text).strip("-")[:80] or "conversation"


def unique(name: str, seen: set[str]) -> str:
    test_id, n = name, 2
    while test_id in seen:
        test_id, n = f"{name}-{n}", n + 1
    seen.add(test_id)
    return test_id


def has_dialogue(transcript: list[LoggedMessage]) -> bool:
    roles = {m["role"] for m in transcript}
    return {"user", "assistant"} <= roles
