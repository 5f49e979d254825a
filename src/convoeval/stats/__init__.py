"""Agreement between judges and humans, judge consistency over repeated runs, and the
statistics of pass rates: intervals (`group_rates`), the significance-aware regression gate of
`convoeval compare` (`significance_gate`) and flaky tests (`flaky_in`, `flaky_in_store`).

`runs_agreement` compares the judge scores of two stored runs (judge vs judge) and
`runs_consistency` one judge's scores over K runs (see `_runs` for how scores are aligned).

Every statistic takes a matrix of items x raters (None/NaN = missing) and the
DECLARED category set, returns an `Estimate` (value, se, ci_low, ci_high) and is
checked against irrCAC, statsmodels, scikit-learn and the krippendorff package.

Example:
    >>> from convoeval.stats import agreement_report
    >>> human_vs_judge = [[5, 5], [4, 5], [3, 3], [2, 2], [4, 4]]
    >>> round(agreement_report(human_vs_judge, [1, 2, 3, 4, 5])["gwet_ac1"]["value"], 3)
    0.755
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._cohen import cohen_kappa
    from ._consistency import Consistency, judge_consistency
    from ._correlation import kendall, spearman
    from ._data import AgreementInputError, Category
    from ._estimate import Estimate
    from ._flaky import Flaky, flaky_in, flaky_in_store, is_flaky, trial_verdicts
    from ._gate import GateReport, PairData, Power, TestChange, significance_gate
    from ._io import RatingsFileError, RatingsTable, parse_categories, read_ratings_csv
    from ._krippendorff import MeasurementLevel, krippendorff_alpha
    from ._multirater import fleiss_kappa, gwet_ac1, percent_agreement, randolph_kappa
    from ._rates import (
        GroupRates,
        fmt_interval,
        group_rates,
        mean_interval,
        pass_at_k_interval,
        rate_interval,
        rates_by,
    )
    from ._report import agreement_estimates, agreement_report
    from ._runs import (
        GraderConsistency,
        JudgeScore,
        RunsAgreement,
        RunsConsistency,
        categorise,
        judge_scores,
        runs_agreement,
        runs_consistency,
    )

# Each module loads when a name of it is first used: the run's summary needs only `_rates`
# (and numpy only for a bootstrap), `convoeval agreement` the rest.
__getattr__ = lazy_attributes(
    __name__,
    {
        "._cohen": ("cohen_kappa",),
        "._consistency": ("Consistency", "judge_consistency"),
        "._correlation": ("kendall", "spearman"),
        "._data": ("AgreementInputError", "Category"),
        "._estimate": ("Estimate",),
        "._flaky": ("Flaky", "flaky_in", "flaky_in_store", "is_flaky", "trial_verdicts"),
        "._gate": ("GateReport", "PairData", "Power", "TestChange", "significance_gate"),
        "._io": ("RatingsFileError", "RatingsTable", "parse_categories", "read_ratings_csv"),
        "._krippendorff": ("MeasurementLevel", "krippendorff_alpha"),
        "._multirater": ("fleiss_kappa", "gwet_ac1", "percent_agreement", "randolph_kappa"),
        "._rates": (
            "GroupRates",
            "fmt_interval",
            "group_rates",
            "mean_interval",
            "pass_at_k_interval",
            "rate_interval",
            "rates_by",
        ),
        "._report": ("agreement_estimates", "agreement_report"),
        "._runs": (
            "GraderConsistency",
            "JudgeScore",
            "RunsAgreement",
            "RunsConsistency",
            "categorise",
            "judge_scores",
            "runs_agreement",
            "runs_consistency",
        ),
    },
)

__all__ = [
    "AgreementInputError",
    "Category",
    "Consistency",
    "Estimate",
    "Flaky",
    "GateReport",
    "GraderConsistency",
    "GroupRates",
    "JudgeScore",
    "MeasurementLevel",
    "PairData",
    "Power",
    "RatingsFileError",
    "RatingsTable",
    "RunsAgreement",
    "RunsConsistency",
    "TestChange",
    "agreement_estimates",
    "agreement_report",
    "categorise",
    "cohen_kappa",
    "flaky_in",
    "flaky_in_store",
    "fleiss_kappa",
    "fmt_interval",
    "group_rates",
    "gwet_ac1",
    "is_flaky",
    "judge_consistency",
    "judge_scores",
    "kendall",
    "krippendorff_alpha",
    "mean_interval",
    "parse_categories",
    "pass_at_k_interval",
    "percent_agreement",
    "randolph_kappa",
    "rate_interval",
    "rates_by",
    "read_ratings_csv",
    "runs_agreement",
    "runs_consistency",
    "significance_gate",
    "spearman",
    "trial_verdicts",
]
