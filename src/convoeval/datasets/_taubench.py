"""tau-bench tasks as simulated-user scenarios (or their recorded trajectories as transcripts).

Input: tau-bench results (`[{task_id, trial, reward, info: {task: {user_id, instruction,
actions, outputs}}, traj}]`) or a plain list of tasks (`[{user_id, instruction, actions,
outputs}]`). tau-bench's domains are code, so the domain's tools and initial backend come from
files the user names (`tools`, `backend`; relative to the written suite).

Each task becomes one test whose `tau-reward` assertion (`required: true`: the reward decides)
has the task's actions as `goal_actions` and its `outputs` as `required_outputs`; the suite's
threshold is 1, so a trial passes exactly when its reward is 1, as in tau-bench:
- by default a scenario: the instruction is the simulated user's objective; its `tau-reward`
  asks that the episode ended as tau-bench ends one (`ended_by`: the user's stop, convoeval's
  structured stop included, or `transfer_to_human_agents`, within tau-bench's 30 agent actions);
- with `recorded=True`, the recorded trajectories (`traj`, OpenAI messages) of a task are the
  trials of its test (`transcripts:`, one per trial, in the file's order), their recorded
  rewards kept in `metadata.recorded_rewards`: re-graded without a model, the test's pass^k is
  tau-bench's pass^k for that task. Their `tau-reward` also asks that the episode ended as
  tau-bench ends one (`ended_by`): an episode stopped at tau-bench's step limit has reward 0
  there, whatever its final state. A trial number of the file that a task has no record of (an
  interrupted run's checkpoint) is a trial of that task that failed: tau-bench's
  `display_metrics` divides every task's C(c, k) by C(num_trials, k), num_trials being the
  file's distinct trial numbers, so it counts the missing trial as one without reward 1.

tau2-bench's `tasks.json` is read by `_tau2`, its results files by `_tau2_results` (see there).
"""

from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import JsonValue

from ..errors import DatasetError
from ._common import DatasetWarning, JsonLines, JsonObject, as_list, as_object, read_json
from ._suite_types import FailedRun, Message, Suite, SuiteTest, with_call_fields
from ._tau2 import import_tau2_tasks, is_tau2_tasks
from ._tau2_results import import_tau2, is_tau2_results, results_file

#: tau-bench's agent takes at most 30 actions (`max_num_steps`); its user speaks first, then
#: once after each reply, so 30 user messages and a last stop can fit: 31 simulated turns. The
#: step limit itself is `ended_by.max_steps`, counted on the conversation when it is graded.
MAX_TURNS = 31
MAX_STEPS = 30
#: The step format tau-bench's ReAct and Act agents are told to follow, in their system prompt.
REACT_FORMAT = 'Action:\n{"name": <The name of the action>, "arguments": <The arguments to the action in json format>}'


@dataclass
class _Recorded:
    """A task's recorded trials (tau-bench results): their trajectories and rewards; `reward`
    (the task's tau-reward, from the first record with the task) is None while only runs that
    crashed were read."""

    task_id: JsonValue
    reward: JsonObject | None = None
    transcripts: list[list[Message] | FailedRun] = field(default_factory=list)
    trials: list[JsonValue] = field(default_factory=list)
    rewards: list[JsonValue] = field(default_factory=list)
    unfinished: list[JsonValue] = field(default_factory=list)
    failed: list[JsonValue] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)


def import_tau_bench(
    source: Path,
    *,
    tools: str = "tools.py",
    backend: str | None = None,
    recorded: bool = False,
    policy: Path | None = None,
) -> Suite:
    """The tau-bench suite of `source` (results or tasks JSON; tau2-bench's tasks.json too).

    `backend` defaults to backend.json (tau-bench) or db.json (tau2-bench, as it ships);
    `policy` is for tau2-bench (default: policy.md beside `source`).
    """
    source = results_file(source)  # `tau2 run`'s folder
    data = read_json(source)
    if is_tau2_tasks(data):
        if recorded:
            raise DatasetError(
                f"{source}:1: --recorded: a tau2-bench tasks file holds tasks, not recorded trajectories"
            )
        return import_tau2_tasks(source, data, tools=tools, backend=backend or "db.json", policy=policy)
    if is_tau2_results(data):  # tau2-bench's results: `import tau2` reads them
        return import_tau2(source, tools=tools, backend=backend, recorded=recorded, policy=policy)
    backend = backend or "backend.json"
    if not isinstance(data, list) or not data:
        raise DatasetError(f"{source}:1: expected a JSON list of tau-bench results or tasks, or tau2-bench tasks")
    tests: dict[str, SuiteTest] = {}
    recordings: dict[str, _Recorded] = {}
    crashed: dict[str, list[str]] = {}  # the runs that crashed, by test id
    lines = JsonLines(source)
    for index, item in enumerate(data):
        with lines.located(f"[{index}]"):
            where = f"item {index}"
            record = as_object(item) or {}
            result = "info" in record  # a tau-bench result (task, trajectory, reward), not a bare task
            info = (as_object(record["info"]) or {}) if result else {}
            failure = _failure(info) if result else None
            task = as_object(info.get("task")) if result else as_object(item)
            if failure is None and (
                task is None
                or not isinstance(task.get("instruction"), str)
                or not isinstance(task.get("actions"), list)
            ):
                raise DatasetError(f"{where}: expected a task with instruction and actions")
            task_id = record.get("task_id", index) if result else index
            test_id = f"tau-{task_id}"
            if failure is not None:
                crashed.setdefault(test_id, []).append(
                    f"item {index} (task {task_id}, trial {record.get('trial')}: {failure})"
                )
            if recorded:
                traj = record.get("traj")
                if failure is None and not isinstance(traj, list):
                    raise DatasetError(f"{where}: recorded=True needs tau-bench results with `traj`")
                trials = recordings.setdefault(test_id, _Recorded(task_id))
                if trials.reward is None and task is not None:
                    trials.reward = _reward(task, tools, backend, where)
                trials.transcripts.append({"error": failure} if failure is not None else _trajectory(traj, where))
                trials.trials.append(record.get("trial", len(trials.trials)))
                trials.rewards.append(record.get("reward"))
                if failure is not None:
                    trials.failed.append(trials.trials[-1])
                elif result and info.get("reward_info") is None:
                    # tau-bench never finished this episode (step limit or an error) and recorded 0 without a reward
                    trials.unfinished.append(trials.trials[-1])
            elif task is not None and test_id not in tests:  # one scenario per task, however many trials were recorded
                tests[test_id] = _scenario(test_id, task, task_id, tools, backend, where)
    if recorded:
        _add_missing_trials(source, recordings)
        tests = {test_id: _recorded(test_id, trials) for test_id, trials in recordings.items()}
    if crashed:
        _warn_crashed(source, crashed, recorded, [i for i in crashed if i not in tests])
    suite: Suite = {
        "name": f"tau-bench-{source.stem}",
        "description": "tau-bench tasks: reward 1 when the final backend state and the required outputs match; "
        "a trial passes exactly when its reward is 1",
        "metadata": {"source": source.name, "imported_by": "convoeval import tau-bench", "licence": "MIT (tau-bench)"},
        "execution": {"threshold": 1.0},
    }
    if not recorded:  # each trial's domain: an agent with `agent:` is offered its tools, on its own copy
        suite |= {"tools": tools, "backend": backend}
    return {**suite, "tests": list(tests.values())}


def episode_end(*, live: bool) -> JsonObject:
    """How tau-bench ends an episode (its airline and retail environments): the user simulator
    says ###STOP###, or the agent transfers to a human; only then does it compute a reward. A
    live episode must also end within tau-bench's step limit (a recorded one did, or it never
    stopped). A new object each time (the written YAML has no aliases)."""
    end: JsonObject = {"stop_token": "###STOP###", "terminate_tools": ["transfer_to_human_agents"]}
    return {**end, "max_steps": MAX_STEPS, "count_steps": "actions"} if live else end


def _reward(task: JsonObject, tools: str, backend: str, where: str) -> JsonObject:
    """The task's `tau-reward` assertion: its actions and outputs."""
    return {
        "type": "tau-reward",
        "backend": backend,
        "tools": tools,
        "goal_actions": [_action(a, where) for a in as_list(task["actions"])],
        "required_outputs": [str(o) for o in as_list(task.get("outputs"))],
        "failed_goal_actions": "skip",  # tau-bench's Env.step turns a tool's exception into "Error: ..."
        "required": True,
    }


def _action(action: JsonValue, where: str) -> JsonObject:
    if not isinstance(action, dict) or "name" not in action:
        raise DatasetError(f"{where}: actions: each action needs a name")
    return {"name": action["name"], "arguments": action.get("kwargs") or action.get("arguments") or {}}


def _scenario(test_id: str, task: JsonObject, task_id: JsonValue, tools: str, backend: str, where: str) -> SuiteTest:
    """One task's test with a simulated user."""
    user: JsonObject = {
        "persona": f"the customer with user id {task.get('user_id', 'unknown')}",
        "objective": task["instruction"],
        "max_turns": MAX_TURNS,
    }
    reward = {**_reward(task, tools, backend, where), "ended_by": episode_end(live=True)}
    return {"id": test_id, "simulated_user": user, "assertions": [reward], "metadata": {"task_id": task_id}}


def _recorded(test_id: str, trials: _Recorded) -> SuiteTest:
    """One task's test with its recorded trials as transcripts (a task whose every run crashed
    has no reward to check: each of its trials is an error)."""
    metadata: JsonObject = {"task_id": trials.task_id, "trials": trials.trials, "recorded_rewards": trials.rewards}
    if trials.unfinished:
        metadata["unfinished_trials"] = trials.unfinished
    if trials.failed:
        metadata["crashed_trials"] = trials.failed
    if trials.missing:
        metadata["missing_trials"] = [*trials.missing]
    test: SuiteTest = {"id": test_id, "transcripts": trials.transcripts, "metadata": metadata}
    if trials.reward is not None:
        test["assertions"] = [{**trials.reward, "ended_by": episode_end(live=False)}]
    return test


def _add_missing_trials(source: Path, recordings: dict[str, _Recorded]) -> None:
    """Each trial number of the file that a task has no record of, added to it as a trial that
    failed, as tau-bench's pass^k counts it (run.py `display_metrics`: num_trials is the file's
    distinct trial numbers, the denominator of every task); named in a warning."""
    numbers = [t for r in recordings.values() for t in r.trials]
    if not all(isinstance(t, int) and not isinstance(t, bool) for t in numbers):
        return  # records without trial numbers: nothing to tell missing from
    everyone = sorted({t for t in numbers if isinstance(t, int)})
    named = []
    for test_id, trials in recordings.items():
        if len(trials.trials) != len(set(trials.trials)):
            continue  # a trial number twice (files joined): tau-bench's count is no guide
        for number in (n for n in everyone if n not in trials.trials):
            message = f"no record of trial {number} in {source.name}: tau-bench counts it as a trial without reward 1"
            trials.transcripts.append({"error": message})
            trials.trials.append(number)
            trials.rewards.append(None)
            trials.missing.append(number)
            named.append(f"{test_id} trial {number}")
    if named:
        warnings.warn(
            f"{source}: trials with no record (an interrupted run?): {', '.join(named)}; kept as trials that "
            f"failed, as tau-bench's pass^k counts them (over the file's {len(everyone)} trial numbers)",
            DatasetWarning,
            stacklevel=3,
        )


def _warn_crashed(source: Path, crashed: dict[str, list[str]], recorded: bool, left_out: list[str]) -> None:
    """Name the runs that crashed and what became of them."""
    runs = ", ".join(run for runs in crashed.values() for run in runs)
    if recorded:
        fate = "kept as trials that failed with that error (tau-bench counts them, with reward 0)"
    else:
        fate = "their tasks run live from the file's other records"
        fate += f"; left out, in no other record: {', '.join(left_out)}" if left_out else ""
    warnings.warn(
        f"{source}: tau-bench runs that crashed (no trajectory): {runs}; {fate}", DatasetWarning, stacklevel=3
    )


def _failure(info: JsonObject) -> str | None:
    """The error of a run that crashed, as tau-bench's run.py records it (`info: {error,
    traceback}`, no task, an empty `traj`), else None."""
    if "task" in info or "error" not in info:
        return None
    traceback = str(info.get("traceback") or "").strip().splitlines()
    return str(info["error"] or "") or (traceback[-1] if traceback else "tau-bench recorded an error without a message")


def _trajectory(traj: JsonValue, where: str) -> list[Message]:
    """A recorded `traj` as what tau-bench acted on. A message with a tool call is that call
    alone (`message_to_action`: its text was never sent to the user, and outputs count only in
    replies); a ReAct or Act agent's steps become the tool calls and replies it parsed."""
    messages = [_message(m, where) for m in as_list(traj)]
    react = bool(messages) and REACT_FORMAT in str(messages[0]["content"] or "")
    return _react_steps(messages, where) if react else messages


def _message(raw: JsonValue, where: str) -> Message:
    if not isinstance(raw, dict):
        raise DatasetError(f"{where}: traj: expected messages (JSON objects), got {raw!r:.60}")
    content = None if raw.get("role") == "assistant" and raw.get("tool_calls") else raw.get("content")
    return with_call_fields({"role": raw.get("role"), "content": content}, raw)


def _react_steps(messages: list[Message], where: str) -> list[Message]:
    """A ReAct / Act trajectory (tau-bench's chat_react_agent.py) as tool calls and replies,
    parsed as its `generate_next_step` parses each step: the JSON after the last `Action:` (text
    that is not JSON is a reply), `respond` a reply of its `content`, any other name a tool
    call whose result is the next user message (`API output: ...`)."""
    out: list[Message] = []
    call_id: str | None = None  # the call the next user message answers
    for index, message in enumerate(messages):
        content = str(message["content"] or "")
        if message["role"] == "user" and call_id is not None:
            out.append({"role": "tool", "tool_call_id": call_id, "content": content.removeprefix("API output: ")})
            call_id = None
        elif message["role"] != "assistant":
            out.append(message)
        else:
            action = content.split("Action:")[-1].strip()
            try:
                parsed = json.loads(action)
            except json.JSONDecodeError:
                parsed = {"name": "respond", "arguments": {"content": action}}
            step = as_object(parsed) or {}
            arguments = as_object(step.get("arguments"))
            if not isinstance(step.get("name"), str) or arguments is None:
                raise DatasetError(f"{where}: traj[{index}]: a ReAct action needs a name and arguments")
            if step["name"] == "respond":
                out.append({"role": "assistant", "content": arguments.get("content")})
                continue
            call_id = f"react-{index}"
            function = {"name": step["name"], "arguments": json.dumps(arguments)}
            call: JsonValue = [{"id": call_id, "type": "function", "function": function}]
            out.append({"role": "assistant", "content": None, "tool_calls": call})
    return out
