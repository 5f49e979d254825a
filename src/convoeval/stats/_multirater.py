"""Percent agreement and the chance-corrected coefficients of Gwet's framework.

All four share one shape (Gwet 2014, Handbook of Inter-Rater Reliability, ch. 2-5):

    pa   = mean over items with >= 2 ratings of  sum_k r_ik (r_ik - 1) / (r_i (r_i - 1))
    coef = (pa - pe) / (1 - pe)

where r_ik is how many raters put item i in category k and r_i = sum_k r_ik.
Missing ratings are allowed: an item with one rating only feeds the category
shares pi_k = mean_i r_ik / r_i. They differ only in the chance agreement pe:

    percent agreement       pe = 0
    Randolph's kappa        pe = 1 / q                      (free marginals, = Brennan-Prediger)
    Gwet's AC1              pe = sum_k pi_k (1 - pi_k) / (q - 1)
    Fleiss' kappa           pe = sum_k pi_k^2

q is the number of DECLARED categories. Standard errors are Gwet's linearised
variance (the one irrCAC prints), intervals use Student's t with n - 1 df.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from ._data import Category, Matrix, Ratings, prepare
from ._estimate import Estimate, asymptotic, undefined

_CONFIDENCE = 0.95


def _coefficient(ratings: Ratings, pe: float, pe_items: np.ndarray, confidence: float, name: str) -> Estimate:
    counts = ratings.counts()
    r = counts.sum(axis=1)
    n = len(r)
    paired = r >= 2
    n_paired = int(paired.sum())
    if n_paired == 0:
        return undefined(f"{name} needs at least one item with two or more ratings", n)
    pair_agreement = (counts * (counts - 1)).sum(axis=1)
    pa_items = np.where(paired, pair_agreement / np.where(paired, r * (r - 1), 1), 0.0)
    pa = float(pa_items[paired].mean())
    if np.isclose(pe, 1.0):
        return undefined(f"{name} is undefined: chance agreement is 1 (one category only)", n)
    value = (pa - pe) / (1 - pe)
    if n < 2:
        return Estimate(value=value, n_items=n, confidence=confidence, pa=pa, pe=pe)
    # Gwet's linearisation: per-item contributions, then their variance.
    coef_items = (n / n_paired) * (pa_items - pe * paired) / (1 - pe)
    coef_items = coef_items - 2 * (1 - value) * (pe_items - pe) / (1 - pe)
    variance = float(((coef_items - value) ** 2).sum() / (n * (n - 1)))
    return asymptotic(value, np.sqrt(variance), n_items=n, confidence=confidence, df=n - 1, pa=pa, pe=pe)


def _category_shares(ratings: Ratings) -> tuple[np.ndarray, np.ndarray]:
    """(per-item shares r_ik / r_i, overall shares pi_k)."""
    counts = ratings.counts()
    shares = counts / counts.sum(axis=1, keepdims=True)
    return shares, shares.mean(axis=0)


def percent_agreement(matrix: Matrix, categories: Sequence[Category], *, confidence: float = _CONFIDENCE) -> Estimate:
    """Share of agreeing rater pairs, averaged over items (no chance correction). Its interval
    is Gwet's asymptotic one clipped to [0, 1], the range of a share.

    Args:
        matrix: items x raters; None/NaN = missing.
        categories: the declared categories.

    Example:
        >>> percent_agreement([[1, 1], [2, 1]], [1, 2]).value
        0.5
    """
    ratings = prepare(matrix, categories)
    zeros = np.zeros(ratings.n_items)
    estimate = _coefficient(ratings, 0.0, zeros, confidence, "percent agreement")
    if estimate.ci_low is None or estimate.ci_high is None:
        return estimate
    return replace(estimate, ci_low=max(0.0, estimate.ci_low), ci_high=min(1.0, estimate.ci_high))


def randolph_kappa(matrix: Matrix, categories: Sequence[Category], *, confidence: float = _CONFIDENCE) -> Estimate:
    """Randolph's free-marginal multirater kappa: chance agreement 1/q.

    q is the number of declared categories, used or not.

    Example:
        >>> round(randolph_kappa([[1, 1], [2, 2], [1, 2]], [1, 2, 3]).value, 4)
        0.5
    """
    ratings = prepare(matrix, categories)
    pe = 1.0 / ratings.q
    return _coefficient(ratings, pe, np.full(ratings.n_items, pe), confidence, "Randolph's kappa")


def gwet_ac1(matrix: Matrix, categories: Sequence[Category], *, confidence: float = _CONFIDENCE) -> Estimate:
    """Gwet's AC1: chance agreement sum_k pi_k (1 - pi_k) / (q - 1).

    Example:
        >>> round(gwet_ac1([[5, 5], [4, 5], [3, 3]], [1, 2, 3, 4, 5]).value, 4)
        0.6066
    """
    ratings = prepare(matrix, categories)
    shares, pi = _category_shares(ratings)
    q = ratings.q
    pe = float((pi * (1 - pi)).sum() / (q - 1))
    pe_items = (shares * (1 - pi)).sum(axis=1) / (q - 1)
    return _coefficient(ratings, pe, pe_items, confidence, "Gwet's AC1")


def fleiss_kappa(matrix: Matrix, categories: Sequence[Category], *, confidence: float = _CONFIDENCE) -> Estimate:
    """Fleiss' kappa (generalised to missing ratings as in Gwet 2014): pe = sum_k pi_k^2.

    Example:
        >>> round(fleiss_kappa([[1, 1], [2, 2], [1, 2]], [1, 2]).value, 4)
        0.3333
    """
    ratings = prepare(matrix, categories)
    shares, pi = _category_shares(ratings)
    pe = float((pi**2).sum())
    pe_items = shares @ pi
    return _coefficient(ratings, pe, pe_items, confidence, "Fleiss' kappa")
