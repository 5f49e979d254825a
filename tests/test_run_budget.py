"""Budgets are loud: a tool-call limit gone over in turn 1 ends the conversation with
`budget_exhausted` naming the budget, and the run summary warns when most tests hit it."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console

import convoeval
from convoeval.report import print_summary

from .conftest import write

SUITE = """\
tests:
%s
"""

TEST = """\
  - id: t%d
    mode: conversation
    budget: {turn: {tool_calls: 3}%s}
    turns:
      - {input: one}
      - {input: two}
"""


async def busy_agent(messages: list[dict]) -> dict:
    """Calls a tool four times per user message seen so far: one more than the budget's 3."""
    users = sum(m["role"] == "user" for m in messages)
    return {"text": "working", "tool_calls": [{"name": "bash", "arguments": {"n": i}} for i in range(4 * users)]}


def run(tmp_path: Path, text: str) -> list:
    path = write(tmp_path / "b.eval.yaml", text)
    return list(convoeval.run(path, target=busy_agent, judge="scripted", cache=False).results)


def test_a_turn_budget_reached_in_turn_1_is_budget_exhausted_and_warned(tmp_path: Path) -> None:
    results = run(tmp_path, SUITE % "".join(TEST % (i, "") for i in range(3)))
    first = results[0]
    assert first.execution_status == "budget_exhausted" and first.verdict == "fail"
    assert first.budget_hit == "tool_calls=3 at turn 1"
    assert len([m for m in first.output if m.source == "target"]) == 1  # turn 2 was never sent
    assert first.scores[1].verdict == "skip" and "budget exhausted: tool_calls=3 at turn 1" in (
        first.scores[1].note or ""
    )
    console = Console(record=True, width=200)
    print_summary(results, console)
    text = console.export_text()
    assert "3 test(s) ended on a budget" in text
    assert "3/3 tests hit tool_calls=3 at turn 1; the budget may be too low" in text


def test_on_budget_continue_sends_every_turn_but_is_still_not_completed(tmp_path: Path) -> None:
    results = run(tmp_path, SUITE % (TEST % (0, ", on_budget: continue")))
    assert len([m for m in results[0].output if m.source == "target"]) == 2
    assert results[0].execution_status == "budget_exhausted"


def test_a_conversation_budget_counts_every_turn(tmp_path: Path) -> None:
    results = run(
        tmp_path, SUITE % (TEST % (0, "")).replace("{turn: {tool_calls: 3}}", "{conversation: {tool_calls: 8}}")
    )
    assert results[0].budget_hit == "tool_calls=8 per conversation at turn 2"


def test_within_budget_nothing_is_said(tmp_path: Path) -> None:
    results = run(tmp_path, SUITE % (TEST % (0, "")).replace("tool_calls: 3", "tool_calls: 100"))
    assert results[0].execution_status == "ok" and results[0].budget_hit is None


def exact_agent(messages: list[dict]) -> dict:
    """Three tool calls a turn, 15 tokens, $0.01: exactly the budget of `EXACT`."""
    calls = [{"name": "bash", "arguments": {"n": i}} for i in range(3)]
    return {"text": "done", "tool_calls": calls, "usage": {"input_tokens": 10, "output_tokens": 5}, "cost_usd": 0.01}


EXACT = """\
tests:
  - id: exact
    budget: {turn: {tool_calls: 3, tokens: 15, cost_usd: 0.01}}
    input: one
"""


def test_using_exactly_the_budget_stays_within_it(tmp_path: Path) -> None:
    path = write(tmp_path / "b.eval.yaml", EXACT)
    result = convoeval.run(path, target=exact_agent, judge="scripted", cache=False).results[0]
    assert result.execution_status == "ok" and result.budget_hit is None, result.error


def test_a_budget_the_target_gives_no_measure_of_is_an_error_never_a_pass(tmp_path: Path) -> None:
    """No usage reported under a token budget, no price under a cost budget: the budget cannot be
    checked, so the test is an execution error (the old code passed both)."""
    tokens = write(tmp_path / "t.eval.yaml", "tests:\n  - id: t\n    budget: {turn: {tokens: 100}}\n    input: hi\n")
    result = convoeval.run(tokens, target=lambda m: "a long reply", judge="scripted", cache=False).results[0]
    assert result.execution_status == "execution_error" and result.verdict == "error"
    assert "budget tokens cannot be checked: the target reported no token usage" in (result.error or "")
    cost = write(
        tmp_path / "c.eval.yaml", "tests:\n  - id: c\n    budget: {conversation: {cost_usd: 1}}\n    input: hi\n"
    )
    unpriced = {"text": "a reply", "usage": {"input_tokens": 9, "output_tokens": 9}}
    result = convoeval.run(cost, target=lambda m: unpriced, judge="scripted", cache=False).results[0]
    assert result.execution_status == "execution_error"
    assert "budget cost_usd per conversation cannot be checked: the target has no prices" in (result.error or "")


RAN_INTO_ITS_BUDGET = """\
tests:
  - id: hog
    mode: conversation
    budget: {turn: {tool_calls: 3}}
    turns: [{input: one}]
  - id: next
    depends_on: hog
    on_dependency_failure: run
    input: go on
"""


def test_a_test_that_ran_into_its_own_budget_ran(tmp_path: Path) -> None:
    """Its status is `budget_exhausted`, as a test the run's `--max-cost` left out, but it ran:
    a resumed run does not run it again, and a dependent counts it as failed, not "not
    started" (the old code re-ran it and skipped the dependent for a --max-cost never given)."""
    path = write(tmp_path / "b.eval.yaml", RAN_INTO_ITS_BUDGET)
    calls: list[str] = []

    def agent(messages: list[dict]) -> dict:
        calls.append(messages[-1]["content"])
        return busy_agent(messages)

    store = tmp_path / "runs.sqlite"
    first = convoeval.run(path, target=agent, judge="scripted", cache=False, store=store)
    hog, dependent = first.results
    assert hog.execution_status == "budget_exhausted" and hog.verdict == "fail"
    assert dependent.execution_status == "ok" and calls == ["one", "go on"]
    assert first.summary["not_started"] == 0
    again = convoeval.run(target=agent, judge="scripted", cache=False, store=store, resume="last")
    assert calls == ["one", "go on"] and [r.verdict for r in again.results] == ["fail", "pass"]
