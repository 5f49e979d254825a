"""A test resolved against its suite and the run options: what the loop executes (the plan's
data; `_planner.py` makes it)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from .. import graders
from ..graders import Assertion
from ..results import Message
from ..spec import (
    Budget,
    Capture,
    Policy,
    PostCondition,
    SimulatedUser,
    Test,
    TrialsConfig,
    Verify,
    Workspace,
)
from ..targets import ChatReply

if TYPE_CHECKING:
    from ..graders import Domain
    from ._steps import StepFactory

#: The assertion type that judges the simulated user rather than the target.
FIDELITY_TYPE = "simulator-fidelity"


#: Domains loaded so far, by (tools, backend, folder): a module is imported once per run.
_DOMAINS: dict[tuple[str, str, str], Domain] = {}


@dataclass
class TurnPlan:
    """One turn: the user messages to send and how to grade the reply."""

    messages: list[Message]
    assertions: list[Assertion]
    expected_output: str | None = None
    expected_messages: list[dict[str, object]] | None = None  # the same as messages (AgentV's code-graders)
    context: object = None
    captures: list[Capture] = field(default_factory=list)
    post_condition: PostCondition | None = None


@dataclass
class TestPlan:
    """Everything needed to run one test: no further lookups in the suite."""

    __test__ = False  # not a pytest test class

    test: Test
    suite_name: str
    base_dir: Path
    initial: list[Message]
    turns: list[TurnPlan]
    conversation_assertions: list[Assertion]
    threshold: float
    trials: TrialsConfig
    temperature: float | None = None  # the target's sampling for this test (`execution`), else its own
    max_tokens: int | None = None
    aggregation: Literal["mean", "min", "max"] = "mean"
    stop_on_failure: bool = False
    window_size: int | None = None
    policy: Policy | None = None
    metadata: dict[str, object] = field(default_factory=dict)
    recorded: list[ChatReply] | None = None  # a `transcript:` test's replies: no target is called
    failed_run: str | None = None  # `transcripts:`: this trial's recorded run failed with this error
    other_trials: list[TestPlan] = field(default_factory=list)  # `transcripts:`: trials 1, 2, ... replay their own
    simulated_user: SimulatedUser | None = None
    turn_assertions: list[Assertion] = field(default_factory=list)  # for turns the simulator makes up
    success: list[str] = field(default_factory=list)
    failure: list[str] = field(default_factory=list)
    fidelity: list[Assertion] = field(default_factory=list)  # simulator-fidelity checks
    workspace: Workspace | None = None
    verify: Verify | None = None
    hints: list[str] = field(default_factory=list)
    budget: Budget | None = None
    tools: str | None = None  # the suite's domain: tool functions over `backend`
    backend: str | dict[str, object] | None = None
    agentv: bool = False  # the eval file is AgentV's (its `cli` target runs in `base_dir`)
    steps: tuple[StepFactory, ...] = ()  # what its trials run besides the turns (`choose_steps`)

    def for_trial(self, trial: int) -> TestPlan:
        """The plan of one trial: itself, except for a test with `transcripts:` (one per trial)."""
        return self.other_trials[trial - 1] if 0 < trial <= len(self.other_trials) else self

    def domain(self) -> Domain | None:
        """The suite's domain (loaded once per tools/backend pair), or None without `tools:`.

        Raises:
            GraderError: the tools module or the backend cannot be loaded.
        """
        if self.tools is None:
            return None
        backend = self.backend if self.backend is not None else {}
        key = (self.tools, json.dumps(backend, sort_keys=True), str(self.base_dir))
        if key not in _DOMAINS:
            _DOMAINS[key] = graders.Domain.load(self.tools, backend, self.base_dir)
        return _DOMAINS[key]

    @property
    def id(self) -> str:
        return self.test.id

    @property
    def mode(self) -> Literal["single", "conversation"]:
        return "conversation" if self.test.is_conversation else "single"

    @cached_property
    def captured_names(self) -> frozenset[str]:
        """The variables the test's turns capture (`{{ name }}` of one is never sent unfilled)."""
        return frozenset(rule.name for turn in self.turns for rule in turn.captures)

    @property
    def all_assertions(self) -> list[Assertion]:
        """Every assertion the plan may run (to decide whether the run needs a judge)."""
        return [
            *self.conversation_assertions,
            *self.fidelity,
            *self.turn_assertions,
            *(a for t in self.turns for a in t.assertions),
        ]

    @property
    def needs_judge(self) -> bool:
        """Whether a judge model is needed: LLM graders, scenario criteria, or a simulated user
        without a model of its own (it defaults to the judge)."""
        simulator_default = self.simulated_user is not None and self.simulated_user.model is None
        return bool(self.success or self.failure) or simulator_default or any(a.uses_judge for a in self.all_assertions)
