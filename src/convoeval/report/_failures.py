"""What went wrong in a result, as plain lines: the failed turns and checks, grader errors."""

from __future__ import annotations

from .._text import shorten
from ..results import EvaluationResult, ScoreEntry, meets
from ._overview import fmt_score


def headline(result: EvaluationResult) -> str:
    """`score 0.40 < threshold 0.80 (fail)`, or the execution error, or the budget reached."""
    if result.execution_status == "execution_error":
        return f"execution error: {result.error or 'unknown'}"
    if result.execution_status == "budget_exhausted":
        reached = _budget_reached(result)
        if result.verdict == "skip":
            return f"skipped: {reached} (budget_exhausted)"
        return f"{reached}; {_score_line(result)} (budget_exhausted)"
    if result.verdict == "skip":
        return f"skipped{': ' + result.error if result.error else ''}"
    return _score_line(result)


def _score_line(result: EvaluationResult) -> str:
    relation = ">=" if result.score is not None and meets(result.score, result.threshold) else "<"
    return f"score {fmt_score(result.score)} {relation} threshold {result.threshold:g} ({result.verdict})"


def _budget_reached(result: EvaluationResult) -> str:
    """Which budget a `budget_exhausted` result reached, as the result tells it: the test's own
    budget (`budget_hit`), else the reason it was stopped (`error`: `not started: the suite's
    budget_usd ...`, `the run's --max-cost budget was reached during the conversation`), else a
    note naming a budget; `not run` only when no trial ran."""
    if result.budget_hit:
        return f"budget reached: {result.budget_hit}"
    if result.error:
        return result.error
    note = next((n for n in result.notes if "budget" in n), None)
    if note is not None:
        return note
    return "a budget was reached" if result.trials else "not run: a budget was reached"


def failed_checks(entry: ScoreEntry, limit: int = 300) -> list[str]:
    """One line per failed check or grader error of a turn (or of the conversation)."""
    lines: list[str] = []
    for grader in entry.graders:
        if grader.verdict == "error":
            lines.append(f"! {grader.name} ({grader.type}): could not decide: {_short(grader.error or '', limit)}")
            continue
        failed = [a for a in grader.assertions if not a.passed]
        for outcome in failed:
            evidence = f" - {_short(outcome.evidence, limit)}" if outcome.evidence else ""
            lines.append(f"x {_short(outcome.text, limit)}{evidence}")
        if not failed and grader.verdict == "fail":
            lines.append(f"x {grader.name} ({grader.type}) scored {fmt_score(grader.score)}")
    return lines


def failure_lines(result: EvaluationResult, limit: int = 300) -> list[str]:
    """The headline, then each turn that did not pass with its failed checks, indented."""
    lines = [f"{result.test_id} @ {result.target}: {headline(result)}"]
    for entry in result.scores:
        if entry.verdict == "pass":
            continue
        lines.append(f"  {entry.name}: {entry.verdict} (score {fmt_score(entry.score)})")
        lines.extend(f"    {line}" for line in failed_checks(entry, limit))
    lines.extend(f"  note: {note}" for note in result.notes)
    return lines


def _short(text: str, limit: int) -> str:
    return shorten(text, limit, one_line=True)
