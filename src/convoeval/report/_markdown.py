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
from ..stats import GroupRates, fmt_interval, group_rates, rates_by
from ._compare import Comparison, significance_lines
from ._failures import failed_checks, headline
from ._overview import Totals, fmt_duration, fmt_score, overview, suite_name

_ICON = {"pass": "✅", "fail": "❌", "error": "⚠️", "skip": "⏭️"}


def html_text(text: str, limit: int = 200) -> str:
    """Text in an HTML block, where GitHub shows Markdown escapes as typed: one line, HTML escaped."""
    return html.escape(shorten(str(text), limit, one_line=True), quote=False)


def md_text(text: str, limit: int = 200) -> str:
    """Inline Markdown text: one line, HTML and table pipes escaped, at most `limit` characters."""
    text = html_text(text, limit)
    for char in "\\|`*_[]#":
        text = text.replace(char, "\\" + char)
    return text


def _totals_row(t: Totals, rates: GroupRates) -> str:
    v = t.verdicts
    return (
        f"| {md_text(t.name)} | {t.tests} | {v['pass']} | {v['fail']} | {v['error']} | {v['skip']} | "
        f"{fmt_interval(rates.pass_rate, percent=True)} | {fmt_interval(rates.mean_score)} | "
        f"${t.spent_usd:.4f} | {t.all_tokens:,} | {fmt_duration(t.duration_ms)} |"
    )


def _trial_rows(groups: Sequence[GroupRates]) -> list[str]:
    """Trial pass rate and pass@k / pass^k (largest k) with intervals, per group with trials."""
    rows = [g for g in groups if g.trial_pass_rate is not None]
    if not rows:
        return []
    lines = ["", "| trials of | trial pass rate | pass@k | pass^k |", "|---|---:|---:|---:|"]
    for g in rows:
        k = max(g.pass_at_k, key=int) if g.pass_at_k else None
        at = f"k={k}: {fmt_interval(g.pass_at_k[k])}" if k else "-"
        hat = f"k={k}: {fmt_interval(g.pass_hat_k[k])}" if k else "-"
        lines.append(f"| {md_text(g.name)} | {fmt_interval(g.trial_pass_rate, percent=True)} | {at} | {hat} |")
    return lines


def markdown_summary(
    results: Iterable[EvaluationResult], *, title: str = "convoeval results", max_failures: int = 50
) -> str:
    """The run's totals per target, then every test that did not pass with its failed checks."""
    results = list(results)
    view = overview(results)
    total = view.total
    overall = group_rates("all", results)
    by_target = {g.name: g for g in rates_by(results, "target")}
    lines = [
        f"## {md_text(title)}",
        "",
        f"**{total.verdicts['pass']}/{total.tests} passed** ({fmt_interval(overall.pass_rate, percent=True)}), "
        f"mean score {fmt_interval(overall.mean_score)}, cost ${total.spent_usd:.4f}"
        + (f" ({total.unpriced_turns} turn(s) of no known price counted as $0)" if total.unpriced_turns else ""),
        "",
        "| target | tests | pass | fail | error | skip | pass rate | mean score | cost | tokens | time |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    lines += [_totals_row(t, by_target[t.name]) for t in view.targets]
    if len(view.targets) > 1:
        lines.append(_totals_row(total, overall))
    suites = rates_by(results, suite_name)
    if len(suites) > 1:
        lines += ["", "| suite | tests | pass rate | mean score |", "|---|---:|---:|---:|"]
        lines += [
            f"| {md_text(g.name)} | {g.pass_rate.n_items} | {fmt_interval(g.pass_rate, percent=True)} | "
            f"{fmt_interval(g.mean_score)} |"
            for g in suites
        ]
    lines += _trial_rows(
        [overall, *(by_target.values() if len(by_target) > 1 else []), *(suites if len(suites) > 1 else [])]
    )
    lines += ["", "_95% intervals: Wilson for pass rates, seeded bootstrap for mean scores._"]
    flaky = [r for r in results if r.pass_rate and 0 < r.pass_rate.passes < r.pass_rate.trials]
    if flaky:
        lines += ["", f"### Flaky ({len(flaky)}): the verdict varied across trials", ""]
        lines += ["| test | target | trials passed | pass rate |", "|---|---|---:|---:|"]
        for r in flaky[:max_failures]:
            rate = r.pass_rate
            assert rate is not None
            lines.append(
                f"| {md_text(r.test_id)} | {md_text(r.target)} | {rate.passes}/{rate.trials} | "
                f"{rate.value:.0%} [{rate.low:.0%}, {rate.high:.0%}] |"
            )
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
            lines += ["", f"<details><summary>{html_text(r.test_id)} @ {html_text(r.target)}</summary>", ""]
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
        f"**{'❌ ' if comparison.failed else ''}{md_text(comparison.verdict_line(), 500)}**",
        "",
        " · ".join(f"{name} **{n}**" for name, n in counts.items()),
        "",
    ]
    lines += [f"- {md_text(line, 500)}" for line in significance_lines(comparison)]
    lines += [""] if comparison.significance else []
    changed: Sequence = [p for p in comparison.pairs if p.outcome != "tie" or p.flaky]
    if changed:
        lines += [
            "| outcome | test | target | before | after | change | trials passed | |",
            "|---|---|---|---:|---:|---:|---:|---|",
        ]
        for p in changed[:limit]:
            delta = "" if p.delta is None else f"{p.delta:+.2f}"
            flaky = f"flaky ({p.flaky_history})" if p.flaky_history else "flaky" if p.flaky else ""
            marks = " ".join(m for m in ("significant" if p.significant else "", flaky) if m)
            lines.append(
                f"| {p.outcome} | {md_text(comparison.test_name(p))} | {md_text(p.target)} | {fmt_score(p.score_a)} | "
                f"{fmt_score(p.score_b)} | {delta} | {p.rate('a')} → {p.rate('b')} | {marks} |"
            )
    return "\n".join(lines) + "\n"


def write_markdown(results: Iterable[EvaluationResult], path: str | Path, **options: object) -> Path:
    """Write `markdown_summary(results)` to `path`."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(markdown_summary(results, **options), encoding="utf-8")  # type: ignore[arg-type]
    return path
