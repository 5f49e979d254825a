"""tau2-bench's checks beyond the database: a task's initial actions, its environment
assertions and its required actions (sierra-research/tau2-bench a2c0247:
src/tau2/environment/environment.py `set_state`, `run_env_assertion`;
src/tau2/evaluator/evaluator_env.py, evaluator_action.py; src/tau2/data_model/tasks.py `Action`).

- `initial_actions`: environment functions (the tools file's `ENV_FUNCTIONS`, or its tools) run
  in order on the initial state before anything is replayed (`Domain.initial_state`); one that
  fails makes the task broken (tau2 raises then too).
- the episode's calls are replayed in the transcript's order, the agent's through the agent's
  tools and the user's through the user's (`USER_TOOLS`); a call to a tool its side lacks, or
  one that fails, changes nothing (tau2's replay skips an unknown tool; a failing call's error is
  what was recorded).
- `env_assertions`: functions run in order on the final state, each returning a bool that must
  equal `expected`; one that raises or returns anything else could not decide (an error).
- `required_actions`: each must be among the episode's tool calls, the agent's or the user's:
  same name and, of the arguments `compare_args` lists (all the call's arguments when not
  given; none when empty), the same values (tau2's `Action.compare_with_tool_call`).
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from .._base_model import Model
from ..results import ToolCall
from ._base import GraderError
from ._cow import fork
from ._env_call import EnvCall
from ._tau_backend import Domain, call_function

__all__ = ["EnvAssertion", "EnvCall", "RequiredAction", "assertion_results", "describe"]


class EnvAssertion(EnvCall):
    """An environment function whose result (a bool) must be `expected`."""

    expected: bool = Field(True, description="What the function must return.")
    message: str | None = Field(None, description="What the assertion means (shown when it fails).")


class RequiredAction(Model):
    """A tool call the agent or the user must have made (tau2's ACTION reward)."""

    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, object] = Field(default_factory=dict)
    compare_args: list[str] | None = Field(
        None, description="The arguments compared (default: all the call's own; [] compares the name only)."
    )

    def matches(self, call: ToolCall) -> bool:
        """tau2's `Action.compare_with_tool_call`."""
        if call.name != self.name:
            return False
        keys = list(call.arguments) if self.compare_args is None else self.compare_args
        if not keys:
            return True
        made = {k: v for k, v in call.arguments.items() if k in keys}
        wanted = {k: v for k, v in self.arguments.items() if k in keys}
        return made == wanted


def assertion_results(domain: Domain, state: object, assertions: list[EnvAssertion]) -> list[bool]:
    """Whether each assertion holds on `state` (run in order on a copy of it)."""
    state = fork(state)
    held = []
    for assertion in assertions:
        fn = domain.function(assertion.name, "env_assertions")
        try:
            result = call_function(fn, assertion.name, state, assertion.arguments)
        except GraderError:
            raise
        except Exception as exc:
            raise GraderError(f"env_assertions: {assertion.name} failed: {type(exc).__name__}: {exc}") from None
        if not isinstance(result, bool):
            raise GraderError(f"env_assertions: {assertion.name} returned {type(result).__name__}, not a bool")
        held.append(result == assertion.expected)
    return held


def describe(assertion: EnvAssertion) -> str:
    arguments = ", ".join(f"{k}={v!r}" for k, v in assertion.arguments.items())
    text = f"{assertion.name}({arguments}) is {assertion.expected}"
    return f"{text}: {assertion.message}" if assertion.message else text
