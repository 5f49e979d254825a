"""AgentV's conversation mode and default grader, for files found as AgentV's (`orchestrator.ts`
v4.42.4): a turn without checks scores 1.0 (lines 3066-3076), a turn skipped after a failed one
scores 0 (3006-3016), both counted; conversation-level assertions read `role: text` lines of the
transcript (3155-3161); a test left without assertions is judged by the default llm-grader
(2611-2621). The same file outside an AgentV tree keeps convoeval's meaning.

Real `convoeval run` of the same file in both places, on a scripted target and judge.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

import convoeval
from convoeval.results import EvaluationResult

from .conftest import write

SUITE = """\
tests:
  - id: bare-turn
    mode: conversation
    turns:
      - input: Hi there.
      - input: Say goodbye.
        assertions: [{type: contains, value: farewell}]
  - id: stopped
    mode: conversation
    on_turn_failure: stop
    turns:
      - input: One.
        assertions: [{type: contains, value: reply}]
      - input: Two.
        assertions: [{type: contains, value: farewell}]
      - input: Three.
        assertions: [{type: contains, value: reply}]
  - id: transcript
    mode: conversation
    turns:
      - input: Mention zebra.
    assertions:
      - {type: contains, value: "user: Mention zebra."}
  - id: no-assertions-left
    input: Say four.
    assertions:
      - {type: contains, value: reply}
"""

TARGETS = """\
targets:
  - {name: bot, provider: scripted, default: a reply}
  - {name: judge, provider: scripted, default: '{"reasoning": "scripted", "score": 3}'}
"""


def _results(folder: Path, suite: str = SUITE) -> dict[str, EvaluationResult]:
    path = write(folder / "s.eval.yaml", suite)
    write(folder / "targets.yaml", TARGETS)
    report = convoeval.run(path, target="bot", judge="judge", cache=False)
    return {r.test_id: r for r in report.results}


def _turns(result: EvaluationResult) -> list[tuple[float | None, str]]:
    return [(e.score, e.verdict) for e in result.scores if e.type == "turn"]


def test_agentv_files_score_conversations_as_agentv(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    results = _results(tmp_path / "evals")
    bare = results["bare-turn"]
    assert _turns(bare) == [(1.0, "pass"), (0.0, "fail")] and (bare.score, bare.verdict) == (0.5, "fail")
    stopped = results["stopped"]
    assert _turns(stopped) == [(1.0, "pass"), (0.0, "fail"), (0.0, "skip")]
    assert stopped.score == round(1 / 3, 6)
    assert results["transcript"].verdict == "pass"  # the user's line is in AgentV's transcript


def test_convoeval_suites_keep_their_conversation_scores(tmp_path: Path) -> None:
    results = _results(tmp_path)
    bare = results["bare-turn"]
    assert _turns(bare) == [(None, "skip"), (0.0, "fail")] and bare.score == 0.0
    stopped = results["stopped"]
    assert _turns(stopped) == [(1.0, "pass"), (0.0, "fail"), (None, "skip")] and stopped.score == 0.5
    assert results["transcript"].verdict == "fail"  # conversation-level checks read the replies


def test_an_agentv_test_left_without_assertions_gets_the_default_judge(tmp_path: Path) -> None:
    """AgentV skips `contains` with a number value (a warning); the test then has no
    assertions, and AgentV's default llm-grader judges it (here: 3 of 10, a fail)."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    suite = "tests:\n  - id: t\n    input: Say four.\n    assertions:\n      - {type: contains, value: 4}\n"
    [result] = _results(tmp_path, suite).values()
    [entry] = result.scores
    assert [g.type for g in entry.graders] == ["llm-grader"]
    assert (result.score, result.verdict) == (0.3, "fail")
    (tmp_path / ".agentv").rmdir()  # convoeval's own reading: `contains 4` is a check of its own
    [result] = _results(tmp_path, suite).values()
    assert [g.type for g in result.scores[0].graders] == ["contains"]


def test_a_test_agentv_skips_as_incomplete_runs_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """AgentV v4.42.4 skips a test without an `input` of its own (a conversation test too) or
    without anything to check (`yaml-parser.ts` 517-528); convoeval runs it and says so."""
    from convoeval.spec import load_suite

    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    path = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: no-input
    mode: conversation
    turns:
      - input: Hi.
  - id: nothing-to-check
    input: Hi.
  - id: complete
    input: Hi.
    criteria: Greets.
""",
    )
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        suite = load_suite(path)
    assert [t.id for t in suite.tests] == ["no-input", "nothing-to-check", "complete"]
    warned = [line for line in caplog.text.splitlines() if "AgentV skips this test" in line]
    assert len(warned) == 2
    assert "s.eval.yaml:2: tests[0]" in warned[0] and "s.eval.yaml:6: tests[1]" in warned[1]


def test_a_v5_test_checked_by_the_suites_assertions_is_complete(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Since v5.1 (v5.3.1 `yaml-parser.ts` `hasExplicitRootGraders`) the suite's own `assert` makes
    a test complete (AgentV's eval-files.mdx example: tests with `vars` only): no warning. A v4
    test with only the suite's assertions still gets one (v4.42.4 counts the test's own only)."""
    from convoeval.spec import load_suite

    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    docs = Path(__file__).parent / "data" / "agentv-docs" / "suite-assert.eval.yaml"
    v5 = write(tmp_path / "v5.eval.yaml", docs.read_text())
    v4 = write(tmp_path / "v4.eval.yaml", "assertions: [Greets]\ntests:\n  - id: t\n    input: Hi.\n")
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        assert [t.id for t in load_suite(v5).tests] == ["health-check"]
        assert [t.id for t in load_suite(v4).tests] == ["t"]
    warned = [line for line in caplog.text.splitlines() if "AgentV skips this test" in line]
    assert len(warned) == 1 and "v4.eval.yaml:3: tests[0]" in warned[0], warned


def test_an_agentv_test_without_any_input_is_skipped_as_agentv_skips_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """AgentV's docs (guides/autoresearch.mdx, main 58f316c) give tests with no input at all;
    AgentV skips each ("Skipping incomplete test", yaml-parser.ts): so does convoeval, saying why,
    where `validate` refused the file ("a single-turn test needs `input`")."""
    import logging

    from convoeval.spec import load_suite, validate_paths

    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    path = write(
        tmp_path / "EVAL.yaml",
        """\
tests:
  - id: total-outage
    assert:
      - type: contains
        value: '"P0"'
      - type: is-json
      - "Reasoning mentions complete service outage"
  - id: given
    vars: {input: Is the service down?}
    assert: [Answers]
""",
    )
    assert validate_paths([path]) == []
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        skips = {t.id: t.skip for t in load_suite(path).tests}
    assert skips["given"] is None
    assert skips["total-outage"] is not None and "AgentV skips this test: it has no input" in skips["total-outage"]
    assert "EVAL.yaml:2: tests[0]: AgentV skips this test: it has no input" in caplog.text


def test_agentv_numeric_required_and_a_conversations_expected_output(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """AgentV's deprecated `required: 0.7` is `required: true` with `min_score: 0.7` (a number
    outside (0, 1] is not required: `grader-parser.ts` parseRequiredAndMinScore); a conversation's
    test-level `expected_output` is ignored with a warning, as `runConversationMode` ignores it."""
    (tmp_path / ".git").mkdir()
    (tmp_path / ".agentv").mkdir()
    suite = """\
tests:
  - id: required-number
    input: Say it.
    assertions:
      - {type: contains, value: reply, weight: 3}
      - {type: contains, value: absent, required: 0.5}
  - id: out-of-range
    input: Say it again.
    assertions:
      - {type: contains, value: reply, weight: 3}
      - {type: contains, value: absent, required: 2}
  - id: conversation
    mode: conversation
    input: Be terse.
    expected_output: Goodbye.
    turns:
      - input: Hi.
        assertions: [{type: contains, value: reply}]
"""
    with caplog.at_level(logging.WARNING, logger="convoeval.spec"):
        results = _results(tmp_path / "evals", suite)
    assert "expected_output: ignored in conversation mode, as AgentV ignores it" in caplog.text
    assert (results["required-number"].score, results["required-number"].verdict) == (0.0, "fail")
    assert (results["out-of-range"].score, results["out-of-range"].verdict) == (0.75, "fail")
    assert results["conversation"].verdict == "pass"
