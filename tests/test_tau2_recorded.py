"""tau2-bench's own recorded simulations give tau2-bench's verdicts: the simulations of a task are
the trials of one test, each trial passes exactly when tau2's recorded reward is 1, pass^k is
tau2's, and an episode tau2 ended by an error (not by the user) gets 0.

The simulations are real (tests/data/tau2-bench/results, see SOURCE.txt). tau2's databases and
tool code are not copied here: the domain below records the write calls (the only calls tau2
replays when it compares databases) in the state, so the database check passes exactly when
the agent made the task's write calls with their arguments; for these simulations that is
tau2's recorded `db_check`. benchmarks/tau2_reward.py grades whole results files with tau2's
own tools and databases.
"""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

from convoeval.spec import load_suite

from .conftest import REPO, read_jsonl, write

RESULTS = REPO / "tests" / "data" / "tau2-bench" / "results"
WRITES = ("book_reservation", "cancel_reservation", "update_reservation_flights", "update_reservation_passengers")
WRITES += ("update_reservation_baggages", "send_certificate", "cancel_pending_order", "exchange_delivered_order_items")
WRITES += ("modify_pending_order_address", "modify_pending_order_items", "modify_pending_order_payment")
WRITES += ("modify_user_address", "return_delivered_order_items")
READS = ("calculate", "get_reservation_details", "get_user_details", "list_all_airports", "search_direct_flight")
READS += ("search_onestop_flight", "transfer_to_human_agents", "get_flight_status", "find_user_id_by_name_zip")
READS += ("find_user_id_by_email", "get_order_details", "get_product_details", "get_item_details")
READS += ("list_all_product_types",)
LOGGING_TOOLS = "\n".join(
    [
        "'''tau2-bench airline and retail tools: write calls recorded in the state, reads change nothing.'''",
        *(f"def {n}(db, /, **kw):\n    db['writes'].append({{'name': {n!r}, **kw}})\n" for n in WRITES),
        *(f"def {n}(db, /, **kw):\n    return 'ok'\n" for n in READS),
    ]
)


def tau2_pass_hat_k(rewards: list[float], k: int) -> float:
    """tau2's pass_hat_k (src/tau2/metrics/agent_metrics.py): C(c, k) / C(n, k)."""
    n, c = len(rewards), sum(abs(r - 1) <= 1e-6 for r in rewards)
    return comb(c, k) / comb(n, k)


@pytest.fixture
def domain(tmp_path: Path) -> Path:
    write(tmp_path / "tools.py", LOGGING_TOOLS)
    write(tmp_path / "db.json", '{"writes": []}')
    return tmp_path


def graded(cli, domain: Path, results: Path) -> tuple[int, list[dict], dict[str, list[dict]]]:
    """Import `results` with --recorded, grade it: (grade's exit code, rows, simulations by task)."""
    code, out, err = cli("import", "tau2", results, "--recorded", "-o", domain / "r.eval.yaml")
    assert code == 0, err
    code, out, err = cli("grade", domain / "r.eval.yaml", "-o", domain / "r.jsonl")
    assert "Traceback" not in err
    by_task: dict[str, list[dict]] = {}
    for simulation in json.loads(results.read_text())["simulations"]:
        by_task.setdefault(simulation["task_id"], []).append(simulation)
    return code, read_jsonl(domain / "r.jsonl"), by_task


def reward_graders(row: dict) -> list[dict]:
    return [g for t in row["trials"] for e in t["scores"] for g in e.get("graders") or [] if g["type"] == "tau-reward"]


def test_airline_simulations_of_a_task_are_its_trials_and_each_verdict_is_tau2_reward(cli, domain: Path) -> None:
    results = RESULTS / "airline-gpt-4.1.json"
    code, rows, by_task = graded(cli, domain, results)
    suite = load_suite(domain / "r.eval.yaml")
    assert [t.id for t in suite.tests] == ["tau2-airline-13", "tau2-airline-26", "tau2-airline-45", "tau2-airline-48"]
    assert [len(t.transcripts or []) for t in suite.tests] == [2, 1, 2, 2]
    assert suite.policy is not None and suite.policy.text.startswith("# Airline Agent Policy")
    reward = suite.tests[0].assertions[0]
    assert reward.type == "tau-reward" and reward.required and reward.failed_goal_actions == "skip"
    assert reward.ended_by is not None and (reward.ended_by.max_steps, reward.ended_by.max_errors) == (200, 10)
    first = suite.tests[0].transcripts[0]  # tau2's greeting, then the user; calls carry their results
    assert (first[0].role, first[0].content, first[1].role) == ("assistant", "Hi! How can I help you today?", "user")
    call = next(c for m in first for c in m.tool_calls)
    assert call["name"] == "get_user_details" and call["arguments"] == {"user_id": "james_lee_6136"}
    assert call["output"]["user_id"] == "james_lee_6136"  # tau2's tool message, parsed

    assert sorted(r["test_id"] for r in rows) == [t.id for t in suite.tests]
    for row in rows:
        simulations = by_task[str(row["metadata"]["task_id"])]
        rewards = [s["reward_info"]["reward"] for s in simulations]
        assert row["metadata"]["recorded_rewards"] == rewards
        assert row["metadata"]["simulation_ids"] == [s["id"] for s in simulations]
        assert row["metadata"]["termination_reasons"] == ["user_stop"] * len(rewards)
        assert [g["details"]["reward"] for g in reward_graders(row)] == rewards
        assert [t["verdict"] for t in row["trials"]] == ["pass" if r == 1 else "fail" for r in rewards]
        for k in range(1, len(rewards) + 1):
            assert row["pass_hat_k"][str(k)] == pytest.approx(tau2_pass_hat_k(rewards, k))
    by_id = {r["test_id"]: r for r in rows}
    assert by_id["tau2-airline-45"]["pass_hat_k"] == {"1": 0.5, "2": 0.0}  # one trial of two has reward 1
    assert by_id["tau2-airline-13"]["verdict"] == "pass" and by_id["tau2-airline-26"]["verdict"] == "fail"
    failed = reward_graders(by_id["tau2-airline-26"])[0]
    assert failed["details"]["state_diff"] and failed["details"]["episode_ended"]  # a wrong database, not the end
    assert code == 1  # failing tests fail the command


def test_retail_required_outputs_are_tau2_communicate_info(cli, domain: Path) -> None:
    results = RESULTS / "retail-gpt-4.1.json"
    code, rows, by_task = graded(cli, domain, results)
    suite = load_suite(domain / "r.eval.yaml")
    first = next(t for t in suite.tests if t.id == "tau2-retail-40")
    assert first.assertions[0].required_outputs == ["60", "mastercard"]  # tau2's communicate_info
    recorded = by_task["40"][0]["reward_info"]["communicate_checks"]
    grader = reward_graders(next(r for r in rows if r["test_id"] == "tau2-retail-40"))[0]
    said = [a["passed"] for a in grader["assertions"] if a["text"].startswith("said ")]
    assert said == [c["met"] for c in recorded] == [True, True]
    verdicts = {r["test_id"]: [g["details"]["reward"] for g in reward_graders(r)] for r in rows}
    assert verdicts == {f"tau2-retail-{t}": [s["reward_info"]["reward"] for s in by_task[t]] for t in by_task}
    assert sorted(v[0] for v in verdicts.values()) == [0.0, 0.0, 1.0, 1.0, 1.0]


def test_an_episode_tau2_ended_by_errors_gets_0(cli, domain: Path) -> None:
    """tau2 gives 0 to an episode the user did not end (agent_error, too_many_errors, max_steps):
    its messages end without the user's ###STOP###, and the one that hit tau2's error limit
    shows its 10 failed calls, kept from tau2's tool messages."""
    results = RESULTS / "airline-qwen2.5-7b-errors.json"
    code, rows, by_task = graded(cli, domain, results)
    graders = {r["test_id"]: reward_graders(r)[0] for r in rows}
    terminations = {r["test_id"]: r["metadata"]["termination_reasons"][0] for r in rows}
    assert terminations == {
        "tau2-airline-0": "user_stop",
        "tau2-airline-43": "agent_error",
        "tau2-airline-40": "too_many_errors",
    }
    assert graders["tau2-airline-0"]["details"]["reward"] == 1.0
    for test_id in ("tau2-airline-43", "tau2-airline-40"):
        assert graders[test_id]["details"]["reward"] == 0.0 and graders[test_id]["verdict"] == "fail"
        assert graders[test_id]["details"]["episode_ended"] is False
    transcript = load_suite(domain / "r.eval.yaml").tests[2].transcripts[0]
    errors = [c for m in transcript for c in m.tool_calls if "error" in c]
    assert len(errors) >= 10 and all(e["error"] for e in errors)


def test_results_without_recorded_are_the_tasks_as_live_scenarios(cli, domain: Path) -> None:
    code, out, err = cli("import", "tau2", RESULTS / "airline-gpt-4.1.json", "-o", domain / "live.eval.yaml")
    assert code == 0, err
    suite = load_suite(domain / "live.eval.yaml")
    assert [t.id for t in suite.tests] == ["tau2-airline-13", "tau2-airline-26", "tau2-airline-45", "tau2-airline-48"]
    assert all(t.simulated_user is not None and not t.transcripts for t in suite.tests)
    assert suite.policy is not None and suite.policy.text.startswith("# Airline Agent Policy")
    code, out, err = cli("import", "tau-bench", RESULTS / "airline-gpt-4.1.json", "--recorded", "-o", domain / "b.yaml")
    assert code == 0 and "4 test(s) written" in out, err  # `import tau-bench` reads tau2 results the same way


def _broken(domain: Path, change) -> tuple[Path, list[str]]:
    data = json.loads((RESULTS / "airline-gpt-4.1.json").read_text())
    change(data)
    path = write(domain / "broken.json", json.dumps(data, indent=2))
    return path, path.read_text().splitlines()


@pytest.mark.parametrize(
    ("change", "field", "message"),
    [
        (
            lambda d: d["simulations"][1]["messages"][3].update(role="robot"),
            "simulations[1].messages[3].role",
            "Input should be",
        ),
        (
            lambda d: d["simulations"][2].update(task_id="999"),
            "simulations[2].task_id",
            "'999' is not among the file's tasks",
        ),
        (
            lambda d: d["simulations"][1]["messages"][5].update(id="call_nowhere"),
            "simulations[1].messages[5].id",
            "a tool result for no call",
        ),
        (lambda d: d["simulations"][0].pop("messages"), "simulations[0].messages", "Field required"),
    ],
)
def test_a_malformed_results_file_gets_file_line_field(cli, domain: Path, change, field: str, message: str) -> None:
    path, lines = _broken(domain, change)
    code, out, err = cli("import", "tau2", path, "--recorded", "-o", domain / "x.yaml")
    assert code == 2 and "Traceback" not in err
    prefix, _, rest = err.removeprefix("error: ").partition(f": {field}: ")
    assert message in rest, err
    line = int(prefix.rpartition(":")[2])
    assert prefix == f"{path}:{line}"
    number = int(field.split("[")[1].split("]")[0])
    simulation_starts = [
        i for i, text in enumerate(lines, 1) if text.startswith("    {") and i > lines.index('  "simulations": [')
    ]
    assert line >= simulation_starts[number]  # the simulation's own lines, not the file's first
    if number + 1 < len(simulation_starts):
        assert line < simulation_starts[number + 1]
    if "messages[" in field:
        assert lines[line - 1].strip() == "{"  # the message's first line


def test_a_file_that_is_neither_tasks_nor_results_is_refused(cli, domain: Path) -> None:
    path = write(domain / "other.json", '{"simulations": "no"}')
    code, out, err = cli("import", "tau2", path, "--recorded", "-o", domain / "x.yaml")
    assert code == 2 and f"{path}:1: expected tau2-bench tasks (a list) or results" in err


def test_the_folder_tau2_run_saves_to_is_read_as_its_results_json(cli, domain: Path) -> None:
    """`tau2 run --save-to DIR` writes DIR/results.json (tau2 a2c0247 runner/batch.py), with its
    simulations inside; a voice run keeps them in DIR/simulations/, which is refused by name."""
    run = domain / "airline-run"
    run.mkdir()
    data = json.loads((RESULTS / "airline-gpt-4.1.json").read_text())
    write(run / "results.json", json.dumps(data))
    for kind in ("tau2", "tau-bench"):
        code, out, err = cli("import", kind, run, "--recorded", "-o", domain / f"{kind}.eval.yaml")
        assert code == 0 and "4 test(s) written" in out, err
    code, rows, _ = graded(cli, domain, run / "results.json")
    assert [len(r["trials"]) for r in rows] == [2, 1, 2, 2]

    for simulation in data.pop("simulations"):  # tau2's dir format (Results.save(format="dir"))
        write(run / "simulations" / f"{simulation['id']}.json", json.dumps(simulation))
    write(run / "results.json", json.dumps(data))
    code, out, err = cli("import", "tau2", run, "--recorded", "-o", domain / "v.eval.yaml")
    assert code == 2 and f"{run / 'results.json'}:1: simulations: this run keeps them in {run / 'simulations'}" in err


def test_nl_assertions_tau2_counts_are_success_criteria_with_tau2_judgments_kept(cli, domain: Path) -> None:
    """tau2's newer retail tasks count NL_ASSERTION: the assertions are judged again (`success`),
    what tau2's judge said is kept per trial to compare."""
    data = json.loads((RESULTS / "airline-gpt-4.1.json").read_text())
    data["tasks"][0]["evaluation_criteria"]["reward_basis"] = ["DB", "COMMUNICATE", "NL_ASSERTION"]
    path = write(domain / "nl.json", json.dumps(data))
    code, out, err = cli("import", "tau2", path, "--recorded", "-o", domain / "nl.eval.yaml")
    assert code == 0, err
    test = load_suite(domain / "nl.eval.yaml").tests[0]
    assert test.success == data["tasks"][0]["evaluation_criteria"]["nl_assertions"]
    recorded = [
        [j["met"] for j in s["reward_info"]["nl_assertions"]] for s in data["simulations"] if s["task_id"] == "13"
    ]
    assert test.metadata["recorded_nl_assertions_met"] == recorded == [[True], [True]]


def test_required_outputs_are_checked_as_tau2_checks_communicate_info(cli, domain: Path) -> None:
    """tau2 (src/tau2/evaluator/evaluator_communicate.py) and tau-bench look for each output in one
    agent message at a time, the message's commas dropped but not the output's."""
    said = "[{role: user, content: price?}, {role: assistant, content: 'It is $1,000.'}, "
    said += "{role: user, content: and?}, {role: assistant, content: 'Booked for Mia'}, {role: user, content: '###STOP###'}]"
    tests = {"plain": '["1000"]', "comma": '["1,000"]', "across": '["1000. booked"]', "split": '["1000", "mia"]'}
    write(
        domain / "o.eval.yaml",
        "tests:\n"
        + "".join(
            f"  - id: {name}\n    transcript: {said}\n    assertions:\n"
            f"      - {{type: tau-reward, backend: db.json, tools: tools.py, goal_actions: [], required_outputs: {outputs}}}\n"
            for name, outputs in tests.items()
        ),
    )
    code, out, err = cli("grade", domain / "o.eval.yaml", "-o", domain / "o.jsonl")
    rewards = {r["test_id"]: r["scores"][-1]["graders"][0]["details"]["reward"] for r in read_jsonl(domain / "o.jsonl")}
    assert rewards == {"plain": 1.0, "comma": 0.0, "across": 0.0, "split": 1.0}


def test_a_simulation_that_never_ran_is_left_out_as_tau2_leaves_it_out(cli, domain: Path) -> None:
    """Task 48's first simulation replaced by the record tau2's runner writes after exhausted
    retries (src/tau2/runner/progress.py: `infrastructure_error`, `messages: []`): the rest imports,
    a warning names it, and pass^1 is tau2's compute_metrics, which excludes it (get_metrics_df)."""
    data = json.loads((RESULTS / "airline-gpt-4.1.json").read_text())
    data["simulations"][3] = {
        **{k: data["simulations"][3][k] for k in ("task_id", "timestamp", "start_time", "end_time", "trial", "seed")},
        "id": "00000000-infra",
        "duration": 0.0,
        "termination_reason": "infrastructure_error",
        "messages": [],
        "info": {"error": "Connection error.", "error_type": "APIConnectionError", "failed_after_attempts": 4},
        "reward_info": None,
    }
    results = write(domain / "results.json", json.dumps(data))
    code, out, err = cli("import", "tau2", results, "--recorded", "-o", domain / "r.eval.yaml")
    assert code == 0, err
    assert "infrastructure error" in err and "task '48' simulation 00000000-infra (Connection error.)" in err
    code, out, err = cli("grade", domain / "r.eval.yaml", "-o", domain / "r.jsonl")
    rows = {r["test_id"]: r for r in read_jsonl(domain / "r.jsonl")}
    assert rows["tau2-airline-48"]["metadata"]["simulation_ids"] == [data["simulations"][6]["id"]]
    ran: dict[str, list[float]] = {}
    for simulation in data["simulations"]:
        if simulation["termination_reason"] != "infrastructure_error":
            ran.setdefault(simulation["task_id"], []).append(simulation["reward_info"]["reward"])
    pass_1 = sum(tau2_pass_hat_k(rewards, 1) for rewards in ran.values()) / len(ran)
    assert pass_1 == 0.625  # 0.5 if the simulation that never ran counted as a failure
    assert f"k=1 {pass_1:.3f}" in out
    # tau2 sets its max k to the fewest simulations of a task (get_metrics_df): pass^1 only
    assert "k=2" not in " ".join(out.split()), out


def test_a_tool_argument_named_state_is_a_tool_argument_with_the_state_positional_only(
    cli, domain: Path, tmp_path: Path
) -> None:
    """tau2's retail `modify_user_address` takes an argument `state` (task 86 of the real retail run).
    Tools in the documented form `name(state, /, **arguments)` grade every simulation as tau2 did;
    in the form `name(state, **arguments)` the call cannot be made, and the grade is an error
    naming the fix, never the agent's failed call."""
    results = RESULTS / "retail-gpt-4.1.json"
    positional = LOGGING_TOOLS.replace("(db, /, **kw)", "(state, /, **kw)").replace("db['writes']", "state['writes']")
    write(domain / "tools.py", positional)
    code, rows, by_task = graded(cli, domain, results)
    verdicts = {r["test_id"]: [g["details"]["reward"] for g in reward_graders(r)] for r in rows}
    assert verdicts == {f"tau2-retail-{t}": [s["reward_info"]["reward"] for s in by_task[t]] for t in by_task}

    clashing = write(tmp_path / "clash" / "tools.py", positional.replace("(state, /, **kw)", "(state, **kw)"))
    write(clashing.parent / "db.json", '{"writes": []}')
    code, rows, by_task = graded(cli, clashing.parent, results)
    (grader,) = reward_graders(next(r for r in rows if r["test_id"] == "tau2-retail-86"))
    assert grader["verdict"] == "error"
    assert "argument named 'state'" in grader["error"] and "`def modify_user_address(state, /, ...)`" in grader["error"]
