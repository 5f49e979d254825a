"""`tau-reward`: tau-bench's task reward from the final backend state and the required outputs.

The agent's tool calls (in the order the transcript records them) are replayed through the
domain's tool functions on a fresh copy-on-write view of the initial backend; so are the task's
expected actions (`goal_actions`), unless the expected final state is given as `goal_state`.
Reward 1 when both final states are the same JSON document (what tau-bench checks by hashing
its data: the parts both views still share with the initial backend are not compared again)
and every `required_outputs` string was said by the agent in one message (case-insensitive, the
message's commas ignored, as tau-bench and tau2-bench check outputs: an output with a comma is
never found); else 0, with the paths where
the states differ and the outputs that are missing. With `ended_by` (set by `import
tau-bench`, live and recorded), the episode must also have ended as the benchmark ends one (the
user's stop, a terminating tool, within its step and error limits; see `_tau_episode`): the
benchmark gives any other episode reward 0. The state and the outputs are then those of the
episode up to its end (tau-bench computes the reward when the episode ends).

tau2-bench's other reward components (`_tau_env`): `initial_actions` set the task's state up
before anything is replayed; the calls the user made on its own messages (tau2's telecom user
acts on its phone) are replayed in order with the agent's, through the user's tools;
`env_assertions` (functions on the final state) and `required_actions` (calls someone must have
made) count too; `compare_state: false` leaves the state uncompared (a basis without DB).

A domain's tools are plain functions in a Python file or module named by `tools:`, each
`name(state, /, **arguments)` changing `state` (a dict) in place and returning its output. When
the suite itself declares `tools:` and `backend:` (the agent acted on a live copy of the
backend during the conversation), `backend`/`tools` may be left out here: the trial's final
state is compared directly, when the trial's backend started from the same initial actions and
exactly the episode's calls were made on it (the agent's and the simulated user's, in order; an
agent that kept a state of its own did not act on it): `details.final_state` says `live`; else
the calls are replayed (`replayed`), which reaches the same state. The replay runs in a worker
thread, so other conversations' turns (and their latencies) go on meanwhile.

Example (YAML, conversation level):
    assertions:
      - type: tau-reward
        backend: airline/backend.json
        tools: airline/tools.py
        goal_actions:
          - {name: book_flight, arguments: {user_id: u1, flight: AA100}}
        required_outputs: ["AA100"]
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from .._base_model import Model
from ..judging import GradingLevel
from ..results import AssertionOutcome, ToolCall
from ._base import Assertion, Grade, GradeContext, GraderError, assertion_type
from ._cow import same_document
from ._tau_backend import Domain, Side, domain_file_problems, load_document
from ._tau_env import EnvAssertion, EnvCall, RequiredAction, assertion_results, describe
from ._tau_episode import EpisodeEnd, episode_calls

MAX_DIFFS = 10


class Action(Model):
    """One expected tool call."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, object] = Field(default_factory=dict)
    side: Side = Field("assistant", description="Who makes the call: the agent (`assistant`) or the `user`.")


def state_diff(actual: object, expected: object, path: str = "$") -> list[str]:
    """Where two JSON documents differ: `path: actual != expected` lines (equal parts, and
    the parts both share, are not walked)."""
    if same_document(actual, expected):
        return []
    if isinstance(actual, dict) and isinstance(expected, dict):
        return [
            d
            for key in sorted(set(dict.keys(actual)) | set(dict.keys(expected)), key=str)
            for d in state_diff(
                dict.get(actual, key, "<missing>"), dict.get(expected, key, "<missing>"), f"{path}.{key}"
            )
        ]
    if isinstance(actual, list) and isinstance(expected, list) and len(actual) == len(expected):
        return [
            d
            for i, (a, e) in enumerate(zip(list.__iter__(actual), list.__iter__(expected), strict=True))
            for d in state_diff(a, e, f"{path}[{i}]")
        ]
    return [f"{path}: {json.dumps(actual, default=str)[:80]} != {json.dumps(expected, default=str)[:80]}"]


@assertion_type
class TauReward(Assertion):
    """Reward 1 when the final backend state equals the goal state and every required output was said."""

    type: Literal["tau-reward"] = "tau-reward"
    backend: str | dict[str, object] | None = Field(
        None,
        description="The initial state: a JSON/YAML file (relative to the suite) or the document itself "
        "(default: the suite's `backend`).",
    )
    tools: str | None = Field(
        None,
        description="A Python file or module of tool functions `name(state, /, **arguments)` (default: the suite's `tools`).",
    )
    goal_actions: list[Action] | None = Field(None, description="Expected tool calls; replayed to the goal state.")
    goal_state: str | dict[str, object] | None = Field(
        None, description="The expected final state (instead of goal_actions)."
    )
    failed_goal_actions: Literal["error", "skip"] = Field(
        "error",
        description="A goal action whose tool fails: `error` (the task is broken, the grading an error) or `skip` "
        "(the goal state is reached without it, as tau2-bench computes it). Set to `skip` by `import tau2`.",
    )
    compare_state: bool = Field(
        True,
        description="Compare the final state with the goal state (false: tau2-bench tasks whose reward basis "
        "has no DB, decided by `env_assertions` and `required_actions` instead).",
    )
    initial_actions: list[EnvCall] | None = Field(
        None,
        description="Functions run on the backend, in order, before anything is replayed (tau2's "
        "`initialization_actions`): the tools file's `ENV_FUNCTIONS`, or its tools (default: the test's "
        "`initial_actions`, those the trial's live backend started from).",
    )
    env_assertions: list[EnvAssertion] = Field(
        default_factory=list,
        description="Functions run on the final state, each returning a bool that must be `expected` "
        "(tau2's ENV_ASSERTION reward).",
    )
    required_actions: list[RequiredAction] = Field(
        default_factory=list,
        description="Tool calls the agent or the user must have made: the name and the `compare_args` "
        "arguments (tau2's ACTION reward).",
    )
    required_outputs: list[str] = Field(
        default_factory=list,
        description="Strings the agent must say, each in one message (case-insensitive; the message's commas are "
        "dropped first, as both benchmarks do, so an output written with a comma is never found).",
    )
    ended_by: EpisodeEnd | None = Field(
        None,
        description="The benchmark's end of an episode (`stop_token`, `terminate_tools`, `max_steps`, "
        "`count_steps`, `max_errors`): a conversation that did not end that way gets reward 0, as the benchmark "
        "computes no reward for it; a simulated user's stop counts as its stop token. Set by `import tau-bench`.",
    )
    required: bool = Field(
        True,
        description="The reward decides the conversation (a reward that cannot be computed makes the test an error).",
    )

    levels: ClassVar[tuple[GradingLevel, ...]] = ("conversation",)

    def file_problems(self, base_dir: Path) -> list[tuple[str, str]]:
        problems = domain_file_problems(self.tools, self.backend, base_dir)
        if isinstance(self.goal_state, str):
            problems += [("goal_state", m) for _, m in domain_file_problems(None, self.goal_state, base_dir)]
        return problems

    async def grade(self, ctx: GradeContext) -> Grade:
        return await asyncio.to_thread(self._reward, ctx)

    def _reward(self, ctx: GradeContext) -> Grade:
        """The reward (run in a worker thread: replaying a large backend takes a while)."""
        live = ctx.domain
        if self.backend is not None and self.tools is not None:
            domain = Domain.load(self.tools, self.backend, ctx.base_dir)
            live = None if live is None or live.domain != domain else live
        elif live is not None:
            domain = live.domain
        else:
            raise GraderError("tau-reward needs `backend` and `tools` (here, or as the suite's `backend:` / `tools:`)")
        calls = episode_calls(ctx.transcript)
        ending = self.ended_by.end(ctx) if self.ended_by is not None else None
        # What the episode holds: up to its end (tau-bench takes the state when it ends).
        transcript = ctx.transcript if ending is None else ctx.transcript[: ending.messages]
        if ending is not None and ending.calls < len(calls):
            calls = calls[: ending.calls]
        session = ctx.domain
        actions = self.initial_actions
        if actions is None:  # the test's, which the trial's backend started from
            actions = session.initial_actions if session is not None else []
        start = domain.initial_state(actions)
        # The trial's live backend when it started as the replay does and exactly the episode's
        # calls (the agent's and the user's, in order) were made on it; else the calls replayed.
        if live is not None and not (live.initial_actions == actions and live.made(calls)):
            live = None
        if live is not None:
            actual = live.state
        else:
            actual = domain.replay([c for _, c in calls], strict=False, start=start, sides=[s for s, _ in calls])
        skipped: list[str] = []  # goal actions that failed and were left out
        if not self.compare_state:
            expected = actual
        elif self.goal_state is not None:
            expected = load_document(self.goal_state, ctx.base_dir, "goal_state")
        elif self.goal_actions is not None:
            expected = domain.replay(
                [ToolCall(name=a.name, arguments=a.arguments) for a in self.goal_actions],
                strict=True,
                failed=skipped if self.failed_goal_actions == "skip" else None,
                start=start,
                sides=[a.side for a in self.goal_actions],
            )
        else:
            expected = start  # nothing must change
        diffs = state_diff(actual, expected) if self.compare_state else []
        ended = ending is None or ending.ended
        # tau2 evaluates no episode that did not end: its assertions are not run then
        held = assertion_results(domain, actual, self.env_assertions) if ended else [False] * len(self.env_assertions)
        made = [any(action.matches(call) for _, call in calls) for action in self.required_actions]
        unmet = [describe(a) for a, ok in zip(self.env_assertions, held, strict=True) if not ok]
        not_made = [a.name for a, ok in zip(self.required_actions, made, strict=True) if not ok]
        # As both benchmarks check: in one message, its commas dropped, the output's kept
        said = [m.content.lower().replace(",", "") for m in transcript if m.role == "assistant"]
        missing = [o for o in self.required_outputs if not any(o.lower() in text for text in said)]
        state_ok = not diffs
        outcomes = []
        if self.compare_state:
            outcomes.append(
                AssertionOutcome(
                    text="final backend state equals the goal state",
                    passed=state_ok,
                    evidence="; ".join(diffs[:MAX_DIFFS]) or "the same document",
                )
            )
        outcomes += [
            AssertionOutcome(text=describe(a), passed=ok) for a, ok in zip(self.env_assertions, held, strict=True)
        ]
        outcomes += [
            AssertionOutcome(text=f"{a.name} was called", passed=ok)
            for a, ok in zip(self.required_actions, made, strict=True)
        ]
        outcomes += [AssertionOutcome(text=f"said {o!r}", passed=o not in missing) for o in self.required_outputs]
        if self.ended_by is not None and ending is not None:
            text = self.ended_by.describe() if ended else f"{self.ended_by.describe()}: it did not, so no reward"
            outcomes.insert(0, AssertionOutcome(text=text, passed=ended, evidence=ending.why))
        reward = 1.0 if ended and state_ok and not missing and not unmet and not not_made else 0.0
        return Grade(
            score=reward,
            assertions=outcomes,
            passed=reward == 1.0,
            details={
                "reward": reward,
                "state_diff": diffs[:MAX_DIFFS],
                "missing_outputs": missing,
                **({"env_assertions_failed": unmet} if self.env_assertions else {}),
                **({"required_actions_missing": not_made} if self.required_actions else {}),
                "actions_replayed": len(calls),
                "final_state": "live" if live is not None else "replayed",
                **({"initial_actions": len(actions)} if actions else {}),
                **({"goal_actions_failed": skipped} if skipped else {}),
                **({} if ending is None else {"episode_ended": ended, "episode_end": ending.why}),
            },
        )
