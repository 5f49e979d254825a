"""The one registry: built-in names are protected, errors share one root."""

from __future__ import annotations

from typing import Literal

import pytest

from convoeval import registry
from convoeval.api import ConfigError as ApiConfigError
from convoeval.errors import ConfigError, ConvoevalError, GraderError, RegistryError, SpecError, TargetError
from convoeval.graders import Assertion, Grade, GradeContext, assertion_type, lookup_assertion_type
from convoeval.graders import GraderError as GradersGraderError
from convoeval.spec import SpecError as SpecSpecError
from convoeval.targets import ChatReply, ChatRequest, TargetConfig, create_target, provider
from convoeval.targets import TargetError as TargetsTargetError


class _Contains(Assertion):
    type: Literal["contains"] = "contains"

    async def grade(self, ctx: GradeContext) -> Grade:
        return Grade(score=1.0)


def test_registering_a_builtin_assertion_name_again_raises() -> None:
    builtin = lookup_assertion_type("contains")
    with pytest.raises(RegistryError, match=r"assertion 'contains' is already registered .*replace=True"):
        assertion_type(_Contains)
    assert lookup_assertion_type("contains") is builtin


def test_registering_a_builtin_provider_name_again_raises() -> None:
    with pytest.raises(RegistryError, match="provider 'openai' is already registered"):
        provider("openai")(lambda config: None)  # type: ignore[arg-type,return-value]


def test_replace_true_overrides_and_the_same_object_registers_twice() -> None:
    builtin = registry.lookup("assertion", "contains")
    try:
        registry.register("assertion", "contains", _Contains, replace=True)
        assert lookup_assertion_type("contains") is _Contains
    finally:
        registry.register("assertion", "contains", builtin, replace=True)
    assert registry.register("assertion", "contains", builtin) is builtin  # idempotent
    assert lookup_assertion_type("contains") is builtin


async def test_a_registered_provider_is_built_by_create_target() -> None:
    class Echo:
        def __init__(self, config: TargetConfig):
            self.name = config.name

        async def chat(self, request: ChatRequest) -> ChatReply:
            return ChatReply(text=request.messages[-1]["content"])

        async def aclose(self) -> None:
            pass

    provider("test-echo")(Echo)
    try:
        assert "test-echo" in registry.names("provider")
        target = create_target(TargetConfig(name="e", provider="test-echo"))
        reply = await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
        assert reply.text == "hi"
    finally:
        registry.unregister("provider", "test-echo")
    assert registry.lookup("provider", "test-echo") is None


def test_unknown_kind_is_refused() -> None:
    with pytest.raises(RegistryError, match="unknown registry kind 'grader'"):
        registry.register("grader", "x", object())  # type: ignore[arg-type]


def test_errors_share_one_root() -> None:
    for cls in (ConfigError, GraderError, RegistryError, SpecError, TargetError):
        assert issubclass(cls, ConvoevalError)
    assert (ApiConfigError, GradersGraderError, SpecSpecError, TargetsTargetError) == (
        ConfigError,
        GraderError,
        SpecError,
        TargetError,
    )
