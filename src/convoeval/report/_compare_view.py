"""What the compare page needs to put two runs' conversations side by side.

For each paired test: both transcripts cut into rows, one row per turn (plus the messages
before the first turn), each side with its messages and the turn's grader entry. A row is
marked where the two conversations first diverge (the user's message or the target's reply
differs) and wherever the turn's verdict changed between the runs.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..results import EvaluationResult, Message, ScoreEntry
from ._compare import Comparison, PairedResult, pairing


@dataclass
class Side:
    """One run's messages and grading for one row."""

    messages: list[Message] = field(default_factory=list)
    entry: ScoreEntry | None = None

    @property
    def said(self) -> tuple[tuple[str, str], ...]:
        """What differs between runs: user and target text (tool traffic is shown, not compared)."""
        return tuple(
            (m.source, m.content.strip()) for m in self.messages if m.source in ("user", "simulator", "target")
        )


@dataclass
class Row:
    """A turn (or, with `turn` None, what came before the first turn) in both runs."""

    turn: int | None
    a: Side
    b: Side
    first_divergence: bool = False

    @property
    def verdict_changed(self) -> bool:
        va = self.a.entry.verdict if self.a.entry else None
        vb = self.b.entry.verdict if self.b.entry else None
        return self.turn is not None and va != vb and (va is not None or vb is not None)


@dataclass
class PairView:
    """One test in both runs: the pair, both results, the rows and the conversation-level entries."""

    pair: PairedResult
    a: EvaluationResult | None
    b: EvaluationResult | None
    rows: list[Row]
    conversation_a: ScoreEntry | None = None
    conversation_b: ScoreEntry | None = None

    @property
    def divergence(self) -> int | None:
        """The first turn where the conversations differ (None: same all along)."""
        return next((r.turn for r in self.rows if r.first_divergence), None)

    @property
    def changed_turns(self) -> list[int]:
        return [r.turn for r in self.rows if r.verdict_changed and r.turn is not None]


def _by_turn(result: EvaluationResult | None) -> tuple[dict[int | None, Side], ScoreEntry | None]:
    sides: dict[int | None, Side] = {}
    if result is None:
        return sides, None
    current: int | None = None
    for message in result.output:
        current = message.turn if message.turn is not None else current
        sides.setdefault(current, Side()).messages.append(message)
    conversation = None
    for entry in result.scores:
        if entry.type == "turn" and entry.name.startswith("turn-") and entry.name[5:].isdigit():
            sides.setdefault(int(entry.name[5:]), Side()).entry = entry
        elif entry.type == "conversation":
            conversation = entry
    return sides, conversation


def pair_view(pair: PairedResult, a: EvaluationResult | None, b: EvaluationResult | None) -> PairView:
    """Both conversations of one pair, turn by turn, with the first divergence marked."""
    sides_a, conv_a = _by_turn(a)
    sides_b, conv_b = _by_turn(b)
    turns = sorted({t for t in (*sides_a, *sides_b) if t is not None})
    keys: list[int | None] = ([None] if None in sides_a or None in sides_b else []) + list(turns)
    rows = [Row(turn=t, a=sides_a.get(t, Side()), b=sides_b.get(t, Side())) for t in keys]
    if a is not None and b is not None:
        for row in rows:
            if row.turn is not None and row.a.said != row.b.said:
                row.first_divergence = True
                break
    return PairView(pair=pair, a=a, b=b, rows=rows, conversation_a=conv_a, conversation_b=conv_b)


def pair_views(
    comparison: Comparison, results_a: Iterable[EvaluationResult], results_b: Iterable[EvaluationResult]
) -> list[PairView]:
    """A `PairView` for every pair of the comparison, in its order."""
    results_a, results_b = list(results_a), list(results_b)
    key_of = pairing(results_a, results_b)
    first = {key_of(r): r for r in results_a}
    second = {key_of(r): r for r in results_b}
    return [
        pair_view(p, first.get((p.suite, p.test_id, p.target)), second.get((p.suite, p.test_id, p.target)))
        for p in comparison.pairs
    ]
