"""The target contract: optional features with defaults read in one place, wrappers that forward
exactly those, the agent context only agents see, and the HTTP target found through wrappers."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import convoeval
from convoeval.engine import CachedTarget, ResponseCache, target_identity
from convoeval.engine._meter import MeteredTarget, RunMeter
from convoeval.results import ToolCall
from convoeval.targets import (
    AgentContext,
    Capabilities,
    ChatReply,
    ChatRequest,
    TargetConfig,
    ToolAgentSettings,
    capabilities,
    create_target,
    endpoint_limits,
    http_target,
)
from convoeval.targets.agents import ToolAgent
from convoeval.testing import FakeOpenAIServer

from .conftest import write

SRC = Path(convoeval.__file__).parent
OPTIONAL = {
    "session",
    "cacheable",
    "provider_name",
    "end_session",
    "with_model",
    "url",
    "api_key",
    "limits",
    "endpoint",
}


class Plain:
    """A target written against the required contract only."""

    name = "plain"

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []

    async def chat(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        return ChatReply(text=f"echo {request.messages[-1]['content']}")

    async def aclose(self) -> None:
        pass


class Resuming(Plain):
    name = "resuming"
    session = "resume"
    cacheable = True
    provider_name = "mine"

    def __init__(self) -> None:
        super().__init__()
        self.ended: list[str] = []

    async def chat(self, request: ChatRequest) -> ChatReply:
        reply = await super().chat(request)
        reply.session_id = request.session_id or "s1"
        return reply

    async def end_session(self, session_id: str) -> None:
        self.ended.append(session_id)


def test_a_target_that_declares_nothing_gets_the_documented_defaults(tmp_path: Path) -> None:
    assert capabilities(Plain()) == Capabilities(
        session="history", cacheable=None, provider_name=None, end_session=None, with_model=None
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: a\n    input: hi\n    assertions: [{type: contains, value: echo hi}]\n",
    )
    plain = Plain()
    result = convoeval.run(suite, target=plain, cache=False, store=False).results[0]
    assert result.verdict == "pass" and result.provider is None and result.session == "history"
    assert plain.requests[0].agent == AgentContext()  # no workspace, no budget, no domain tools


def test_declared_features_are_read_and_forwarded_by_wrappers_only(tmp_path: Path) -> None:
    target = Resuming()
    cache = ResponseCache(tmp_path / "c.sqlite")
    try:
        wrapped = MeteredTarget(CachedTarget(target, cache, {"object": "resuming"}), RunMeter())
        features = capabilities(wrapped)
        assert (features.session, features.cacheable, features.provider_name) == ("resume", True, "mine")
        assert features.end_session == target.end_session
        with pytest.raises(AttributeError):
            wrapped.provider_name  # noqa: B018 - nothing beyond the contract is forwarded
    finally:
        cache.close()


def test_a_resumed_conversation_ends_its_session_through_the_contract(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: t\n    mode: conversation\n    turns:\n      - input: one\n      - input: two\n",
    )
    target = Resuming()
    result = convoeval.run(suite, target=target, cache=False, store=False).results[0]
    assert result.provider == "mine" and result.session == "resumed"
    assert target.ended == ["s1"] and target.requests[1].session_id == "s1"


async def test_the_tool_agents_model_gets_no_agent_context(tmp_path: Path) -> None:
    model = Plain()
    agent = ToolAgent(model, ToolAgentSettings(tools=[]), tmp_path)
    called: list[ToolCall] = []

    async def domain(call: ToolCall) -> ToolCall:
        called.append(call)
        return call

    context = AgentContext(workdir=str(tmp_path), max_tool_calls=3, domain_tools=[], call_domain_tool=domain)
    reply = await agent.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}], agent=context))
    assert reply.text == "echo hi" and model.requests[0].agent == AgentContext()
    assert capabilities(agent) == Capabilities(
        cacheable=False, provider_name="Plain+agent", with_model=agent.with_model
    )


def test_the_http_target_and_its_limits_are_found_through_wrappers(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        config = TargetConfig(name="m", provider="openai", model="x", base_url=server.base_url, concurrency=3)
        model = create_target(config)
        agent = ToolAgent(model, ToolAgentSettings(tools=[]), tmp_path)
        assert http_target(agent) is model and http_target(Plain()) is None
        found = endpoint_limits(agent)
        assert found is not None and found[0] is model and found[2].concurrency == 3
        assert target_identity(config, agent)["base_url"] == server.base_url + "/chat/completions"


def test_optional_features_are_not_probed_outside_the_one_reader() -> None:
    """`getattr(x, "<feature>")` on a target lives in `targets/_base.capabilities` only."""
    probes = []
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id in ("getattr", "hasattr")
                and len(node.args) >= 2
                and isinstance(node.args[1], ast.Constant)
                and node.args[1].value in OPTIONAL
            ):
                probes.append(f"{path.relative_to(SRC)}:{node.lineno} {node.args[1].value}")
    assert probes and all(p.startswith("targets/_base.py:") for p in probes), probes
