"""The significance-aware regression gate of `convoeval compare`: did run B get worse than run A
as a whole, beyond chance?

The tests present in both runs are paired by (suite, test, target). Three one-sided tests, each
exact or resampled, ask whether B is worse:

1. Scores: the mean paired difference d = score_B - score_A (a missing score counts as 0), with a
   seeded paired-bootstrap interval (`mean_interval`), tested by a sign-flip permutation test
   (Fisher 1935; Good 2005, "Permutation, Parametric and Bootstrap Tests of Hypotheses", 3.1):
   under "no change" each d_i is symmetric about 0, so p = share of the 2^n sign vectors s with
   mean(s * d) <= mean(d); enumerated exactly up to 2^16 vectors, else `rounds` random ones with
   p = (1 + count) / (1 + rounds) (Phipson & Smyth 2010).
2. Verdicts: McNemar's exact test (McNemar 1947; Fagerland, Lydersen & Laake 2013) on the flips.
   With L tests that went pass -> not pass and W not pass -> pass, under "no change" L ~
   Binomial(L + W, 1/2), so p = P(X >= L). The two-sided p is min(1, 2 P(X <= min(L, W))).
3. Per test, with trials in both runs: Fisher's exact test (Fisher 1922) of the trial pass counts,
   one-sided (B passes less often): p = P(X >= c_A) with X ~ Hypergeometric(n_A + n_B, c_A + c_B,
   n_A). The p-values of all tests are adjusted for multiple comparisons by Holm (1979)
   - p'_(i) = max over j <= i of min(1, (m - j + 1) p_(j)), ordered ascending - or by
   Benjamini & Hochberg (1995) - p'_(i) = min over j >= i of min(1, m p_(j) / j); the family's
   p-value is the smallest adjusted one.

The three family p-values are adjusted once more by Holm, so the chance that the gate fires when
nothing changed is at most `alpha` whatever the dependence between them (Holm needs none). The
gate reports a regression when an adjusted p is below `alpha` AND the drop it measures (mean
score, pass rate, or one test's trial pass rate) is at least `min_delta`.

Power (one-sided z test on the mean paired difference, Cohen 1988, ch. 2; the normal power of
statsmodels' `NormalIndPower` with ratio 0) at level a = alpha / 3, the level the score test
must reach on its own under Holm over the three families: with sd the observed standard
deviation of d and delta the drop to detect, power = Phi(delta sqrt(n) / sd - z_(1-a)); the
tests needed for 80% power are n* = ((z_(1-a) + z_0.8) sd / delta)^2. The trials needed, when
the tests ran k >= 2 trials: if the runs differ by chance only, each d_i is a difference of two
means of k trials, so its variance falls as 1/k and k* = k sd^2 / (n delta^2 / (z_(1-a) +
z_0.8)^2) = k n* / n (rounded up).

Reach: Holm over the three families multiplies the smallest p by 3, and the exact tests have a
floor (2^-n for n tests, 1/C(n_A + n_B, n_A) for a test's trials), so a small comparison may be
unable to reach alpha whatever B did. `smallest_p` is the gate's p on the worst case, every test
going from passing every trial to failing every trial; when it is not below alpha the gate cannot
decide (`GateReport.undecidable`), and its power is 0.

Expected false alarms (A/A): a gate that fails on any single test that got worse (the `exact`
gate) fires, under "no change", unless every one of the D tests that changed changed upward:
1 - 2^-D. The significance gate's rate is at most alpha, by construction.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Literal

import numpy as np

from ..results import meets
from ._estimate import Estimate
from ._rates import mean_interval, rate_interval

Correction = Literal["holm", "bh"]
#: The drop the power is computed for when `min_delta` is 0.
DEFAULT_EFFECT = 0.1
EXACT_UP_TO = 16
#: The gate's three families of tests, Holm-combined (module docstring).
FAMILIES = ("scores", "verdicts", "tests")
NO_PAIRS = "no test is in both runs (tests are paired by suite, test id and target)"
TARGET_POWER = 0.8


@dataclass(frozen=True)
class PairData:
    """One test in both runs: scores (None: no score), verdicts, trial pass counts."""

    label: str
    score_a: float | None
    score_b: float | None
    passed_a: bool
    passed_b: bool
    passes_a: int = 0
    trials_a: int = 1
    passes_b: int = 0
    trials_b: int = 1


def binomial_tail(k: int, n: int) -> float:
    """P(X >= k) for X ~ Binomial(n, 1/2)."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    term = total = math.comb(n, k)
    for i in range(k, n):  # C(n, i + 1) from C(n, i), in integers: no float overflow for large n
        term = term * (n - i) // (i + 1)
        total += term
    return total / 2**n


def mcnemar_exact(losses: int, wins: int) -> tuple[float, float]:
    """McNemar's exact test on the discordant pairs: (one-sided p that B is worse, two-sided p)."""
    n = losses + wins
    if n == 0:
        return 1.0, 1.0
    lower = 1.0 - binomial_tail(min(losses, wins) + 1, n)  # P(X <= min)
    return binomial_tail(losses, n), min(1.0, 2 * lower)


def fisher_worse(passes_a: int, trials_a: int, passes_b: int, trials_b: int) -> float:
    """One-sided Fisher exact p that B's trial pass rate is lower than A's."""
    total, successes = trials_a + trials_b, passes_a + passes_b
    denominator = math.comb(total, trials_a)
    top = min(successes, trials_a)
    tail = sum(math.comb(successes, x) * math.comb(total - successes, trials_a - x) for x in range(passes_a, top + 1))
    return min(1.0, tail / denominator)  # integers divided: no float overflow with hundreds of trials


def adjust(p_values: Sequence[float], method: Correction = "holm") -> list[float]:
    """Holm or Benjamini-Hochberg adjusted p-values, in the input order."""
    m = len(p_values)
    order = sorted(range(m), key=lambda i: p_values[i])
    adjusted = [0.0] * m
    if method == "holm":
        running = 0.0
        for rank, i in enumerate(order):
            running = max(running, min(1.0, (m - rank) * p_values[i]))
            adjusted[i] = running
    else:
        running = 1.0
        for rank in range(m - 1, -1, -1):
            i = order[rank]
            running = min(running, min(1.0, m * p_values[i] / (rank + 1)))
            adjusted[i] = running
    return adjusted


def sign_flip_p(differences: Sequence[float], *, rounds: int = 10_000, seed: int = 0) -> float:
    """One-sided permutation p that the mean difference is below 0 (module docstring, 1)."""
    d = np.asarray([x for x in differences if x != 0], dtype=float)
    if d.size == 0:
        return 1.0
    observed = d.mean()
    tolerance = 1e-12 * max(1.0, abs(observed))
    if d.size <= EXACT_UP_TO:
        signs = 1 - 2 * ((np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1)
        means = (signs * d).mean(axis=1)
        return float(np.mean(means <= observed + tolerance))
    rng = np.random.default_rng(seed)
    count, done = 0, 0
    chunk = max(1, 2_000_000 // d.size)  # bounded memory for many tests
    while done < rounds:
        size = min(chunk, rounds - done)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(size, d.size))
        count += int(np.sum((signs * d).mean(axis=1) <= observed + tolerance))
        done += size
    return (1 + count) / (1 + rounds)


def smallest_p(pairs: Sequence[PairData], correction: Correction = "holm") -> float:
    """The smallest family-adjusted p the gate can reach on tests of this shape: its p when every
    test goes from passing every trial (score 1) to failing every trial (score 0). The scores'
    floor (2^-n exact, 1/(1 + rounds) resampled) is never below McNemar's, 2^-n."""
    worst = [fisher_worse(p.trials_a, p.trials_a, 0, p.trials_b) for p in pairs if p.trials_a > 1 and p.trials_b > 1]
    families = [mcnemar_exact(len(pairs), 0)[0]] * 2 + [min(adjust(worst, correction), default=1.0)]
    return min(adjust(families, "holm"))


def fewest_tests_to_decide(alpha: float, most: int = 64) -> int | None:
    """The fewest tests of one trial each on which the gate can reach `alpha` (None beyond `most`)."""
    plain = PairData("", None, None, False, False)
    return next((n for n in range(1, most + 1) if smallest_p([plain] * n) < alpha), None)


@dataclass
class TestChange:
    """One test's trial pass rate in A and B, and its one-sided Fisher p (raw and adjusted)."""

    label: str
    rate_a: Estimate
    rate_b: Estimate
    p_value: float
    p_adjusted: float = 1.0
    significant: bool = False

    @property
    def delta(self) -> float:
        return self.rate_b.value - self.rate_a.value

    def to_dict(self) -> dict[str, object]:
        return {
            "test": self.label,
            "rate_a": self.rate_a.to_dict(),
            "rate_b": self.rate_b.to_dict(),
            "p_value": self.p_value,
            "p_adjusted": self.p_adjusted,
            "significant": self.significant,
        }


@dataclass
class Power:
    """The gate's power to detect a drop of `effect`, and what 80% power would need."""

    effect: float
    power: float
    sd: float
    tests_needed: int | None
    trials_needed: int | None
    trials_now: float

    @property
    def enough(self) -> bool:
        return self.power >= TARGET_POWER

    def to_dict(self) -> dict[str, object]:
        return {
            "effect": self.effect,
            "power": self.power,
            "sd": self.sd,
            "tests_needed": self.tests_needed,
            "trials_needed": self.trials_needed,
            "trials_now": self.trials_now,
        }

    def sentence(self, tests: int, *, found: bool = False) -> str:
        """What the power is; unless a regression was `found`, "too small" and what would do."""
        head = f"power {self.power:.0%} to detect a drop of {self.effect:.2f} with {tests} test(s)"
        if self.enough or found:
            return head
        needs = []
        if self.tests_needed is not None:
            needs.append(f"about {self.tests_needed} tests")
        if self.trials_needed is not None:
            needs.append(f"{self.trials_needed} trials per test")
        more = " or ".join(needs) if needs else "more tests"
        return f"too small: {head}; {more} would give {TARGET_POWER:.0%}"


@dataclass
class GateReport:
    """What the significance gate found (module docstring)."""

    alpha: float
    min_delta: float
    correction: Correction
    pairs: int
    mean_delta: Estimate
    score_p: float
    losses: int
    wins: int
    mcnemar_p: float
    mcnemar_p_two_sided: float
    pass_rate_a: Estimate
    pass_rate_b: Estimate
    tests: list[TestChange] = field(default_factory=list)
    tests_p: float = 1.0
    adjusted: dict[str, float] = field(default_factory=dict)
    reasons: list[str] = field(default_factory=list)
    power: Power | None = None
    changed: int = 0
    reach: float = 0.0

    @property
    def regression(self) -> bool:
        return bool(self.reasons)

    @property
    def undecidable(self) -> str | None:
        """Why no result of B could make the gate fire (`smallest_p` not below alpha), or None."""
        if self.reach < self.alpha:
            return None
        if not self.pairs:
            return NO_PAIRS
        fewest = fewest_tests_to_decide(self.alpha)
        enough = f"at least {fewest} tests, " if fewest else ""
        return (
            f"with {self.pairs} paired test(s) the smallest p this gate can reach is {self.reach:.3g} (every test "
            f"going from pass to fail), not below alpha {self.alpha:g}: it cannot find a regression; it needs "
            f"{enough}more trials per test, or --gate exact"
        )

    @property
    def exact_gate_false_alarm(self) -> float:
        """Chance that a gate failing on any single worse test fires when nothing changed."""
        return 1.0 - 0.5**self.changed

    def to_dict(self) -> dict[str, object]:
        return {
            "alpha": self.alpha,
            "min_delta": self.min_delta,
            "correction": self.correction,
            "pairs": self.pairs,
            "regression": self.regression,
            "reasons": self.reasons,
            "mean_delta": self.mean_delta.to_dict(),
            "score_p": self.score_p,
            "mcnemar": {
                "losses": self.losses,
                "wins": self.wins,
                "p": self.mcnemar_p,
                "p_two_sided": self.mcnemar_p_two_sided,
            },
            "pass_rate_a": self.pass_rate_a.to_dict(),
            "pass_rate_b": self.pass_rate_b.to_dict(),
            "per_test_p": self.tests_p,
            "adjusted": self.adjusted,
            "tests": [t.to_dict() for t in self.tests],
            "power": self.power.to_dict() if self.power else None,
            "smallest_p": self.reach,
            "undecidable": self.undecidable,
            "expected_false_alarm": {"significance": self.alpha, "exact": self.exact_gate_false_alarm},
        }


def power_of(differences: Sequence[float], pairs: Sequence[PairData], effect: float, alpha: float) -> Power | None:
    """Power of the score test to detect a mean drop of `effect` (module docstring)."""
    n = len(differences)
    if n < 2 or effect <= 0:
        return None
    sd = float(np.std(differences, ddof=1))
    normal = NormalDist()
    z_alpha, z_power = normal.inv_cdf(1 - alpha / len(FAMILIES)), normal.inv_cdf(TARGET_POWER)
    trials_now = float(np.mean([(p.trials_a + p.trials_b) / 2 for p in pairs]))
    if sd == 0:
        return Power(effect=effect, power=1.0, sd=0.0, tests_needed=n, trials_needed=None, trials_now=trials_now)
    power = normal.cdf(effect * math.sqrt(n) / sd - z_alpha)
    tests_needed = math.ceil(((z_alpha + z_power) * sd / effect) ** 2)
    trials_needed = None
    if trials_now >= 2:
        allowed = n * effect**2 / (z_alpha + z_power) ** 2
        trials_needed = math.ceil(trials_now * sd**2 / allowed)
    return Power(
        effect=effect,
        power=power,
        sd=sd,
        tests_needed=tests_needed,
        trials_needed=trials_needed,
        trials_now=trials_now,
    )


def significance_gate(
    pairs: Sequence[PairData],
    *,
    alpha: float = 0.05,
    min_delta: float = 0.0,
    correction: Correction = "holm",
    rounds: int = 10_000,
    seed: int = 0,
    confidence: float = 0.95,
) -> GateReport:
    """Test whether B is worse than A over the paired tests (module docstring).

    Args:
        pairs: the tests present in both runs.
        alpha: the gate's false-alarm rate.
        min_delta: the smallest drop (of the mean score, the pass rate or a test's trial pass
            rate) that counts as a regression.
        correction: per-test multiple-comparison correction: "holm" or "bh".
        rounds, seed: the resampling of the permutation test and the bootstrap interval.

    Example:
        report = significance_gate(pairs, alpha=0.05, min_delta=0.05)
        if report.regression: ...
    """
    diffs = [(p.score_b or 0.0) - (p.score_a or 0.0) for p in pairs]
    mean_delta = mean_interval(diffs, rounds=min(rounds, 5000), seed=seed, confidence=confidence)
    score_p = sign_flip_p(diffs, rounds=rounds, seed=seed)
    losses = sum(p.passed_a and not p.passed_b for p in pairs)
    wins = sum(p.passed_b and not p.passed_a for p in pairs)
    mc_p, mc_two = mcnemar_exact(losses, wins)
    rate_a = rate_interval(sum(p.passed_a for p in pairs), len(pairs), confidence)
    rate_b = rate_interval(sum(p.passed_b for p in pairs), len(pairs), confidence)
    tests = [
        TestChange(
            label=p.label,
            rate_a=rate_interval(p.passes_a, p.trials_a, confidence),
            rate_b=rate_interval(p.passes_b, p.trials_b, confidence),
            p_value=fisher_worse(p.passes_a, p.trials_a, p.passes_b, p.trials_b),
        )
        for p in pairs
        if p.trials_a > 1 and p.trials_b > 1
    ]
    for test, adjusted in zip(tests, adjust([t.p_value for t in tests], correction), strict=True):
        test.p_adjusted = adjusted
    tests_p = min((t.p_adjusted for t in tests), default=1.0)
    families = dict(zip(FAMILIES, (score_p, mc_p, tests_p), strict=True))
    adjusted_families = dict(zip(families, adjust(list(families.values()), "holm"), strict=True))
    report = GateReport(
        alpha=alpha,
        min_delta=min_delta,
        correction=correction,
        pairs=len(pairs),
        mean_delta=mean_delta,
        score_p=score_p,
        losses=losses,
        wins=wins,
        mcnemar_p=mc_p,
        mcnemar_p_two_sided=mc_two,
        pass_rate_a=rate_a,
        pass_rate_b=rate_b,
        tests=tests,
        tests_p=tests_p,
        adjusted=adjusted_families,
        power=power_of(diffs, pairs, min_delta or DEFAULT_EFFECT, alpha),
        changed=sum(d != 0 or a.passed_a != a.passed_b for d, a in zip(diffs, pairs, strict=True)),
        reach=smallest_p(pairs, correction),
    )
    if report.undecidable and report.power is not None:
        report.power.power = 0.0
    _decide(report, alpha, min_delta)
    return report


def _decide(report: GateReport, alpha: float, min_delta: float) -> None:
    """Fill `report.reasons`: the drops that are significant and at least `min_delta`."""
    adjusted = report.adjusted
    drop = -report.mean_delta.value if report.mean_delta.defined else 0.0
    if adjusted["scores"] < alpha and _at_least(drop, min_delta):
        report.reasons.append(f"mean score fell by {drop:.3f} (p={adjusted['scores']:.3g}, permutation test)")
    rate_drop = report.pass_rate_a.value - report.pass_rate_b.value if report.pairs else 0.0
    if adjusted["verdicts"] < alpha and _at_least(rate_drop, min_delta):
        report.reasons.append(
            f"{report.losses} test(s) went from pass to not pass and {report.wins} the other way "
            f"(p={adjusted['verdicts']:.3g}, McNemar exact)"
        )
    family = adjusted["tests"] / report.tests_p if report.tests_p > 0 else 1.0
    for test in report.tests:
        test.significant = test.p_adjusted * family < alpha and _at_least(-test.delta, min_delta)
    worse = [t for t in report.tests if t.significant]
    if worse:
        names = ", ".join(t.label for t in worse[:5]) + (" ..." if len(worse) > 5 else "")
        report.reasons.append(
            f"{len(worse)} test(s) pass significantly less often across trials ({report.correction}): {names}"
        )


def _at_least(drop: float, min_delta: float) -> bool:
    """A drop (of a mean score or a pass rate) above 0 and at least `min_delta`, both at the 6
    decimals scores are kept at: 0.9 -> 0.8 is a drop of 0.1 (0.09999999999999998 in floats)."""
    return meets(drop, 1e-6) and meets(drop, min_delta)
