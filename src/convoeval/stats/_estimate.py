"""An agreement coefficient with its uncertainty, and the two ways we get one."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np

IntervalMethod = Literal["asymptotic", "bootstrap", "wilson"]


def scipy_stats() -> ModuleType:
    """`scipy.stats`, imported on first use: it takes about a second, which `convoeval --help`
    and runs without statistics should not pay."""
    import scipy.stats

    return scipy.stats


@dataclass(frozen=True)
class Estimate:
    """A statistic with its standard error and confidence interval.

    Attributes:
        value: the statistic; NaN when the data leave it undefined (see `note`).
        se: standard error (None when it cannot be computed).
        ci_low, ci_high: confidence interval at `confidence` (None when unknown).
        interval: "asymptotic" (a published variance formula), "bootstrap"
            (percentiles of a seeded resampling of items) or "wilson" (a pass rate's score interval).
        n_items: items that entered the statistic.
        pa: observed agreement, for chance-corrected coefficients.
        pe: chance agreement, for chance-corrected coefficients.
        note: why `value` is undefined, when it is.
    """

    value: float
    se: float | None = None
    ci_low: float | None = None
    ci_high: float | None = None
    interval: IntervalMethod | None = None
    n_items: int = 0
    confidence: float = 0.95
    pa: float | None = None
    pe: float | None = None
    note: str | None = None

    @property
    def defined(self) -> bool:
        return not math.isnan(self.value)

    def to_dict(self) -> dict[str, object]:
        """JSON-ready fields; an undefined value becomes null with a note."""
        data = asdict(self)
        if not self.defined:
            data["value"] = None
        return {key: value for key, value in data.items() if value is not None or key == "value"}


def undefined(note: str, n_items: int) -> Estimate:
    """An Estimate for data that leave the statistic undefined (e.g. 0/0)."""
    return Estimate(value=math.nan, n_items=n_items, note=note)


def asymptotic(
    value: float,
    se: float,
    *,
    n_items: int,
    confidence: float,
    df: int | None = None,
    pa: float | None = None,
    pe: float | None = None,
) -> Estimate:
    """Estimate with the interval value +/- t*se (normal if df is None), within [-1, 1]."""
    level = 0.5 + confidence / 2
    stats = scipy_stats()
    crit = stats.norm.ppf(level) if df is None else stats.t.ppf(level, df)
    return Estimate(
        value=float(value),
        se=float(se),
        ci_low=float(max(-1.0, value - crit * se)),
        ci_high=float(min(1.0, value + crit * se)),
        interval="asymptotic",
        n_items=n_items,
        confidence=confidence,
        pa=None if pa is None else float(pa),
        pe=None if pe is None else float(pe),
    )


def bootstrapped(
    value: float,
    statistic: Callable[[np.ndarray], np.ndarray],
    *,
    n_items: int,
    rounds: int,
    seed: int,
    confidence: float,
    pa: float | None = None,
    pe: float | None = None,
) -> Estimate:
    """Estimate with a percentile bootstrap interval over items.

    Args:
        value: the statistic on the data as observed.
        statistic: maps resampled item indices (rounds x n_items) to one value per row;
            NaN rows (undefined resamples) are dropped.
        rounds: number of resamples; 0 skips the interval.
        seed: seed of the resampling, so reports are reproducible.
    """
    if rounds <= 0 or n_items < 2:
        return Estimate(value=float(value), n_items=n_items, confidence=confidence, pa=pa, pe=pe)
    import numpy as np

    rng = np.random.default_rng(seed)
    indices = rng.integers(0, n_items, size=(rounds, n_items))
    replicates = np.asarray(statistic(indices), dtype=float)
    replicates = replicates[~np.isnan(replicates)]
    if replicates.size < max(10, rounds // 2):
        return Estimate(value=float(value), n_items=n_items, confidence=confidence, pa=pa, pe=pe)
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(replicates, [tail, 100 - tail])
    return Estimate(
        value=float(value),
        se=float(np.std(replicates, ddof=1)),
        ci_low=float(low),
        ci_high=float(high),
        interval="bootstrap",
        n_items=n_items,
        confidence=confidence,
        pa=pa,
        pe=pe,
    )
