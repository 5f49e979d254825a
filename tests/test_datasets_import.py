"""Importers on the repository's small samples (tests/data/*/SOURCE.txt): the suites validate
and run against the loopback fake server."""

from __future__ import annotations

import json
from pathlib import Path

import convoeval
from convoeval.datasets import import_dataset
from convoeval.spec import load_suite

from .conftest import DATA, read_jsonl, write

MT_BENCH = DATA / "mt-bench"


def test_mt_bench_import_has_80_two_turn_questions_with_references_for_the_judge(cli, tmp_path: Path) -> None:
    code, out, err = cli("import", "mt-bench", MT_BENCH / "question.jsonl", "-o", tmp_path / "mt.eval.yaml")
    assert code == 0, err
    assert "80 test(s) written" in out
    suite = load_suite(tmp_path / "mt.eval.yaml")
    assert len(suite.tests) == 80 and all(len(t.turns or []) == 2 for t in suite.tests)
    with_reference = [t for t in suite.tests if t.turns[0].expected_output]
    assert {t.metadata["category"] for t in with_reference} == {"math", "reasoning", "coding"}
    assert len(with_reference) == 30
    grader = suite.tests[0].turns[1].assertions[0]
    assert grader.type == "llm-grader" and "1 (very poor) to 10" in grader.prompt


def test_mt_bench_second_turn_carries_the_live_first_reply_and_references_stay_with_the_judge(
    fake_openai, tmp_path: Path
) -> None:
    lines = [json.loads(line) for line in (MT_BENCH / "question.jsonl").read_text().splitlines()]
    sample = write(
        tmp_path / "question.jsonl", "\n".join(json.dumps(r) for r in lines if r["question_id"] in (81, 101))
    )
    (tmp_path / "reference_answer_gpt-4.jsonl").write_text((MT_BENCH / "reference_answer_gpt-4.jsonl").read_text())
    suite = convoeval.datasets.write_suite(import_dataset("mt-bench", sample), tmp_path / "mt.eval.yaml")
    fake_openai.reply = lambda body: f"LIVE-ANSWER to {body['messages'][-1]['content'][:12]}"
    fake_openai.judge = lambda body: json.dumps({"reasoning": "fine", "score": 8})
    report = convoeval.run(suite, target="openai:m", judge="openai:j", store=False, cache=False)
    assert [r.score for r in report.results] == [0.8, 0.8]
    targets = fake_openai.target_requests()
    assert len(targets) == 4
    second = next(
        [m["content"] for m in r["messages"]]
        for r in targets
        if len(r["messages"]) == 4 and r["messages"][1]["content"].startswith("Compose")
    )
    assert second[0] == "You are a helpful assistant."  # FastChat's chatgpt template
    assert second[2] == "LIVE-ANSWER to Compose an e" and second[3].startswith("Rewrite your previous response")
    reference = "your current position is now second place"
    assert not any(reference in json.dumps(r) for r in targets)
    judged = [r["messages"][-1]["content"] for r in fake_openai.judge_requests()]
    assert sum(reference in p for p in judged) == 2  # both turns of question 101
    assert any("LIVE-ANSWER to Compose an e" in p and "[Conversation]" in p for p in judged)


def test_import_errors_name_the_file_and_line(cli, tmp_path: Path) -> None:
    bad = write(tmp_path / "q.jsonl", '{"question_id": 1, "category": "math", "turns": ["only one"]}\n')
    code, out, err = cli("import", "mt-bench", bad, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{bad}:1: turns: expected two non-empty questions" in err
    broken = write(tmp_path / "b.jsonl", '{"question_id": 1, "category": "math", "turns": ["a", "b"]}\nnot json\n')
    code, out, err = cli("import", "mt-bench", broken, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{broken}:2: invalid JSON" in err
    # Before: OverflowError (a traceback) for a question_id of Infinity, which Python's JSON reads.
    write(tmp_path / "reference_answer_gpt-4.jsonl", '{"question_id": Infinity, "choices": [{"turns": ["4"]}]}\n')
    code, out, err = cli("import", "mt-bench", bad, "-o", tmp_path / "x.eval.yaml")
    assert code == 2 and f"{tmp_path / 'reference_answer_gpt-4.jsonl'}:1: expected question_id and choices" in err
    code, out, err = cli("import", "nope", bad)
    assert code == 2 and "unknown dataset kind 'nope' (known: " in err
    # Where the eval file cannot go: a folder, and one that takes no new file (/proc).
    code, out, err = cli("import", "mt-bench", MT_BENCH / "question.jsonl", "-o", tmp_path)
    assert (code, err) == (2, f"error: {tmp_path} is a folder; give a file name\n")
    code, out, err = cli("import", "mt-bench", MT_BENCH / "question.jsonl", "-o", "/proc/convoeval.eval.yaml")
    assert (code, err) == (2, "error: cannot write /proc/convoeval.eval.yaml: No such file or directory\n")


LOGS = """\
{"id": "log-1", "metadata": {"channel": "web"}, "messages": [{"role": "system", "content": "Be brief."}, \
{"role": "user", "content": "capital of France?"}, {"role": "assistant", "content": "Paris."}, \
{"role": "user", "content": "and Italy?"}, {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", \
"type": "function", "function": {"name": "lookup", "arguments": "{\\"country\\": \\"Italy\\"}"}}]}, \
{"role": "tool", "tool_call_id": "c1", "content": "{\\"capital\\": \\"Rome\\"}"}, {"role": "assistant", "content": "Rome."}]}
{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "Hello!"}]}
"""


def test_grade_a_transcripts_file_gives_per_turn_scores_without_target_calls(cli, fake_openai, tmp_path: Path) -> None:
    logs = write(tmp_path / "logs.jsonl", LOGS)
    code, out, err = cli("grade", logs, "--judge", "openai:judge", "-o", tmp_path / "graded.jsonl")
    assert code == 0, out + err
    assert fake_openai.target_requests() == []
    rows = read_jsonl(tmp_path / "graded.jsonl")
    assert [r["test_id"] for r in rows] == ["log-1", "conversation-2"]
    first = rows[0]
    assert [s["name"] for s in first["scores"]] == ["turn-1", "turn-2", "conversation"]
    assert [g["type"] for g in first["scores"][0]["graders"]] == ["conversation-cohesion"]
    assert first["scores"][1]["tool_calls"][0] == {
        **first["scores"][1]["tool_calls"][0],
        "name": "lookup",
        "arguments": {"country": "Italy"},
        "output": '{"capital": "Rome"}',  # as the log wrote it: text
    }
    assert [(m["role"], m["source"]) for m in first["output"]] == [
        ("system", "input"),
        ("user", "user"),
        ("assistant", "target"),
        ("user", "user"),
        ("tool", "tool"),
        ("assistant", "target"),
    ]
    judged = " ".join(r["messages"][-1]["content"] for r in fake_openai.judge_requests())
    assert "Rome." in judged and "Paris." in judged


def test_grade_rejudges_a_stored_run_with_other_graders(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        "tests:\n  - id: chat\n    mode: conversation\n    turns:\n      - input: one\n      - input: two\n",
    )
    assert cli("run", suite, "--target", "openai:m", "-o", tmp_path / "run.jsonl")[0] == 0
    calls = len(fake_openai.requests)
    graders = write(tmp_path / "g.yaml", "turn_assertions:\n  - {type: contains, value: 'Reply to: two'}\n")
    code, out, err = cli("grade", tmp_path / "run.jsonl", "--graders", graders, "-o", tmp_path / "again.jsonl")
    assert len(fake_openai.requests) == calls  # no model call at all
    row = read_jsonl(tmp_path / "again.jsonl")[0]
    assert row["test_id"] == "chat@openai:m"
    assert [s["verdict"] for s in row["scores"]] == ["fail", "pass"]
    assert code == 1
    bad = write(tmp_path / "bad.yaml", "turns: []\n")
    code, out, err = cli("grade", tmp_path / "run.jsonl", "--graders", bad)
    assert code == 2 and f"{bad}:1: turns: not a grader setting" in err


def test_grade_with_other_graders_judges_every_trial_of_a_stored_run(cli, fake_openai, tmp_path: Path) -> None:
    """Each trial's conversation is a test of its own (the old code judged the first trial's only)."""
    replies = iter(["reply A", "reply B", "reply C"])
    fake_openai.reply = lambda body: next(replies)
    suite = write(tmp_path / "s.eval.yaml", "execution:\n  trials: 3\ntests:\n  - id: chat\n    input: one\n")
    assert cli("run", suite, "--target", "openai:m", "--concurrency", "1", "-o", tmp_path / "run.jsonl")[0] == 0
    graders = write(tmp_path / "g.yaml", "turn_assertions:\n  - {type: contains, value: 'reply B'}\n")
    code, out, err = cli("grade", tmp_path / "run.jsonl", "--graders", graders, "-o", tmp_path / "again.jsonl")
    rows = [(r["test_id"], r["verdict"]) for r in read_jsonl(tmp_path / "again.jsonl")]
    assert rows == [("chat@openai:m#0", "fail"), ("chat@openai:m#1", "pass"), ("chat@openai:m#2", "fail")]
    assert code == 1, out + err
    code, out, err = cli("import", "transcripts", tmp_path / "run.jsonl", "-o", tmp_path / "t.eval.yaml")
    tests = load_suite(tmp_path / "t.eval.yaml").tests
    assert [(t.id, t.transcript[-1].content) for t in tests] == [  # type: ignore[index]
        ("chat@openai:m#0", "reply A"),
        ("chat@openai:m#1", "reply B"),
        ("chat@openai:m#2", "reply C"),
    ]


def test_transcript_tests_validate(cli, tmp_path: Path) -> None:
    bad = write(
        tmp_path / "t.eval.yaml",
        """\
tests:
  - id: a
    transcript:
      - {role: user, content: hi}
  - id: b
    turns: [{input: x}]
    transcript:
      - {role: user, content: hi}
      - {role: assistant, content: hello}
""",
    )
    code, out, err = cli("validate", bad)
    lines = (out + err).splitlines()
    assert code == 2
    assert any(":3: tests[0].transcript: a transcript needs at least one user and one assistant" in x for x in lines)
    assert any(":6: tests[1].turns: `turns` cannot be combined with `transcript`" in x for x in lines)
    logs = write(tmp_path / "logs.jsonl", LOGS)
    code, out, err = cli("import", "transcripts", logs, "-o", tmp_path / "logs.eval.yaml")
    assert code == 0 and "2 test(s) written" in out


def test_multiwoz_import_runs_with_backend_results_and_policy_in_the_judge_prompt(
    cli, fake_openai, tmp_path: Path
) -> None:
    source = DATA / "multiwoz" / "multiwoz22_sample5.jsonl"
    code, out, err = cli("import", "multiwoz", source, "-o", tmp_path / "mw.eval.yaml")
    assert code == 0, err
    suite = load_suite(tmp_path / "mw.eval.yaml")
    first = suite.tests[0]
    assert [t.id for t in suite.tests][:2] == ["multiwoz-SNG0855", "multiwoz-PMUL3558"]
    assert len(first.turns) == 5 and first.policy.domain == "hotel"
    assert first.turns[0].context["db"]["hotel"]["count"] == 23  # guesthouses with internet in hotel_db.json
    assert first.turns[0].context["reference_acts"]["Hotel-Request"] == [["area", "?"]]
    assert [a.type for a in first.turns[0].assertions] == ["td-eval"]  # on each turn, beside its reference reply
    assert first.turns[0].expected_output == "I have 33 guesthouses with internet, which area would you prefer?"
    one = write(tmp_path / "one.jsonl", source.read_text().splitlines()[0] + "\n")
    (tmp_path / "db").mkdir()
    for name in ("hotel_db.json",):
        (tmp_path / "db" / name).write_text((DATA / "multiwoz" / "db" / name).read_text())
    path = convoeval.datasets.write_suite(import_dataset("multiwoz", one), tmp_path / "one.eval.yaml")
    report = convoeval.run(path, target="openai:agent", judge="openai:judge", store=False, cache=False)
    result = report.results[0]
    assert result.verdict == "pass" and len([s for s in result.scores if s.type == "turn"]) == 5
    first_call = fake_openai.target_requests()[0]["messages"]
    assert first_call[-2]["role"] == "system" and "hotel: 23 match(es)" in first_call[-2]["content"]
    judged = fake_openai.judge_requests()[0]["messages"][-1]["content"]
    assert "acorn guest house" in judged and "reference number" in judged


def test_transcripts_example_grades_without_a_model(cli, tmp_path: Path) -> None:
    example = DATA.parent.parent / "examples" / "transcripts"
    code, out, err = cli(
        "grade", example / "support-logs.jsonl", "--graders", example / "graders.yaml", "-o", tmp_path / "r.jsonl"
    )
    rows = read_jsonl(tmp_path / "r.jsonl")
    assert code == 1 and [(r["test_id"], r["verdict"]) for r in rows] == [
        ("refund-ok", "pass"),
        ("asks-for-password", "fail"),
    ]
