"""`convoeval arena` end to end: suites run on scripted bots, FakeOpenAIServer as the judge."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convoeval.arena import ARENA_CSV_COLUMNS
from convoeval.testing import FakeOpenAIServer

from .arena_fakes import (  # noqa: F401  (fixtures)
    arena_server,
    desk,
    fair_winner,
    is_pairwise,
    judge_server,
    pairwise_judge,
    prompt_of,
    which_test,
)

BOTS = ["-t", "polite", "-t", "middle", "-t", "terse"]


def test_judged_arena_json_and_battles_round_trip(
    cli, desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path
) -> None:
    # Position bias on "refund": the judge always prefers the conversation shown first.
    judge_server.judge = pairwise_judge(lambda body: "A" if which_test(body) == "refund" else fair_winner(body))
    code, out, err = cli(
        "arena",
        desk,
        *BOTS,
        "--judge",
        "judge",
        "--format",
        "json",
        "--bootstrap",
        "50",
        "--seed",
        "7",
        "-o",
        "battles.jsonl",
    )
    assert code == 0, err
    report = json.loads(out)
    rows = {row["target"]: row for row in report["leaderboard"]}
    assert list(rows) == ["polite", "middle", "terse"]
    assert set(ARENA_CSV_COLUMNS) <= set(rows["polite"])
    assert rows["polite"]["turn_mean"] == 1.0 and rows["terse"]["turn_mean"] == 0.0
    assert rows["middle"]["turn_mean"] == pytest.approx(2 / 6, abs=1e-6)  # 2 of its 6 turns pass
    assert (rows["polite"]["wins"], rows["polite"]["ties"], rows["polite"]["votes"]) == (4, 2, 6)
    assert report["order_disagreement_rate"] == pytest.approx(1 / 3)
    assert (report["pairs"], report["battles"], report["disagreements"], report["judge_errors"]) == (9, 9, 3, 0)
    assert "judged desk/refund: polite vs middle: tie (orders: A/A, disagree)" in err
    assert "ran late-order @ polite: 1.00 pass" in err

    lines = [json.loads(line) for line in (tmp_path / "battles.jsonl").read_text().splitlines()]
    assert len(lines) == 9 and {line["winner"] for line in lines} == {"model_a", "tie"}
    code, out, err = cli("arena", "--battles", "battles.jsonl", "--format", "json", "--bootstrap", "50", "--seed", "7")
    assert code == 0, err
    rerated = {row["target"]: row for row in json.loads(out)["leaderboard"]}
    for target, row in rows.items():
        for key in ("elo", "bt", "ci_low", "ci_high", "votes", "wins", "losses", "ties", "rank"):
            assert rerated[target][key] == row[key], (target, key)
    code, out, err = cli("arena", "--battles", "battles.jsonl", "--plot", "/proc/convoeval.svg")  # takes no file
    assert (code, err) == (2, "error: cannot write /proc/convoeval.svg: No such file or directory\n")


def test_table_csv_and_plot(cli, desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path) -> None:
    code, out, err = cli(
        "arena",
        desk,
        "-t",
        "polite",
        "-t",
        "terse",
        "--judge",
        "judge",
        "--bootstrap",
        "20",
        "--plot",
        "ratings.svg",
        "-q",
    )
    assert code == 0, err
    assert "Arena leaderboard" in out and "polite" in out and "Turn" in out
    assert "order disagreement 0%" in " ".join(out.split())
    assert "judged" not in err  # --quiet
    assert b"<svg" in (tmp_path / "ratings.svg").read_bytes()[:2000]
    code, out, err = cli(
        "arena", desk, "-t", "polite", "-t", "terse", "--judge", "judge", "--bootstrap", "20", "--format", "csv", "-q"
    )
    assert code == 0, err
    header, *lines = out.splitlines()
    assert header.split(",") == list(ARENA_CSV_COLUMNS) and len(lines) == 2
    assert lines[0].split(",")[1] == "polite"


def test_arena_on_stored_results(cli, desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path) -> None:
    code, out, err = cli("run", desk, *BOTS, "-o", "results.jsonl", "--no-cache")
    assert code == 1, err  # the terse bot fails
    judge_server.requests.clear()
    code, out, err = cli(
        "arena",
        "--results",
        "results.jsonl",
        "--judge",
        "judge",
        "-t",
        "polite",
        "-t",
        "middle",
        "--format",
        "json",
        "--bootstrap",
        "20",
    )
    assert code == 0, err
    report = json.loads(out)
    assert [row["target"] for row in report["leaderboard"]] == ["polite", "middle"]
    assert report["battles"] == 3
    assert judge_server.target_requests() == [] and "ran " not in err  # nothing was run
    assert len([b for b in judge_server.judge_requests() if is_pairwise(b)]) == 6


def test_custom_prompt(cli, desk: Path, judge_server: FakeOpenAIServer, tmp_path: Path) -> None:
    prompt = tmp_path / "pair.md"
    prompt.write_text(
        "[{{ test_id }}] goal={{ criteria }}\nConversation A:\n<<<\n{{ conversation_a }}\n>>>\n"
        "Conversation B:\n<<<\n{{ conversation_b }}\n>>>\nthe same test ({{ test_id }})"
    )
    code, out, err = cli(
        "arena",
        desk,
        "-t",
        "polite",
        "-t",
        "terse",
        "--judge",
        "judge",
        "--bootstrap",
        "0",
        "--prompt",
        "pair.md",
        "--format",
        "json",
    )
    assert code == 0, err
    requests = [b for b in judge_server.judge_requests() if is_pairwise(b)]
    late = next(prompt_of(b) for b in requests if which_test(b) == "late-order")
    assert late.startswith("[late-order] goal=The user learns when the late order arrives.\nConversation A:")
    assert '"winner"' in requests[0]["messages"][0]["content"]  # the answer format is still asked for
    assert json.loads(out)["battles"] == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ([], "--battles FILE.jsonl"),
        (["desk.eval.yaml", "-t", "polite"], "at least two different targets"),
        (["desk.eval.yaml", "--battles", "b.jsonl"], "give only one of"),
        (["--results"], "--results needs results files"),
        (["results.jsonl", "-t", "polite", "-t", "terse"], "looks like a results file; add --results"),
        (["--battles", "b.jsonl", "--judge", "judge"], "--judge"),
        (["desk.eval.yaml", "-t", "polite", "-t", "terse", "--judge", "nobody"], "judge: 'nobody' is neither"),
        (
            ["desk.eval.yaml", "-t", "polite", "-t", "terse", "--judge", "judge", "--prompt", "{{ x }}"],
            "pairwise prompt: unknown template variable(s) x",
        ),
        (["desk.eval.yaml", "-t", "polite", "-t", "terse", "--plot", "x.gif"], "plot format must be one of"),
        (["--results", "missing.jsonl", "--judge", "judge"], "missing.jsonl: file not found"),
        (["desk.eval.yaml", "-t", "polite", "-t", "terse", "--judge", "judge", "-o", "."], ". is a folder"),
        (["desk.eval.yaml", "-t", "polite", "-t", "terse", "--judge", "judge", "--save-results", "."], "is a folder"),
    ],
)
def test_arena_input_errors(cli, desk: Path, args: list[str], message: str) -> None:
    code, out, err = cli("arena", *args)
    assert code == 2, out + err
    assert "Traceback" not in err
    [line] = err.strip().splitlines()
    assert line.startswith("error: ") and message in line, line


def test_invalid_suite_reports_file_lines(cli, desk: Path) -> None:
    desk.write_text("tests:\n  - id: x\n    turns:\n      - input: hi\n")
    code, out, err = cli("arena", desk, "-t", "polite", "-t", "terse", "--judge", "judge")
    assert code == 2 and "desk.eval.yaml:" in err and "Traceback" not in err


def test_every_pair_failing_is_an_error(cli, desk: Path, judge_server: FakeOpenAIServer) -> None:
    judge_server.judge = pairwise_judge(lambda body: "RAW:not json at all")
    code, out, err = cli("arena", desk, "-t", "polite", "-t", "terse", "--judge", "judge")
    assert code == 2
    assert "error: no battles: none of the 3 pair(s) could be judged" in err
    assert "unparseable after a re-ask" in err
