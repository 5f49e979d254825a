"""tau2-bench's telecom simulations graded as tau2 grades them: the user acts on its phone with
its own tools (replayed through the tools file's `USER_TOOLS`), a task starts from its initial
actions, and the reward is the product of its basis: ENV_ASSERTION (functions on the final
state) and ACTION (calls someone must have made); the database is not compared (no DB).

The simulations are real (tests/data/tau2-bench/results, see SOURCE.txt): tau2 recorded reward
1 for one (the user turned airplane mode off and paid the overdue bill, the agent resumed the
line), 0 for two (no transfer to a human; the line resumed although the task wanted it left
without service), 1 for a fourth (transferred, nothing changed). The domain is a small one
written for these tests (tests/data/tau2-bench/telecom/tools.py), not tau2's code;
benchmarks/tau2_reward.py grades whole telecom results files with tau2's own.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from convoeval.spec import load_suite

from .conftest import REPO, read_jsonl, write

DATA = REPO / "tests" / "data" / "tau2-bench"
RESULTS = DATA / "results"


@pytest.fixture
def domain(tmp_path: Path) -> Path:
    for name in ("tools.py", "db.json"):
        shutil.copy(DATA / "telecom" / name, tmp_path / name)
    return tmp_path


def graded(cli, folder: Path, results: Path) -> list[dict]:
    code, out, err = cli("import", "tau2", results, "--recorded", "-o", folder / "t.eval.yaml")
    assert code == 0, err
    code, out, err = cli("grade", folder / "t.eval.yaml", "-o", folder / "t.jsonl")
    assert "Traceback" not in err
    return read_jsonl(folder / "t.jsonl")


def reward(row: dict) -> dict:
    [trial] = row["trials"] if row.get("trials") else [row]
    return next(g for e in trial["scores"] for g in e.get("graders") or [] if g["type"] == "tau-reward")


def test_telecom_verdicts_are_tau2_rewards_with_the_user_calls_replayed(cli, domain: Path) -> None:
    rows = graded(cli, domain, RESULTS / "telecom-gpt-4.1.json")
    assert [r["metadata"]["recorded_rewards"] for r in rows] == [[1.0], [0.0], [0.0]]
    assert [reward(r)["details"]["reward"] for r in rows] == [1.0, 0.0, 0.0]
    assert [r["verdict"] for r in rows] == ["pass", "fail", "fail"]
    paid, untransferred, resumed = (reward(r)["details"] for r in rows)
    # tau2 counts a step per message and per batch of tool results, the user's included
    assert paid["episode_end"] == "the user said ###STOP### after 38 of at most 200 steps"
    assert paid["env_assertions_failed"] == [] and "required_actions_missing" not in paid
    assert untransferred["env_assertions_failed"] == []  # tau2: ENV_ASSERTION 1.0, ACTION 0.0
    assert untransferred["required_actions_missing"] == ["transfer_to_human_agents"]
    assert resumed["env_assertions_failed"] == ["assert_service_status(expected_status='no_service') is True"]
    assert resumed["required_actions_missing"] == ["transfer_to_human_agents"]

    suite = load_suite(domain / "t.eval.yaml")
    first = suite.tests[0].assertions[0]
    assert first.type == "tau-reward" and not first.compare_state and not first.goal_actions
    assert [a.name for a in first.initial_actions] == [
        "set_user_info",
        "turn_airplane_mode_on",
        "suspend_line_for_overdue_bill",
        "simulate_network_search",
    ]
    assert [(a.name, a.expected) for a in first.env_assertions] == [
        ("assert_service_status", True),
        ("assert_no_overdue_bill", True),
    ]
    assert not first.required_actions  # ACTION is not in this task's basis
    [transfer] = suite.tests[1].assertions[0].required_actions
    assert (transfer.name, transfer.compare_args) == ("transfer_to_human_agents", [])
    # the user's own calls stay on its messages
    user_calls = [c["name"] for m in suite.tests[0].transcripts[0] if m.role == "user" for c in m.tool_calls]
    assert user_calls[:2] == ["check_payment_request", "make_payment"] and "toggle_airplane_mode" in user_calls


def test_without_the_user_tools_the_users_calls_change_nothing(cli, domain: Path) -> None:
    """The same file with no `USER_TOOLS`: the user's calls find no tool of theirs (as in tau2, a
    tool of the other side is not theirs), the phone stays in airplane mode, the bill unpaid."""
    tools = (domain / "tools.py").read_text()
    write(domain / "tools.py", tools + "\nUSER_TOOLS = []\n")
    paid = reward(graded(cli, domain, RESULTS / "telecom-gpt-4.1.json")[0])["details"]
    assert paid["reward"] == 0.0
    assert paid["env_assertions_failed"] == [
        "assert_service_status(expected_status='connected') is True: Service status is not as expected",
        "assert_no_overdue_bill(overdue_bill_id='B1234321') is True: Overdue bill is not as expected",
    ]


def test_a_transfer_that_changed_nothing_is_tau2_reward_1(cli, domain: Path) -> None:
    [row] = graded(cli, domain, RESULTS / "telecom-sft-gpt-4.1.json")
    assert row["metadata"]["recorded_rewards"] == [1.0] and row["verdict"] == "pass"
    assert reward(row)["details"]["required_actions_missing"] == []


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda t: t.replace('"lock_sim_card"]', '"lock_sim_card", "nowhere"]'), "no public function 'nowhere'"),
        (lambda t: t.replace('return state["phone"]["service"] == expected_status', "return 'yes'"), "not a bool"),
        (lambda t: t.replace('state["phone"]["sim"] = f"locked_{mode}"', "raise KeyError(mode)"), "lock_sim_card"),
    ],
)
def test_a_check_that_cannot_decide_is_an_error(cli, domain: Path, change, message: str) -> None:
    write(domain / "tools.py", change((domain / "tools.py").read_text()))
    rows = graded(cli, domain, RESULTS / "telecom-gpt-4.1.json")
    errors = [reward(r).get("error") or "" for r in rows]
    assert any(message in e for e in errors), errors
    assert all(r["verdict"] == "error" for r, e in zip(rows, errors, strict=True) if message in e)


def test_what_tau_reward_cannot_grade_is_left_out_or_refused(cli, domain: Path) -> None:
    data = json.loads((RESULTS / "telecom-gpt-4.1.json").read_text())
    [task] = [t for t in data["tasks"] if t["id"] == data["simulations"][1]["task_id"]]
    task["initial_state"]["initialization_data"] = {"user_data": {"device": {}}}
    path = write(domain / "init-data.json", json.dumps(data, indent=2))
    code, out, err = cli("import", "tau2", path, "--recorded", "-o", domain / "x.eval.yaml")
    assert code == 0 and "2 test(s) written" in out, err
    assert f"left out: {task['id']}: initial_state.initialization_data (tau-reward starts" in out

    data["info"]["agent_info"]["implementation"] = "llm_agent_solo"
    path = write(domain / "solo.json", json.dumps(data, indent=2))
    code, out, err = cli("import", "tau2", path, "--recorded", "-o", domain / "y.eval.yaml")
    line = next(
        n for n, text in enumerate(path.read_text().splitlines(), 1) if '"implementation": "llm_agent_solo"' in text
    )
    assert code == 2 and err.startswith(f"error: {path}:{line}: info.agent_info.implementation: 'llm_agent_solo'"), err


def test_a_live_import_keeps_telecom_tasks_with_their_initial_actions_on_the_test(cli, domain: Path) -> None:
    code, out, err = cli("import", "tau2", RESULTS / "telecom-gpt-4.1.json", "-o", domain / "live.eval.yaml")
    assert code == 0 and "3 test(s) written" in out, err
    suite = load_suite(domain / "live.eval.yaml")
    assert (suite.tools, suite.backend) == ("tools.py", "db.json")  # each trial's domain, both sides' tools
    first = suite.tests[0]
    assert [a.name for a in first.initial_actions][:2] == ["set_user_info", "turn_airplane_mode_on"]
    [reward] = first.assertions
    assert reward.initial_actions is None  # the trial's backend's, which started from the test's
    assert first.simulated_user is not None and first.transcripts is None


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda t: t["evaluation_criteria"]["env_assertions"][0].pop("func_name"),
            "evaluation_criteria.env_assertions[0]: each call needs a func_name",
        ),
        (
            lambda t: t["evaluation_criteria"]["env_assertions"][0].update(assert_value="yes"),
            "assert_value: expected true or false",
        ),
        (
            lambda t: t["evaluation_criteria"]["actions"][0].update(compare_args="all"),
            "compare_args: expected a list of names",
        ),
        (lambda t: t.update(initial_state="airplane mode on"), "initial_state: expected an object"),
    ],
)
def test_a_malformed_telecom_task_gets_the_task_line(cli, domain: Path, change, message: str) -> None:
    data = json.loads((RESULTS / "telecom-gpt-4.1.json").read_text())
    task = next(t for t in data["tasks"] if "ACTION" in t["evaluation_criteria"]["reward_basis"])
    change(task)
    path = write(domain / "bad.json", json.dumps(data, indent=2))
    code, out, err = cli("import", "tau2", path, "--recorded", "-o", domain / "x.eval.yaml")
    lines = path.read_text().splitlines()
    line = next(n for n, text in enumerate(lines, 1) if f'"id": {json.dumps(task["id"])}' in text) - 1
    assert code == 2, out
    assert err.startswith(f"error: {path}:{line}: task {task['id']!r}: "), err
    assert message in err and "Traceback" not in err
