"""Krippendorff's alpha from the coincidence matrix (Krippendorff 2011,
"Computing Krippendorff's Alpha-Reliability").

For each item u with m_u >= 2 ratings and category counts c_u:

    o_ck = sum_u (c_uc c_uk - [c == k] c_uc) / (m_u - 1)      coincidences
    n_c  = sum_k o_ck,  n = sum_c n_c                          pairable values
    alpha = 1 - (n - 1) * sum_ck o_ck d_ck / sum_ck n_c n_k d_ck

with the squared difference d_ck of the level:

    nominal   d_ck = [c != k]
    ordinal   d_ck = (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2   (declared order)
    interval  d_ck = (v_c - v_k)^2                               (numeric categories)

Missing ratings are fine; items with fewer than two ratings are not pairable.
The interval is a seeded percentile bootstrap over items.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from ._data import AgreementInputError, Category, Matrix, Ratings, prepare
from ._estimate import Estimate, bootstrapped, undefined

#: The level of measurement of the categories: which differences between them count, and how much.
MeasurementLevel = Literal["nominal", "ordinal", "interval"]


def _item_coincidences(ratings: Ratings) -> np.ndarray:
    """items x q x q: each item's contribution to the coincidence matrix."""
    counts = ratings.counts()
    m = counts.sum(axis=1)
    pairable = m >= 2
    outer = counts[:, :, None] * counts[:, None, :]
    outer -= counts[:, :, None] * np.eye(ratings.q)[None, :, :]
    scale = np.where(pairable, 1.0 / np.where(pairable, m - 1, 1), 0.0)
    return outer * scale[:, None, None]


def _distances(level: MeasurementLevel, marginals: np.ndarray, values: np.ndarray | None) -> np.ndarray:
    """(..., q, q) squared differences for the level; marginals are (..., q)."""
    q = marginals.shape[-1]
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(q), (*marginals.shape[:-1], q, q))
    if level == "interval":
        assert values is not None
        d = (values[:, None] - values[None, :]) ** 2
        return np.broadcast_to(d, (*marginals.shape[:-1], q, q))
    # ordinal: n_c/2 + n_{c+1} + ... + n_{k-1} + n_k/2 for the categories between c and k
    positions = np.arange(q)
    high = np.maximum.outer(positions, positions)
    low = np.minimum.outer(positions, positions)
    through = np.cumsum(marginals, axis=-1)  # sum_{g <= k}
    before = through - marginals  # sum_{g < c}
    span = through[..., high] - before[..., low]
    ends = (marginals[..., :, None] + marginals[..., None, :]) / 2
    return (span - ends) ** 2


def _alpha(coincidences: np.ndarray, level: MeasurementLevel, values: np.ndarray | None) -> np.ndarray:
    """alpha for one or many (..., q, q) coincidence matrices; NaN where undefined."""
    marginals = coincidences.sum(axis=-1)
    n = marginals.sum(axis=-1)
    d = _distances(level, marginals, values)
    observed = (coincidences * d).sum(axis=(-2, -1))
    expected = (marginals[..., :, None] * marginals[..., None, :] * d).sum(axis=(-2, -1))
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n - 1) * observed / expected
    return np.where((expected > 0) & (n > 1), alpha, np.nan)


def krippendorff_alpha(
    matrix: Matrix,
    categories: Sequence[Category],
    level: MeasurementLevel = "nominal",
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Estimate:
    """Krippendorff's alpha at the given level of measurement.

    Args:
        matrix: items x raters; None/NaN = missing.
        categories: the declared categories, in order (ordinal uses the order,
            interval needs numbers).
        level: "nominal", "ordinal" or "interval".
        bootstrap: resamples of items for the interval (0 = none).
        seed: seed of the resampling.

    Example:
        >>> round(krippendorff_alpha([[1, 1], [2, 2], [1, 2]], [1, 2]).value, 4)
        0.4444
    """
    if level not in ("nominal", "ordinal", "interval"):
        raise AgreementInputError(f"level must be nominal, ordinal or interval, got {level!r}")
    ratings = prepare(matrix, categories)
    values = ratings.numeric_values() if level == "interval" else None
    per_item = _item_coincidences(ratings)
    pairable = int((ratings.counts().sum(axis=1) >= 2).sum())
    value = float(_alpha(per_item.sum(axis=0), level, values))
    if np.isnan(value):
        return undefined(
            "Krippendorff's alpha is undefined: no disagreement is possible "
            "(fewer than two pairable values or a single category used)",
            pairable,
        )
    flat = per_item.reshape(ratings.n_items, -1)
    q = ratings.q

    def resampled(indices: np.ndarray) -> np.ndarray:
        weights = np.zeros((indices.shape[0], ratings.n_items))
        np.add.at(weights, (np.arange(indices.shape[0])[:, None], indices), 1.0)
        return _alpha((weights @ flat).reshape(-1, q, q), level, values)

    return bootstrapped(
        value,
        resampled,
        n_items=ratings.n_items,
        rounds=bootstrap,
        seed=seed,
        confidence=confidence,
    )
