"""The eval file an importer makes, as plain data (what `write_suite` writes as YAML).

Only the keys importers write are listed; `spec` validates the file when it is loaded.
Assertions, policies, simulated users and metadata are JSON objects in the eval-file
language (see `spec`), passed through as `JsonObject`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, Required, TypedDict, TypeGuard, get_args

from pydantic import JsonValue

from ._common import JsonObject

if TYPE_CHECKING:
    from ._chat_logs import LoggedMessage


class RecordedCall(TypedDict, total=False):
    """A recorded tool call, in convoeval's shape."""

    name: Required[str]
    arguments: JsonObject
    id: JsonValue
    output: JsonValue
    error: JsonValue
    duration_ms: JsonValue


class Message(TypedDict, total=False):
    """A chat message of a test's `input` or `transcript:`. `tool_calls` are convoeval's
    (`{name, arguments, id?, output?, ...}`) or, from OpenAI-format logs, OpenAI's."""

    role: Required[JsonValue]
    content: Required[JsonValue]
    tool_calls: list[RecordedCall] | JsonValue
    tool_call_id: JsonValue
    name: JsonValue
    source: JsonValue


def with_call_fields(message: Message, raw: Mapping[str, JsonValue] | LoggedMessage) -> Message:
    """`message` with the `tool_calls`, `tool_call_id`, `name` and `source` that `raw` sets (empty
    ones left out)."""
    if tool_calls := raw.get("tool_calls"):
        message["tool_calls"] = tool_calls
    if call_id := raw.get("tool_call_id"):
        message["tool_call_id"] = call_id
    if name := raw.get("name"):
        message["name"] = name
    if source := raw.get("source"):
        message["source"] = source
    return message


class Matches(TypedDict):
    """The database entities matching a belief state: how many, and the first few names."""

    count: int
    matches: list[str]


#: Dialogue acts as MultiWOZ gives them: each act with its `[slot, value]` pairs, in order (a
#: slot may appear more than once: `Train-Inform: [[leaveat, "23:39"], [leaveat, "5:39"]]`).
Acts = dict[str, list[list[str]]]


class BackendContext(TypedDict, total=False):
    """What the judges see as a turn's backend result (MultiWOZ): belief state, database
    matches, the reference system's dialogue acts."""

    belief_state: dict[str, dict[str, str]]
    db: dict[str, Matches]
    reference_acts: Acts


class Turn(TypedDict, total=False):
    """A scripted turn of a `mode: conversation` test."""

    input: Required[str | list[Message]]
    expected_output: str
    context: JsonValue | BackendContext
    assertions: list[JsonObject]
    metadata: JsonObject


class FailedRun(TypedDict):
    """A recorded trial whose run failed before it made a conversation (`transcripts:` item)."""

    error: str


class SuiteTest(TypedDict, total=False):
    """One test of the suite (single turn, scripted conversation, simulated user, or recorded
    transcripts)."""

    id: Required[str]
    input: str | list[Message]
    mode: str
    turns: list[Turn]
    transcript: list[Message]
    transcripts: list[list[Message] | FailedRun]
    simulated_user: JsonObject
    expected_output: JsonValue
    criteria: JsonValue
    success: list[JsonValue]
    failure: list[JsonValue]
    assertions: list[JsonObject]
    initial_actions: list[JsonObject]
    policy: JsonObject
    execution: JsonObject
    error: str
    budget_hit: str
    metadata: JsonObject


class Skipped(TypedDict):
    """A record the importer left out, and why."""

    id: str
    reason: str


class SuiteMetadata(TypedDict, total=False):
    """Where the suite came from."""

    source: str
    imported_by: str
    licence: str
    paper: str
    database: bool
    skipped: list[Skipped]
    promptfoo_providers: list[str]
    promptfoo_provider_settings: JsonObject
    tau2_commit: str
    infrastructure_errors: list[JsonObject]


class Suite(TypedDict, total=False):
    """An imported suite (`tests` always set, as the last key)."""

    name: Required[str]
    description: Required[str]
    metadata: SuiteMetadata
    input: list[Message]
    policy: JsonObject
    execution: JsonObject
    tools: str
    backend: str
    tests: list[SuiteTest]


GraderKey = Literal["turn_assertions", "assertions", "policy", "execution", "metadata", "plugins"]
GRADER_KEYS: tuple[GraderKey, ...] = get_args(GraderKey)


def is_grader_key(key: str) -> TypeGuard[GraderKey]:
    """Whether `key` is a suite key a `--graders` file may set."""
    return key in GRADER_KEYS


class Graders(TypedDict, total=False):
    """The suite keys of a `--graders` file: the user's YAML, passed through to `spec`."""

    turn_assertions: object
    assertions: object
    policy: object
    execution: object
    metadata: object
    plugins: object


class GradingSuite(Graders, total=False):
    """The suite `convoeval grade` runs on recorded conversations: their tests and the graders."""

    name: Required[str]
    description: Required[str]
    tests: Required[list[SuiteTest]]
