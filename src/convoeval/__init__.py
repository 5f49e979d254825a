"""convoeval: evaluate multi-turn conversations with LLMs and agents.

Example:
    import convoeval
    suite = convoeval.load_suite("examples/travel-planning.eval.yaml")
    report = convoeval.run(suite.path, target="openai:gpt-4o-mini")
    for result in report.results:
        print(result.test_id, result.score, result.verdict)
"""

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from ._lazy import lazy_attributes
from ._version import __version__

if TYPE_CHECKING:
    from . import graders as graders
    from . import registry as registry
    from . import targets as targets
    from . import testing as testing
    from .api import RunEvents, RunOptions, RunReport, arun, load_suites, local_model_available, run
    from .arena import ArenaOptions, ArenaReport, aarena, arena
    from .errors import ConfigError, ConvoevalError, RegistryError
    from .graders import Assertion, Grade, GradeContext, GraderError, assertion_type, grader
    from .results import AssertionOutcome, EvaluationResult, Message, ScoreEntry, TrialResult, Usage
    from .spec import Problem, SpecError, Suite, load_suite, suite_json_schema, validate_paths
    from .targets import ChatReply, ChatRequest, Target, TargetConfig, TargetError, provider

# Every name loads when first used: `import convoeval` is cheap, and the `convoeval` command
# starts loading its HTTP client on another thread before it loads the rest of convoeval.
_exported = lazy_attributes(
    __name__,
    {
        ".api": ("RunEvents", "RunOptions", "RunReport", "arun", "load_suites", "local_model_available", "run"),
        ".arena": ("ArenaOptions", "ArenaReport", "aarena", "arena"),
        ".errors": ("ConfigError", "ConvoevalError", "RegistryError"),
        ".graders": ("Assertion", "Grade", "GradeContext", "GraderError", "assertion_type", "grader"),
        ".results": ("AssertionOutcome", "EvaluationResult", "Message", "ScoreEntry", "TrialResult", "Usage"),
        ".spec": ("Problem", "SpecError", "Suite", "load_suite", "suite_json_schema", "validate_paths"),
        ".targets": ("ChatReply", "ChatRequest", "Target", "TargetConfig", "TargetError", "provider"),
    },
)
_SUBPACKAGES = frozenset({"graders", "registry", "targets", "testing"})
#: Subpackages named like a function of the package: `convoeval.run` and `convoeval.arena` stay the functions.
_SHADOWED = frozenset({"arena", "run"})


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return importlib.import_module(f".{name}", __name__)
    return _exported(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, *_SUBPACKAGES})


class _Package(types.ModuleType):
    """convoeval itself: importing the `convoeval.run` or `convoeval.arena` package does not
    bind it over the function of that name (the import system binds a subpackage as an
    attribute of its parent)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name in _SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "__version__",
    "ArenaOptions",
    "ArenaReport",
    "Assertion",
    "AssertionOutcome",
    "ChatReply",
    "ChatRequest",
    "ConfigError",
    "ConvoevalError",
    "EvaluationResult",
    "Grade",
    "GradeContext",
    "GraderError",
    "Message",
    "Problem",
    "RegistryError",
    "RunEvents",
    "RunOptions",
    "RunReport",
    "ScoreEntry",
    "SpecError",
    "Suite",
    "Target",
    "TargetConfig",
    "TargetError",
    "TrialResult",
    "Usage",
    "aarena",
    "arena",
    "arun",
    "assertion_type",
    "grader",
    "load_suite",
    "load_suites",
    "local_model_available",
    "provider",
    "run",
    "suite_json_schema",
    "validate_paths",
]
