"""tau-bench reward over the airline example domain (examples/airline): replayed tool calls,
final-state hash, required outputs, the state diff of a wrong booking."""

from __future__ import annotations

import shutil
from pathlib import Path

import convoeval
from convoeval.spec import load_suite, validate_paths

from .conftest import REPO, read_jsonl, write

EXAMPLE = REPO / "examples" / "airline"


def test_reward_one_for_the_right_booking_and_zero_with_a_state_diff_for_a_wrong_one(cli, tmp_path: Path) -> None:
    code, out, err = cli("grade", EXAMPLE / "booking.eval.yaml", "-o", tmp_path / "r.jsonl")
    assert code == 1  # one attempt fails
    right, wrong = read_jsonl(tmp_path / "r.jsonl")
    reward = right["scores"][-1]["graders"][0]
    assert (right["verdict"], reward["details"]["reward"], reward["details"]["actions_replayed"]) == ("pass", 1.0, 2)
    graded = wrong["scores"][-1]["graders"][0]
    assert (wrong["verdict"], wrong["scores"][-1]["score"], graded["details"]["reward"]) == ("fail", 0.0, 0.0)
    diff = graded["details"]["state_diff"]
    assert "$.flights.HAT001.seats: 3 != 2" in diff
    assert "$.flights.HAT003.seats: 4 != 5" in diff
    assert '$.reservations.R101.flight: "HAT003" != "HAT001"' in diff


def suite(tmp_path: Path, assertion: str, transcript: str) -> Path:
    for name in ("backend.json", "tools.py"):
        write(tmp_path / name, (EXAMPLE / name).read_text())
    return write(
        tmp_path / "t.eval.yaml", f"assertions:\n{assertion}\ntests:\n  - id: t\n    transcript:\n{transcript}"
    )


BOOK = """\
      - {role: user, content: book HAT001}
      - role: assistant
        tool_calls: [{id: c1, type: function, function: {name: book_flight, arguments: '{"user_id": "mia_li", "flight": "HAT001", "payment_id": "card_7447"}'}}]
      - {role: tool, tool_call_id: c1, content: ok}
      - {role: assistant, content: "Booked R101"}
"""


def test_goal_state_outputs_and_failures(cli, tmp_path: Path) -> None:
    goal = write(tmp_path / "goal.yaml", "users: {}\n")
    path = suite(
        tmp_path, f"  - {{type: tau-reward, backend: backend.json, tools: tools.py, goal_state: {goal.name}}}", BOOK
    )
    code, out, err = cli("grade", path, "-o", tmp_path / "a.jsonl")
    graded = read_jsonl(tmp_path / "a.jsonl")[0]["scores"][-1]["graders"][0]
    assert graded["details"]["reward"] == 0.0 and any(
        d.startswith("$.flights: ") for d in graded["details"]["state_diff"]
    )

    path = suite(
        tmp_path,
        "  - {type: tau-reward, backend: backend.json, tools: tools.py, required_outputs: [R999],\n"
        "     goal_actions: [{name: book_flight, arguments: {user_id: mia_li, flight: HAT001, "
        "payment_id: card_7447}}]}",
        BOOK,
    )
    cli("grade", path, "-o", tmp_path / "b.jsonl")
    graded = read_jsonl(tmp_path / "b.jsonl")[0]["scores"][-1]["graders"][0]
    assert graded["details"]["state_diff"] == [] and graded["details"]["missing_outputs"] == ["R999"]
    assert graded["score"] == 0.0

    path = suite(
        tmp_path,
        "  - {type: tau-reward, backend: backend.json, tools: tools.py,\n"
        "     goal_actions: [{name: book_flight, arguments: {user_id: mia_li, flight: HAT002, "
        "payment_id: card_7447}}]}",
        BOOK,
    )
    cli("grade", path, "-o", tmp_path / "c.jsonl")
    row = read_jsonl(tmp_path / "c.jsonl")[0]
    graded = row["scores"][-1]["graders"][0]
    assert (
        graded["verdict"] == "error"
        and "goal_actions: book_flight failed: ValueError: flight HAT002 is full" in graded["error"]
    )
    assert row["verdict"] == "error"


TAU = REPO / "tests" / "data" / "tau-bench" / "gpt-4o-airline-sample-trajectories.json"
LOGGING_TOOLS = """\
'''tau-bench airline write actions, recorded in the state instead of changing a real database.'''


def _log(state, name, arguments):
    state["writes"].append({"name": name, "arguments": arguments})


def book_reservation(state, **kw): _log(state, "book_reservation", kw)
def cancel_reservation(state, **kw): _log(state, "cancel_reservation", kw)
def update_reservation_flights(state, **kw): _log(state, "update_reservation_flights", kw)
def update_reservation_passengers(state, **kw): _log(state, "update_reservation_passengers", kw)
def update_reservation_baggages(state, **kw): _log(state, "update_reservation_baggages", kw)
def send_certificate(state, **kw): _log(state, "send_certificate", kw)
"""


def test_tau_bench_import_scenarios_and_recorded_rewards_match_tau_bench(cli, tmp_path: Path) -> None:
    write(tmp_path / "tools.py", LOGGING_TOOLS)  # the import is validated: the domain's files must exist
    write(tmp_path / "backend.json", '{"writes": []}')
    code, out, err = cli("import", "tau-bench", TAU, "-o", tmp_path / "tau.eval.yaml")
    assert code == 0 and "3 test(s) written" in out, err
    suite = load_suite(tmp_path / "tau.eval.yaml")
    first = suite.tests[0]
    assert first.simulated_user.objective.startswith("You are mia_li_3668.")
    assert [a.name for a in first.assertions[0].goal_actions] == ["book_reservation"]
    assert first.assertions[0].required
    assert suite.tests[2].assertions[0].required_outputs == ["23553"]

    code, out, err = cli("import", "tau-bench", TAU, "--recorded", "-o", tmp_path / "recorded.eval.yaml")
    assert code == 0, err
    code, out, err = cli("grade", tmp_path / "recorded.eval.yaml", "-o", tmp_path / "r.jsonl")
    rows = read_jsonl(tmp_path / "r.jsonl")
    assert [len(r["trials"]) for r in rows] == [1, 1, 1]  # one recorded trial of each task
    rewards = [r["scores"][-1]["graders"][0]["details"]["reward"] for r in rows]
    assert rewards == [r["metadata"]["recorded_rewards"][0] for r in rows] == [0.0, 0.0, 0.0]
    assert [r["verdict"] for r in rows] == ["fail", "fail", "fail"]
    details = [r["scores"][-1]["graders"][0]["details"] for r in rows]
    assert details[0]["state_diff"]  # booked twice
    assert details[1]["state_diff"] == [
        '$.writes: [] != [{"name": "cancel_reservation", "arguments": {"reservation_id": "Z7GOZK"}}]'
    ]
    assert details[2]["missing_outputs"] == ["23553"]  # tau-bench: r_outputs 0, "23553" never said


def test_policy_from_a_file_reaches_the_agent_when_asked_and_the_judge(fake_openai, tmp_path: Path) -> None:
    write(tmp_path / "policy.md", "Never rebook a basic economy ticket.\n")
    path = write(
        tmp_path / "p.eval.yaml",
        """\
policy: {text: file://policy.md, system_prompt: true}
tests:
  - id: t
    mode: conversation
    turns:
      - input: rebook me
        assertions: [{type: policy-compliance}]
  - id: inline
    policy: Be kind.
    mode: conversation
    turns: [{input: hi}]
""",
    )
    report = convoeval.run(path, target="openai:m", judge="openai:j", store=False, cache=False)
    assert [r.verdict for r in report.results] == ["pass", "pass"]
    first = fake_openai.target_requests()
    by_input = {r["messages"][-1]["content"]: r["messages"] for r in first}
    assert by_input["rebook me"][0] == {"role": "system", "content": "Never rebook a basic economy ticket."}
    assert by_input["hi"][0]["role"] == "user"  # an inline policy without system_prompt stays with the judges
    assert "Never rebook a basic economy ticket." in fake_openai.judge_requests()[0]["messages"][-1]["content"]
    bad = write(tmp_path / "bad.eval.yaml", "policy: file://missing.md\ntests:\n  - {id: t, input: hi}\n")
    problems = [str(p) for p in validate_paths([bad])]
    assert problems == [f"{bad}:1: policy: policy file not found: {tmp_path / 'missing.md'}"]


def test_live_airline_agents_each_trial_with_its_own_backend(cli, tmp_path: Path) -> None:
    agent = EXAMPLE / "agent.py"
    targets = write(
        tmp_path / "targets.yaml",
        f"""\
targets:
  - {{name: careful, provider: python, callable: "{agent}:AirlineAgent"}}
  - {{name: careless, provider: python, callable: "{agent}:CarelessAgent"}}
""",
    )
    code, out, err = cli(
        "run",
        EXAMPLE / "live.eval.yaml",
        "--targets",
        targets,
        "--target",
        "careful",
        "--target",
        "careless",
        "--trials",
        "2",
        "-o",
        tmp_path / "r.jsonl",
    )
    assert code == 1, out + err
    careful, careless = read_jsonl(tmp_path / "r.jsonl")
    for trial in careful["trials"]:  # a shared backend would make the second booking R102
        reward = trial["scores"][-1]["graders"][0]["details"]
        assert reward["reward"] == 1.0 and reward["state_diff"] == []
    assert careful["pass_hat_k"] == {"1": 1.0, "2": 1.0}
    details = careless["trials"][0]["scores"][-1]["graders"][0]["details"]
    assert details["reward"] == 0.0
    assert "$.flights.HAT004.seats: 1 != 2" in details["state_diff"]
    assert careless["pass_hat_k"]["2"] == 0.0


def test_tool_results_are_the_backend_result_the_judge_sees(cli, fake_openai, tmp_path: Path) -> None:
    agent = EXAMPLE / "agent.py"
    targets = write(
        tmp_path / "targets.yaml",
        f'targets:\n  - {{name: careful, provider: python, callable: "{agent}:AirlineAgent"}}\n',
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        (EXAMPLE / "live.eval.yaml")
        .read_text()
        .replace("tests:\n", "turn_assertions:\n  - type: backend-consistency\ntests:\n"),
    )
    for name in ("backend.json", "tools.py"):  # files a suite names lie in its folder
        shutil.copy(EXAMPLE / name, tmp_path / name)
    code, out, err = cli("run", suite, "--targets", targets, "--target", "careful", "--judge", "openai:j")
    assert code == 0, out + err
    prompts = [r["messages"][-1]["content"] for r in fake_openai.judge_requests()]
    assert len(prompts) == 2
    assert any('"reservation_id": "R101"' in p and "book_flight" in p for p in prompts)


def test_an_agent_call_a_tool_cannot_take_is_a_domain_error_not_the_agent_s_failed_call(cli, tmp_path: Path) -> None:
    """The agent changes a user's address (an argument named `state`, as in tau-bench's retail
    domain) though the task wants no change: tau-bench gives 0. A tool `name(state, **arguments)`
    cannot take the call; read as the agent's failed call, the state would stay as the goal and
    the reward be 1: it is a grade error naming the fix. With the state positional-only, 0."""
    transcript = """\
      - {role: user, content: I live in DC now}
      - role: assistant
        tool_calls: [{id: c1, type: function, function: {name: modify_user_address, arguments: '{"user_id": "u1", "state": "DC"}'}}]
      - {role: tool, tool_call_id: c1, content: ok}
      - {role: assistant, content: Done.}
"""
    assertion = "  - {type: tau-reward, backend: backend.json, tools: tools.py, goal_actions: []}"
    write(tmp_path / "backend.json", '{"users": {"u1": {"state": "NY"}}}')
    write(tmp_path / "t.eval.yaml", f"assertions:\n{assertion}\ntests:\n  - id: t\n    transcript:\n{transcript}")
    tool = "def modify_user_address(state{slash}, **kw):\n    state['users'][kw['user_id']]['state'] = kw['state']\n"
    write(tmp_path / "tools.py", tool.format(slash=""))
    code, out, err = cli("grade", tmp_path / "t.eval.yaml", "-o", tmp_path / "r.jsonl")
    (row,) = read_jsonl(tmp_path / "r.jsonl")
    grader = row["scores"][-1]["graders"][0]
    assert row["verdict"] == "error" and "`def modify_user_address(state, /, ...)`" in grader["error"], grader

    other = tmp_path / "positional"
    for name in ("backend.json", "t.eval.yaml"):
        write(other / name, (tmp_path / name).read_text())
    write(other / "tools.py", tool.format(slash=", /"))
    code, out, err = cli("grade", other / "t.eval.yaml", "-o", other / "r.jsonl")
    (row,) = read_jsonl(other / "r.jsonl")
    grader = row["scores"][-1]["graders"][0]
    assert (row["verdict"], grader["details"]["reward"]) == ("fail", 0.0)
    assert grader["details"]["state_diff"] == ['$.users.u1.state: "DC" != "NY"']
