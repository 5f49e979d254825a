"""Judge vs judge (`convoeval agreement --runs`) and judge consistency (`--consistency`) over
result files written by real runs judged by FakeOpenAIServer."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest
from scipy import stats as scipy_stats

import convoeval
from convoeval.graders import _dialogue  # noqa: F401  (registers td-eval and goal-completion)
from convoeval.report import read_results
from convoeval.stats import agreement_estimates, judge_consistency, runs_agreement
from convoeval.testing import FakeOpenAIServer

from .arena_fakes import TARGETS, arena_server, judge_server, prompt_of  # noqa: F401  (fixtures)

SUITE = """\
name: graded
tests:
  - id: late-order
    mode: conversation
    criteria: The user learns when the late order arrives.
    turns:
      - input: My order is late.
        assertions: [{type: td-eval}, {type: icontains, value: order number}]
      - input: It is NW-1.
        assertions: [{type: td-eval}]
    assertions: [{type: goal-completion}]
  - id: refund
    mode: conversation
    criteria: The user learns how to return an item.
    turns:
      - input: I want to return a jacket.
        assertions: [{type: td-eval}]
      - input: When is the refund paid?
        assertions: [{type: td-eval}]
    assertions: [{type: goal-completion}]
"""

DIMS = ("conversation_cohesion", "backend_consistency", "policy_compliance")
# judge model -> bot -> (Likert per dimension, goal 0-10)
JUDGES = {
    "fake-judge": {"POLITE": ((5, 5, 5), 9), "TERSE": ((2, 2, 2), 2)},
    "fake-judge-b": {"POLITE": ((5, 5, 4), 8), "TERSE": ((2, 1, 2), 3)},
}


def _answer(body: dict[str, Any], likert: tuple[int, int, int], goal: int) -> str:
    keys = list(body["response_format"]["json_schema"]["schema"]["properties"])
    if keys == list(DIMS):
        return json.dumps({k: {"justification": "ok", "score": v} for k, v in zip(DIMS, likert, strict=True)})
    return json.dumps({"reasoning": "ok", "score": goal})


def _bot(body: dict[str, Any]) -> str:
    return "POLITE" if "POLITE:" in prompt_of(body) else "TERSE"


@pytest.fixture
def suite(tmp_path: Path, judge_server: FakeOpenAIServer) -> Path:
    (tmp_path / "targets.yaml").write_text(TARGETS.format(base_url=judge_server.base_url))
    path = tmp_path / "graded.eval.yaml"
    path.write_text(SUITE)
    return path


async def _run(suite: Path, judge: str, output: Path) -> Path:
    await convoeval.arun(suite, target=["polite", "terse"], judge=judge, output=output, cache=False, store=False)
    return output


async def test_judge_vs_judge_from_two_result_files(
    cli, suite: Path, judge_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    judge_server.judge = lambda body: _answer(body, *JUDGES[body["model"]][_bot(body)])
    a = await _run(suite, "judge", tmp_path / "a.jsonl")
    b = await _run(suite, "judge-b", tmp_path / "b.jsonl")

    # The pairs we expect: 2 tests x 2 turns of td-eval (3 dimensions, raw Likert) per bot, and
    # goal-completion per test and bot (0-10 binned into 1-5: 9 -> 5, 8 -> 4, 2 and 3 -> 2).
    expected = []
    for bot in ("POLITE", "TERSE"):
        likert_a, likert_b = JUDGES["fake-judge"][bot][0], JUDGES["fake-judge-b"][bot][0]
        expected += [[x, y] for x, y in zip(likert_a, likert_b, strict=True)] * 4
    expected += [[5, 4], [5, 4], [2, 2], [2, 2]]
    raw = [[(x - 1) / 4, (y - 1) / 4] for x, y in expected[:24]] + [[0.9, 0.8], [0.9, 0.8], [0.2, 0.3], [0.2, 0.3]]
    reference = agreement_estimates(expected, [1, 2, 3, 4, 5], "ordinal", bootstrap=0)

    code, out, err = cli("agreement", "--runs", a, b, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["items"] == 28 and report["only_a"] == 0 and report["only_b"] == 0
    assert report["graders"] == {f"td-eval/{d}": 8 for d in DIMS} | {"goal-completion": 4}  # no icontains
    for name in (
        "percent_agreement",
        "gwet_ac1",
        "randolph_kappa",
        "cohen_kappa",
        "cohen_kappa_quadratic",
        "krippendorff_alpha_ordinal",
        "spearman",
    ):
        assert report["statistics"][name]["value"] == pytest.approx(reference[name].value), name
    assert report["statistics"]["percent_agreement"]["value"] == pytest.approx(18 / 28)
    rho = scipy_stats.spearmanr([x for x, _ in raw], [y for _, y in raw]).statistic
    assert report["spearman_scores"]["value"] == pytest.approx(rho)

    code, out, err = cli("agreement", "--runs", a, b)
    assert code == 0, err
    assert "Gwet's AC1" in out and "Spearman's rho (0-1 scores)" in out and "goal-completion 4" in out

    verdicts = runs_agreement(read_results(a), read_results(b), ["pass", "fail"], "nominal", bootstrap=0)
    assert verdicts.items == 28 and "spearman" not in verdicts.estimates
    code, out, err = cli("agreement", "--runs", a, b, "--categories", "pass,fail", "--format", "json")
    assert code == 0, err
    assert json.loads(out)["level"] == "nominal"


async def test_judge_vs_judge_of_two_stored_runs(
    cli, suite: Path, judge_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """`--runs` and `--consistency` take runs of the store (`last`, `last~N`, a run id) as
    `report` and `compare` do, with the same figures as their results files."""
    judge_server.judge = lambda body: _answer(body, *JUDGES[body["model"]][_bot(body)])
    state = tmp_path / "state"
    reports = []
    for judge, name in (("judge", "a.jsonl"), ("judge-b", "b.jsonl")):
        reports.append(
            await convoeval.arun(
                suite, target=["polite", "terse"], judge=judge, output=tmp_path / name, cache=False,
                store=state / "runs.sqlite",
            )
        )  # fmt: skip
    code, out, err = cli("agreement", "--runs", "a.jsonl", "b.jsonl", "--format", "json")
    assert code == 0, err
    from_files = json.loads(out)
    code, out, err = cli("agreement", "--runs", "last~1", reports[1].run_id, "--store", state, "--format", "json")
    assert code == 0, err
    from_store = json.loads(out)
    assert from_store["runs"] == ["last~1", reports[1].run_id]
    assert {k: v for k, v in from_store.items() if k != "runs"} == {k: v for k, v in from_files.items() if k != "runs"}
    assert from_store["items"] == 28

    code, out, err = cli("agreement", "--runs", "last~1", "last", "--store", state)
    assert code == 0, err
    assert f"run {reports[0].run_id} and run {reports[1].run_id}" in " ".join(out.split())
    code, out, err = cli("agreement", "--consistency", "last~1", "last", "--store", state, "--format", "json")
    assert code == 0, err
    assert json.loads(out)["runs"] == 2
    code, out, err = cli("agreement", "--runs", "last", "no-such-run", "--store", state)
    assert code == 2 and "no-such-run: no such results file or run" in err


async def test_consistency_over_three_result_files(
    cli, suite: Path, judge_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    state = {"run": 0}
    policy = [5, 4, 5]  # the polite bot's policy compliance in runs 1-3
    goal = [9, 9, 7]

    def judge(body: dict[str, Any]) -> str:
        if _bot(body) == "TERSE":
            return _answer(body, (2, 2, 2), 2)
        run = state["run"]
        return _answer(body, (5, 5, policy[run]), goal[run])

    judge_server.judge = judge
    files = []
    for run in range(3):
        state["run"] = run
        files.append(await _run(suite, "judge", tmp_path / f"run{run}.jsonl"))

    code, out, err = cli("agreement", "--consistency", *files, "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    assert report["runs"] == 3
    graders = {g["grader"]: g for g in report["graders"]}
    assert set(graders) == {f"td-eval/{d}" for d in DIMS} | {"goal-completion"}

    polite = judge_consistency({"p": [(s - 1) / 4 for s in policy]})["p"]
    row = graders["td-eval/policy_compliance"]
    assert row["items"] == 8 and row["missing"] == 0
    assert row["max_std"] == pytest.approx(polite.std, abs=1e-6)
    assert row["mean_std"] == pytest.approx(polite.std / 2, abs=1e-6)  # 4 polite items vary, 4 terse do not
    assert row["mean"] == pytest.approx((polite.mean + 0.25) / 2, abs=1e-6)
    assert row["identical"] == 0.5
    assert (
        graders["td-eval/conversation_cohesion"]["max_std"] == 0
        and graders["td-eval/conversation_cohesion"]["identical"] == 1
    )
    goal_std = judge_consistency({"g": [g / 10 for g in goal]})["g"].std
    assert graders["goal-completion"]["max_std"] == pytest.approx(goal_std, abs=1e-6)
    assert math.isclose(goal_std, 0.11547, abs_tol=1e-5)
    item = next(
        i for i in report["items"] if i["item"] == "graded/late-order @ polite turn-1 td-eval/policy_compliance"
    )
    assert item["std"] == pytest.approx(polite.std) and item["n"] == 3

    code, out, err = cli("agreement", "--consistency", *files)
    assert code == 0, err
    assert "Judge consistency over 3 runs" in out and "td-eval/policy_compliance" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--runs", "a.jsonl"], "--runs compares two runs"),
        (["--consistency", "a.jsonl"], "--consistency needs two or more"),
        (["--runs", "--consistency", "a.jsonl", "b.jsonl"], "not both"),
        (["--runs", "a.jsonl", "b.jsonl"], "a.jsonl: file not found"),
        (["labels.csv", "other.csv", "--categories", "1-5"], "give one LABELS.csv file, got 2"),
        (["labels.csv"], "--categories"),
    ],
)
def test_agreement_input_errors(cli, args: list[str], message: str) -> None:
    code, out, err = cli("agreement", *args)
    assert code == 2 and "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ") and message in line, line


def test_runs_without_judge_scores(cli, tmp_path: Path) -> None:
    result = {
        "test_id": "t",
        "target": "x",
        "score": 1.0,
        "verdict": "pass",
        "execution_status": "ok",
        "threshold": 0.8,
        "scores": [
            {
                "name": "turn-1",
                "type": "turn",
                "score": 1.0,
                "verdict": "pass",
                "graders": [{"name": "contains", "type": "contains", "score": 1.0, "verdict": "pass"}],
            }
        ],
    }
    for name in ("a.jsonl", "b.jsonl"):
        (tmp_path / name).write_text(json.dumps(result) + "\n")
    code, out, err = cli("agreement", "--runs", "a.jsonl", "b.jsonl")
    assert code == 2 and "no judge grader scores in the runs" in err
