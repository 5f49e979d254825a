"""Agreement of pairwise votes, as FastChat's `fastchat/llm_judge/compute_agreement.py` computes it
(MT-Bench, Zheng et al. 2023, tables 2 and 3).

A vote is a Chatbot Arena record `{question_id, model_a, model_b, winner[, turn]}` (JSON Lines, or
a JSON list as the `mt_bench_human_judgments` files are). Votes on the same question, pair of
models (in either order) and turn (1 when absent) are one item. Two raters: every vote of the
first on an item is paired with every vote of the second on it; one rater (humans among
themselves): every two votes of that item. A pair agrees when both votes name the same model or
both are ties (any winner containing "tie": "tie (bothbad)", "tie (inconsistent)"). "Without
ties" leaves out every pair in which either vote is a tie. A vote whose `judge` is one of MT-Bench's
authors (`author_*`, beside the `expert_*` votes of its human judgments) is left out: FastChat's
`get_judge_name` counts only the experts as humans.

Example:
    >>> first = [Vote(81, "x", "y", "model_a"), Vote(82, "x", "y", "tie")]
    >>> second = [Vote(81, "y", "x", "model_b"), Vote(82, "y", "x", "model_a")]
    >>> [(t.turn, t.with_ties, t.without_ties) for t in votes_agreement(first, second)]
    [(1, (1, 2), (1, 1))]
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ._battle import BattleFileError, read_records

Key = tuple[int, str, str, str]  # turn, question, first model, second model (sorted)


@dataclass(frozen=True)
class Vote:
    """One rater's vote on a question: "model_a", "model_b", or a tie ("tie", "tie (bothbad)")."""

    question_id: object
    model_a: str
    model_b: str
    winner: str
    turn: int = 1
    author: bool = False  # cast by one of MT-Bench's authors: not a human vote to FastChat

    @property
    def tie(self) -> bool:
        return "tie" in self.winner

    def key_and_winner(self) -> tuple[Key, str]:
        """The item (models sorted, as compute_agreement sorts them) and the vote for that order."""
        if self.model_a < self.model_b:
            return (self.turn, str(self.question_id), self.model_a, self.model_b), self.winner
        swapped = {"model_a": "model_b", "model_b": "model_a"}.get(self.winner, self.winner)
        return (self.turn, str(self.question_id), self.model_b, self.model_a), swapped


@dataclass(frozen=True)
class TurnAgreement:
    """One turn's agreement: (agreeing pairs, pairs) with ties and without ties."""

    turn: int
    with_ties: tuple[int, int]
    without_ties: tuple[int, int]

    def to_dict(self) -> dict[str, object]:
        def part(counts: tuple[int, int]) -> dict[str, object]:
            agree, total = counts
            return {"agree": agree, "total": total, "ratio": agree / total if total else None}

        return {"turn": self.turn, "with_ties": part(self.with_ties), "without_ties": part(self.without_ties)}


def _vote(record: object) -> Vote:
    if not isinstance(record, dict):
        raise ValueError(f"expected a JSON object, got {record!r:.60}")
    missing = [k for k in ("question_id", "model_a", "model_b", "winner") if k not in record]
    if missing:
        raise ValueError(f"missing field {', '.join(missing)}")
    names = [record["model_a"], record["model_b"]]
    if not all(isinstance(n, str) and n for n in names) or names[0] == names[1]:
        raise ValueError(f"model_a and model_b must be two different names, got {names!r:.80}")
    winner, turn = record["winner"], record.get("turn", 1)
    if not isinstance(winner, str) or not (winner in ("model_a", "model_b") or "tie" in winner):
        raise ValueError(f"winner must be model_a, model_b or a tie, got {winner!r:.60}")
    if isinstance(turn, bool) or not isinstance(turn, int) or turn < 1:
        raise ValueError(f"turn must be a number from 1, got {turn!r:.40}")
    judge = record.get("judge")
    author = isinstance(judge, str) and judge.startswith("author_")
    return Vote(record["question_id"], names[0], names[1], winner, turn, author)


def read_votes(path: str | Path) -> list[Vote]:
    """The votes of a JSON Lines file, or of a JSON file holding one list of records.

    Raises:
        BattleFileError: `file:line: reason` (`file: vote N: reason` in a JSON list).
    """
    path = Path(path)
    votes = []
    for where, record in read_records(path, "vote"):
        try:
            votes.append(_vote(record))
        except ValueError as error:
            raise BattleFileError(f"{where}: {error}") from None
    if not votes:
        raise BattleFileError(f"{path}: no votes in the file")
    return votes


def _by_item(votes: Sequence[Vote]) -> dict[Key, list[str]]:
    items: dict[Key, list[str]] = {}
    for vote in (v for v in votes if not v.author):
        key, winner = vote.key_and_winner()
        items.setdefault(key, []).append(winner)
    return items


def _agrees(first: str, second: str) -> bool:
    return ("tie" in first and "tie" in second) or first == second


def votes_agreement(first: Sequence[Vote], second: Sequence[Vote] | None = None) -> list[TurnAgreement]:
    """Per turn, the agreement of `first` with `second` (or, without `second`, of `first`'s
    raters among themselves), with and without ties, as compute_agreement.py counts it (authors'
    votes left out)."""
    a = _by_item(first)
    b = _by_item(second) if second is not None else None
    counts: dict[int, list[int]] = {}
    for key, votes in a.items():
        if b is None:
            pairs = list(itertools.combinations(votes, 2))
        else:
            pairs = list(itertools.product(votes, b.get(key, [])))
        tally = counts.setdefault(key[0], [0, 0, 0, 0])
        for x, y in pairs:
            same = _agrees(x, y)
            tally[0] += same
            tally[1] += 1
            if "tie" not in x and "tie" not in y:
                tally[2] += same
                tally[3] += 1
    return [TurnAgreement(turn, (c[0], c[1]), (c[2], c[3])) for turn, c in sorted(counts.items())]
