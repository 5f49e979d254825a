"""`convoeval agreement`: how well a judge agrees with human labels."""

from __future__ import annotations

import json
import math
from enum import StrEnum
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.table import Table

from ._app import app

if TYPE_CHECKING:  # convoeval.stats (numpy, scipy) is imported when the command runs
    from convoeval.stats import Estimate

STATISTIC_NAMES = {
    "percent_agreement": "Percent agreement",
    "gwet_ac1": "Gwet's AC1",
    "randolph_kappa": "Randolph's kappa",
    "cohen_kappa": "Cohen's kappa",
    "cohen_kappa_quadratic": "Cohen's kappa (quadratic)",
    "fleiss_kappa": "Fleiss' kappa",
    "krippendorff_alpha_nominal": "Krippendorff's alpha (nominal)",
    "krippendorff_alpha_ordinal": "Krippendorff's alpha (ordinal)",
    "krippendorff_alpha_interval": "Krippendorff's alpha (interval)",
    "spearman": "Spearman's rho",
    "kendall": "Kendall's tau-b",
}


class Level(StrEnum):
    nominal = "nominal"
    ordinal = "ordinal"
    interval = "interval"


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
    labels: Annotated[
        Path,
        typer.Argument(
            metavar="LABELS.csv",
            help="CSV with one row per item and one column per rater "
            "(an 'item' or 'id' column is ignored); empty or NA cells are missing.",
            show_default=False,
        ),
    ],
    categories: Annotated[
        str,
        typer.Option(
            "--categories",
            help="The categories raters could use, declared, never inferred: 1-5 or a,b,c.",
            show_default=False,
        ),
    ],
    level: Annotated[
        Level, typer.Option("--level", help="Level of measurement of the categories.")
    ] = Level.ordinal,
    columns: Annotated[
        str | None,
        typer.Option(
            "--columns", help="Rater columns to compare, e.g. human,judge (default: all)."
        ),
    ] = None,
    output_format: Annotated[
        AgreementFormat, typer.Option("--format", help="table or json (the agreement report).")
    ] = AgreementFormat.table,
) -> None:
    """Agreement between raters, e.g. human labels vs an LLM judge (kappas, AC1, alpha, rho)."""
    from convoeval.stats import AgreementInputError, agreement_estimates, parse_categories, read_ratings_csv

    try:
        declared = parse_categories(categories)
        chosen = [name.strip() for name in columns.split(",")] if columns else None
        table = read_ratings_csv(labels, declared, chosen)
        estimates = agreement_estimates(table.matrix, declared, level.value)
    except AgreementInputError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(2) from None
    if output_format is AgreementFormat.json:
        typer.echo(json.dumps({k: e.to_dict() for k, e in estimates.items()}, indent=2))
        return
    shown = ", ".join(str(c) for c in declared)
    title = (
        f"Agreement of {', '.join(table.raters)} on {len(table.matrix)} items "
        f"(categories {shown}; {level.value})"
    )
    Console().print(_table(estimates, title))
