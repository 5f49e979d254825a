"""tau2-bench's results files (`tau2 run` output, data/tau2/results/final/*.json) as recorded trials.

A results file (`{info, tasks, simulations}`, tau2's `Results`, src/tau2/data_model/simulation.py)
holds the tasks it ran and one simulation per task and trial: its messages (the agent's tool
calls and their results included), its termination reason and tau2's `reward_info`. Imported
with `recorded=True`, the simulations of a task are the trials of one test (`transcripts:`, in
the file's order), and the test is the one `import tau2` makes of the task for a live run
(`_tau2.task_test`: the same required `tau-reward`, goal actions, required outputs and end of
episode, with the run's own step and error limits): re-graded without a model, each trial
passes exactly when tau2's recorded reward is 1 and the test's pass^k is tau2's
(src/tau2/metrics/agent_metrics.py `pass_hat_k`). The recorded rewards, trials, simulation ids
and termination reasons are kept in the test's `metadata`; the run's policy is the suite's.

When a task's reward basis has `NL_ASSERTION`, its `nl_assertions` are the test's `success`
criteria, as for a live run: convoeval's judge (`--judge`) decides them again, and what tau2's
judge said of each (`reward_info.nl_assertions[].met`) is kept per trial in
`metadata.recorded_nl_assertions_met` to compare. (tau2's published airline and retail runs count
only DB and COMMUNICATE; its newer retail tasks count NL_ASSERTION.)

Telecom's tasks are graded as tau2 grades them: the user's recorded tool calls stay on the
user's messages and are replayed through the user's tools (`USER_TOOLS` of the tools file),
the task's `initial_state.initialization_actions` are the reward's `initial_actions` (a live
import puts them on the test instead, where they set each trial's backend up), and its
reward basis decides what counts (`ENV_ASSERTION`: `env_assertions`; `ACTION`: the reference
actions as `required_actions`; no `DB`: the state is not compared). Tasks `import tau2` cannot
grade (an `initial_state` with `initialization_data` or a `message_history`, a basis it does
not know) are left out with their simulations and listed in `metadata.skipped`; a solo-mode
run (the agent plays the user's side too) is refused.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, TypeGuard

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from ..errors import DatasetError
from ._common import DatasetWarning, JsonLines, JsonObject, as_list, decode_json, read_json
from ._suite_types import FailedRun, Message, RecordedCall, Skipped, Suite, SuiteTest
from ._tau2 import MAX_ERRORS, MAX_STEPS, episode_end, import_tau2_tasks, is_tau2_tasks, task_test, unsupported

#: tau2's `TerminationReason.INFRASTRUCTURE_ERROR`: its runner gave up on the simulation after
#: retries (src/tau2/runner/progress.py, `messages: []`); its metrics exclude it
#: (src/tau2/metrics/agent_metrics.py `get_metrics_df`).
INFRASTRUCTURE_ERROR = "infrastructure_error"


class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class Tau2Call(_Loose):
    """A tool call of a tau2 message (`ToolCall`)."""

    id: str = ""
    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    requestor: Literal["user", "assistant"] = "assistant"


class Tau2Message(_Loose):
    """A message of a simulation (tau2's `AssistantMessage`, `UserMessage`, `ToolMessage`)."""

    role: Literal["system", "assistant", "user", "tool"]
    content: str | None = None
    tool_calls: list[Tau2Call] | None = None
    id: str | None = None  # a tool message: the call it answers
    error: bool = False


class Tau2Judged(_Loose):
    met: bool | None = None


class Tau2Reward(_Loose):
    reward: float
    nl_assertions: list[Tau2Judged] | None = None


class Tau2Simulation(_Loose):
    """One simulation (`SimulationRun`): what decides its reward."""

    id: str
    task_id: str
    trial: int | None = None
    termination_reason: str
    reward_info: Tau2Reward | None = None
    messages: list[Tau2Message]
    info: dict[str, JsonValue] | None = None


@dataclass
class _Trials:
    """A task's simulations, in the file's order."""

    transcripts: list[list[Message] | FailedRun] = field(default_factory=list)  # the type a suite takes
    trials: list[JsonValue] = field(default_factory=list)
    ids: list[JsonValue] = field(default_factory=list)
    rewards: list[JsonValue] = field(default_factory=list)
    terminations: list[JsonValue] = field(default_factory=list)
    nl_met: list[JsonValue] = field(default_factory=list)


def import_tau2(
    source: Path,
    *,
    tools: str = "tools.py",
    backend: str | None = None,
    recorded: bool = False,
    policy: Path | None = None,
) -> Suite:
    """`convoeval import tau2`: a tasks.json as live scenarios, a results file's simulations as
    recorded trials (`recorded`; without it, the tasks the results file ran as live scenarios)."""
    source = results_file(source)
    data = read_json(source)
    backend = backend or "db.json"
    if is_tau2_tasks(data):
        if recorded:
            raise DatasetError(f"{source}:1: --recorded: a tau2-bench tasks file holds tasks, not recorded simulations")
        return import_tau2_tasks(source, data, tools=tools, backend=backend, policy=policy)
    if isinstance(data, dict) and "simulations" not in data and (source.parent / "simulations").is_dir():
        raise DatasetError(
            f"{source}:1: simulations: this run keeps them in {source.parent / 'simulations'} (tau2's folder "
            "format, which its voice runs write), which is not read"
        )
    if not is_tau2_results(data):
        raise DatasetError(f"{source}:1: expected tau2-bench tasks (a list) or results (`tasks` and `simulations`)")
    if recorded:
        if policy is not None:
            raise DatasetError(f"{source}:1: --policy: a results file's simulations ran with its own policy")
        return import_tau2_results(source, data, tools=tools, backend=backend)
    tasks = data["tasks"]
    if not is_tau2_tasks(tasks):
        raise DatasetError(
            f"{JsonLines(source).at('tasks')}: tasks: expected the list of tau2 tasks the simulations ran"
        )
    return import_tau2_tasks(source, tasks, tools=tools, backend=backend, policy=policy, run_policy=_policy(data))


def _policy(data: JsonObject) -> str | None:
    """The domain policy the run used (`info.environment_info.policy`)."""
    info = data.get("info")
    environment = info.get("environment_info") if isinstance(info, dict) else None
    policy = environment.get("policy") if isinstance(environment, dict) else None
    return policy if isinstance(policy, str) and policy.strip() else None


def results_file(source: Path) -> Path:
    """The results of a `tau2 run --save-to` folder (its results.json), else `source` itself."""
    return source / "results.json" if (source / "results.json").is_file() else source


def is_tau2_results(data: JsonValue) -> TypeGuard[JsonObject]:
    """Whether `data` is a tau2-bench results file (`tasks` and `simulations`)."""
    return isinstance(data, dict) and isinstance(data.get("simulations"), list) and "tasks" in data


def import_tau2_results(source: Path, data: JsonObject, *, tools: str = "tools.py", backend: str = "db.json") -> Suite:
    """The suite of a tau2-bench results file (`data` is its parsed JSON): one test per task
    tau-reward can grade, its simulations as trials."""
    lines = JsonLines(source)
    tasks = _tasks(data, lines)
    given = data.get("info")
    info: JsonObject = given if isinstance(given, dict) else {}
    agent = info.get("agent_info")
    implementation = agent.get("implementation") if isinstance(agent, dict) else None
    if isinstance(implementation, str) and "solo" in implementation:
        raise DatasetError(
            f"{lines.at('agent_info.implementation')}: info.agent_info.implementation: {implementation!r} is tau2's solo mode "
            "(the agent also plays the user's side and ends the episode itself), which is not supported"
        )
    end = episode_end(_limit(info, "max_steps", MAX_STEPS, lines), _limit(info, "max_errors", MAX_ERRORS, lines))
    recorded: dict[str, _Trials] = {}
    skipped: dict[str, str] = {}
    never_ran: list[JsonObject] = []
    for index, raw in enumerate(as_list(data["simulations"])):
        where = f"simulations[{index}]"
        simulation = _validated(Tau2Simulation, raw, where, lines)
        task = tasks.get(simulation.task_id)
        if task is None:
            raise DatasetError(
                f"{lines.at(where)}: {where}.task_id: {simulation.task_id!r} is not among the file's tasks"
            )
        if simulation.termination_reason == INFRASTRUCTURE_ERROR:  # never ran: tau2's metrics leave it out
            error = (simulation.info or {}).get("error")
            never_ran.append({"id": simulation.id, "task_id": simulation.task_id, "error": error})
            continue
        with _task_at(data, simulation.task_id, lines):
            reason = unsupported(task, f"task {simulation.task_id!r}")
        if reason is not None:
            skipped.setdefault(simulation.task_id, reason)
            continue
        trials = recorded.setdefault(simulation.task_id, _Trials())
        trials.transcripts.append(_transcript(simulation.messages, where, lines))
        trials.trials.append(simulation.trial)
        trials.ids.append(simulation.id)
        trials.rewards.append(simulation.reward_info.reward if simulation.reward_info else None)
        trials.terminations.append(simulation.termination_reason)
        judged = simulation.reward_info.nl_assertions if simulation.reward_info else None
        trials.nl_met.append(None if judged is None else [j.met for j in judged])
    if never_ran:
        named = ", ".join(
            f"task {r['task_id']!r} simulation {r['id']} ({r['error'] or 'no error recorded'})" for r in never_ran
        )
        warnings.warn(
            f"{lines.at('simulations')}: left out as tau2's metrics leave them out, simulations that ended in an "
            f"infrastructure error (they never ran): {named}",
            DatasetWarning,
            stacklevel=2,
        )
    if not recorded:
        why = next(
            iter(skipped.values()),
            "every simulation ended in an infrastructure error" if never_ran else "it has no simulations",
        )
        raise DatasetError(f"{lines.at('simulations')}: no simulation of this file can be graded by tau-reward ({why})")
    tests = []
    for task_id, trials in recorded.items():
        with _task_at(data, task_id, lines):
            tests.append(_test(tasks[task_id], trials, tools, backend, end, f"task {task_id!r}"))
    suite = _suite(source, info, tests, [{"id": k, "reason": v} for k, v in skipped.items()])
    if never_ran:
        suite["metadata"]["infrastructure_errors"] = never_ran
    return suite


def _suite(source: Path, info: JsonObject, tests: list[SuiteTest], skipped: list[Skipped]) -> Suite:
    domains = sorted({str((t.get("metadata") or {}).get("domain") or "") for t in tests} - {""})
    suite: Suite = {
        "name": f"tau2-bench-{'-'.join(domains) or source.stem}-recorded",
        "description": "tau2-bench's recorded simulations: a trial passes exactly when tau2-bench's reward is 1 "
        "(the episode ended by the user, the final database and the required outputs match)",
        "metadata": {
            "source": source.name,
            "imported_by": "convoeval import tau2 --recorded",
            "licence": "MIT (tau2-bench)",
        },
        "execution": {"threshold": 1.0},
    }
    commit = info.get("git_commit")
    if isinstance(commit, str):
        suite["metadata"]["tau2_commit"] = commit
    policy = _policy({"info": info})
    if policy:
        suite["policy"] = {"text": policy, "system_prompt": True}
    if skipped:
        suite["metadata"]["skipped"] = skipped
    suite["tests"] = tests
    return suite


def _task_at(data: JsonObject, task_id: str, lines: JsonLines) -> AbstractContextManager[None]:
    """Errors raised inside name the line where the task starts."""
    index = next(i for i, t in enumerate(as_list(data["tasks"])) if isinstance(t, dict) and str(t.get("id")) == task_id)
    return lines.located(f"tasks[{index}]")


def _test(task: JsonObject, trials: _Trials, tools: str, backend: str, end: JsonObject, where: str) -> SuiteTest:
    """The task's test as `import tau2` makes it, with the recorded simulations as its trials."""
    test, _ = task_test(task, tools, backend, where)
    test.pop("simulated_user", None)
    test["transcripts"] = trials.transcripts
    for assertion in test.get("assertions") or []:
        assertion["ended_by"] = dict(end)
    metadata = test.get("metadata") or {}
    metadata.update(
        {
            "trials": trials.trials,
            "simulation_ids": trials.ids,
            "recorded_rewards": trials.rewards,
            "termination_reasons": trials.terminations,
        }
    )
    if test.get("success"):  # NL_ASSERTION counts: judged here by the judge; tau2's own judge said
        metadata["recorded_nl_assertions_met"] = trials.nl_met
    test["metadata"] = metadata
    return test


def _transcript(messages: Sequence[Tau2Message], where: str, lines: JsonLines) -> list[Message]:
    """A simulation's messages in convoeval's shape: each agent message carries its tool calls
    with the result (or the error) tau2 recorded for each."""
    results = {m.id: m for m in messages if m.role == "tool" and m.id}
    calls = {c.id for m in messages for c in m.tool_calls or []}
    transcript: list[Message] = []
    for number, message in enumerate(messages):
        if message.role == "tool":
            if message.id not in calls:
                at = f"{where}.messages[{number}]"
                raise DatasetError(f"{lines.at(at)}: {at}.id: a tool result for no call ({message.id!r})")
            continue
        converted: Message = {"role": message.role, "content": message.content or ""}
        if message.tool_calls:
            converted["tool_calls"] = [_call(call, results.get(call.id)) for call in message.tool_calls]
        transcript.append(converted)
    return transcript


def _call(call: Tau2Call, result: Tau2Message | None) -> RecordedCall:
    recorded: RecordedCall = {"name": call.name, "arguments": call.arguments}
    if call.id:
        recorded["id"] = call.id
    if result is not None and result.error:
        recorded["error"] = result.content or "error"
    elif result is not None:
        recorded["output"] = _maybe_json(result.content)
    return recorded


def _maybe_json(text: str | None) -> JsonValue:
    try:
        value: JsonValue = decode_json(text) if text else text
    except ValueError:
        return text
    return value


def _tasks(data: JsonObject, lines: JsonLines) -> dict[str, JsonObject]:
    tasks = data.get("tasks")
    if not isinstance(tasks, list) or not all(isinstance(t, dict) and "id" in t for t in tasks):
        raise DatasetError(f"{lines.at('tasks')}: tasks: expected the list of tau2 tasks the simulations ran")
    return {str(t["id"]): t for t in tasks if isinstance(t, dict)}


def _limit(info: JsonObject, name: str, default: int, lines: JsonLines) -> int:
    value = info.get(name)
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise DatasetError(f"{lines.at(name)}: info.{name}: expected a positive whole number, got {value!r:.40}")
    return value


def _validated(model: type[Tau2Simulation], raw: JsonValue, where: str, lines: JsonLines) -> Tau2Simulation:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        error = exc.errors()[0]
        path = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"])
        first = next((n for n, p in enumerate(error["loc"]) if isinstance(p, int)), -1)  # the message, say
        near = where + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error["loc"][: first + 1])
        raise DatasetError(f"{lines.at(near)}: {path}: {error['msg']}") from None
