"""Captures, post-conditions and tool assertions, through `convoeval.run` with an in-test agent
whose replies and tool calls are scripted per turn."""

from __future__ import annotations

from pathlib import Path

import convoeval
from convoeval.results import EvaluationResult, ToolCall
from convoeval.spec import suite_json_schema, validate_paths
from convoeval.targets import ChatReply, ChatRequest

from .conftest import write


class ScriptAgent:
    """Turn n answers with script[n-1]: (text, [(tool, args, output, duration_ms)])."""

    name = "script-agent"

    def __init__(self, script: list[tuple[str, list[tuple[str, dict, object, float]]]]):
        self.script = script
        self.prompts: list[str] = []

    async def chat(self, request: ChatRequest) -> ChatReply:
        users = [m for m in request.messages if m["role"] == "user"]
        self.prompts.append(users[-1]["content"])
        text, calls = self.script[min(len(users), len(self.script)) - 1]
        return ChatReply(
            text=text, tool_calls=[ToolCall(name=n, arguments=a, output=o, duration_ms=d) for n, a, o, d in calls]
        )

    async def aclose(self) -> None:
        pass


def run(tmp_path: Path, suite: str, agent: ScriptAgent) -> EvaluationResult:
    path = write(tmp_path / "s.eval.yaml", suite)
    assert validate_paths([path]) == []
    return convoeval.run(path, target=agent, judge=agent, cache=False).results[0]


CAPTURE = """\
tests:
  - id: order
    mode: conversation
    turns:
      - input: Create an order
        capture:
          - {name: order_id, regex: "order (ORD-\\\\d+)"}
          - {name: total, from: "tool:create_order", jsonpath: "$.total"}
        assertions:
          - {type: tool-called, tool: create_order, args: {item: book}}
      - input: What is the status of {{ order_id }}?
        assertions:
          - {type: contains, value: "{{ order_id }} is shipped"}
          - {type: tool-called, tool: get_status, args: {id: "{{ order_id }}"}}
      - input: And the total?
        assertions:
          - {type: contains, value: "{{ total }}"}
    assertions:
      - {type: tool_called_in_turn, turn: 2, tool: get_status}
      - {type: tool_not_called_in_turn, turn: 3, tool: create_order}
      - {type: turn_response_contains, turn: 1, value: "ORD-"}
      - {type: turn_response_not_contains, turn: 2, value: "error"}
"""


def test_captured_values_flow_into_later_turns_and_assertions(tmp_path: Path) -> None:
    agent = ScriptAgent(
        [
            ("Created order ORD-42.", [("create_order", {"item": "book", "qty": 1}, {"total": 12.5}, 4.0)]),
            ("ORD-42 is shipped.", [("get_status", {"id": "ORD-42"}, "shipped", 2.0)]),
            ("The total was 12.5 EUR.", []),
        ]
    )
    result = run(tmp_path, CAPTURE, agent)
    assert agent.prompts[1] == "What is the status of ORD-42?"
    assert result.verdict == "pass", [
        (s.name, s.verdict, [(a.text, a.evidence) for a in s.assertions]) for s in result.scores
    ]
    first = result.scores[0]
    assert first.captures == {"order_id": "ORD-42", "total": "12.5"}
    assert result.trials[0].variables == {"order_id": "ORD-42", "total": "12.5"}
    user_two = [m for m in result.output if m.role == "user"][1]
    assert user_two.content == "What is the status of ORD-42?"


def test_a_capture_that_finds_nothing_fails_the_test_and_stops_the_conversation(tmp_path: Path) -> None:
    agent = ScriptAgent([("No order made.", []), ("ok", []), ("ok", [])])
    result = run(tmp_path, CAPTURE, agent)
    first = result.scores[0]
    assert first.score == 0.0 and first.verdict == "fail"
    capture = next(g for g in first.graders if g.name == "capture:order_id")
    assert "did not match" in capture.assertions[0].evidence
    # on_missing: fail (the default) stops: `{{ order_id }}` is never sent unfilled (issue 24).
    assert agent.prompts == ["Create an order"]
    assert result.verdict == "fail" and result.failed_required == ["turn-1: capture:order_id", "turn-1: capture:total"]
    assert "capture order_id found nothing in turn 1" in result.notes[0]
    assert [s.verdict for s in result.scores if s.type == "turn"][1:] == ["skip", "skip"]


POST = """\
tests:
  - id: gated
    mode: conversation
    turns:
      - input: Open the ticket
        post_condition:
          must_contain_any: [opened, {regex: "ticket #\\\\d+"}]
          must_not_contain: [error]
      - input: Close it
      - input: Confirm
    assertions:
      - {type: contains, value: "ticket"}
"""


def test_a_failed_skip_remaining_post_condition_sends_no_further_turns(tmp_path: Path) -> None:
    agent = ScriptAgent([("error: cannot reach the tracker", []), ("closed", []), ("ok", [])])
    result = run(tmp_path, POST, agent)
    assert len(agent.prompts) == 1
    turns = [s for s in result.scores if s.type == "turn"]
    post = next(g for g in turns[0].graders if g.name == "post_condition")
    assert post.verdict == "fail" and "none found" in post.assertions[0].evidence
    assert "found 'error'" in post.assertions[1].evidence
    assert [t.verdict for t in turns[1:]] == ["skip", "skip"] and turns[1].score is None
    assert "post_condition failed" in (turns[1].note or "") and "post_condition failed" in result.notes[0]


def test_a_passing_post_condition_lets_the_conversation_go_on(tmp_path: Path) -> None:
    agent = ScriptAgent([("ticket #7 opened", []), ("closed the ticket", []), ("ok", [])])
    result = run(tmp_path, POST, agent)
    assert len(agent.prompts) == 3 and result.verdict == "pass"


def test_post_condition_on_fail_fail_zeroes_the_turn_and_goes_on(tmp_path: Path) -> None:
    suite = POST.replace("must_not_contain: [error]", "must_not_contain: [error]\n          on_fail: fail")
    agent = ScriptAgent([("error", []), ("ticket closed", []), ("ok", [])])
    result = run(tmp_path, suite, agent)
    assert len(agent.prompts) == 3 and result.scores[0].score == 0.0


TRAJECTORY = """\
tests:
  - id: traj
    input: Fix the bug
    assertions:
      - type: tool-trajectory
        name: {name}
        mode: {mode}
        expected:
          - {{tool: Read, args: {{path: a.py}}}}
          - {{tool: Edit, max_duration_ms: 50}}
          - {{tool: Bash}}
"""

CALLS = [
    ("Read", {"path": "a.py"}, "x", 5.0),
    ("Grep", {"q": "bug"}, "", 1.0),
    ("Edit", {"path": "a.py"}, "ok", 80.0),
    ("Bash", {"cmd": "pytest"}, "1 passed", 900.0),
]


def trajectory(tmp_path: Path, mode: str, calls: list) -> EvaluationResult:
    agent = ScriptAgent([("done", calls)])
    return run(tmp_path, TRAJECTORY.format(name=mode, mode=mode), agent)


def test_tool_trajectory_modes(tmp_path: Path) -> None:
    in_order = trajectory(tmp_path, "in_order", CALLS).scores[0].graders[0]
    # 3 steps found; the Edit latency check fails (80 ms > 50 ms): 3 of 4 checks.
    assert in_order.score == 0.75 and in_order.verdict == "fail"
    assert "Edit within 50 ms" in in_order.details["first_mismatch"]
    exact = trajectory(tmp_path, "exact", CALLS).scores[0].graders[0]
    assert exact.verdict == "fail" and exact.details["first_mismatch"].startswith("position 2: Edit")
    superset = trajectory(tmp_path, "superset", CALLS[::-1]).scores[0].graders[0]
    assert [a.passed for a in superset.assertions] == [True, True, False, True]  # Edit too slow
    subset = trajectory(tmp_path, "subset", CALLS).scores[0].graders[0]
    assert subset.verdict == "fail" and "call 2: Grep" in subset.details["first_mismatch"]
    fine = [("Read", {"path": "a.py"}, "", 1.0), ("Edit", {}, "", 10.0), ("Bash", {}, "", 1.0)]
    for mode in ("in_order", "exact", "superset", "subset", "any_order"):
        assert trajectory(tmp_path, mode, fine).scores[0].graders[0].verdict == "pass", mode
    wrong_args = [("Read", {"path": "b.py"}, "", 1.0), ("Edit", {}, "", 1.0), ("Bash", {}, "", 1.0)]
    assert "step 1: Read" in trajectory(tmp_path, "in_order", wrong_args).scores[0].graders[0].details["first_mismatch"]


def test_tool_called_counts_and_argument_matching(tmp_path: Path) -> None:
    suite = """\
tests:
  - id: t
    input: go
    assertions:
      - {type: tool-called, name: twice, tool: search, min: 2, max: 2}
      - {type: tool-called, name: regex, tool: search, args: {q: "^par"}, args_match: regex}
      - {type: tool-called, name: exact-miss, tool: search, args: {q: paris}, args_match: exact}
      - {type: tool-not-called, name: no-delete, tool: delete}
      - {type: tool-not-called, name: searched, tool: search}
"""
    agent = ScriptAgent([("ok", [("search", {"q": "paris", "n": 3}, "", 1.0), ("search", {"q": "rome"}, "", 1.0)])])
    graders = {g.name: g for g in run(tmp_path, suite, agent).scores[0].graders}
    assert graders["twice"].verdict == "pass" and graders["regex"].verdict == "pass"
    assert graders["exact-miss"].verdict == "fail" and "0 matching of 2" in graders["exact-miss"].assertions[0].evidence
    assert graders["no-delete"].verdict == "pass" and graders["searched"].verdict == "fail"


def test_controls_and_tool_assertions_are_validated_with_file_and_line(tmp_path: Path) -> None:
    bad = write(
        tmp_path / "bad.eval.yaml",
        """\
tests:
  - id: t
    mode: conversation
    turns:
      - input: a
        capture: {name: x, regex: "("}
      - input: b
        post_condition: {on_fail: explode}
        assertions:
          - {type: llm-grader, prompt: "Is {{ nope }} right? {{ output }}"}
    assertions:
      - {type: tool_called_in_turn, tool: Read}
      - {type: tool-trajectory, mode: sideways, expected: [{tool: A}]}
""",
    )
    problems = {(p.line, p.field): p.message for p in validate_paths([bad])}
    assert any(
        line == 6 and "capture" in field and "regular expression" in msg for (line, field), msg in problems.items()
    )
    assert any(line == 8 and "on_fail" in field for (line, field) in problems)
    assert any(line == 10 and "nope" in msg for (line, _), msg in problems.items())
    assert any(line == 12 and "needs `turn:`" in msg for (line, _), msg in problems.items())
    assert any(line == 13 and "mode" in field for (line, field) in problems)


def test_captured_names_are_known_to_later_grader_prompts(tmp_path: Path) -> None:
    good = write(
        tmp_path / "good.eval.yaml",
        """\
tests:
  - id: t
    mode: conversation
    turns:
      - input: a
        capture: {name: code, regex: "(\\\\d+)"}
      - input: b
        assertions:
          - {type: llm-grader, prompt: "Does {{ output }} mention {{ code }}?"}
""",
    )
    assert validate_paths([good]) == []
    schema = str(suite_json_schema())
    assert "post_condition" in schema and "capture" in schema and "tool-trajectory" in schema
