"""tau2-bench's tasks.json (real tasks, tests/data/tau2-bench) imported as simulated-user scenarios:
the user scenario, the reward components tau2-bench counts, the domain policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convoeval.spec import load_suite

from .conftest import REPO, write

DATA = REPO / "tests" / "data" / "tau2-bench"


@pytest.fixture
def domain(tmp_path: Path) -> Path:
    write(tmp_path / "tools.py", "def get_user_details(state, user_id):\n    return state.get(user_id)\n")
    write(tmp_path / "db.json", "{}")
    return tmp_path


def test_airline_tasks_become_scenarios_with_tau2_reward_and_policy(cli, domain: Path) -> None:
    code, out, err = cli("import", "tau-bench", DATA / "airline" / "tasks.json", "-o", domain / "a.eval.yaml")
    assert code == 0 and "4 test(s) written" in out, err
    suite = load_suite(domain / "a.eval.yaml")
    assert [t.id for t in suite.tests] == ["tau2-airline-0", "tau2-airline-1", "tau2-airline-3", "tau2-airline-7"]
    assert suite.policy is not None and suite.policy.system_prompt
    assert suite.policy.text == (DATA / "airline" / "policy.md").read_text()
    assert suite.execution.threshold == 1.0
    first = suite.tests[0].simulated_user
    assert first.objective.startswith("You want to cancel reservation EHGLP3.")
    assert "You don't want to cancel if you don't get a refund." in first.objective
    assert first.knowledge == "You are Emma Kim.\nYour user id is emma_kim_9957."
    third = suite.tests[2]
    reward = third.assertions[0]
    assert reward.type == "tau-reward" and reward.required and (reward.tools, reward.backend) == ("tools.py", "db.json")
    assert reward.required_outputs == ["4"]  # communicate_info, counted (reward_basis DB + COMMUNICATE)
    assert [a.name for a in reward.goal_actions] == ["get_reservation_details", "get_user_details"]
    assert third.success == []  # nl_assertions are diagnostics in this basis: kept, not decisive
    assert third.metadata["nl_assertions"] and third.metadata["reward_basis"] == ["DB", "COMMUNICATE"]


def test_retail_nl_assertions_decide_when_tau2_counts_them(cli, domain: Path) -> None:
    policy = write(domain / "retail-policy.md", "Retail agent policy.\n")
    code, out, err = cli(
        "import", "tau-bench", DATA / "retail" / "tasks.json", "--policy", policy, "-o", domain / "r.eval.yaml"
    )
    assert code == 0, err
    [test] = load_suite(domain / "r.eval.yaml").tests
    assert test.success == ["Agent should tell the user that there are 10 t-shirt options available."]
    assert test.assertions[0].required_outputs == []  # communicate_info ["10"] is not in this task's basis
    assert len(test.assertions[0].goal_actions) == 11
    assert load_suite(domain / "r.eval.yaml").policy.text == "Retail agent policy.\n"


def test_tasks_tau_reward_cannot_grade_are_left_out_and_named(cli, domain: Path) -> None:
    code, out, err = cli("import", "tau-bench", DATA / "mock" / "tasks.json", "-o", domain / "m.eval.yaml")
    assert code == 0, err
    assert "2 test(s) written" in out
    assert "left out: update_task_with_initialization_data: initial_state.initialization_data" in out
    test, asserted = load_suite(domain / "m.eval.yaml").tests
    assert test.id == "tau2-create_task_1" and test.simulated_user.persona.startswith("Professional and direct")
    # ENV_ASSERTION: the task's env assertions are the reward's, beside the database (DB is in its basis too)
    [reward] = asserted.assertions
    assert asserted.id == "tau2-create_task_1_with_env_assertions" and reward.compare_state
    assert [(a.name, a.arguments, a.expected) for a in reward.env_assertions] == [
        ("assert_task_status", {"task_id": "task_2", "expected_status": "pending"}, True)
    ]

    code, out, err = cli("import", "tau-bench", DATA / "mock" / "tasks.json", "--recorded", "-o", domain / "x.yaml")
    assert code == 2 and "a tau2-bench tasks file holds tasks, not recorded trajectories" in err
    code, out, err = cli(
        "import", "mt-bench", DATA / "mock" / "tasks.json", "--policy", "p.md", "-o", domain / "y.yaml"
    )
    assert code == 2 and "--policy: not an option of `import mt-bench`" in err


def test_tasks_left_out_are_named_also_when_the_eval_file_has_problems(cli, tmp_path: Path) -> None:
    """The first import of a tasks file usually lacks the domain's tools and database (exit 2):
    the tasks left out are named then too. Before, only a clean import named them, so tau2's
    banking_knowledge/tasks.json gave 44 tests of 97 with no word about the other 53."""
    code, out, err = cli("import", "tau2", DATA / "mock" / "tasks.json", "-o", tmp_path / "m.eval.yaml")
    assert code == 2 and "db.json: no such file" in err
    assert "left out: update_task_with_initialization_data: initial_state.initialization_data" in err


def test_telecom_policy_is_its_main_policy_and_manual_joined_as_tau2_joins_them(cli, domain: Path) -> None:
    """tau2's telecom folder has no policy.md: its agent gets main_policy.md and
    tech_support_manual.md in tags (tau2 a2c0247 domains/telecom/environment.py). Before, the
    import gave the agent no policy, and said nothing."""
    tasks = json.loads((DATA / "results" / "telecom-gpt-4.1.json").read_text())["tasks"][:1]
    write(domain / "tasks.json", json.dumps(tasks))
    write(domain / "main_policy.md", "# Telecom Agent Policy\n")
    write(domain / "tech_support_manual.md", "# Tech support\nAsk the user to restart.\n")
    code, out, err = cli("import", "tau2", domain / "tasks.json", "-o", domain / "t.eval.yaml")
    assert code == 0 and "warning" not in out + err, err
    policy = load_suite(domain / "t.eval.yaml").policy
    assert policy is not None and policy.system_prompt
    assert policy.text == (
        "<main_policy>\n# Telecom Agent Policy\n\n</main_policy>\n"
        "<tech_support_policy>\n# Tech support\nAsk the user to restart.\n\n</tech_support_policy>"
    )
    (domain / "main_policy.md").unlink()
    code, out, err = cli("import", "tau2", domain / "tasks.json", "-o", domain / "n.eval.yaml")
    assert code == 0 and "no domain policy (policy.md) beside the file: the agent gets none" in out + err
    assert load_suite(domain / "n.eval.yaml").policy is None
