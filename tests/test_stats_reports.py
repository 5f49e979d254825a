"""Intervals in the reports a person reads (terminal, Markdown, HTML), per target and per suite,
with the numbers the reference implementation gives."""

from __future__ import annotations

import io

from rich.console import Console
from statsmodels.stats.proportion import proportion_confint

from convoeval.report import markdown_summary, print_summary, render_report
from convoeval.results import EvaluationResult


def results() -> list[EvaluationResult]:
    """Suite `alpha`: 7 of 10 pass on `bot`; suite `beta`: 2 of 5 pass on `other`."""
    made = []
    for i in range(15):
        suite, target = ("alpha.eval.yaml", "bot") if i < 10 else ("beta.eval.yaml", "other")
        passed = i < 7 or 10 <= i < 12
        made.append(
            EvaluationResult(
                test_id=f"t{i}",
                target=target,
                suite=suite,
                score=0.9 if passed else 0.3,
                verdict="pass" if passed else "fail",
                execution_status="ok" if passed else "quality_failure",
                threshold=0.8,
            )
        )
    return made


def wilson(c: int, n: int) -> str:
    low, high = proportion_confint(c, n, alpha=0.05, method="wilson")
    return f"{c / n:.0%} [{low:.0%}, {high:.0%}]"


def test_every_report_gives_the_wilson_interval_per_target_and_suite() -> None:
    data = results()
    console = Console(file=io.StringIO(), width=200)
    print_summary(data, console, turns=False)
    terminal = console.file.getvalue()  # type: ignore[attr-defined]
    markdown = markdown_summary(data)
    html = render_report(data)
    for c, n in ((9, 15), (7, 10), (2, 5)):
        assert wilson(c, n) in terminal and wilson(c, n) in markdown
        low, high = proportion_confint(c, n, alpha=0.05, method="wilson")
        assert f"{wilson(c, n)}" in html or f"{low:.0%} to {high:.0%}" in html
    assert "bot: pass rate " + wilson(7, 10) in terminal and "alpha: pass rate " + wilson(7, 10) in terminal
    assert "| alpha | 10 | " + wilson(7, 10) in markdown and 'id="per-suite"' in html
    assert "seeded bootstrap" in terminal and "bootstrap" in markdown
