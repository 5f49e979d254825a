"""`convoeval agreement`: how well a judge agrees with human labels, with another judge (two
stored runs), or with itself (K stored runs)."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from ..engine import STORE_FILE, state_dir
from ..errors import ConfigError
from ..rank import BattleFileError, read_votes, votes_agreement
from ..report import LoadedRun, load_run
from ..stats import (  # numpy: this module loads only for `agreement` (or every command's --help)
    AgreementInputError,
    Estimate,
    MeasurementLevel,
    RunsAgreement,
    RunsConsistency,
    agreement_estimates,
    parse_categories,
    read_ratings_csv,
    runs_agreement,
    runs_consistency,
)
from ._app import app
from ._fail import fail

STATISTIC_NAMES = {
    "percent_agreement": "Percent agreement",
    "gwet_ac1": "Gwet's AC1",
    "randolph_kappa": "Randolph's kappa",
    "cohen_kappa": "Cohen's kappa",
    "cohen_kappa_linear": "Cohen's kappa (linear)",
    "cohen_kappa_quadratic": "Cohen's kappa (quadratic)",
    "fleiss_kappa": "Fleiss' kappa",
    "krippendorff_alpha_nominal": "Krippendorff's alpha (nominal)",
    "krippendorff_alpha_ordinal": "Krippendorff's alpha (ordinal)",
    "krippendorff_alpha_interval": "Krippendorff's alpha (interval)",
    "spearman": "Spearman's rho",
    "kendall": "Kendall's tau-b",
    "spearman_scores": "Spearman's rho (0-1 scores)",
}


class AgreementFormat(StrEnum):
    table = "table"
    json = "json"


def _number(value: float | None) -> str:
    return "-" if value is None or math.isnan(value) else f"{value:.3f}"


def _table(estimates: dict[str, Estimate], title: str) -> Table:
    table = Table(title=title)
    table.add_column("Statistic")
    table.add_column("Value", justify="right")
    table.add_column("SE", justify="right")
    table.add_column("95% CI", justify="right")
    table.add_column("Interval")
    for key, estimate in estimates.items():
        if not estimate.defined:
            table.add_row(STATISTIC_NAMES.get(key, key), "undefined", "-", "-", estimate.note or "")
            continue
        interval = "-"
        if estimate.ci_low is not None and estimate.ci_high is not None:
            interval = f"{estimate.ci_low:.3f} .. {estimate.ci_high:.3f}"
        table.add_row(
            STATISTIC_NAMES.get(key, key),
            _number(estimate.value),
            _number(estimate.se),
            interval,
            estimate.interval or "",
        )
    return table


@app.command("agreement")
def agreement(
    files: Annotated[
        list[Path] | None,
        typer.Argument(
            metavar="LABELS.csv|RUN",
            help="CSV with one row per item and one column per rater "
            "(an 'item' or 'id' column is ignored; empty or NA cells are missing); with --runs "
            "two runs, with --consistency two or more (each a results file, a run id of the store, "
            "'last' or 'last~N'), with --votes one or two vote files.",
            show_default=False,
        ),
    ] = None,
    categories: Annotated[
        str | None,
        typer.Option(
            "--categories",
            help="The categories raters could use, declared, never inferred: 1-5 or a,b,c. "
            "Required for LABELS.csv; for runs default 1-5 (0-1 judge scores are binned into "
            "them; 'pass,fail' compares verdicts).",
            show_default=False,
        ),
    ] = None,
    level: Annotated[
        MeasurementLevel | None,
        typer.Option("--level", help="Level of measurement of the categories (default: ordinal).", show_default=False),
    ] = None,
    columns: Annotated[
        str | None,
        typer.Option("--columns", help="Rater columns to compare, e.g. human,judge (default: all)."),
    ] = None,
    runs: Annotated[
        bool,
        typer.Option(
            "--runs",
            help="Judge vs judge: compare the judge scores of two stored runs (results JSONL) of "
            "the same tests and targets, judged by different judges.",
        ),
    ] = False,
    consistency: Annotated[
        bool,
        typer.Option(
            "--consistency",
            help="Judge consistency: mean and standard deviation of each grader's scores over K "
            "stored runs of the same judge (run them with --no-cache).",
        ),
    ] = False,
    votes: Annotated[
        bool,
        typer.Option(
            "--votes",
            help="Pairwise votes (model_a, model_b, winner, question_id, turn; JSONL or a JSON list, "
            "as MT-Bench's human judgments): per turn, agreement with and without ties as FastChat's "
            "compute_agreement.py counts it; two files: judge vs humans, one file: its raters among themselves.",
        ),
    ] = False,
    output_format: Annotated[
        AgreementFormat, typer.Option("--format", help="table or json (the agreement report).")
    ] = AgreementFormat.table,
    store: Annotated[
        Path | None,
        typer.Option(
            "--store",
            metavar="DIR",
            help="State folder holding runs.sqlite, for runs given by id (default: $CONVOEVAL_HOME, else .convoeval).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Agreement between raters: human labels vs an LLM judge (kappas, AC1, alpha, rho), two
    judges over stored runs (--runs), or one judge over repeated runs (--consistency)."""

    files = list(files or [])
    if votes:
        if runs or consistency or columns or categories or level:
            raise fail(
                "--votes compares pairwise votes: --runs, --consistency, --columns, --categories and --level do not apply"
            )
        _agreement_of_votes(files, output_format)
        return
    if runs and consistency:
        raise fail("give either --runs A.jsonl B.jsonl or --consistency R1.jsonl R2.jsonl ..., not both")
    if runs or consistency:
        if columns:
            raise fail("--columns picks columns of a LABELS.csv file; it does not apply to runs")
        if runs and len(files) != 2:
            raise fail(f"--runs compares two runs (judge A, judge B: results files or run ids), got {len(files)}")
        if consistency and len(files) < 2:
            raise fail(
                f"--consistency needs two or more runs of the same judge (results files or run ids), got {len(files)}"
            )
        if consistency and (categories or level):
            raise fail(
                "--consistency reports means and standard deviations of the 0-1 scores; "
                "--categories and --level do not apply"
            )
        _agreement_of_runs([str(f) for f in files], store, categories, level, runs, output_format)
        return
    if len(files) != 1:
        raise fail(
            "give one LABELS.csv file (or --runs A.jsonl B.jsonl, or --consistency R1.jsonl R2.jsonl ...)"
            if not files
            else f"give one LABELS.csv file, got {len(files)} files "
            "(to compare stored runs add --runs or --consistency)"
        )
    if categories is None:
        raise fail("declare the categories raters could use with --categories, e.g. 1-5 or a,b,c")
    labels = files[0]
    level = level or "ordinal"
    try:
        declared = parse_categories(categories)
        chosen = [name.strip() for name in columns.split(",")] if columns else None
        table = read_ratings_csv(labels, declared, chosen)
        estimates = agreement_estimates(table.matrix, declared, level)
    except AgreementInputError as error:
        raise fail(str(error)) from None
    if output_format is AgreementFormat.json:
        typer.echo(json.dumps({k: e.to_dict() for k, e in estimates.items()}, indent=2))
        return
    shown = ", ".join(str(c) for c in declared)
    title = f"Agreement of {', '.join(table.raters)} on {len(table.matrix)} items (categories {shown}; {level})"
    Console().print(_table(estimates, title))


def _agreement_of_votes(files: list[Path], output_format: AgreementFormat) -> None:
    if len(files) not in (1, 2):
        raise fail(f"--votes takes one or two vote files (judge, humans), got {len(files)}")
    try:
        loaded = [read_votes(path) for path in files]
    except BattleFileError as error:
        raise fail(str(error)) from None
    turns = votes_agreement(*loaded)
    authors = sum(v.author for votes in loaded for v in votes)
    if authors:
        typer.echo(
            f"{authors} vote(s) of MT-Bench's authors (judge author_*) left out, as compute_agreement.py counts only its experts",
            err=True,
        )
    if output_format is AgreementFormat.json:
        typer.echo(json.dumps({"files": [str(f) for f in files], "turns": [t.to_dict() for t in turns]}, indent=2))
        return
    who = f"{files[0].name} vs {files[1].name}" if len(files) == 2 else f"the raters of {files[0].name}"
    table = Table(title=f"Agreement of {who} (pairs of votes on the same question, models and turn)")
    for name in ("Turn", "Ties", "Pairs", "Agree", "Ratio"):
        table.add_column(name, justify="left" if name == "Ties" else "right")
    for turn in turns:
        for label, (agree, total) in (("with", turn.with_ties), ("without", turn.without_ties)):
            table.add_row(str(turn.turn), label, str(total), str(agree), _number(agree / total if total else None))
    Console().print(table)


def _agreement_of_runs(
    refs: list[str],
    store: Path | None,
    categories: str | None,
    level: MeasurementLevel | None,
    runs: bool,
    output_format: AgreementFormat,
) -> None:
    """Judge vs judge (`runs`) or judge consistency over `refs`: results files or runs of the store."""
    try:
        loaded = [load_run(ref, state_dir(store) / STORE_FILE) for ref in refs]
    except ConfigError as error:
        raise fail(str(error)) from None
    try:
        if runs:
            declared = parse_categories(categories) if categories else [1, 2, 3, 4, 5]
            chosen: MeasurementLevel = level or ("nominal" if all(isinstance(c, str) for c in declared) else "ordinal")
            report = runs_agreement(loaded[0].results, loaded[1].results, declared, chosen)
        else:
            consistency = runs_consistency([run.results for run in loaded])
    except AgreementInputError as error:
        raise fail(str(error)) from None
    if runs:
        if output_format is AgreementFormat.json:
            data = {"runs": refs, **report.to_dict()}
            typer.echo(json.dumps(data, indent=2))
            return
        _print_runs_agreement(report, loaded)
        return
    if output_format is AgreementFormat.json:
        typer.echo(json.dumps({"files": refs, **consistency.to_dict()}, indent=2))
        return
    _print_consistency(consistency, loaded)


def _print_runs_agreement(report: RunsAgreement, loaded: list[LoadedRun]) -> None:
    shown = ", ".join(str(c) for c in report.categories)
    a, b = loaded[0].name, loaded[1].name
    title = (
        f"Agreement of the judges of {a} and {b} on {report.items} judge scores (categories {shown}; {report.level})"
    )
    console = Console()
    console.print(_table({**report.estimates, "spearman_scores": report.spearman_scores}, title))
    graders = ", ".join(f"{name} {n}" for name, n in report.graders.items())
    console.print(f"items per grader: {graders}", markup=False, highlight=False)
    if report.only_a or report.only_b:
        console.print(
            f"left out: {report.only_a} scored only in {a}, {report.only_b} only in {b} (missing result or grader error)",
            markup=False,
            highlight=False,
        )


def _print_consistency(report: RunsConsistency, loaded: list[LoadedRun]) -> None:
    table = Table(
        title=f"Judge consistency over {report.runs} runs ({', '.join(run.name for run in loaded)})",
        caption="scores 0-1; std: sample standard deviation of an item's scores over the runs",
    )
    table.add_column("Grader")
    for name in ("Items", "Mean", "Mean std", "Max std", "Identical", "Missing"):
        table.add_column(name, justify="right")
    for row in [*report.graders.values(), report.overall]:
        table.add_row(
            row.grader,
            str(row.items),
            f"{row.mean:.3f}",
            f"{row.mean_std:.3f}",
            f"{row.max_std:.3f}",
            f"{row.identical:.0%}",
            str(row.missing),
        )
    Console().print(table)
