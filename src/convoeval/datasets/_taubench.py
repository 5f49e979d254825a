"""tau-bench tasks as simulated-user scenarios (or their recorded trajectories as transcripts).

Input: tau-bench results (`[{task_id, trial, reward, info: {task: {user_id, instruction,
actions, outputs}}, traj}]`) or a plain list of tasks (`[{user_id, instruction, actions,
outputs}]`). tau-bench's domains are code, so the domain's tools and initial backend come from
files the user names (`tools`, `backend`; relative to the written suite).

Each task becomes one test whose `tau-reward` assertion (`required: true`: the reward decides)
has the task's actions as `goal_actions` and its `outputs` as `required_outputs`; the suite's
threshold is 1, so a trial passes exactly when its reward is 1, as in tau-bench:
- by default a scenario: the instruction is the simulated user's objective;
- with `recorded=True`, the recorded trajectories (`traj`, OpenAI messages) of a task are the
  trials of its test (`transcripts:`, one per trial, in the file's order), their recorded
  rewards kept in `metadata.recorded_rewards`: re-graded without a model, the test's pass^k is
  tau-bench's pass^k for that task.

tau2-bench's `tasks.json` is read by `_tau2` (see there).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ._common import read_json
from ._tau2 import import_tau2_tasks, is_tau2_tasks

MAX_TURNS = 30


def import_tau_bench(
    source: Path,
    *,
    tools: str = "tools.py",
    backend: str | None = None,
    recorded: bool = False,
    policy: Path | None = None,
) -> dict[str, Any]:
    """The tau-bench suite of `source` (results or tasks JSON; tau2-bench's tasks.json too).

    `backend` defaults to backend.json (tau-bench) or db.json (tau2-bench, as it ships);
    `policy` is for tau2-bench (default: policy.md beside `source`).
    """
    data = read_json(source)
    if is_tau2_tasks(data):
        if recorded:
            raise DatasetError(
                f"{source}:1: --recorded: a tau2-bench tasks file holds tasks, not recorded trajectories"
            )
        return import_tau2_tasks(source, data, tools=tools, backend=backend or "db.json", policy=policy)
    backend = backend or "backend.json"
    if not isinstance(data, list) or not data:
        raise DatasetError(f"{source}:1: expected a JSON list of tau-bench results or tasks, or tau2-bench tasks")
    tests: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(data):
        task = item.get("info", {}).get("task") if isinstance(item, dict) and "info" in item else item
        if (
            not isinstance(task, dict)
            or not isinstance(task.get("instruction"), str)
            or not isinstance(task.get("actions"), list)
        ):
            raise DatasetError(f"{source}:1: item {index}: expected a task with instruction and actions")
        task_id = item.get("task_id", index) if "info" in item else index
        test_id = f"tau-{task_id}"
        if recorded:
            if not isinstance(item.get("traj"), list):
                raise DatasetError(f"{source}:1: item {index}: recorded=True needs tau-bench results with `traj`")
            test = tests.setdefault(test_id, _test(test_id, task, task_id, tools, backend, None))
            test["transcripts"].append([_message(m) for m in item["traj"]])
            test["metadata"]["trials"].append(item.get("trial", len(test["metadata"]["trials"])))
            test["metadata"]["recorded_rewards"].append(item.get("reward"))
            if isinstance(item.get("info"), dict) and item["info"].get("reward_info") is None:
                # tau-bench never finished this episode (step limit or an error) and recorded 0 without a reward
                test["metadata"].setdefault("unfinished_trials", []).append(test["metadata"]["trials"][-1])
        elif test_id not in tests:  # one scenario per task, however many trials were recorded
            tests[test_id] = _test(test_id, task, task_id, tools, backend, _user(task))
    return {
        "name": f"tau-bench-{source.stem}",
        "description": "tau-bench tasks: reward 1 when the final backend state and the required outputs match; "
        "a trial passes exactly when its reward is 1",
        "metadata": {"source": source.name, "imported_by": "convoeval import tau-bench", "licence": "MIT (tau-bench)"},
        "execution": {"threshold": 1.0},
        "tests": list(tests.values()),
    }


def _test(
    test_id: str, task: dict[str, Any], task_id: Any, tools: str, backend: str, user: dict[str, Any] | None
) -> dict[str, Any]:
    """One task's test: its simulated user (a scenario) or, without one, its recorded trials."""
    reward = {
        "type": "tau-reward",
        "backend": backend,
        "tools": tools,
        "goal_actions": [
            {"name": a["name"], "arguments": a.get("kwargs") or a.get("arguments") or {}} for a in task["actions"]
        ],
        "required_outputs": [str(o) for o in task.get("outputs") or []],
        "required": True,
    }
    if user is not None:
        return {"id": test_id, "simulated_user": user, "assertions": [reward], "metadata": {"task_id": task_id}}
    return {
        "id": test_id,
        "transcripts": [],
        "assertions": [reward],
        "metadata": {"task_id": task_id, "trials": [], "recorded_rewards": []},
    }


def _user(task: dict[str, Any]) -> dict[str, Any]:
    return {
        "persona": f"the customer with user id {task.get('user_id', 'unknown')}",
        "objective": task["instruction"],
        "max_turns": MAX_TURNS,
    }


def _message(raw: dict[str, Any]) -> dict[str, Any]:
    message = {"role": raw.get("role"), "content": raw.get("content")}
    for key in ("tool_calls", "tool_call_id", "name"):
        if raw.get(key):
            message[key] = raw[key]
    return message
