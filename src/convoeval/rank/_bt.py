"""Bradley-Terry ratings by maximum likelihood, with bootstrap intervals.

Model: P(i beats j) = 1 / (1 + base ** ((R_j - R_i) / scale)), i.e. with
natural-log strengths theta, P = sigmoid(theta_i - theta_j) and
R_i = initial + scale * theta_i / ln(base). A tie counts as half a win for each
side (FastChat's "win counted twice, tie once each way"). Ratings are centred so
their mean is `initial`; no target is anchored.

The fit is Newton's method on the log-likelihood, all bootstrap resamples at
once. The maximum likelihood exists exactly when every split of the targets into
two groups has a win (or tie) of each group over the other (Hunter 2004, the
win graph is strongly connected). When it does not - a target never lost, never
won, or two groups never met - a tiny ridge penalty (`SEPARATION_RIDGE`) keeps
ratings finite; the result says so in `mle_exists`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ._battle import Battle, targets_of

if TYPE_CHECKING:  # numpy and scipy load when ratings are computed, not with `import convoeval`
    import numpy as np

SEPARATION_RIDGE = 1e-4
"""L2 penalty on natural-log strengths, used only when the MLE does not exist."""

_MAX_STEP = 4.0  # natural-log units per Newton step, keeps early steps sane
_TOLERANCE = 1e-10
_MAX_ITERATIONS = 500


@dataclass(frozen=True)
class BootstrapIntervals:
    """Bootstrap intervals of Bradley-Terry ratings.

    Attributes:
        intervals: target -> (low, high) on the Elo scale.
        rounds: bootstrap rounds drawn.
        separated: share of rounds whose resample had no maximum likelihood (a
            target never lost or never won); above about (1 - confidence) / 2 the
            interval ends reflect the ridge penalty, not the data.
    """

    intervals: dict[str, tuple[float, float]]
    rounds: int
    separated: float


@dataclass(frozen=True)
class BradleyTerryResult:
    """Ratings on the Elo scale, and whether they are a true maximum likelihood."""

    ratings: dict[str, float]
    mle_exists: bool


def win_matrix(battles: Sequence[Battle], targets: Sequence[str]) -> np.ndarray:
    """targets x targets: wins[i, j] = i's wins over j plus half their ties."""
    import numpy as np

    index = {target: i for i, target in enumerate(targets)}
    wins = np.zeros((len(targets), len(targets)))
    for battle in battles:
        a, b = index[battle.model_a], index[battle.model_b]
        wins[a, b] += battle.score_a
        wins[b, a] += 1.0 - battle.score_a
    return wins


def _strongly_connected(wins: np.ndarray, present: np.ndarray) -> np.ndarray:
    """(R,) whether the win graph among present targets is strongly connected."""
    import numpy as np

    size = wins.shape[-1]
    reach = (wins > 0) | np.eye(size, dtype=bool)
    for _ in range(max(1, math.ceil(math.log2(size))) + 1):
        reach = (reach.astype(float) @ reach.astype(float)) > 0
    absent = ~present  # left out after the closure: no path may go through a target that did not play
    return (reach | absent[:, :, None] | absent[:, None, :]).all(axis=(-2, -1))


def fit_strengths(wins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Natural-log strengths for each of R win matrices (R x M x M).

    Returns (theta, mle_exists): theta is R x M with mean 0 over the targets that
    played (NaN for those that did not), mle_exists is R booleans.
    """
    import numpy as np
    from scipy.special import expit

    games = wins + np.swapaxes(wins, -1, -2)
    present = games.sum(axis=-1) > 0
    exists = _strongly_connected(wins, present)
    size = wins.shape[-1]
    ridge = np.where(exists, 0.0, SEPARATION_RIDGE)[:, None] * present + (~present) * 1.0
    # Adding 11'/M fixes the free common shift without changing the optimum.
    gauge = np.full((size, size), 1.0 / size)
    diagonal = np.arange(size)
    theta = np.zeros(wins.shape[:-1])
    for _ in range(_MAX_ITERATIONS):
        p = expit(theta[:, :, None] - theta[:, None, :])
        gradient = (games * p - wins).sum(axis=-1) + ridge * theta
        curvature = games * p * (1.0 - p)
        hessian = -curvature + gauge
        hessian[:, diagonal, diagonal] += curvature.sum(axis=-1) + ridge
        step = np.linalg.solve(hessian, gradient[..., None])[..., 0]
        largest = np.abs(step).max(axis=-1, keepdims=True)
        step = step * np.minimum(1.0, _MAX_STEP / np.maximum(largest, 1e-300))
        theta = theta - step
        if largest.max() < _TOLERANCE:
            break
    theta = np.where(present, theta, np.nan)
    theta = theta - np.nanmean(theta, axis=-1, keepdims=True)
    return theta, exists


def _to_points(theta: np.ndarray, initial: float, base: float, scale: float) -> np.ndarray:
    return initial + scale * theta / math.log(base)


def bradley_terry(
    battles: Sequence[Battle],
    *,
    initial: float = 1000.0,
    base: float = 10.0,
    scale: float = 400.0,
) -> BradleyTerryResult:
    """Bradley-Terry maximum-likelihood ratings on the Elo scale, mean `initial`.

    Args:
        battles: the battles; order does not matter.
        initial: the mean rating.
        base, scale: a rating difference of `scale` means odds of `base` to 1.

    Example:
        >>> battles = [Battle("a", "b", "model_a")] * 2 + [Battle("a", "b", "model_b")]
        >>> {t: round(r, 1) for t, r in bradley_terry(battles).ratings.items()}
        {'a': 1060.2, 'b': 939.8}
    """
    if not battles:
        raise ValueError("Bradley-Terry needs at least one battle")
    targets = targets_of(battles)
    theta, exists = fit_strengths(win_matrix(battles, targets)[None])
    points = _to_points(theta[0], initial, base, scale)
    return BradleyTerryResult(
        ratings={target: float(points[i]) for i, target in enumerate(targets)},
        mle_exists=bool(exists[0]),
    )


def bradley_terry_intervals(
    battles: Sequence[Battle],
    *,
    rounds: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    initial: float = 1000.0,
    base: float = 10.0,
    scale: float = 400.0,
) -> BootstrapIntervals:
    """Percentile bootstrap intervals of the Bradley-Terry ratings.

    Each round resamples the battles with replacement and refits (as Chatbot
    Arena does); the interval is the central `confidence` share of the ratings.

    Args:
        battles: the battles.
        rounds: bootstrap rounds.
        seed: seed of the resampling; the same seed gives the same intervals.
        confidence: coverage of the interval.

    Example:
        >>> battles = [Battle("a", "b", "model_a")] * 6 + [Battle("a", "b", "model_b")] * 4
        >>> low, high = bradley_terry_intervals(battles, rounds=200).intervals["a"]
        >>> low < 1035 < high
        True
    """
    import numpy as np

    if not battles:
        raise ValueError("Bradley-Terry needs at least one battle")
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, got {rounds}")
    targets = targets_of(battles)
    size = len(targets)
    per_battle = np.stack([win_matrix([battle], targets).ravel() for battle in battles])
    rng = np.random.default_rng(seed)
    draws = rng.multinomial(len(battles), np.full(len(battles), 1.0 / len(battles)), size=rounds)
    chunk = max(1, 2_000_000 // (size * size))
    points, separated = [], 0
    for start in range(0, rounds, chunk):
        wins = (draws[start : start + chunk] @ per_battle).reshape(-1, size, size)
        theta, exists = fit_strengths(wins)
        points.append(_to_points(theta, initial, base, scale))
        separated += int((~exists).sum())
    ratings = np.concatenate(points)
    tail = (1.0 - confidence) / 2 * 100
    low, high = np.nanpercentile(ratings, [tail, 100 - tail], axis=0)
    return BootstrapIntervals(
        intervals={target: (float(low[i]), float(high[i])) for i, target in enumerate(targets)},
        rounds=rounds,
        separated=separated / rounds,
    )
