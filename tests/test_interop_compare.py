"""The data of the compare page: turns paired across two runs, the first divergence, changed
verdicts, and big runs without their unchanged ties."""

from __future__ import annotations

import json

from convoeval.report import compare_results, render_comparison
from convoeval.report._compare_view import pair_views
from convoeval.results import EvaluationResult


def conversation(test_id: str, replies: list[str], verdicts: list[str]) -> EvaluationResult:
    output = [{"role": "system", "content": "Be brief.", "source": "input"}]
    for n, reply in enumerate(replies, start=1):
        output += [
            {"role": "user", "content": f"question {n}", "source": "user", "turn": n},
            {"role": "assistant", "content": reply, "source": "target", "turn": n},
        ]
    scores = [
        {"name": f"turn-{n}", "type": "turn", "score": 1.0 if v == "pass" else 0.0, "verdict": v}
        for n, v in enumerate(verdicts, start=1)
    ]
    verdict = "pass" if all(v == "pass" for v in verdicts) else "fail"
    return EvaluationResult.model_validate(
        {
            "test_id": test_id,
            "target": "bot",
            "suite": "s",
            "mode": "conversation",
            "score": sum(s["score"] for s in scores) / len(scores),
            "verdict": verdict,
            "execution_status": "ok" if verdict == "pass" else "quality_failure",
            "threshold": 0.8,
            "scores": scores,
            "output": output,
        }
    )


def test_first_divergence_and_changed_verdicts() -> None:
    a = [conversation("t", ["same", "A two", "A three"], ["pass", "pass", "pass"])]
    b = [conversation("t", ["same", "B two", "B three"], ["pass", "pass", "fail"])]
    (view,) = pair_views(compare_results(a, b), a, b)
    assert [r.turn for r in view.rows] == [None, 1, 2, 3]
    assert view.divergence == 2  # turn 1 is the same, turn 2 is the first that differs
    assert [r.first_divergence for r in view.rows] == [False, False, True, False]
    assert view.changed_turns == [3]
    assert [m.content for m in view.rows[2].a.messages] == ["question 2", "A two"]
    assert [m.content for m in view.rows[2].b.messages] == ["question 2", "B two"]


def test_same_conversations_do_not_diverge_and_new_tests_have_one_side() -> None:
    a = [conversation("t", ["x"], ["pass"])]
    b = [conversation("t", ["x"], ["pass"]), conversation("u", ["y"], ["fail"])]
    views = {v.pair.test_id: v for v in pair_views(compare_results(a, b), a, b)}
    assert views["t"].divergence is None and views["t"].changed_turns == []
    assert views["u"].a is None and views["u"].divergence is None
    assert views["u"].rows[1].b.entry is not None and views["u"].rows[1].a.messages == []


def test_big_comparisons_leave_out_unchanged_ties() -> None:
    a = [conversation(f"t{n}", ["x"], ["pass"]) for n in range(210)]
    b = [conversation(f"t{n}", ["x" if n else "changed"], ["pass" if n else "fail"]) for n in range(210)]
    page = render_comparison(compare_results(a, b), results_a=a, results_b=b)
    assert page.count('<details class="pair') == 1
    assert "209 tied test(s) whose turns kept their verdicts are not shown" in page


def test_compare_json_names_the_divergent_turn(cli, tmp_path) -> None:
    from .report_data import write_results

    a = write_results(tmp_path / "a.jsonl", [conversation("t", ["same", "A two"], ["pass", "pass"])])
    b = write_results(tmp_path / "b.jsonl", [conversation("t", ["same", "B two"], ["pass", "fail"])])
    code, out, err = cli("compare", a, b, "--format", "json")
    assert code == 0, err
    (pair,) = json.loads(out)["pairs"]
    assert pair["outcome"] == "loss" and pair["diverges_at_turn"] == 2 and pair["verdict_changed_turns"] == [2]
