"""Live tau-bench and tau2-bench runs get the benchmark's verdict on how an episode ended.

Real runs: tasks imported with `convoeval import tau-bench`, a rule-based Python agent acting on
its own copy of the backend (examples/airline, or a tiny task domain for tau2), and the
simulated user's steps scripted on the loopback fake OpenAI server. tau-bench computes a reward
only when the user stops or the agent transfers to a human within 30 agent actions
(tau_bench/envs/base.py, agents/tool_calling_agent.py at 59a200c); tau2-bench only for a user
or agent stop below 200 steps and 10 failed tool calls (src/tau2/evaluator/evaluator.py,
orchestrator/orchestrator.py at a2c0247). Every other episode gets 0, whatever its final state.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

import convoeval
from convoeval.results import EvaluationResult
from convoeval.spec import load_suite
from convoeval.targets import TargetConfig
from convoeval.testing import FakeOpenAIServer, default_judge

from .conftest import REPO, write

AIRLINE = REPO / "examples" / "airline"
TAU2_MOCK = REPO / "tests" / "data" / "tau2-bench" / "mock" / "tasks.json"
TAU_DATA = REPO / "tests" / "data" / "tau-bench"
TRANSFER = "transfer_to_human_agents"
ASK = "Hi, I'm mia_li. I need one seat JFK to SFO on 2024-05-20, paid with card_7447."
BOOK = "Yes, please book it."
CHAT = "Thanks. Anything else I should know?"
TASK = {
    "user_id": "mia_li",
    "instruction": "You are mia_li. Book one seat from JFK to SFO on 2024-05-20 paid with card_7447.",
    "actions": [
        {"name": "book_flight", "kwargs": {"user_id": "mia_li", "flight": "HAT001", "payment_id": "card_7447"}}
    ],
    "outputs": ["R101"],
}


class ScriptedUser:
    """The simulated user's steps on the fake server: `messages` in order, then `stop` (a stop
    reason) or, with None, small talk until the conversation runs out of turns."""

    def __init__(self, server: FakeOpenAIServer, messages: list[str], stop: str | None):
        self.messages, self.stop = list(messages), stop
        server.reset(judge=self.step)

    def step(self, body: dict[str, Any]) -> str:
        if body["response_format"]["json_schema"]["name"] != "user_step":
            return default_judge(body)
        if self.messages:
            return json.dumps({"message": self.messages.pop(0), "stop": False, "stop_reason": "none"})
        if self.stop is None:
            return json.dumps({"message": CHAT, "stop": False, "stop_reason": "none"})
        return json.dumps({"message": "", "stop": True, "stop_reason": self.stop})


def live(path: Path, agent: str) -> EvaluationResult:
    target = TargetConfig.model_validate({"name": "agent", "provider": "python", "callable": agent})
    [result] = convoeval.run(path, target=target, judge="openai:user-model", store=False, cache=False).results
    return result


def reward_of(result: EvaluationResult) -> dict[str, Any]:
    [trial] = result.trials
    graders = [g for e in trial.scores if e.name == "conversation" for g in e.graders]
    assert [g.name for g in graders] == ["tau-reward"]
    details = graders[0].details
    assert details is not None
    return {**details, "ended": graders[0].assertions[0], "stop_reason": trial.stop_reason}


@pytest.fixture
def airline(cli, tmp_path: Path) -> Path:
    """tau-bench's task on the example airline domain, imported as a live scenario."""
    for name in ("tools.py", "backend.json"):
        shutil.copy(AIRLINE / name, tmp_path / name)
    write(tmp_path / "tasks.json", json.dumps([TASK]))
    code, out, err = cli("import", "tau-bench", tmp_path / "tasks.json", "-o", tmp_path / "tau.eval.yaml")
    assert code == 0, err
    return tmp_path / "tau.eval.yaml"


def test_goal_state_reached_but_the_user_never_stops_gets_zero(fake_openai, airline: Path) -> None:
    ScriptedUser(fake_openai, [ASK, BOOK], stop=None)
    result = live(airline, f"{AIRLINE / 'agent.py'}:AirlineAgent")
    reward = reward_of(result)
    assert reward["stop_reason"] == "max_turns"
    assert reward["state_diff"] == [] and reward["missing_outputs"] == []  # the booking is right...
    assert (reward["reward"], reward["episode_ended"]) == (0.0, False)  # ...but tau-bench gives no reward
    assert reward["episode_end"] == (
        "the simulated user never stopped: the conversation ran out of max_turns "
        "and transfer_to_human_agents was never called"
    )
    assert not reward["ended"].passed and reward["ended"].text.endswith("it did not, so no reward")
    assert (result.verdict, result.execution_status) == ("fail", "quality_failure")


def test_the_same_conversation_with_the_user_stopping_gets_one(fake_openai, airline: Path) -> None:
    ScriptedUser(fake_openai, [ASK, BOOK], stop="objective_met")
    result = live(airline, f"{AIRLINE / 'agent.py'}:AirlineAgent")
    reward = reward_of(result)
    assert (reward["reward"], reward["episode_ended"]) == (1.0, True)
    # search + reply, book + reply: 4 of tau-bench's 30 agent actions
    assert reward["episode_end"] == "the simulated user stopped (objective_met) after 4 of at most 30 steps"
    assert reward["ended"].passed
    assert result.verdict == "pass"
    suite = load_suite(airline)
    assert suite.tests[0].simulated_user.max_turns == 31  # 30 user messages and a stop fit in 30 actions


@pytest.mark.parametrize(("chat", "reward", "steps"), [(26, 1.0, 30), (27, 0.0, 31)])
def test_a_stop_after_tau_benchs_thirty_agent_actions_gets_zero(
    fake_openai, airline: Path, chat: int, reward: float, steps: int
) -> None:
    ScriptedUser(fake_openai, [ASK, BOOK] + [CHAT] * chat, stop="objective_impossible")
    details = reward_of(live(airline, f"{AIRLINE / 'agent.py'}:AirlineAgent"))
    assert details["stop_reason"] == "objective_impossible" and details["state_diff"] == []
    assert details["reward"] == reward
    if reward:
        assert details["episode_end"].endswith(f"after {steps} of at most 30 steps")
    else:
        assert details["episode_end"] == (
            "the simulated user stopped (objective_impossible), "
            f"but only after {steps} agent actions (the step limit is 30)"
        )


TRANSFER_TOOLS = (AIRLINE / "tools.py").read_text() + (
    "\n\ndef transfer_to_human_agents(state, summary):\n    return 'Transfer successful'\n"
)


def _call(name: str, arguments: dict[str, Any], n: int) -> list[dict[str, Any]]:
    call = {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": f"c{n}", "name": name, "content": "ok"},
    ]


def test_the_state_is_the_one_when_the_agent_transferred(cli, tmp_path: Path) -> None:
    """tau-bench ends the episode at `transfer_to_human_agents`: what the agent did after it
    (here, cancelling the booking) is not part of the episode."""
    write(tmp_path / "tools.py", TRANSFER_TOOLS)
    shutil.copy(AIRLINE / "backend.json", tmp_path / "backend.json")
    book = {"user_id": "mia_li", "flight": "HAT001", "payment_id": "card_7447"}
    traj = [
        {"role": "user", "content": ASK},
        *_call("book_flight", book, 1),
        {"role": "assistant", "content": "Booked: reservation R101."},
        {"role": "user", "content": "I also want to talk to a person."},
        *_call("transfer_to_human_agents", {"summary": "wants a person"}, 2),
        *_call("cancel_reservation", {"reservation_id": "R101"}, 3),
        {"role": "assistant", "content": "Cancelled."},
    ]
    results = [{"task_id": 0, "trial": 0, "reward": 1.0, "info": {"task": TASK}, "traj": traj}]
    write(tmp_path / "results.json", json.dumps(results))
    code, out, err = cli("import", "tau-bench", tmp_path / "results.json", "--recorded", "-o", tmp_path / "r.yaml")
    assert code == 0, err
    code, out, err = cli("grade", tmp_path / "r.yaml", "-o", tmp_path / "r.jsonl")
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    details = row["trials"][0]["scores"][-1]["graders"][0]["details"]
    assert details["episode_end"] == "the agent called transfer_to_human_agents"
    assert (details["reward"], details["state_diff"], details["actions_replayed"]) == (1.0, [], 2)


MOCK_TOOLS = '''\
"""A tiny task domain (tau2-bench's mock domain in spirit)."""


def list_tasks(state, user_id):
    """A user's tasks (read-only)."""
    return [t for t in state["tasks"].values() if t["user_id"] == user_id]


def create_task(state, user_id, title):
    """A new task for a user."""
    if user_id not in state["users"]:
        raise ValueError(f"unknown user {user_id}")
    task_id = f"task_{len(state['tasks']) + 1}"
    state["tasks"][task_id] = {"user_id": user_id, "title": title, "status": "pending"}
    return task_id
'''

MOCK_AGENT = '''\
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location("mock_tools", Path(__file__).with_name("tools.py"))
tools = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(tools)


class Agent:
    """Looks the user's tasks up `lookups` times, tries `failures` calls that fail, then
    creates the task."""

    lookups = 0
    failures = 0

    def __init__(self):
        self.state = {"users": {"user_1": {"name": "Ada"}}, "tasks": {}}

    def _call(self, name, **arguments):
        try:
            return {"name": name, "arguments": arguments, "output": getattr(tools, name)(self.state, **arguments)}
        except Exception as exc:
            return {"name": name, "arguments": arguments, "error": str(exc)}

    def respond(self, messages):
        calls = [self._call("list_tasks", user_id="user_1") for _ in range(self.lookups)]
        calls += [self._call("create_task", user_id="nobody", title="x") for _ in range(self.failures)]
        calls.append(self._call("create_task", user_id="user_1", title="Important Meeting"))
        return {"text": "Your task Important Meeting is created.", "tool_calls": calls}


class Busy(Agent):
    lookups = {busy}


class JustBusyEnough(Agent):
    lookups = {busy} - 1


class Failing(Agent):
    failures = 10


class NearlyFailing(Agent):
    failures = 9
'''


@pytest.fixture
def tau2(cli, tmp_path: Path) -> Path:
    write(tmp_path / "tools.py", MOCK_TOOLS)
    write(tmp_path / "db.json", json.dumps({"users": {"user_1": {"name": "Ada"}}, "tasks": {}}))
    # user message + 99 calls (the agent's message and its result each) + reply + stop = 201 steps
    write(tmp_path / "agent.py", MOCK_AGENT.replace("{busy}", "98"))
    code, out, err = cli("import", "tau-bench", TAU2_MOCK, "-o", tmp_path / "tau2.eval.yaml")
    assert code == 0 and "2 test(s) written" in out, err
    suite = yaml.safe_load((tmp_path / "tau2.eval.yaml").read_text())
    suite["tests"] = suite["tests"][:1]  # create_task_1 (the other asserts on a task this mock lacks)
    write(tmp_path / "tau2.eval.yaml", yaml.safe_dump(suite, sort_keys=False))
    return tmp_path


@pytest.mark.parametrize(
    ("agent", "reward", "why"),
    [
        ("Agent", 1.0, "the simulated user stopped (objective_met) after 5 of at most 200 steps"),
        ("JustBusyEnough", 1.0, "the simulated user stopped (objective_met) after 199 of at most 200 steps"),
        (
            "Busy",
            0.0,
            "the simulated user stopped (objective_met), but only at step 201 "
            "(the episode ends when the count reaches 200)",
        ),
        ("NearlyFailing", 1.0, "the simulated user stopped (objective_met) after 23 of at most 200 steps"),
        (
            "Failing",
            0.0,
            "the simulated user stopped (objective_met), but 10 tool calls had failed (the episode ends at 10)",
        ),
    ],
)
def test_tau2_episode_over_its_step_or_error_limit_gets_zero(
    fake_openai, tau2: Path, agent: str, reward: float, why: str
) -> None:
    ScriptedUser(fake_openai, ["Please create a task Important Meeting for user_1."], stop="objective_met")
    details = reward_of(live(tau2 / "tau2.eval.yaml", f"{tau2 / 'agent.py'}:{agent}"))
    assert details["state_diff"] == []  # the task is created every time
    assert details["final_state"] == "replayed"  # on the agent's own copy, not on the trial's backend
    assert (details["reward"], details["episode_end"]) == (reward, why)


def test_tau2_user_that_never_stops_gets_zero_and_its_stop_tokens_end_an_episode(fake_openai, tau2: Path) -> None:
    suite = load_suite(tau2 / "tau2.eval.yaml")
    [test] = suite.tests
    ended_by = test.assertions[0].ended_by
    assert ended_by.tokens == ["###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"]
    assert (ended_by.max_steps, ended_by.count_steps, ended_by.max_errors) == (200, "messages", 10)
    assert test.simulated_user.max_turns == 100
    text = (tau2 / "tau2.eval.yaml").read_text().replace("max_turns: 100", "max_turns: 3")
    write(tau2 / "short.eval.yaml", text)
    ScriptedUser(fake_openai, ["Please create a task Important Meeting for user_1."], stop=None)
    details = reward_of(live(tau2 / "short.eval.yaml", f"{tau2 / 'agent.py'}:Agent"))
    assert (details["reward"], details["stop_reason"]) == (0.0, "max_turns")
    assert details["episode_end"] == "the simulated user never stopped: the conversation ran out of max_turns"

    ScriptedUser(fake_openai, ["Please create a task Important Meeting for user_1.", "###TRANSFER###"], stop=None)
    details = reward_of(live(tau2 / "short.eval.yaml", f"{tau2 / 'agent.py'}:Agent"))
    assert (details["reward"], details["episode_end"]) == (
        1.0,
        "the user said ###TRANSFER### after 5 of at most 200 steps",
    )


def test_a_budget_that_ends_the_conversation_is_no_end_of_the_episode(fake_openai, airline: Path) -> None:
    suite = yaml.safe_load(airline.read_text())
    suite["tests"][0]["budget"] = {"conversation": {"tool_calls": 1}}  # gone over by the booking's two calls
    write(airline, yaml.safe_dump(suite))
    ScriptedUser(fake_openai, [ASK, BOOK], stop="objective_met")
    result = live(airline, f"{AIRLINE / 'agent.py'}:AirlineAgent")
    details = reward_of(result)
    assert details["state_diff"] == [] and details["reward"] == 0.0
    assert details["episode_end"] == (
        "a budget ended the conversation before the user stopped and transfer_to_human_agents was never called"
    )
    assert result.execution_status == "budget_exhausted"


def test_tau_benchs_own_episodes_at_its_step_limit(cli, tmp_path: Path) -> None:
    """The step count on real tau-bench trajectories (gpt-4o airline, 59a200c): two episodes
    whose user stopped right after the 30th agent action ended (tau-bench computed their reward),
    two stopped by the limit at action 30 never did."""
    writes = ("book_reservation", "cancel_reservation", "update_reservation_flights", "update_reservation_passengers")
    writes += ("update_reservation_baggages", "send_certificate")  # tau-bench airline's tools: writes logged
    reads = ("get_user_details", "get_reservation_details", "search_direct_flight", "search_onestop_flight")
    reads += ("list_all_airports", "calculate", "think", TRANSFER)
    tools = [f"def {w}(state, **kw):\n    state['writes'].append(kw)\n" for w in writes]
    write(tmp_path / "tools.py", "".join(tools + [f"def {r}(state, **kw):\n    return None\n" for r in reads]))
    write(tmp_path / "backend.json", '{"writes": []}')
    records = [
        json.loads((TAU_DATA / f"gpt-4o-airline-{name}.json").read_text()) for name in ("stopped-at-30", "unfinished")
    ]
    write(tmp_path / "results.json", json.dumps(records[0] + records[1]))
    code, out, err = cli("import", "tau-bench", tmp_path / "results.json", "--recorded", "-o", tmp_path / "r.yaml")
    assert code == 0, err
    suite = yaml.safe_load((tmp_path / "r.yaml").read_text())
    for test in suite["tests"]:  # the live scenarios' rule, 30 actions at most
        assert test["assertions"][0]["ended_by"] == {"stop_token": "###STOP###", "terminate_tools": [TRANSFER]}
        test["assertions"][0]["ended_by"].update(max_steps=30, count_steps="actions")
    write(tmp_path / "r.yaml", yaml.safe_dump(suite))
    code, out, err = cli("grade", tmp_path / "r.yaml", "-o", tmp_path / "r.jsonl")
    ends = {
        (row["metadata"]["task_id"], row["metadata"]["trials"][0]): row["trials"][0]["scores"][-1]["graders"][0][
            "details"
        ]
        for row in map(json.loads, (tmp_path / "r.jsonl").read_text().splitlines())
    }
    assert {key: (d["episode_ended"], d["episode_end"]) for key, d in ends.items()} == {
        (3, 0): (True, "the user said ###STOP### after 30 of at most 30 steps"),
        (33, 2): (True, "the user said ###STOP### after 30 of at most 30 steps"),
        (2, 1): (False, "the conversation ended without the user's stop and transfer_to_human_agents was never called"),
        (46, 3): (
            False,
            "the conversation ended without the user's stop and transfer_to_human_agents was never called",
        ),
    }


def test_a_stored_live_run_graded_again_keeps_how_each_episode_ended(cli, fake_openai, airline: Path) -> None:
    """`convoeval grade run.jsonl` grades a simulated user's conversations as transcripts: the
    simulator's stop is no message, so the stored stop reason goes with them."""
    targets = write(
        airline.parent / "targets.yaml",
        f"targets:\n  - {{name: agent, provider: python, callable: '{AIRLINE / 'agent.py'}:AirlineAgent'}}\n",
    )
    verdicts = {}
    for stop in ("objective_met", None):
        ScriptedUser(fake_openai, [ASK, BOOK], stop=stop)
        run = airline.parent / f"run-{stop}.jsonl"
        code, out, err = cli(
            "run", airline, "--targets", targets, "--target", "agent", "--judge", "openai:u", "--no-cache", "-o", run
        )
        code, out, err = cli("grade", run, "-o", airline.parent / f"graded-{stop}.jsonl")
        [stored] = map(json.loads, run.read_text().splitlines())
        [graded] = map(json.loads, (airline.parent / f"graded-{stop}.jsonl").read_text().splitlines())
        assert "graded as recorded transcripts" in out, out + err
        details = [g["trials"][0]["scores"][-1]["graders"][0]["details"] for g in (stored, graded)]
        assert details[0] == details[1]
        verdicts[stop] = (details[1]["reward"], details[1]["episode_end"])
    assert verdicts == {
        "objective_met": (1.0, "the simulated user stopped (objective_met) after 4 of at most 30 steps"),
        None: (
            0.0,
            "the simulated user never stopped: the conversation ran out of max_turns and transfer_to_human_agents was never called",
        ),
    }


def test_an_imported_task_offers_the_domain_tools_to_a_chat_model_agent(fake_openai, airline: Path) -> None:
    """`import tau-bench` names the domain at the suite level, as `import tau2` does: a chat model
    with `agent:` is offered its tools and acts on the trial's own backend, whose final state the
    reward reads (`live`). Before, it was offered none: a real model could not book anything."""
    suite = load_suite(airline)
    assert (suite.tools, suite.backend) == ("tools.py", "backend.json")
    book = {"user_id": "mia_li", "flight": "HAT001", "payment_id": "card_7447"}

    def agent(body: dict[str, Any]) -> str | dict[str, Any]:
        if not any(m["role"] == "tool" for m in body["messages"]):
            return _call("book_flight", book, 1)[0]
        return "Booked: R101."

    ScriptedUser(fake_openai, [ASK], stop="objective_met")
    fake_openai.reply = agent
    target = TargetConfig.model_validate({"name": "bot", "provider": "openai", "model": "m", "agent": {"tools": []}})
    [result] = convoeval.run(airline, target=target, judge="openai:user-model", store=False, cache=False).results
    offered = {t["function"]["name"] for t in fake_openai.target_requests()[0]["tools"]}
    assert offered == {"search_flights", "book_flight", "cancel_reservation"}
    reward = reward_of(result)
    assert (reward["reward"], reward["final_state"]) == (1.0, "live") and result.verdict == "pass"
