"""A Markdown summary for a CI job summary or a pull-request comment.

Text that comes from a model or a suite is escaped so that it cannot break the tables or
inject HTML into the page that renders the comment.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from pathlib import Path

from .._text import shorten
from ..results import EvaluationResult
from ._compare import Comparison
from ._failures import failed_checks, headline
from ._overview import Totals, fmt_duration, fmt_rate, fmt_score, overview

_ICON = {"pass": "✅", "fail": "❌", "error": "⚠️", "skip": "⏭️"}


def md_text(text: str, limit: int = 200) -> str:
    """Inline Markdown text: one line, HTML and table pipes escaped, at most `limit` characters."""
    text = shorten(str(text), limit, one_line=True)
    text = html.escape(text, quote=False)
    for char in "\\|`*_[]#":
        text = text.replace(char, "\\" + char)
    return text


def _totals_row(t: Totals) -> str:
    v = t.verdicts
    return (
        f"| {md_text(t.name)} | {t.tests} | {v['pass']} | {v['fail']} | {v['error']} | {v['skip']} | "
        f"{fmt_rate(t.pass_rate)} | {fmt_score(t.mean_score)} | ${t.cost_usd + t.judge_cost_usd:.4f} | "
        f"{t.tokens + t.judge_tokens:,} | {fmt_duration(t.duration_ms)} |"
    )


def markdown_summary(
    results: Iterable[EvaluationResult], *, title: str = "convoeval results", max_failures: int = 50
) -> str:
    """The run's totals per target, then every test that did not pass with its failed checks."""
    results = list(results)
    view = overview(results)
    total = view.total
    lines = [
        f"## {md_text(title)}",
        "",
        f"**{total.verdicts['pass']}/{total.tests} passed** ({fmt_rate(total.pass_rate)}), mean score "
        f"{fmt_score(total.mean_score)}, cost ${total.cost_usd + total.judge_cost_usd:.4f}",
        "",
        "| target | tests | pass | fail | error | skip | pass rate | mean score | cost | tokens | time |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_totals_row(t) for t in view.targets]
    if len(view.targets) > 1:
        lines.append(_totals_row(total))
    failing = [r for r in results if r.verdict != "pass"]
    if failing:
        lines += [
            "",
            f"### Not passed ({len(failing)})",
            "",
            "| | test | target | score | why |",
            "|---|---|---|---:|---|",
        ]
        for r in failing[:max_failures]:
            lines.append(
                f"| {_ICON.get(r.verdict, '')} {r.verdict} | {md_text(r.test_id)} | {md_text(r.target)} | "
                f"{fmt_score(r.score)} | {md_text(headline(r))} |"
            )
        for r in failing[:max_failures]:
            checks = [(e.name, e.verdict, line) for e in r.scores if e.verdict != "pass" for line in failed_checks(e)]
            if not checks:
                continue
            lines += ["", f"<details><summary>{md_text(r.test_id)} @ {md_text(r.target)}</summary>", ""]
            lines += [f"- **{md_text(name)}** ({verdict}): {md_text(line)}" for name, verdict, line in checks]
            lines += ["", "</details>"]
        if len(failing) > max_failures:
            lines += ["", f"… and {len(failing) - max_failures} more."]
    return "\n".join(lines) + "\n"


def markdown_comparison(comparison: Comparison, limit: int = 50) -> str:
    """A comparison of two runs: counts, then the changed tests, regressions first."""
    counts = comparison.counts
    lines = [
        f"## {md_text(comparison.name_b)} vs {md_text(comparison.name_a)}",
        "",
        " · ".join(f"{name} **{n}**" for name, n in counts.items()),
        "",
    ]
    changed: Sequence = [p for p in comparison.pairs if p.outcome != "tie"]
    if changed:
        lines += ["| outcome | test | target | before | after | change |", "|---|---|---|---:|---:|---:|"]
        for p in changed[:limit]:
            delta = "" if p.delta is None else f"{p.delta:+.2f}"
            lines.append(
                f"| {p.outcome} | {md_text(p.test_id)} | {md_text(p.target)} | {fmt_score(p.score_a)} | "
                f"{fmt_score(p.score_b)} | {delta} |"
            )
    return "\n".join(lines) + "\n"


def write_markdown(results: Iterable[EvaluationResult], path: str | Path, **options: object) -> Path:
    """Write `markdown_summary(results)` to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown_summary(results, **options), encoding="utf-8")  # type: ignore[arg-type]
    return path
