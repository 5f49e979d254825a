"""Budgets are loud: a tool-call limit reached in turn 1 ends the conversation with
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
    """Calls a tool once per user message seen so far, times three."""
    users = sum(m["role"] == "user" for m in messages)
    return {"text": "working", "tool_calls": [{"name": "bash", "arguments": {"n": i}} for i in range(3 * users)]}


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
