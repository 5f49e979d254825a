"""Pydantic models of the eval file (the AgentV v4 dialect)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    SerializeAsAny,
    field_validator,
    model_validator,
)

from .._base_model import Model
from .._templates import substitute
from ..errors import Problem
from ..graders import Assertion, EnvCall
from ..judging import Policy
from ..results import Message, Source, StopReason
from ._agentv import json_text
from ._controls import Budget, Capture, PostCondition, Verify, Workspace, one_or_many

DEFAULT_THRESHOLD = 0.8


class Strict(Model):
    model_config = ConfigDict(extra="forbid")


class ContentPart(Strict):
    """A content block of a message: text, or a `type: file` attachment (a text file read
    relative to the eval file when it loads, sent inline)."""

    type: Literal["text", "file"] = "text"
    value: str | None = None
    text: str | None = None

    @property
    def as_text(self) -> str:
        if self.type == "file":
            return f'<file path="{self.value}">\n{self.text or ""}\n</file>'
        return self.value or self.text or ""


MessageContent = str | list[ContentPart] | dict[str, object] | None
"""A message's content: text, content blocks, or a JSON object (sent as JSON text)."""


class InputMessage(Strict):
    """A message of a test's `input`, `expected_output` or a turn's `input`.

    `content` is a string, a list of content blocks, or a JSON object (sent as JSON text).
    """

    role: Literal["system", "user", "assistant", "tool"]
    name: str | None = Field(None, description="The speaker's name (AgentV, as in chat APIs); not sent.")
    content: MessageContent = None
    tool_calls: list[dict[str, object]] | None = Field(
        None, description="AgentV: an assistant message's tool calls `{tool, input, output}` (shown as JSON text)."
    )

    @model_validator(mode="after")
    def _has_content(self) -> InputMessage:
        if self.content is None and not self.tool_calls:
            raise ValueError("a message needs `content` (an assistant message may give `tool_calls` instead)")
        return self

    @property
    def text(self) -> str:
        calls = json_text({"tool_calls": self.tool_calls}) if self.tool_calls else ""
        if self.content is None:
            return calls
        if isinstance(self.content, str):
            text = self.content
        elif isinstance(self.content, dict):
            text = json_text(self.content)
        else:
            text = "\n".join(p.as_text for p in self.content)
        return f"{text}\n{calls}" if calls else text


Messages = str | list[InputMessage] | dict[str, object]


def messages_text(value: Messages | None) -> str | None:
    """The text of an `expected_output`: a string, a JSON object as JSON text, or the
    contents of its messages joined."""
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, dict):
        return json_text(value)
    return "\n".join(m.text for m in value)


def expected_messages(value: Messages | None) -> list[dict[str, object]] | None:
    """An `expected_output` as AgentV's list of messages (what its code-graders read): text or a
    JSON object as one assistant message, messages as written (JSON-object content kept)."""
    if value is None:
        return None
    if isinstance(value, (str, dict)):
        return [{"role": "assistant", "content": value}]
    return [m.model_dump(mode="json", exclude_none=True) for m in value]


def to_messages(value: Messages | None, default_role: str = "user", user_source: Source = "input") -> list[Message]:
    """Input as transcript messages: source `input`, or `user_source` for user messages."""
    if value is None:
        return []
    if isinstance(value, (str, dict)):
        text = value if isinstance(value, str) else json_text(value)
        if default_role == "user":  # the usual turn: nothing left to validate
            return [Message.trusted("user", text, user_source, None)]
        return [Message(role=default_role, content=text, source="input")]
    return [Message(role=m.role, content=m.text, source=user_source if m.role == "user" else "input") for m in value]


#: Most trials of one test (each trial is a whole conversation, kept in the result).
MAX_TRIALS = 1000


#: The most trials of `--trials auto` (adaptive trials) unless `trials.max` says otherwise.
AUTO_MAX_TRIALS = 20


class TrialsConfig(Strict):
    """`execution.trials`: how many independent runs of each test; with `until: decided`,
    trials run until the pass rate is surely above or below the threshold, at most `max`."""

    count: int = Field(1, ge=1, le=MAX_TRIALS)
    strategy: Literal["mean", "pass_at_k"] = "mean"
    cost_limit_usd: float | None = Field(None, ge=0)
    until: Literal["decided"] | None = Field(
        None, description="`decided`: stop once the pass rate's confidence sequence leaves the threshold."
    )
    max: int | None = Field(None, ge=1, le=MAX_TRIALS, description="Most trials with `until: decided` (default 20).")
    alpha: float = Field(0.05, gt=0, lt=1, description="Error rate of the `until: decided` decision.")

    @model_validator(mode="after")
    def _max_needs_until(self) -> TrialsConfig:
        if self.max is not None and self.until is None:
            raise ValueError("trials.max needs `until: decided` (adaptive trials); use `count` for a fixed number")
        if self.until is not None and "count" in self.model_fields_set:
            raise ValueError("trials: give `count` (a fixed number) or `until: decided` with `max`, not both")
        return self

    @property
    def adaptive(self) -> bool:
        return self.until == "decided"

    @property
    def most(self) -> int:
        """The most trials to run."""
        return (self.max or AUTO_MAX_TRIALS) if self.adaptive else self.count


class JudgeSettings(Strict):
    """`execution.judge` given as a mapping."""

    target: str | None = None
    repeats: int = Field(1, ge=1)
    temperature: float | None = 0.0


class Execution(Strict):
    """`execution` of a suite or a test."""

    target: str | None = None
    targets: list[str] | None = None
    judge: str | JudgeSettings | None = None
    judges: list[str] | None = Field(
        None, min_length=1, description="A judge panel: every LLM check is graded by each of these judges."
    )
    panel_rule: Literal["mean", "majority", "min"] | None = Field(
        None,
        description="How a judge panel's answers combine (default: majority for pass/fail checks, mean for scores).",
    )
    threshold: float | None = Field(None, ge=0, le=1)
    trials: int | Literal["auto"] | TrialsConfig | None = Field(
        None, description="Trials of each test: a number, `auto` (until decided, at most 20) or a mapping."
    )
    workers: int | None = Field(None, ge=1)
    backend: Literal["local", "ray"] | None = Field(
        None, description="Where conversations run: this process (local) or Ray tasks (ray); suite level."
    )
    skip_defaults: bool = Field(False, description="On a test: do not apply the suite's assertions (AgentV).")
    temperature: float | None = Field(
        None, ge=0, le=2, description="The target's sampling temperature for these tests (over the target's own)."
    )
    max_tokens: int | None = Field(
        None, ge=1, description="The most tokens the target may write per reply in these tests (over the target's own)."
    )
    budget_usd: float | None = Field(
        None,
        gt=0,
        description="Suite level, per target: once its finished tests' target calls cost this much (USD), its "
        "tests not started yet are left out (`budget_exhausted`), as AgentV's `budget_usd`.",
    )

    @field_validator("judges", mode="after")
    @classmethod
    def _distinct_judges(cls, value: list[str] | None) -> list[str] | None:
        if value is not None:
            for name in value:
                if not name.strip():
                    raise ValueError("a judge name must not be blank")
                if value.count(name) > 1:
                    raise ValueError(f"judge {name!r} is named twice")
        return value

    @model_validator(mode="after")
    def _one_judge_setting(self) -> Execution:
        if self.judges and isinstance(self.judge, str):
            raise ValueError("give `judge` (one judge) or `judges` (a panel), not both")
        if self.judges and isinstance(self.judge, JudgeSettings) and self.judge.target:
            raise ValueError("give `judge.target` (one judge) or `judges` (a panel), not both")
        return self

    @field_validator("trials", mode="after")
    @classmethod
    def _trials_as_config(cls, value: int | str | TrialsConfig | None) -> TrialsConfig | None:
        if isinstance(value, str):  # "auto"
            return TrialsConfig(until="decided")
        if isinstance(value, int):
            if value < 1:
                raise ValueError("trials must be at least 1")
            if value > MAX_TRIALS:
                raise ValueError(f"trials must be at most {MAX_TRIALS}")
            return TrialsConfig(count=value)
        return value


AssertionList = list[SerializeAsAny[Assertion]]


class Turn(Strict):
    """One user message of a conversation test and how to grade the reply."""

    input: Messages
    expected_output: Messages | None = None
    assertions: AssertionList = Field(default_factory=list)
    context: object = Field(None, description="Backend / database result for this turn (TD-Eval).")
    db_result: object = Field(None, description="Alias of context.")
    metadata: dict[str, object] = Field(default_factory=dict)
    capture: list[Capture] = Field(default_factory=list, description="Variables set from this turn's reply.")
    post_condition: PostCondition | None = Field(None, description="What the reply must say to go on.")

    @field_validator("capture", mode="before")
    @classmethod
    def _captures(cls, value: object) -> object:
        return one_or_many(value)

    @property
    def backend_result(self) -> object:
        return self.context if self.context is not None else self.db_result


class TranscriptMessage(Model):
    """One recorded message of a `transcript:`: OpenAI chat format (`tool_calls` with
    `function: {name, arguments}`, `tool` messages with `tool_call_id`) or a convoeval
    result message (`source`, `turn`, `tool_calls` with `name`, `arguments`, `output`)."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "user", "assistant", "tool"]
    content: str | None = None
    tool_calls: list[dict[str, object]] = Field(default_factory=list)
    tool_call_id: str | None = None
    name: str | None = None
    source: str | None = None


class FailedRun(Strict):
    """A trial of `transcripts:` whose recorded run failed before it made a conversation (a
    benchmark's runner recorded an error instead): graded as an execution error carrying
    `error`, a trial that did not pass (pass^k counts it, as the benchmark does)."""

    error: str = Field(min_length=1, description="What the recorded run failed with.")


#: The keys a test may use for its simulated user (the first is canonical).
SIMULATED_USER_KEYS = ("simulated_user", "user_simulator", "chatter_agent")


class SimulatedUser(Strict):
    """`simulated_user:` (aliases `user_simulator`, `chatter_agent`): an LLM plays the user.

    After the test's scripted `turns` (if any), the simulator writes each next user message
    from its persona and objective until it stops (objective met or impossible) or
    `max_turns` simulated turns were sent.
    """

    type: str = Field("llm", description="The simulator (registry kind `simulator`): `llm` is built in.")
    persona: str = Field("an ordinary user of this service", min_length=1, description="Who the user is.")
    objective: str = Field(min_length=1, description="What the user wants from the conversation.")
    knowledge: str | list[object] | dict[str, object] | None = Field(
        None, description="Facts the user gives only when asked (a mapping's keys name what is asked for)."
    )
    opening: str | None = Field(None, description="The first simulated message, verbatim (default: generated).")
    max_turns: int = Field(ge=1, le=100, description="Most user turns the simulator may take (required).")
    stop: str | list[str] = Field(default_factory=list, description="More stop conditions, in plain words.")
    model: str | None = Field(
        None, description="The simulator's model (`provider:model` or a target name; default: the judge)."
    )
    temperature: float | None = Field(None, ge=0, le=2)
    seed: int | None = None
    check_fidelity: bool = Field(False, description="Also run the simulator-fidelity check after the conversation.")

    @property
    def stop_conditions(self) -> list[str]:
        return [self.stop] if isinstance(self.stop, str) else list(self.stop)

    def filled(self, variables: Mapping[str, object]) -> SimulatedUser:
        """This user with the captured `{{ name }}` values put into its persona, objective,
        knowledge and stop conditions (the scripted turns that capture them come first)."""

        def fill(value: Any) -> Any:
            if isinstance(value, str):
                return substitute(value, variables)
            if isinstance(value, list):
                return [fill(item) for item in value]
            return {key: fill(item) for key, item in value.items()} if isinstance(value, dict) else value

        if not variables:
            return self
        return self.model_copy(
            update={k: fill(getattr(self, k)) for k in ("persona", "objective", "knowledge", "stop")}
        )


class Test(Strict):
    """One entry of `tests`."""

    __test__: ClassVar[bool] = False  # not a pytest test class

    id: str = Field(min_length=1)
    criteria: str | None = None
    input: Messages | None = None
    expected_output: Messages | None = None
    assertions: AssertionList = Field(default_factory=list)
    attachments: list[str] = Field(
        default_factory=list,
        description="The files attached to the input, as absolute paths (filled when the file loads; "
        "AgentV's `cli` target's `{FILES}`).",
    )
    mode: Literal["conversation"] | None = None
    turns: list[Turn] | None = None
    aggregation: Literal["mean", "min", "max"] | None = None
    on_turn_failure: Literal["continue", "stop"] | None = None
    window_size: int | None = Field(None, gt=0)
    depends_on: list[str] = Field(default_factory=list)
    on_dependency_failure: Literal["skip", "fail", "run"] = "skip"
    execution: Execution | None = None
    policy: Policy | None = None
    simulated_user: SimulatedUser | None = Field(None, validation_alias=AliasChoices(*SIMULATED_USER_KEYS))
    success: list[str] = Field(default_factory=list, description="Scenario criteria that mean the test passed.")
    failure: list[str] = Field(default_factory=list, description="Scenario criteria that mean the test failed.")
    turn_assertions: AssertionList = Field(default_factory=list, description="Applied to every agent turn.")
    transcript: list[TranscriptMessage] | None = Field(
        None, description="A recorded conversation, graded without calling a target."
    )
    transcripts: list[list[TranscriptMessage] | FailedRun] | None = Field(
        None,
        description="Recorded trials of the test: one conversation per trial (the test has as many trials), "
        "graded without calling a target; `{error: ...}` for a trial whose recorded run failed.",
    )
    stop_reason: StopReason | None = Field(
        None,
        description="How the recorded conversation ended when a simulated user played it (`objective_met`, "
        "`max_turns`...): conversation checks see it (`tau-reward`'s `ended_by`). `convoeval grade` sets it "
        "when it grades a simulated user's stored conversation again.",
    )
    error: str | None = Field(
        None,
        description="The error the recorded conversation ended in, as the tool that recorded it says (an Inspect "
        "sample's error): the test is an `execution_error` with this message, its turns graded all the same.",
    )
    budget_hit: str | None = Field(
        None,
        description="The limit the recorded conversation ran into, as the tool that recorded it says (an Inspect "
        "sample's `message_limit=6`): the test is `budget_exhausted`, as a live test that hit its `budget`.",
    )
    workspace: Workspace | None = Field(None, description="A working directory kept across the turns of a trial.")
    initial_actions: list[EnvCall] = Field(
        default_factory=list,
        description="Functions of the suite's `tools:` run in order on each trial's copy of its `backend` before "
        "the first turn (tau2-bench's `initialization_actions`): the agent's and the simulated user's tools "
        "start from that state, and `tau-reward` replays from it.",
    )
    verify: Verify | None = Field(None, description="A command run after each turn; exit 0 stops early with success.")
    budget: Budget | None = Field(None, description="Tool-call, time, token and cost limits per turn / conversation.")
    hints: list[str] = Field(
        default_factory=list,
        description="Hint k is sent (source: hint) before turn k+2 when verify failed after turn k+1.",
    )
    vars: dict[str, object] | None = Field(
        None,
        description="AgentV v4.42: values for `{{ name }}` (dotted paths) in this test's criteria, input, "
        "expected_output and turns, and in the suite's input for this test.",
    )
    metadata: dict[str, object] = Field(default_factory=dict)
    skip: str | None = Field(
        None,
        min_length=1,
        description="Why this test is not run: its result is `skipped` with this reason (set for a test AgentV "
        "skips, e.g. one whose llm-rubric prompt file has neither {{ output }} nor {{ expected_output }}).",
    )

    @field_validator("depends_on", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, str) else value

    @property
    def is_conversation(self) -> bool:
        return (
            self.mode == "conversation"
            or self.simulated_user is not None
            or self.transcript is not None
            or self.transcripts is not None
        )


TargetRole = Literal["target", "judge", "check", "simulator"]


@dataclass(frozen=True)
class TargetName:
    """A target an eval file names, and where (`at`: its file, line and field).

    `role`: `target` (the suite's `execution.target(s)`) and `judge` (its `execution.judge(s)`),
    which a run's --target and --judge replace; `check` (an assertion's own `judge`) and
    `simulator` (a simulated user's `model`), which no option replaces. A test's own
    `execution.target(s)` are not among them: they choose among the run's targets.
    """

    name: str
    role: TargetRole
    at: Problem


def _private(model: BaseModel) -> dict[str, Any]:
    """The model's private attributes, from pydantic's own dict of them."""
    return model.__pydantic_private__  # type: ignore[return-value]  # a dict: the model declares some


class Suite(Strict):
    """One eval file."""

    name: str | None = None
    description: str | None = None
    plugins: list[str] = Field(
        default_factory=list,
        description="Python modules, or .py files relative to this file, imported before the tests "
        "are read: they register assertion types, providers...",
    )
    input: Messages | None = None
    tests: list[Test]
    execution: Execution | None = None
    assertions: AssertionList = Field(default_factory=list)
    turn_assertions: AssertionList = Field(default_factory=list, description="Applied to every agent turn.")
    policy: Policy | None = None
    metadata: dict[str, object] = Field(default_factory=dict)
    tools: str | None = Field(
        None,
        description="A Python file or module whose public functions `name(state, /, **arguments)` are the "
        "domain's tools: offered to agents with `agent:`, run on each trial's copy of `backend`.",
    )
    backend: str | dict[str, object] | None = Field(
        None, description="The domain's initial state (a JSON/YAML file or the document); each trial gets a copy."
    )
    workspace: Workspace | None = Field(None, description="The workspace of every test that gives none of its own.")

    _path: Path | None = PrivateAttr(None)
    _agentv: bool = PrivateAttr(False)
    _target_names: tuple[TargetName, ...] = PrivateAttr(())
    _inline_targets: dict[str, Any] = PrivateAttr(default_factory=dict)

    # The properties below read the private attributes from pydantic's own dict of them (which
    # `self._path` reaches only after a failed lookup): every test's plan reads them.
    @property
    def path(self) -> Path | None:
        return _private(self)["_path"]

    @property
    def agentv(self) -> bool:
        """Whether the file is AgentV's (a `.agentv/` folder at or above it, up to the repository root)."""
        return _private(self)["_agentv"]

    @property
    def target_names(self) -> tuple[TargetName, ...]:
        """The targets, judges and simulator models the file names, each where it names it."""
        return _private(self)["_target_names"]

    @property
    def inline_targets(self) -> dict[str, Any]:
        """Target configs by name the file declares itself (AgentV main's providers written inline)."""
        return _private(self)["_inline_targets"]

    @property
    def base_dir(self) -> Path:
        path = self.path
        return path.parent if path else Path.cwd()

    @property
    def display_name(self) -> str:
        if self.name:
            return self.name
        path = self.path
        if path:
            return path.name.removesuffix(".yaml").removesuffix(".yml").removesuffix(".eval")
        return "suite"
