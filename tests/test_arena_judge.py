"""The pairwise judge and the arena through the Python API, against FakeOpenAIServer as judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import convoeval
from convoeval.errors import ConfigError
from convoeval.judging import JudgeError, judge_pair, load_pairwise_prompt, pairwise_schema
from convoeval.rank import leaderboard_from_battles, read_battles
from convoeval.results import Message
from convoeval.targets import TargetConfig, create_target
from convoeval.testing import FakeOpenAIServer

from .arena_fakes import (  # noqa: F401  (fixtures)
    arena_server,
    conversations,
    desk,
    fair_winner,
    is_pairwise,
    judge_server,
    pairwise_judge,
    prompt_of,
    shown,
    which_test,
)

A = [
    Message(role="user", content="Is it raining?", source="user", turn=1),
    Message(role="assistant", content="POLITE: yes, take an umbrella.", source="target", turn=1),
]
B = [
    Message(role="user", content="Is it raining?", source="user", turn=1),
    Message(role="assistant", content="TERSE: no.", source="target", turn=1),
]


async def _judge(server: FakeOpenAIServer):
    return create_target(
        TargetConfig(
            name="judge", provider="openai", model="fake-judge", base_url=server.base_url, api_key="k", max_retries=0
        )
    )


def _options(**extra):
    return dict(judge="judge", bootstrap=50, cache=False, store=False, **extra)


# --- the pairwise judge ---------------------------------------------------------------------


async def test_judge_pair_asks_structured_and_parses(judge_server: FakeOpenAIServer) -> None:
    judge = await _judge(judge_server)
    try:
        verdict = await judge_pair(
            judge,
            A,
            B,
            criteria="Answer the weather question",
            test_id="rain",
            policy={"rules": ["Be kind."]},
            backend={1: {"rain": True}},
        )
    finally:
        await judge.aclose()
    assert verdict.winner == "A" and verdict.calls == 1 and verdict.usage.total_tokens > 0
    [request] = judge_server.judge_requests()
    assert request["response_format"]["json_schema"]["schema"] == pairwise_schema()
    assert list(pairwise_schema()["properties"]) == ["reasoning", "winner"]  # reasoning first
    prompt = prompt_of(request)
    assert "Goal of the test: Answer the weather question" in prompt and "- Be kind." in prompt
    assert 'turn 1: {"rain": true}' in prompt
    assert "Conversation cohesion" in prompt and "Backend knowledge consistency" in prompt
    assert "Policy compliance" in prompt
    assert conversations(request)["A"].endswith("[turn 1] assistant: POLITE: yes, take an umbrella.")


@pytest.mark.parametrize("bad", ["a", "TIE", "Both", "equal"])
async def test_judge_pair_malformed_label_after_reask_is_an_error(judge_server: FakeOpenAIServer, bad: str) -> None:
    judge_server.judge = pairwise_judge(lambda body: bad)
    judge = await _judge(judge_server)
    try:
        with pytest.raises(JudgeError, match="unparseable after a re-ask") as caught:
            await judge_pair(judge, A, B)
    finally:
        await judge.aclose()
    assert caught.value.calls == 2 and caught.value.usage.total_tokens > 0  # type: ignore[attr-defined]
    first, second = judge_server.judge_requests()
    assert "Your answer could not be used: winner:" in second["messages"][-1]["content"]


async def test_judge_pair_reask_recovers(judge_server: FakeOpenAIServer) -> None:
    answers = iter(['{"winner": "B"}', json.dumps({"reasoning": "B is kinder", "winner": "B"})])
    judge_server.judge = lambda body: next(answers)
    judge = await _judge(judge_server)
    try:
        verdict = await judge_pair(judge, A, B)
    finally:
        await judge.aclose()
    assert (verdict.winner, verdict.reasoning, verdict.calls) == ("B", "B is kinder", 2)


def test_custom_prompt_file_or_text(tmp_path: Path) -> None:
    path = tmp_path / "pair.md"
    path.write_text("Test {{ test_id }}: {{ criteria }}\nA: {{ conversation_a }}\nB: {{ conversation_b }}")
    assert load_pairwise_prompt(str(path)).startswith("Test {{ test_id }}")
    assert load_pairwise_prompt("pair.md", base_dir=tmp_path) == path.read_text()
    assert load_pairwise_prompt("Which is better? {{ conversation_a }} or {{ conversation_b }}")
    with pytest.raises(ValueError, match="unknown template variable.*output"):
        load_pairwise_prompt("{{ output }}")
    with pytest.raises(ValueError, match="cannot be read"):
        load_pairwise_prompt("missing.md", base_dir=tmp_path)


# --- the arena --------------------------------------------------------------------------------


async def test_arena_asks_both_orders_and_rates(desk: Path, judge_server: FakeOpenAIServer) -> None:
    judged = []
    report = await convoeval.aarena(desk, targets=["polite", "terse"], on_judgment=judged.append, **_options())
    pairwise = [b for b in judge_server.judge_requests() if is_pairwise(b)]
    assert len(pairwise) == 6  # 3 tests x 1 pair x 2 orders
    orders: dict[str, set[tuple[str, str]]] = {}
    for body in pairwise:
        orders.setdefault(which_test(body), set()).add(shown(body))
    assert orders == {t: {("POLITE", "TERSE"), ("TERSE", "POLITE")} for t in ("late-order", "refund", "address")}
    late = next(b for b in pairwise if which_test(b) == "late-order")
    assert "Goal of the test: The user learns when the late order arrives." in prompt_of(late)
    assert "- Ask for the order number first." in prompt_of(late)  # the suite's policy
    assert 'turn 2: {"order": "NW-1", "arrives": "Thursday"}' in prompt_of(late)  # backend by turn
    assert len(judged) == 3 and all(j.ok and j.consistent for j in judged)
    assert report.order_disagreement_rate == 0.0
    assert [(b.model_a, b.model_b, b.winner) for b in report.battles] == [("polite", "terse", "model_a")] * 3
    polite, terse = report.rows()
    assert (polite["target"], polite["wins"], polite["losses"], polite["ties"]) == ("polite", 3, 0, 0)
    assert polite["turn_mean"] == 1.0 and terse["turn_mean"] == 0.0  # turn level beside the ratings
    assert (polite["tests"], polite["passed"], terse["passed"]) == (3, 3, 0)
    assert report.judge == "judge" and report.judge_calls == 6 and report.judge_errors == 0


async def test_order_disagreement_is_a_tie_and_counted(desk: Path, judge_server: FakeOpenAIServer) -> None:
    # Position bias on "refund" only: the judge always prefers the conversation shown first.
    judge_server.judge = pairwise_judge(lambda body: "A" if which_test(body) == "refund" else fair_winner(body))
    report = await convoeval.aarena(desk, targets=["polite", "middle", "terse"], **_options())
    assert len(report.judgments) == 9  # 3 tests x 3 pairs
    refund = [j for j in report.judgments if j.test_id == "refund"]
    assert all(j.consistent is False and j.winner == "tie" for j in refund)
    assert all(j.consistent and j.winner == "model_a" for j in report.judgments if j.test_id != "refund")
    assert report.disagreements == 3
    assert report.order_disagreement_rate == pytest.approx(3 / 9)
    assert report.to_dict()["order_disagreement_rate"] == pytest.approx(1 / 3)
    assert sum(row["ties"] for row in report.rows()) == 6  # each tie counts for both targets


async def test_malformed_label_is_an_error_not_a_tie(desk: Path, judge_server: FakeOpenAIServer) -> None:
    judge_server.judge = pairwise_judge(lambda body: "TIE" if which_test(body) == "address" else fair_winner(body))
    report = await convoeval.aarena(desk, targets=["polite", "terse"], **_options())
    [failed] = [j for j in report.judgments if not j.ok]
    assert failed.test_id == "address" and failed.battle() is None and len(failed.errors) == 2
    assert report.judge_errors == 2 and report.failed_pairs == 1
    assert len(report.battles) == 2 and all(b.winner == "model_a" for b in report.battles)
    assert all(row["ties"] == 0 for row in report.rows())
    data = report.to_dict()
    assert data["judge_errors"] == 2 and data["battles"] == 2 and "address" in data["errors"][0]
    assert "judge call(s) failed" in data["warnings"][0]
    address_calls = [b for b in judge_server.judge_requests() if is_pairwise(b) and which_test(b) == "address"]
    assert len(address_calls) == 4  # two orders, each re-asked once
    assert report.judge_calls == 8


async def test_ratings_equal_leaderboard_from_battles(
    desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    # A judge with a cycle on "address" (terse beats polite), so every rating is finite.
    def decide(body):
        if which_test(body) == "address" and set(shown(body)) == {"POLITE", "TERSE"}:
            return "A" if shown(body)[0] == "TERSE" else "B"
        return fair_winner(body)

    judge_server.judge = pairwise_judge(decide)
    battles_file = tmp_path / "out" / "battles.jsonl"
    report = await convoeval.aarena(
        desk, targets=["polite", "middle", "terse"], k=16, seed=3, output=battles_file, **_options()
    )
    expected = leaderboard_from_battles(report.battles, k=16, bootstrap=50, seed=3)
    assert report.leaderboard == expected
    assert report.leaderboard.mle_exists
    assert read_battles(battles_file) == report.battles  # the -o file round-trips
    first = json.loads(battles_file.read_text().splitlines()[0])
    assert first["model_a"] == "polite" and first["model_b"] == "middle" and first["winner"] == "model_a"
    assert first["question_id"] == "desk/late-order" and first["judge"] == "judge"
    assert first["judgments"] == {"a_first": "A", "b_first": "B"} and first["consistent"] is True


async def test_arena_from_stored_results(desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path) -> None:
    stored = tmp_path / "results.jsonl"
    await convoeval.arun(desk, target=["polite", "middle", "terse"], output=stored, cache=False, store=False)
    judge_server.requests.clear()
    report = await convoeval.aarena(
        results=[stored], targets=["polite", "terse"], targets_file=desk.parent / "targets.yaml", **_options()
    )
    assert judge_server.target_requests() == []  # nothing re-ran
    pairwise = [b for b in judge_server.judge_requests() if is_pairwise(b)]
    assert len(pairwise) == 6 and not any("MIDDLE" in prompt_of(b) for b in pairwise)
    assert "Goal of the test" not in prompt_of(pairwise[0])  # results carry no criteria
    assert [row["target"] for row in report.rows()] == ["polite", "terse"]
    everyone = await convoeval.aarena(results=stored, targets_file=desk.parent / "targets.yaml", **_options())
    assert len(everyone.judgments) == 9


async def test_arena_skips_a_failed_simulator_but_judges_a_test_that_ran_into_its_budget(
    desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """A conversation its simulated user broke is not the target's to lose; one that ran into
    the test's own `budget:` ran, and is judged (the old code did the reverse)."""
    stored = tmp_path / "results.jsonl"
    await convoeval.arun(desk, target=["polite", "terse"], output=stored, cache=False, store=False)
    rows = [json.loads(line) for line in stored.read_text().splitlines()]
    for row in rows:
        if row["target"] == "terse" and row["test_id"] == "late-order":
            row.update(verdict="error", score=None, execution_status="simulator_error", error="role break")
        if row["target"] == "terse" and row["test_id"] == "refund":
            row.update(verdict="fail", execution_status="budget_exhausted", budget_hit="tool_calls=3 at turn 1")
    stored.write_text("".join(json.dumps(row) + "\n" for row in rows))
    report = await convoeval.aarena(results=[stored], targets_file=desk.parent / "targets.yaml", **_options())
    assert {j.test_id for j in report.judgments} == {"refund", "address"}
    assert report.skipped == ["desk/late-order polite vs terse: did not run for terse"]


async def test_arena_input_errors(desk: Path, tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="at least two different targets"):
        await convoeval.aarena(desk, targets=["polite", "polite"], **_options())
    with pytest.raises(ConfigError, match="not both"):
        await convoeval.aarena(desk, results=[desk], targets=["polite", "terse"], **_options())
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"test_id": "x"}\n')
    with pytest.raises(ConfigError, match=r"bad.jsonl:1: not a convoeval result"):
        await convoeval.aarena(results=[bad], **_options())
    with pytest.raises(ConfigError, match="pairwise prompt: unknown template variable"):
        await convoeval.aarena(desk, targets=["polite", "terse"], prompt="{{ nope }}", **_options())
