"""A test resolved against its suite and the run options: what the loop executes."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from ..graders import Assertion, Domain, lookup_assertion_type
from ..judging import format_policy
from ..results import Message
from ..spec import (
    DEFAULT_THRESHOLD,
    Budget,
    Capture,
    Policy,
    PostCondition,
    SimulatedUser,
    Suite,
    Test,
    TrialsConfig,
    Verify,
    Workspace,
    messages_text,
    to_messages,
)
from ..targets import ChatReply
from ._recorded import split_transcript

#: The assertion type that judges the simulated user rather than the target.
FIDELITY_TYPE = "simulator-fidelity"


#: A recorded conversation split for replay: (initial messages, user messages per turn, replies).
Replay = tuple[list[Message], list[list[Message]], list[ChatReply]]

#: Domains loaded so far, by (tools, backend, folder): a module is imported once per run.
_DOMAINS: dict[tuple[str, str, str], Domain] = {}


@dataclass
class TurnPlan:
    """One turn: the user messages to send and how to grade the reply."""

    messages: list[Message]
    assertions: list[Assertion]
    expected_output: str | None = None
    context: Any = None
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
    aggregation: Literal["mean", "min", "max"] = "mean"
    stop_on_failure: bool = False
    window_size: int | None = None
    policy: Policy | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    recorded: list[ChatReply] | None = None  # a `transcript:` test's replies: no target is called
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
    backend: str | dict[str, Any] | None = None

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
            _DOMAINS[key] = Domain.load(self.tools, backend, self.base_dir)
        return _DOMAINS[key]

    @property
    def id(self) -> str:
        return self.test.id

    @property
    def mode(self) -> Literal["single", "conversation"]:
        return "conversation" if self.test.is_conversation else "single"

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


def plan_test(suite: Suite, test: Test, *, threshold: float | None = None, trials: int | None = None) -> TestPlan:
    """Resolve a test: suite input and assertions, implicit graders, threshold and trials.

    Precedence: the run's threshold/trials, then the test's `execution`, then the suite's.
    """
    suite_exec, test_exec = suite.execution, test.execution
    resolved_threshold = _first(
        threshold,
        test_exec.threshold if test_exec else None,
        suite_exec.threshold if suite_exec else None,
        DEFAULT_THRESHOLD,
    )
    trials_config = _first(
        test_exec.trials if test_exec else None,
        suite_exec.trials if suite_exec else None,
        TrialsConfig(),
    )
    if trials is not None:
        trials_config = trials_config.model_copy(update={"count": trials})
    skip_defaults = bool(test.execution and test.execution.skip_defaults)  # AgentV: no suite input, no suite assertions
    initial = [] if skip_defaults else to_messages(suite.input)
    every_turn = [*test.turn_assertions, *suite.turn_assertions]
    recorded: list[ChatReply] | None = None
    replays = [split_transcript(t) for t in test.transcripts or ([test.transcript] if test.transcript else [])]
    if replays:
        before, users, recorded = replays[0]
        initial += before
        turns = [TurnPlan(messages=messages, assertions=list(every_turn)) for messages in users]
        conversation = [*test.assertions, *suite.assertions]
        if test.transcripts is not None:  # one trial per recorded conversation
            trials_config = trials_config.model_copy(update={"count": len(replays)})
    elif test.is_conversation:
        initial += to_messages(test.input)
        turns = [
            TurnPlan(
                messages=_as_user(to_messages(turn.input)),
                assertions=[
                    *(list(turn.assertions) or _implicit(messages_text(turn.expected_output), None)),
                    *every_turn,
                ],
                expected_output=messages_text(turn.expected_output),
                context=turn.backend_result,
                captures=list(turn.capture),
                post_condition=turn.post_condition,
            )
            for turn in test.turns or []
        ]
        conversation = [*test.assertions, *_defaults(suite, test)]
        if (
            not conversation
            and not every_turn
            and not test.success
            and not test.failure
            and not any(turn.assertions for turn in test.turns or [])
            and test.criteria
        ):
            conversation = _implicit(None, test.criteria)
    else:
        expected = messages_text(test.expected_output)
        assertions = [*test.assertions, *_defaults(suite, test)]
        turns = [
            TurnPlan(
                messages=_as_user(to_messages(test.input)),
                assertions=[*(assertions or _implicit(expected, test.criteria)), *every_turn],
                expected_output=expected,
            )
        ]
        conversation = []
    policy = test.policy or suite.policy
    if policy is not None and policy.system_prompt:  # the agent is told the policy too
        initial = [Message(role="system", content=format_policy(policy) or "", source="input"), *initial]
    fidelity = [a for a in conversation if a.type == FIDELITY_TYPE]
    conversation = [a for a in conversation if a.type != FIDELITY_TYPE]
    simulated = test.simulated_user
    if simulated is not None and simulated.check_fidelity and not fidelity:
        fidelity = [lookup_assertion_type(FIDELITY_TYPE).model_validate({"type": FIDELITY_TYPE})]  # type: ignore[union-attr]
    plan = TestPlan(
        test=test,
        suite_name=suite.display_name,
        base_dir=suite.base_dir,
        initial=initial,
        turns=turns,
        conversation_assertions=conversation,
        threshold=resolved_threshold,
        trials=trials_config,
        aggregation=test.aggregation or "mean",
        stop_on_failure=test.on_turn_failure == "stop",
        window_size=test.window_size,
        policy=policy,
        metadata={**suite.metadata, **test.metadata},
        recorded=recorded,
        simulated_user=simulated,
        turn_assertions=every_turn,
        success=list(test.success),
        failure=list(test.failure),
        fidelity=fidelity,
        workspace=test.workspace or suite.workspace,
        verify=test.verify,
        hints=list(test.hints),
        budget=test.budget,
        tools=suite.tools,
        backend=suite.backend,
    )
    plan.other_trials = _other_trials(plan, replays, every_turn)
    return plan


def _other_trials(plan: TestPlan, replays: list[Replay], every_turn: list[Assertion]) -> list[TestPlan]:
    """The plans of trials 1, 2, ... of a test with `transcripts:` (trial 0 is `plan`)."""
    if len(replays) < 2:
        return []
    prefix = plan.initial[: len(plan.initial) - len(replays[0][0])]  # the policy and the suite's input
    return [
        replace(
            plan,
            initial=[*prefix, *before],
            turns=[TurnPlan(messages=messages, assertions=list(every_turn)) for messages in users],
            recorded=replies,
        )
        for before, users, replies in replays[1:]
    ]


def _defaults(suite: Suite, test: Test) -> list[Assertion]:
    """The suite's assertions, unless the test's `execution.skip_defaults` opts out (AgentV)."""
    return [] if test.execution and test.execution.skip_defaults else list(suite.assertions)


def _implicit(expected_output: str | None, criteria: str | None) -> list[Assertion]:
    """AgentV's fallback: an llm-grader against expected_output and/or criteria."""
    if expected_output is None and not criteria:
        return []
    grader = lookup_assertion_type("llm-grader")
    if grader is None:  # pragma: no cover - llm-grader is built in
        return []
    name = "expected_output" if expected_output is not None else "criteria"
    return [grader.model_validate({"type": "llm-grader", "name": name})]


def _as_user(messages: list[Message]) -> list[Message]:
    """Messages a test sends as the user are marked `source: user`; system messages stay `input`."""
    return [m.model_copy(update={"source": "user"}) if m.role == "user" else m for m in messages]


def _first(*values: Any) -> Any:
    return next(v for v in values if v is not None)
