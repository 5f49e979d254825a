"""convoeval: evaluate multi-turn conversations with LLMs and agents.

Example:
    import convoeval
    suite = convoeval.load_suite("examples/travel-planning.eval.yaml")
    report = convoeval.run(suite.path, target="openai:gpt-4o-mini")
    for result in report.results:
        print(result.test_id, result.score, result.verdict)
"""

import sys
import types
from typing import TYPE_CHECKING, Any

from ._lazy import collector_paused, lazy_attributes

with collector_paused():
    from . import graders as graders
    from . import registry as registry
    from . import targets as targets
    from ._version import __version__
    from .api import RunEvents, RunOptions, RunReport, arun, load_suites, local_model_available, run
    from .errors import ConfigError, ConvoevalError, RegistryError
    from .graders import Assertion, Grade, GradeContext, GraderError, assertion_type, grader
    from .results import EvaluationResult, Message, ScoreEntry, TrialResult, Usage
    from .spec import Problem, SpecError, Suite, load_suite, validate_paths
    from .targets import ChatReply, ChatRequest, Target, TargetConfig, TargetError, provider

if TYPE_CHECKING:
    from .arena import ArenaOptions, ArenaReport, aarena, arena
    from .spec import suite_json_schema

# The arena (with the ratings) and the JSON Schema load when first used: `convoeval run` needs neither.
__getattr__ = lazy_attributes(
    __name__, {".arena": ("ArenaOptions", "ArenaReport", "aarena", "arena"), ".spec": ("suite_json_schema",)}
)


class _Package(types.ModuleType):
    """convoeval itself: `convoeval.arena` stays the function once the `convoeval.arena`
    package is imported (the import system binds a subpackage as an attribute of its parent)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "arena" and isinstance(value, types.ModuleType):
            value = value.arena
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__all__ = [
    "__version__",
    "ArenaOptions",
    "ArenaReport",
    "Assertion",
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
