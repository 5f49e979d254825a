"""The leaderboard as a terminal table, JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
from typing import TYPE_CHECKING

from rich.table import Table

if TYPE_CHECKING:
    from ._leaderboard import Leaderboard

CSV_COLUMNS = (
    "rank",
    "target",
    "elo",
    "bt",
    "ci_low",
    "ci_high",
    "votes",
    "wins",
    "losses",
    "ties",
)


def leaderboard_json(board: Leaderboard, indent: int | None = 2) -> str:
    """`{"leaderboard": [...]}` as JSON text."""
    return json.dumps(board.to_dict(), indent=indent)


def leaderboard_csv(board: Leaderboard) -> str:
    """One header line and one line per target, columns as in `CSV_COLUMNS`."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in board.rows:
        writer.writerow(
            {key: ("" if value is None else value) for key, value in row.to_dict().items()}
        )
    return buffer.getvalue()


def _interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "-"
    return f"{low:.0f}-{high:.0f}"


def leaderboard_table(board: Leaderboard) -> Table:
    """A rich Table: rank, target, Bradley-Terry rating (BT) and interval, Elo, votes, W/L/T."""
    level = f"{board.confidence:.0%} CI"
    caption = f"{board.battles} battles; Elo K={board.k:g}; "
    caption += (
        f"{board.bootstrap} bootstrap rounds, seed {board.seed}"
        if board.bootstrap
        else "no bootstrap"
    )
    table = Table(title="Arena leaderboard", caption=caption)
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("Target", overflow="fold")
    for name in ("BT", level, "Elo", "Votes", "W", "L", "T"):
        table.add_column(name, justify="right", no_wrap=True)
    for row in board.rows:
        table.add_row(
            str(row.rank),
            row.target,
            f"{row.bt:.1f}",
            _interval(row.ci_low, row.ci_high),
            f"{row.elo:.1f}",
            str(row.votes),
            str(row.wins),
            str(row.losses),
            str(row.ties),
        )
    return table
