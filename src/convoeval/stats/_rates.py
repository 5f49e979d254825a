"""Pass rates, mean scores and pass@k with their confidence intervals, per group of results.

- Pass rate c/n: the Wilson score interval (`convoeval._binomial.wilson_interval`; Brown, Cai
  & DasGupta 2001). It keeps its coverage near the nominal level for small n and for rates near
  0 or 1, where the normal (Wald) interval does not.
- Mean score: the percentile bootstrap (Efron & Tibshirani 1993, "An Introduction to the
  Bootstrap", ch. 13): resample the scores with replacement `rounds` times with a seeded
  generator, take the mean of each resample, and the (1-confidence)/2 and (1+confidence)/2
  percentiles of those means. Seeded, so a report shows the same interval every time. With few
  distinct scores the resamples are drawn as multinomial counts of each value (the same
  distribution, far fewer steps: `_resampled_means`).
- pass@k and pass^k of one test with n trials, c passing: the estimates of `results.pass_at_k`
  (Chen et al. 2021, "Evaluating Large Language Models Trained on Code", eq. 1) and
  `results.pass_hat_k` (Yao et al. 2024, tau-bench); their intervals map the Wilson interval
  [lo, hi] of the per-trial pass rate p through the monotone 1 - (1 - p)^k and p^k, the
  probability that at least one / all of k independent trials pass. Over a group of tests the
  mean of the per-test values gets a bootstrap interval over tests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from .._binomial import wilson_interval
from ..results import EvaluationResult, pass_at_k, pass_hat_k
from ._estimate import Estimate

if TYPE_CHECKING:
    import numpy as np


def rate_interval(successes: int, n: int, confidence: float = 0.95) -> Estimate:
    """A pass rate with its Wilson interval (value NaN when n is 0)."""
    bounds = wilson_interval(successes, n, confidence)
    if bounds is None:
        return Estimate(value=float("nan"), n_items=0, confidence=confidence, note="no results")
    return Estimate(
        value=successes / n, ci_low=bounds[0], ci_high=bounds[1], n_items=n, confidence=confidence, interval="wilson"
    )


def mean_interval(values: Sequence[float], *, rounds: int = 2000, seed: int = 0, confidence: float = 0.95) -> Estimate:
    """The mean of `values` with a seeded percentile bootstrap interval (none for fewer than two
    values; the interval is the point when all values are equal). numpy loads for the bootstrap
    only: a one-test run's summary does without it."""
    if len(values) == 0:
        return Estimate(value=float("nan"), n_items=0, confidence=confidence, note="no scores")
    if len(values) == 1:
        return Estimate(value=float(values[0]), n_items=1, confidence=confidence)
    import numpy as np

    data = np.asarray(values, dtype=float)
    mean = float(data.mean())
    if rounds <= 0:
        return Estimate(value=mean, n_items=int(data.size), confidence=confidence)
    means = _resampled_means(data, rounds, np.random.default_rng(seed))
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return Estimate(
        value=mean,
        se=float(means.std(ddof=1)),
        ci_low=float(min(low, mean)),
        ci_high=float(max(high, mean)),
        interval="bootstrap",
        n_items=int(data.size),
        confidence=confidence,
    )


def _resampled_means(data: np.ndarray, rounds: int, rng: np.random.Generator) -> np.ndarray:
    """The means of `rounds` resamples of `data` with replacement. A resample's mean depends only
    on how often each distinct value was drawn, which is Multinomial(n, share of each value):
    with few distinct values (verdicts, pass@k of a few trials) that is drawn directly, in
    rounds x values steps instead of rounds x n."""
    import numpy as np

    values, counts = np.unique(data, return_counts=True)
    if values.size * 4 <= data.size:
        drawn = rng.multinomial(data.size, counts / data.size, size=rounds)
        return np.asarray(drawn @ values / data.size, dtype=float)
    chunk = max(1, 1_000_000 // data.size)  # resamples at a time: memory stays small for many results
    return np.concatenate(
        [
            data[rng.integers(0, data.size, size=(min(chunk, rounds - done), data.size))].mean(axis=1)
            for done in range(0, rounds, chunk)
        ]
    )


def pass_at_k_interval(n: int, c: int, k: int, confidence: float = 0.95, *, every: bool = False) -> Estimate:
    """pass@k (or pass^k with `every=True`) of one test from n trials with c passing, with the
    Wilson interval of the trial pass rate mapped through 1-(1-p)^k (or p^k)."""
    if n <= 0 or not 1 <= k <= n:
        return Estimate(value=float("nan"), n_items=n, confidence=confidence, note=f"k={k} needs 1 <= k <= n={n}")
    value = pass_hat_k(n, c, k) if every else pass_at_k(n, c, k)
    low, high = wilson_interval(c, n, confidence) or (0.0, 1.0)
    if every:
        bounds = (low**k, high**k)
    else:
        bounds = (1 - (1 - low) ** k, 1 - (1 - high) ** k)
    return Estimate(
        value=value,
        ci_low=min(bounds[0], value),
        ci_high=max(bounds[1], value),
        interval="wilson",
        n_items=n,
        confidence=confidence,
    )


@dataclass
class GroupRates:
    """The rates of one group of results (a suite, a target, or all): pass rate, mean score and,
    when its tests ran trials, the trial pass rate and mean pass@k / pass^k over tests."""

    name: str
    pass_rate: Estimate
    mean_score: Estimate
    trial_pass_rate: Estimate | None = None
    pass_at_k: dict[str, Estimate] = field(default_factory=dict)
    pass_hat_k: dict[str, Estimate] = field(default_factory=dict)

    def to_dict(self) -> dict[str, object]:
        data: dict[str, object] = {
            "name": self.name,
            "pass_rate": self.pass_rate.to_dict(),
            "mean_score": self.mean_score.to_dict(),
        }
        if self.trial_pass_rate is not None:
            data["trial_pass_rate"] = self.trial_pass_rate.to_dict()
        if self.pass_at_k:
            data["pass_at_k"] = {k: e.to_dict() for k, e in self.pass_at_k.items()}
            data["pass_hat_k"] = {k: e.to_dict() for k, e in self.pass_hat_k.items()}
        return data


def group_rates(
    name: str, results: Iterable[EvaluationResult], *, rounds: int = 2000, seed: int = 0, confidence: float = 0.95
) -> GroupRates:
    """Pass rate (Wilson), mean score (bootstrap) and, with trials, the trial pass rate (Wilson)
    and the mean pass@k / pass^k over tests (bootstrap) for the largest k every test reached."""
    results = list(results)
    passed = sum(r.verdict == "pass" for r in results)
    scores = [r.score for r in results if r.score is not None]
    rates = GroupRates(
        name=name,
        pass_rate=rate_interval(passed, len(results), confidence),
        mean_score=mean_interval(scores, rounds=rounds, seed=seed, confidence=confidence),
    )
    with_trials = [r for r in results if len(r.trials) > 1]
    if not with_trials:
        return rates
    decided = [t.verdict == "pass" for r in with_trials for t in r.trials if t.verdict in ("pass", "fail")]
    rates.trial_pass_rate = rate_interval(sum(decided), len(decided), confidence)  # errors and skips left out
    k = min(len(r.trials) for r in with_trials)  # the largest k every test reached
    if k > 1:
        at = [r.pass_at_k.get(str(k)) for r in with_trials]
        hat = [r.pass_hat_k.get(str(k)) for r in with_trials]
        if None in at or None in hat:
            return rates
        rates.pass_at_k[str(k)] = mean_interval(at, rounds=rounds, seed=seed, confidence=confidence)  # type: ignore[arg-type]
        rates.pass_hat_k[str(k)] = mean_interval(hat, rounds=rounds, seed=seed, confidence=confidence)  # type: ignore[arg-type]
    return rates


def rates_by(
    results: Sequence[EvaluationResult],
    key: str | Callable[[EvaluationResult], str],
    *,
    rounds: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> list[GroupRates]:
    """`group_rates` of each suite (`key="suite"`), target (`key="target"`) or group a function
    of the result names, in order of first appearance."""
    name_of = key if callable(key) else lambda r: str(getattr(r, key) or "-")
    groups: dict[str, list[EvaluationResult]] = {}
    for result in results:
        groups.setdefault(name_of(result), []).append(result)
    return [group_rates(name, found, rounds=rounds, seed=seed, confidence=confidence) for name, found in groups.items()]


def fmt_interval(estimate: Estimate | None, *, percent: bool = False) -> str:
    """`0.71 [0.65, 0.77]` (or `62% [48%, 74%]`); `-` when undefined."""
    if estimate is None or not estimate.defined:
        return "-"

    def fmt(x: float) -> str:
        return f"{x:.0%}" if percent else f"{x:.2f}"

    if estimate.ci_low is None or estimate.ci_high is None:
        return fmt(estimate.value)
    return f"{fmt(estimate.value)} [{fmt(estimate.ci_low)}, {fmt(estimate.ci_high)}]"
