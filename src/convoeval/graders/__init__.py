"""Graders: each assertion type is a pydantic model that validates its YAML and grades a reply.

The built-in assertion types are declared here by module: a module is imported (and its types
register) when a suite first uses one of them, or when every type is listed.
"""

from typing import TYPE_CHECKING

from .. import registry
from .._json_in_text import NoJson, parse_json
from .._lazy import lazy_attributes
from ..judging import GradingLevel
from ._base import (
    Assertion,
    Grade,
    GradeContext,
    GraderError,
    JudgedAssertion,
    assertion_type,
    assertion_type_names,
    canonical_type_name,
    format_messages,
    lookup_assertion_type,
    registered_assertion_classes,
)
from ._env_call import EnvCall
from ._function import grader
from ._panel import combine_scores

if TYPE_CHECKING:
    from ._aggregators import AGGREGATOR_ALIASES
    from ._tau_backend import Domain, DomainSession, domain_file_problems

# The aggregators (and the code-grader they run) load when a suite uses one, or for the schema;
# the tau-style backends when a suite names `tools`.
__getattr__ = lazy_attributes(
    __name__,
    {
        "._aggregators": ("AGGREGATOR_ALIASES",),
        "._tau_backend": ("Domain", "DomainSession", "domain_file_problems"),
    },
)

#: The built-in assertion types, by the module that defines them.
BUILTIN_TYPES: dict[str, tuple[str, ...]] = {
    "_agentv_script": ("script",),
    "_agentv_trajectory": (
        "trajectory:tool-used",
        "trajectory:tool-sequence",
        "trajectory:tool-args-match",
        "not-trajectory:tool-used",
        "not-trajectory:tool-sequence",
        "not-trajectory:tool-args-match",
        "skill-used",
        "not-skill-used",
    ),
    "_budgets": ("latency", "token-usage", "cost"),
    "_code": ("code-grader",),
    "_composite": ("composite",),
    "_dialogue": (
        "conversation-cohesion",
        "backend-consistency",
        "policy-compliance",
        "td-eval",
        "knowledge-retention",
        "role-adherence",
        "self-coherence",
        "instruction-retention",
        "versioned-editing",
        "goal-completion",
    ),
    "_execution_metrics": ("execution-metrics",),
    "_fastchat": ("mt-bench-judge",),
    "_field_accuracy": ("field-accuracy",),
    "_json": ("is-json", "not-is-json", "json-schema", "jsonpath"),
    "_llm": ("rubrics",),
    "_llm_grader": ("llm-grader",),
    "_simulation": ("simulator-fidelity",),
    "_tau": ("tau-reward",),
    "_text": (
        "contains",
        "icontains",
        "not-contains",
        "not-icontains",
        "contains-any",
        "contains-all",
        "icontains-any",
        "icontains-all",
        "not-contains-any",
        "not-contains-all",
        "not-icontains-any",
        "not-icontains-all",
        "starts-with",
        "not-starts-with",
        "ends-with",
        "not-ends-with",
        "equals",
        "not-equals",
        "regex",
        "not-regex",
    ),
    "_tools": (
        "tool-called",
        "tool-not-called",
        "tool-called-in-turn",
        "tool-not-called-in-turn",
        "turn-response-contains",
        "turn-response-not-contains",
        "tool-trajectory",
        "skill-trigger",
    ),
}
for _module, _names in BUILTIN_TYPES.items():
    for _name in _names:
        registry.register_lazy("assertion", _name, f"{__name__}.{_module}")

__all__ = [
    "AGGREGATOR_ALIASES",
    "BUILTIN_TYPES",
    "Assertion",
    "JudgedAssertion",
    "combine_scores",
    "Domain",
    "DomainSession",
    "EnvCall",
    "domain_file_problems",
    "Grade",
    "GradeContext",
    "GradingLevel",
    "NoJson",
    "GraderError",
    "assertion_type",
    "assertion_type_names",
    "canonical_type_name",
    "format_messages",
    "grader",
    "parse_json",
    "lookup_assertion_type",
    "registered_assertion_classes",
]
