"""JSON Schema of the eval file, for editors (`convoeval schema`)."""

from __future__ import annotations

import functools
import operator

from pydantic.json_schema import JsonSchemaValue

from .. import registry
from ..graders import AGGREGATOR_ALIASES, registered_assertion_classes
from ._agentv import LEGACY_TYPES
from ._models import Suite


def suite_json_schema() -> JsonSchemaValue:
    """The JSON Schema of an eval file, with every registered assertion type spelled out."""
    from pydantic import TypeAdapter  # loads pydantic's adapter module: only `convoeval schema` needs it

    schema = Suite.model_json_schema(ref_template="#/$defs/{model}")
    classes = tuple(registered_assertion_classes())
    member = functools.reduce(operator.or_, classes)  # a union; each member pins `type` (const)
    typed = TypeAdapter(member).json_schema(ref_template="#/$defs/{model}")
    defs = schema.setdefault("$defs", {})
    defs.update(typed.pop("$defs", {}))
    _add_type_aliases(defs)
    _add_aggregator_aliases(defs)
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


def _add_type_aliases(defs: JsonSchemaValue) -> None:
    """Let each assertion's `type` take the spellings the loader reads too: underscores for
    dashes (`llm_grader`), AgentV's older names (`llm_judge`, `code_judge` with `script:`) and
    the v5 `metric` for `name`."""
    aliases: dict[str, list[str]] = {}
    for name, cls in registry.entries("assertion").items():
        spellings = aliases.setdefault(cls.__name__, [])
        if "_" not in name and "-" in name:
            spellings.append(name.replace("-", "_"))
    for old, new in LEGACY_TYPES.items():
        cls = registry.lookup("assertion", new)
        if cls is not None:
            aliases.setdefault(cls.__name__, []).append(old)
    for model_name, extra in aliases.items():
        model = defs.get(model_name)
        if model is None:
            continue
        properties = model.get("properties", {})
        kind = properties.get("type", {})
        names = [kind["const"]] if "const" in kind else list(kind.get("enum", []))
        properties["type"] = {"enum": list(dict.fromkeys([*names, *extra])), "title": "Type", "type": "string"}
        if "name" in properties:
            properties["metric"] = {"type": "string", "description": "AgentV v5 spelling of `name`."}
        legacy = [old for old in extra if old in LEGACY_TYPES]
        required = model.get("required", [])
        if legacy and "command" in required and "command" in properties:  # code_judge takes `script:`
            properties["script"] = properties["command"]
            model["required"] = [r for r in required if r != "command"]
            model["if"] = {"properties": {"type": {"enum": legacy}}}
            model["then"] = {"anyOf": [{"required": ["command"]}, {"required": ["script"]}]}
            model["else"] = {"required": ["command"]}


def _add_aggregator_aliases(defs: JsonSchemaValue) -> None:
    """A composite's aggregator `type` also takes the spellings the loader reads
    (`code-judge`, `code_grader`, `weighted-average`...)."""
    kind = defs.get("Aggregator", {}).get("properties", {}).get("type")
    if kind is not None and "enum" in kind:
        names = list(kind["enum"])
        spellings = [*names, *(n.replace("_", "-") for n in names), *AGGREGATOR_ALIASES]
        spellings += [n.replace("_", "-") for n in AGGREGATOR_ALIASES]
        kind["enum"] = list(dict.fromkeys(spellings))
        composite = defs.get("Composite", {}).get("properties", {})
        if "aggregator" in composite:  # `aggregator: threshold` names the type alone
            composite["aggregator"] = {"anyOf": [composite["aggregator"], {"enum": kind["enum"], "type": "string"}]}
