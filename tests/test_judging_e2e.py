"""LLM judging end to end: real suites through the CLI and `convoeval.run`, a scripted (or
fake OpenAI) target, and a judge served by the loopback fake OpenAI-compatible server."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval.graders import _dialogue, _llm  # noqa: F401  (register the LLM assertion types)
from convoeval.targets import TargetConfig
from convoeval.testing import FakeOpenAIServer

from .conftest import DATA, REPO, read_jsonl, write
from .judge_fakes import answer, prompt_of, schema_of

AGENTV = DATA / "agentv" / "v4.15.0"

TUTOR = """\
targets:
  - name: tutor
    provider: scripted
    rules:
      - {match: "15% of 200", reply: "15% of 200 = 0.15 x 200 = 30."}
      - {match: "double", reply: "Double 30 is 60."}
      - {match: "original numbers", reply: "You asked about 15% and 200."}
      - {match: "capital of France", reply: "Paris."}
      - {match: "What country", reply: "Paris is in France."}
      - {match: "2 \\\\+ 2", reply: "4"}
      - {match: "Multiply", reply: "4 x 3 = 12."}
      - {match: "adds two numbers", reply: "def add(a, b):\\n    return a + b"}
      - {match: "type hints", reply: "def add(a: int, b: int) -> int:\\n    return a + b"}
      - {match: "warm in December", reply: "Try Cancun or Bali."}
      - {match: "beaches", reply: "Then the beaches of Bali are ideal."}
    default: "I explain things."
"""


def by_id(results: list[dict]) -> dict[str, dict]:
    return {r["test_id"]: r for r in results}


def grader_judge_usage(result: dict) -> int:
    return sum(
        (g.get("judge_usage") or {}).get("input_tokens", 0) for entry in result["scores"] for g in entry["graders"]
    )


def test_agentv_live_conversation_suite(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    def judge(body: dict) -> str:
        failing = {"c1": False} if "- c1: Answers with 4" in prompt_of(body) else {}
        return json.dumps(answer(schema_of(body), failing))

    fake_openai.judge = judge
    targets = write(tmp_path / "targets.yaml", TUTOR)
    code, out, err = cli(
        "run",
        AGENTV / "examples/features/multi-turn-conversation-live/evals/dataset.eval.yaml",
        "--targets",
        targets,
        "--target",
        "tutor",
        "--judge",
        "openai:fake-judge",
        "-o",
        tmp_path / "r.jsonl",
    )
    results = by_id(read_jsonl(tmp_path / "r.jsonl"))
    assert code == 1, out + err  # stop-on-failure fails
    assert fake_openai.target_requests() == []  # the target is scripted; only the judge is HTTP

    retention = results["context-retention"]
    assert retention["verdict"] == "pass" and retention["score"] == 1.0
    assert [s["name"] for s in retention["scores"]] == ["turn-1", "turn-2", "turn-3"]
    turn3 = retention["scores"][2]
    assert [a["text"] for a in turn3["assertions"]] == [
        "Recalls that the user asked about 15% and 200",
        "Demonstrates memory of the conversation context",
    ]
    assert turn3["graders"][0]["type"] == "rubrics" and turn3["assertions"][0]["evidence"] == "because c1"
    [request] = [b for b in fake_openai.judge_requests() if "Recalls that the user asked" in prompt_of(b)]
    assert list(schema_of(request)["properties"]) == ["c1", "c2"]
    prompt = prompt_of(request)
    assert "[system] You are a helpful math tutor." in prompt
    assert "[turn 1] user: What is 15% of 200?" in prompt and "[turn 2] assistant: Double 30 is 60." in prompt
    assert (
        "[turn 3] assistant: You asked about 15% and 200.\n\nResponse to evaluate: the assistant's message of turn 3"
        in prompt
    )
    assert "Goal of this test: Agent maintains context" in prompt
    assert retention["judge_token_usage"]["input_tokens"] == grader_judge_usage(retention) > 0
    assert retention["judge_token_usage"]["output_tokens"] > 0

    stop = results["stop-on-failure"]
    assert stop["verdict"] == "fail"
    assert [(s["name"], s["verdict"]) for s in stop["scores"]] == [("turn-1", "fail"), ("turn-2", "skip")]
    assert not any("Multiply" in m["content"] for m in stop["output"])  # turn 2 never sent
    assert stop["scores"][0]["assertions"][0] == {"text": "Answers with 4", "passed": False, "evidence": "because c1"}

    mixed = results["mixed-assertions"]
    assert mixed["verdict"] == "pass"
    assert [g["type"] for g in mixed["scores"][1]["graders"]] == ["rubrics", "contains"]

    assert results["weakest-link-scoring"]["verdict"] == "pass"

    coherence = results["conversation-coherence"]
    conversation = coherence["scores"][-1]
    assert conversation["name"] == "conversation" and conversation["verdict"] == "pass"
    assert [a["text"] for a in conversation["assertions"]] == [
        "Agent maintains consistency — later suggestions align with earlier preferences",
        "Agent does not contradict its own prior recommendations",
    ]
    [request] = [b for b in fake_openai.judge_requests() if "Agent does not contradict" in prompt_of(b)]
    prompt = prompt_of(request)
    assert "Conversation (turns are numbered):" in prompt
    assert "[turn 1] assistant: Try Cancun or Bali." in prompt
    assert "[turn 2] assistant: Then the beaches of Bali are ideal." in prompt
    assert "the conversation as a whole" in prompt


def test_agentv_rubric_suite_every_field_honoured(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    def judge(body: dict) -> str:
        values = {"server-errors": False, "factual_accuracy": 8, "brevity_and_clarity": 10, "": 9}
        return json.dumps(answer(schema_of(body), values))

    fake_openai.judge = judge
    # A copy of the eval file alone (issue 28 copied AgentV's folders whole), so read as one of
    # convoeval's own: its code-grader's check_syntax.py is not beside it, so that grader errors,
    # and the test, which it could have failed, is undecided.
    suite = tmp_path / "rubric" / "dataset.eval.yaml"
    suite.parent.mkdir()
    shutil.copy(AGENTV / "examples/features/rubric/evals/dataset.eval.yaml", suite)
    code, out, err = cli(
        "run",
        suite,
        "--target",
        "scripted",
        "--judge",
        "openai:fake-judge",
        "-o",
        tmp_path / "r.jsonl",
    )
    results = by_id(read_jsonl(tmp_path / "r.jsonl"))
    assert code == 1, out + err  # the undecided test
    requests = {tuple(schema_of(b)["properties"]): b for b in fake_openai.judge_requests()}

    simple = results["code-explanation-simple"]["scores"][0]
    assert [a["text"] for a in simple["assertions"]] == [
        "Mentions divide-and-conquer approach",
        "Explains the partition step",
        "States time complexity correctly",
    ]
    prompt = prompt_of(requests[("c1", "c2", "c3")])
    assert "Reference answer" in prompt and "Quicksort is a divide-and-conquer sorting algorithm" in prompt
    assert "Goal of this test: Provide a clear explanation of how quicksort works" in prompt

    detailed = results["technical-writing-detailed"]
    assert detailed["score"] == pytest.approx(6 / 7.5) and detailed["verdict"] == "pass"
    grader = detailed["scores"][0]["graders"][0]
    assert grader["details"]["criteria"]["success-codes"]["weight"] == 2.0
    assert grader["details"]["criteria"]["server-errors"] == {
        "satisfied": False,
        "score": 0.0,
        "weight": 1.5,
        "required": False,
        "passed": False,
    }
    assert ("structure", "success-codes", "client-errors", "server-errors", "practical-examples") in requests

    multi = results["code-quality-multi-eval"]
    assert multi["execution_status"] == "undecided" and multi["grader_errors"] == 1
    rubric, syntax = multi["scores"][0]["graders"]
    assert rubric["verdict"] == "pass" and [a["text"] for a in rubric["assertions"]][1] == "Includes type hints"
    assert syntax["name"] == "python_syntax" and syntax["verdict"] == "error" and syntax["score"] is None
    assert (multi["verdict"], multi["score"]) == ("error", None)  # 1.0 and ? against 0.8: 0.5 or 1

    implicit = results["summary-task"]["scores"][0]["graders"][0]
    assert implicit["type"] == "llm-grader" and implicit["name"] == "expected_output"
    assert implicit["score"] == 0.9
    [request] = [b for b in fake_openai.judge_requests() if "Summarize this article:" in prompt_of(b)]
    prompt = prompt_of(request)
    assert "Climate change accelerates with rapid Arctic ice loss" in prompt
    assert "Goal of this test: Provide a concise summary of the key points in under 50 words" in prompt

    ranges = results["summary-multi-criteria-score-ranges-proposed"]
    assert ranges["score"] == pytest.approx((2 * 0.8 + 1.0) / 3) and ranges["verdict"] == "pass"
    accuracy = ranges["scores"][0]["assertions"][0]
    assert accuracy["text"] == "factual_accuracy" and accuracy["passed"] is True
    assert accuracy["evidence"].startswith("8/10 (Accurate and covers the key points with only minor omissions.)")
    sub = schema_of(requests[("factual_accuracy", "brevity_and_clarity")])["properties"]["brevity_and_clarity"]
    assert sub["properties"]["score"] == {"type": "integer", "minimum": 0, "maximum": 10}


def test_code_grader_success_path_next_to_a_copy(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The rubric example's code-grader runs `uv run python check_syntax.py`. Beside a copy of
    # the suite, with a check_syntax.py and a stand-in `uv` on PATH, it scores instead of erroring.
    suite = tmp_path / "rubric.eval.yaml"
    shutil.copy(AGENTV / "examples/features/rubric/evals/dataset.eval.yaml", suite)
    write(
        tmp_path / "check_syntax.py",
        "import ast, json, sys\n"
        "data = json.load(sys.stdin)\n"
        "ast.parse(data['output_text'])\n"
        "print(json.dumps({'score': 1.0, 'assertions': [{'text': 'parses', 'passed': True}]}))\n",
    )
    bin_dir = tmp_path / "bin"
    uv = write(bin_dir / "uv", f'#!/bin/sh\nshift 2\nexec "{sys.executable}" "$@"\n')
    uv.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    targets = write(
        tmp_path / "targets.yaml",
        "targets:\n  - name: coder\n    provider: scripted\n"
        "    default: \"def validate_email(email: str) -> bool:\\n    return '@' in email\"\n",
    )
    code, out, err = cli(
        "run",
        suite,
        "--targets",
        targets,
        "--target",
        "coder",
        "--judge",
        "openai:fake-judge",
        "-o",
        tmp_path / "r.jsonl",
    )
    multi = by_id(read_jsonl(tmp_path / "r.jsonl"))["code-quality-multi-eval"]
    syntax = multi["scores"][0]["graders"][1]
    assert syntax["verdict"] == "pass" and syntax["assertions"][0]["text"] == "parses", syntax
    assert multi["grader_errors"] == 0


WINDOWED = """\
tests:
  - id: windowed
    mode: conversation
    window_size: 1
    criteria: Answers every question
    input:
      - {role: system, content: Be brief.}
    turns:
      - input: first question
      - input: second question
        expected_output: a second answer
      - input: third question
        assertions:
          - Answers the third question
  - id: criteria-only
    mode: conversation
    criteria: Stays polite
    turns:
      - input: hello
      - input: bye
"""


def test_python_api_window_implicit_graders_and_repeats(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.judge = lambda body: json.dumps(answer(schema_of(body), {"": 8}))
        suite = write(tmp_path / "s.eval.yaml", WINDOWED)
        target = TargetConfig(
            name="bot", provider="openai", model="fake-target", base_url=server.base_url, max_retries=0
        )
        judge = TargetConfig(
            name="judge", provider="openai", model="fake-judge", base_url=server.base_url, max_retries=0
        )
        report = convoeval.run(suite, target=target, judge=judge, judge_repeats=2)
        judge_prompts = [prompt_of(b) for b in server.judge_requests()]

    results = {r.test_id: r for r in report.results}
    windowed = results["windowed"]
    turn2, turn3 = windowed.scores[1], windowed.scores[2]
    assert windowed.scores[0].graders == []  # nothing to grade on turn 1
    [implicit] = turn2.graders
    assert implicit.name == "expected_output" and implicit.score == 0.8
    assert implicit.details["repeats"] == 2 and implicit.details["scores"] == [0.8, 0.8]
    assert implicit.details["stdev"] == 0.0 and implicit.judge_calls == 2
    [rubric] = turn3.graders
    assert rubric.type == "rubrics" and rubric.details["repeats"] == 2
    [third] = {p for p in judge_prompts if "Answers the third question" in p}
    assert "[system] Be brief." in third and "[turn 3] user: third question" in third
    assert "first question" not in third and "second question" not in third  # window_size: 1
    assert len([p for p in judge_prompts if "Answers the third question" in p]) == 2  # repeats

    criteria_only = results["criteria-only"]
    conversation = criteria_only.scores[-1]
    assert conversation.name == "conversation"
    [implicit] = conversation.graders
    assert implicit.name == "criteria" and implicit.type == "llm-grader" and implicit.score == 0.8
    [prompt] = {p for p in judge_prompts if "Stays polite" in p}
    assert "[turn 1] user: hello" in prompt and "[turn 2] user: bye" in prompt
    assert "[turn 2] assistant: Reply to: bye" in prompt
    # 2 + 2 + 2 judge calls (two graders and a conversation grader, each asked twice).
    assert criteria_only.judge_token_usage.input_tokens > 0
    assert windowed.judge_token_usage.input_tokens == sum(
        g.judge_usage.input_tokens for e in windowed.scores for g in e.graders if g.judge_usage
    )


def test_tod_restaurant_example(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    example = REPO / "examples" / "tod-restaurant" / "restaurant-booking.eval.yaml"

    def judge(body: dict) -> str:
        prompt = prompt_of(body)
        values: dict = {}
        if "User query:\nIt's for 4 people on Friday at 19:30." in prompt:
            values = {"backend_consistency": 3}
        return json.dumps(answer(schema_of(body), values, reason="checked"))

    fake_openai.judge = judge
    report = convoeval.run(example, target="demo-bot", judge="openai:fake-judge", output=tmp_path / "r.jsonl")
    results = {r.test_id: r for r in report.results}
    assert set(results) == {"find-and-book", "no-match-then-alternatives"}
    book = results["find-and-book"]
    assert [s.name for s in book.scores] == ["turn-1", "turn-2", "turn-3", "conversation"]
    turn1 = book.scores[0]
    assert [g.type for g in turn1.graders] == ["td-eval", "icontains-any"]
    assert all(g.verdict == "pass" for g in turn1.graders)
    turn3_tdeval = book.scores[2].graders[0]
    assert turn3_tdeval.dimensions is not None and turn3_tdeval.dimensions["backend_consistency"].likert == 3
    assert turn3_tdeval.score == pytest.approx((1 + 0.5 + 1) / 3)
    assert [g.type for g in book.scores[3].graders] == ["goal-completion", "knowledge-retention"]
    assert book.threshold == 0.75

    prompts = [prompt_of(b) for b in fake_openai.judge_requests()]
    [first] = [p for p in prompts if "User query:\nHi! I'm looking for a cheap italian" in p]
    assert '"count": 3' in first and '"name": "zizzi cambridge"' in first
    assert "Domain: restaurant" in first and "- bookpeople: the number of people for the reservation" in first
    assert "Book only after the user chose a restaurant" in first
    [no_match] = [p for p in prompts if "User query:\nIs there a Japanese restaurant" in p]
    assert '"count": 0' in no_match and '"matches": []' in no_match
    [goal] = [p for p in prompts if "What to evaluate: Goal completion" in p and "Zizzi" in p]
    assert "The user's goal: The user finds a cheap Italian restaurant" in goal
    assert "[turn 3] assistant: Done: a table for 4 at Zizzi Cambridge" in goal


def test_judge_reasks_count_the_re_ask_whether_or_not_it_helped(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """`judge_reasks` counts the re-ask of an unusable judge answer when the second answer is
    unusable too (the grader errors), as when it is used; a composite adds up its checks'.
    Before: `judge_calls: 2, judge_reasks: 0` on every "unparseable after a re-ask" error."""
    unusable = json.dumps({"reasoning": "off the scale", "score": 11})

    def judge(body: dict) -> str:
        reask = body["messages"][-1]["content"].startswith("Your answer could not be used")
        prompt = prompt_of(body)
        if "case fine" in prompt or ("case rescued" in prompt and reask):
            return json.dumps({"reasoning": "good", "score": 9})
        return unusable

    fake_openai.judge = judge
    targets = write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: 'ok 42'}\n")
    grader = "{type: llm-grader, prompt: 'Rate {{ input }} / {{ output }}'}"
    suite = write(
        tmp_path / "r.eval.yaml",
        "tests:\n"
        + "".join(
            f"  - {{id: {c}, input: 'case {c}', assertions: [{grader}]}}\n" for c in ("unusable", "rescued", "fine")
        )
        + f"  - id: nested\n    input: case nested\n    assertions:\n"
        f"      - {{type: composite, assertions: [{grader}, {{type: contains, value: '42'}}]}}\n",
    )
    report = convoeval.run(
        str(suite), target="bot", targets_file=str(targets), judge="openai:j", store=False, cache=False
    )
    graders = {r.test_id: r.scores[0].graders[0] for r in report.results}
    spent = {test_id: (g.verdict, g.judge_calls, g.judge_reasks) for test_id, g in graders.items()}
    assert spent == {
        "unusable": ("error", 2, 1),
        "rescued": ("pass", 2, 1),
        "fine": ("pass", 1, 0),
        "nested": ("pass", 2, 1),
    }
    assert "unparseable after a re-ask" in (graders["unusable"].error or "")
    assert len(fake_openai.judge_requests()) == 7
    nested = graders["nested"].details["scores"][0]
    assert (nested["verdict"], nested["judge_calls"], nested["judge_reasks"]) == ("error", 2, 1)
