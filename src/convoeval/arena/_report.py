"""The arena's output: the arena report (leaderboard with each target's turn-level scores, the
judged pairs, warnings) and the leaderboard as a terminal table, JSON and CSV."""

from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, TypedDict

from rich.table import Table

from ..rank import Battle, Leaderboard, LeaderboardRow
from ..report import agreement_figures, plot_leaderboard
from ..results import EvaluationResult, Usage

if TYPE_CHECKING:
    from ._judge import PairJudgment

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

ARENA_CSV_COLUMNS = (*CSV_COLUMNS, "turn_mean", "turn_scores", "test_score_mean", "tests", "passed")

_SHOWN_ERRORS = 20


def leaderboard_json(board: Leaderboard, indent: int | None = 2) -> str:
    """`{"leaderboard": [...]}` as JSON text."""
    return json.dumps(board.to_dict(), indent=indent)


def leaderboard_csv(board: Leaderboard) -> str:
    """One header line and one line per target, columns as in `CSV_COLUMNS`."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in board.rows:
        writer.writerow({key: ("" if value is None else value) for key, value in row.to_dict().items()})
    return buffer.getvalue()


def leaderboard_table(board: Leaderboard) -> Table:
    """A rich Table: rank, target, Bradley-Terry rating (BT) and interval, Elo, votes, W/L/T."""
    level = f"{board.confidence:.0%} CI"
    caption = f"{board.battles} battles; Elo K={board.k:g}; "
    caption += f"{board.bootstrap} bootstrap rounds, seed {board.seed}" if board.bootstrap else "no bootstrap"
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


class ArenaRow(TypedDict):
    """One target's line of the arena leaderboard: its ratings (None when it had no battle)
    and its turn-level summary (`TargetSummary`)."""

    target: str
    elo: float | None
    bt: float | None
    ci_low: float | None
    ci_high: float | None
    votes: int
    wins: int
    losses: int
    ties: int
    rank: int | None
    turn_mean: float | None
    turn_scores: int
    test_score_mean: float | None
    tests: int
    passed: int


@dataclass(frozen=True)
class TargetSummary:
    """A target's turn-level scores, to show next to its arena ratings.

    Attributes:
        turn_mean: mean of the `turn-N` scores over all its results (None without any).
        turn_scores: how many turn scores that mean is over.
        test_score_mean: mean of its test scores.
        tests: its results; passed: how many passed.
    """

    target: str
    turn_mean: float | None
    turn_scores: int
    test_score_mean: float | None
    tests: int
    passed: int

    def to_dict(self) -> dict[str, object]:
        return {
            "turn_mean": self.turn_mean,
            "turn_scores": self.turn_scores,
            "test_score_mean": self.test_score_mean,
            "tests": self.tests,
            "passed": self.passed,
        }


def summarise_target(target: str, results: Iterable[EvaluationResult]) -> TargetSummary:
    """The turn-level mean (mean of every `turn-N` score) and test scores of one target."""
    turn_scores: list[float] = []
    test_scores: list[float] = []
    tests = passed = 0
    for result in results:
        if result.target != target:
            continue
        tests += 1
        passed += result.verdict == "pass"
        if result.score is not None:
            test_scores.append(result.score)
        for entry in result.scores:
            if entry.type == "turn" and entry.name.startswith("turn-") and entry.score is not None:
                turn_scores.append(entry.score)
    return TargetSummary(
        target=target,
        turn_mean=round(math.fsum(turn_scores) / len(turn_scores), 6) if turn_scores else None,
        turn_scores=len(turn_scores),
        test_score_mean=round(math.fsum(test_scores) / len(test_scores), 6) if test_scores else None,
        tests=tests,
        passed=passed,
    )


@dataclass
class ArenaReport:
    """What an arena produced.

    Attributes:
        judgments: every pair judged (or attempted), in test and pair order.
        leaderboard: ratings from the battles (None when no pair could be judged).
        summaries: per target (every target, in order), the turn-level scores.
        judge: the judge's name.
        skipped: why some pairs were not judged (a target has no result for a test, or the
            test did not run for it).
        usage, cost_usd, judge_calls: of all pairwise judge calls.
        notes: one-line notes (defaults chosen, the run's id...).
        run_id: the run store id when the suites were run for this arena.
    """

    judgments: list[PairJudgment]
    leaderboard: Leaderboard | None
    summaries: dict[str, TargetSummary]
    judge: str
    skipped: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    judge_calls: int = 0
    notes: list[str] = field(default_factory=list)
    run_id: str | None = None

    @property
    def battles(self) -> list[Battle]:
        """The battles rated, in test and pair order."""
        return [b for b in (j.battle() for j in self.judgments) if b is not None]

    @property
    def judged_pairs(self) -> int:
        return sum(j.ok for j in self.judgments)

    @property
    def disagreements(self) -> int:
        """Pairs whose two orders gave different outcomes (rated as ties)."""
        return sum(j.consistent is False for j in self.judgments)

    @property
    def order_disagreement_rate(self) -> float | None:
        """Share of the judged pairs whose two orders disagreed (None without a judged pair)."""
        judged = self.judged_pairs
        return self.disagreements / judged if judged else None

    @property
    def panel_agreement(self) -> dict[str, object] | None:
        """With a judge panel: how its judges agree on the pairwise labels (A, B, EQUAL), each
        order of each pair an item: Krippendorff's alpha (nominal), Gwet's AC1 and the raw
        agreement (None when undefined). None without a panel."""
        items = [
            votes
            for j in self.judgments
            if j.panel
            for order in ("a_first", "b_first")
            if (votes := _votes(j.panel, order))
        ]
        if not items:
            return None
        judges = list(dict.fromkeys(name for item in items for name in item))
        matrix = [[item.get(name) for name in judges] for item in items]
        return {"judges": judges, "items": len(matrix), **agreement_figures(matrix, ("A", "B", "EQUAL"))}

    @property
    def failed_pairs(self) -> int:
        return sum(not j.ok for j in self.judgments)

    @property
    def judge_errors(self) -> int:
        """Judge calls (one per order) that failed; their pairs are left out of the battles."""
        return sum(len(j.errors) for j in self.judgments)

    @property
    def errors(self) -> list[str]:
        return [f"{j.label} {j.model_a} vs {j.model_b}: {e}" for j in self.judgments for e in j.errors]

    @property
    def warnings(self) -> list[str]:
        warnings = list(self.leaderboard.warnings) if self.leaderboard else []
        if self.judge_errors:
            warnings.insert(
                0, f"{self.judge_errors} judge call(s) failed; {self.failed_pairs} pair(s) left out of the battles"
            )
        rate = self.order_disagreement_rate
        if rate is not None and rate > 0.5:
            warnings.append(
                f"the judge changed its mind when the order was swapped in {rate:.0%} of "
                "the pairs (rated as ties): it is mostly guessing; use a stronger judge"
            )
        return warnings

    def rows(self) -> list[ArenaRow]:
        """Leaderboard rows (best first) with each target's turn-level summary; targets that have
        no battle come last with null ratings."""
        rated = self.leaderboard.rows if self.leaderboard is not None else []
        names = {row.target for row in rated}
        return [
            *(self._row(row.target, row) for row in rated),
            *(self._row(target, None) for target in self.summaries if target not in names),
        ]

    def _row(self, target: str, rated: LeaderboardRow | None) -> ArenaRow:
        summary = self.summaries.get(target) or TargetSummary(target, None, 0, None, 0, 0)
        return ArenaRow(
            target=target,
            elo=rated.elo if rated else None,
            bt=rated.bt if rated else None,
            ci_low=rated.ci_low if rated else None,
            ci_high=rated.ci_high if rated else None,
            votes=rated.votes if rated else 0,
            wins=rated.wins if rated else 0,
            losses=rated.losses if rated else 0,
            ties=rated.ties if rated else 0,
            rank=rated.rank if rated else None,
            turn_mean=summary.turn_mean,
            turn_scores=summary.turn_scores,
            test_score_mean=summary.test_score_mean,
            tests=summary.tests,
            passed=summary.passed,
        )

    def to_dict(self) -> dict[str, object]:
        """`{"leaderboard": [...], "order_disagreement_rate": x, "battles": n, ...}`."""
        board = self.leaderboard
        return {
            "leaderboard": self.rows(),
            "order_disagreement_rate": self.order_disagreement_rate,
            "pairs": len(self.judgments),
            "judged_pairs": self.judged_pairs,
            "disagreements": self.disagreements,
            "battles": len(self.battles),
            "judge_errors": self.judge_errors,
            "failed_pairs": self.failed_pairs,
            "errors": self.errors[:_SHOWN_ERRORS],
            "skipped_pairs": len(self.skipped),
            "skipped": self.skipped[:_SHOWN_ERRORS],
            "judge": self.judge,
            "judge_calls": self.judge_calls,
            "judge_usage": self.usage.model_dump(),
            "judge_cost_usd": round(self.cost_usd, 8),
            "k": board.k if board else None,
            "bootstrap": board.bootstrap if board else None,
            "seed": board.seed if board else None,
            "confidence": board.confidence if board else None,
            "mle_exists": board.mle_exists if board else None,
            "warnings": self.warnings,
            "run_id": self.run_id,
            "panel_agreement": self.panel_agreement,
        }

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent)

    def to_csv(self) -> str:
        """One header line and one line per target, columns as in `ARENA_CSV_COLUMNS`."""
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=ARENA_CSV_COLUMNS, lineterminator="\n", extrasaction="ignore")
        writer.writeheader()
        for row in self.rows():
            writer.writerow({key: ("" if value is None else value) for key, value in row.items()})
        return buffer.getvalue()

    def to_table(self) -> Table:
        """A rich Table: the leaderboard (wins, losses, ties) with each target's turn-level mean
        and tests passed beside its ratings."""
        board = self.leaderboard
        level = f"{board.confidence:.0%} CI" if board else "95% CI"
        table = Table(title="Arena leaderboard", caption=self.caption())
        table.add_column("#", justify="right", no_wrap=True)
        rows = self.rows()
        table.add_column("Target", overflow="fold", min_width=min(12, max(len(r["target"]) for r in rows)))
        for name in ("BT", level, "Elo", "W", "L", "T", "Turn", "Pass"):
            table.add_column(name, justify="right", no_wrap=True)
        for row in rows:
            table.add_row(
                "-" if row["rank"] is None else str(row["rank"]),
                row["target"],
                _number(row["bt"]),
                _interval(row["ci_low"], row["ci_high"]),
                _number(row["elo"]),
                str(row["wins"]),
                str(row["losses"]),
                str(row["ties"]),
                "-" if row["turn_mean"] is None else f"{row['turn_mean']:.2f}",
                f"{row['passed']}/{row['tests']}",
            )
        return table

    def caption(self) -> str:
        board = self.leaderboard
        parts = [f"{len(self.battles)} battles from {len(self.judgments)} pairs judged in both orders by {self.judge}"]
        rate = self.order_disagreement_rate
        if rate is not None:
            parts.append(f"order disagreement {rate:.0%} ({self.disagreements} rated as ties)")
        if self.judge_errors:
            parts.append(f"{self.judge_errors} judge error(s)")
        if agreement := self.panel_agreement:
            shown = {
                k: "undefined" if agreement[k] is None else f"{agreement[k]:.3f}"
                for k in ("krippendorff_alpha", "gwet_ac1")
            }
            parts.append(
                f"judges' agreement on {agreement['items']} labels: Krippendorff's alpha {shown['krippendorff_alpha']}, "
                f"Gwet's AC1 {shown['gwet_ac1']}"
            )
        if board:
            parts.append(f"Elo K={board.k:g}")
            parts.append(
                f"{board.bootstrap} bootstrap rounds, seed {board.seed}" if board.bootstrap else "no bootstrap"
            )
        parts.append("Turn: mean of the target's turn-N scores; Pass: tests passed")
        return "; ".join(parts)

    def battle_records(self) -> list[dict[str, object]]:
        """The battles as Chatbot Arena records (pairs with a judge error are left out)."""
        return [j.to_record(self.judge) for j in self.judgments if j.ok]

    def write_battles(self, path: str | Path) -> Path:
        """Write the battles as JSONL, one Chatbot Arena record a line (`convoeval arena --battles`
        reads it back)."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("w", encoding="utf-8") as out:
            for record in self.battle_records():
                out.write(json.dumps(record, ensure_ascii=False) + "\n")
        return path

    def plot(self, path: str | Path) -> Path:
        """Draw the ratings with their intervals (.svg, .png or .pdf)."""
        if self.leaderboard is None:
            raise ValueError("no battles to plot")
        return plot_leaderboard(self.leaderboard, path)


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def _interval(low: float | None, high: float | None) -> str:
    """An interval that reads right whatever the signs: `-479 .. -78`, `12 .. 40`."""
    return "-" if low is None or high is None else f"{low:.0f} .. {high:.0f}"


def _votes(panel: Mapping[str, object], order: str) -> dict[str, object]:
    """Each panel judge's pairwise label in one order of a pair (`{judge: A | B | EQUAL | None}`)."""
    answers = panel.get(order)
    if not isinstance(answers, list):
        return {}
    return {str(a["judge"]): a["winner"] for a in answers if isinstance(a, dict)}
