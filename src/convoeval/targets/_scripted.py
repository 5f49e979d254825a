"""A scripted target for tests and demos: canned replies, no model."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from .._regex import RegexTimeout, compile_pattern, search
from ..results import Usage
from ._base import ChatReply, ChatRequest, TargetConfig, TargetError, message_text, provider
from ._settings import ScriptedSettings, settings_of

if TYPE_CHECKING:
    from regex import Pattern


@provider("scripted")
class ScriptedTarget:
    """Answers from a script given as extra settings of a targets-file entry.

    Settings:
        replies: list of replies; the n-th user message of a conversation gets the n-th
            (cycling when the conversation is longer).
        rules: list of `{match: REGEX, reply: TEXT}` tried first against the last user message.
        default: the reply when nothing else applies (default: echo the last user message).
        fail_on: a regex; a last user message that matches makes the call fail.
        delay_s: seconds to wait before answering.

    A search of `match` or `fail_on` that takes over 2 s (a pattern backtracking
    catastrophically) is stopped and makes the call fail.

    Example (targets.yaml):
        targets:
          - name: bot
            provider: scripted
            rules: [{match: "(?i)capital of france", reply: "Paris."}]
    """

    settings_model = ScriptedSettings

    def __init__(self, config: TargetConfig):
        self.name = config.name
        settings = settings_of(config, ScriptedSettings)
        self.replies: list[str] = settings.replies
        self.rules = [(compile_pattern(rule["match"]), rule["reply"]) for rule in settings.rules]
        self.default: str | None = settings.default
        self.fail_on = compile_pattern(settings.fail_on) if settings.fail_on else None
        self.delay_s = settings.delay_s

    async def chat(self, request: ChatRequest) -> ChatReply:
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        users = [message_text(m) for m in request.messages if m["role"] == "user"]
        last = users[-1] if users else ""
        if self.fail_on and self._search(self.fail_on, last, "fail_on"):
            raise TargetError(f"{self.name}: scripted failure for {last[:60]!r}")
        text = self._reply(last, len(users))
        words = sum(len(str(m.get("content", "")).split()) for m in request.messages)
        return ChatReply(text=text, usage=Usage(input_tokens=words, output_tokens=len(text.split())))

    def _reply(self, last: str, n_users: int) -> str:
        for n, (pattern, reply) in enumerate(self.rules):
            if self._search(pattern, last, f"rules[{n}].match"):
                return reply
        if self.replies:
            return self.replies[(max(n_users, 1) - 1) % len(self.replies)]
        if self.default is not None:
            return self.default
        return f"You said: {last}"

    def _search(self, pattern: Pattern[str], text: str, field: str) -> bool:
        """A rule's pattern searched in the user's message with a time bound: one that takes
        longer makes the call fail (the test is an `execution_error`)."""
        try:
            return search(pattern, text, field=f"{self.name}: {field}: regex", what="user message") is not None
        except RegexTimeout as exc:
            raise TargetError(str(exc)) from None

    async def aclose(self) -> None:
        return None
