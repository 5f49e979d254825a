"""Live tau2-bench telecom runs: the simulated user acts on its phone with its own tools, on the
same copy of the backend the agent's tools act on, which starts from the task's initial actions.

The task is tau2's (tests/data/tau2-bench/results/telecom-gpt-4.1.json: no service, airplane mode
on and the line suspended for an overdue bill), imported with `convoeval import tau2` (live); the
domain is the small telecom-like one written for the tests (tests/data/tau2-bench/telecom). The
agent is convoeval's tool agent around a scripted model, the simulated user a scripted
simulator, both on the loopback fake OpenAI server.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import convoeval
from convoeval.graders._cow import same_document
from convoeval.graders._tau import state_diff
from convoeval.graders._tau_episode import episode_calls
from convoeval.results import TrialResult
from convoeval.run import TrialContext, plan_test, run_trial
from convoeval.spec import load_suite
from convoeval.targets import TargetConfig, create_target
from convoeval.testing import FakeOpenAIServer, default_judge, tool_calls

from .conftest import REPO, read_jsonl, write

DATA = REPO / "tests" / "data" / "tau2-bench"
Body = dict[str, Any]
HELLO = "My phone shows No Service. I'm John Smith, 555-123-2002."
PAID = "I paid the bill."
SIGNAL = "Airplane mode is off now and I have signal."


def agent(body: Body) -> str | Body:
    """Finds the customer, asks for the overdue bill's payment, resumes the line once it is paid."""
    last = body["messages"][-1]
    said = [m["content"] for m in body["messages"] if m["role"] == "user"]
    called = [c["function"]["name"] for m in body["messages"] for c in m.get("tool_calls") or []]
    if last["role"] == "user" and said[-1] == HELLO:
        return tool_calls(("get_customer_by_phone", {"phone_number": "555-123-2002"}))
    if last["role"] == "tool" and called[-1] == "get_customer_by_phone":
        return tool_calls(("send_payment_request", {"customer_id": "C1001", "bill_id": "B1234321"}))
    if last["role"] == "tool" and called[-1] == "send_payment_request":
        return "I sent you a payment request for the overdue bill B1234321. Please pay it."
    if last["role"] == "user" and said[-1] == PAID:
        return tool_calls(("resume_line", {"customer_id": "C1001", "line_id": "L1002"}))
    if last["role"] == "tool" and called[-1] == "resume_line":
        return "Your line is resumed. Please turn airplane mode off."
    return "Glad it works. Goodbye!"


class User:
    """The simulated user's answers in order (a list of tool calls, a message, or a stop), and
    the prompts it was given."""

    def __init__(self, server: FakeOpenAIServer, answers: list[list[tuple[str, dict]] | str | None]):
        self.answers, self.prompts = list(answers), []
        server.reset(reply=agent, judge=self.step)

    def step(self, body: Body) -> str:
        if body["response_format"]["json_schema"]["name"] != "user_step":
            return default_judge(body)
        self.prompts.append(body["messages"][-1]["content"])
        answer = self.answers.pop(0)
        if isinstance(answer, str) and answer.startswith("{"):  # an answer as the model wrote it
            return answer
        if answer is None:
            return json.dumps({"message": "", "stop": True, "stop_reason": "objective_met", "tool_calls": []})
        if isinstance(answer, str):
            return json.dumps({"message": answer, "stop": False, "stop_reason": "none", "tool_calls": []})
        calls = [{"name": name, "arguments": json.dumps(arguments)} for name, arguments in answer]
        return json.dumps({"message": "", "stop": False, "stop_reason": "none", "tool_calls": calls})


#: The user pays when asked, turns airplane mode off when told, and stops once it has signal.
SOLVED = [
    HELLO,
    [("check_payment_request", {})],
    [("make_payment", {})],
    PAID,
    [("toggle_airplane_mode", {}), ("check_status_bar", {})],
    SIGNAL,
    None,
]


@pytest.fixture
def suite(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fake_openai: FakeOpenAIServer) -> Path:
    for name in ("tools.py", "db.json"):
        shutil.copy(DATA / "telecom" / name, tmp_path / name)
    results = json.loads((DATA / "results" / "telecom-gpt-4.1.json").read_text())
    write(tmp_path / "tasks.json", json.dumps(results["tasks"][:1]))
    code, out, err = cli("import", "tau2", tmp_path / "tasks.json", "-o", tmp_path / "t.eval.yaml")
    assert code == 0 and "1 test(s) written" in out, err
    monkeypatch.setenv("OPENAI_BASE_URL", fake_openai.base_url)
    return tmp_path / "t.eval.yaml"


def bot() -> TargetConfig:
    return TargetConfig.model_validate({"name": "bot", "provider": "openai", "model": "m", "agent": {"tools": []}})


def reward(trial: TrialResult) -> dict[str, Any]:
    [grader] = [g for e in trial.scores if e.name == "conversation" for g in e.graders]
    assert grader.type == "tau-reward" and grader.details is not None
    return grader.details


def test_the_user_acts_on_its_phone_on_the_trials_backend_and_tau2s_reward_is_1(fake_openai, suite: Path) -> None:
    user = User(fake_openai, SOLVED)
    [result] = convoeval.run(suite, target=bot(), judge="openai:user", store=False, cache=False).results
    details = reward(result.trials[0])
    assert (details["reward"], details["env_assertions_failed"], details["final_state"]) == (1.0, [], "live")
    # tau2's count: the user's two messages of calls are a message and its results each (4 steps)
    assert details["episode_end"] == "the simulated user stopped (objective_met) after 19 of at most 200 steps"
    assert result.verdict == "pass"
    # the user's calls are messages of their own in the transcript, with what its phone answered
    mine = [(c.name, c.output) for m in result.output if m.role == "user" for c in m.tool_calls]
    assert mine[0] == ("check_payment_request", {"bill_id": "B1234321", "amount": 65.0, "paid": False})
    assert [name for name, _ in mine] == [
        "check_payment_request",
        "make_payment",
        "toggle_airplane_mode",
        "check_status_bar",
    ]
    assert "Excellent" in str(mine[-1][1])  # the line the agent resumed has signal once airplane mode is off
    # ...which the agent is never sent: it sees what the user said, and its own tool results
    for request in fake_openai.target_requests():
        sent = [m["content"] for m in request["messages"] if m["role"] == "user"]
        assert sent == [HELLO, PAID, SIGNAL][: len(sent)]
    # the simulator saw its calls' results before it answered again
    paid = '"bill_id": "B1234321", "amount": 65.0, "paid": false'
    assert f"user (your tool call): check_payment_request() -> {{{paid}}}" in user.prompts[2]
    assert "- make_payment()" in user.prompts[0] and '"tool_calls": [{"name"' in user.prompts[0]


def test_without_the_users_calls_the_same_agent_gets_0(fake_openai, suite: Path) -> None:
    """The user says it paid and has signal without acting: the bill stays unpaid and airplane
    mode on (the initial actions' state), so tau2's assertions fail."""
    User(fake_openai, [HELLO, PAID, SIGNAL, None])
    [result] = convoeval.run(suite, target=bot(), judge="openai:user", store=False, cache=False).results
    details = reward(result.trials[0])
    assert details["reward"] == 0.0 and result.verdict == "fail"
    assert details["env_assertions_failed"] == [
        "assert_service_status(expected_status='connected') is True: Service status is not as expected",
        "assert_no_overdue_bill(overdue_bill_id='B1234321') is True: Overdue bill is not as expected",
    ]
    assert details["final_state"] == "live" and not any(m.role == "user" and m.tool_calls for m in result.output)


def test_the_live_state_is_the_replay_of_the_transcript(fake_openai, suite: Path) -> None:
    """What tau-reward reads live is what a replay of the recorded transcript (the agent's and
    the user's calls in order, from the task's initial actions) reaches."""
    User(fake_openai, SOLVED)
    loaded = load_suite(suite)
    plan = plan_test(loaded, loaded.tests[0])
    domain = plan.domain()
    assert domain is not None
    session = domain.session(loaded.tests[0].initial_actions)
    assert session.state != domain.initial  # the initial actions turned airplane mode on, suspended the line
    target = create_target(bot())
    model = create_target(TargetConfig(name="user", provider="openai", model="user"))
    trial = asyncio.run(run_trial(plan, TrialContext(target=target, judge=None, simulator=model, domain=session)))
    calls = episode_calls(trial.output)
    assert [(side, c.name) for side, c in calls] == [
        ("assistant", "get_customer_by_phone"),
        ("assistant", "send_payment_request"),
        ("user", "check_payment_request"),
        ("user", "make_payment"),
        ("assistant", "resume_line"),
        ("user", "toggle_airplane_mode"),
        ("user", "check_status_bar"),
    ]
    assert session.made(calls)
    start = domain.initial_state(loaded.tests[0].initial_actions)
    replayed = domain.replay([c for _, c in calls], strict=False, start=start, sides=[s for s, _ in calls])
    assert state_diff(session.state, replayed) == [] and same_document(session.state, replayed)
    assert state_diff(session.state, domain.initial_state([])) != []  # the comparison can tell states apart
    assert reward(trial)["final_state"] == "live" and reward(trial)["reward"] == 1.0


def test_a_user_that_only_calls_tools_is_a_simulator_error_with_its_calls_kept(fake_openai, suite: Path) -> None:
    User(fake_openai, [HELLO, *[[("check_status_bar", {})]] * 11])
    [result] = convoeval.run(suite, target=bot(), judge="openai:user", store=False, cache=False).results
    assert (result.verdict, result.execution_status) == ("error", "simulator_error")
    assert result.error == "simulator: role break: 10 rounds of tool calls without a message"
    kept = [c.name for m in result.output if m.role == "user" for c in m.tool_calls]
    assert kept == ["check_status_bar"] * 10  # made on the trial's backend: they stay in the transcript


def test_tools_used_before_the_first_message_are_shown_and_bad_arguments_are_asked_again(
    fake_openai, suite: Path
) -> None:
    bad = {
        "message": "",
        "stop": False,
        "stop_reason": "none",
        "tool_calls": [{"name": "check_status_bar", "arguments": "status"}],
    }
    user = User(fake_openai, [json.dumps(bad), [("check_status_bar", {})], HELLO, None])
    [result] = convoeval.run(suite, target=bot(), judge="openai:user", store=False, cache=False).results
    assert result.execution_status != "simulator_error", result.error
    assert "arguments: expected a JSON object written as text" in user.prompts[1]  # the re-ask says why
    assert [c.name for m in result.output if m.role == "user" for c in m.tool_calls] == ["check_status_bar"]
    assert "What you did on your tools so far:\nuser (your tool call): check_status_bar() -> " in user.prompts[2]
    assert "The conversation has not started" in user.prompts[2]


def test_a_stored_live_run_graded_again_replays_to_the_same_reward(cli, fake_openai, suite: Path) -> None:
    """`convoeval grade` of the stored run: no model is called, the transcript's calls (the
    user's included) are replayed from the test's initial actions, and the reward is the live one."""
    User(fake_openai, SOLVED)
    write(suite.parent / "targets.yaml", "targets:\n  - {name: bot, provider: openai, model: m, agent: {tools: []}}\n")
    code, out, err = cli("run", suite, "--target", "bot", "--judge", "openai:user", "-o", suite.parent / "run.jsonl")
    assert code == 0, out + err
    fake_openai.reset()
    code, out, err = cli("grade", suite.parent / "run.jsonl", "-o", suite.parent / "again.jsonl")
    assert code == 0, out + err
    [stored], [again] = read_jsonl(suite.parent / "run.jsonl"), read_jsonl(suite.parent / "again.jsonl")
    live, replayed = (
        next(g for e in r["scores"] for g in e["graders"] if g["type"] == "tau-reward") for r in (stored, again)
    )
    assert live["details"]["final_state"] == "live" and replayed["details"]["final_state"] == "replayed"
    same = ("reward", "env_assertions_failed", "actions_replayed", "episode_end", "initial_actions")
    assert {k: replayed["details"][k] for k in same} == {k: live["details"][k] for k in same}
    assert (live["details"]["reward"], live["details"]["initial_actions"]) == (1.0, 4) and not fake_openai.requests
