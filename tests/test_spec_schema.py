"""The exported JSON Schema accepts the spellings the loader accepts (editors validate with it)."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from convoeval import SpecError, load_suite, suite_json_schema

from .conftest import write

ALIASES = """\
tests:
  - id: a
    input: hi
    assertions:
      - {type: llm_grader, prompt: "Is {{ output }} polite?"}
      - {type: code_grader, command: ["true"]}
      - {type: tool_trajectory, mode: any_order, expected: [{tool: search}]}
      - {type: contains_any, value: [hi, hello], metric: greeting}
      - {type: not_contains, value: rude}
      - {type: is_json, negate: true}
      - {type: llm_judge, prompt: "Is {{ output }} short?"}
      - {type: code_judge, script: ["true"]}
      - {type: code-judge, command: ["true"]}
      - type: composite
        aggregator: {type: code-judge, path: "true"}
        assertions: [{type: contains, value: a}]
      - {type: composite, aggregator: weighted-average, assertions: [{type: contains, value: b}]}
"""


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(suite_json_schema())


def _errors(validator: jsonschema.Draft202012Validator, text: str) -> list[str]:
    return [e.message for e in validator.iter_errors(yaml.safe_load(text))]


def test_underscore_and_legacy_type_names_validate(tmp_path: Path, validator) -> None:
    suite = load_suite(write(tmp_path / "s.eval.yaml", ALIASES))
    assert [a.type for a in suite.tests[0].assertions] == [
        "llm-grader",
        "code-grader",
        "tool-trajectory",
        "contains-any",
        "not-contains",
        "is-json",
        "llm-grader",
        "code-grader",
        "code-grader",
        "composite",
        "composite",
    ]
    assert _errors(validator, ALIASES) == []


@pytest.mark.parametrize(
    "assertion",
    [
        "{type: llm_gradr, prompt: x}",  # a misspelt type
        "{type: code_grader, script: ['true']}",  # only the legacy names take `script`
        "{type: code_judge}",  # neither `script` nor `command`
        "{type: contains_any, value: [a], metricz: x}",  # unknown field next to an alias
    ],
)
def test_schema_still_refuses_what_the_loader_refuses(assertion: str, tmp_path: Path, validator) -> None:
    text = f"tests:\n  - id: a\n    input: hi\n    assertions:\n      - {assertion}\n"
    assert _errors(validator, text), assertion
    with pytest.raises(SpecError):
        load_suite(write(tmp_path / "s.eval.yaml", text))


def test_every_dashed_type_has_its_underscore_spelling(validator) -> None:
    schema = json.dumps(suite_json_schema())
    for name in ("llm_grader", "tool_trajectory", "code_judge", "contains_all", "json_schema", "td_eval"):
        assert f'"{name}"' in schema
