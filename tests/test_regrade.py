"""`convoeval grade run.jsonl`: a stored run judged again with the checks of its own suite
(stored with each result), or with `--graders FILE` instead. The run and the regrading are real
CLI runs; the target is scripted, the judges are the loopback fake OpenAI server."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import convoeval
from convoeval.testing import FakeOpenAIServer, Fault

from .conftest import DATA, read_jsonl, write
from .judge_fakes import answer, schema_of
from .test_simulated_user import HAPPY, REFUND, FakeWorld

SUITE = """\
tests:
  - id: capital
    input: "Capital of France?"
    assertions:
      - {type: contains, value: Paris}
      - type: rubrics
        criteria: ["Names Paris as the capital"]
  - id: wrong-city
    input: "Capital of Italy?"
    assertions:
      - {type: contains, value: Rome}
  - id: quick
    input: "Say something slowly"
    assertions:
      - {type: latency, threshold: 5000}
  - id: trip
    mode: conversation
    turns:
      - input: "Plan a trip to Lisbon"
        assertions: [{type: icontains, value: lisbon}]
      - input: "And the budget?"
        assertions:
          - {type: regex, value: "\\\\d+ EUR"}
          - type: rubrics
            criteria: ["Gives a budget"]
    assertions:
      - type: llm-grader
        prompt: "Is this trip plan helpful? {{ output }}"
  - id: greeting
    input: "Say hello"
    assertions: [{type: starts-with, value: Hello}]
"""

TARGETS = """\
targets:
  - name: bot
    provider: scripted
    rules:
      - {match: "France", reply: "Paris."}
      - {match: "Italy", reply: "Paris, I think."}
      - {match: "slowly", reply: "Soooo..."}
      - {match: "Lisbon", reply: "Lisbon in 3 days: Alfama, Belem, Sintra."}
      - {match: "budget", reply: "About 600 EUR."}
      - {match: "hello", reply: "Hi there."}
"""


def generous(body: dict) -> str:
    """The run's judge: every criterion holds, every reply scores 9/10."""
    return json.dumps(answer(schema_of(body), default=9 if "score" in schema_of(body)["properties"] else True))


def strict(body: dict) -> str:
    """Another judge: Paris is not accepted, the trip plan gets 2/10."""
    text = " ".join(m["content"] for m in body["messages"])
    schema = schema_of(body)
    if "score" in schema["properties"]:
        return json.dumps(answer(schema, {"": 2}, reason="strict"))
    return json.dumps(answer(schema, default="Paris." not in text, reason="strict"))


def verdicts(results: list[dict]) -> dict[str, dict[str, str]]:
    """Per test: the verdict of each check (grader name @ entry)."""
    return {
        r["test_id"]: {f"{g['name']}@{e['name']}": g["verdict"] for e in r["scores"] for g in e["graders"]}
        for r in results
    }


def run_suite(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> Path:
    return run_printing(cli, fake_openai, tmp_path, SUITE)[0]


def run_printing(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, suite_text: str, *extra: object
) -> tuple[Path, str]:
    """Run `suite_text` against the scripted bot, judged generously (`extra`: more options); the
    results file and what the run printed."""
    fake_openai.judge = generous
    suite = write(tmp_path / "suite" / "trip.eval.yaml", suite_text)
    targets = write(tmp_path / "suite" / "targets.yaml", TARGETS)
    code, out, err = cli(
        "run",
        suite,
        "--targets",
        targets,
        "--target",
        "bot",
        "--judge",
        "openai:generous",
        *extra,
        "-o",
        tmp_path / "run.jsonl",
    )
    assert code == 1, out + err
    return tmp_path / "run.jsonl", out + err


def test_grade_judges_a_stored_run_again_with_its_own_checks(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    stored = run_suite(cli, fake_openai, tmp_path)
    before = read_jsonl(stored)
    assert {r["test_id"]: r["verdict"] for r in before} == {
        "capital": "pass",
        "wrong-city": "fail",
        "quick": "pass",
        "trip": "pass",
        "greeting": "fail",
    }
    fake_openai.reset(judge=strict)
    code, out, err = cli("grade", stored, "--judge", "openai:strict", "-o", tmp_path / "graded.jsonl")
    after = read_jsonl(tmp_path / "graded.jsonl")
    assert code == 1, out + err
    assert "5 test(s) of" in out and "judged again with their own checks" in out
    assert fake_openai.target_requests() == []
    assert {b["model"] for b in fake_openai.judge_requests()} == {"strict"}
    # the same tests and checks; deterministic verdicts as in the run, judged ones as the new judge says
    old, new = verdicts(before), verdicts(after)
    assert old.keys() == new.keys() and all(old[t].keys() == new[t].keys() for t in old)
    assert new["wrong-city"] == old["wrong-city"] == {"contains@turn-1": "fail"}
    assert new["greeting"] == old["greeting"] == {"starts-with@turn-1": "fail"}
    assert new["capital"] == {"contains@turn-1": "pass", "rubrics@turn-1": "fail"}
    assert new["trip"]["icontains@turn-1"] == "pass" and new["trip"]["regex@turn-2"] == "pass"
    assert new["trip"]["rubrics@turn-2"] == "pass"  # "Gives a budget": the reply is not "Paris."
    assert new["trip"]["llm-grader@conversation"] == "fail"  # 2/10
    assert {r["test_id"]: r["target"] for r in after} == {r["test_id"]: "bot" for r in before}
    # the replayed conversations are the stored ones
    assert [[m["content"] for m in r["output"]] for r in after] == [[m["content"] for m in r["output"]] for r in before]


@pytest.mark.parametrize("ref", ["last", "run-id"])
def test_grade_takes_a_run_of_the_store_as_report_does(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, ref: str
) -> None:
    """`grade last` (or a run id) judges that stored run again, as `report last` reads it; before:
    `last:1: (file): no such file`."""
    state = tmp_path / "state"
    _, printed = run_printing(cli, fake_openai, tmp_path, SUITE.split("  - id: quick")[0], "--store", state)
    run_id = re.findall(r"run (\S+) done", printed)[-1]
    fake_openai.reset(judge=strict)
    code, out, err = cli(
        "grade",
        ref if ref == "last" else run_id,
        "--store",
        state,
        "--judge",
        "openai:strict",
        "-o",
        tmp_path / "graded.jsonl",
    )
    assert code == 1 and "2 test(s) of" in out and "judged again with their own checks" in out, out + err
    assert verdicts(read_jsonl(tmp_path / "graded.jsonl"))["capital"] == {
        "contains@turn-1": "pass",
        "rubrics@turn-1": "fail",
    }
    code, out, err = cli("grade", "no-such-run", "--store", state)
    assert code == 2 and "no-such-run: no such results file or run" in err and "Traceback" not in err, out + err


def test_stored_latency_is_replayed(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    fake_openai.judge = generous
    suite = write(
        tmp_path / "s" / "slow.eval.yaml",
        "tests:\n  - id: slow\n    input: hi\n    assertions: [{type: latency, threshold: 30}]\n",
    )
    targets = write(
        tmp_path / "s" / "targets.yaml",
        "targets:\n  - {name: sleepy, provider: scripted, default: zzz, delay_s: 0.1}\n",
    )
    code, _, _ = cli("run", suite, "--targets", targets, "--target", "sleepy", "-o", tmp_path / "run.jsonl")
    stored = read_jsonl(tmp_path / "run.jsonl")[0]
    assert code == 1 and stored["scores"][0]["latency_ms"] >= 100
    code, out, err = cli("grade", tmp_path / "run.jsonl", "-o", tmp_path / "graded.jsonl")
    graded = read_jsonl(tmp_path / "graded.jsonl")[0]
    assert code == 1, out + err
    assert graded["scores"][0]["latency_ms"] == stored["scores"][0]["latency_ms"]
    assert graded["scores"][0]["graders"][0]["verdict"] == "fail"


def test_a_run_without_stored_checks_gets_a_clear_message(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    stored = run_suite(cli, fake_openai, tmp_path)
    old = tmp_path / "old.jsonl"
    lines = [json.loads(line) for line in stored.read_text().splitlines()]
    old.write_text("".join(json.dumps({k: v for k, v in r.items() if k != "checks"}) + "\n" for r in lines))
    code, out, err = cli("grade", old, "--judge", "openai:strict")
    assert code == 2
    assert f"{old}:1: capital @ bot: this result has no stored checks" in err
    assert "--graders FILE" in err


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [
        ("file", -1e308, "checks.file: -1e+308"),
        ("suite", [1], "checks.suite: [1]"),
        ("suite", {"execution": "x"}, "checks.suite.execution: 'x'"),
    ],
)
def test_stored_checks_convoeval_did_not_write_get_a_clear_message(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, field: str, value: object, shown: str
) -> None:
    """Found by mutating a stored run: a number as the suite's file was a TypeError traceback."""
    stored = run_suite(cli, fake_openai, tmp_path)
    edited = tmp_path / "edited.jsonl"
    lines = [json.loads(line) for line in stored.read_text().splitlines()]
    lines[0]["checks"][field] = value
    edited.write_text("".join(json.dumps(r) + "\n" for r in lines))
    code, out, err = cli("grade", edited, "--judge", "openai:strict")
    assert code == 2 and "Traceback" not in out + err
    assert f"{edited}:1: capital @ bot: {shown} is not what convoeval stores" in err


def test_graders_file_replaces_the_checks(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    stored = run_suite(cli, fake_openai, tmp_path)
    graders = write(tmp_path / "graders.yaml", "assertions:\n  - {type: icontains, value: paris}\n")
    code, out, err = cli("grade", stored, "--graders", graders, "-o", tmp_path / "graded.jsonl")
    after = {r["test_id"]: r for r in read_jsonl(tmp_path / "graded.jsonl")}
    assert code == 1, out + err
    assert {t: r["verdict"] for t, r in after.items()} == {
        "capital@bot": "pass",
        "wrong-city@bot": "pass",
        "quick@bot": "fail",
        "trip@bot": "fail",
        "greeting@bot": "fail",
    }
    assert {g["type"] for r in after.values() for e in r["scores"] for g in e["graders"]} == {"icontains"}


def test_a_simulated_users_conversation_is_graded_as_recorded(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    world = FakeWorld(fake_openai, list(HAPPY), success=[True], failure=[False])
    suite = write(
        tmp_path / "s" / "refund.eval.yaml",
        REFUND.replace(
            "{extra}",
            "    success: [The refund is issued]\n    failure: [The refund is refused]\n"
            "    assertions: [{type: simulator-fidelity}]",
        ),
    )
    args = ("--target", "openai:agent-model", "--judge", "openai:judge-model")
    code, out, err = cli("run", suite, *args, "-o", tmp_path / "run.jsonl")
    stored = read_jsonl(tmp_path / "run.jsonl")[0]
    assert code == 0 and stored["outcome"] == "passed", out + err
    world = FakeWorld(
        fake_openai, [], success=[False], failure=[True]
    )  # another verdict; no simulator step may be asked for
    code, out, err = cli("grade", tmp_path / "run.jsonl", "--judge", "openai:judge-model", "-o", tmp_path / "g.jsonl")
    graded = read_jsonl(tmp_path / "g.jsonl")[0]
    assert code == 1, out + err
    assert "graded as recorded transcripts" in out
    assert graded["test_id"] == "refund" and graded["outcome"] == "failed"
    said = [m["content"] for m in stored["output"]]
    assert said[-1] == "Great, thank you!"  # the simulator's last words, which got no reply
    assert [m["content"] for m in graded["output"]] == said[:-1]
    assert not [b for b in fake_openai.judge_requests() if b["response_format"]["json_schema"]["name"] == "user_step"]
    assert world.simulated_requests() == []
    assert fake_openai.target_requests() == []


def test_results_kept_in_memory_carry_their_checks_too(tmp_path: Path) -> None:
    suite = write(tmp_path / "trip.eval.yaml", SUITE)
    write(tmp_path / "targets.yaml", TARGETS)
    report = convoeval.run(suite, target="bot", test_ids=["greeting"], store=False, cache=False)
    [result] = report.results
    assert result.checks == {
        "version": 1,
        "file": str(suite.resolve()),
        "suite": {"assertions": []},
        "test": {"id": "greeting", "input": "Say hello", "assertions": [{"type": "starts-with", "value": "Hello"}]},
    }


def test_grade_with_a_judge_panel(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    stored = run_suite(cli, fake_openai, tmp_path)

    def by_model(body: dict) -> str:
        return strict(body) if body["model"] == "strict" else generous(body)

    fake_openai.reset(judge=by_model)
    code, out, err = cli(
        "grade",
        stored,
        "--judge",
        "openai:strict",
        "--judge",
        "openai:generous",
        "--panel-rule",
        "min",
        "-o",
        tmp_path / "g.jsonl",
    )
    after = {r["test_id"]: r for r in read_jsonl(tmp_path / "g.jsonl")}
    rubric = next(g for g in after["capital"]["scores"][0]["graders"] if g["type"] == "rubrics")
    assert [(a["judge"], a["verdict"]) for a in rubric["panel"]] == [
        ("openai:strict", "fail"),
        ("openai:generous", "pass"),
    ]
    assert rubric["panel_rule"] == "min" and rubric["verdict"] == "fail"
    assert "judge panel agreement" in out and "rubrics: 2 check(s) by openai:strict, openai:generous" in out


def test_an_empty_recorded_reply_is_a_turn_of_its_own(cli, tmp_path: Path) -> None:
    """A logged chat whose assistant answered one message with empty text (Inspect, DeepEval and
    OpenTelemetry logs have them) keeps three turns: the user's next message opens a new turn.
    Before: it was merged into the unanswered turn, and the chat was graded as two turns."""
    log = tmp_path / "chats.jsonl"
    messages = [
        {"role": "user", "content": "First question"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "Are you there?"},
        {"role": "assistant", "content": "Yes, sorry."},
        {"role": "user", "content": "Thanks"},
        {"role": "assistant", "content": "You are welcome."},
    ]
    log.write_text(json.dumps({"messages": messages}) + "\n")
    graders = write(tmp_path / "graders.yaml", "turn_assertions:\n  - {type: not-contains, value: zzz}\n")
    code, _, err = cli("grade", log, "--graders", graders, "-o", tmp_path / "graded.jsonl")
    [result] = read_jsonl(tmp_path / "graded.jsonl")
    turns = [s for s in result["scores"] if s["name"].startswith("turn-")]
    assert [s["name"] for s in turns] == ["turn-1", "turn-2", "turn-3"], err
    users = [m["content"] for m in result["output"] if m["role"] == "user"]
    assert users == ["First question", "Are you there?", "Thanks"]
    assert code == 0, err


ERRORS = """\
name: broken-run
tests:
  - id: fine
    input: "Say hello"
    assertions: [{type: contains, value: hello}]
  - id: late
    mode: conversation
    turns:
      - input: "Say hello"
      - input: "now explode"
  - id: dead
    input: "explode at once"
    assertions: [{type: contains, value: x}]
  - id: after-dead
    depends_on: [dead]
    on_dependency_failure: skip
    input: "Say hello"
"""


def test_graders_file_on_a_run_with_errors_and_skips(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    """A run whose tests errored (before or after a reply) or were skipped is graded with
    `--graders`: the results without a reply are named and left out, an errored conversation
    stays an execution error with its recorded error."""
    fake_openai.faults.append(Fault(status=400, match="explode", purpose="target", times=2))
    suite = write(tmp_path / "broken.eval.yaml", ERRORS)
    code, out, err = cli("run", suite, "--target", "openai:m", "--concurrency", "1", "-o", tmp_path / "run.jsonl")
    assert {r["test_id"]: r["execution_status"] for r in read_jsonl(tmp_path / "run.jsonl")} == {
        "fine": "ok",
        "late": "execution_error",
        "dead": "execution_error",
        "after-dead": "skipped",
    }, out + err
    graders = write(tmp_path / "graders.yaml", "assertions:\n  - {type: icontains, value: hello}\n")
    code, out, err = cli("grade", tmp_path / "run.jsonl", "--graders", graders, "-o", tmp_path / "graded.jsonl")
    assert "2 result(s) without a user and an assistant message left out: dead@openai:m (turn 1: HTTP 400" in err
    assert "after-dead@openai:m (dependency failed: dead)" in err
    after = {r["test_id"]: r for r in read_jsonl(tmp_path / "graded.jsonl")}
    assert {t: r["execution_status"] for t, r in after.items()} == {
        "fine@openai:m": "ok",
        "late@openai:m": "execution_error",
    }
    assert "turn 2: HTTP 400" in after["late@openai:m"]["error"]


def test_grade_of_a_json_document_no_reader_knows_says_so(cli, tmp_path: Path) -> None:
    """promptfoo's results.json (pretty-printed) is valid JSON: `grade` named its second line
    "invalid JSON" before; it now says what it reads instead."""
    code, _, err = cli("grade", DATA / "promptfoo" / "edges" / "promptfoo-results.json")
    assert code == 2 and "invalid JSON" not in err
    assert "promptfoo-results.json:1: a JSON document in none of the formats read as recorded conversations" in err
    broken = write(tmp_path / "broken.jsonl", '{"messages": [}\n')
    code, _, err = cli("grade", broken)
    assert code == 2 and "broken.jsonl:1: invalid JSON" in err
