"""Pass rates in pure Python (no numpy, bottom layer): the Wilson interval, and the confidence
sequence that decides when adaptive trials (`--trials auto`) may stop.

`run` uses the stopping rule while trials run and the terminal summary shows Wilson intervals;
neither may load numpy (`stats` holds the resampling statistics).

Wilson score interval (Wilson 1927; Brown, Cai & DasGupta 2001, "Interval Estimation for a
Binomial Proportion", eq. 4), with p = c/n and z the (1 + confidence)/2 normal quantile:

    (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)

Adaptive trials use a beta-binomial mixture confidence sequence (Robbins 1970, "Statistical
methods related to the law of the iterated logarithm"; Howard, Ramdas, McAuliffe & Sekhon 2021,
"Time-uniform, nonparametric, nonasymptotic confidence sequences", section 3). After n trials
with s passes, for a pass rate p the mixture over a Beta(a, b) prior of likelihood ratios

    M_n(p) = [B(a + s, b + n - s) / B(a, b)] / [p^s (1 - p)^(n - s)]

is a nonnegative martingale with mean 1 when p is the true pass rate, so by Ville's inequality
P(there is an n with M_n(p) >= 1/alpha) <= alpha. The set {p : M_n(p) < 1/alpha} is therefore a
confidence sequence: it holds the true pass rate at every n at once, with probability 1 - alpha,
so it may be checked after every trial and trials may stop as soon as it excludes the threshold.
When it lies wholly above the threshold the test passes, wholly below it fails; the chance that
the decision is wrong is at most alpha whatever the true pass rate and whenever trials stop. The
prior is centred on the threshold with one pseudo-trial (a = threshold, b = 1 - threshold):
at threshold 0.8 and alpha 0.05 a test that always fails is decided after 4 trials and one that
always passes after 17 (a uniform prior needs 3 and 29).
"""

from __future__ import annotations

import math
from statistics import NormalDist
from typing import Literal

Decision = Literal["pass", "fail"]


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float] | None:
    """The Wilson score interval of a pass rate `successes / n` (None when n is 0)."""
    if n <= 0:
        return None
    z = NormalDist().inv_cdf(0.5 + confidence / 2)
    p = successes / n
    centre = p + z * z / (2 * n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    scale = 1 + z * z / n
    return max(0.0, (centre - half) / scale), min(1.0, (centre + half) / scale)


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _prior(threshold: float) -> tuple[float, float]:
    centre = min(max(threshold, 0.01), 0.99)
    return centre, 1.0 - centre


def log_mixture(successes: int, n: int, rate: float, threshold: float) -> float:
    """log M_n(rate): the beta-binomial mixture martingale (module docstring) at `rate`, with the
    prior centred on `threshold`."""
    a, b = _prior(threshold)
    if rate <= 0.0:
        return math.inf if successes > 0 else _log_beta(a, b + n) - _log_beta(a, b)
    if rate >= 1.0:
        return math.inf if successes < n else _log_beta(a + n, b) - _log_beta(a, b)
    failures = n - successes
    likelihood = successes * math.log(rate) + failures * math.log1p(-rate)
    return _log_beta(a + successes, b + failures) - _log_beta(a, b) - likelihood


def sequential_decision(successes: int, n: int, threshold: float, alpha: float = 0.05) -> Decision | None:
    """`pass` when the confidence sequence lies wholly above `threshold`, `fail` when wholly
    below, None while it still holds the threshold (see the module docstring)."""
    if n <= 0 or log_mixture(successes, n, threshold, threshold) < math.log(1 / alpha):
        return None
    return "pass" if successes / n > threshold else "fail"


def confidence_sequence(successes: int, n: int, threshold: float, alpha: float = 0.05) -> tuple[float, float]:
    """The confidence sequence's interval after n trials: {p : M_n(p) < 1/alpha}, found by
    bisection on each side of the observed rate (log M_n is convex in p, so the set is an
    interval). With n = 0 it is [0, 1]."""
    if n <= 0:
        return 0.0, 1.0
    bound = math.log(1 / alpha)
    centre = successes / n

    def inside(p: float) -> bool:
        return log_mixture(successes, n, p, threshold) < bound

    def edge(outer: float) -> float:
        low, high = centre, outer  # inside at `centre`, outside at `outer` (when it is)
        if inside(outer):
            return outer
        for _ in range(60):
            mid = (low + high) / 2
            low, high = (mid, high) if inside(mid) else (low, mid)
        return low

    return edge(0.0), edge(1.0)


def trials_until_decidable(successes: int, n: int, threshold: float, alpha: float, most: int) -> int:
    """The fewest further trials (at most `most`) after which a decision is possible: all of
    them passing or all failing settles it. Adaptive trials run that many at once."""
    for extra in range(1, most + 1):
        if sequential_decision(successes + extra, n + extra, threshold, alpha) or sequential_decision(
            successes, n + extra, threshold, alpha
        ):
            return extra
    return most
