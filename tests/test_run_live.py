"""The live loop through the CLI against a loopback fake OpenAI-compatible server."""

from __future__ import annotations

import json
from pathlib import Path

from convoeval.testing import FakeOpenAIServer, Fault

from .conftest import read_jsonl, write

SECRET = "sk-test-SECRET-never-stored-1234"


def numbered_replies(server: FakeOpenAIServer) -> None:
    """Each target reply is unique and names the user message it answers."""
    counter = iter(range(1, 10_000))

    def reply(body: dict) -> str:
        users = [m["content"] for m in body["messages"] if m["role"] == "user"]
        return f"R{next(counter)} answers '{users[-1]}'"

    server.reply = reply


CONVERSATION = """\
tests:
  - id: chat
    mode: conversation
    input:
      - role: system
        content: You are terse.
    turns:
      - input: first question
        expected_output: EXPECTED-ONE never sent
      - input: second question
        expected_output: EXPECTED-TWO never sent
        assertions:
          - type: contains
            value: second question
      - input: third question
        assertions:
          - type: icontains
            value: "R3"
    assertions:
      - type: not-contains
        value: forbidden
"""


def test_actual_replies_carried_forward_and_expected_never_sent(cli, fake_openai, tmp_path: Path) -> None:
    numbered_replies(fake_openai)
    suite = write(tmp_path / "s.eval.yaml", CONVERSATION)
    code, out, err = cli(
        "run", suite, "--target", "openai:fake-model", "--judge", "openai:fake-judge", "-o", tmp_path / "r.jsonl"
    )
    target_calls = fake_openai.target_requests()
    assert len(target_calls) == 3
    third = target_calls[2]["messages"]
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user", "assistant", "user"]
    # The ACTUAL replies of turns 1 and 2 are in the history of turn 3.
    assert third[2]["content"] == "R1 answers 'first question'"
    assert third[4]["content"] == "R2 answers 'second question'"
    assert "EXPECTED-ONE" not in json.dumps(target_calls) and "EXPECTED-TWO" not in json.dumps(target_calls)
    assert target_calls[0]["model"] == "fake-model"

    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert result["test_id"] == "chat" and result["target"] == "openai:fake-model"
    assert result["mode"] == "conversation" and result["execution_status"] == "ok"
    names = [s["name"] for s in result["scores"]]
    assert names == ["turn-1", "turn-2", "turn-3", "conversation"]
    assert [s["type"] for s in result["scores"]] == ["turn", "turn", "turn", "conversation"]
    turn2 = result["scores"][1]
    assert turn2["verdict"] == "pass" and turn2["assertions"][0]["passed"] is True
    assert {"text", "passed", "evidence"} <= set(turn2["assertions"][0])
    assert [m["source"] for m in result["output"]] == ["input", "user", "target", "user", "target", "user", "target"]
    assert result["output"][-1]["content"] == "R3 answers 'third question'"
    assert result["token_usage"]["input_tokens"] > 0 and result["duration_ms"] > 0
    assert SECRET not in (tmp_path / "r.jsonl").read_text() and SECRET not in out + err
    assert "Authorization" in fake_openai.headers[0] or "authorization" in {k.lower() for k in fake_openai.headers[0]}
    # `expected_output` of turn 1 (no assertions: the implicit llm-grader) reached the judge only.
    judge_calls = fake_openai.judge_requests()
    assert len(judge_calls) == 1 and "EXPECTED-ONE" in json.dumps(judge_calls[0])
    assert len(fake_openai.requests) == len(target_calls) + 1
    assert code == 0, out + err


def test_stop_on_failure_sends_nothing_after_the_stop(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: stopper
    mode: conversation
    on_turn_failure: stop
    turns:
      - input: one
        assertions: [{type: contains, value: "answers 'one'"}]
      - input: two
        assertions: [{type: contains, value: "this will not appear"}]
      - input: three
      - input: four
""",
    )
    numbered_replies(fake_openai)
    code, out, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    assert code == 1
    assert [r["messages"][-1]["content"] for r in fake_openai.target_requests()] == ["one", "two"]
    [result] = read_jsonl(tmp_path / "r.jsonl")
    scores = [(s["name"], s["score"], s["verdict"]) for s in result["scores"]]
    assert scores == [
        ("turn-1", 1.0, "pass"),
        ("turn-2", 0.0, "fail"),
        ("turn-3", None, "skip"),
        ("turn-4", None, "skip"),
    ]
    assert result["score"] == 0.5  # turns not sent are left out, as after skip_remaining (issue 24)
    assert result["verdict"] == "fail" and result["execution_status"] == "quality_failure"
    assert any("stopped after turn 2" in n for n in result["notes"])


def test_continue_after_failure_sends_every_turn(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: goes-on
    mode: conversation
    aggregation: max
    turns:
      - input: one
        assertions: [{type: contains, value: "nope"}]
      - input: two
        assertions: [{type: contains, value: "two"}]
""",
    )
    code, _, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert len(fake_openai.target_requests()) == 2
    assert [s["score"] for s in result["scores"]] == [0.0, 1.0]
    assert result["score"] == 1.0 and code == 0  # aggregation: max


def test_min_aggregation_includes_conversation_score(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: weakest
    mode: conversation
    aggregation: min
    turns:
      - input: one
      - input: two
    assertions:
      - type: contains
        value: "answers 'one'"
""",
    )
    cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    # Turns without assertions are not graded (issue 24): only the conversation score counts.
    assert [(s["score"], s["verdict"]) for s in result["scores"]] == [(None, "skip"), (None, "skip"), (0.0, "fail")]
    assert result["scores"][-1]["name"] == "conversation" and result["score"] == 0.0


def test_conversation_assertions_see_all_replies(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: whole
    mode: conversation
    aggregation: min
    turns:
      - input: alpha
      - input: beta
    assertions:
      - {type: contains-all, value: ["Reply to: alpha", "Reply to: beta"]}
""",
    )
    code, _, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert result["scores"][-1]["verdict"] == "pass" and result["score"] == 1.0 and code == 0


def test_window_size_limits_what_graders_see(cli, fake_openai, tmp_path: Path) -> None:
    script = write(
        tmp_path / "count.py",
        """\
import json, sys
ctx = json.load(sys.stdin)
roles = [m["role"] for m in ctx["input"]]
print(json.dumps({"score": 1.0, "details": {"roles": roles}}))
""",
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        f"""\
tests:
  - id: windowed
    mode: conversation
    window_size: 1
    input: [{{role: system, content: sys}}]
    turns:
      - input: one
      - input: two
      - input: three
        assertions:
          - type: code-grader
            command: ["{Path(__import__("sys").executable).as_posix()}", "{script.as_posix()}"]
""",
    )
    cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    grader = result["scores"][2]["graders"][0]
    assert grader["verdict"] == "pass", grader
    assert grader["details"]["roles"] == ["system", "user"]
    # ...while the target got the whole history.
    assert len(fake_openai.target_requests()[2]["messages"]) == 6


def test_single_turn_tests_and_suite_assertions(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
assertions:
  - type: starts-with
    value: "Reply to:"
tests:
  - id: plain
    input: hello there
    assertions:
      - type: contains
        value: hello
  - id: messages
    input:
      - role: system
        content: be brief
      - role: user
        content: hi
""",
    )
    code, _, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results["plain"]["mode"] == "single"
    assert [g["type"] for g in results["plain"]["scores"][0]["graders"]] == ["contains", "starts-with"]
    assert [g["type"] for g in results["messages"]["scores"][0]["graders"]] == ["starts-with"]
    assert [m["role"] for m in fake_openai.target_requests()[0]["messages"]] in (["user"], ["system", "user"])
    assert code == 0


def test_trials_rerun_the_whole_conversation(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: flaky
    mode: conversation
    turns:
      - input: one
        assertions: [{type: regex, value: "R[13] "}]
      - input: two
""",
    )
    numbered_replies(fake_openai)
    cli("run", suite, "--target", "openai:m", "--trials", "3", "--concurrency", "1", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert len(fake_openai.target_requests()) == 6
    assert [t["trial"] for t in result["trials"]] == [0, 1, 2]
    # Replies R1, R3, R5 answer the first turn of each trial; R1 and R3 match.
    assert [t["verdict"] for t in result["trials"]] == ["pass", "pass", "fail"]
    # Turn 2 has no assertions: not graded, so each trial's score is its turn 1's (issue 24).
    assert result["score"] == round((1.0 + 1.0 + 0.0) / 3, 6)
    assert result["pass_at_k"] == {"1": round(2 / 3, 6), "2": 1.0, "3": 1.0}
    assert result["pass_hat_k"] == {"1": round(2 / 3, 6), "2": round(1 / 3, 6), "3": 0.0}


def test_depends_on_skip_fail_run(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: base
    input: x
    assertions: [{type: contains, value: "not there"}]
  - id: skipped
    input: y
    depends_on: base
  - id: failed
    input: y
    depends_on: [base]
    on_dependency_failure: fail
  - id: ran
    input: z
    depends_on: [base]
    on_dependency_failure: run
  - id: after-ok
    input: w
    depends_on: [ran]
""",
    )
    code, _, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    assert (results["skipped"]["verdict"], results["skipped"]["execution_status"]) == ("skip", "skipped")
    assert (results["failed"]["verdict"], results["failed"]["score"]) == ("fail", 0.0)
    assert "dependency failed: base" in results["failed"]["error"]
    assert results["ran"]["verdict"] == "pass" and results["after-ok"]["verdict"] == "pass"
    sent = sorted(r["messages"][-1]["content"] for r in fake_openai.target_requests())
    assert sent == ["w", "x", "z"]
    assert code == 1


def test_target_errors_are_execution_errors_and_the_run_goes_on(cli, fake_openai, tmp_path: Path) -> None:
    write(
        tmp_path / "targets.yaml",
        f"""\
targets:
  - name: fragile
    provider: openai
    model: m
    base_url: {fake_openai.base_url}
    max_retries: 1
""",
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: broken
    mode: conversation
    turns:
      - input: ok
      - input: boom
  - id: fine
    input: fine
""",
    )
    fake_openai.faults.append(Fault(status=503, headers={"Retry-After": "0"}, match="boom", times=99))
    code, out, err = cli("run", suite, "--target", "fragile", "-o", tmp_path / "r.jsonl", "--concurrency", "1")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
    broken = results["broken"]
    assert broken["execution_status"] == "execution_error" and broken["verdict"] == "error"
    assert "turn 2" in broken["error"] and "HTTP 503" in broken["error"] and "2 attempt" in broken["error"]
    assert broken["scores"][0]["verdict"] == "skip" and broken["scores"][1]["verdict"] == "skip"  # nothing to grade
    assert broken["scores"][0]["note"] == "not graded: the turn has no assertions"
    # The turn that failed says why it has no grade (the terminal said "(no assertions)" for it).
    assert broken["scores"][1]["note"] == "not graded: the conversation ended with an error (see the test's error)"
    assert len(broken["output"]) == 3  # user, reply, the unanswered user message
    assert results["fine"]["verdict"] == "pass"
    assert code == 1


def test_every_test_erroring_exits_3(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens on port 9
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    write(tmp_path / "targets.yaml", "targets:\n  - {name: dead, provider: openai, model: m, max_retries: 0}\n")
    code, out, err = cli("run", suite, "--target", "dead", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert result["execution_status"] == "execution_error" and "connection error" in result["error"]
    assert code == 3


def test_retry_after_is_honoured_then_succeeds(cli, fake_openai, tmp_path: Path) -> None:
    fake_openai.faults.append(Fault(status=429, headers={"Retry-After": "0"}))
    fake_openai.faults.append(Fault(body="this is not json"))
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    code, _, _ = cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert len(fake_openai.requests) == 3 and result["verdict"] == "pass" and code == 0


def test_threshold_precedence(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
execution:
  threshold: 0.9
tests:
  - id: suite-level
    input: hi
    assertions: [{type: contains, value: hi, weight: 3}, {type: contains, value: nope}]
  - id: test-level
    input: hi
    execution: {threshold: 0.5}
    assertions: [{type: contains, value: hi, weight: 3}, {type: contains, value: nope}]
""",
    )
    cli("run", suite, "--target", "openai:m", "-o", tmp_path / "a.jsonl")
    results = {r["test_id"]: r for r in read_jsonl(tmp_path / "a.jsonl")}
    assert results["suite-level"]["score"] == 0.75
    assert (results["suite-level"]["threshold"], results["suite-level"]["verdict"]) == (0.9, "fail")
    assert (results["test-level"]["threshold"], results["test-level"]["verdict"]) == (0.5, "pass")
    code, _, _ = cli("run", suite, "--target", "openai:m", "--threshold", "0.7", "-o", tmp_path / "b.jsonl")
    assert {r["verdict"] for r in read_jsonl(tmp_path / "b.jsonl")} == {"pass"} and code == 0


def test_required_assertion_failure_zeroes_the_turn(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
tests:
  - id: gate
    input: hi
    assertions:
      - {type: contains, value: hi, weight: 9}
      - {type: contains, value: nope, required: true}
""",
    )
    cli("run", suite, "--target", "openai:m", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    assert result["score"] == 0.0 and result["verdict"] == "fail"


def test_targets_file_env_refs_and_headers(cli, fake_openai, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("MY_TEAM_KEY", "sk-team-abcdefgh12345678")
    write(
        tmp_path / "targets.yaml",
        f"""\
targets:
  - name: team-model
    provider: openai
    model: served-model
    base_url: "{fake_openai.base_url}"
    api_key_env: MY_TEAM_KEY
    headers: {{X-Team: "${{{{ MY_TEAM_KEY }}}}-tag"}}
    temperature: 0.3
    max_tokens: 77
""",
    )
    suite = write(tmp_path / "s.eval.yaml", "execution:\n  target: team-model\ntests:\n  - id: a\n    input: hi\n")
    code, out, err = cli("run", suite, "-o", tmp_path / "r.jsonl")
    [request] = fake_openai.requests
    assert request["model"] == "served-model" and request["temperature"] == 0.3 and request["max_tokens"] == 77
    headers = {k.lower(): v for k, v in fake_openai.headers[0].items()}
    assert headers["authorization"] == "Bearer sk-team-abcdefgh12345678"
    assert headers["x-team"] == "sk-team-abcdefgh12345678-tag"
    assert "sk-team-abcdefgh12345678" not in (tmp_path / "r.jsonl").read_text() + out + err
    assert code == 0


def test_unknown_target_name_is_a_clear_error(cli, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "execution:\n  target: llm\ntests:\n  - id: a\n    input: hi\n")
    code, out, err = cli("run", suite)
    assert code == 2 and f"{suite}:2: execution.target: 'llm' is neither" in err and "targets.yaml" in err
    assert "Traceback" not in err


def test_conversations_run_concurrently(cli, tmp_path: Path, monkeypatch) -> None:
    with FakeOpenAIServer(latency_s=0.2) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        tests = "".join(
            f"  - id: t{i}\n    mode: conversation\n    turns: [{{input: a}}, {{input: b}}]\n" for i in range(6)
        )
        suite = write(tmp_path / "s.eval.yaml", "tests:\n" + tests)
        # --no-cache: the six conversations are identical, so the cache would answer some of them.
        code, _, _ = cli(
            "run", suite, "--target", "openai:m", "--concurrency", "4", "--no-cache", "-o", tmp_path / "r.jsonl"
        )
        assert code == 0
        assert server.max_in_flight == 4  # never more than --concurrency, and really parallel
        assert len(server.requests) == 12


def test_python_api_runs_a_suite(fake_openai, tmp_path: Path, monkeypatch) -> None:
    import convoeval

    monkeypatch.chdir(tmp_path)  # the run store and cache go to ./.convoeval

    suite = write(
        tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n    assertions: [{type: icontains, value: HI}]\n"
    )
    seen = []
    report = convoeval.run(suite, target="openai:m", on_result=seen.append)
    assert [r.test_id for r in report.results] == ["a"] == [r.test_id for r in seen]
    assert report.results[0].passed and report.exit_code == 0


def test_suite_judge_settings_reach_the_judge(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
execution:
  judge: {target: "openai:judge-model", repeats: 2, temperature: 0.4}
tests:
  - id: a
    input: hi
    assertions: [Greets the user]
""",
    )
    code, out, err = cli("run", suite, "--target", "openai:m", "--no-cache", "-o", tmp_path / "r.jsonl")
    judged = fake_openai.judge_requests()
    assert len(judged) == 2  # repeats
    assert {r["model"] for r in judged} == {"judge-model"} and {r["temperature"] for r in judged} == {0.4}
    [result] = read_jsonl(tmp_path / "r.jsonl")
    grader = result["scores"][0]["graders"][0]
    assert grader["type"] == "rubrics" and grader["details"]["repeats"] == 2
    assert result["judge_token_usage"]["input_tokens"] > 0 and code == 0


def test_trials_cost_limit_stops_further_trials(cli, fake_openai, tmp_path: Path) -> None:
    write(
        tmp_path / "targets.yaml",
        f"""\
targets:
  - {{name: priced, provider: openai, model: m, base_url: "{fake_openai.base_url}",
     price_input_per_mtok: 100000, price_output_per_mtok: 100000}}
""",
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        """\
execution:
  trials: {count: 5, cost_limit_usd: 0.5}
tests:
  - id: a
    input: one two three
""",
    )
    code, _, _ = cli("run", suite, "--target", "priced", "--no-cache", "-o", tmp_path / "r.jsonl")
    [result] = read_jsonl(tmp_path / "r.jsonl")
    # Each call costs (3 + 5 words) * 0.1 = $0.8 >= $0.5: one trial, then stop.
    assert len(result["trials"]) == 1 and len(fake_openai.requests) == 1
    assert any("cost_limit_usd" in note for note in result["notes"])
    assert code == 0
