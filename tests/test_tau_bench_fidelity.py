"""tau-bench's own recorded trajectories give tau-bench's verdicts: the trials of a task are the
trials of one test, each trial passes exactly when tau-bench's reward is 1, and pass^k is
tau-bench's. The replay of `tau-reward` runs off the event loop: other tests' latencies stay
the server's.

The trajectories are real (tests/data/tau-bench/gpt-4o-airline-tasks-1-21.json, see SOURCE.txt).
tau-bench's airline database (3 MB) and tool code are not copied here: the domain below records
the write calls (the only calls that change tau-bench's database) in the state, so the reward
is 1 exactly when the agent made the task's write calls with its arguments and said its outputs.
For these six trajectories that is tau-bench's recorded reward; benchmarks/tau_reward.py grades
all 200 with tau-bench's own tools and database.
"""

from __future__ import annotations

import json
from math import comb
from pathlib import Path

import pytest

import convoeval
from convoeval.spec import load_suite, validate_paths

from .conftest import REPO, read_jsonl, write

DATA = REPO / "tests" / "data" / "tau-bench"
TRIALS = DATA / "gpt-4o-airline-tasks-1-21.json"
WRITES = ("book_reservation", "cancel_reservation", "update_reservation_flights")
WRITES += ("update_reservation_passengers", "update_reservation_baggages", "send_certificate")
LOGGING_TOOLS = "\n".join(
    [
        "'''tau-bench airline write actions, recorded in the state.'''",
        *(f"def {name}(state, **kw):\n    state['writes'].append({{'name': {name!r}, **kw}})\n" for name in WRITES),
    ]
)


def tau_bench_pass_hat_k(rewards: list[float], k: int) -> float:
    """tau-bench's display_metrics: C(c, k) / C(n, k) for a task with c successes in n trials."""
    n, c = len(rewards), sum(r == 1 for r in rewards)
    return comb(c, k) / comb(n, k)


@pytest.fixture
def domain(tmp_path: Path) -> Path:
    write(tmp_path / "tools.py", LOGGING_TOOLS)
    write(tmp_path / "backend.json", '{"writes": []}')
    return tmp_path


def test_recorded_trials_of_a_task_are_one_test_and_each_verdict_is_tau_bench_reward(cli, domain: Path) -> None:
    records = json.loads(TRIALS.read_text())
    code, out, err = cli("import", "tau-bench", TRIALS, "--recorded", "-o", domain / "r.eval.yaml")
    assert code == 0 and "2 test(s) written" in out, err
    suite = load_suite(domain / "r.eval.yaml")
    assert [t.id for t in suite.tests] == ["tau-1", "tau-21"]
    # task 21 has records of trials 0 and 1 only: tau-bench's display_metrics divides by the file's
    # 4 trial numbers, so trials 2 and 3 are trials of it that failed (an error: no record)
    assert [len(t.transcripts or []) for t in suite.tests] == [4, 4]
    assert suite.tests[1].metadata["missing_trials"] == [2, 3] and "tau-21 trial 2, tau-21 trial 3" in err
    assert all(t.assertions[0].type == "tau-reward" and t.assertions[0].required for t in suite.tests)
    assert "required: true" in (domain / "r.eval.yaml").read_text()

    code, out, err = cli("grade", domain / "r.eval.yaml", "-o", domain / "r.jsonl")
    rows = read_jsonl(domain / "r.jsonl")
    by_task: dict[int, list[float]] = {}
    for record in records:
        by_task.setdefault(record["task_id"], []).append(record["reward"])
    assert by_task == {1: [0.0, 1.0, 0.0, 0.0], 21: [0.0, 1.0]}
    for row in rows:
        rewards = by_task[row["metadata"]["task_id"]]
        assert row["metadata"]["recorded_rewards"] == rewards + [None] * (4 - len(rewards))
        assert [t["execution_status"] for t in row["trials"][len(rewards) :]] == ["execution_error"] * (
            4 - len(rewards)
        )
        row["trials"] = row["trials"][: len(rewards)]
        graded = [t["scores"][-1]["graders"][0] for t in row["trials"]]
        assert [g["type"] for g in graded] == ["tau-reward"] * len(rewards)
        assert [g["details"]["reward"] for g in graded] == rewards
        assert [g["verdict"] for g in graded] == ["pass" if r == 1 else "fail" for r in rewards]
        assert all(g["required"] for g in graded)
        assert [t["verdict"] for t in row["trials"]] == ["pass" if r == 1 else "fail" for r in rewards]
        assert [t["score"] for t in row["trials"]] == rewards  # turns without checks are not scored
        assert [bool(t["failed_required"]) for t in row["trials"]] == [r == 0 for r in rewards]
        if len(rewards) == 4:
            assert row["score"] == pytest.approx(sum(rewards) / len(rewards))  # tau-bench's average reward
        for k in range(1, 5):
            assert row["pass_hat_k"][str(k)] == pytest.approx(
                tau_bench_pass_hat_k(rewards + [0.0] * (4 - len(rewards)), k)
            )
        assert row["verdict"] == "fail"  # not every trial has reward 1
    expected = display_metrics_pass_hat_k(records)
    assert "pass^k over 2 test(s)" in out and ", ".join(f"k={k} {v:.3f}" for k, v in expected.items()) in out
    failed_long = [
        sum(e["type"] == "turn" for e in t["scores"])
        for row in rows
        for t, r in zip(row["trials"], by_task[row["metadata"]["task_id"]], strict=True)
        if r == 0
    ]
    assert len(failed_long) == 4 and min(failed_long) > 1  # reward-0 trials of several turns
    assert code == 1  # a failing test fails the command
    assert "pass^k" in out and "tau-bench" not in err
    code, out, err = cli("report", domain / "r.jsonl", "--by", "task_id", "--markdown", domain / "by.md")
    header = (domain / "by.md").read_text().split("### Results by task_id")[1].split("\n\n")[1].splitlines()[0]
    assert header == "| task_id | tests | pass | fail | error | skip | mean score | pass^1 | pass^2 | pass^3 | pass^4 |"


SLOW_TOOLS = """\
import time


def book(state, **kw):
    time.sleep(0.3)  # a slow backend: replayed in a worker thread, it holds no one up
    state.setdefault("bookings", []).append(kw)
"""


def _recorded(n: int) -> str:
    call = '{id: c1, type: function, function: {name: book, arguments: \'{"flight": "F1"}\'}}'
    return f"""\
  - id: recorded-{n}
    transcript:
      - {{role: user, content: book F1}}
      - {{role: assistant, tool_calls: [{call}]}}
      - {{role: tool, tool_call_id: c1, content: ok}}
      - {{role: assistant, content: Booked F1.}}
    assertions:
      - {{type: tau-reward, backend: backend.json, tools: tools.py, goal_actions: [{{name: book, arguments: {{flight: F1}}}}]}}
"""


def test_tau_reward_replays_leave_other_tests_latencies_alone(fake_openai, tmp_path: Path) -> None:
    """Four recorded tau-bench-style tests whose replays take 0.6 s each beside a live test
    whose every turn must take under 2 s: before the replay left the event loop, the live
    turns waited for the replays (seconds)."""
    write(tmp_path / "tools.py", SLOW_TOOLS)
    write(tmp_path / "backend.json", "{}")
    live = "\n".join(
        f"      - {{input: question {i}, assertions: [{{type: latency, max_ms: 2000}}]}}" for i in range(3)
    )
    path = write(
        tmp_path / "mixed.eval.yaml",
        "tests:\n"
        + "".join(_recorded(n) for n in range(4))
        + f"  - id: live\n    mode: conversation\n    turns:\n{live}\n",
    )
    assert validate_paths([path]) == []
    report = convoeval.run(path, target="openai:m", store=False, cache=False, concurrency=8)
    verdicts = {r.test_id: r.verdict for r in report.results}
    assert verdicts == {
        "recorded-0": "pass",
        "recorded-1": "pass",
        "recorded-2": "pass",
        "recorded-3": "pass",
        "live": "pass",
    }
    live_result = next(r for r in report.results if r.test_id == "live")
    latencies = [e.latency_ms for e in live_result.scores if e.type == "turn"]
    assert len(latencies) == 3 and max(latencies) < 2000, latencies


def test_validate_names_a_missing_tools_or_backend_file_with_its_line(cli, tmp_path: Path) -> None:
    code, out, err = cli(
        "import", "tau-bench", DATA / "gpt-4o-airline-sample-trajectories.json", "-o", tmp_path / "t.eval.yaml"
    )
    assert code == 2
    text = (tmp_path / "t.eval.yaml").read_text().splitlines()
    suite_line = text.index("tools: tools.py") + 1  # the domain the live agent acts on
    tools_line = next(i for i, line in enumerate(text, 1) if line.startswith(" ") and line.strip() == "tools: tools.py")
    assert f"{tmp_path / 't.eval.yaml'}:{suite_line}: tools: tools.py: no such file" in err
    assert f"{tmp_path / 't.eval.yaml'}:{tools_line}: tests[0].assertions[0].tools: tools.py: no such file" in err
    assert "backend: backend.json: no such file" in err
    suite = write(tmp_path / "s.eval.yaml", "tools: agent_tools.py\nbackend: db.json\ntests:\n  - {id: t, input: hi}\n")
    problems = [str(p) for p in validate_paths([suite])]
    assert problems == [
        f"{suite}:1: tools: agent_tools.py: no such file (the domain's tool functions)",
        f"{suite}:2: backend: db.json: no such file (the domain's initial backend)",
    ]
    write(tmp_path / "tools.py", "def f(state):\n    return 1\n")
    write(tmp_path / "backend.json", "{}")
    assert validate_paths([tmp_path / "t.eval.yaml"]) == []


def test_transcripts_are_checked_like_a_transcript(tmp_path: Path) -> None:
    path = write(
        tmp_path / "t.eval.yaml",
        """\
tests:
  - id: two
    transcripts:
      - [{role: user, content: hi}, {role: assistant, content: hello}]
      - [{role: user, content: hi}]
  - id: both
    transcript: [{role: user, content: hi}, {role: assistant, content: hello}]
    transcripts: [[{role: user, content: hi}, {role: assistant, content: hello}]]
""",
    )
    problems = [str(p) for p in validate_paths([path])]
    assert problems == [
        f"{path}:5: tests[0].transcripts[1]: a transcript needs at least one user and one assistant message",
        f"{path}:8: tests[1].transcripts: give `transcript` (one conversation) or `transcripts` (one per trial)",
    ]


UNFINISHED = DATA / "gpt-4o-airline-unfinished.json"
READS = ("get_user_details", "get_reservation_details")


def test_an_episode_tau_bench_never_ended_has_reward_0_whatever_its_final_state(cli, domain: Path) -> None:
    """Both trajectories stopped at tau-bench's step limit (no ###STOP###, no transfer to a human):
    tau-bench recorded reward 0 without computing one. Task 2's five flight changes reach the goal
    state, so there only the end of the episode tells (with tau-bench's own database, task 46's
    do too: benchmarks/tau_reward.py)."""
    write(domain / "tools.py", LOGGING_TOOLS + "".join(f"\ndef {n}(state, **kw):\n    return 'ok'\n" for n in READS))
    code, out, err = cli("import", "tau-bench", UNFINISHED, "--recorded", "-o", domain / "u.eval.yaml")
    assert code == 0, err
    code, out, err = cli("grade", domain / "u.eval.yaml", "-o", domain / "u.jsonl")
    graded = {row["test_id"]: row["trials"][0]["scores"][-1]["graders"][0] for row in read_jsonl(domain / "u.jsonl")}
    assert sorted(graded) == ["tau-2", "tau-46"]
    for grader in graded.values():
        assert grader["details"]["reward"] == 0.0 and grader["verdict"] == "fail"
        assert grader["details"]["episode_ended"] is False
        ended = grader["assertions"][0]
        assert not ended["passed"] and "###STOP###" in ended["text"] and "transfer_to_human_agents" in ended["text"]
    assert graded["tau-2"]["details"]["state_diff"] == [] and graded["tau-2"]["assertions"][1]["passed"]
    assert code == 1


def crashed(task_id: int, trial: int) -> dict:
    """What tau-bench's run.py records when `agent.solve` raises (its `except Exception as e:`)."""
    traceback = 'Traceback (most recent call last):\n  File "tau_bench/run.py", line 73\nlitellm.RateLimitError: 429'
    info = {"error": "litellm.RateLimitError: 429", "traceback": traceback}
    return {"task_id": task_id, "reward": 0.0, "info": info, "traj": [], "trial": trial}


def display_metrics_pass_hat_k(records: list[dict]) -> dict[int, float]:
    """tau-bench's display_metrics (tau_bench/run.py), transcribed: a record counts 1 in its
    task's c when its reward is 1; pass^k = mean over tasks of C(c, k) / C(num_trials, k)."""
    num_trials = len({r["trial"] for r in records})
    c: dict[int, int] = {}
    for r in records:
        c[r["task_id"]] = c.get(r["task_id"], 0) + (1 - 1e-6 <= r["reward"] <= 1 + 1e-6)
    return {k: sum(comb(n, k) / comb(num_trials, k) for n in c.values()) / len(c) for k in range(1, num_trials + 1)}


def test_a_run_that_crashed_is_a_trial_that_failed_with_its_error_and_pass_hat_k_is_tau_bench(
    cli, domain: Path
) -> None:
    """Task 1's four real trials with trial 2 replaced by tau-bench's record of a crashed run: the
    file imports, the crash is that trial's execution error (never dropped), pass^k is tau-bench's."""
    records = [r for r in json.loads(TRIALS.read_text()) if r["task_id"] == 1]
    records[2] = crashed(1, 2)
    runs = write(domain / "runs.json", json.dumps(records))
    code, out, err = cli("import", "tau-bench", runs, "--recorded", "-o", domain / "r.eval.yaml")
    assert code == 0, err
    assert "item 2 (task 1, trial 2: litellm.RateLimitError: 429)" in err and "reward 0" in err
    code, out, err = cli("grade", domain / "r.eval.yaml", "-o", domain / "r.jsonl")
    (row,) = read_jsonl(domain / "r.jsonl")
    assert [t["verdict"] for t in row["trials"]] == ["fail", "pass", "error", "fail"]
    assert row["trials"][2]["execution_status"] == "execution_error"
    assert row["trials"][2]["error"] == "the recorded run failed: litellm.RateLimitError: 429"
    assert row["metadata"]["crashed_trials"] == [2] and row["metadata"]["recorded_rewards"] == [0.0, 1.0, 0.0, 0.0]
    expected = display_metrics_pass_hat_k(records)
    assert expected == {1: 0.25, 2: 0.0, 3: 0.0, 4: 0.0}  # dropping the crash would give 1/3 at k=1
    assert {int(k): v for k, v in row["pass_hat_k"].items()} == pytest.approx(expected)
    assert "k=1 0.250, k=2 0.000, k=3 0.000, k=4 0.000" in out

    code, out, err = cli("import", "tau-bench", runs, "-o", domain / "live.eval.yaml")  # its task from the others
    assert code == 0 and [t.id for t in load_suite(domain / "live.eval.yaml").tests] == ["tau-1"], err


def test_a_task_whose_only_run_crashed_is_a_test_whose_trial_is_an_error(cli, domain: Path) -> None:
    records = [*json.loads(TRIALS.read_text())[:1], crashed(7, 0)]
    runs = write(domain / "runs.json", json.dumps(records))
    code, out, err = cli("import", "tau-bench", runs, "--recorded", "-o", domain / "r.eval.yaml")
    assert code == 0, err
    code, out, err = cli("grade", domain / "r.eval.yaml", "-o", domain / "r.jsonl")
    rows = {row["test_id"]: row for row in read_jsonl(domain / "r.jsonl")}
    assert rows["tau-7"]["execution_status"] == "execution_error" and rows["tau-7"]["pass_hat_k"] == {"1": 0.0}
    assert "litellm.RateLimitError: 429" in rows["tau-7"]["error"]
    assert rows["tau-1"]["trials"][0]["verdict"] == "fail"  # its recorded reward
    code, out, err = cli("import", "tau-bench", runs, "-o", domain / "live.eval.yaml")  # no task to run live
    assert code == 0 and "left out, in no other record: tau-7" in err, err
    assert [t.id for t in load_suite(domain / "live.eval.yaml").tests] == ["tau-1"]


def _stopped(said: str) -> list[dict]:
    """Task 2 trial 1 (real; its five flight changes reach the goal state, and it says the output
    23553 only beside a tool call), ended as tau-bench ends an episode: a reply, the user's stop."""
    (record,) = [r for r in json.loads(UNFINISHED.read_text()) if r["task_id"] == 2]
    beside = [m["content"] for m in record["traj"] if m.get("tool_calls") and m.get("content")]
    assert any("23553" in text.replace(",", "") for text in beside)
    record["traj"] += [{"role": "assistant", "content": said}, {"role": "user", "content": "Thanks! ###STOP###"}]
    return [record]


@pytest.mark.parametrize(("said", "reward"), [("All five flights are changed.", 0.0), ("Changed: 23,553.", 1.0)])
def test_an_output_said_only_beside_a_tool_call_was_never_said(cli, domain: Path, said: str, reward: float) -> None:
    """tau-bench makes a message with a tool call that call alone (`message_to_action`): its text
    never reaches the user, and `calculate_reward` looks for outputs in replies only. tau-bench's
    own Env gives these two episodes 0 and 1."""
    write(domain / "tools.py", LOGGING_TOOLS + "".join(f"\ndef {n}(state, **kw):\n    return 'ok'\n" for n in READS))
    runs = write(domain / "runs.json", json.dumps(_stopped(said)))
    code, out, err = cli("import", "tau-bench", runs, "--recorded", "-o", domain / "s.eval.yaml")
    assert code == 0, err
    cli("grade", domain / "s.eval.yaml", "-o", domain / "s.jsonl")
    (row,) = read_jsonl(domain / "s.jsonl")
    grader = row["trials"][0]["scores"][-1]["graders"][0]
    assert grader["details"]["state_diff"] == [] and grader["details"]["episode_ended"] is True
    assert grader["details"]["reward"] == reward
    assert grader["details"]["missing_outputs"] == ([] if reward else ["23553"])


def as_react(record: dict) -> dict:
    """A tool-calling record as tau-bench's ReAct agent (agents/chat_react_agent.py) records the
    same steps: its system prompt with the step format, each step a text ending in `Action:` and
    the JSON of the action, a tool's result the next user message, `API output: ...`."""
    system = 'policy\n#Available tools\n[]\n# Instruction\nAt each step ...\nThought:\n<...>\nAction:\n{"name": '
    system += '<The name of the action>, "arguments": <The arguments to the action in json format>}\n'
    traj: list[dict] = [{"role": "system", "content": system}]
    for m in record["traj"][1:]:
        if m["role"] == "assistant" and m.get("tool_calls"):
            function = m["tool_calls"][0]["function"]
            action = {"name": function["name"], "arguments": json.loads(function["arguments"])}
        elif m["role"] == "assistant":
            action = {"name": "respond", "arguments": {"content": m["content"]}}
        else:
            prefix = "API output: " if m["role"] == "tool" else ""
            traj.append({"role": "user", "content": prefix + m["content"]})
            continue
        thought = "Thought:\nThe reservation id is ABC123 and the total is 23553.\n"  # said in no reply
        traj.append({"role": "assistant", "content": f"{thought}Action:\n{json.dumps(action)}", "tool_calls": None})
    return {**record, "traj": traj}


def test_react_and_act_trajectories_are_read_as_the_actions_tau_bench_parsed(cli, domain: Path) -> None:
    """Task 1's real trials (rewards 0, 1, 0, 0: a cancellation) recorded as the ReAct agent
    records them get the same rewards: the calls are replayed. Only a `respond` action's content
    is a reply: task 2's thoughts say its output 23553, its replies do not (reward 0)."""
    write(domain / "tools.py", LOGGING_TOOLS + "".join(f"\ndef {n}(state, **kw):\n    return 'ok'\n" for n in READS))
    plain = [r for r in json.loads(TRIALS.read_text()) if r["task_id"] == 1]
    records = [*map(as_react, plain), as_react(_stopped("All five flights are changed.")[0])]
    runs = write(domain / "runs.json", json.dumps(records))
    code, out, err = cli("import", "tau-bench", runs, "--recorded", "-o", domain / "r.eval.yaml")
    assert code == 0, err
    cli("grade", domain / "r.eval.yaml", "-o", domain / "r.jsonl")
    rows = {row["test_id"]: row for row in read_jsonl(domain / "r.jsonl")}
    graders = [t["scores"][-1]["graders"][0]["details"] for t in rows["tau-1"]["trials"]]
    calls = [sum(m["role"] == "tool" for m in r["traj"]) for r in plain]
    assert [g["actions_replayed"] for g in graders] == calls and calls[1] > 0
    assert [g["reward"] for g in graders] == [r["reward"] for r in plain] == [0.0, 1.0, 0.0, 0.0]
    (task2,) = (t["scores"][-1]["graders"][0]["details"] for t in rows["tau-2"]["trials"] if t["scores"])
    assert task2["state_diff"] == [] and task2["missing_outputs"] == ["23553"] and task2["episode_ended"]


ADDRESS_TOOL = """\
def modify_pending_order_address(data, /, order_id, address1, zip):
    data["orders"][order_id].update(address1=address1, zip=zip)
"""


def _order_record(trial: int, calls: list[dict[str, object]], reward: float) -> dict[str, object]:
    """A tau-bench result whose task's goal action passes `province`, which the tool does not take
    (task 34 of the retail tasks TD-Eval's runs recorded)."""
    goal = {"order_id": "#W1", "address1": "224 Elm Street", "zip": "10108", "province": "NY"}
    traj: list[dict[str, object]] = [
        {"role": "system", "content": "policy"},
        {"role": "user", "content": "Change the address of #W1."},
    ]
    for n, arguments in enumerate(calls):
        call = {"id": f"c{n}", "type": "function"}
        call["function"] = {"name": "modify_pending_order_address", "arguments": json.dumps(arguments)}
        traj += [
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": f"c{n}", "name": "modify_pending_order_address", "content": "ok"},
        ]
    traj += [{"role": "assistant", "content": "Done."}, {"role": "user", "content": "Thanks ###STOP###"}]
    task = {"user_id": "noah", "instruction": "Change the address.", "outputs": []}
    task["actions"] = [{"name": "modify_pending_order_address", "kwargs": goal}]
    return {"task_id": 34, "trial": trial, "reward": reward, "info": {"task": task}, "traj": traj}


def test_a_goal_action_whose_tool_raises_is_skipped_as_tau_bench_env_skips_it(cli, tmp_path: Path) -> None:
    """tau-bench's Env.step turns a tool's exception into an "Error: ..." observation, and its
    calculate_reward replays the goal actions through step: the failing goal action changes
    nothing and the reward is computed (tau-bench 59a200c on TD-Eval's retail task 34 gives 0 to
    an agent that changed the address, 1 to one that changed nothing). It was a grader error."""
    write(tmp_path / "tools.py", ADDRESS_TOOL)
    write(tmp_path / "backend.json", '{"orders": {"#W1": {"address1": "1 Old Road", "zip": "10001"}}}')
    moved = {"order_id": "#W1", "address1": "224 Elm Street", "zip": "10108"}
    records = [_order_record(0, [moved], 0.0), _order_record(1, [], 1.0)]
    write(tmp_path / "runs.json", json.dumps(records))
    code, out, err = cli("import", "tau-bench", tmp_path / "runs.json", "--recorded", "-o", tmp_path / "s.eval.yaml")
    assert code == 0, err
    code, out, err = cli("grade", tmp_path / "s.eval.yaml", "-o", tmp_path / "r.jsonl")
    [row] = read_jsonl(tmp_path / "r.jsonl")
    graded = [t["scores"][-1]["graders"][0] for t in row["trials"]]
    assert [g["details"]["reward"] for g in graded] == [0.0, 1.0], graded
    assert [t["verdict"] for t in row["trials"]] == ["fail", "pass"]
    assert all("province" in g["details"]["goal_actions_failed"][0] for g in graded)
