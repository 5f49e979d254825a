"""Arena ratings against tests/data/agreement-oracle/arena_oracle.json (see SOURCE.txt),
an independent maximum-likelihood fit, and a simulation with known strengths."""

from __future__ import annotations

import doctest
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize
from scipy.special import log_expit

from convoeval import rank
from convoeval.rank import (
    Battle,
    BattleFileError,
    bradley_terry,
    bradley_terry_intervals,
    elo_history_interval,
    leaderboard_from_battles,
    online_elo,
    read_battles,
)
from convoeval.rank._bt import fit_strengths

ROOT = Path(__file__).parent
ORACLE = json.loads((ROOT / "data" / "agreement-oracle" / "arena_oracle.json").read_text())
EXPECTED = ORACLE["expected"]
BATTLES = [Battle.from_dict(record) for record in ORACLE["battles"]]
EXAMPLE = ROOT.parent / "examples" / "arena" / "battles.jsonl"


# --- oracle ----------------------------------------------------------------------------------


def test_battles_agree_with_oracle_scores() -> None:
    assert [b.score_a for b in BATTLES] == [record["score_a"] for record in ORACLE["battles"]]


def test_tdeval_online_elo_k32_ratings_and_histories() -> None:
    expected = EXPECTED["tdeval_sequential_elo_k32"]
    result = online_elo(BATTLES, k=32)
    assert result.ratings == pytest.approx(expected["ratings"], abs=1e-9)
    for target, history in expected["history"].items():
        assert result.history[target] == pytest.approx(history, abs=1e-9)


def test_tdeval_history_interval() -> None:
    expected = EXPECTED["tdeval_sequential_elo_k32"]["ci95_tdeval_style"]["values"]
    history = online_elo(BATTLES, k=32).history
    for target, (low, high) in expected.items():
        assert elo_history_interval(history[target]) == pytest.approx((low, high), abs=1e-9)


def test_chatbot_arena_online_elo_k4() -> None:
    expected = EXPECTED["fastchat_online_elo_k4"]["ratings"]
    assert online_elo(BATTLES, k=4).ratings == pytest.approx(expected, abs=1e-9)


def test_bradley_terry_mle_matches_oracle() -> None:
    result = bradley_terry(BATTLES)
    assert result.mle_exists
    # The oracle's optimiser stopped within ~3e-6 points of the exact optimum.
    assert result.ratings == pytest.approx(EXPECTED["bradley_terry_mle"]["ratings"], abs=1e-4)
    assert sum(result.ratings.values()) / 3 == pytest.approx(1000.0, abs=1e-9)


# --- Bradley-Terry: correctness beyond the oracle -----------------------------------------------


def _reference_fit(battles: list[Battle]) -> dict[str, float]:
    """An independent MLE: BFGS on the Bernoulli log-likelihood of each battle's score."""
    targets = sorted({t for b in battles for t in (b.model_a, b.model_b)})
    index = {t: i for i, t in enumerate(targets)}
    a = np.array([index[b.model_a] for b in battles])
    b = np.array([index[b.model_b] for b in battles])
    score = np.array([battle.score_a for battle in battles])

    def nll(theta: np.ndarray) -> float:
        diff = theta[a] - theta[b]
        return -float((score * log_expit(diff) + (1 - score) * log_expit(-diff)).sum())

    fit = minimize(nll, np.zeros(len(targets)), method="BFGS", options={"gtol": 1e-12})
    theta = fit.x - fit.x.mean()
    return {t: 1000 + 400 * theta[i] / math.log(10) for t, i in index.items()}


def _random_battles(seed: int, n: int, targets: int = 4) -> list[Battle]:
    rng = np.random.default_rng(seed)
    names = [f"t{i}" for i in range(targets)]
    winners = rng.choice(["model_a", "model_b", "tie"], size=n, p=[0.45, 0.4, 0.15])
    battles = []
    for winner in winners:
        i, j = rng.choice(targets, size=2, replace=False)
        battles.append(Battle(names[i], names[j], str(winner)))
    return battles


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_bradley_terry_equals_an_independent_maximum_likelihood_fit(seed: int) -> None:
    battles = _random_battles(seed, 60)
    result = bradley_terry(battles)
    assert result.mle_exists
    assert result.ratings == pytest.approx(_reference_fit(battles), abs=1e-4)


def test_bradley_terry_ignores_order_and_sides() -> None:
    flipped = [
        Battle(
            b.model_b,
            b.model_a,
            {"model_a": "model_b", "model_b": "model_a", "tie": "tie"}[b.winner],
        )
        for b in reversed(BATTLES)
    ]
    assert bradley_terry(flipped).ratings == pytest.approx(bradley_terry(BATTLES).ratings, abs=1e-8)


def test_a_tie_is_half_a_win_each_way() -> None:
    # FastChat: "win counted twice, tie counted once each way" gives the same fit.
    doubled = []
    for battle in BATTLES:
        if battle.winner == "tie":
            doubled += [
                Battle(battle.model_a, battle.model_b, "model_a"),
                Battle(battle.model_a, battle.model_b, "model_b"),
            ]
        else:
            doubled += [battle, battle]
    assert bradley_terry(doubled).ratings == pytest.approx(bradley_terry(BATTLES).ratings, abs=1e-8)


def test_scale_and_base_change_the_units_only() -> None:
    elo = bradley_terry(BATTLES).ratings
    natural = bradley_terry(BATTLES, base=math.e, scale=1.0, initial=0.0).ratings
    for target in elo:
        assert natural[target] == pytest.approx((elo[target] - 1000) * math.log(10) / 400, abs=1e-9)


def test_undefeated_target_has_no_mle_but_finite_top_rating() -> None:
    battles = [
        Battle("champ", "b", "model_a"),
        Battle("b", "c", "model_a"),
        Battle("c", "b", "model_a"),
        Battle("c", "champ", "model_b"),
    ]
    result = bradley_terry(battles)
    assert not result.mle_exists
    assert all(math.isfinite(r) for r in result.ratings.values())
    assert result.ratings["champ"] > result.ratings["b"] + 400
    board = leaderboard_from_battles(battles, bootstrap=0)
    assert not board.mle_exists
    assert any("does not exist" in warning for warning in board.warnings)
    assert board.rows[0].target == "champ"


# --- bootstrap intervals --------------------------------------------------------------------


def test_bootstrap_intervals_are_seeded_and_contain_the_estimate() -> None:
    battles = _random_battles(5, 120)
    first = bradley_terry_intervals(battles, rounds=300, seed=7)
    assert first == bradley_terry_intervals(battles, rounds=300, seed=7)
    assert first.intervals != bradley_terry_intervals(battles, rounds=300, seed=8).intervals
    ratings = bradley_terry(battles).ratings
    for target, (low, high) in first.intervals.items():
        assert low < ratings[target] < high
        assert 40 < high - low < 600
    assert first.separated == 0.0


def test_a_resample_of_two_targets_is_not_connected_through_one_that_did_not_play() -> None:
    """Before: a resample holding only x's wins over z counted as strongly connected (a path ran
    through y, absent from it), so no ridge was added and Newton's step hit a singular Hessian:
    `Singular matrix` from `arena --battles` and a traceback from `report --battles` on these
    three battles."""
    battles = [Battle("x", "y", "model_b"), Battle("y", "x", "model_b"), Battle("x", "z", "model_a")]
    wins = np.array([[[0.0, 0.0, 3.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    theta, exists = fit_strengths(wins)
    assert not exists[0] and np.isfinite(theta[0, [0, 2]]).all()
    intervals = bradley_terry_intervals(battles, rounds=1000, seed=0)
    assert all(math.isfinite(end) for ends in intervals.intervals.values() for end in ends)


def test_few_battles_are_flagged_as_too_few_to_rank() -> None:
    intervals = bradley_terry_intervals(BATTLES, rounds=400, seed=0)
    # agent_a lost 2 and tied 1 of 12 battles: a resample misses all three with
    # probability (9/12)^12 = 3%; agent_c never winning or tying is as likely.
    assert 0.04 < intervals.separated < 0.15
    board = leaderboard_from_battles(BATTLES, bootstrap=400)
    assert any("collect more battles" in warning for warning in board.warnings)


# The simulated judge sees the true quality gap plus standard logistic noise, so it
# prefers A with probability 1 / (1 + 10 ** ((R_B - R_A) / 400)): Bradley-Terry holds
# with the TRUE ratings below (mean 1000, like the fitted ones).
TRUE_RATINGS = {"w": 1225.0, "x": 1075.0, "y": 925.0, "z": 775.0}
SIMULATION_SEEDS = range(20)


def _noisy_judge_battles(seed: int, n: int = 200) -> list[Battle]:
    rng = np.random.default_rng(seed)
    names = list(TRUE_RATINGS)
    battles = []
    for _ in range(n):
        i, j = rng.choice(len(names), size=2, replace=False)
        a, b = names[i], names[j]
        perceived_gap = (TRUE_RATINGS[a] - TRUE_RATINGS[b]) * math.log(10) / 400 + rng.logistic()
        battles.append(Battle(a, b, "model_a" if perceived_gap > 0 else "model_b"))
    return battles


def _fisher_interval_widths(n: int = 200) -> np.ndarray:
    """Widths of 95% intervals from the expected Fisher information at the true ratings."""
    names = list(TRUE_RATINGS)
    theta = np.array([TRUE_RATINGS[t] for t in names]) * math.log(10) / 400
    pairs = list(itertools.combinations(range(len(names)), 2))
    information = np.zeros((len(names), len(names)))
    for i, j in pairs:
        p = 1 / (1 + math.exp(theta[j] - theta[i]))
        direction = np.zeros(len(names))
        direction[[i, j]] = 1, -1
        information += n / len(pairs) * p * (1 - p) * np.outer(direction, direction)
    sd = np.sqrt(np.diag(np.linalg.pinv(information))) * 400 / math.log(10)
    return 2 * 1.959964 * sd


def test_simulation_recovers_order_and_intervals_cover_at_nominal_rate() -> None:
    covered, widths = [], []
    for seed in SIMULATION_SEEDS:
        battles = _noisy_judge_battles(seed)
        board = leaderboard_from_battles(battles, bootstrap=1000, seed=seed)
        assert [row.target for row in board.rows] == list(TRUE_RATINGS), f"seed {seed}"
        for row in board.rows:
            covered.append(row.ci_low <= TRUE_RATINGS[row.target] <= row.ci_high)
            widths.append(row.ci_high - row.ci_low)
    coverage = np.mean(covered)  # 80 intervals; nominal 0.95, binomial sd about 0.024
    assert 0.85 <= coverage < 1.0, coverage
    # ... and not by being wide: as wide as the asymptotic theory says, give or take 25%.
    ratio = np.mean(widths) / np.mean(_fisher_interval_widths())
    assert 0.8 < ratio < 1.25, ratio


# --- battles and the JSONL reader -------------------------------------------------------------


def test_battle_from_arena_record() -> None:
    record = {
        "model_a": "x",
        "model_b": "y",
        "winner": "tie (bothbad)",
        "judge": "gpt-4",
        "turn": 1,
    }
    assert Battle.from_dict(record) == Battle("x", "y", "tie")
    assert Battle("x", "y", "model_b").score_a == 0.0


@pytest.mark.parametrize(
    ("record", "message"),
    [
        ({"model_a": "x", "model_b": "y"}, "missing field winner"),
        ({"model_a": "x", "model_b": "y", "winner": "x"}, "winner must be"),
        ({"model_a": "x", "model_b": "x", "winner": "tie"}, "two different targets"),
        ({"model_a": "", "model_b": "y", "winner": "tie"}, "model_a must be a non-empty string"),
        ({"model_a": "x", "model_b": 3, "winner": "tie"}, "model_b must be a non-empty string"),
    ],
)
def test_bad_battle(record: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Battle.from_dict(record)


def test_read_battles_reads_mt_bench_judgments(tmp_path: Path) -> None:
    """MT-Bench's judgments: a JSON list (as its human judgments), GPT-4's disagreeing orders
    written "tie (inconsistent)". Before: "winner must be model_a, model_b, tie or 'tie (bothbad)'"
    and "expected a JSON object, got [...]"."""
    records = [
        {"question_id": 81, "model_a": "x", "model_b": "y", "winner": "tie (inconsistent)", "turn": 1},
        {"question_id": 82, "model_a": "y", "model_b": "x", "winner": "model_b", "judge": "expert_0"},
    ]
    path = tmp_path / "gpt4_pair.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    expected = [Battle("x", "y", "tie"), Battle("y", "x", "model_b")]
    assert read_battles(path) == expected
    path = tmp_path / "human_judgments.json"
    path.write_text(json.dumps(records, indent=1))
    assert read_battles(path) == expected


def test_read_battles_skips_blank_lines(tmp_path: Path) -> None:
    path = tmp_path / "battles.jsonl"
    path.write_text(
        '{"model_a": "x", "model_b": "y", "winner": "model_a"}\n\n'
        '{"model_a": "y", "model_b": "x", "winner": "tie (bothbad)", "question_id": 3}\n'
    )
    assert read_battles(path) == [Battle("x", "y", "model_a"), Battle("y", "x", "tie")]


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"model_a": "x", "model_b": "y", "winner": "model_a"}\n{"model_a": "x",\n',
            r"battles.jsonl:2: invalid JSON",
        ),
        ('{"model_a": "x", "model_b": "y", "winner": "tie"}\n["x", "y"]\n', r"battles.jsonl:2: expected a JSON object"),
        ('\n["x", "y"]\n', r"battles.jsonl: battle 0: expected a JSON object, got 'x'"),
        ('[{"model_a": "x", "model_b": "y", "winner": "A"}]', r"battles.jsonl: battle 0: winner must be"),
        ('{"model_a": "x", "model_b": "y", "winner": "A"}\n', r"battles.jsonl:1: winner must be"),
        ('{"model_a": "x", "winner": "tie"}\n', r"battles.jsonl:1: missing field model_b"),
        ("\n\n", r"battles.jsonl: no battles"),
    ],
)
def test_read_battles_errors_name_file_and_line(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "battles.jsonl"
    path.write_text(content)
    with pytest.raises(BattleFileError, match=message):
        read_battles(path)


def test_read_battles_missing_file(tmp_path: Path) -> None:
    with pytest.raises(BattleFileError, match=r"nope\.jsonl: file not found"):
        read_battles(tmp_path / "nope.jsonl")


# --- leaderboard -------------------------------------------------------------------------------


def test_leaderboard_rows_from_oracle_battles() -> None:
    board = leaderboard_from_battles(BATTLES, k=32, bootstrap=200, seed=0)
    rows = {row.target: row for row in board.rows}
    assert [row.target for row in board.rows] == ["agent_a", "agent_b", "agent_c"]
    assert [row.rank for row in board.rows] == [1, 2, 3]
    assert (
        rows["agent_a"].votes,
        rows["agent_a"].wins,
        rows["agent_a"].losses,
        rows["agent_a"].ties,
    ) == (8, 5, 2, 1)
    assert (rows["agent_b"].wins, rows["agent_b"].losses, rows["agent_b"].ties) == (3, 2, 3)
    assert (rows["agent_c"].wins, rows["agent_c"].losses, rows["agent_c"].ties) == (1, 5, 2)
    assert rows["agent_c"].elo == pytest.approx(EXPECTED["tdeval_sequential_elo_k32"]["ratings"]["agent_c"])
    assert rows["agent_b"].bt == pytest.approx(EXPECTED["bradley_terry_mle"]["ratings"]["agent_b"], abs=1e-4)
    assert all(row.ci_low < row.bt < row.ci_high for row in board.rows)


def test_one_battle_warns_that_its_intervals_are_not_the_data() -> None:
    """Before: "the intervals are too wide to rank by" beside an interval of width 0."""
    board = leaderboard_from_battles([Battle("x", "y", "model_a")], bootstrap=50)
    assert all(row.ci_low == row.ci_high == row.bt for row in board.rows)
    (warning,) = [w for w in board.warnings if "bootstrap rounds" in w]
    assert "not the data" in warning and "do not rank by them" in warning


def test_equal_ratings_share_a_rank() -> None:
    """Before: all ties rated both 1000.0 yet ranked 1 and 2 (by name)."""
    board = leaderboard_from_battles([Battle("polite", "terse", "tie")] * 3, bootstrap=0)
    assert [(row.rank, row.bt) for row in board.rows] == [(1, 1000.0), (1, 1000.0)]
    # x and y split their games and both beat z: equal ratings, one rank, z third.
    split = [Battle("x", "y", "model_a"), Battle("y", "x", "model_a"), Battle("x", "z", "model_a")]
    board = leaderboard_from_battles([*split, Battle("z", "y", "model_b")], bootstrap=0)
    assert [row.rank for row in board.rows] == [1, 1, 3]
    assert board.rows[0].bt == pytest.approx(board.rows[1].bt) and board.rows[2].target == "z"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"bootstrap": -1}, "cannot be negative"), ({"confidence": 1.5}, "between 0 and 1")],
)
def test_leaderboard_bad_arguments(kwargs: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        leaderboard_from_battles(BATTLES, **kwargs)
    with pytest.raises(ValueError, match="no battles"):
        leaderboard_from_battles([])


def test_example_battles_file() -> None:
    battles = read_battles(EXAMPLE)
    board = leaderboard_from_battles(battles, bootstrap=200)
    assert len(battles) >= 24 and len(board.rows) == 3
    assert board.mle_exists and not board.warnings


def test_docstring_examples() -> None:
    from convoeval.rank import _battle, _bt, _elo, _leaderboard

    for module in (rank, _battle, _bt, _elo, _leaderboard):
        assert doctest.testmod(module).failed == 0, module.__name__
