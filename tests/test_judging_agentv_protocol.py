"""A program judge (an AgentV `cli` grader target) answering in AgentV's judge protocol
(`llm-grader.ts` v4.15.0-v5.3.1: `{checks: [...], overall_reasoning}` for rubrics, `{checks:
[{id, score}]}` for score ranges, `{score 0-1, assertions}` for a freeform llm-grader), scored
as AgentV scores the same answer; a model judge's answer is held to convoeval's schema."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from convoeval.judging import JudgeOutputError, RubricItem, rubric_parser
from convoeval.judging._call import _as_parser

from .conftest import read_jsonl, write

#: The agent (`fine OUT`: it replies `fine`) and the judge (`PROMPT OUT`: it answers what
#: `answer.json` beside it holds, whatever it is asked).
JUDGE = """\
import json, pathlib, sys
answer = "fine" if sys.argv[1] == "fine" else (pathlib.Path(__file__).parent / "answer.json").read_text()
pathlib.Path(sys.argv[2]).write_text(json.dumps({"text": answer}))
"""


def _run(cli, tmp_path: Path, assertions: str, answer: object, *options: str) -> dict:
    """One AgentV test replying `fine`, its checks judged by the program answering `answer`."""
    python = sys.executable
    write(tmp_path / "judge.py", JUDGE)
    write(tmp_path / "answer.json", json.dumps(answer))
    write(
        tmp_path / ".agentv/targets.yaml",
        f"""\
targets:
  - name: agent
    provider: cli
    command: {python} judge.py fine {{OUTPUT_FILE}}
    grader_target: judge
  - name: judge
    provider: cli
    command: {python} judge.py {{PROMPT_FILE}} {{OUTPUT_FILE}}
""",
    )
    write(tmp_path / "t.eval.yaml", f"tests:\n  - id: t\n    input: hi\n    assertions:\n{assertions}")
    out = tmp_path / "r.jsonl"
    code, stdout, stderr = cli("run", tmp_path / "t.eval.yaml", "--target", "agent", "--no-cache", "-o", out, *options)
    assert out.is_file(), stdout + stderr
    [row] = read_jsonl(out)
    [grader] = row["scores"][0]["graders"]
    assert grader["error"] is None and grader["judge_reasks"] == 0, stdout + stderr
    return grader


def _checks(*checks: tuple[str, bool]) -> dict:
    return {
        "checks": [{"id": i, "satisfied": s, "reasoning": f"{i} said {s}"} for i, s in checks],
        "overall_reasoning": "done",
    }


@pytest.mark.parametrize("repeats", ["1", "2"])
def test_rubric_checks_count_as_agentvs_calculate_rubric_score(cli, tmp_path: Path, repeats: str) -> None:
    """`rubric-N` is the Nth plain criterion; a check of no criterion is skipped, a criterion
    without a check is left out: 1 of the 2 checked, the failed one required -> 0.5, fail (the
    same over repeated judge calls)."""
    grader = _run(
        cli,
        tmp_path,
        "      - type: rubrics\n        criteria: [says one, says two, says three]\n",
        _checks(("rubric-1", True), ("rubric-3", False), ("rubric-9", True)),
        "--judge-repeats",
        repeats,
    )
    assert (grader["score"], grader["verdict"]) == (0.5, "fail")
    assert list(grader["details"]["criteria"]) == ["c1", "c3"]
    assert [a["evidence"].split(" [")[0] for a in grader["assertions"]] == ["rubric-1 said True", "rubric-3 said False"]


def test_own_ids_and_score_ranges(cli, tmp_path: Path) -> None:
    """Criteria with ids are checked by them; score-range checks give a 0-10 score (AgentV's
    `scoreRangeEvaluationSchema`: no `overall_reasoning` needed)."""
    grader = _run(
        cli,
        tmp_path,
        "      - type: rubrics\n        criteria:\n"
        "          - {id: tone, outcome: polite, score_ranges: {0: rude, 5: ok, 8: polite}}\n",
        {"checks": [{"id": "tone", "score": 9}]},
    )
    assert (grader["score"], grader["verdict"]) == (0.9, "pass")


@pytest.mark.parametrize(("score", "verdict"), [(0.75, "fail"), (0.8, "pass")])
def test_a_freeform_llm_grader_score_is_agentvs_zero_to_one(cli, tmp_path: Path, score: float, verdict: str) -> None:
    """`{score, assertions}` (AgentV's `freeformEvaluationSchema`): the score is kept exactly and
    passes at AgentV's 0.8."""
    answer = {"score": score, "assertions": [{"text": "polite", "passed": True, "evidence": "it is"}]}
    grader = _run(cli, tmp_path, "      - type: llm-grader\n        prompt: 'Is {{ output }} polite?'\n", answer)
    assert (grader["score"], grader["verdict"]) == (score, verdict)
    assert "passed: polite (it is)" in grader["assertions"][0]["evidence"]


@pytest.mark.parametrize(
    "answer",
    [
        {"checks": [{"id": "rubric-1", "satisfied": True, "reasoning": "r"}]},  # v5: promptfoo's shape
        {"checks": [{"id": "rubric-1", "satisfied": "yes", "reasoning": "r"}], "overall_reasoning": "o"},
    ],
)
def test_what_agentv_refuses_stays_refused(cli, tmp_path: Path, answer: dict) -> None:
    with pytest.raises(AssertionError, match="unparseable"):
        _run(cli, tmp_path, "      - type: rubrics\n        criteria: [says one]\n", answer)


def test_a_model_judge_must_answer_convoevals_schema() -> None:
    parser = rubric_parser([RubricItem(id="c1", text="x")])
    text = json.dumps(_checks(("rubric-1", True)))
    with pytest.raises(JudgeOutputError, match="checks: not an allowed key"):
        _as_parser(parser)(text)
    with pytest.raises(JudgeOutputError, match="checks: not an allowed key"):
        _as_parser(parser, lambda: False)(text)
    assert _as_parser(parser, lambda: True)(text).__dict__["k0"].satisfied is True


def test_no_criterion_checked_scores_zero(cli, tmp_path: Path) -> None:
    """AgentV's `calculateRubricScore` with no weight checked: score 0, fail."""
    grader = _run(cli, tmp_path, "      - type: rubrics\n        criteria: [says one]\n", _checks(("rubric-7", True)))
    assert (grader["score"], grader["verdict"], grader["assertions"]) == (0.0, "fail", [])
