"""What a judge reads: transcripts with turn numbers, backend results, domain policies."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from pydantic import BaseModel, ConfigDict, Field

from .._base_model import Model
from ..results import Message, ToolCall


class Policy(Model):
    """A task-oriented domain policy (TD-Eval): slots the agent handles and rules it follows."""

    model_config = ConfigDict(extra="forbid")

    domain: str | None = None
    slots: list[str] | dict[str, object] = Field(default_factory=list)
    rules: list[str] = Field(default_factory=list)
    text: str | None = Field(None, description="The policy as text (or `file://policy.md`, relative to the eval file).")
    system_prompt: bool = Field(False, description="Also give the policy to the agent, as a system message.")


#: A domain policy as the judges take it: a `Policy`, a mapping with the same keys, or text.
PolicyLike = Policy | Mapping[str, object] | str | None

#: Longest message shown to a judge; longer ones are cut in the middle.
MAX_MESSAGE_CHARS = 6000
MAX_DATA_CHARS = 6000


class Said(Protocol):
    """What a transcript shows of a message: a `Message`, or a reply not yet made one."""

    @property
    def role(self) -> str: ...
    @property
    def content(self) -> str: ...
    @property
    def source(self) -> str: ...
    @property
    def turn(self) -> int | None: ...
    @property
    def tool_calls(self) -> Sequence[ToolCall]: ...


def turn_numbers(messages: Sequence[Said]) -> list[int | None]:
    """The turn of each message.

    When the messages carry turns (the run loop sets them), those are used: system messages
    and messages given before the first turn (a test's prefilled `input`) have None. Otherwise
    turns are counted: a user message after a non-user message opens a new turn.
    """
    given = [m.turn for m in messages]
    if given.count(None) != len(given):
        return given
    numbers: list[int | None] = []
    current = 0
    previous_role: str | None = None
    for message in messages:
        if message.role == "system":
            numbers.append(None)
            continue
        if message.role == "user" and previous_role != "user":
            current += 1
        numbers.append(current or None)
        previous_role = message.role
    return numbers


def clip(text: str, limit: int = MAX_MESSAGE_CHARS) -> str:
    """`text`, cut in the middle when longer than `limit` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - limit} characters left out ...]\n{text[-half:]}"


#: How a user message of each source (other than the test's own) is shown.
_USER_SPEAKERS = {"simulator": "user (simulated)", "hint": "user (hint)"}


def format_tool_calls(calls: Iterable[ToolCall]) -> str:
    shown = []
    for call in calls:
        args = json.dumps(call.arguments, ensure_ascii=False, default=str)
        shown.append(f"{call.name}({args})")
    return ", ".join(shown)


def format_transcript(messages: Sequence[Said], *, numbered: bool = True, limit: int = MAX_MESSAGE_CHARS) -> str:
    """A transcript for a judge, one block per message, each marked with its turn:

        [system] You are a booking assistant.
        [turn 1] user: A table for two, please.
        [turn 1] assistant: For which day?

    Messages given before the first turn (a test's prefilled `input`) are marked
    `[before turn 1]`; one without a turn after turn N (a simulated user's goodbye, never sent)
    `[after turn N]`.
    """
    if not messages:
        return "(no messages)"
    blocks = []
    speakers = _USER_SPEAKERS
    last = 0  # the last turn marked so far
    for number, message in zip(turn_numbers(messages), messages, strict=True):
        text = message.content
        if len(text) > limit:
            text = clip(text, limit)
        if message.tool_calls:
            text += f"\n(tool calls: {format_tool_calls(message.tool_calls)})"
        role = message.role
        if role == "system":
            blocks.append(f"[system] {text}")
            continue
        speaker = speakers.get(message.source, role) if role == "user" else role
        if not numbered:
            blocks.append(f"{speaker}: {text}")
        elif number is not None:
            last = number
            blocks.append(f"[turn {number}] {speaker}: {text}")
        else:
            blocks.append(f"[after turn {last}] {speaker}: {text}" if last else f"[before turn 1] {speaker}: {text}")
    return "\n\n".join(blocks)


def last_user_message(messages: Sequence[Message]) -> str:
    """The text of the last user message (the query a reply answers), or ''."""
    for message in reversed(messages):
        if message.role == "user":
            return message.content
    return ""


def turn_count(messages: Sequence[Message]) -> int:
    return max((n for n in turn_numbers(messages) if n is not None), default=0)


def format_data(value: object, limit: int = MAX_DATA_CHARS) -> str | None:
    """A backend / database result as text (compact JSON for structures), or None when absent."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip()
        return clip(text, limit) if text else None
    if isinstance(value, BaseModel):
        value = value.model_dump()
    text = json.dumps(value, ensure_ascii=False, default=str)
    return clip(text, limit)


def format_policy(policy: PolicyLike) -> str | None:
    """A domain policy (a `Policy`, a mapping with the same keys, or text) as text.

    Returns None when there is no policy.
    """
    if policy is None:
        return None
    if isinstance(policy, str):
        return policy.strip() or None
    if isinstance(policy, BaseModel):
        policy = policy.model_dump()
    if not isinstance(policy, Mapping):
        return str(policy)
    lines: list[str] = []
    if policy.get("domain"):
        lines.append(f"Domain: {policy['domain']}")
    slots = policy.get("slots")
    if isinstance(slots, dict) and slots:
        lines.append("Slots (information the agent handles):")
        lines.extend(f"- {name}: {desc}" if desc not in (None, "") else f"- {name}" for name, desc in slots.items())
    elif isinstance(slots, list) and slots:
        lines.append("Slots (information the agent handles): " + ", ".join(str(s) for s in slots))
    rules = policy.get("rules")
    if isinstance(rules, list) and rules:
        lines.append("Rules:")
        lines.extend(f"- {rule}" for rule in rules)
    if policy.get("text"):
        lines.append(str(policy["text"]).strip())
    return "\n".join(lines) or None


def cited_turns(text: str, last_turn: int | None = None) -> list[int]:
    """Turn numbers a judge cited as `turn 3`, `turns 2 and 4`, `turn 2-3` (sorted, unique)."""
    found: set[int] = set()
    for match in re.finditer(r"\bturns?\s+((?:\d+\s*(?:,|and|&|-|–|to)?\s*)+)", text, re.IGNORECASE):
        chunk = match.group(1)
        for lo, hi in re.findall(r"(\d+)\s*(?:-|–|to)\s*(\d+)", chunk):
            if 0 <= int(hi) - int(lo) <= 50:
                found.update(range(int(lo), int(hi) + 1))
        found.update(int(n) for n in re.findall(r"\d+", chunk))
    if last_turn is not None:
        found = {n for n in found if 1 <= n <= last_turn}
    return sorted(found)
