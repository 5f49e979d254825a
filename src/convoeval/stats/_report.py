"""All the agreement statistics that apply to one ratings matrix, in one dict."""

from __future__ import annotations

import typing
from collections.abc import Sequence

from ._cohen import cohen_kappa
from ._correlation import kendall, spearman
from ._data import AgreementInputError, Category, Matrix, prepare
from ._estimate import Estimate
from ._krippendorff import MeasurementLevel, krippendorff_alpha
from ._multirater import fleiss_kappa, gwet_ac1, percent_agreement, randolph_kappa

_LEVELS: tuple[MeasurementLevel, ...] = typing.get_args(MeasurementLevel)


def agreement_estimates(
    matrix: Matrix,
    categories: Sequence[Category],
    level: MeasurementLevel = "ordinal",
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, Estimate]:
    """Like `agreement_report`, but with `Estimate` objects instead of dicts."""
    if level not in _LEVELS:
        raise AgreementInputError(f"level must be one of {', '.join(_LEVELS)}, got {level!r}")
    ratings = prepare(matrix, categories)  # fail early, with the item and rater named
    if level == "interval":
        ratings.numeric_values()
    two = ratings.n_raters == 2
    ordered = level in ("ordinal", "interval")
    report: dict[str, Estimate] = {
        "percent_agreement": percent_agreement(matrix, categories, confidence=confidence),
        "gwet_ac1": gwet_ac1(matrix, categories, confidence=confidence),
        "randolph_kappa": randolph_kappa(matrix, categories, confidence=confidence),
    }
    if two:
        report["cohen_kappa"] = cohen_kappa(matrix, categories, confidence=confidence)
        if ordered:  # linear: what TD-Eval reports (statsmodels cohens_kappa wt="linear")
            for weights in ("linear", "quadratic"):
                report[f"cohen_kappa_{weights}"] = cohen_kappa(
                    matrix, categories, weights=weights, confidence=confidence
                )
    report["fleiss_kappa"] = fleiss_kappa(matrix, categories, confidence=confidence)
    alpha_levels: list[MeasurementLevel] = ["nominal"]
    if ordered:
        alpha_levels.append("ordinal")
    if level == "interval":
        alpha_levels.append("interval")
    for alpha_level in alpha_levels:
        report[f"krippendorff_alpha_{alpha_level}"] = krippendorff_alpha(
            matrix, categories, alpha_level, bootstrap=bootstrap, seed=seed, confidence=confidence
        )
    if two and ordered:
        for name, correlation in (("spearman", spearman), ("kendall", kendall)):
            report[name] = correlation(matrix, categories, bootstrap=bootstrap, seed=seed, confidence=confidence)
    return report


def agreement_report(
    matrix: Matrix,
    categories: Sequence[Category],
    level: MeasurementLevel = "ordinal",
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
) -> dict[str, dict[str, object]]:
    """Every agreement statistic that applies to `matrix`, keyed in snake_case.

    Which statistics appear:
        always: percent_agreement, gwet_ac1, randolph_kappa, fleiss_kappa,
            krippendorff_alpha_nominal; cohen_kappa with exactly two raters.
        level "ordinal" or "interval" adds krippendorff_alpha_ordinal and, with two
            raters, cohen_kappa_linear, cohen_kappa_quadratic, spearman and kendall.
        level "interval" (numeric categories) adds krippendorff_alpha_interval.
    A statistic that does not apply is left out. Each value is a dict with
    `value`, `se`, `ci_low`, `ci_high`, `interval` ("asymptotic" or "bootstrap"),
    `n_items`, `confidence` and, for chance-corrected coefficients, `pa` and `pe`.
    When the data leave a statistic undefined (e.g. every rating is the same),
    its `value` is null and `note` says why.

    Args:
        matrix: items x raters; None/NaN marks a missing rating.
        categories: every category a rater could use, in order; never inferred
            from the data (it changes Randolph's kappa and Gwet's AC1).
        level: level of measurement of the categories.
        bootstrap: resamples of items for the statistics without a variance
            formula (Krippendorff's alpha, Spearman, Kendall); 0 = no interval.
        seed: seed of those resamples.
        confidence: level of every interval.

    Example:
        >>> report = agreement_report([[5, 4], [3, 3], [4, 4], [2, 1]], [1, 2, 3, 4, 5])
        >>> report["percent_agreement"]["value"]
        0.5
    """
    estimates = agreement_estimates(matrix, categories, level, bootstrap=bootstrap, seed=seed, confidence=confidence)
    return {name: estimate.to_dict() for name, estimate in estimates.items()}
