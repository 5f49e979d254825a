"""What AgentV adds to what it sends: its default system prompt, and a test's `vars` in the
suite's input.

AgentV's chat providers (`ai-sdk.ts`: openai, azure, openrouter, anthropic, gemini) send
`DEFAULT_SYSTEM_PROMPT` as the system message of a request that has none. convoeval does the
same for AgentV's eval files (`Suite.agentv`: a `.agentv/` folder at or above the file, up to
the repository root) on those providers, so the target receives what AgentV would send.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..results import Message
from ._agentv_vars import fill_vars
from ._models import InputMessage, MessageContent, Messages, Suite, Test

#: AgentV's `DEFAULT_SYSTEM_PROMPT` (packages/core/src/evaluation/providers/ai-sdk.ts, v4.15.0 and v4.42.4).
DEFAULT_SYSTEM_PROMPT = "You are a careful assistant. Follow all provided instructions and do not fabricate results."
#: Providers AgentV sends it to (those convoeval has among them).
CHAT_PROVIDERS = frozenset({"openai", "azure", "openrouter", "anthropic", "gemini"})


def with_default_system_prompt(suite: Suite, provider: str | None) -> Suite:
    """The suite with AgentV's default system message first where a test's messages (the
    suite's `input`, then the test's) do not start with a system message, when the suite is
    AgentV's and the target's provider is one AgentV sends it to; else the suite itself.

    AgentV keeps only leading system messages as system messages (a later one is sent as an
    assistant message), so the first message decides."""
    if not suite.agentv or provider not in CHAT_PROVIDERS:
        return suite
    update: dict[str, object] = {}
    shared = _messages(suite.input)
    if shared and shared[0].role != "system":
        update["input"] = [_SYSTEM, *shared]
    tests = [
        test if _first_is_system(test.input) or (shared and not _skips(test)) else _prefixed(test)
        for test in suite.tests
    ]
    if any(new is not old for new, old in zip(tests, suite.tests, strict=True)):
        update["tests"] = tests
    return suite.model_copy(update=update) if update else suite


_SYSTEM = InputMessage(role="system", content=DEFAULT_SYSTEM_PROMPT)


def _skips(test: Test) -> bool:
    return bool(test.execution and test.execution.skip_defaults)


def _messages(value: Messages | None) -> list[InputMessage]:
    if value is None:
        return []
    if isinstance(value, list):
        return list(value)
    return [InputMessage(role="user", content=value)]


def _first_is_system(value: Messages | None) -> bool:
    messages = _messages(value)
    return bool(messages) and messages[0].role == "system"


def _prefixed(test: Test) -> Test:
    return test.model_copy(update={"input": [_SYSTEM, *_messages(test.input)]})


def suite_input_for(suite: Suite, test: Test) -> Messages | None:
    """The suite's `input` as this test receives it: with the test's `vars` (AgentV v4.42)
    filled in, as AgentV fills the suite's input for each test."""
    value = suite.input
    if not test.vars or value is None:
        return value
    if isinstance(value, (str, dict)):
        return _as_content(fill_vars(value, test.vars))
    return [m.model_copy(update={"content": _filled_content(m.content, test.vars)}) for m in value]


def _filled_content(content: MessageContent, variables: Mapping[str, object]) -> object:
    if isinstance(content, list):
        return [p.model_copy(update={"value": _as_text(fill_vars(p.value, variables))}) for p in content]
    return _as_content(fill_vars(content, variables))


def _as_content(value: object) -> str | dict[str, object] | None:
    """A message's content: text or a JSON object as they are, other values as JSON text."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return {str(k): v for k, v in value.items()}
    return json.dumps(value)


def _as_text(value: object) -> str | None:
    return value if isinstance(value, str) or value is None else json.dumps(value)


def agentv_transcript(transcript: list[Message]) -> str:
    """A conversation as AgentV's conversation-level assertions read it (`orchestrator.ts`
    v4.42.4 lines 3154-3160): `role: text` blocks joined by a blank line, of the test's input,
    the user's turns and the replies; not tool messages, nor AgentV's default system prompt
    (its providers add it to each request; its history does not hold it)."""
    kept = [
        m
        for m in transcript
        if m.role in ("system", "user", "assistant")
        and not (m.role == "system" and m.content == DEFAULT_SYSTEM_PROMPT and m.source == "input")
    ]
    return "\n\n".join(f"{m.role}: {m.content}" for m in kept)
