"""AgentV v4.42's per-test `vars`: `{{ name }}` in a test's fields filled from them (read from
AgentV's `interpolation.ts` and `yaml-parser.ts`, v4.42.4)."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

_TEMPLATE_VAR = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_.]*)\s*\}\}")
_MISSING = object()  # a name `vars` does not hold
#: The fields of a test AgentV v4.42 fills with its `vars` (yaml-parser `interpolateRawEvalCase`).
VARS_FIELDS = ("criteria", "expected_outcome", "input", "input_files", "expected_output")


def fill_test_vars(test: dict, variables: dict) -> None:
    """AgentV v4.42's `vars`: `{{ name }}` (a dotted path into `vars`) in the test's criteria,
    input, input_files, expected_output and turns is replaced by its value; a name `vars` does
    not hold is left as written. `vars` stays on the test: the suite's `input` is filled with
    it too, for this test (when the run builds its messages)."""
    for key in VARS_FIELDS:
        if key in test:
            test[key] = fill_vars(test[key], variables)
    turns = test.get("turns")
    for turn in turns if isinstance(turns, list) else []:
        if isinstance(turn, dict):
            for key in ("input", "expected_output"):
                if key in turn:
                    turn[key] = fill_vars(turn[key], variables)


def fill_vars(value: object, variables: Mapping[str, object]) -> object:
    """`{{ name }}` filled from `variables` in every string of `value` (AgentV's
    `interpolateTemplateVars`): a string that is only a reference takes the value itself."""
    if isinstance(value, str):
        whole = _TEMPLATE_VAR.fullmatch(value)
        if whole is not None:
            found = _lookup(variables, whole.group(1))
            return value if found is _MISSING else found

        def fill(match: re.Match[str]) -> str:
            found = _lookup(variables, match.group(1))
            if found is _MISSING:
                return match.group(0)
            return found if isinstance(found, str) else json.dumps(found)

        return _TEMPLATE_VAR.sub(fill, value)
    if isinstance(value, list):
        return [fill_vars(v, variables) for v in value]
    if isinstance(value, dict):
        return {k: fill_vars(v, variables) for k, v in value.items()}
    return value


def _lookup(variables: Mapping[str, object], dotted: str) -> object:
    current: object = variables
    for part in dotted.split("."):
        if not isinstance(current, dict) or part not in current:
            return _MISSING
        current = current[part]
    return current
