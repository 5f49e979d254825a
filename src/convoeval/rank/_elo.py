"""Online Elo: ratings updated battle by battle, in the order given.

For a battle of A against B with A's score S (1 win, 0.5 tie, 0 loss):

    E_A = 1 / (1 + base ** ((R_B - R_A) / scale))
    R_A += K (S - E_A),   R_B -= K (S - E_A)

both updates computed from the ratings before the battle (TD-Eval and
FastChat's compute_online_elo). K = 32 is TD-Eval's choice, K = 4 Chatbot Arena's.
The result depends on the battle order; Bradley-Terry does not.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from ._battle import Battle, targets_of


@dataclass(frozen=True)
class EloResult:
    """Final ratings and, per target, its rating before its first battle and after each one."""

    ratings: dict[str, float]
    history: dict[str, list[float]]


def online_elo(
    battles: Sequence[Battle],
    *,
    k: float = 32.0,
    initial: float = 1000.0,
    base: float = 10.0,
    scale: float = 400.0,
) -> EloResult:
    """Online Elo ratings in battle order.

    Args:
        battles: the battles, in the order they happened.
        k: the K-factor (32 as in TD-Eval; 4 as in Chatbot Arena).
        initial: every target's starting rating.
        base, scale: a difference of `scale` points means odds of `base` to 1.

    Example:
        >>> online_elo([Battle("a", "b", "model_a")]).ratings
        {'a': 1016.0, 'b': 984.0}
    """
    ratings = {target: float(initial) for target in targets_of(battles)}
    history = {target: [float(initial)] for target in ratings}
    for battle in battles:
        a, b = battle.model_a, battle.model_b
        expected_a = 1.0 / (1.0 + base ** ((ratings[b] - ratings[a]) / scale))
        delta = k * (battle.score_a - expected_a)
        ratings[a] += delta
        ratings[b] -= delta
        history[a].append(ratings[a])
        history[b].append(ratings[b])
    return EloResult(ratings=ratings, history=history)


def elo_history_interval(history: Sequence[float], z: float = 1.959963984540054) -> tuple[float, float]:
    """TD-Eval's interval for an online Elo rating: final +/- z * std(history) / sqrt(len).

    `history` includes the initial rating; std is the population one (ddof = 0).
    This is what TD-Eval reports; it describes the rating's drift, not sampling
    uncertainty, so the leaderboard uses bootstrap intervals instead.
    """
    if not history:
        raise ValueError("an empty rating history has no interval")
    mean = math.fsum(history) / len(history)
    std = math.sqrt(math.fsum((value - mean) ** 2 for value in history) / len(history))
    half = z * std / math.sqrt(len(history))
    return history[-1] - half, history[-1] + half
