"""Rank correlations between two raters: Spearman's rho and Kendall's tau-b.

Ratings are replaced by the positions of their categories in the declared
order, so labels such as "poor" < "fair" < "good" work too. Values come from
scipy.stats; intervals are a seeded percentile bootstrap over items (rank
correlations of 1-5 scores are full of ties, where the textbook Fisher-z
variances do not hold).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np

from ._data import Category, Matrix, prepare, two_raters
from ._estimate import Estimate, bootstrapped, scipy_stats, undefined


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    x = x - x.mean(axis=1, keepdims=True)
    y = y - y.mean(axis=1, keepdims=True)
    denominator = np.sqrt((x * x).sum(axis=1) * (y * y).sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(denominator > 0, (x * y).sum(axis=1) / denominator, np.nan)


def _scipy_value(function, a: np.ndarray, b: np.ndarray) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # constant input -> NaN, reported as undefined
        return float(function(a, b).statistic)


def resampled_spearman(a: np.ndarray, b: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Spearman's rho of each resample (one row of item indices each)."""
    ranks_a = scipy_stats().rankdata(a[indices], axis=1)
    ranks_b = scipy_stats().rankdata(b[indices], axis=1)
    return _rowwise_pearson(ranks_a, ranks_b)


def resampled_kendall(a: np.ndarray, b: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Kendall's tau-b of each resample, from how often each item was drawn.

    Pairs of copies of one item are ties for both raters and drop out of every term.
    """
    sign_a = np.sign(a[:, None] - a[None, :]).astype(float)
    sign_b = np.sign(b[:, None] - b[None, :]).astype(float)
    weights = np.zeros((indices.shape[0], len(a)))
    np.add.at(weights, (np.arange(indices.shape[0])[:, None], indices), 1.0)
    concordance = np.einsum("ri,ij,rj->r", weights, sign_a * sign_b, weights)
    untied_a = np.einsum("ri,ij,rj->r", weights, np.abs(sign_a), weights)
    untied_b = np.einsum("ri,ij,rj->r", weights, np.abs(sign_b), weights)
    with np.errstate(divide="ignore", invalid="ignore"):
        tau = concordance / np.sqrt(untied_a * untied_b)
    return np.where(untied_a * untied_b > 0, tau, np.nan)


def _rank_correlation(
    matrix: Matrix,
    categories: Sequence[Category],
    name: str,
    value_of,
    resampled,
    bootstrap: int,
    seed: int,
    confidence: float,
) -> Estimate:
    a, b = two_raters(prepare(matrix, categories), name)
    value = _scipy_value(value_of, a, b)
    if np.isnan(value):
        return undefined(f"{name} is undefined: a rater gave one score only", len(a))
    return bootstrapped(
        value,
        lambda indices: resampled(a, b, indices),
        n_items=len(a),
        rounds=bootstrap,
        seed=seed,
        confidence=confidence,
    )


def spearman(
    matrix: Matrix,
    categories: Sequence[Category],
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Estimate:
    """Spearman's rank correlation between the two columns of `matrix`.

    Args:
        matrix: items x 2 raters; items missing either rating are skipped.
        categories: the declared categories, in order.
        bootstrap: resamples of items for the interval (0 = none).
        seed: seed of the resampling.

    Example:
        >>> round(spearman([[1, 1], [2, 3], [3, 2], [4, 4]], [1, 2, 3, 4], bootstrap=0).value, 4)
        0.8
    """
    return _rank_correlation(
        matrix,
        categories,
        "Spearman's rho",
        lambda x, y: scipy_stats().spearmanr(x, y),
        resampled_spearman,
        bootstrap,
        seed,
        confidence,
    )


def kendall(
    matrix: Matrix,
    categories: Sequence[Category],
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> Estimate:
    """Kendall's tau-b (ties corrected) between the two columns of `matrix`.

    Args:
        matrix: items x 2 raters; items missing either rating are skipped.
        categories: the declared categories, in order.
        bootstrap: resamples of items for the interval (0 = none).
        seed: seed of the resampling.

    Example:
        >>> round(kendall([[1, 1], [2, 3], [3, 2], [4, 4]], [1, 2, 3, 4], bootstrap=0).value, 4)
        0.6667
    """
    return _rank_correlation(
        matrix,
        categories,
        "Kendall's tau",
        lambda x, y: scipy_stats().kendalltau(x, y),
        resampled_kendall,
        bootstrap,
        seed,
        confidence,
    )
