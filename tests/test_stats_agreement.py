"""Agreement statistics against the oracle (tests/data/agreement-oracle, see SOURCE.txt).

Values marked "cross-checked" are not in the oracle; they were computed with the
reference implementations named next to them (irrCAC 0.4.4, statsmodels 0.15.0,
scikit-learn 1.9.1, krippendorff 0.9.0) when these tests were written.
"""

from __future__ import annotations

import doctest
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as scipy_stats

from convoeval import stats
from convoeval.stats import (
    AgreementInputError,
    RatingsFileError,
    agreement_report,
    cohen_kappa,
    fleiss_kappa,
    gwet_ac1,
    judge_consistency,
    kendall,
    krippendorff_alpha,
    parse_categories,
    percent_agreement,
    randolph_kappa,
    read_ratings_csv,
    spearman,
)
from convoeval.stats._correlation import resampled_kendall, resampled_spearman

ORACLE = json.loads((Path(__file__).parent / "data" / "agreement-oracle" / "agreement_oracle.json").read_text())
FIVE = [1, 2, 3, 4, 5]
THREE_RATERS = ORACLE["three_raters"]["ratings"]
HUMAN = ORACLE["human_vs_llm"]["human"]
LLM = ORACLE["human_vs_llm"]["llm"]
HUMAN_VS_LLM = [list(pair) for pair in zip(HUMAN, LLM, strict=True)]
RAW4 = ORACLE["published_reference_examples"]["gwet_handbook_raw4raters"]
RAW4_EXPECTED = RAW4["expected"]


def approx(value: float, digits: int | None = None) -> object:
    """Equal to `value` as printed: to its last digit when rounded, else to 1e-9."""
    if digits is None:
        return pytest.approx(value, abs=1e-9)
    return pytest.approx(value, abs=0.5 * 10**-digits + 1e-12)


# --- the oracle's two synthetic data sets -------------------------------------------------


@pytest.mark.parametrize(("matrix", "key"), [(THREE_RATERS, "three_raters"), (HUMAN_VS_LLM, "human_vs_llm")])
def test_chance_corrected_coefficients_match_oracle(matrix: list, key: str) -> None:
    expected = ORACLE[key]["expected"]
    assert percent_agreement(matrix, FIVE).value == approx(expected["percent_agreement_pa"])
    ac1 = gwet_ac1(matrix, FIVE)
    assert ac1.value == approx(expected["gwet_ac1_q5"]["independent"])
    assert ac1.value == approx(expected["gwet_ac1_q5"]["irrCAC"], 5)
    assert ac1.pa == approx(expected["gwet_ac1_q5"]["pa"])
    assert ac1.pe == approx(expected["gwet_ac1_q5"]["pe"], 5)
    assert randolph_kappa(matrix, FIVE).value == approx(expected["randolph_kappa_q5"]["statsmodels"])
    assert fleiss_kappa(matrix, FIVE).value == approx(expected["fleiss_kappa"]["statsmodels"])
    alpha = expected["krippendorff_alpha"]
    assert krippendorff_alpha(matrix, FIVE, "nominal").value == approx(alpha["nominal"])
    assert krippendorff_alpha(matrix, FIVE, "interval").value == approx(alpha["interval"])


@pytest.mark.parametrize(
    ("matrix", "expected"),
    [
        # cross-checked: krippendorff 0.9.0,
        # alpha(level_of_measurement="ordinal", value_domain=1..5)
        (THREE_RATERS, 0.7619270554663813),
        (HUMAN_VS_LLM, 0.7450747508305648),
    ],
)
def test_ordinal_alpha_matches_krippendorff_package(matrix: list, expected: float) -> None:
    assert krippendorff_alpha(matrix, FIVE, "ordinal").value == approx(expected)


# cross-checked: irrCAC 0.4.4 CAC(..., categories=[1..5]).<method>()["est"]["se"] (Gwet's
# linearised variance) and its t-interval with n - 1 degrees of freedom.
IRRCAC_SE = {
    "three_raters": {"gwet": 0.0946075987, "fleiss": 0.0951604518, "bp": 0.0936585812},
    "human_vs_llm": {"gwet": 0.1435127467, "fleiss": 0.1408475561, "bp": 0.1426661082},
}


@pytest.mark.parametrize(("matrix", "key"), [(THREE_RATERS, "three_raters"), (HUMAN_VS_LLM, "human_vs_llm")])
def test_standard_errors_match_irrcac(matrix: list, key: str) -> None:
    expected = IRRCAC_SE[key]
    ac1 = gwet_ac1(matrix, FIVE)
    assert ac1.se == approx(expected["gwet"], 10)
    assert fleiss_kappa(matrix, FIVE).se == approx(expected["fleiss"], 10)
    assert randolph_kappa(matrix, FIVE).se == approx(expected["bp"], 10)
    assert ac1.interval == "asymptotic"
    t = scipy_stats.t.ppf(0.975, len(matrix) - 1)
    assert ac1.ci_low == approx(ac1.value - t * ac1.se)
    assert ac1.ci_high == approx(ac1.value + t * ac1.se)


# --- published examples -------------------------------------------------------------------


def test_gwet_handbook_example_with_missing_ratings() -> None:
    matrix = RAW4["ratings"]  # 12 items x 4 raters, None = missing
    pa = percent_agreement(matrix, FIVE)
    assert pa.value == approx(RAW4_EXPECTED["percent_agreement"], 7)
    ac1 = gwet_ac1(matrix, FIVE)
    assert ac1.value == approx(RAW4_EXPECTED["gwet_ac1"]["coefficient"], 5)
    assert ac1.pe == approx(RAW4_EXPECTED["gwet_ac1"]["pe"], 7)
    assert ac1.se == approx(RAW4_EXPECTED["gwet_ac1"]["se"], 5)
    fleiss = fleiss_kappa(matrix, FIVE)
    assert fleiss.value == approx(RAW4_EXPECTED["fleiss_kappa"]["coefficient"], 5)
    assert fleiss.pe == approx(RAW4_EXPECTED["fleiss_kappa"]["pe"], 7)
    randolph = randolph_kappa(matrix, FIVE)
    assert randolph.value == approx(RAW4_EXPECTED["brennan_prediger_eq_randolph_q5"]["coefficient"], 5)
    assert randolph.pe == approx(RAW4_EXPECTED["brennan_prediger_eq_randolph_q5"]["pe"])
    alpha = krippendorff_alpha(matrix, FIVE, "nominal")
    assert alpha.value == approx(RAW4_EXPECTED["krippendorff_alpha_nominal"]["coefficient"], 5)
    # The same data is Krippendorff's (2011) worked example: he prints ordinal 0.815 and
    # interval 0.849; full digits cross-checked with krippendorff 0.9.0.
    assert krippendorff_alpha(matrix, FIVE, "ordinal").value == approx(0.8153875037548814)
    assert krippendorff_alpha(matrix, FIVE, "interval").value == approx(0.8491071428571428)
    assert round(krippendorff_alpha(matrix, FIVE, "ordinal").value, 3) == 0.815
    assert round(krippendorff_alpha(matrix, FIVE, "interval").value, 3) == 0.849


def test_missing_ratings_can_be_nan_and_empty_items_are_dropped() -> None:
    with_nan = [[math.nan if v is None else v for v in row] for row in RAW4["ratings"]]
    with_empty_item = RAW4["ratings"] + [[None, None, None, None]]
    for matrix in (with_nan, np.array(with_nan, dtype=float), with_empty_item):
        assert gwet_ac1(matrix, FIVE).value == approx(gwet_ac1(RAW4["ratings"], FIVE).value)
        assert gwet_ac1(matrix, FIVE).n_items == 12
        alpha = krippendorff_alpha(matrix, FIVE, bootstrap=0).value
        assert alpha == approx(RAW4_EXPECTED["krippendorff_alpha_nominal"]["coefficient"], 5)


def _table_to_matrix(table: list[list[int]]) -> list[list[int]]:
    """A subjects x categories count table as subjects x raters ratings (0-based codes)."""
    return [[k for k, count in enumerate(row) for _ in range(count)] for row in table]


@pytest.mark.parametrize("case", ORACLE["published_reference_examples"]["randolph_online_calculator_examples"]["cases"])
def test_randolph_online_calculator_examples(case: dict) -> None:
    matrix = _table_to_matrix(case["table"])
    categories = list(range(len(case["table"][0])))  # declared, even the unused third one
    assert randolph_kappa(matrix, categories).value == approx(case["randolph"], 6)
    assert fleiss_kappa(matrix, categories).value == approx(case["fleiss"], 6)


# --- the declared category set matters -----------------------------------------------------


def test_declared_categories_not_observed_ones() -> None:
    expected = ORACLE["human_vs_llm_without_category_1"]["expected"]
    matrix = [row for i, row in enumerate(HUMAN_VS_LLM) if i != 9]  # nobody uses 1 any more
    assert gwet_ac1(matrix, FIVE).value == approx(expected["gwet_ac1_q5"], 5)
    assert gwet_ac1(matrix, FIVE).pe == approx(expected["gwet_ac1_q5_pe"], 5)
    assert gwet_ac1(matrix, [2, 3, 4, 5]).value == approx(expected["gwet_ac1_observed_q4"], 5)
    assert gwet_ac1(matrix, [2, 3, 4, 5]).pe == approx(expected["gwet_ac1_observed_q4_pe"], 5)
    assert randolph_kappa(matrix, FIVE).value == approx(expected["randolph_q5"])
    observed_q4 = expected["randolph_observed_q4_statsmodels_n_cat_None"]
    assert randolph_kappa(matrix, [2, 3, 4, 5]).value == approx(observed_q4)
    assert fleiss_kappa(matrix, FIVE).value == approx(expected["fleiss"])
    # Fleiss' and Krippendorff's chance terms ignore unused categories.
    assert fleiss_kappa(matrix, [2, 3, 4, 5]).value == approx(expected["fleiss"])


def test_tdeval_notebook_transposed_variant() -> None:
    """TD-Eval's notebook passed a 2 x N matrix (rows = subjects) and got these numbers."""
    expected = ORACLE["human_vs_llm"]["tdeval_notebook_transposed_variant"]
    transposed = [HUMAN, LLM]
    assert gwet_ac1(transposed, FIVE).value == approx(expected["gwet_ac1"], 5)
    assert randolph_kappa(transposed, FIVE).value == approx(expected["randolph_kappa"])
    # ... which is far from the right orientation:
    assert gwet_ac1(HUMAN_VS_LLM, FIVE).value > gwet_ac1(transposed, FIVE).value + 0.2


# --- Cohen's kappa ---------------------------------------------------------------------------


def test_cohen_kappa_textbook_example() -> None:
    # 50 items: yes/yes 20, yes/no 5, no/yes 10, no/no 15 -> po 0.7, pe 0.5, kappa 0.4
    pairs = [["yes", "yes"]] * 20 + [["yes", "no"]] * 5 + [["no", "yes"]] * 10 + [["no", "no"]] * 15
    kappa = cohen_kappa(pairs, ["yes", "no"])
    assert (kappa.value, kappa.pa, kappa.pe) == (approx(0.4), approx(0.7), approx(0.5))


@pytest.mark.parametrize(
    ("weights", "value", "se"),
    [
        # cross-checked: sklearn cohen_kappa_score(weights=...) for the value and
        # statsmodels cohens_kappa(table, wt=...).std_kappa (Fleiss-Cohen-Everitt 1969)
        (None, 0.31558935361216744, 0.12528122029138875),
        ("linear", 0.5833333333333334, 0.08793842385677056),
        ("quadratic", 0.8034934497816594, 0.061428663203241744),
    ],
)
def test_cohen_kappa_matches_sklearn_and_statsmodels(weights: str | None, value: float, se: float) -> None:
    kappa = cohen_kappa(HUMAN_VS_LLM, FIVE, weights=weights)
    assert kappa.value == approx(value)
    assert kappa.se == pytest.approx(se, rel=1e-9)
    assert kappa.ci_low == approx(value - scipy_stats.norm.ppf(0.975) * se)


def test_the_report_gives_the_linear_weighted_kappa_td_eval_reports() -> None:
    """TD-Eval's notebook reports Cohen's kappa with linear weights (statsmodels wt="linear");
    on its two annotators of gpt-4o's dialogues it gives 0.1401 and -0.0329, as `agreement` now does."""
    report = agreement_report(HUMAN_VS_LLM, FIVE, "ordinal", bootstrap=0)
    assert report["cohen_kappa_linear"]["value"] == approx(0.5833333333333334)
    assert report["cohen_kappa_quadratic"]["value"] == approx(0.8034934497816594)


def test_cohen_kappa_skips_items_missing_a_rating_and_needs_two_raters() -> None:
    with_gaps = [*HUMAN_VS_LLM, [None, 3], [2, None]]
    assert cohen_kappa(with_gaps, FIVE).value == approx(0.31558935361216744)
    assert cohen_kappa(with_gaps, FIVE).n_items == 20
    with pytest.raises(AgreementInputError, match="exactly two raters"):
        cohen_kappa(THREE_RATERS, FIVE)


# --- rank correlations ------------------------------------------------------------------------


def test_spearman_and_kendall_match_scipy_and_use_declared_order() -> None:
    assert spearman(HUMAN_VS_LLM, FIVE).value == approx(scipy_stats.spearmanr(HUMAN, LLM).statistic)
    assert kendall(HUMAN_VS_LLM, FIVE).value == approx(scipy_stats.kendalltau(HUMAN, LLM).statistic)
    labels = ["awful", "poor", "fair", "good", "great"]
    as_labels = [[labels[h - 1], labels[j - 1]] for h, j in HUMAN_VS_LLM]
    assert spearman(as_labels, labels, bootstrap=0).value == approx(spearman(HUMAN_VS_LLM, FIVE).value)
    reversed_order = [[labels[h - 1], labels[5 - j]] for h, j in HUMAN_VS_LLM]
    assert kendall(reversed_order, labels, bootstrap=0).value == approx(-kendall(HUMAN_VS_LLM, FIVE).value)


def test_vectorised_bootstrap_correlations_equal_scipy_on_each_resample() -> None:
    a, b = np.array(HUMAN), np.array(LLM)
    indices = np.random.default_rng(3).integers(0, len(a), size=(25, len(a)))
    expected_tau = [scipy_stats.kendalltau(a[i], b[i]).statistic for i in indices]
    expected_rho = [scipy_stats.spearmanr(a[i], b[i]).statistic for i in indices]
    assert resampled_kendall(a, b, indices) == pytest.approx(expected_tau, abs=1e-12)
    assert resampled_spearman(a, b, indices) == pytest.approx(expected_rho, abs=1e-12)


# --- bootstrap intervals -------------------------------------------------------------------


def test_bootstrap_intervals_are_seeded_and_bracket_the_value() -> None:
    first = krippendorff_alpha(THREE_RATERS, FIVE, "interval", seed=1)
    again = krippendorff_alpha(THREE_RATERS, FIVE, "interval", seed=1)
    other = krippendorff_alpha(THREE_RATERS, FIVE, "interval", seed=2)
    assert first == again
    assert (first.ci_low, first.ci_high) != (other.ci_low, other.ci_high)
    assert first.interval == "bootstrap"
    assert first.ci_low < first.value < first.ci_high
    assert 0.02 < first.se < 0.3
    none = krippendorff_alpha(THREE_RATERS, FIVE, "interval", bootstrap=0)
    assert (none.se, none.ci_low, none.interval) == (None, None, None)


def test_bootstrap_se_of_alpha_is_close_to_irrcac_analytic_se() -> None:
    # Different methods, same target: irrCAC's analytic SE for nominal alpha is 0.0952.
    alpha = krippendorff_alpha(THREE_RATERS, FIVE, "nominal", bootstrap=2000)
    assert alpha.se == pytest.approx(0.0951604518, rel=0.2)


# --- the report ----------------------------------------------------------------------------

ALWAYS = {
    "percent_agreement",
    "gwet_ac1",
    "randolph_kappa",
    "fleiss_kappa",
    "krippendorff_alpha_nominal",
}
ORDERED_TWO = {"cohen_kappa_linear", "cohen_kappa_quadratic", "krippendorff_alpha_ordinal", "spearman", "kendall"}


@pytest.mark.parametrize(
    ("matrix", "level", "keys"),
    [
        (HUMAN_VS_LLM, "nominal", ALWAYS | {"cohen_kappa"}),
        (HUMAN_VS_LLM, "ordinal", ALWAYS | {"cohen_kappa"} | ORDERED_TWO),
        (
            HUMAN_VS_LLM,
            "interval",
            ALWAYS | {"cohen_kappa", "krippendorff_alpha_interval"} | ORDERED_TWO,
        ),
        (THREE_RATERS, "nominal", ALWAYS),
        (THREE_RATERS, "ordinal", ALWAYS | {"krippendorff_alpha_ordinal"}),
        (
            THREE_RATERS,
            "interval",
            ALWAYS | {"krippendorff_alpha_ordinal", "krippendorff_alpha_interval"},
        ),
    ],
)
def test_report_leaves_out_what_does_not_apply(matrix: list, level: str, keys: set[str]) -> None:
    report = agreement_report(matrix, FIVE, level, bootstrap=50)
    assert set(report) == keys
    assert all(entry["value"] is not None for entry in report.values())


def test_report_values_match_oracle_and_are_plain_json() -> None:
    expected = ORACLE["human_vs_llm"]["expected"]
    report = agreement_report(HUMAN_VS_LLM, FIVE, "interval", bootstrap=100)
    json.dumps(report, allow_nan=False)
    assert report["gwet_ac1"]["value"] == approx(expected["gwet_ac1_q5"]["independent"])
    assert report["randolph_kappa"]["value"] == approx(expected["randolph_kappa_q5"]["independent"])
    assert report["fleiss_kappa"]["value"] == approx(expected["fleiss_kappa"]["independent"])
    assert report["krippendorff_alpha_interval"]["value"] == approx(expected["krippendorff_alpha"]["interval"])
    assert report["cohen_kappa"]["se"] == pytest.approx(0.12528122029138875)
    assert report["spearman"]["interval"] == "bootstrap"
    assert report["gwet_ac1"]["interval"] == "asymptotic"
    assert list(report)[:3] == ["percent_agreement", "gwet_ac1", "randolph_kappa"]


def test_undefined_statistic_has_null_value_and_a_note() -> None:
    everyone_says_five = [[5, 5], [5, 5], [5, 5]]
    report = agreement_report(everyone_says_five, FIVE, "nominal", bootstrap=20)
    assert report["percent_agreement"]["value"] == 1.0
    assert report["fleiss_kappa"]["value"] is None
    assert "chance agreement is 1" in report["fleiss_kappa"]["note"]
    assert report["krippendorff_alpha_nominal"]["value"] is None
    assert report["randolph_kappa"]["value"] == 1.0  # free marginals: still defined
    json.dumps(report, allow_nan=False)


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("matrix", "categories", "message"),
    [
        ([[1, 6], [2, 2]], FIVE, r"item 1, rater 2: 6 is not one of the declared categories"),
        ([[1, 2], [2]], FIVE, r"item 2 has 1 ratings, expected 2"),
        ([[1], [2]], FIVE, r"at least two raters"),
        ([], FIVE, r"no items"),
        ([[None, None]], FIVE, r"no ratings"),
        ([[1, 1]], [1], r"at least two categories"),
        ([[1, 1]], [1, 2, 1.0], r"duplicates"),
        ([["a", "b"]], ["a", "b", None], r"numbers or labels"),
        ([[True, 1]], [0, 1], r"True is not one of"),
    ],
)
def test_bad_input_is_a_clear_error(matrix: list, categories: list, message: str) -> None:
    with pytest.raises(AgreementInputError, match=message):
        gwet_ac1(matrix, categories)


def test_interval_level_needs_numeric_categories() -> None:
    with pytest.raises(AgreementInputError, match="numeric categories"):
        agreement_report([["a", "b"], ["b", "b"]], ["a", "b"], "interval")
    with pytest.raises(AgreementInputError, match="level must be"):
        agreement_report(HUMAN_VS_LLM, FIVE, "ratio")  # type: ignore[arg-type]


# --- judge consistency ---------------------------------------------------------------------


def test_judge_consistency_mean_and_standard_deviation() -> None:
    report = judge_consistency({"strict": [4, 5, 4, 3, None], "lenient": [5.0, 5.0, 5.0]})
    assert report["strict"].mean == 4.0
    assert report["strict"].std == approx(np.std([4, 5, 4, 3], ddof=1))
    assert (report["strict"].n, report["strict"].missing) == (4, 1)
    assert report["lenient"].std == 0.0
    population = judge_consistency({"strict": [4, 5, 4, 3]}, ddof=0)["strict"]
    assert population.std == approx(np.std([4, 5, 4, 3]))
    assert judge_consistency({"once": [3]})["once"].std is None


def test_judge_consistency_rejects_non_numbers_and_empty_runs() -> None:
    with pytest.raises(AgreementInputError, match="judge: run 2: score must be a number"):
        judge_consistency({"judge": [4, "five"]})  # type: ignore[list-item]
    with pytest.raises(AgreementInputError, match="judge: no scores"):
        judge_consistency({"judge": [None, None]})


# --- categories and CSV ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1-5", [1, 2, 3, 4, 5]),
        ("0..2", [0, 1, 2]),
        ("-1-1", [-1, 0, 1]),
        ("a, b,c", ["a", "b", "c"]),
        ("0.5,1,1.5", [0.5, 1, 1.5]),
        ("-1,0,1", [-1, 0, 1]),
    ],
)
def test_parse_categories(text: str, expected: list) -> None:
    assert parse_categories(text) == expected


@pytest.mark.parametrize(
    ("text", "message"),
    [("5-1", "low to high"), ("a,,b", "empty"), ("a,a", "duplicates"), ("x", "at least two")],
)
def test_parse_categories_errors(text: str, message: str) -> None:
    with pytest.raises(AgreementInputError, match=message):
        parse_categories(text)


def test_read_ratings_csv(tmp_path: Path) -> None:
    path = tmp_path / "labels.csv"
    path.write_text("ID,human,judge,other\nt1,5,4.0,x\n\nt2,NA,3,x\nt3, 2 ,,x\n", encoding="utf-8")
    table = read_ratings_csv(path, FIVE, ["human", "judge"])
    assert table.raters == ["human", "judge"]
    assert table.items == ["t1", "t2", "t3"]
    assert table.matrix == [[5, 4], [None, 3], [2, None]]


@pytest.mark.parametrize(
    ("content", "columns", "message"),
    [
        (
            "human,judge\n5,4\n3,7\n",
            None,
            r"labels.csv:3: column judge: '7' is not one of the categories 1, 2, 3, 4, 5",
        ),
        ("human,judge\n5,4\n3\n", None, r"labels.csv:3: 1 fields, expected 2"),
        ("human,judge\n", None, r"labels.csv: no items"),
        ("", None, r"labels.csv:1: the file is empty"),
        ("human,human\n1,2\n", None, r"labels.csv:1: header has duplicate columns"),
        (
            "human,judge\n1,2\n",
            ["human", "jduge"],
            r"labels.csv:1: no rater column 'jduge'; the rater columns are human, judge",
        ),
        ("item,human\n1,2\n", None, r"labels.csv:1: pick two or more"),
    ],
)
def test_read_ratings_csv_errors_name_file_and_line(
    tmp_path: Path, content: str, columns: list[str] | None, message: str
) -> None:
    path = tmp_path / "labels.csv"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(RatingsFileError, match=message):
        read_ratings_csv(path, FIVE, columns)


def test_read_ratings_csv_missing_file(tmp_path: Path) -> None:
    with pytest.raises(RatingsFileError, match=r"nope\.csv: file not found"):
        read_ratings_csv(tmp_path / "nope.csv", FIVE)


# --- docstring examples stay true ---------------------------------------------------------


def test_docstring_examples() -> None:
    from convoeval.stats import (
        _cohen,
        _consistency,
        _correlation,
        _io,
        _krippendorff,
        _multirater,
        _report,
    )

    for module in (
        stats,
        _cohen,
        _consistency,
        _correlation,
        _io,
        _krippendorff,
        _multirater,
        _report,
    ):
        result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
        assert result.failed == 0, module.__name__
