"""Planning a test: its suite's input and assertions, implicit graders, threshold, trials and
the steps its trials run."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal, TypeVar

from ..graders import Assertion, lookup_assertion_type
from ..judging import format_policy
from ..results import Message
from ..spec import (
    DEFAULT_THRESHOLD,
    Execution,
    FailedRun,
    Suite,
    Test,
    TranscriptMessage,
    TrialsConfig,
    expected_messages,
    messages_text,
    suite_input_for,
    to_messages,
)
from ..targets import ChatReply
from ._plan import FIDELITY_TYPE, TestPlan, TurnPlan
from ._recorded import split_transcript
from ._steps import choose_steps

T = TypeVar("T")


def plan_test(
    suite: Suite, test: Test, *, threshold: float | None = None, trials: int | Literal["auto"] | None = None
) -> TestPlan:
    """Resolve a test: suite input and assertions, implicit graders, threshold, trials and the
    steps its trials run.

    Precedence: the run's threshold/trials, then the test's `execution`, then the suite's.
    `trials="auto"` makes trials adaptive (`until: decided`, keeping the suite's `max`).
    """
    suite_exec, test_exec = suite.execution, test.execution
    resolved_threshold = _first(
        threshold,
        test_exec.threshold if test_exec else None,
        suite_exec.threshold if suite_exec else None,
        DEFAULT_THRESHOLD,
    )
    trials_config = _trials(test_exec) or _trials(suite_exec) or TrialsConfig()
    executions = [e for e in (test_exec, suite_exec) if e is not None]  # the test's first: its sampling
    if trials == "auto":
        trials_config = trials_config.model_copy(update={"until": "decided"})
    elif trials is not None:
        trials_config = trials_config.model_copy(update={"count": trials, "until": None, "max": None})
    if test.transcripts is not None:  # one trial per recorded conversation, whatever the run asks
        trials_config = trials_config.model_copy(update={"count": len(test.transcripts), "until": None, "max": None})
    skip_defaults = bool(test.execution and test.execution.skip_defaults)  # AgentV: no suite input, no suite assertions
    every_turn = [*test.turn_assertions, *suite.turn_assertions]
    before, turns, conversation, recorded = _turns(suite, test, every_turn)
    initial = ([] if skip_defaults else to_messages(suite_input_for(suite, test))) + before  # AgentV v4.42 vars
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
        temperature=next((e.temperature for e in executions if e.temperature is not None), None),
        max_tokens=next((e.max_tokens for e in executions if e.max_tokens is not None), None),
        aggregation=test.aggregation or "mean",
        stop_on_failure=test.on_turn_failure == "stop",
        window_size=test.window_size,
        policy=policy,
        metadata={**suite.metadata, **test.metadata},
        recorded=recorded,
        failed_run=_failed_run(test.transcripts[0] if test.transcripts else None),
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
        agentv=suite.agentv,
    )
    plan.steps = choose_steps(plan)
    plan.other_trials = _other_trials(plan, test, every_turn, len(before))
    return plan


def _other_trials(plan: TestPlan, test: Test, every_turn: list[Assertion], first_before: int) -> list[TestPlan]:
    """The plans of trials 1, 2, ... of a test with `transcripts:` (trial 0 is `plan`): each
    replays its own recorded conversation."""
    if not test.transcripts or len(test.transcripts) < 2:
        return []
    prefix = plan.initial[: len(plan.initial) - first_before]  # the policy and the suite's input
    plans = []
    for transcript in test.transcripts[1:]:
        before, users, recorded = _replay(transcript)
        turns = [TurnPlan(messages=messages, assertions=list(every_turn)) for messages in users]
        failed = _failed_run(transcript)
        plans.append(replace(plan, initial=[*prefix, *before], turns=turns, recorded=recorded, failed_run=failed))
    return plans


def _replay(
    recording: list[TranscriptMessage] | FailedRun,
) -> tuple[list[Message], list[list[Message]], list[ChatReply]]:
    """A recorded conversation's initial messages, user turns and replies (none for a failed run)."""
    return ([], [], []) if isinstance(recording, FailedRun) else split_transcript(recording)


def _failed_run(recording: list[TranscriptMessage] | FailedRun | None) -> str | None:
    return recording.error if isinstance(recording, FailedRun) else None


def _turns(
    suite: Suite, test: Test, every_turn: list[Assertion]
) -> tuple[list[Message], list[TurnPlan], list[Assertion], list[ChatReply] | None]:
    """The test's messages before its first turn, its turns, its conversation assertions, and
    the replies of a recorded (`transcript:`) test (of its first trial, for `transcripts:`)."""
    recording = test.transcripts[0] if test.transcripts else test.transcript
    if recording is not None:
        before, users, recorded = _replay(recording)
        turns = [TurnPlan(messages=messages, assertions=list(every_turn)) for messages in users]
        return before, turns, [*test.assertions, *suite.assertions], recorded
    if not test.is_conversation:
        expected = messages_text(test.expected_output)
        assertions = [*test.assertions, *_defaults(suite, test)]
        turn = TurnPlan(
            messages=to_messages(test.input, user_source="user"),
            assertions=[*(assertions or _implicit(expected, test.criteria, suite.agentv)), *every_turn],
            expected_output=expected,
            expected_messages=expected_messages(test.expected_output),
        )
        return [], [turn], [], None
    turns = [
        TurnPlan(
            messages=to_messages(turn.input, user_source="user"),
            assertions=[*(list(turn.assertions) or _implicit(messages_text(turn.expected_output), None)), *every_turn],
            expected_output=messages_text(turn.expected_output),
            expected_messages=expected_messages(turn.expected_output),
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
    return to_messages(test.input), turns, conversation, None


def _defaults(suite: Suite, test: Test) -> list[Assertion]:
    """The suite's assertions, unless the test's `execution.skip_defaults` opts out (AgentV)."""
    return [] if test.execution and test.execution.skip_defaults else list(suite.assertions)


def _implicit(expected_output: str | None, criteria: str | None, always: bool = False) -> list[Assertion]:
    """AgentV's fallback: an llm-grader against expected_output and/or criteria; with neither,
    none, unless `always` (AgentV's files: its default llm-grader, `orchestrator.ts` v4.42.4
    lines 2611-2621, judges a test left without assertions whatever it has)."""
    if expected_output is None and not criteria and not always:
        return []
    grader = lookup_assertion_type("llm-grader")
    if grader is None:  # pragma: no cover - llm-grader is built in
        return []
    name = "expected_output" if expected_output is not None else "criteria" if criteria else "llm-grader"
    return [grader.model_validate({"type": "llm-grader", "name": name})]


def _trials(execution: Execution | None) -> TrialsConfig | None:
    """`execution.trials` (a number or `auto` is a TrialsConfig once validated), or None."""
    trials = execution.trials if execution else None
    return trials if isinstance(trials, TrialsConfig) else None


def _first(*values: T | None) -> T:
    return next(v for v in values if v is not None)
