"""`convoeval arena`: ratings and a leaderboard from judged battles."""

from __future__ import annotations

from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from ._app import app


class ArenaFormat(StrEnum):
    table = "table"
    json = "json"
    csv = "csv"


def _fail(message: str) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(2)


@app.command("arena")
def arena(
    battles: Annotated[
        Path | None,
        typer.Option(
            "--battles",
            help="Recorded battles, JSONL: one {model_a, model_b, winner} a line "
            "(winner: model_a, model_b, tie or 'tie (bothbad)').",
            show_default=False,
        ),
    ] = None,
    k: Annotated[
        float, typer.Option("--k", help="Elo K-factor (32 as TD-Eval, 4 as Chatbot Arena).")
    ] = 32.0,
    bootstrap: Annotated[
        int,
        typer.Option("--bootstrap", min=0, help="Bootstrap rounds for the intervals (0 = none)."),
    ] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the bootstrap.")] = 0,
    output_format: Annotated[
        ArenaFormat, typer.Option("--format", help="table, json or csv.")
    ] = ArenaFormat.table,
    plot: Annotated[
        Path | None,
        typer.Option(
            "--plot",
            help="Also draw the ratings with intervals (.svg, .png or .pdf).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Rank targets from judged battles: online Elo and Bradley-Terry with bootstrap intervals."""
    if battles is None:
        raise _fail("give the recorded battles with --battles FILE.jsonl")
    from convoeval.rank import BattleFileError, leaderboard_from_battles, read_battles  # numpy, scipy

    try:
        board = leaderboard_from_battles(read_battles(battles), k=k, bootstrap=bootstrap, seed=seed)
        if plot is not None:
            board.plot(plot)
    except (BattleFileError, ValueError, RuntimeError) as error:
        raise _fail(str(error)) from None
    for warning in board.warnings:
        typer.echo(f"warning: {warning}", err=True)
    if output_format is ArenaFormat.json:
        typer.echo(board.to_json())
    elif output_format is ArenaFormat.csv:
        typer.echo(board.to_csv(), nl=False)
    else:
        Console().print(board.to_table())
    if plot is not None:
        typer.echo(f"plot written to {plot}", err=True)
