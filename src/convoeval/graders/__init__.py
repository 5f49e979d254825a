"""Graders: each assertion type is a pydantic model that validates its YAML and grades a reply.

Importing this package registers the built-in assertion types.
"""

# Built-in assertion types register themselves on import.
from . import (  # noqa: F401
    _budgets,
    _code,
    _composite,
    _dialogue,
    _execution_metrics,
    _field_accuracy,
    _json,
    _llm,
    _llm_grader,
    _simulation,
    _tau,
    _text,
    _tools,
)
from ._aggregators import AGGREGATOR_ALIASES
from ._base import (
    Assertion,
    Grade,
    GradeContext,
    GraderError,
    assertion_type,
    assertion_type_names,
    canonical_type_name,
    format_messages,
    lookup_assertion_type,
    registered_assertion_classes,
)
from ._domain import Domain, DomainSession
from ._function import grader
from ._json import NoJson, parse_json

__all__ = [
    "AGGREGATOR_ALIASES",
    "Assertion",
    "Domain",
    "DomainSession",
    "Grade",
    "GradeContext",
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
