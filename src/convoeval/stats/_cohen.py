"""Cohen's kappa for two raters, unweighted or weighted.

With agreement weights w_ij (1 on the diagonal), p_ij the joint shares of the
two raters' categories, p_i. and p_.j the row and column marginals:

    po = sum_ij w_ij p_ij,   pe = sum_ij w_ij p_i. p_.j,   kappa = (po - pe) / (1 - pe)

Unweighted: w = identity. Quadratic: w_ij = 1 - (i - j)^2 / (q - 1)^2 over the
positions of the declared categories. Linear: w_ij = 1 - |i - j| / (q - 1).

Standard error: the large-sample variance of Fleiss, Cohen & Everitt (1969),

    var = [ sum_ij p_ij (w_ij - (wbar_i. + wbar_.j)(1 - kappa))^2
            - (kappa - pe (1 - kappa))^2 ] / (n (1 - pe)^2)

with wbar_i. = sum_j p_.j w_ij and wbar_.j = sum_i p_i. w_ij. For the identity
weights this is their unweighted formula. Interval: normal, value +/- z se.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from ._data import Category, Matrix, prepare, two_raters
from ._estimate import Estimate, asymptotic, undefined

Weights = Literal["quadratic", "linear"] | None


def _agreement_weights(q: int, weights: Weights) -> np.ndarray:
    positions = np.arange(q, dtype=float)
    distance = np.abs(positions[:, None] - positions[None, :]) / (q - 1)
    if weights is None:
        return np.eye(q)
    if weights == "linear":
        return 1.0 - distance
    if weights == "quadratic":
        return 1.0 - distance**2
    raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")


def cohen_kappa(
    matrix: Matrix,
    categories: Sequence[Category],
    *,
    weights: Weights = None,
    confidence: float = 0.95,
) -> Estimate:
    """Cohen's kappa between the two columns of `matrix` (items rated by both).

    Args:
        matrix: items x 2 raters; None/NaN = missing (such items are skipped).
        categories: the declared categories, in order (the order matters for weights).
        weights: None (unweighted), "linear" or "quadratic".
        confidence: level of the asymptotic interval.

    Example:
        >>> round(cohen_kappa([[1, 1], [2, 2], [1, 2], [2, 2]], [1, 2]).value, 4)
        0.5
    """
    ratings = prepare(matrix, categories)
    a, b = two_raters(ratings, "Cohen's kappa")
    q, n = ratings.q, len(a)
    table = np.zeros((q, q))
    np.add.at(table, (a, b), 1.0)
    p = table / n
    rows, cols = p.sum(axis=1), p.sum(axis=0)
    w = _agreement_weights(q, weights)
    po = float((w * p).sum())
    pe = float((w * np.outer(rows, cols)).sum())
    if np.isclose(pe, 1.0):
        return undefined("Cohen's kappa is undefined: chance agreement is 1", n)
    kappa = (po - pe) / (1 - pe)
    w_row = w @ cols  # wbar_i.
    w_col = rows @ w  # wbar_.j
    spread = w - (w_row[:, None] + w_col[None, :]) * (1 - kappa)
    variance = ((p * spread**2).sum() - (kappa - pe * (1 - kappa)) ** 2) / (n * (1 - pe) ** 2)
    return asymptotic(kappa, np.sqrt(max(variance, 0.0)), n_items=n, confidence=confidence, pa=po, pe=pe)
