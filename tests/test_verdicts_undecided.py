"""Verdicts an adversarial review found passing what could not be decided: a check naming a
variable its test captures but never set (its `not-` form passed), a turn whose only check (of
weight 0) could not decide, trials that could not decide beside one that passed, and a test
passing at the rounded score its failing turn held."""

from __future__ import annotations

import sys
from pathlib import Path

import convoeval
from convoeval.results import EvaluationResult

from .conftest import write

#: A code-grader that, per trial (`p`, `f` or `e` by the trial's number), scores 1, scores 0 or crashes.
BY_TRIAL = """\
import json, sys
plan = sys.argv[1].split(",")
act = plan[json.load(sys.stdin)["trial"] % len(plan)]
if act == "e":
    raise SystemExit("boom")
print(json.dumps({"score": 1.0 if act == "p" else 0.0}))
"""


def run(tmp_path: Path, tests: str) -> list[EvaluationResult]:
    write(tmp_path / "targets.yaml", 'targets:\n  - {name: bot, provider: scripted, default: "the answer is 42"}\n')
    write(tmp_path / "by_trial.py", BY_TRIAL)
    suite = write(tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n" + tests)
    return list(convoeval.run(suite, cache=False, store=False).results)


def test_a_check_naming_a_variable_never_captured_cannot_decide(tmp_path: Path) -> None:
    turns = (
        "    mode: conversation\n    turns:\n"
        "      - input: one\n        capture: {name: oid, regex: 'ORD-(\\d+)', on_missing: continue}\n"
        "      - input: two\n        assertions: [{type: ASSERTION, value: '{{ oid }}'}]\n"
    )
    tests = "".join(f"  - id: {kind}\n" + turns.replace("ASSERTION", kind) for kind in ("not-contains", "contains"))
    for result in run(tmp_path, tests):
        [grader] = result.scores[1].graders
        assert grader.verdict == "error", (result.test_id, grader)
        assert grader.error == "{{ oid }} was never captured, so this check cannot be decided"
        assert result.verdict == "error", result.test_id  # nothing else decided


def test_a_turn_whose_only_checks_weigh_0(tmp_path: Path) -> None:
    """A check of weight 0 reports and never scores; one that could not decide left the test
    passing, noted "the turn has no assertions"."""
    crash, fails = run(
        tmp_path,
        f"  - id: crash\n    input: hi\n    assertions: [{{type: code-grader, command: '{sys.executable} by_trial.py e', weight: 0}}]\n"
        "  - id: fails\n    input: hi\n    assertions: [{type: contains, value: zzz, weight: 0}]\n",
    )
    assert (crash.verdict, crash.scores[0].verdict) == ("error", "error"), crash.scores[0]
    assert (fails.verdict, fails.scores[0].verdict) == ("pass", "skip")
    assert fails.scores[0].note == "not graded: its checks all weigh 0 (a check of weight 0 reports, never scores)"


def test_trials_that_could_not_decide_leave_the_test_undecided_unless_it_is_decided_anyway(tmp_path: Path) -> None:
    cases = {  # the trials' outcomes, the strategy and threshold -> the verdict
        "eep": ("e,e,p", "mean", 0.8, "error"),  # the errors might have been fails
        "epp-low": ("e,p,p", "mean", 0.6, "pass"),  # 2/3 passes even if the error failed
        "eff": ("e,f,f", "mean", 0.5, "fail"),  # 1/3 at best
        "eff-at-k": ("e,f,f", "pass_at_k", 0.8, "error"),  # the error might have passed
        "efp-at-k": ("e,f,p", "pass_at_k", 0.8, "pass"),
    }
    tests = "".join(
        f"  - id: {name}\n    input: hi\n    execution: {{trials: {{count: 3, strategy: {strategy}}}, threshold: {threshold}}}\n"
        f"    assertions: [{{type: code-grader, command: '{sys.executable} by_trial.py {plan}'}}]\n"
        for name, (plan, strategy, threshold, _) in cases.items()
    )
    verdicts = {r.test_id: r.verdict for r in run(tmp_path, tests)}
    assert verdicts == {name: case[3] for name, case in cases.items()}


def test_a_test_passes_only_as_its_turn_does_at_the_decimals_a_result_holds(tmp_path: Path) -> None:
    """2 of 3 checks: the turn failed at 0.6666667 < 0.6666668, the test passed at its rounded 0.666667."""
    checks = "[{type: contains, value: zzz}, {type: contains, value: '42'}, {type: contains, value: answer}]"
    [result] = run(
        tmp_path, f"  - id: t\n    input: hi\n    execution: {{threshold: 0.6666668}}\n    assertions: {checks}\n"
    )
    assert result.verdict == result.scores[0].verdict, (result.verdict, result.scores[0].verdict)


def test_a_grader_that_could_not_start_leaves_the_test_undecided_never_passed(tmp_path: Path) -> None:
    """A missing program (AgentV's nlp-metrics without `bun`) was left out, and the passing
    `contains` beside it passed the test (exit 0), in convoeval's own eval files as in AgentV's
    (AgentV scores it 0 and fails the test; convoeval never turns an unfinished check into a
    verdict): 1 and ? against 0.8 is undecided."""
    tests = (
        "  - id: t\n    input: hi\n    assertions:\n      - {type: contains, value: answer}\n"
        "      - {type: code-grader, command: [no-such-program-7f3a]}\n"
    )
    [own] = run(tmp_path, tests)
    (tmp_path / ".agentv").mkdir()  # the file is AgentV's from now on
    [agentv] = run(tmp_path, tests)
    for result in (own, agentv):
        assert (result.verdict, result.score, result.execution_status) == ("error", None, "undecided")
        assert "no-such-program-7f3a" in (result.error or ""), result.error
