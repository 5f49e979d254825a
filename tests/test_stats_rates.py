"""Every statistic of pass rates, the compare gate and adaptive trials, checked against scipy
and statsmodels (the reference implementations), on fixed and seeded random data."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as scipy_stats
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.multitest import multipletests
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_confint

from convoeval._binomial import (
    confidence_sequence,
    log_mixture,
    sequential_decision,
    trials_until_decidable,
    wilson_interval,
)
from convoeval.stats import mean_interval, pass_at_k_interval, rate_interval
from convoeval.stats._gate import (
    PairData,
    adjust,
    fewest_tests_to_decide,
    fisher_worse,
    mcnemar_exact,
    power_of,
    sign_flip_p,
    significance_gate,
    smallest_p,
)


@pytest.mark.parametrize(("c", "n"), [(0, 1), (1, 1), (0, 5), (3, 5), (7, 10), (40, 40), (17, 60), (1, 1000)])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99])
def test_wilson_matches_statsmodels(c: int, n: int, confidence: float) -> None:
    low, high = proportion_confint(c, n, alpha=1 - confidence, method="wilson")
    assert wilson_interval(c, n, confidence) == pytest.approx((low, high), abs=1e-12)
    estimate = rate_interval(c, n, confidence)
    assert (estimate.value, estimate.ci_low, estimate.ci_high) == pytest.approx((c / n, low, high), abs=1e-12)
    assert estimate.interval == "wilson"


def test_no_results_have_no_rate() -> None:
    assert wilson_interval(0, 0) is None
    assert not rate_interval(0, 0).defined


def test_bootstrap_mean_matches_scipy_percentile_bootstrap() -> None:
    rng = np.random.default_rng(7)
    scores = rng.beta(2, 1, size=60)
    ours = mean_interval(scores, rounds=20_000, seed=3)
    ref = scipy_stats.bootstrap(
        (scores,), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.95, random_state=11
    )
    assert ours.value == pytest.approx(scores.mean())
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.006)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.006)
    assert ours.se == pytest.approx(ref.standard_error, rel=0.05)
    assert mean_interval(scores, rounds=2000, seed=3) == mean_interval(scores, rounds=2000, seed=3)  # seeded


def test_bootstrap_of_few_distinct_scores_matches_scipy_too() -> None:
    """Verdict-like scores take the multinomial-counts path; same distribution as resampling."""
    scores = np.array([1.0] * 130 + [0.0] * 60 + [0.5] * 10)
    ours = mean_interval(scores, rounds=20_000, seed=1)
    ref = scipy_stats.bootstrap(
        (scores,), np.mean, n_resamples=20_000, method="percentile", confidence_level=0.95, random_state=2
    )
    assert ours.ci_low == pytest.approx(ref.confidence_interval.low, abs=0.006)
    assert ours.ci_high == pytest.approx(ref.confidence_interval.high, abs=0.006)
    assert ours.se == pytest.approx(ref.standard_error, rel=0.05)


def test_bootstrap_of_constant_scores_is_the_point() -> None:
    estimate = mean_interval([1.0, 1.0, 1.0])
    assert (estimate.value, estimate.ci_low, estimate.ci_high) == (1.0, 1.0, 1.0)


@pytest.mark.parametrize(("n", "c", "k"), [(5, 3, 1), (5, 3, 2), (10, 9, 5), (3, 0, 2), (4, 4, 4)])
def test_pass_at_k_interval_maps_the_wilson_interval(n: int, c: int, k: int) -> None:
    low, high = proportion_confint(c, n, alpha=0.05, method="wilson")
    at = pass_at_k_interval(n, c, k)
    # pass@k's estimator is 1 - C(n-c, k) / C(n, k) (Chen et al. 2021), the chance that one of k
    # trials drawn without replacement passes: the hypergeometric P(X >= 1)
    assert at.value == pytest.approx(scipy_stats.hypergeom(n, c, k).sf(0))
    assert (at.ci_low, at.ci_high) == pytest.approx(
        (min(1 - (1 - low) ** k, at.value), max(1 - (1 - high) ** k, at.value))
    )
    every = pass_at_k_interval(n, c, k, every=True)
    assert every.value == pytest.approx(scipy_stats.hypergeom(n, c, k).pmf(k))
    assert (every.ci_low, every.ci_high) == pytest.approx((min(low**k, every.value), max(high**k, every.value)))
    assert not pass_at_k_interval(3, 1, 4).defined


@pytest.mark.parametrize(("losses", "wins"), [(0, 0), (3, 0), (0, 3), (5, 2), (12, 4), (30, 31), (1, 9)])
def test_mcnemar_matches_statsmodels_and_scipy(losses: int, wins: int) -> None:
    one_sided, two_sided = mcnemar_exact(losses, wins)
    table = [[10, losses], [wins, 7]]
    assert two_sided == pytest.approx(mcnemar(table, exact=True).pvalue)
    if losses + wins:
        ref = scipy_stats.binomtest(losses, losses + wins, 0.5, alternative="greater").pvalue
        assert one_sided == pytest.approx(ref)


@pytest.mark.parametrize(
    ("a", "na", "b", "nb"), [(3, 3, 0, 3), (2, 3, 1, 3), (0, 3, 3, 3), (9, 10, 4, 10), (5, 5, 5, 5)]
)
def test_fisher_matches_scipy(a: int, na: int, b: int, nb: int) -> None:
    ref = scipy_stats.fisher_exact([[a, na - a], [b, nb - b]], alternative="greater").pvalue
    assert fisher_worse(a, na, b, nb) == pytest.approx(ref)


@pytest.mark.parametrize(("method", "reference"), [("holm", "holm"), ("bh", "fdr_bh")])
def test_corrections_match_statsmodels(method: str, reference: str) -> None:
    p = list(np.random.default_rng(1).uniform(0, 0.2, size=25)) + [0.001, 0.04, 0.5, 1.0, 0.04]
    assert adjust(p, method) == pytest.approx(list(multipletests(p, method=reference)[1]))  # type: ignore[arg-type]


def test_sign_flip_p_matches_scipy_permutation_test() -> None:
    rng = np.random.default_rng(5)
    for size in (6, 12):
        diffs = np.round(rng.normal(-0.1, 0.3, size=size), 2)
        ref = scipy_stats.permutation_test(
            (diffs, np.zeros(size)),
            lambda x, y, axis: np.mean(x - y, axis=axis),
            permutation_type="samples",
            alternative="less",
            n_resamples=np.inf,
        )
        assert sign_flip_p(diffs) == pytest.approx(ref.pvalue)
    big = rng.normal(-0.05, 0.3, size=80)
    ref = scipy_stats.permutation_test(
        (big, np.zeros(80)),
        lambda x, y, axis: np.mean(x - y, axis=axis),
        permutation_type="samples",
        alternative="less",
        n_resamples=20_000,
        vectorized=True,
        random_state=1,
    )
    assert sign_flip_p(big, rounds=20_000, seed=2) == pytest.approx(ref.pvalue, abs=0.01)


def test_power_matches_statsmodels_normal_power() -> None:
    rng = np.random.default_rng(3)
    diffs = list(rng.normal(0, 0.3, size=40))
    pairs = [PairData(str(i), 0.5, 0.5 + d, True, True) for i, d in enumerate(diffs)]
    power = power_of(diffs, pairs, effect=0.1, alpha=0.05)
    assert power is not None
    sd = np.std(diffs, ddof=1)
    level = 0.05 / 3  # the score family's share of alpha under Holm over three families
    ref = NormalIndPower().power(effect_size=0.1 / sd, nobs1=40, alpha=level, ratio=0, alternative="larger")
    assert power.power == pytest.approx(ref, abs=1e-6)
    needed = NormalIndPower().solve_power(effect_size=0.1 / sd, alpha=level, power=0.8, ratio=0, alternative="larger")
    assert power.tests_needed == math.ceil(needed)
    assert not power.enough and "too small" in power.sentence(40)


def test_power_tells_how_many_trials_would_do() -> None:
    """With k trials per test the variance of a paired difference falls as 1/k when the runs
    differ by chance only: k* trials give the n tests the power that n* tests give with k."""
    rng = np.random.default_rng(4)
    pairs = []
    for i in range(40):
        a, b = rng.binomial(1, 0.7, size=3), rng.binomial(1, 0.7, size=3)
        pairs.append(PairData(str(i), float(np.mean(a)), float(np.mean(b)), True, True, 0, 3, 0, 3))
    diffs = [(p.score_b or 0) - (p.score_a or 0) for p in pairs]
    power = power_of(diffs, pairs, effect=0.1, alpha=0.05)
    assert power is not None and power.trials_needed is not None and power.tests_needed is not None
    k = power.trials_needed
    sd_k = np.std(diffs, ddof=1) * math.sqrt(3 / k)  # the sd with k trials
    level = 0.05 / 3
    assert NormalIndPower().power(effect_size=0.1 / sd_k, nobs1=40, alpha=level, ratio=0, alternative="larger") >= 0.8
    sd_fewer = np.std(diffs, ddof=1) * math.sqrt(3 / (k - 1))
    assert (
        NormalIndPower().power(effect_size=0.1 / sd_fewer, nobs1=40, alpha=level, ratio=0, alternative="larger") < 0.8
    )


def test_the_power_said_is_not_above_how_often_the_gate_fires() -> None:
    """A real drop of 0.1 (sd 0.3, 40 tests): the gate fires in about half the draws; the power
    computed at alpha (not alpha/3, the score family's level under Holm) said about 70%."""
    rng = np.random.default_rng(1)
    fired, said = 0, []
    for draw in range(120):
        b = 0.5 + rng.normal(-0.1, 0.3, size=40)
        report = significance_gate(
            [PairData(str(i), 0.5, float(x), True, True) for i, x in enumerate(b)], rounds=1000, seed=draw
        )
        fired += report.regression
        assert report.power is not None
        said.append(report.power.power)
    assert float(np.mean(said)) <= fired / 120 + 0.1


@pytest.mark.parametrize(("s", "n"), [(0, 3), (3, 3), (5, 9), (17, 17), (12, 20)])
@pytest.mark.parametrize("threshold", [0.5, 0.8])
def test_mixture_martingale_is_a_beta_binomial_likelihood_ratio(s: int, n: int, threshold: float) -> None:
    """M_n(p) = B(a+s, b+n-s)/B(a,b) / (p^s (1-p)^(n-s)) = betabinom.pmf / binom.pmf."""
    for p in (0.1, 0.5, threshold, 0.95):
        ref = scipy_stats.betabinom.logpmf(s, n, threshold, 1 - threshold) - scipy_stats.binom.logpmf(s, n, p)
        assert log_mixture(s, n, p, threshold) == pytest.approx(ref, rel=1e-9, abs=1e-9)


def test_confidence_sequence_edges_and_decisions() -> None:
    low, high = confidence_sequence(12, 20, 0.8)
    bound = math.log(20)
    assert log_mixture(12, 20, low, 0.8) == pytest.approx(bound, abs=1e-6)
    assert log_mixture(12, 20, high, 0.8) == pytest.approx(bound, abs=1e-6)
    assert low < 0.6 < high
    assert sequential_decision(0, 4, 0.8) == "fail" and sequential_decision(0, 3, 0.8) is None
    assert sequential_decision(17, 17, 0.8) == "pass" and sequential_decision(16, 16, 0.8) is None
    assert trials_until_decidable(0, 0, 0.8, 0.05, 20) == 4
    assert trials_until_decidable(10, 10, 0.8, 0.05, 20) == 7


def test_confidence_sequence_errs_at_most_alpha_when_checked_after_every_trial() -> None:
    """Time-uniform coverage: simulated Bernoulli trials, checked after each of 200, never
    decide on the wrong side of the threshold in more than alpha of sequences."""
    rng = np.random.default_rng(0)
    for rate in (0.75, 0.85):
        wrong = 0
        for _ in range(400):
            draws = rng.random(200) < rate
            for n in range(1, 201):
                decision = sequential_decision(int(draws[:n].sum()), n, 0.8)
                if decision is not None:
                    wrong += decision != ("pass" if rate > 0.8 else "fail")
                    break
        assert wrong / 400 <= 0.05


def test_gate_on_identical_runs_finds_nothing_and_on_a_collapse_finds_all_three() -> None:
    same = [PairData(str(i), 1.0, 1.0, True, True, 3, 3, 3, 3) for i in range(20)]
    quiet = significance_gate(same)
    assert not quiet.regression and quiet.score_p == 1.0 and quiet.mcnemar_p == 1.0
    drop = [PairData(str(i), 1.0, 0.0, True, False, 10, 10, 0, 10) for i in range(20)]
    loud = significance_gate(drop)
    assert loud.regression and len(loud.reasons) == 3
    # 3 of 3 trials -> 0 of 3 is no evidence about one test: Fisher p = 1/C(6,3) = 0.05 before Holm
    few = significance_gate([PairData(str(i), 1.0, 0.0, True, False, 3, 3, 0, 3) for i in range(20)])
    assert few.regression and len(few.reasons) == 2 and few.tests[0].p_value == pytest.approx(0.05)
    assert loud.mcnemar_p == pytest.approx(0.5**20)
    assert significance_gate(drop, min_delta=1.01).regression is False  # no drop that large


@pytest.mark.parametrize(
    ("tests", "trials", "decidable"),
    [(3, 1, False), (5, 1, False), (6, 1, True), (3, 3, False), (5, 3, False), (3, 5, True)],
)
def test_a_gate_that_cannot_reach_alpha_says_so_and_claims_no_power(tests: int, trials: int, decidable: bool) -> None:
    """Holm over three families needs a p below alpha/3; 2^-n and 1/C(2k, k) are the exact tests'
    floors. The worst case (every trial pass -> fail) fires exactly when `smallest_p` < alpha."""
    collapse = [PairData(str(i), 1.0, 0.0, True, False, trials, trials, 0, trials) for i in range(tests)]
    report = significance_gate(collapse)
    assert report.regression is decidable and report.reach == pytest.approx(smallest_p(collapse))
    assert (report.undecidable is None) is decidable
    assert report.power is not None and (report.power.power == 0.0) is not decidable
    if not decidable:
        assert f"with {tests} paired test(s)" in report.undecidable and "at least 6 tests" in report.undecidable
    assert fewest_tests_to_decide(0.05) == 6 and 3 * 0.5**6 < 0.05 <= 3 * 0.5**5


def test_mcnemar_of_thousands_of_flips_and_fisher_of_hundreds_of_trials_match_scipy() -> None:
    """Before: OverflowError (C(n, i) as a float) from 1,030 discordant pairs on, so `compare` of
    large runs with many flips (and the gate's reach on 1,030 tests) ended in a traceback."""
    one_sided, two_sided = mcnemar_exact(1100, 1000)
    assert one_sided == pytest.approx(scipy_stats.binomtest(1100, 2100, 0.5, alternative="greater").pvalue, rel=1e-9)
    assert two_sided == pytest.approx(scipy_stats.binomtest(1100, 2100, 0.5).pvalue, rel=1e-9)
    reference = scipy_stats.fisher_exact([[300, 300], [200, 400]], alternative="greater").pvalue
    assert fisher_worse(300, 600, 200, 600) == pytest.approx(reference, rel=1e-9)  # was an OverflowError too
    collapse = [PairData(str(i), 1.0, 0.0, True, False) for i in range(3000)]
    assert smallest_p(collapse) == 0.0 and significance_gate(collapse, rounds=200).regression


def test_all_sign_vectors_are_enumerated_for_small_n() -> None:
    diffs = [-0.5, -0.25, 0.1]
    count = sum(np.mean(np.array(s) * diffs) <= np.mean(diffs) + 1e-12 for s in itertools.product((-1, 1), repeat=3))
    assert sign_flip_p(diffs) == count / 8
