"""The terminal summary: one row per test and target, then the per-turn table of each test."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Span, Text

from .._text import shorten
from ..results import AssertionOutcome, EvaluationResult, GraderScore, ScoreEntry, ToolCall
from ._groups import pass_hat_k_line
from ._terminal import SafeConsole, printable

_STYLE = {"pass": "green", "fail": "red", "skip": "yellow", "error": "magenta"}


def _fmt_score(score: float | None) -> str:
    return "-" if score is None else f"{score:.2f}"


def _verdict(verdict: str) -> str:
    return f"[{_STYLE.get(verdict, 'white')}]{verdict.upper()}[/]"


#: Up to this many results the overall summary is a table; beyond, one aligned line per result
#: (the same columns): rich lays a table out cell by cell, about a millisecond a row.
TABLE_ROWS_UP_TO = 30
_COLUMNS = ("test", "target", "score", "verdict", "turns", "tokens", "judge tokens", "time")
_RIGHT = {"score", "tokens", "judge tokens", "time"}


def print_summary(results: list[EvaluationResult], console: Console | None = None, *, turns: bool = True) -> None:
    """Print the per-turn tables (unless `turns=False`) and the overall table."""
    console = console or SafeConsole()
    if turns:
        for result in results:
            if result.scores:
                console.print(turn_table(result))
    columns = _COLUMNS if not any(r.pass_rate for r in results) else (*_COLUMNS[:4], "trials", *_COLUMNS[4:])
    rows = [_row(r, trials="trials" in columns) for r in results]
    table = _table(rows, columns) if len(rows) <= TABLE_ROWS_UP_TO else None
    if table is not None and not _fits(console, table):
        table = None  # the table would be cut at the right edge (a log is 80 columns): lines wrap instead
    console.print(_lines(rows, columns) if table is None else table, soft_wrap=table is None)
    for r in results:
        if r.error:
            console.print(f"[magenta]{escape(r.test_id)} @ {escape(r.target)}:[/] {escape(r.error)}")
        for note in r.notes:
            console.print(f"[dim]{escape(r.test_id)} @ {escape(r.target)}: {escape(note)}[/]")
    counts = {v: sum(r.verdict == v for r in results) for v in ("pass", "fail", "skip", "error")}
    console.print(f"{len(results)} result(s): " + ", ".join(f"{_verdict(v)} {n}" for v, n in counts.items() if n))
    hats = pass_hat_k_line(results)
    if hats:
        console.print(escape(hats))
    for line in rate_lines(results):
        console.print(line, markup=False)
    for line in budget_warnings(results):
        console.print(f"[yellow]{line}[/]")


def rate_lines(results: list[EvaluationResult]) -> list[str]:
    """Pass rate (Wilson interval) and mean score (seeded bootstrap interval) of the run, and of
    each target and suite when there are several; with trials, the trial pass rate and pass^k."""
    if not results:
        return []
    from ..stats import fmt_interval, group_rates, rates_by  # numpy, loaded once a run is done
    from ._overview import suite_name  # with the Overview model, which a run does not build

    groups = [group_rates("all", results)]
    for key in ("target", "suite"):
        found = rates_by(results, key if key == "target" else suite_name)
        if len(found) > 1:
            groups += found
    lines = []
    for group in groups:
        line = (
            f"{group.name}: pass rate {fmt_interval(group.pass_rate, percent=True)}, "
            f"mean score {fmt_interval(group.mean_score)}"
        )
        if group.trial_pass_rate is not None:
            line += f", trial pass rate {fmt_interval(group.trial_pass_rate, percent=True)}"
            if group.pass_hat_k:
                k = max(group.pass_hat_k, key=int)
                line += f", pass^{k} {fmt_interval(group.pass_hat_k[k])}"
        lines.append(line)
    lines.append("(95% intervals: Wilson for rates, seeded bootstrap for means)")
    return lines


def prepare_rate_lines() -> None:
    """Load what `rate_lines` needs and run its bootstrap once on a few numbers: numpy, and the
    parts of numpy its first bootstrap would load (`numpy.random`, `numpy.ma`: 20-40 ms after
    the last answer otherwise). `convoeval run` calls this on a thread while the calls go on."""
    from ..stats import mean_interval
    from ._overview import suite_name  # noqa: F401  (imported by rate_lines)

    mean_interval([0.0] * 7 + [1.0], rounds=10)  # few distinct values: the multinomial draw
    mean_interval([0.0, 0.5, 1.0], rounds=10)  # many: resampled indices


def _trials_cell(r: EvaluationResult) -> Text:
    """`2/3 [21%-94%]` and `flaky` when the trials disagree; `-` without trials."""
    rate = r.pass_rate
    if rate is None:
        return Text("-")
    cell = Text(f"{rate.passes}/{rate.trials} [{rate.low:.0%}-{rate.high:.0%}]")
    if 0 < rate.passes < rate.trials:
        cell.append(" flaky", style="yellow")
    if r.adaptive is not None:
        cell.append(f" ({r.adaptive.stopped})", style="dim")
    return cell


def print_panel_agreement(results: Iterable[EvaluationResult], console: Console | None = None) -> None:
    """With a judge panel: the inter-judge agreement per check type (nothing without one)."""
    from ._panel import agreement_lines, panel_agreement  # only a judge panel's run needs it

    rows = panel_agreement(results)
    if rows:
        console = console or SafeConsole()
        console.print("[bold]judge panel agreement[/] (verdicts of each judge, per check type)")
        for line in agreement_lines(rows):
            console.print(f"  {escape(line)}", soft_wrap=True)


def _row(r: EvaluationResult, *, trials: bool = False) -> list[Text]:
    """The summary cells of one result, styled (no markup: ids and notes print as written)."""
    marks = [(_fmt_score(e.score), _STYLE.get(e.verdict, "white")) for e in r.scores if e.type == "turn"]
    status = Text(r.verdict.upper(), style=_STYLE.get(r.verdict, "white"))
    if r.execution_status in ("simulator_error", "undecided", "budget_exhausted"):
        status.append(f" ({r.execution_status})", style="magenta")
    if r.outcome:
        status.append(f" outcome {r.outcome}")
    if r.grader_errors:
        status.append(f" ({r.grader_errors} grader error{'s' if r.grader_errors > 1 else ''})", style="magenta")
    return [
        Text(printable(r.test_id)),
        Text(printable(r.target)),
        Text(_fmt_score(r.score)),
        status,
        *([_trials_cell(r)] if trials else []),
        _joined(marks) if marks else Text("-"),
        Text(str(r.token_usage.total_tokens)),
        Text(str(r.judge_token_usage.total_tokens)),
        Text(f"{r.duration_ms / 1000:.1f}s"),
    ]


def _joined(parts: list[tuple[str, str]]) -> Text:
    """`parts` (text, style) joined by spaces, as one Text built at once (what `Text(" ").join`
    makes, without a Text per part)."""
    spans, at = [], 0
    for text, style in parts:
        spans.append(Span(at, at + len(text), style))
        at += len(text) + 1
    return Text(" ".join(text for text, _ in parts), spans=spans)


def _table(rows: list[list[Text]], columns: tuple[str, ...] = _COLUMNS) -> Table:
    table = Table(title="convoeval results", title_justify="left", header_style="bold")
    for i, column in enumerate(columns):  # ids are whole (up to 40 columns), then folded, never cut:
        ids = column in ("test", "target")  # they are what --test-id and --target take
        widest = min(40, max((row[i].cell_len for row in rows), default=0)) if ids else None
        table.add_column(column, justify="right" if column in _RIGHT else "left", overflow="fold", min_width=widest)
    for row in rows:
        table.add_row(*row)
    return table


def _fits(console: Console, table: Table) -> bool:
    """The table's narrowest layout (whole ids, headers folded) fits the console's width."""
    return Measurement.get(console, console.options.update(max_width=1 << 16), table).minimum <= console.width


def _lines(rows: list[list[Text]], columns: tuple[str, ...] = _COLUMNS) -> Text:
    """The table as aligned lines (no box, no wrapping): fast for thousands of rows. The text and
    its style spans are gathered in lists and made into one Text at the end (appending cell by
    cell copied every cell twice: a third of a 400-test run's summary)."""
    widths = [max(len(name), *(row[i].cell_len for row in rows)) for i, name in enumerate(columns)]
    right = [name in _RIGHT for name in columns]
    parts, spans, at = ["convoeval results"], [], len("convoeval results")
    for cells in ([Text(name, style="bold") for name in columns], *rows):
        parts.append("\n")
        at += 1
        for i, cell in enumerate(cells):
            pad = " " * (widths[i] - cell.cell_len)
            lead = ("  " if i else "") + (pad if right[i] else "")
            parts.append(lead)
            at += len(lead)
            if cell.style:  # a left cell's style covers its padding too, as `cell + pad` did
                spans.append(Span(at, at + len(cell) + (0 if right[i] else len(pad)), cell.style))
            spans.extend(Span(at + start, at + end, style) for start, end, style in cell.spans)
            parts.append(cell.plain)
            at += len(cell)
            if not right[i]:
                parts.append(pad)
                at += len(pad)
    return Text("".join(parts), spans=spans)


def budget_warnings(results: list[EvaluationResult]) -> list[str]:
    """How many tests ended on a budget, and a warning per suite where most tests hit the same
    one ("18/20 tests hit tool_calls=60 at turn 1; the budget may be too low")."""
    hit = [r for r in results if r.budget_hit]
    if not hit:
        return []
    lines = [f"{len(hit)} test(s) ended on a budget (execution_status: budget_exhausted)"]
    for suite in dict.fromkeys(r.suite for r in results):
        in_suite = [r for r in results if r.suite == suite]
        same = Counter(r.budget_hit for r in in_suite if r.budget_hit)
        for budget, n in same.most_common(1):
            if n * 2 > len(in_suite):
                lines.append(f"warning: {suite}: {n}/{len(in_suite)} tests hit {budget}; the budget may be too low")
    return lines


def turn_table(result: EvaluationResult) -> Table:
    """Each turn (and the conversation) of one result: score, verdict and the checks behind it."""
    title = f"{result.test_id} @ {result.target}  score {_fmt_score(result.score)} {_verdict(result.verdict)}"
    if len(result.trials) > 1:
        title += f"  (trial 0 of {len(result.trials)})"
    if result.fallback:
        title += f"  (fallback: {result.fallback})"
    if result.stop_reason:
        title += f"  stop: {result.stop_reason}"
    if result.outcome:
        title += f"  outcome: {result.outcome}"
    simulated = {m.turn: m.content for m in result.output if m.source == "simulator" and m.turn is not None}
    table = Table(title=title, title_justify="left", show_lines=False, header_style="bold")
    table.add_column("turn")
    table.add_column("score", justify="right")
    table.add_column("verdict")
    table.add_column("checks")
    for entry in result.scores:
        said = simulated.get(int(entry.name[5:])) if entry.name[5:].isdigit() else None
        checks = _checks(entry)
        if said is not None:  # the generated user message of this turn
            checks = f"[blue]user (simulated): {_short(said)}[/]\n{checks}"
        table.add_row(entry.name, _fmt_score(entry.score), _verdict(entry.verdict), checks)
    return table


def _checks(entry: ScoreEntry) -> str:
    lines = [f"[cyan]tool {_short(_call(call))}[/]" for call in entry.tool_calls]
    if entry.note:
        lines.append(f"[dim]{_short(entry.note)}[/]")
    for grader in entry.graders:
        if grader.verdict == "error":
            lines.append(f"[magenta]! {grader.name}: {grader.error}[/]")
            continue
        lines += _grader_lines(grader)
        if grader.panel:
            said = ", ".join(f"{a.judge} {a.verdict} {_fmt_score(a.score)}" for a in grader.panel)
            lines.append(f"[dim]  panel ({grader.panel_rule}): {_short(said, 120)}[/]")
    return "\n".join(lines) or "[dim](not graded)[/]"


def _grader_lines(grader: GraderScore) -> list[str]:
    """One check: a line marked by its verdict, named when its name is its own; a check of several
    assertions (`icontains-any`, a rubric's criteria) has them below it, indented. A failed
    assertion says why (its evidence)."""
    mark = _MARK.get(grader.verdict, "[dim]-[/]")
    named = grader.name != grader.type
    if len(grader.assertions) == 1:
        outcome = grader.assertions[0]
        text = f"{grader.name}: {outcome.text}" if named else outcome.text
        return [f"{mark} {_short(text)}{_why(outcome)}"]
    head = f"{mark} {_short(grader.name)}" + (f" {_fmt_score(grader.score)}" if grader.assertions else "")
    return [head, *(f"   {_MARK['pass' if o.passed else 'fail']} {_short(o.text)}{_why(o)}" for o in grader.assertions)]


_MARK = {"pass": "[green]✓[/]", "fail": "[red]✗[/]"}


def _why(outcome: AssertionOutcome) -> str:
    return f" [dim]({_short(outcome.evidence, 70)})[/]" if not outcome.passed and outcome.evidence else ""


def _call(call: ToolCall) -> str:
    args = ", ".join(f"{k}={json.dumps(v, ensure_ascii=False, default=str)}" for k, v in call.arguments.items())
    return f"{call.name}({args})" + (f" error: {call.error}" if call.error else "")


def _short(text: str, limit: int = 90) -> str:
    return shorten(" ".join(text.split()).replace("[", r"\["), limit)
