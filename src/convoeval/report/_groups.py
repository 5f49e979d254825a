"""Results grouped by a metadata field (`convoeval report RUN --by category`), and tau-bench's pass^k.

One row per value of the field (tests without it under `(none)`), then `all`: the tests, their
verdicts, the mean test score, the mean score of each turn (turn 1, turn 2, ...: MT-Bench's
per-turn table), the mean over every graded turn (`turns mean`: MT-Bench's "Average", which
leaves out a turn whose judge failed as FastChat's show_result.py drops a -1 score) and, for
tests with several trials, pass^k averaged over the tests as
tau-bench reports it. The field is a key of the results' `metadata` (a dotted path reaches
into nested mappings), or `target` / `suite`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from rich.table import Table

from ..results import Accounting, EvaluationResult

NO_VALUE = "(none)"


@dataclass
class Group:
    """The results of one value of the field."""

    value: str
    results: list[EvaluationResult] = field(default_factory=list)

    def count(self, verdict: str) -> int:
        return sum(r.verdict == verdict for r in self.results)

    @property
    def mean_score(self) -> float | None:
        return _mean(r.score for r in self.results)

    def turn_scores(self, turns: int) -> list[list[float]]:
        """The scores of turn 1..`turns` over the group's tests, each trial's (a test's own
        `scores` are its first trial's; turns not graded left out)."""
        by_turn: list[list[float]] = [[] for _ in range(turns)]
        for run in (run for r in self.results for run in _runs(r)):
            for number, entry in enumerate((e for e in run.scores if e.type == "turn"), start=1):
                if number <= turns and entry.score is not None:
                    by_turn[number - 1].append(entry.score)
        return by_turn

    def turn_means(self, turns: int) -> list[float | None]:
        """The mean score of turn 1..`turns` over the group's tests (turns not graded left out)."""
        return [_mean(scores) for scores in self.turn_scores(turns)]

    def turns_mean(self, turns: int) -> float | None:
        """The mean over every graded turn of the group's tests: MT-Bench's "Average"."""
        return _mean(score for scores in self.turn_scores(turns) for score in scores)

    def pass_hat_k(self) -> dict[int, float]:
        """pass^k averaged over the group's tests, for k up to the fewest trials a test ran, as
        tau2's `get_metrics_df` sets its max k (a test left with one trial, as tau2 leaves a task
        whose other simulations never ran, leaves k=1); none unless a test ran several trials."""
        if not any(len(r.trials) > 1 for r in self.results):
            return {}
        rated = [r.pass_hat_k for r in self.results if r.pass_hat_k]
        most = min(len(hats) for hats in rated)
        return {k: math.fsum(hats[str(k)] for hats in rated) / len(rated) for k in range(1, most + 1)}


def _runs(result: EvaluationResult) -> Sequence[Accounting]:
    """The trials of a test (its own `scores` are its first trial's), or the test itself."""
    return result.trials or [result]


def field_value(result: EvaluationResult, name: str) -> str:
    """The value of `name` for one result, as text (`(none)` when it has none)."""
    if name in ("target", "suite"):
        return str(getattr(result, name) or NO_VALUE)
    value: object = result.metadata
    for part in name.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return NO_VALUE if value is None or isinstance(value, (dict, list)) else str(value)


def group_results(results: Iterable[EvaluationResult], name: str) -> list[Group]:
    """The groups of `results` by `name`, in the order values first appear, then `all`."""
    groups: dict[str, Group] = {}
    everything = Group("all")
    for r in results:
        groups.setdefault(field_value(r, name), Group(field_value(r, name))).results.append(r)
        everything.results.append(r)
    return [*groups.values(), everything]


def turn_count(groups: list[Group]) -> int:
    """The last turn that has a score in some result: a column per turn up to it (a recorded
    tau-bench run, graded only on the conversation, has none)."""
    return max(
        (
            number
            for g in groups
            for r in g.results
            for run in _runs(r)
            for number, entry in enumerate((e for e in run.scores if e.type == "turn"), start=1)
            if entry.score is not None
        ),
        default=0,
    )


def _columns(groups: list[Group], name: str) -> tuple[list[str], list[list[str]]]:
    turns = turn_count(groups)
    ks = sorted({k for g in groups for k in g.pass_hat_k()})
    header = [name, "tests", "pass", "fail", "error", "skip", "mean score"]
    header += [f"turn {t}" for t in range(1, turns + 1)] + (["turns mean"] if turns else [])
    header += [f"pass^{k}" for k in ks]
    rows = []
    for g in groups:
        hats = g.pass_hat_k()
        row = [g.value, str(len(g.results)), *(str(g.count(v)) for v in ("pass", "fail", "error", "skip"))]
        row += [_fmt(g.mean_score), *(_fmt(s) for s in g.turn_means(turns))]
        row += [_fmt(g.turns_mean(turns))] if turns else []
        row += [_fmt(hats.get(k)) for k in ks]
        rows.append(row)
    return header, rows


def groups_table(groups: list[Group], name: str) -> Table:
    """The groups as a rich table (terminal)."""
    header, rows = _columns(groups, name)
    table = Table(title=f"results by {name}", title_justify="left", header_style="bold")
    for i, column in enumerate(header):
        table.add_column(column, justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def groups_markdown(groups: list[Group], name: str) -> str:
    """The groups as a Markdown table, with its heading."""
    header, rows = _columns(groups, name)
    lines = [f"### Results by {_md(name)}", "", "| " + " | ".join(_md(h) for h in header) + " |"]
    lines.append("|---|" + "---:|" * (len(header) - 1))
    lines += ["| " + " | ".join(_md(c) for c in row) + " |" for row in rows]
    return "\n".join(lines) + "\n"


def groups_html(groups: list[Group], name: str) -> str:
    """The groups as an HTML section (escaped) for the HTML report."""
    import html  # with its table of entities: a run's summary does without it

    header, rows = _columns(groups, name)
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<section class="panel" id="by-{html.escape(name, quote=True)}"><h2>Results by {html.escape(name)}</h2>'
        f'<table class="grid"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></section>'
    )


def pass_hat_k_line(results: Iterable[EvaluationResult]) -> str | None:
    """`pass^k over N tests with trials: k=1 0.500, ...` (tau-bench's figure), or None
    without a test of several trials."""
    everything = Group("all", list(results))
    hats = everything.pass_hat_k()
    if not hats:
        return None
    figures = ", ".join(f"k={k} {v:.3f}" for k, v in hats.items())
    tests = sum(bool(r.pass_hat_k) for r in everything.results)
    return f"pass^k over {tests} test(s) with trials (mean over tests, as tau-bench reports it): {figures}"


def _mean(values: Iterable[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return math.fsum(kept) / len(kept) if kept else None


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _md(text: str) -> str:
    """A Markdown table cell: one line, HTML and pipes escaped."""
    import html

    return html.escape(" ".join(text.split()), quote=False).replace("|", "\\|")
