"""The arena leaderboard: Elo, Bradley-Terry with intervals, and the vote counts."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from ._battle import Battle, targets_of
from ._bt import bradley_terry, bradley_terry_intervals
from ._elo import online_elo

_SAME_RATING = 1e-6
"""Bradley-Terry ratings closer than this (points) are equal: the fit converges far closer."""


@dataclass(frozen=True)
class LeaderboardRow:
    """One target's line on the leaderboard.

    Attributes:
        rank: 1 for the highest Bradley-Terry rating; equal ratings share a rank (1, 1, 3).
        target: the target's name.
        elo: online Elo rating after all battles (battle order matters).
        bt: Bradley-Terry maximum-likelihood rating on the Elo scale.
        ci_low, ci_high: bootstrap interval of `bt` (None without bootstrap).
        votes: battles the target took part in.
        wins, losses, ties: their outcomes for this target.
    """

    rank: int
    target: str
    elo: float
    bt: float
    ci_low: float | None
    ci_high: float | None
    votes: int
    wins: int
    losses: int
    ties: int

    def to_dict(self) -> dict[str, object]:
        return {
            "target": self.target,
            "elo": self.elo,
            "bt": self.bt,
            "ci_low": self.ci_low,
            "ci_high": self.ci_high,
            "votes": self.votes,
            "wins": self.wins,
            "losses": self.losses,
            "ties": self.ties,
            "rank": self.rank,
        }


@dataclass(frozen=True)
class Leaderboard:
    """Rows sorted by Bradley-Terry rating, with how they were computed.

    Attributes:
        rows: one per target, best first.
        battles: number of battles used.
        k: Elo K-factor.
        bootstrap: bootstrap rounds of the intervals (0 = none).
        seed: seed of the bootstrap.
        confidence: coverage of the intervals.
        mle_exists: False when the Bradley-Terry maximum likelihood does not exist.
        warnings: what a reader should know before trusting the numbers.
    """

    rows: list[LeaderboardRow]
    battles: int
    k: float
    bootstrap: int
    seed: int
    confidence: float
    mle_exists: bool
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        """`{"leaderboard": [{target, elo, bt, ci_low, ci_high, votes, wins, losses, ties, rank}]}`.

        Rows are best first.
        """
        return {"leaderboard": [row.to_dict() for row in self.rows]}


def _record(battles: Sequence[Battle], target: str) -> tuple[int, int, int]:
    wins = losses = ties = 0
    for battle in battles:
        if target not in (battle.model_a, battle.model_b):
            continue
        if battle.winner == "tie":
            ties += 1
        elif (battle.winner == "model_a") == (battle.model_a == target):
            wins += 1
        else:
            losses += 1
    return wins, losses, ties


def leaderboard_from_battles(
    battles: Sequence[Battle],
    *,
    k: float = 32.0,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Leaderboard:
    """Rate targets from judged battles: online Elo and Bradley-Terry with intervals.

    Args:
        battles: the battles in the order they were judged (Elo depends on it).
        k: Elo K-factor (32 as TD-Eval, 4 as Chatbot Arena).
        bootstrap: bootstrap rounds for the Bradley-Terry intervals (0 = none).
        seed: seed of the bootstrap.
        confidence: coverage of the intervals.

    Example:
        >>> board = leaderboard_from_battles(read_battles("battles.jsonl"))  # doctest: +SKIP
        >>> print(board.to_dict())  # doctest: +SKIP
    """
    if not battles:
        raise ValueError("no battles to rate")
    if bootstrap < 0:
        raise ValueError(f"bootstrap rounds cannot be negative, got {bootstrap}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    elo = online_elo(battles, k=k).ratings
    bt = bradley_terry(battles)
    warnings: list[str] = []
    if not bt.mle_exists:
        warnings.append(
            "the Bradley-Terry maximum likelihood does not exist for these battles (a target "
            "never lost, never won, or some targets never met); ratings are kept finite by a "
            "tiny ridge penalty, so gaps to those targets are lower bounds, not estimates"
        )
    intervals: dict[str, tuple[float, float]] = {}
    if bootstrap:
        result = bradley_terry_intervals(battles, rounds=bootstrap, seed=seed, confidence=confidence)
        intervals = result.intervals
        if result.separated > (1 - confidence) / 2:
            warnings.append(
                f"in {result.separated:.0%} of bootstrap rounds a target never lost or never won; "
                "the intervals then show the fit's ridge penalty, not the data: do not rank by them; "
                "collect more battles"
            )
    order = sorted(targets_of(battles), key=lambda t: (-bt.ratings[t], -elo[t], t))
    rows: list[LeaderboardRow] = []
    for position, target in enumerate(order, start=1):
        tied = bool(rows) and abs(bt.ratings[target] - rows[-1].bt) < _SAME_RATING
        rank = rows[-1].rank if tied else position
        wins, losses, ties = _record(battles, target)
        low, high = intervals.get(target, (None, None))
        rows.append(
            LeaderboardRow(
                rank=rank,
                target=target,
                elo=elo[target],
                bt=bt.ratings[target],
                ci_low=low,
                ci_high=high,
                votes=wins + losses + ties,
                wins=wins,
                losses=losses,
                ties=ties,
            )
        )
    return Leaderboard(
        rows=rows,
        battles=len(battles),
        k=k,
        bootstrap=bootstrap,
        seed=seed,
        confidence=confidence,
        mle_exists=bt.mle_exists,
        warnings=warnings,
    )
