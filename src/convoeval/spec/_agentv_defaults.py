"""What AgentV adds to what it sends: its default system prompt, and a test's `vars` in the
suite's input.

AgentV's chat providers (`ai-sdk.ts`: openai, azure, openrouter, anthropic, gemini) send
`DEFAULT_SYSTEM_PROMPT` as the system message of a request that has none. convoeval does the
same for AgentV's eval files (`Suite.agentv`: a `.agentv/` folder at or above the file, up to
the repository root) on those providers, so the target receives what AgentV would send.
"""

from __future__ import annotations

import json
from typing import Any

from ._agentv import fill_vars
from ._models import InputMessage, Messages, Suite, Test

#: AgentV's `DEFAULT_SYSTEM_PROMPT` (packages/core/src/evaluation/providers/ai-sdk.ts, v4.15.0 and v4.42.4).
DEFAULT_SYSTEM_PROMPT = "You are a careful assistant. Follow all provided instructions and do not fabricate results."
#: Providers AgentV sends it to (those convoeval has among them).
CHAT_PROVIDERS = frozenset({"openai", "azure", "openrouter", "anthropic", "gemini"})


def with_default_system_prompt(suite: Suite, provider: str | None) -> Suite:
    """The suite with AgentV's default system message first in each test that has no system
    message (nor gets one from the suite's `input`), when the suite is AgentV's and the
    target's provider is one AgentV sends it to; else the suite itself."""
    if not suite.agentv or provider not in CHAT_PROVIDERS:
        return suite
    suite_system = _has_system(suite.input)
    tests = [
        test if _has_system(test.input) or (suite_system and not _skips(test)) else _prefixed(test)
        for test in suite.tests
    ]
    if all(new is old for new, old in zip(tests, suite.tests, strict=True)):
        return suite
    return suite.model_copy(update={"tests": tests})


def _skips(test: Test) -> bool:
    return bool(test.execution and test.execution.skip_defaults)


def _has_system(value: Messages | None) -> bool:
    return isinstance(value, list) and any(m.role == "system" for m in value)


def _prefixed(test: Test) -> Test:
    system = InputMessage(role="system", content=DEFAULT_SYSTEM_PROMPT)
    value: Any = test.input
    if value is None:
        messages = [system]
    elif isinstance(value, list):
        messages = [system, *value]
    else:  # a string, or a JSON object as one user message
        messages = [system, InputMessage(role="user", content=value)]
    return test.model_copy(update={"input": messages})


def suite_input_for(suite: Suite, test: Test) -> Messages | None:
    """The suite's `input` as this test receives it: with the test's `vars` (AgentV v4.42)
    filled in, as AgentV fills the suite's input for each test."""
    value = suite.input
    if not test.vars or value is None:
        return value
    if isinstance(value, (str, dict)):
        return _as_content(fill_vars(value, test.vars))
    return [m.model_copy(update={"content": _filled_content(m.content, test.vars)}) for m in value]


def _filled_content(content: Any, variables: dict[str, Any]) -> Any:
    if isinstance(content, list):
        return [p.model_copy(update={"value": _as_text(fill_vars(p.value, variables))}) for p in content]
    return _as_content(fill_vars(content, variables))


def _as_content(value: Any) -> Any:
    return value if isinstance(value, (str, dict)) or value is None else json.dumps(value)


def _as_text(value: Any) -> Any:
    return value if isinstance(value, str) or value is None else json.dumps(value)
