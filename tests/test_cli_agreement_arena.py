"""`convoeval agreement` and `convoeval arena` through the typer app."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

import convoeval.cli._agreement  # registers the command
import convoeval.cli._arena  # noqa: F401  (registers the command)
from convoeval.cli._app import app

ROOT = Path(__file__).parent
AGREEMENT = json.loads((ROOT / "data" / "agreement-oracle" / "agreement_oracle.json").read_text())
ARENA = json.loads((ROOT / "data" / "agreement-oracle" / "arena_oracle.json").read_text())
EXAMPLE = ROOT.parent / "examples" / "arena" / "battles.jsonl"
runner = CliRunner()


@pytest.fixture
def labels(tmp_path: Path) -> Path:
    """human_vs_llm from the oracle, plus an id column and a third rater."""
    human, llm = AGREEMENT["human_vs_llm"]["human"], AGREEMENT["human_vs_llm"]["llm"]
    lines = ["id,human,judge,judge2"] + [f"t{i},{h},{j},{h}" for i, (h, j) in enumerate(zip(human, llm, strict=True))]
    path = tmp_path / "labels.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def battles(tmp_path: Path) -> Path:
    path = tmp_path / "battles.jsonl"
    path.write_text("".join(json.dumps(record) + "\n" for record in ARENA["battles"]))
    return path


def _error_line(result) -> str:  # type: ignore[no-untyped-def]
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


# --- agreement -------------------------------------------------------------------------------


def test_agreement_json_is_the_report(labels: Path) -> None:
    result = runner.invoke(
        app,
        [
            "agreement",
            str(labels),
            "--categories",
            "1-5",
            "--columns",
            "human,judge",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    expected = AGREEMENT["human_vs_llm"]["expected"]
    assert report["gwet_ac1"]["value"] == pytest.approx(expected["gwet_ac1_q5"]["independent"])
    assert report["randolph_kappa"]["value"] == pytest.approx(expected["randolph_kappa_q5"]["independent"])
    assert "spearman" in report and "cohen_kappa_quadratic" in report  # ordinal by default
    assert "krippendorff_alpha_interval" not in report


def test_agreement_interval_level_and_all_columns(labels: Path) -> None:
    result = runner.invoke(
        app,
        [
            "agreement",
            str(labels),
            "--categories",
            "1-5",
            "--level",
            "interval",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert "krippendorff_alpha_interval" in report
    assert "cohen_kappa" not in report  # three raters: human, judge, judge2


def test_agreement_table(labels: Path) -> None:
    result = runner.invoke(
        app,
        [
            "agreement",
            str(labels),
            "--categories",
            "1-5",
            "--columns",
            "human,judge",
            "--level",
            "nominal",
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Gwet's AC1" in result.stdout and "0.464" in result.stdout
    assert "Spearman" not in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--categories", "1-4"],
            r"labels.csv:2: column human: '5' is not one of the categories 1, 2, 3, 4",
        ),
        (["--categories", "1-5", "--columns", "human,jduge"], r"no rater column 'jduge'"),
        (["--categories", "1-5", "--columns", "human"], r"pick two or more"),
        (["--categories", "5-1"], r"low to high"),
        (
            ["--categories", "1,2,3,4,5,oops", "--level", "interval"],
            r"interval statistics need numeric categories",
        ),
    ],
)
def test_agreement_bad_input_is_one_error_line(labels: Path, args: list[str], message: str) -> None:
    line = _error_line(runner.invoke(app, ["agreement", str(labels), *args]))
    assert line.startswith("error: ")
    assert re.search(message, line), line


def test_agreement_missing_file_and_missing_categories(tmp_path: Path, labels: Path) -> None:
    line = _error_line(runner.invoke(app, ["agreement", str(tmp_path / "nope.csv"), "--categories", "1-5"]))
    assert "nope.csv: file not found" in line
    result = runner.invoke(app, ["agreement", str(labels)])
    assert result.exit_code == 2 and "--categories" in result.output


# --- arena ------------------------------------------------------------------------------------


def test_arena_json_matches_oracle(battles: Path) -> None:
    result = runner.invoke(app, ["arena", "--battles", str(battles), "--format", "json", "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    rows = {row["target"]: row for row in json.loads(result.stdout)["leaderboard"]}
    for target, rating in ARENA["expected"]["bradley_terry_mle"]["ratings"].items():
        assert rows[target]["bt"] == pytest.approx(rating, abs=1e-4)
    for target, rating in ARENA["expected"]["tdeval_sequential_elo_k32"]["ratings"].items():
        assert rows[target]["elo"] == pytest.approx(rating, abs=1e-9)
    assert "warning: " in result.stderr  # 12 battles are too few for tight intervals


def test_arena_k_option(battles: Path) -> None:
    result = runner.invoke(
        app,
        ["arena", "--battles", str(battles), "--k", "4", "--format", "json", "--bootstrap", "0"],
    )
    rows = {row["target"]: row for row in json.loads(result.stdout)["leaderboard"]}
    for target, rating in ARENA["expected"]["fastchat_online_elo_k4"]["ratings"].items():
        assert rows[target]["elo"] == pytest.approx(rating, abs=1e-9)
    assert rows["agent_a"]["ci_low"] is None


def test_arena_csv_table_and_plot(tmp_path: Path) -> None:
    result = runner.invoke(app, ["arena", "--battles", str(EXAMPLE), "--format", "csv", "--bootstrap", "100"])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0] == "rank,target,elo,bt,ci_low,ci_high,votes,wins,losses,ties"
    assert len(result.stdout.splitlines()) == 4
    plot = tmp_path / "ratings.svg"
    result = runner.invoke(app, ["arena", "--battles", str(EXAMPLE), "--bootstrap", "100", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    assert "Arena leaderboard" in result.stdout and "local" in result.stdout
    assert b"<svg" in plot.read_bytes()[:2000]


def test_arena_rates_a_json_list_with_inconsistent_ties_as_the_jsonl(tmp_path: Path) -> None:
    """MT-Bench's judgment files: a JSON list, and "tie (inconsistent)" for orders that disagreed."""
    records = [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]
    for record in records:
        if "tie" in record["winner"]:
            record["winner"] = "tie (inconsistent)"
    listed = tmp_path / "judgments.json"
    listed.write_text(json.dumps(records))
    args = ["--format", "json", "--bootstrap", "50"]
    expected = runner.invoke(app, ["arena", "--battles", str(EXAMPLE), *args])
    result = runner.invoke(app, ["arena", "--battles", str(listed), *args])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == json.loads(expected.stdout)
    assert sum(row["ties"] for row in json.loads(result.stdout)["leaderboard"]) > 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"model_a": "x", "model_b": "y", "winner": "model_a"}\nnot json\n',
            r"battles.jsonl:2: invalid JSON",
        ),
        ('{"model_a": "x", "model_b": "y", "winner": "B"}\n', r"battles.jsonl:1: winner must be"),
        # Before: TypeError: unhashable type: 'dict' (a winner that is no string).
        ('{"model_a": "x", "model_b": "y", "winner": {"a": 1}}\n', r"battles.jsonl:1: winner must be .*got \{'a': 1\}"),
    ],
)
def test_arena_bad_battles_file(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "battles.jsonl"
    path.write_text(content)
    line = _error_line(runner.invoke(app, ["arena", "--battles", str(path)]))
    assert re.search(message, line), line


def test_arena_needs_battles_and_a_known_plot_format(tmp_path: Path, battles: Path) -> None:
    assert "--battles FILE.jsonl" in _error_line(runner.invoke(app, ["arena"]))
    line = _error_line(runner.invoke(app, ["arena", "--battles", str(battles), "--plot", str(tmp_path / "x.gif")]))
    assert "plot format must be one of" in line
    assert runner.invoke(app, ["arena", "--battles", str(battles), "--bootstrap", "-1"]).exit_code == 2


def test_arena_in_a_real_process(tmp_path: Path) -> None:
    code = "from convoeval.cli._app import app; import convoeval.cli._arena; app()"
    env_path = str(ROOT.parent / "src")
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{}\n")
    completed = subprocess.run(
        [sys.executable, "-c", code, "arena", "--battles", str(bad)],
        capture_output=True,
        text=True,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        timeout=60,
    )
    assert completed.returncode == 2
    assert completed.stderr.strip() == f"error: {bad}:1: missing field model_a, model_b, winner"
