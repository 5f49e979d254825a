"""`convoeval arena --judge-prompts`: MT-Bench's pairwise grading as FastChat does it, checked
against what FastChat's own `play_a_match_pair` sent and decided on the same questions and
answers (tests/data/mt-bench/fastchat_pairwise/oracle.json, with the script that wrote it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer

from .conftest import REPO, read_jsonl, write

MT_BENCH = REPO / "tests" / "data" / "mt-bench"
PROMPTS = MT_BENCH / "judge_prompts.jsonl"
ORACLE = json.loads((MT_BENCH / "fastchat_pairwise" / "oracle.json").read_text())
ANSWERS = {"x": ["x one GOOD", "x two"], "y": ["y one", "y two GOOD"]}


def reply(body: dict) -> str:
    """What fastchat_pairwise/server.py answers (the oracle's server): models x and y answer each
    turn; the judge names the assistant whose part holds GOOD, always "[[A]]" on question 82,
    and no label when it reads NOLABEL; a single-answer prompt gets a rating."""
    messages = body["messages"]
    if body["model"] in ANSWERS:
        users = [m["content"] for m in messages if m["role"] == "user"]
        text = ANSWERS[body["model"]][len(users) - 1]
        return text + (" NOLABEL" if body["model"] == "x" and len(users) == 2 and "Benjamin" in users[0] else "")
    text = messages[-1]["content"]
    if "Assistant B" not in text:
        return "Rating: [[7]]"
    if "NOLABEL" in text:
        return "I cannot tell."
    if "supervisor" in text:
        return "[[A]]"
    at = text.find("GOOD")
    return "A is better. [[A]]" if text.rfind("Assistant A", 0, at) > text.rfind("Assistant B", 0, at) else "[[B]]"


def fastchat_battles() -> list[tuple[int, int, str]]:
    """FastChat's matches as show_result.py counts them: an "error" in either order drops the
    match; a tie in the first order, or orders that disagree, make a tie."""
    battles = []
    for m in ORACLE["matches"]:
        g1, g2 = m["g1_winner"], m["g2_winner"]
        if "error" in (g1, g2):
            continue
        winner = "tie" if g1 == "tie" or g1 != g2 else {"model_1": "model_a", "model_2": "model_b"}[g1]
        battles.append((m["question_id"], m["turn"], winner))
    return sorted(battles)


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch):
    with FakeOpenAIServer(reply=reply) as fake:
        monkeypatch.setenv("OPENAI_BASE_URL", fake.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-never-stored-1234")
        yield fake


def _suite(cli, tmp_path: Path) -> Path:
    questions = [line for line in (MT_BENCH / "question.jsonl").read_text().splitlines() if line.strip()]
    chosen = [q for q in questions if json.loads(q)["question_id"] in (81, 82, 119)]
    write(tmp_path / "question.jsonl", "\n".join(chosen) + "\n")
    write(tmp_path / "reference_answer_gpt-4.jsonl", (MT_BENCH / "reference_answer_gpt-4.jsonl").read_text())
    code, _, err = cli(
        "import", "mt-bench", tmp_path / "question.jsonl", "--judge-prompts", PROMPTS, "-o", "mt.eval.yaml"
    )
    assert code == 0, err
    return tmp_path / "mt.eval.yaml"


ARENA = ("-t", "openai:x", "-t", "openai:y", "--judge", "openai:gpt-4", "--bootstrap", "0", "--no-cache", "-q")


def test_the_arena_judges_each_turn_as_fastchat_does(cli, server: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = _suite(cli, tmp_path)
    code, out, err = cli(
        "arena", suite, *ARENA, "--judge-prompts", PROMPTS, "-o", "battles.jsonl", "--save-results", "r.jsonl"
    )
    assert code == 0, err
    asked = sorted(
        {json.dumps(r["messages"], sort_keys=True) for r in server.requests if "Assistant B" in str(r["messages"])}
    )
    assert asked == [json.dumps(m, sort_keys=True) for m in ORACLE["requests"]]  # byte for byte FastChat's
    pairwise = [r for r in server.requests if "Assistant B" in str(r["messages"])]
    assert {(r["temperature"], "response_format" in r) for r in pairwise} == {(0.0, False)}
    battles = read_jsonl(tmp_path / "battles.jsonl")
    assert sorted((b["question_id"], b["turn"], b["winner"]) for b in battles) == fastchat_battles()
    assert {(b["model_a"], b["model_b"]) for b in battles} == {("openai:x", "openai:y")}
    # question 119's second turn: no label in an order, FastChat's "error": no battle, not re-asked
    assert "1 pair(s) left out of the battles" in err and "mt-bench-119 turn 2" not in str(battles)
    assert sum("NOLABEL" in str(r["messages"]) for r in pairwise) == 2

    # The same battles from the stored results: the references come from FastChat's file.
    server.requests.clear()
    code, _, err = cli(
        "arena", "--results", "r.jsonl", "--judge", "openai:gpt-4", "--bootstrap", "0", "--no-cache", "-q",
        "--judge-prompts", PROMPTS, "--references", MT_BENCH / "reference_answer_gpt-4.jsonl", "-o", "again.jsonl",
    )  # fmt: skip
    assert code == 0, err
    again = read_jsonl(tmp_path / "again.jsonl")
    assert sorted((b["question_id"], b["turn"], b["winner"]) for b in again) == fastchat_battles()
    # Without them the math question cannot be judged FastChat's way: said, and left out.
    code, _, err = cli(
        "arena", "--results", "r.jsonl", "--judge", "openai:gpt-4", "--bootstrap", "0", "--no-cache", "-q",
        "--judge-prompts", PROMPTS,
    )  # fmt: skip
    assert code == 0, err
    assert "mt-bench-119 openai:x vs openai:y: a math question is judged against its reference answers" in err


def test_fastchat_votes_are_compared_with_humans_as_mt_bench_does(
    cli, server: FakeOpenAIServer, tmp_path: Path
) -> None:
    """The arena's battles carry FastChat's question_id and turn: `agreement --votes` reads them
    beside MT-Bench's human judgments."""
    suite = _suite(cli, tmp_path)
    code, _, err = cli("arena", suite, *ARENA, "--judge-prompts", PROMPTS, "-o", "battles.jsonl")
    assert code == 0, err
    human = [
        {"question_id": 81, "model_a": "openai:y", "model_b": "openai:x", "winner": "model_b", "turn": 1},
        {"question_id": 119, "model_a": "openai:x", "model_b": "openai:y", "winner": "model_b", "turn": 1},
    ]
    write(tmp_path / "human.jsonl", "".join(json.dumps(h) + "\n" for h in human))
    code, out, err = cli("agreement", "--votes", "battles.jsonl", "human.jsonl", "--format", "json")
    assert code == 0, err
    [turn_one] = [t for t in json.loads(out)["turns"] if t["turn"] == 1]
    assert turn_one["with_ties"] == {"agree": 1, "total": 2, "ratio": 0.5}


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--references", MT_BENCH / "reference_answer_gpt-4.jsonl"), "give judge_prompts too"),
        (("--judge-prompts", PROMPTS, "--prompt", "Which is better?"), "not both"),
        (("--judge-prompts", MT_BENCH / "question.jsonl"), "no pairwise judge prompt named 'pair-v2'"),
    ],
)
def test_bad_fastchat_options_are_one_line(cli, tmp_path: Path, extra: tuple[object, ...], message: str) -> None:
    write(tmp_path / "r.jsonl", "")
    code, out, err = cli("arena", "--results", "r.jsonl", "--judge", "openai:gpt-4", *extra)
    assert code == 2 and message in err and "Traceback" not in err, err
