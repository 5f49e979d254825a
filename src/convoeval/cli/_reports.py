"""`convoeval report | compare | view`: reports of stored runs or results files."""

from __future__ import annotations

import json
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape
from rich.table import Table

from .. import report as report_module
from ..engine import STORE_FILE, state_dir
from ..errors import ConfigError
from ..report import (
    Comparison,
    LoadedRun,
    compare_results,
    load_run,
    markdown_comparison,
    write_comparison,
)
from ..report._compare import mark_flaky_history, significance_lines
from ..report._compare_view import pair_views
from ..report._inspect_export import write_inspect_log
from ..report._otel_export import export_spans, otlp_exporter
from ..report._overview import fmt_score
from ..report._runs import same_fingerprint
from ..report._terminal import SafeConsole
from ..report.viewer import Viewer
from ..stats import flaky_in_store
from ._app import app
from ._fail import fail
from ._stop import exit_code
from ._write import check_writable, moved, staged, write_reports, writing

out = SafeConsole(highlight=False, emoji=False)

StoreOption = Annotated[
    Path | None,
    typer.Option(
        "--store",
        metavar="DIR",
        help="State folder holding runs.sqlite (default: $CONVOEVAL_HOME, else .convoeval).",
        show_default=False,
    ),
]
_STYLE = {"loss": "red", "win": "green", "new": "yellow", "gone": "magenta", "tie": "dim"}


#: The report `report -o FILE` writes, by the file's suffix.
_OUTPUT_KINDS = {".html": "html", ".htm": "html", ".xml": "junit", ".md": "markdown", ".eval": "inspect_log"}


def _store(store: Path | None) -> Path:
    return state_dir(store) / STORE_FILE


def _load(ref: str, store: Path | None) -> LoadedRun:
    try:
        return load_run(ref, _store(store))
    except ConfigError as exc:
        raise fail(str(exc)) from None


@app.command()
def report(
    run: Annotated[
        str,
        typer.Argument(
            metavar="RUN|RESULTS",
            help="A run id of the store (or 'last'), or a results file (.jsonl, .json).",
            show_default=False,
        ),
    ],
    html: Annotated[Path | None, typer.Option(help="Write a self-contained HTML report here.")] = None,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here (one testcase per test and target).")] = None,
    markdown: Annotated[
        Path | None, typer.Option(help="Write a Markdown summary here (CI job summary, PR comment).")
    ] = None,
    battles: Annotated[
        Path | None,
        typer.Option(
            help="Arena battles (`convoeval arena --output`) to show: leaderboard, ratings plot, battles side by side."
        ),
    ] = None,
    title: Annotated[str | None, typer.Option(help="The report's title.")] = None,
    inspect_log: Annotated[
        Path | None,
        typer.Option(
            help="Write an Inspect AI eval log here (.eval or .json; `inspect view` opens it). Extra: inspect."
        ),
    ] = None,
    otel: Annotated[
        bool,
        typer.Option(
            "--otel",
            help="Send the run as OpenTelemetry GenAI spans over OTLP/HTTP (endpoint: --otel-endpoint, else the "
            "OTEL_EXPORTER_OTLP_* variables). Extra: otel.",
        ),
    ] = False,
    otel_endpoint: Annotated[
        str | None, typer.Option(help="OTLP/HTTP traces endpoint, e.g. http://127.0.0.1:4318/v1/traces.")
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            "--by",
            metavar="FIELD",
            help="Group the results by a metadata field (e.g. category): a table with each group's "
            "verdicts, mean score, per-turn scores and pass^k, printed and added to --html / --markdown.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Write the report here, in the format its suffix names: .html, .xml (JUnit), .md (Markdown), "
            ".eval (Inspect log).",
        ),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Write the HTML report, JUnit XML, a Markdown summary or an Inspect log of a run or a results
    file, send it as OpenTelemetry spans, or print its results grouped by a field."""
    otel = otel or otel_endpoint is not None
    if output is not None:
        kind = _OUTPUT_KINDS.get(output.suffix.lower())
        if kind is None:
            raise fail(
                f"-o {output}: the suffix names the format: .html, .xml (JUnit), .md (Markdown) or .eval "
                "(Inspect log; --inspect-log for its .json form)"
            )
        chosen = {"html": html, "junit": junit, "markdown": markdown, "inspect_log": inspect_log}
        if chosen[kind] is not None:
            raise fail(f"-o {output} and --{kind.replace('_', '-')} {chosen[kind]}: give one of them")
        html, junit, markdown, inspect_log = (output if k == kind else v for k, v in chosen.items())
    if not (html or junit or markdown or inspect_log or otel or by):
        raise fail(
            "say what to write: -o report.html (or .xml, .md, .eval), --html report.html, --junit junit.xml, "
            "--markdown summary.md, --inspect-log run.eval and/or --otel (or --by FIELD for a grouped table)"
        )
    check_writable(html, junit, markdown, inspect_log)
    if inspect_log is not None and inspect_log.suffix not in (".eval", ".json"):
        raise fail(f"{inspect_log}: an Inspect log is a .eval or .json file")
    loaded = _load(run, store)
    if by:
        if all(report_module.field_value(r, by) == report_module.NO_VALUE for r in loaded.results):
            known = sorted({k for r in loaded.results for k in r.metadata})
            raise fail(f"--by {by}: no result has this field (metadata fields: {', '.join(known) or 'none'})")
        out.print(report_module.groups_table(report_module.group_results(loaded.results, by), by))
    for path in write_reports(loaded, html=html, junit=junit, markdown=markdown, battles=battles, title=title, by=by):
        out.print(f"wrote {path}", markup=False)
    try:
        if inspect_log is not None:
            with writing(inspect_log), staged(inspect_log) as partial:
                written = moved(write_inspect_log(loaded.results, partial, name=loaded.name), inspect_log)
            for path in written:
                out.print(f"wrote {path}", markup=False)
        if otel:
            spans = export_spans(loaded.results, otlp_exporter(otel_endpoint))
            out.print(f"sent {spans} span(s) over OTLP", markup=False)
    except ConfigError as exc:
        raise fail(str(exc)) from None


class CompareFormat(StrEnum):
    table = "table"
    json = "json"
    markdown = "markdown"


class GateChoice(StrEnum):
    significance = "significance"
    exact = "exact"


class CorrectionChoice(StrEnum):
    holm = "holm"
    bh = "bh"


@app.command()
def compare(
    run_a: Annotated[
        str,
        typer.Argument(
            metavar="RUN_A",
            help="The baseline: a run id, 'last', 'last~1' (the run before last) or a results file.",
            show_default=False,
        ),
    ],
    run_b: Annotated[
        str,
        typer.Argument(
            metavar="RUN_B", help="The new run: a run id, 'last', 'last~N' or a results file.", show_default=False
        ),
    ],
    fail_on_regression: Annotated[
        bool,
        typer.Option(
            "--fail-on-regression",
            help="Exit 1 when B regressed by the gate: by default a drop significant at --alpha and at "
            "least --min-delta; with --gate exact, any test that got worse.",
        ),
    ] = False,
    gate: Annotated[
        GateChoice,
        typer.Option(
            help="significance: test the change as a whole (permutation, McNemar, per-test Fisher); "
            "exact: any single loss is a regression."
        ),
    ] = GateChoice.significance,
    alpha: Annotated[float, typer.Option(min=0.0001, max=0.5, help="The significance gate's false-alarm rate.")] = 0.05,
    min_delta: Annotated[
        float,
        typer.Option(min=0, max=1, help="The smallest drop (mean score, pass rate) that counts as a regression."),
    ] = 0.0,
    correction: Annotated[
        CorrectionChoice, typer.Option(help="Per-test multiple-comparison correction: holm or bh (Benjamini-Hochberg).")
    ] = CorrectionChoice.holm,
    seed: Annotated[int, typer.Option(help="Seed of the permutation test and bootstrap intervals.")] = 0,
    tolerance: Annotated[float, typer.Option(min=0, max=1, help="Score changes up to this much are ties.")] = 0.0,
    output_format: Annotated[
        CompareFormat, typer.Option("--format", help="table, json or markdown.")
    ] = CompareFormat.table,
    html: Annotated[
        Path | None,
        typer.Option(help="Also write an HTML page with each test's two conversations side by side, turn by turn."),
    ] = None,
    store: StoreOption = None,
) -> None:
    """Compare two runs test by test (win, loss, tie, new or gone, with the score change), and
    test whether the new run regressed as a whole."""
    check_writable(html)
    a, b = _load(run_a, store), _load(run_b, store)
    comparison = compare_results(
        a.results,
        b.results,
        tolerance=tolerance,
        name_a=a.name,
        name_b=b.name,
        gate=gate.value,
        alpha=alpha,
        min_delta=min_delta,
        correction=correction.value,
        seed=seed,
    )
    comparison.same_fingerprint = same_fingerprint(a, b)
    if a.run_id or b.run_id:  # stored runs: mark the tests flaky across the store's runs of these suites
        try:
            flaky = flaky_in_store(_store(store), {*a.fingerprints.values(), *b.fingerprints.values()})
        except ConfigError as exc:
            raise fail(str(exc)) from None
        mark_flaky_history(comparison, flaky)
    if html is not None:
        with writing(html), staged(html) as partial:
            write_comparison(comparison, a.results, b.results, partial)
        typer.echo(f"wrote {html}", err=output_format is not CompareFormat.table)
    if output_format is CompareFormat.json:
        data = comparison.to_json()
        views = pair_views(comparison, a.results, b.results)
        data["pairs"] = [
            {**pair, "diverges_at_turn": v.divergence, "verdict_changed_turns": v.changed_turns}
            for pair, v in zip(data["pairs"], views, strict=True)  # type: ignore[call-overload]
        ]
        typer.echo(json.dumps(data, indent=2))
    elif output_format is CompareFormat.markdown:
        typer.echo(markdown_comparison(comparison), nl=False)
    else:
        _print_comparison(comparison)
    if fail_on_regression and comparison.undecidable:
        raise fail(f"the {comparison.gate} gate {comparison.verdict_line()}")
    if fail_on_regression and comparison.failed:
        typer.echo(comparison.verdict_line(), err=True)
        raise typer.Exit(1)


def _print_comparison(comparison: Comparison) -> None:
    table = Table(
        title=f"{comparison.name_b} vs {comparison.name_a} (tolerance {comparison.tolerance:g})",
        title_justify="left",
        header_style="bold",
    )
    for column in ("outcome", "test", "target", "before", "after", "change", "trials passed", ""):
        table.add_column(
            column, justify="right" if column in ("before", "after", "change", "trials passed") else "left"
        )
    for p in comparison.pairs:
        style = _STYLE[p.outcome]
        marks = " ".join(
            m for m in ("[red]significant[/]" if p.significant else "", "[yellow]flaky[/]" if p.flaky else "") if m
        )
        table.add_row(
            f"[{style}]{p.outcome}[/]",
            escape(comparison.test_name(p)),
            escape(p.target),
            fmt_score(p.score_a),
            fmt_score(p.score_b),
            "" if p.delta is None else f"[{style}]{p.delta:+.2f}[/]",
            f"{p.rate('a')} -> {p.rate('b')}" if p.trials_a > 1 or p.trials_b > 1 else "",
            marks,
        )
    out.print(table)
    out.print(", ".join(f"{name} {n}" for name, n in comparison.counts.items()), markup=False)
    for line in significance_lines(comparison):
        out.print(line, markup=False, soft_wrap=True)
    out.print(comparison.verdict_line(), style="red" if comparison.failed else "green", markup=False, soft_wrap=True)


class ScaleChoice(StrEnum):
    likert = "1-5"
    pass_fail = "pass-fail"


@app.command()
def view(
    port: Annotated[int, typer.Option(min=0, max=65535, help="Port on 127.0.0.1 (0: any free port).")] = 8765,
    scale: Annotated[ScaleChoice, typer.Option(help="The labelling scale: 1-5 or pass-fail.")] = ScaleChoice.likert,
    battles: Annotated[
        list[Path] | None, typer.Option("--battles", help="Arena battles files to show (repeatable).")
    ] = None,
    store: StoreOption = None,
) -> None:
    """Browse stored runs in a local web viewer: runs, reports, comparisons, arena, and labelling
    of judged turns (exported as the labels.csv that `convoeval agreement` reads)."""
    for path in battles or []:
        if not path.is_file():
            raise fail(f"{path}: file not found")
    try:
        viewer: Viewer = Viewer(_store(store), port=port, scale=scale.value, battles=list(battles or []))
    except OSError as exc:
        raise fail(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    out.print(
        f"convoeval viewer on {viewer.login_url} (store {_store(store)}); Ctrl-C stops it", markup=False, soft_wrap=True
    )
    try:
        viewer.serve_forever()
    except KeyboardInterrupt:  # Ctrl-C, or SIGTERM (`_stop`): 130 / 143, as for every command
        raise typer.Exit(exit_code()) from None
    finally:
        viewer.server.server_close()
