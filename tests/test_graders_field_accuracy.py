"""`field-accuracy` (AgentV) on AgentV's own document-extraction example: an extractor that
returns the attached invoice JSON gets the scores AgentV recorded for each case."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

import convoeval
from convoeval import SpecError, load_suite

from .conftest import DATA, write
from .test_graders_deterministic import grade, turn_ctx

EXAMPLE = DATA / "agentv" / "v4.15.0/examples/features/document-extraction"


async def mock_extractor(messages: list[dict]) -> str:
    """AgentV's mock extractor: the attached invoice file's JSON, as is."""
    found = re.search(r'<file path="[^"]*">\n(.*)\n</file>', messages[-1]["content"], re.DOTALL)
    assert found, messages[-1]["content"]
    return found.group(1)


def test_agentv_example_scores_as_documented(tmp_path: Path) -> None:
    copy = tmp_path / "document-extraction"
    shutil.copytree(EXAMPLE, copy)
    (tmp_path / ".git").mkdir()  # in a repository, as in AgentV's: its attachments lie in ../fixtures
    suite = copy / "evals" / "field-accuracy.eval.yaml"
    report = convoeval.run(suite, target=mock_extractor, judge="scripted", cache=False, store=False)
    scores = {
        (r.test_id, g.name): g.score for r in report.results for g in r.scores[0].graders if g.type == "field-accuracy"
    }
    # AgentV's own recorded run of this file (field-accuracy.eval.baseline.jsonl at 1618c34).
    assert scores == {
        ("invoice-001", "invoice_field_accuracy"): 1.0,
        ("invoice-002", "other_fields"): 1.0,
        ("invoice-002", "invoice_field_accuracy"): pytest.approx(12 / 13),  # supplier.name differs
        ("invoice-003", "invoice_field_accuracy"): 1.0,
        ("invoice-004", "invoice_field_accuracy"): pytest.approx(11 / 13),  # invoice_number missing
        ("invoice-005", "line_items_check"): 1.0,
        ("invoice-005", "invoice_field_accuracy"): 1.0,  # fields the expected output lacks
        ("invoice-006", "invoice_field_accuracy"): 1.0,
    }


@pytest.mark.parametrize(
    ("field", "reply", "passed"),
    [
        ({"path": "d", "match": "date"}, '{"d": "2025-01-15"}', True),
        ({"path": "d", "match": "date"}, '{"d": "15-Jan-2025"}', True),
        ({"path": "d", "match": "date", "formats": ["DD/MM/YYYY"]}, '{"d": "15/01/2025"}', True),
        ({"path": "d", "match": "date", "formats": ["MM/DD/YYYY"]}, '{"d": "01/15/2025"}', True),
        ({"path": "d", "match": "date"}, '{"d": "2025-01-16"}', False),
        ({"path": "n", "match": "numeric_tolerance", "tolerance": 0.1, "relative": True}, '{"n": "109 USD"}', True),
        ({"path": "n", "match": "numeric_tolerance", "tolerance": 1}, '{"n": 102}', False),
        ({"path": "items[1].x", "match": "exact"}, '{"items": [{"x": 0}, {"x": [1, 2]}]}', True),
    ],
)
async def test_field_matches(field: dict, reply: str, passed: bool) -> None:
    expected = '{"d": "15-JAN-2025", "n": 100, "items": [{"x": 0}, {"x": [1, 2]}]}'
    result = await grade({"type": "field-accuracy", "fields": [field]}, turn_ctx(reply, expected_output=expected))
    assert result.assertions[0].passed is passed, result.assertions


async def test_missing_fields_reply_without_json_and_no_expected_output() -> None:
    spec = {
        "type": "field-accuracy",
        "fields": [{"path": "a"}, {"path": "b", "required": False, "weight": 5}, {"path": "c"}],
    }
    result = await grade(spec, turn_ctx('{"c": 1}', expected_output='{"a": 1, "b": 2, "c": 1}'))
    assert result.score == 0.5  # a (required) missing: 0; b optional: left out; c: 1
    result = await grade(
        {**spec, "aggregation": "all_or_nothing"}, turn_ctx('{"a": 1, "c": 1}', expected_output='{"a": 1, "c": 2}')
    )
    assert result.score == 0.0
    result = await grade(spec, turn_ctx("no json here", expected_output='{"a": 1}'))
    assert (result.verdict, result.score) == ("fail", 0.0)
    result = await grade(spec, turn_ctx('{"a": 1}'))
    assert result.verdict == "error" and "expected_output" in (result.error or "")


def test_fields_are_validated(tmp_path: Path) -> None:
    text = "tests:\n  - id: a\n    input: hi\n    assertions:\n      - {type: field_accuracy, fields: [{path: x, match: fuzzy}]}\n"
    with pytest.raises(SpecError, match=r"s.eval.yaml:5: tests\[0\].assertions\[0\].fields\[0\].match"):
        load_suite(write(tmp_path / "s.eval.yaml", text))
