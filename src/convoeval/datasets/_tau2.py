"""tau2-bench's `tasks.json` (data/tau2/domains/<domain>/tasks.json) as simulated-user scenarios.

Each task (`{id, description, user_scenario, initial_state, evaluation_criteria}`) becomes a
test:
- `user_scenario` -> `simulated_user`: the persona (or "a customer"), the reason for the call,
  the task instructions and what the user does not know as the objective, the user's known
  information as `knowledge`;
- `evaluation_criteria` -> what tau2-bench's reward multiplies, as its `reward_basis` says:
  a required `tau-reward`; `DB` -> its `goal_actions` are the reference `actions` (a task with
  neither actions nor env assertions: tau2 gives the database 1, so it is not compared);
  `COMMUNICATE` -> its `required_outputs` are `communicate_info`; `NL_ASSERTION` -> the
  `nl_assertions` as scenario `success` criteria. Components outside the basis are kept in
  `metadata` (tau2-bench runs them as diagnostics only, so they do not decide here either).
- the domain's policy (`policy=`, else `policy.md` beside the file, or telecom's
  `main_policy.md` with `tech_support_manual.md` as tau2 joins them) is the suite's policy, also
  given to the agent as its system prompt, as tau2-bench does; without one, a warning says so.

Each `tau-reward` asks that the episode ended as tau2-bench ends one (`ended_by`): the user
said ###STOP###, ###TRANSFER### or ###OUT-OF-SCOPE### (convoeval's structured stop counts) before
the orchestrator's step count reached its limit (200, the CLI's default) and before 10 tool
calls failed; tau2-bench gives every other episode (max_steps, too_many_errors, errors) reward 0
(sierra-research/tau2-bench a2c0247: src/tau2/evaluator/evaluator.py, orchestrator.py).

`ENV_ASSERTION` -> the `env_assertions` as the reward's (functions of the tools file run on the
final state); `ACTION` -> the reference actions as `required_actions`; a basis without `DB`
leaves the state uncompared (`compare_state: false`). The suite's `tools`/`backend` are the
domain each trial plays on: the agent's tools and the simulated user's (`USER_TOOLS`, tau2's
telecom user acting on its phone) act on one copy of the backend, which starts from the task's
`initial_state.initialization_actions` (the test's `initial_actions`; the reward replays from
them too). Tasks tau-reward cannot grade (`initialization_data`, a `message_history`) are left
out and listed in the suite's `metadata.skipped`.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import TypeGuard

from pydantic import JsonValue

from ..errors import DatasetError
from ._common import DatasetWarning, JsonLines, JsonObject, mapping, read_text
from ._suite_types import Skipped, Suite, SuiteTest

#: tau2-bench's limits (src/tau2/config.py DEFAULT_MAX_STEPS, DEFAULT_MAX_ERRORS).
MAX_STEPS = 200
MAX_ERRORS = 10
#: A user message and the agent's reply are two steps: the user's 100th message (a stop) is step
#: 199, the last that can end an episode; more simulated turns could never count.
MAX_TURNS = MAX_STEPS // 2


def episode_end(max_steps: int = MAX_STEPS, max_errors: int = MAX_ERRORS) -> JsonObject:
    """How tau2-bench ends a conversational episode: only the user stops it (its LLM agent does
    not), below the step and error limits. A new object each time (the YAML has no aliases)."""
    return {
        "stop_token": ["###STOP###", "###TRANSFER###", "###OUT-OF-SCOPE###"],
        "max_steps": max_steps,
        "count_steps": "messages",
        "max_errors": max_errors,
    }


SUPPORTED = {"DB", "ENV_ASSERTION", "ACTION", "COMMUNICATE", "NL_ASSERTION"}
DEFAULT_BASIS = ["DB", "COMMUNICATE"]


def is_tau2_tasks(data: JsonValue) -> TypeGuard[list[JsonObject]]:
    """Whether `data` is a tau2-bench task list (its tasks have `user_scenario`)."""
    return isinstance(data, list) and bool(data) and all(isinstance(t, dict) and "user_scenario" in t for t in data)


def import_tau2_tasks(
    source: Path,
    data: list[JsonObject],
    *,
    tools: str = "tools.py",
    backend: str = "db.json",
    policy: Path | None = None,
    run_policy: str | None = None,
) -> Suite:
    """The suite of a tau2-bench tasks file (`data` is its parsed JSON); `run_policy` is the
    policy of the run a results file recorded, used when no policy file is given or found."""
    tests: list[SuiteTest] = []
    skipped: list[Skipped] = []
    domains = set()
    lines = JsonLines(source)
    for index, task in enumerate(data):
        with lines.located(f"[{index}]"):
            where = f"task {index} (id {task.get('id')!r})"
            reason = unsupported(task, where)
            if reason:
                skipped.append({"id": str(task.get("id")), "reason": reason})
                continue
            test, domain = task_test(task, tools, backend, where, live=True)
        domains.add(domain)
        tests.append(test)
    if not tests:
        raise DatasetError(f"{source}:1: no task of this file can be graded by tau-reward ({skipped[0]['reason']})")
    domain = "-".join(sorted(d for d in domains if d)) or source.parent.name
    suite: Suite = {
        "name": f"tau2-bench-{domain}",
        "description": "tau2-bench tasks: a trial passes exactly when tau2-bench's reward is 1 "
        "(the final database and the required outputs match; the judged assertions hold where tau2 counts them)",
        "metadata": {"source": source.name, "imported_by": "convoeval import tau-bench", "licence": "MIT (tau2-bench)"},
        "execution": {"threshold": 1.0},
        "tools": tools,  # each trial's domain: the agent's and the user's tools on one copy of the backend
        "backend": backend,
    }
    if policy is not None and not policy.is_file():
        raise DatasetError(f"{policy}:1: no such file (the domain policy)")
    text = read_text(policy) if policy is not None else domain_policy(source.parent) or run_policy
    if text:
        suite["policy"] = {"text": text, "system_prompt": True}
    else:
        warnings.warn(
            f"{source}:1: no domain policy (policy.md) beside the file: the agent gets none; give --policy FILE",
            DatasetWarning,
            stacklevel=2,
        )
    if skipped:
        suite["metadata"]["skipped"] = skipped
    suite["tests"] = tests
    return suite


def domain_policy(folder: Path) -> str | None:
    """The policy tau2-bench gives the agent of the domain in `folder`: its policy.md, or telecom's
    main policy with its tech-support manual, joined as tau2 joins them (tau2 a2c0247
    domains/telecom/environment.py `get_environment`)."""
    if (folder / "policy.md").is_file():
        return read_text(folder / "policy.md")
    main, manual = folder / "main_policy.md", folder / "tech_support_manual.md"
    if main.is_file() and manual.is_file():
        return (
            f"<main_policy>\n{read_text(main)}\n</main_policy>\n"
            f"<tech_support_policy>\n{read_text(manual)}\n</tech_support_policy>"
        )
    return None


def unsupported(task: JsonObject, where: str) -> str | None:
    """Why tau-reward cannot grade `task` as tau2-bench does (None: it can)."""
    state = task.get("initial_state") or {}
    if not isinstance(state, dict):
        raise DatasetError(f"{where}: initial_state: expected an object")
    for part in ("initialization_data", "message_history"):
        if state.get(part):
            return f"initial_state.{part} (tau-reward starts from the backend and the initial actions only)"
    criteria = _criteria(task, where)
    other = [b for b in _basis(criteria, where) if b not in SUPPORTED]
    return f"reward_basis {', '.join(other)}" if other else None


def _criteria(task: JsonObject, where: str) -> JsonObject:
    return mapping(task.get("evaluation_criteria"), f"{where}: evaluation_criteria")


def _basis(criteria: JsonObject, where: str) -> list[str]:
    basis = criteria.get("reward_basis")
    if basis is None:
        return list(DEFAULT_BASIS)
    if not isinstance(basis, list) or not all(isinstance(b, str) for b in basis):
        raise DatasetError(f"{where}: evaluation_criteria.reward_basis: expected a list of names")
    return [b for b in basis if isinstance(b, str)]


def task_test(task: JsonObject, tools: str, backend: str, where: str, *, live: bool = False) -> tuple[SuiteTest, str]:
    """The task's test (a simulated user), and its domain ("" when the task names none). Its
    initialization actions set up each trial's backend when `live` (the test's `initial_actions`,
    which the reward starts from too), else only the reward's replay. `where` names the task in
    errors (the caller adds the file and line)."""
    scenario = task.get("user_scenario")
    if not isinstance(scenario, dict) or "instructions" not in scenario:
        raise DatasetError(f"{where}: user_scenario needs instructions")
    instructions = scenario["instructions"]
    named = instructions.get("domain", "") if isinstance(instructions, dict) else ""
    domain = named if isinstance(named, str) else ""
    criteria = _criteria(task, where)
    basis = _basis(criteria, where)
    task_id = task.get("id")
    if isinstance(task_id, bool) or not isinstance(task_id, str | int):
        raise DatasetError(f"{where}: id: expected the task's id (text), got {task_id!r:.40}")
    test: SuiteTest = {"id": f"tau2-{domain}-{task_id}" if domain else f"tau2-{task_id}"}
    test["simulated_user"] = _user(scenario, instructions, domain, where)
    outputs = _texts(criteria.get("communicate_info"), "evaluation_criteria.communicate_info", where)
    outputs = outputs if "COMMUNICATE" in basis else []
    reward: JsonObject = {"type": "tau-reward", "backend": backend, "tools": tools, "required": True}
    reference = _items(criteria.get("actions"), "evaluation_criteria.actions", where)
    actions = [_action(a, field, where) for field, a in reference]
    assertions = [
        _assertion(a, field, where)
        for field, a in _items(criteria.get("env_assertions"), "evaluation_criteria.env_assertions", where)
    ]
    # tau2 counts the database when DB is in the basis and the task has actions or assertions
    if "DB" in basis and (criteria.get("actions") is not None or criteria.get("env_assertions") is not None):
        reward["goal_actions"] = [*actions]
        reward["failed_goal_actions"] = "skip"  # tau2 logs a failing goal action and goes on (evaluator_env.py)
    else:
        reward["compare_state"] = False
    state = task.get("initial_state")
    initial = state.get("initialization_actions") if isinstance(state, dict) else None
    actions_before = [_env_call(a, f, where) for f, a in _items(initial, "initial_state.initialization_actions", where)]
    if actions_before and not live:
        reward["initial_actions"] = [*actions_before]
    if "ENV_ASSERTION" in basis:
        reward["env_assertions"] = [*assertions]
    if "ACTION" in basis:
        reward["required_actions"] = [_required(a, field, where) for field, a in reference]
    reward["required_outputs"] = [*outputs]
    reward["ended_by"] = episode_end()
    test["assertions"] = [reward]
    if actions_before and live:
        test["initial_actions"] = actions_before
    nl: list[JsonValue] = [*_texts(criteria.get("nl_assertions"), "evaluation_criteria.nl_assertions", where)]
    if nl and "NL_ASSERTION" in basis:
        test["success"] = nl
    metadata: JsonObject = {"task_id": task_id, "domain": domain, "reward_basis": [*basis]}
    if nl and "NL_ASSERTION" not in basis:
        metadata["nl_assertions"] = nl  # diagnostics only in tau2-bench
    description = task.get("description") or {}
    if isinstance(description, dict) and description.get("purpose"):
        metadata["purpose"] = description["purpose"]
    test["metadata"] = metadata
    return test, domain


def _user(scenario: JsonObject, instructions: JsonValue, domain: str, where: str) -> JsonObject:
    """tau2's user scenario as a simulated user (what it says, and what it knows if asked)."""
    persona = scenario.get("persona") or f"a customer of the {domain or 'service'} agent"
    user: JsonObject = {"persona": persona}
    if isinstance(instructions, str):
        user["objective"] = instructions
    elif isinstance(instructions, dict) and isinstance(instructions.get("task_instructions"), str):
        parts = [instructions.get("reason_for_call"), instructions["task_instructions"]]
        if instructions.get("unknown_info"):
            parts.append(f"You do not know: {instructions['unknown_info']}")
        user["objective"] = "\n\n".join(str(p).strip() for p in parts if p)
        if instructions.get("known_info"):
            user["knowledge"] = str(instructions["known_info"])
    else:
        raise DatasetError(f"{where}: user_scenario.instructions needs task_instructions")
    user["max_turns"] = MAX_TURNS
    return user


def _items(value: JsonValue, field: str, where: str) -> list[tuple[str, JsonValue]]:
    """`(field[i], item)` of a list (missing or null: none); DatasetError when it is something else."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise DatasetError(f"{where}: {field}: expected a list, got {value!r:.60}")
    return [(f"{field}[{i}]", item) for i, item in enumerate(value)]


def _texts(value: JsonValue, field: str, where: str) -> list[str]:
    """A list of texts (missing or null: none), as tau2's task model requires it."""
    items = _items(value, field, where)
    for at, item in items:
        if not isinstance(item, str):
            raise DatasetError(f"{where}: {at}: expected text, got {item!r:.60}")
    return [item for _, item in items if isinstance(item, str)]


def _action(action: JsonValue, field: str, where: str) -> JsonObject:
    """A reference action as a goal action: `{name, arguments}`, and `side: user` for the user's."""
    if not isinstance(action, dict) or not isinstance(action.get("name"), str):
        raise DatasetError(f"{where}: {field}: each action needs a name")
    arguments = action.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise DatasetError(f"{where}: {field}.arguments: expected an object, got {arguments!r:.60}")
    converted: JsonObject = {"name": action["name"], "arguments": arguments}
    if action.get("requestor") == "user":
        converted["side"] = "user"
    return converted


def _required(action: JsonValue, field: str, where: str) -> JsonObject:
    """A reference action as a required action: tau2 compares the name and `compare_args`, not who made it."""
    converted = {k: v for k, v in _action(action, field, where).items() if k != "side"}
    compare = action.get("compare_args") if isinstance(action, dict) else None
    if compare is not None:
        if not isinstance(compare, list) or not all(isinstance(a, str) for a in compare):
            raise DatasetError(f"{where}: {field}.compare_args: expected a list of names")
        converted["compare_args"] = compare
    return converted


def _env_call(call: JsonValue, field: str, where: str) -> JsonObject:
    """tau2's `EnvFunctionCall` (`{env_type, func_name, arguments}`) as `{name, arguments}`: the
    tools file holds one namespace, so which side's object tau2 called it on is not kept."""
    if not isinstance(call, dict) or not isinstance(call.get("func_name"), str):
        raise DatasetError(f"{where}: {field}: each call needs a func_name")
    arguments = call.get("arguments") or {}
    if not isinstance(arguments, dict):
        raise DatasetError(f"{where}: {field}.arguments: expected an object, got {arguments!r:.60}")
    return {"name": call["func_name"], "arguments": arguments}


def _assertion(assertion: JsonValue, field: str, where: str) -> JsonObject:
    """tau2's `EnvAssertion` (an env function call with `assert_value`, `message`)."""
    converted = _env_call(assertion, field, where)
    expected = assertion.get("assert_value", True) if isinstance(assertion, dict) else True
    if not isinstance(expected, bool):
        raise DatasetError(f"{where}: {field}.assert_value: expected true or false")
    converted["expected"] = expected
    message = assertion.get("message") if isinstance(assertion, dict) else None
    if isinstance(message, str) and message:
        converted["message"] = message
    return converted
