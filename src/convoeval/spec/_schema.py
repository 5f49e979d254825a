"""JSON Schema of the eval file, for editors (`convoeval schema`)."""

from __future__ import annotations

import functools
import operator
from typing import Any

from pydantic import TypeAdapter

from ..graders import registered_assertion_classes
from ._models import Suite


def suite_json_schema() -> dict[str, Any]:
    """The JSON Schema of an eval file, with every registered assertion type spelled out."""
    schema = Suite.model_json_schema(ref_template="#/$defs/{model}")
    classes = tuple(registered_assertion_classes())
    member: Any = functools.reduce(operator.or_, classes)  # a union; each member pins `type` (const)
    typed = TypeAdapter(member).json_schema(ref_template="#/$defs/{model}")
    defs = schema.setdefault("$defs", {})
    defs.update(typed.pop("$defs", {}))
    defs["Assertion"] = {
        "anyOf": [
            {"type": "string", "description": "A rubric criterion, judged by the LLM judge."},
            typed,
        ]
    }
    tests = schema.get("properties", {}).get("tests")
    if tests is not None:  # `tests: cases.yaml` / `cases.jsonl` names a file of tests
        schema["properties"]["tests"] = {
            "anyOf": [tests, {"type": "string", "description": "A YAML or JSONL file of tests."}]
        }
    schema["title"] = "convoeval eval file"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
