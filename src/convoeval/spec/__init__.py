"""The eval-file language: models, loading with file:line errors, templates, JSON Schema."""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from .._templates import (
    GRADER_VARIABLES,
    TemplateProblem,
    check_template,
    render,
    substitute,
    substitute_regex,
    unfilled,
)
from ._agentv_defaults import DEFAULT_SYSTEM_PROMPT, agentv_transcript, suite_input_for, with_default_system_prompt
from ._agentv_meaning import js_pattern, js_rejects
from ._checks import CHECKS_VERSION, stored_checks, suite_checks
from ._controls import Budget, Capture, Docker, Limits, PostCondition, Repo, Verify, Workspace
from ._errors import Problem, SpecError
from ._files import eval_files, load_suites, validate_eval_paths
from ._loader import load_suite, validate_paths
from ._models import (
    AUTO_MAX_TRIALS,
    DEFAULT_THRESHOLD,
    MAX_TRIALS,
    SIMULATED_USER_KEYS,
    Execution,
    FailedRun,
    InputMessage,
    JudgeSettings,
    Policy,
    SimulatedUser,
    Suite,
    TargetName,
    TargetRole,
    Test,
    TranscriptMessage,
    TrialsConfig,
    Turn,
    expected_messages,
    messages_text,
    to_messages,
)

if TYPE_CHECKING:
    from ._schema import suite_json_schema

# The JSON Schema (and every assertion type it spells out) loads for `convoeval schema` only.
__getattr__ = lazy_attributes(__name__, {"._schema": ("suite_json_schema",)})

__all__ = [
    "Budget",
    "CHECKS_VERSION",
    "stored_checks",
    "suite_checks",
    "Capture",
    "Limits",
    "Verify",
    "Workspace",
    "Docker",
    "Repo",
    "PostCondition",
    "DEFAULT_SYSTEM_PROMPT",
    "DEFAULT_THRESHOLD",
    "AUTO_MAX_TRIALS",
    "MAX_TRIALS",
    "Execution",
    "FailedRun",
    "GRADER_VARIABLES",
    "InputMessage",
    "JudgeSettings",
    "Policy",
    "Problem",
    "SIMULATED_USER_KEYS",
    "SimulatedUser",
    "SpecError",
    "Suite",
    "TargetName",
    "TargetRole",
    "Test",
    "TemplateProblem",
    "TranscriptMessage",
    "TrialsConfig",
    "Turn",
    "check_template",
    "eval_files",
    "load_suite",
    "load_suites",
    "expected_messages",
    "messages_text",
    "render",
    "substitute",
    "substitute_regex",
    "unfilled",
    "suite_json_schema",
    "to_messages",
    "validate_eval_paths",
    "agentv_transcript",
    "suite_input_for",
    "validate_paths",
    "with_default_system_prompt",
    "js_pattern",
    "js_rejects",
]
