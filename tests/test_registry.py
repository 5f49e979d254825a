"""The one registry: built-in names are protected, errors share one root."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Literal

import pytest

from convoeval import registry
from convoeval.api import ConfigError as ApiConfigError
from convoeval.errors import ConfigError, ConvoevalError, GraderError, RegistryError, SpecError, TargetError
from convoeval.graders import BUILTIN_TYPES, Assertion, Grade, GradeContext, assertion_type, lookup_assertion_type
from convoeval.graders import GraderError as GradersGraderError
from convoeval.spec import SpecError as SpecSpecError
from convoeval.targets import BUILTIN_PROVIDERS, ChatReply, ChatRequest, TargetConfig, create_target, provider
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


def test_a_module_imported_anew_registers_its_definitions_again(tmp_path, monkeypatch) -> None:
    """A module run a second time (importlib.reload, a test harness that restores sys.modules)
    defines new class objects under the same names: they replace the old, without an error."""
    import importlib

    (tmp_path / "reimported_grader.py").write_text(
        "from typing import Literal\n"
        "from convoeval.graders import Assertion, Grade, assertion_type\n"
        "@assertion_type\n"
        "class Reimported(Assertion):\n"
        "    type: Literal['test-reimported'] = 'test-reimported'\n"
        "    async def grade(self, ctx):\n"
        "        return Grade(score=1.0)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        first = importlib.import_module("reimported_grader")
        monkeypatch.delitem(sys.modules, "reimported_grader")
        second = importlib.import_module("reimported_grader")
        assert second.Reimported is not first.Reimported
        assert lookup_assertion_type("test-reimported") is second.Reimported
        # Another definition under a taken name is still refused.
        with pytest.raises(RegistryError, match="assertion 'test-reimported' is already registered"):
            registry.register("assertion", "test-reimported", _Contains)
    finally:
        registry.unregister("assertion", "test-reimported")


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


def _fresh(code: str) -> str:
    """Run `code` in a new interpreter (nothing imported yet); its stdout."""
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout


def test_the_builtin_tables_name_what_each_module_registers() -> None:
    """graders.BUILTIN_TYPES and targets.BUILTIN_PROVIDERS, the lazy index of built-ins, say
    exactly which module registers which name (a module loaded for a name registers it)."""
    code = """
import json
from convoeval import graders, registry, targets
found = {}
for kind, package, table in (("assertion", graders, graders.BUILTIN_TYPES), ("provider", targets, targets.BUILTIN_PROVIDERS)):
    for name, obj in registry.entries(kind).items():
        module = obj.__module__
        if module.startswith("convoeval."):
            found.setdefault(kind, {}).setdefault(module.removeprefix(package.__name__ + "."), []).append(name)
print(json.dumps(found))
"""
    found = json.loads(_fresh(code))
    found["provider"]["_local._target"] = found["provider"].pop("_local._target")
    eager_providers = {"_recorded"}  # imported by the package itself (RecordedReplies)
    assert {m: sorted(n) for m, n in found["assertion"].items()} == {m: sorted(n) for m, n in BUILTIN_TYPES.items()}
    assert {m: sorted(n) for m, n in found["provider"].items()} == {m: sorted(n) for m, n in BUILTIN_PROVIDERS.items()}
    assert eager_providers <= set(BUILTIN_PROVIDERS)


def test_a_lookup_imports_only_the_module_of_that_name() -> None:
    code = """
import sys
from convoeval import registry
import convoeval.graders
before = {m for m in sys.modules if m.startswith("convoeval.graders.")}
cls = registry.lookup("assertion", "knowledge-retention")
after = {m for m in sys.modules if m.startswith("convoeval.graders.")}
print(cls.__module__, *sorted(m.rsplit(".", 1)[1] for m in after - before))
"""
    module, *loaded = _fresh(code).split()
    assert module == "convoeval.graders._dialogue"
    assert "_dialogue" in loaded and not {"_text", "_tools", "_tau", "_field_accuracy", "_budgets"} & set(loaded)


def test_a_plugin_cannot_take_a_builtin_name_before_its_module_loads() -> None:
    """`contains` is only declared until used: a plugin registering it first is still refused."""
    code = """
from typing import Literal
from convoeval import registry
from convoeval.errors import RegistryError
from convoeval.graders import Assertion, Grade, assertion_type

class Mine(Assertion):
    type: Literal["contains"] = "contains"
    async def grade(self, ctx): return Grade(score=1.0)

try:
    assertion_type(Mine)
except RegistryError as exc:
    print("refused", registry.lookup("assertion", "contains").__module__)
"""
    assert _fresh(code).split() == ["refused", "convoeval.graders._text"]


def test_a_builtin_whose_module_fails_to_import_fails_every_lookup() -> None:
    """The import error of a built-in's module is raised each time, never turned into an
    unknown name on the second lookup."""
    registry.register_lazy("provider", "broken-builtin", "convoeval_no_such_module")
    try:
        for _ in range(2):
            with pytest.raises(ModuleNotFoundError, match="convoeval_no_such_module"):
                registry.lookup("provider", "broken-builtin")
    finally:
        registry.unregister("provider", "broken-builtin")
    assert registry.lookup("provider", "broken-builtin") is None
