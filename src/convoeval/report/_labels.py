"""Human labels of judged grader scores, kept in the run store's SQLite file, and their export as
the `labels.csv` that `convoeval agreement` reads.

An ITEM is one judge grader score, keyed as `convoeval agreement --runs` keys them:
(suite, test id, target, score entry `turn-2`|`conversation`, grader name, or
`grader/dimension` for a TD-Eval dimension). Each rater gives an item one label on the
declared scale (1-5, or pass/fail) and an optional comment. Table (own table, same file):

    labels(run_id, suite, test_id, target, entry, item, rater, label, comment, updated,
           UNIQUE(run_id, suite, test_id, target, entry, item, rater))

`convoeval.report.viewer.export_labels_csv` writes them as `labels.csv`.
"""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path
from typing import Literal

from pydantic import field_validator

from .._base_model import Model

Scale = Literal["1-5", "pass-fail"]
SCALES: dict[str, tuple[int | str, ...]] = {"1-5": (1, 2, 3, 4, 5), "pass-fail": ("fail", "pass")}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS labels (
    run_id  TEXT NOT NULL,
    suite   TEXT NOT NULL,
    test_id TEXT NOT NULL,
    target  TEXT NOT NULL,
    entry   TEXT NOT NULL,
    item    TEXT NOT NULL,
    rater   TEXT NOT NULL,
    label   TEXT NOT NULL,
    comment TEXT NOT NULL DEFAULT '',
    updated TEXT NOT NULL,
    UNIQUE (run_id, suite, test_id, target, entry, item, rater)
);
"""


class Label(Model):
    """One rater's label of one judged item."""

    run_id: str
    suite: str = ""
    test_id: str
    target: str
    entry: str
    item: str
    rater: str
    label: str
    comment: str = ""

    @field_validator("rater", "test_id", "target", "entry", "item", "label")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be blank")
        return value.strip()


class JudgedItem(Model):
    """A judge grader score that can be labelled, with the judge's own value on the scale."""

    entry: str
    grader: str
    item: str
    judge: str | None


class LabelStore:
    """Labels in the run store's SQLite file (its own table; the run tables are not touched).

    Example:
        labels = LabelStore(".convoeval/runs.sqlite")
        labels.save(Label(run_id=..., test_id="t1", target="bot", entry="turn-1", item="rubrics",
                          rater="ana", label="4"))
        labels.labels(run_id)
    """

    def __init__(self, path: str | Path):
        self.path = Path(path)
        with closing(self._connect()) as conn:
            conn.executescript(_SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        return conn

    def save(self, label: Label) -> None:
        """Store a label, replacing the same rater's earlier label of the item."""
        row = (
            label.run_id,
            label.suite,
            label.test_id,
            label.target,
            label.entry,
            label.item,
            label.rater,
            label.label,
            label.comment,
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        )
        with closing(self._connect()) as conn:
            conn.execute(
                "INSERT INTO labels (run_id, suite, test_id, target, entry, item, rater, label, comment, updated)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id, suite, test_id, target, entry, item,"
                " rater) DO UPDATE SET label = excluded.label, comment = excluded.comment,"
                " updated = excluded.updated",
                row,
            )

    def labels(self, run_id: str) -> list[Label]:
        """Every label of the run, in the order they were first given."""
        with closing(self._connect()) as conn:
            rows = conn.execute(
                "SELECT run_id, suite, test_id, target, entry, item, rater, label, comment FROM labels"
                " WHERE run_id = ? ORDER BY rowid",
                (run_id,),
            ).fetchall()
        fields = ("run_id", "suite", "test_id", "target", "entry", "item", "rater", "label", "comment")
        return [Label(**dict(zip(fields, row, strict=True))) for row in rows]
