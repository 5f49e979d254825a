"""tau-bench tasks as simulated-user scenarios (or their recorded trajectories as transcripts).

Input: tau-bench results (`[{task_id, trial, reward, info: {task: {user_id, instruction,
actions, outputs}}, traj}]`) or a plain list of tasks (`[{user_id, instruction, actions,
outputs}]`). tau-bench's domains are code, so the domain's tools and initial backend come from
files the user names (`tools`, `backend`; relative to the written suite).

Each task becomes a test whose `tau-reward` assertion has the task's actions as `goal_actions`
and its `outputs` as `required_outputs`:
- by default a scenario: the instruction is the simulated user's objective;
- with `recorded=True`, each recorded trajectory (`traj`, OpenAI messages) is a `transcript:`
  test, its recorded reward kept in `metadata.recorded_reward`, to re-grade without a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ._common import read_json

MAX_TURNS = 30


def import_tau_bench(
    source: Path, *, tools: str = "tools.py", backend: str = "backend.json", recorded: bool = False
) -> dict[str, Any]:
    """The tau-bench suite of `source` (results or tasks JSON)."""
    data = read_json(source)
    if not isinstance(data, list) or not data:
        raise DatasetError(f"{source}:1: expected a JSON list of tau-bench results or tasks")
    tests: list[dict[str, Any]] = []
    seen: set[str] = set()
    for index, item in enumerate(data):
        task = item.get("info", {}).get("task") if isinstance(item, dict) and "info" in item else item
        if (
            not isinstance(task, dict)
            or not isinstance(task.get("instruction"), str)
            or not isinstance(task.get("actions"), list)
        ):
            raise DatasetError(f"{source}:1: item {index}: expected a task with instruction and actions")
        task_id = item.get("task_id", index) if "info" in item else index
        reward = {
            "type": "tau-reward",
            "backend": backend,
            "tools": tools,
            "goal_actions": [
                {"name": a["name"], "arguments": a.get("kwargs") or a.get("arguments") or {}} for a in task["actions"]
            ],
            "required_outputs": [str(o) for o in task.get("outputs") or []],
        }
        if recorded:
            if not isinstance(item.get("traj"), list):
                raise DatasetError(f"{source}:1: item {index}: recorded=True needs tau-bench results with `traj`")
            test_id = f"tau-{task_id}-trial-{item.get('trial', 0)}"
            test: dict[str, Any] = {
                "id": test_id,
                "transcript": [_message(m) for m in item["traj"]],
                "metadata": {"task_id": task_id, "recorded_reward": item.get("reward")},
            }
        else:
            test_id = f"tau-{task_id}"
            if test_id in seen:  # one scenario per task, however many trials were recorded
                continue
            test = {
                "id": test_id,
                "simulated_user": {
                    "persona": f"the customer with user id {task.get('user_id', 'unknown')}",
                    "objective": task["instruction"],
                    "max_turns": MAX_TURNS,
                },
                "metadata": {"task_id": task_id},
            }
        seen.add(test_id)
        test["assertions"] = [reward]
        tests.append(test)
    return {
        "name": f"tau-bench-{source.stem}",
        "description": "tau-bench tasks: reward 1 when the final backend state and the required outputs match",
        "metadata": {"source": source.name, "imported_by": "convoeval import tau-bench", "licence": "MIT (tau-bench)"},
        "tests": tests,
    }


def _message(raw: dict[str, Any]) -> dict[str, Any]:
    message = {"role": raw.get("role"), "content": raw.get("content")}
    for key in ("tool_calls", "tool_call_id", "name"):
        if raw.get(key):
            message[key] = raw[key]
    return message
