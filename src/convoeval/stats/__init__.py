"""Agreement between judges and humans, and judge consistency over repeated runs.

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

from ._cohen import cohen_kappa
from ._consistency import Consistency, judge_consistency
from ._correlation import kendall, spearman
from ._data import AgreementInputError, Category
from ._estimate import Estimate
from ._io import RatingsFileError, RatingsTable, parse_categories, read_ratings_csv
from ._krippendorff import krippendorff_alpha
from ._multirater import fleiss_kappa, gwet_ac1, percent_agreement, randolph_kappa
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

__all__ = [
    "AgreementInputError",
    "Category",
    "Consistency",
    "Estimate",
    "GraderConsistency",
    "JudgeScore",
    "RatingsFileError",
    "RatingsTable",
    "RunsAgreement",
    "RunsConsistency",
    "agreement_estimates",
    "agreement_report",
    "categorise",
    "cohen_kappa",
    "fleiss_kappa",
    "gwet_ac1",
    "judge_consistency",
    "judge_scores",
    "kendall",
    "krippendorff_alpha",
    "parse_categories",
    "percent_agreement",
    "randolph_kappa",
    "read_ratings_csv",
    "runs_agreement",
    "runs_consistency",
    "spearman",
]
