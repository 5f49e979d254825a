"""Simulated users end to end: a scripted fake simulator and target on the loopback server.

The fake server answers target calls with `reply` and structured calls with `judge`; the
simulated user's calls are the structured calls named `user_step`, the scenario judge's
`scenario`, the fidelity check's `simulator_fidelity`.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import convoeval
from convoeval import registry
from convoeval.judging import UserStep
from convoeval.results import ToolCall, Usage
from convoeval.run import TrialContext, plan_test, run_trial
from convoeval.spec import load_suite
from convoeval.targets import ChatReply, ChatRequest, TargetConfig, create_target
from convoeval.testing import FakeOpenAIServer, Fault, default_judge

from .conftest import read_jsonl, write

Step = tuple[str, bool, str]  # (message, stop, stop_reason)


def schema_name(body: dict[str, Any]) -> str:
    return body["response_format"]["json_schema"]["name"]


class FakeWorld:
    """Scripted simulator steps, scenario verdicts and fidelity verdict on one fake server."""

    def __init__(
        self,
        server: FakeOpenAIServer,
        steps: list[Step | str],
        *,
        success: list[bool] | None = None,
        failure: list[bool] | None = None,
        in_role: bool = True,
        reply: Callable[[dict[str, Any]], str] | None = None,
    ):
        self.server = server
        self.steps = list(steps)
        self.success = success or []
        self.failure = failure or []
        self.in_role = in_role
        self.step_prompts: list[str] = []
        server.reset(reply=reply or self.agent, judge=self.judge)

    @staticmethod
    def agent(body: dict[str, Any]) -> str:
        last = body["messages"][-1]["content"]
        if "refund" in last.lower() and "A-1234" not in last:
            return "I can help. What is your order number?"
        if "A-1234" in last:
            return "Thanks, the refund for order A-1234 is issued."
        return f"Agent heard: {last}"

    def judge(self, body: dict[str, Any]) -> str:
        name = schema_name(body)
        if name == "user_step":
            self.step_prompts.append(body["messages"][-1]["content"])
            step = self.steps.pop(0)
            if isinstance(step, str):
                return step  # raw (possibly broken) answer
            message, stop, reason = step
            return json.dumps({"message": message, "stop": stop, "stop_reason": reason})
        if name == "scenario":
            keys = list(body["response_format"]["json_schema"]["schema"]["properties"])
            values = {f"success_{i}": v for i, v in enumerate(self.success, 1)}
            values |= {f"failure_{i}": v for i, v in enumerate(self.failure, 1)}
            return json.dumps({k: {"reasoning": f"judged {k}", "satisfied": values[k]} for k in keys})
        if name == "simulator_fidelity":
            return json.dumps({"reasoning": "turn 2: the user wrote the agent's answer", "in_role": self.in_role})
        return default_judge(body)

    def simulated_requests(self) -> list[dict[str, Any]]:
        return [r for r in self.server.judge_requests() if schema_name(r) == "user_step"]


REFUND = """\
tests:
  - id: refund
    simulated_user:
      persona: Dana, a polite customer whose blender arrived broken
      objective: get a refund for the blender
      knowledge: {order_number: A-1234}
      max_turns: 4
{extra}
"""


def suite_file(tmp_path: Path, extra: str = "", text: str = REFUND) -> Path:
    return write(tmp_path / "refund.eval.yaml", text.replace("{extra}", extra))


def run(path: Path, **options: Any) -> convoeval.RunReport:
    options.setdefault("target", "openai:agent-model")
    options.setdefault("judge", "openai:judge-model")
    options.setdefault("store", False)
    options.setdefault("cache", False)
    return convoeval.run(path, **options)


HAPPY: list[Step | str] = [
    ("Hi, my blender arrived broken and I want a refund.", False, "none"),
    ("It is A-1234.", False, "none"),
    ("Great, thank you!", True, "objective_met"),
]


def test_objective_met_transcript_marks_simulated_turns_and_costs_apart(fake_openai, tmp_path: Path) -> None:
    world = FakeWorld(fake_openai, list(HAPPY), success=[True], failure=[False])
    path = suite_file(tmp_path, "    success: [The agent issues the refund]\n    failure: [The agent is rude]")
    result = run(path).results[0]
    assert (result.verdict, result.execution_status) == ("pass", "ok")
    assert result.stop_reason == "objective_met"
    assert result.outcome == "passed"
    sources = [(m.role, m.source) for m in result.output]
    assert sources == [
        ("user", "simulator"),
        ("assistant", "target"),
        ("user", "simulator"),
        ("assistant", "target"),
        ("user", "simulator"),
    ]
    assert result.output[-1].content == "Great, thank you!"  # the goodbye is recorded, not sent
    assert len(fake_openai.target_requests()) == 2
    # The second step saw the agent's actual question; the knowledge is in the prompt.
    assert "What is your order number?" in world.step_prompts[1]
    assert "A-1234" in world.step_prompts[0]
    assert result.simulator_token_usage.total_tokens > 0
    assert result.simulator_token_usage != result.judge_token_usage
    assert [e.name for e in result.scores] == ["turn-1", "turn-2", "scenario"]
    scenario = result.scores[-1]
    assert scenario.graders[0].details["outcome"] == "passed"
    assert [a.text for a in scenario.assertions] == [
        "success: The agent issues the refund",
        "failure: The agent is rude",
    ]


@pytest.mark.parametrize(
    ("success", "failure", "outcome", "verdict", "status", "score"),
    [
        ([True], [False], "passed", "pass", "ok", 1.0),
        ([False], [True], "failed", "fail", "quality_failure", 0.0),
        ([False], [False], "undecided", "error", "undecided", None),
        ([True], [True], "conflict", "fail", "quality_failure", 0.0),
    ],
)
def test_scenario_outcomes(fake_openai, tmp_path: Path, success, failure, outcome, verdict, status, score) -> None:
    FakeWorld(fake_openai, list(HAPPY), success=success, failure=failure)
    path = suite_file(tmp_path, "    success: [The agent issues the refund]\n    failure: [The agent is rude]")
    report = run(path)
    result = report.results[0]
    assert (result.outcome, result.verdict, result.execution_status, result.score) == (outcome, verdict, status, score)
    assert report.exit_code == (0 if outcome == "passed" else 1)


def test_undecided_is_never_a_pass_even_with_passing_turns(fake_openai, tmp_path: Path) -> None:
    FakeWorld(fake_openai, list(HAPPY), success=[False], failure=[False])
    path = suite_file(
        tmp_path, "    success: [refund issued]\n    turn_assertions:\n      - {type: contains, value: order}"
    )
    result = run(path).results[0]
    assert [e.verdict for e in result.scores[:2]] == ["pass", "pass"]
    assert result.execution_status == "undecided" and result.verdict == "error"


def test_objective_impossible(fake_openai, tmp_path: Path) -> None:
    FakeWorld(
        fake_openai,
        [("I want a refund.", False, "none"), ("", True, "objective_impossible")],
        reply=lambda body: "We never give refunds.",
    )
    result = run(suite_file(tmp_path)).results[0]
    assert result.stop_reason == "objective_impossible"
    assert [m.source for m in result.output] == ["simulator", "target"]


def test_max_turns_stops_a_simulator_that_never_stops(fake_openai, tmp_path: Path) -> None:
    world = FakeWorld(fake_openai, [(f"still waiting {i}", False, "none") for i in range(10)])
    result = run(suite_file(tmp_path)).results[0]
    assert result.stop_reason == "max_turns"
    assert len(fake_openai.target_requests()) == 4
    assert len(world.simulated_requests()) == 4
    assert [e.name for e in result.scores] == ["turn-1", "turn-2", "turn-3", "turn-4"]


def test_opening_is_sent_verbatim_and_counts_as_a_turn(fake_openai, tmp_path: Path) -> None:
    world = FakeWorld(fake_openai, [("more", False, "none")] * 3)
    text = REFUND.replace("      max_turns: 4", "      max_turns: 2\n      opening: My blender is broken.")
    result = run(suite_file(tmp_path, text=text)).results[0]
    assert fake_openai.target_requests()[0]["messages"][-1]["content"] == "My blender is broken."
    assert len(world.simulated_requests()) == 1
    assert result.stop_reason == "max_turns"


def test_target_error_stops_the_conversation(fake_openai, tmp_path: Path) -> None:
    FakeWorld(fake_openai, [("I want a refund.", False, "none"), ("A-1234", False, "none")])
    fake_openai.faults.append(Fault(status=400, purpose="target", match="A-1234"))
    result = run(suite_file(tmp_path)).results[0]
    assert result.stop_reason == "target_error"
    assert result.execution_status == "execution_error"


@pytest.mark.parametrize(
    ("steps", "reason"),
    [
        ([("Assistant: your refund is approved.", False, "none")], "answered for the agent"),
        ([("   ", False, "none")], "empty turn"),
        ([("Refund order A-1234 please", False, "none")], "revealed 'order_number' before the agent asked"),
        (["not json", "still not json"], "unparseable"),
        ([("bye", True, "objective_met")], "stopped before saying anything"),
    ],
)
def test_simulator_failures_are_simulator_errors_not_failed_tests(fake_openai, tmp_path: Path, steps, reason) -> None:
    FakeWorld(fake_openai, steps)
    path = suite_file(tmp_path, "    success: [The agent issues the refund]")
    report = run(path)
    result = report.results[0]
    assert (result.verdict, result.execution_status, result.stop_reason) == (
        "error",
        "simulator_error",
        "simulator_error",
    )
    assert reason in (result.error or "")
    assert result.outcome is None  # not judged
    assert report.exit_code == 3  # every test had an execution problem; none failed


def test_knowledge_may_be_given_once_asked(fake_openai, tmp_path: Path) -> None:
    FakeWorld(
        fake_openai,
        [("I want a refund.", False, "none"), ("Order A-1234.", False, "none"), ("", True, "objective_met")],
    )
    result = run(suite_file(tmp_path)).results[0]
    assert result.execution_status == "ok" and result.stop_reason == "objective_met"


def test_a_fact_the_objective_states_is_no_secret(fake_openai, tmp_path: Path) -> None:
    """A `knowledge` value the objective itself names may be said at once (it was a role break:
    "revealed 'order_number' before the agent asked for it")."""
    FakeWorld(fake_openai, [("A refund for order A-1234, please.", False, "none"), ("", True, "objective_met")])
    text = REFUND.replace("get a refund for the blender", "get a refund for order A-1234")
    result = run(suite_file(tmp_path, text=text)).results[0]
    assert (result.execution_status, result.stop_reason) == ("ok", "objective_met"), result.error


def test_fidelity_check_failing_makes_a_simulator_error(fake_openai, tmp_path: Path) -> None:
    FakeWorld(fake_openai, list(HAPPY), in_role=False)
    path = suite_file(tmp_path, "    assertions:\n      - type: simulator-fidelity")
    result = run(path).results[0]
    assert result.execution_status == "simulator_error"
    assert "simulator-fidelity" in result.error and "turn 2" in result.error
    entry = next(e for e in result.scores if e.name == "simulator-fidelity")
    assert entry.type == "simulator" and entry.verdict == "fail"


def test_fidelity_check_passing_does_not_move_the_score(fake_openai, tmp_path: Path) -> None:
    FakeWorld(fake_openai, list(HAPPY), in_role=True)
    text = REFUND.replace("      max_turns: 4", "      max_turns: 4\n      check_fidelity: true")
    path = suite_file(tmp_path, "    turn_assertions:\n      - {type: contains, value: never-said}", text=text)
    result = run(path).results[0]
    assert result.scores[-1].type == "simulator" and result.scores[-1].verdict == "pass"
    assert result.score == 0.0 and result.execution_status == "quality_failure"


def test_a_fidelity_check_that_could_not_decide_leaves_no_pass(fake_openai, tmp_path: Path) -> None:
    """Had the fidelity judge found a role break, the trial would be a simulator_error: one that
    could not answer decides nothing (the old code passed the test)."""
    world = FakeWorld(fake_openai, list(HAPPY), in_role=True)
    fake_openai.judge = lambda body: "I cannot say." if schema_name(body) == "simulator_fidelity" else world.judge(body)
    text = REFUND.replace("      max_turns: 4", "      max_turns: 4\n      check_fidelity: true")
    result = run(suite_file(tmp_path, text=text)).results[0]
    assert (result.verdict, result.execution_status, result.score) == ("error", "undecided", None)
    assert result.error.startswith("simulator-fidelity could not decide")


def test_scripted_opening_turns_then_simulator_and_turn_assertions_on_every_turn(fake_openai, tmp_path: Path) -> None:
    world = FakeWorld(fake_openai, [("It is A-1234.", False, "none"), ("", True, "objective_met")])
    text = """\
turn_assertions:
  - {type: not-contains, value: forbidden}
tests:
  - id: refund
    mode: conversation
    turns:
      - input: Hello, I need a refund for my blender.
        assertions: [{type: contains, value: order number}]
    simulated_user:
      objective: get a refund
      knowledge: {order_number: A-1234}
      max_turns: 3
    turn_assertions:
      - {type: contains, value: "A"}
"""
    result = run(suite_file(tmp_path, text=text)).results[0]
    assert [m.source for m in result.output] == ["user", "target", "simulator", "target"]
    assert len(world.simulated_requests()) == 2
    for entry in result.scores:
        types = [g.type for g in entry.graders]
        assert "not-contains" in types and "contains" in types
    assert [g.type for g in result.scores[0].graders] == ["contains", "contains", "not-contains"]
    assert result.stop_reason == "objective_met" and result.verdict == "pass"


def test_captured_values_reach_the_simulated_user_and_the_scenario_judge(fake_openai, tmp_path: Path) -> None:
    """A value the scripted turns capture fills `{{ name }}` in the simulated user's persona,
    objective, knowledge and stop conditions, and in the scenario's criteria (all were sent
    as the literal placeholder)."""
    world = FakeWorld(
        fake_openai,
        [("I want my money back.", False, "none"), ("It is ORD-7.", False, "none"), ("", True, "objective_met")],
        success=[True],
        failure=[False],
        reply=lambda body: "Created ORD-7." if body["messages"][-1]["content"] == "Buy a blender" else "Order number?",
    )
    text = """\
tests:
  - id: refund
    turns:
      - input: Buy a blender
        capture: {name: order_id, regex: "ORD-\\\\d+"}
    simulated_user:
      persona: "the owner of {{ order_id }}"
      objective: "a refund for {{ order_id }}"
      knowledge: {order_number: "{{ order_id }}"}
      stop: ["the agent refunds {{ order_id }}"]
      max_turns: 3
    success: ["{{ order_id }} is refunded"]
    failure: ["an order other than {{ order_id }} is refunded"]
"""
    result = run(suite_file(tmp_path, text=text)).results[0]
    assert (result.verdict, result.stop_reason) == ("pass", "objective_met")
    prompts = [r["messages"][-1]["content"] for r in fake_openai.judge_requests()]
    assert len(world.step_prompts) == 3 and all(p.count("ORD-7") >= 4 for p in world.step_prompts)
    assert not any("{{" in p for p in prompts) and "ORD-7 is refunded" in prompts[-1]


def test_budget_exhausted_stops_the_simulator(fake_openai, tmp_path: Path) -> None:
    world = FakeWorld(fake_openai, [(f"more {i}", False, "none") for i in range(5)])
    suite = load_suite(suite_file(tmp_path))
    plan = plan_test(suite, suite.tests[0])
    base = {"provider": "openai", "base_url": fake_openai.base_url}
    target = create_target(TargetConfig(name="agent", model="m", **base))
    model = create_target(TargetConfig(name="sim", model="s", **base))
    asked = []

    def may_continue() -> bool:
        asked.append(1)
        return len(asked) <= 2

    result = asyncio.run(
        run_trial(plan, TrialContext(target=target, judge=None, simulator=model, may_continue=may_continue))
    )
    assert result.stop_reason == "budget_exhausted"
    assert result.execution_status == "budget_exhausted"
    assert len(world.simulated_requests()) == 2


@pytest.mark.parametrize("trials", [1, 2])
def test_a_conversation_the_runs_budget_cut_short_did_not_finish_and_resume_plays_it_whole(
    cli, fake_openai, tmp_path: Path, trials: int
) -> None:
    """--max-cost reached mid-conversation: the test is `skip` / `budget_exhausted`, not
    started as far as --resume is concerned (the old code reported a pass from the turns it
    had, and a resumed run kept it, or reused the cut trial)."""
    FakeWorld(fake_openai, list(HAPPY) * 3, success=[True], failure=[False])
    write(
        tmp_path / "targets.yaml",
        "targets:\n  - {name: pricey, provider: openai, model: m, price_input_per_mtok: 1000000}\n",
    )
    extra = f"    execution: {{trials: {trials}}}\n    success: [The refund is issued]"
    args = ("--target", "pricey", "--judge", "openai:judge-model", "--concurrency", "1", "-o", tmp_path / "r.jsonl")
    code, _, _ = cli("run", suite_file(tmp_path, extra), *args, "--max-cost", "0.5")
    result = read_jsonl(tmp_path / "r.jsonl")[0]
    assert (result["verdict"], result["execution_status"], code) == ("skip", "budget_exhausted", 1)
    assert result["trials"][0]["stop_reason"] == "budget_exhausted"
    assert not [r for r in fake_openai.judge_requests() if schema_name(r) == "scenario"]  # nothing spent on it

    code, _, _ = cli("run", "--resume", "last", "--max-cost", "1000000", "-o", tmp_path / "r.jsonl")
    result = read_jsonl(tmp_path / "r.jsonl")[0]
    assert (result["verdict"], code) == ("pass", 0)
    assert [t["stop_reason"] for t in result["trials"]] == ["objective_met"] * trials


@pytest.mark.parametrize(
    ("extra", "note"),
    [
        ("    workspace: {}\n    verify: {command: 'true'}", "simulated user: 1 turn(s), stopped: verified at turn 1"),
        (
            "    on_turn_failure: stop\n    turn_assertions: [{type: contains, value: never-said}]",
            "simulated user: 1 turn(s), stopped after turn 1 (on_turn_failure: stop)",
        ),
    ],
    ids=["verify", "on_turn_failure"],
)
def test_the_note_says_what_ended_a_simulated_conversation(fake_openai, tmp_path: Path, extra, note) -> None:
    """A conversation a verify ended said "stopped: on_turn_failure"."""
    FakeWorld(fake_openai, [(f"more {i}", False, "none") for i in range(4)])
    result = run(suite_file(tmp_path, extra)).results[0]
    assert note in result.notes


def test_the_simulated_user_is_shown_a_hint_as_the_tests_not_its_own(fake_openai, tmp_path: Path) -> None:
    """A hint went into the simulated user's view as `user: ...`, a line it had written."""
    world = FakeWorld(fake_openai, [(f"more {i}", False, "none") for i in range(4)])
    run(suite_file(tmp_path, "    workspace: {}\n    verify: {command: 'false'}\n    hints: [Check the order.]"))
    assert "hint (the test's, to the agent; not yours): Check the order." in world.step_prompts[2]
    assert "user: Check the order." not in world.step_prompts[2]


def test_the_tests_own_budget_is_the_stop_reason(fake_openai, tmp_path: Path) -> None:
    """A conversation the test's `budget:` ended says so (it said nothing, and its note blamed
    `on_turn_failure`); the verdict is the budget's (`fail`), not the run's `--max-cost` skip."""
    world = FakeWorld(fake_openai, [(f"more {i}", False, "none") for i in range(5)], success=[True])
    extra = "    budget: {conversation: {tokens: 1}}\n    success: [The refund is issued]"
    result = run(suite_file(tmp_path, extra)).results[0]
    assert len(world.simulated_requests()) == 1 and result.budget_hit == "tokens=1 per conversation at turn 1"
    assert (result.stop_reason, result.trials[0].stop_reason) == ("budget_exhausted", "budget_exhausted")
    assert (result.verdict, result.execution_status) == ("fail", "budget_exhausted")
    assert "simulated user: 1 turn(s), stopped: budget_exhausted" in result.notes


def test_simulator_model_of_its_own_and_cached_rerun_makes_no_calls(fake_openai, tmp_path: Path) -> None:
    FakeWorld(fake_openai, list(HAPPY) * 2)
    text = REFUND.replace("      max_turns: 4", "      max_turns: 4\n      model: openai:sim-model\n      seed: 7")
    path = suite_file(tmp_path, text=text)
    first = run(path, cache=True, store=True, output=tmp_path / "r.jsonl")
    calls = len(fake_openai.requests)
    steps = [r for r in fake_openai.requests if r.get("model") == "sim-model"]
    assert len(steps) == 3 and all(r["seed"] == 7 for r in steps)
    assert first.summary["by_model"]["openai:sim-model (simulator)"]["calls"] == 3
    second = run(path, cache=True, store=True)
    assert len(fake_openai.requests) == calls  # every call answered from the cache
    assert second.results[0].output == first.results[0].output
    assert second.results[0].stop_reason == "objective_met"
    row = read_jsonl(tmp_path / "r.jsonl")[0]
    assert row["stop_reason"] == "objective_met" and row["simulator_cost_usd"] == 0.0
    assert row["output"][0]["source"] == "simulator"


def test_each_trial_sends_a_seed_of_its_own(fake_openai, tmp_path: Path) -> None:
    """Trials are independent: trial k sends `seed + k`, as tau2-bench draws a seed per trial
    (every trial sent the same seed, so a seeded simulator replayed one conversation)."""
    FakeWorld(fake_openai, [("more", False, "none")] * 6)
    text = REFUND.replace("      max_turns: 4", "      max_turns: 2\n      seed: 7")
    run(suite_file(tmp_path, "    execution: {trials: 3}", text=text), concurrency=1)
    seeds = [r["seed"] for r in fake_openai.judge_requests() if schema_name(r) == "user_step"]
    assert seeds == [7, 7, 8, 8, 9, 9]


def test_retry_errors_runs_a_simulator_error_again(cli, fake_openai, tmp_path: Path) -> None:
    """A simulated user whose model failed is an error of the run, as a target's is: `--resume
    --retry-errors` runs it again (it kept the stored simulator_error)."""
    FakeWorld(fake_openai, list(HAPPY))
    fake_openai.faults.append(Fault(status=400, purpose="judge", match="Who you are"))
    args = ("--target", "openai:agent-model", "--judge", "openai:judge-model", "-o", tmp_path / "r.jsonl", "-q")
    code, _, _ = cli("run", suite_file(tmp_path), *args)
    assert code == 3 and read_jsonl(tmp_path / "r.jsonl")[0]["execution_status"] == "simulator_error"
    code, _, _ = cli("run", "--resume", "last", "--retry-errors", "-o", tmp_path / "r.jsonl", "-q")
    result = read_jsonl(tmp_path / "r.jsonl")[0]
    assert (code, result["execution_status"], result["stop_reason"]) == (0, "ok", "objective_met")


def test_max_turns_is_required_and_aliases_are_accepted(cli, tmp_path: Path) -> None:
    bad = write(
        tmp_path / "bad.eval.yaml",
        """\
tests:
  - id: a
    chatter_agent:
      objective: get a refund
  - id: b
    user_simulator: {objective: x, max_turns: 2}
    chatter_agent: {objective: x, max_turns: 2}
""",
    )
    code, out, err = cli("validate", bad)
    assert code == 2
    lines = (out + err).strip().splitlines()
    assert any(line.startswith(f"{bad}:3: tests[0].chatter_agent.max_turns: required") for line in lines)
    assert any(":7: tests[1].chatter_agent: give the simulated user once" in line for line in lines)
    good = write(tmp_path / "good.eval.yaml", "tests:\n  - id: a\n    user_simulator: {objective: x, max_turns: 2}\n")
    assert cli("validate", good)[0] == 0


def test_terminal_table_shows_generated_turns_stop_reason_and_outcome(cli, fake_openai, tmp_path: Path) -> None:
    FakeWorld(fake_openai, list(HAPPY), success=[False], failure=[False])
    path = suite_file(tmp_path, "    success: [The agent issues the refund]")
    code, out, err = cli("run", path, "--target", "openai:agent", "--judge", "openai:judge")
    assert code == 1
    assert "user (simulated): Hi, my blender arrived broken" in out
    assert "stop: objective_met" in out and "outcome: undecided" in out
    assert "(undecided)" in out


def test_refund_example_runs_against_a_chat_target(fake_openai, tmp_path: Path) -> None:
    example = Path(__file__).resolve().parent.parent / "examples" / "simulated-user" / "refund.eval.yaml"
    world = FakeWorld(
        fake_openai,
        [("It is A-1234.", False, "none"), ("Thanks!", True, "objective_met")],
        success=[True],
        failure=[False, False],
    )
    result = run(example).results[0]
    assert (result.verdict, result.outcome, result.stop_reason) == ("pass", "passed", "objective_met")
    assert fake_openai.target_requests()[0]["messages"][-1]["content"].startswith("Hi, the blender")
    assert "order_number: A-1234" in world.step_prompts[0]
    assert any(e.type == "simulator" and e.verdict == "pass" for e in result.scores)


class RefundAgent:
    """An agent target that keeps its own session: later turns get only the new message."""

    name = "refund-agent"
    session = "resume"

    def __init__(self) -> None:
        self.sessions: dict[str, list[str]] = {}
        self.received: list[list[dict[str, Any]]] = []

    async def chat(self, request: ChatRequest) -> ChatReply:
        self.received.append(request.messages)
        sid = request.session_id or f"s{len(self.sessions) + 1}"
        said = self.sessions.setdefault(sid, [])
        said.extend(m["content"] for m in request.messages if m["role"] == "user")
        if "A-1234" in said[-1]:
            call = ToolCall(name="refund", arguments={"order": "A-1234"}, output={"status": "refunded"})
            return ChatReply(text="Done: order A-1234 is refunded.", session_id=sid, tool_calls=[call])
        return ChatReply(text="Sorry to hear that. What is your order number?", session_id=sid)

    async def aclose(self) -> None:
        pass


def test_scenario_against_an_agent_target_with_a_session(fake_openai, tmp_path: Path) -> None:
    world = FakeWorld(
        fake_openai,
        [
            ("My blender broke, refund please.", False, "none"),
            ("It is A-1234.", False, "none"),
            ("Thanks!", True, "objective_met"),
        ],
        success=[True],
        failure=[False],
    )
    agent = RefundAgent()
    path = suite_file(tmp_path, "    success: [The refund is issued]\n    failure: [The agent is rude]")
    result = run(path, target=agent).results[0]
    assert (result.verdict, result.outcome, result.stop_reason) == ("pass", "passed", "objective_met")
    assert [m["content"] for m in agent.received[1]] == ["It is A-1234."]  # resumed: only the new message
    assert [m.source for m in result.output] == ["simulator", "target", "simulator", "tool", "target", "simulator"]
    assert '"refunded"' not in world.step_prompts[-1]  # the user never sees the agent's tools


class ReplaySimulator:
    """A plugin simulator: says its lines in order, then stops."""

    def __init__(self, config: Any, model: Any, trial: int) -> None:
        self.lines = ["I want a refund.", "A-1234"]
        self.usage, self.cost_usd = Usage(), 0.0

    async def step(self, transcript: list) -> UserStep:
        if not self.lines:
            return UserStep(message="", stop=True, stop_reason="objective_met")
        return UserStep(message=self.lines.pop(0), stop=False, stop_reason="none")


def test_a_registered_simulator_plugs_in_by_type(fake_openai, cli, tmp_path: Path) -> None:
    FakeWorld(fake_openai, [])
    text = REFUND.replace("      max_turns: 4", "      max_turns: 4\n      type: replay")
    path = suite_file(tmp_path, text=text)
    code, out, err = cli("validate", path)
    assert code == 2 and "tests[0].simulated_user.type: unknown simulator 'replay' (known: llm" in out + err
    registry.register("simulator", "replay", ReplaySimulator)
    try:
        result = run(path).results[0]
    finally:
        registry.unregister("simulator", "replay")
    assert result.stop_reason == "objective_met"
    assert [m.content for m in result.output if m.source == "simulator"] == ["I want a refund.", "A-1234"]
    assert fake_openai.judge_requests() == []


def test_the_run_list_counts_what_the_simulated_user_spent(fake_openai, tmp_path: Path) -> None:
    from convoeval.report import list_runs

    FakeWorld(fake_openai, list(HAPPY), success=[True])
    path = suite_file(tmp_path, "    success: [The agent issues the refund]")
    store = tmp_path / "runs.sqlite"
    result = run(path, target="openai:gpt-4o-mini", judge="openai:gpt-4o", store=store).results[0]
    assert result.simulator_cost_usd > 0
    spent = result.cost_usd + result.judge_cost_usd + result.simulator_cost_usd
    assert list_runs(store)[0].cost_usd == pytest.approx(spent)
