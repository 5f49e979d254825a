"""convoeval: evaluate multi-turn conversations with LLMs and agents.

Example:
    import convoeval
    suite = convoeval.load_suite("examples/travel-planning.eval.yaml")
    report = convoeval.run(suite.path, target="openai:gpt-4o-mini")
    for result in report.results:
        print(result.test_id, result.score, result.verdict)
"""

from . import graders as graders
from . import registry as registry
from . import targets as targets
from ._version import __version__
from .api import RunEvents, RunOptions, RunReport, arun, load_suites, local_model_available, run
from .arena import ArenaOptions, ArenaReport, aarena, arena
from .errors import ConfigError, ConvoevalError, RegistryError
from .graders import Assertion, Grade, GradeContext, GraderError, assertion_type, grader
from .results import EvaluationResult, Message, ScoreEntry, TrialResult, Usage
from .spec import Problem, SpecError, Suite, load_suite, suite_json_schema, validate_paths
from .targets import ChatReply, ChatRequest, Target, TargetConfig, TargetError, provider

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
