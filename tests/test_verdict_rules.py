"""How a test's verdict is decided (DESIGN section 4, issue 24): a failed required check at any
level fails the test whatever the mean; a turn without assertions is not graded; turns not
sent are left out alike under `on_turn_failure: stop` and `skip_remaining`; a capture that
finds nothing stops the conversation, and no `{{ name }}` of an uncaptured variable is ever
sent to a target (checked on the request bodies a loopback server received)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import convoeval
from convoeval.results import EvaluationResult
from convoeval.targets import TargetConfig
from convoeval.testing import FakeOpenAIServer


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def run(tmp_path: Path, suite: str, **options: object) -> EvaluationResult:
    path = write(tmp_path / "s.eval.yaml", suite)
    options = {"target": "openai:m", "store": False, "cache": False, **options}
    [result] = convoeval.run(path, **options).results
    return result


RECORDED = """\
tests:
  - id: refund
    mode: conversation
    transcript:
      - {role: user, content: "I want a refund for order 7"}
      - {role: assistant, content: "Sure, I can help with order 7."}
      - {role: user, content: "It arrived broken"}
      - {role: assistant, content: "Sorry to hear that. Anything else?"}
      - {role: user, content: "Please refund it"}
      - {role: assistant, content: "Done, your order is on its way back."}
    turn_assertions:
      - {type: contains, value: "order"}
    assertions:
      - {type: contains, value: "refund issued", required: REQUIRED}
"""


def test_a_required_conversation_check_fails_the_test_whatever_the_mean(tmp_path: Path) -> None:
    """Recorded: 2 of 3 turns pass, the conversation check fails; without `required` the mean
    (0.5) decides, with it the test fails and says why at each level."""
    loose = run(tmp_path, RECORDED.replace("REQUIRED", "false"), threshold=0.5)
    assert loose.verdict == "pass" and loose.score == 0.5 and loose.failed_required == []
    strict = run(tmp_path, RECORDED.replace("REQUIRED", "true"), threshold=0.5)
    assert strict.verdict == "fail" and strict.execution_status == "quality_failure" and strict.score == 0.0
    assert strict.failed_required == ["conversation: contains"]
    assert strict.trials[0].failed_required == ["conversation: contains"]
    [conversation] = [s for s in strict.scores if s.type == "conversation"]
    assert conversation.failed_required == ["contains"]
    assert [s.verdict for s in strict.scores if s.type == "turn"] == ["pass", "fail", "pass"]


def test_a_failed_required_check_fails_the_test_at_a_threshold_of_0(tmp_path: Path) -> None:
    """A trial that failed a required check scores 0, which meets a threshold of 0 (promptfoo's
    imported tests use it: every check required). Before: the trial failed, the test passed."""
    marked = RECORDED.replace("REQUIRED", "true, min_score: 1")  # its own pass mark: not the threshold
    strict = run(tmp_path, marked, threshold=0.0)
    assert [t.verdict for t in strict.trials] == ["fail"]
    assert strict.verdict == "fail" and strict.failed_required == ["conversation: contains"]


SCRIPTED = """\
tests:
  - id: t
    mode: conversation
    turns:
      - input: one
        assertions: [{type: contains, value: "nowhere to be found"}]
      - input: two
      - input: three
"""


def test_a_turn_without_assertions_is_not_graded_and_does_not_raise_the_score(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    result = run(tmp_path, SCRIPTED)
    turns = [(s.score, s.verdict, s.note) for s in result.scores]
    assert turns[0][:2] == (0.0, "fail")
    assert turns[1] == turns[2] == (None, "skip", "not graded: the turn has no assertions")
    assert result.score == 0.0 and result.verdict == "fail"  # was 2/3 when empty turns scored 1
    assert len(fake_openai.target_requests()) == 3  # not graded is not "not sent"


def test_a_required_turn_check_fails_a_long_passing_conversation(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    turns = "".join(
        f"      - input: q{i}\n        assertions: [{{type: contains, value: 'Reply to'}}]\n" for i in range(1, 9)
    )
    suite = f"tests:\n  - id: long\n    mode: conversation\n    turns:\n{turns}"
    suite += "      - input: last\n        assertions: [{type: contains, value: 'refund', required: true}]\n"
    result = run(tmp_path, suite)
    assert result.verdict == "fail" and result.score == 0.0
    assert result.failed_required == ["turn-9: contains"]


def test_a_post_condition_with_on_fail_fail_is_required(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    suite = """\
tests:
  - id: p
    mode: conversation
    turns:
      - input: one
        post_condition: {must_contain_any: [ticket], on_fail: fail}
      - input: two
        assertions: [{type: contains, value: "Reply to"}]
"""
    result = run(tmp_path, suite)
    assert result.verdict == "fail" and result.failed_required == ["turn-1: post_condition"]


def test_stop_and_skip_remaining_leave_unsent_turns_out_alike(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    stop = """\
tests:
  - id: s
    mode: conversation
    on_turn_failure: stop
    turns:
      - input: one
        assertions: [{type: contains, value: "Reply to: one"}]
      - input: two
        assertions: [{type: contains, value: "never"}]
      - input: three
        assertions: [{type: contains, value: "Reply to"}]
"""
    skip = stop.replace("    on_turn_failure: stop\n", "").replace(
        '[{type: contains, value: "never"}]',
        '[{type: contains, value: "never"}]\n        post_condition: {must_contain_all: [never]}',
    )
    stopped, skipped = run(tmp_path, stop), run(tmp_path, skip)
    for result in (stopped, skipped):
        assert [(s.score, s.verdict) for s in result.scores] == [(1.0, "pass"), (0.0, "fail"), (None, "skip")]
        assert result.score == 0.5
    assert len(fake_openai.target_requests()) == 4  # two turns each


CAPTURE = """\
tests:
  - id: order
    mode: conversation
    turns:
      - input: Create an order
        capture: [{name: order_id, regex: "ORD-\\\\d+", ON_MISSING}]
      - input: "Status of {{ order_id }}?"
      - input: Thanks
"""


def test_a_missed_capture_stops_the_conversation_and_sends_no_placeholder(tmp_path: Path) -> None:
    with FakeOpenAIServer(reply=lambda body: "No order made.") as server:
        target = TargetConfig(name="t", provider="openai", model="m", base_url=server.base_url, api_key="k")
        failed = run(tmp_path, CAPTURE.replace(", ON_MISSING", ""), target=target)
        assert failed.verdict == "fail" and failed.failed_required == ["turn-1: capture:order_id"]
        assert failed.notes[0].startswith("capture order_id found nothing in turn 1")
        skipped = run(tmp_path, CAPTURE.replace("ON_MISSING", "on_missing: skip_remaining"), target=target)
        assert skipped.failed_required == [] and "capture order_id found nothing in turn 1" in skipped.notes[0]
        going_on = run(tmp_path, CAPTURE.replace("ON_MISSING", "on_missing: continue"), target=target)
        assert going_on.notes[0] == "turn 2 not sent: {{ order_id }} was never captured"
        assert [s.verdict for s in going_on.scores] == ["skip", "skip", "skip"]
        bodies = [json.dumps(r) for r in server.requests]
    assert len(bodies) == 3 and not any("{{" in b for b in bodies)  # turn 1 of each run only


AGENT = """\
import json, sys, urllib.request
prompt, out = sys.argv[1], sys.argv[2]
body = json.dumps({"model": "m", "messages": [{"role": "user", "content": prompt}]}).encode()
request = urllib.request.Request(sys.argv[3] + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
reply = json.load(urllib.request.urlopen(request))["choices"][0]["message"]["content"]
open(out, "w").write(json.dumps({"output": [{"role": "assistant", "content": reply}]}))
"""


def test_the_single_shot_fallback_never_sends_a_placeholder(tmp_path: Path) -> None:
    """A CLI agent that cannot resume gets every turn in one prompt: turns naming a captured
    variable cannot be filled, so nothing is sent and the test is an error saying why."""
    write(tmp_path / "agent.py", AGENT)
    with FakeOpenAIServer(reply=lambda body: "Created ORD-1.") as server:
        write(
            tmp_path / "targets.yaml",
            f'targets:\n  - name: once\n    provider: cli\n    command: "{sys.executable} agent.py {{PROMPT}} '
            f'{{OUTPUT_FILE}} {server.base_url}"\n    cwd: {tmp_path}\n',
        )
        suite = CAPTURE.replace(", ON_MISSING", "") + "    assertions: [{type: contains, value: ORD}]\n"
        result = run(tmp_path, suite, target="once")
        plain = run(tmp_path, suite.replace("Status of {{ order_id }}?", "Status?"), target="once")
        bodies = [json.dumps(r) for r in server.requests]
    assert result.verdict == "error" and "single_shot fallback" in (result.error or "")
    assert "{{ order_id }}" in (result.error or "")
    assert plain.verdict == "pass" and plain.fallback == "single_shot"
    assert len(bodies) == 1 and "{{" not in bodies[0] and "Turn 2: Status?" in bodies[0]


def test_verify_is_required_unless_the_suite_says_otherwise(tmp_path: Path) -> None:
    suite = """\
tests:
  - id: v
    mode: conversation
    workspace: {}
    verify: {command: "test -f done.txt"REQUIRED}
    turns:
      - input: one
        assertions: [{type: contains, value: "Reply to"}]
"""
    with FakeOpenAIServer() as server:
        target = TargetConfig(name="t", provider="openai", model="m", base_url=server.base_url, api_key="k")
        required = run(tmp_path, suite.replace("REQUIRED", ""), target=target)
        optional = run(tmp_path, suite.replace("REQUIRED", ", required: false"), target=target, threshold=0.5)
    assert required.verdict == "fail" and required.failed_required == ["verify: never verified"]
    assert optional.verdict == "pass" and optional.score == 0.5 and optional.failed_required == []


def test_verify_runs_after_the_last_turn_sent_when_a_stop_ended_the_conversation(tmp_path: Path) -> None:
    """A capture's `skip_remaining` or `on_turn_failure: stop` ended the conversation before its
    verify ran: the test was "never verified" and failed, with the work done."""
    suite = """\
tests:
  - id: v
    mode: conversation
    workspace: {}
    verify: {command: "true"}
    STOP
    turns:
      - input: one
        capture: {name: order_id, regex: "ORD-\\\\d+", on_missing: skip_remaining}
        assertions: [{type: contains, value: "Reply to"}]
      - input: "status of {{ order_id }}"
"""
    with FakeOpenAIServer() as server:
        target = TargetConfig(name="t", provider="openai", model="m", base_url=server.base_url, api_key="k")
        captured = run(tmp_path, suite.replace("STOP", ""), target=target)
        on_failure = suite.replace("STOP", "on_turn_failure: stop").replace("Reply to", "never")
        stopped = run(tmp_path, on_failure.replace("ORD-\\\\d+", "Reply"), target=target)
    for result in (captured, stopped):
        verify = next(e for e in result.scores if e.name == "verify")
        assert (verify.verdict, verify.note) == ("pass", "verified at turn 1"), result.model_dump_json(indent=1)
    assert captured.verdict == "pass" and "capture order_id found nothing" in " ".join(captured.notes)
    assert stopped.failed_required == [] and "stopped after turn 1 (on_turn_failure: stop)" in stopped.notes


def test_an_undecided_required_check_leaves_a_test_that_fails_anyway_failed(
    fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    """A required rubric the judge could not decide makes the test an error only when its verdict
    depends on it: with one turn of three failed, even that rubric's pass (a mean of 2/3) leaves
    the test below 0.8, so it fails; with the other turns passing, it is an error, never a pass."""
    fake_openai.reset(judge=lambda body: "I refuse to answer in JSON")

    def suite(second: str) -> str:
        return (
            "tests:\n  - id: multi\n    mode: conversation\n    criteria: Good answers\n    turns:\n"
            "      - input: hello\n        assertions: [{type: contains, value: 'Reply to'}]\n"
            f"      - input: again\n        assertions: [{{type: contains, value: '{second}'}}]\n"
            "      - input: third\n        assertions: [Is helpful]\n"
        )

    failed = run(tmp_path, suite("NOPE"), judge="openai:j")
    assert (failed.verdict, failed.execution_status, failed.score) == ("fail", "quality_failure", 0.5)
    assert "undecided required" in failed.trials[0].notes[-1]
    undecided = run(tmp_path, suite("Reply to"), judge="openai:j")
    assert (undecided.verdict, undecided.execution_status) == ("error", "execution_error")
    assert "could not decide" in (undecided.error or "")
