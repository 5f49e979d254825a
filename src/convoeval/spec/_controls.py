"""Per-turn controls of the eval file: `capture` (set variables from a reply) and
`post_condition` (what a reply must say for the conversation to go on)."""

from __future__ import annotations

from typing import Literal

from pydantic import ConfigDict, Field, field_validator, model_validator
from pydantic.json_schema import JsonSchemaValue

from .._base_model import Model
from .._jsonpath import parse_jsonpath
from .._regex import check_pattern, compile_pattern
from .._sandbox import SandboxSettings

NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def _not_an_option(value: str | None) -> str | None:
    """A value convoeval puts on a command line it runs on the host (git's ref, docker's image):
    one that starts with `-` would be read as an option there (git's `--upload-pack=CMD` runs CMD)."""
    if value is not None and value.lstrip().startswith("-"):
        raise ValueError(f"{value!r} starts with `-`: the command it is given to would read it as an option")
    return value


class Capture(Model):
    """`capture: [{name, from, regex | jsonpath, group, on_missing}]` of a turn.

    `from`: `reply` (the reply text, default), `json` (the reply parsed as JSON; needs
    `jsonpath`), or `tool:NAME` (the output of the last call to tool NAME). `regex` captures
    its `group` (default 1, or 0 when the pattern has no group); `jsonpath` its first match;
    with neither, the whole text. A `regex` search has a time bound (2 s): one that takes
    longer (a pattern backtracking catastrophically) makes the test an `execution_error`.
    The value is substituted as `{{ name }}` in later turns'
    inputs, assertions and grader prompts.

    `on_missing`: `fail` (the turn fails, default), `skip_remaining` (no further turns are
    sent), or `continue` (noted, nothing else).
    """

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str = Field(pattern=NAME, description="The variable's name, used as {{ name }}.")
    source: str = Field("reply", alias="from", description="reply | json | tool:NAME")
    regex: str | None = None
    group: int | str | None = None
    jsonpath: str | None = None
    on_missing: Literal["fail", "skip_remaining", "continue"] = "fail"

    @field_validator("source")
    @classmethod
    def _known_source(cls, value: str) -> str:
        if value in ("reply", "json") or (value.startswith("tool:") and value[5:].strip()):
            return value
        raise ValueError("`from` is reply, json or tool:NAME")

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str | None) -> str | None:
        return check_pattern(value) if value is not None else None

    @field_validator("jsonpath")
    @classmethod
    def _parses(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_jsonpath(value)
            except Exception as exc:  # jsonpath-ng raises several exception types
                raise ValueError(f"not a valid JSONPath: {exc}") from None
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Capture:
        if self.regex is not None and self.jsonpath is not None:
            raise ValueError("give `regex` or `jsonpath`, not both")
        if self.source == "json" and self.jsonpath is None:
            raise ValueError("`from: json` needs a `jsonpath`")
        if self.group is not None and self.regex is None:
            raise ValueError("`group` needs a `regex`")
        if self.regex is not None and self.group is not None:
            pattern = compile_pattern(self.regex)
            if isinstance(self.group, int) and self.group > pattern.groups:
                raise ValueError(f"the regex has {pattern.groups} group(s), not {self.group}")
            if isinstance(self.group, str) and self.group not in pattern.groupindex:
                raise ValueError(f"the regex has no group named {self.group!r}")
        return self


class RegexItem(Model):
    """A post-condition item given as a regular expression: `{regex: PATTERN}`."""

    model_config = ConfigDict(extra="forbid")

    regex: str

    @field_validator("regex")
    @classmethod
    def _compiles(cls, value: str) -> str:
        return check_pattern(value)


Pattern = str | RegexItem


class PostCondition(Model):
    """`post_condition` of a turn: checked on the reply before the next turn is sent.

    Items are plain strings (substrings, `ignore_case` optional) or `{regex: PATTERN}`; they
    may use captured variables as `{{ name }}`. `on_fail: skip_remaining` (default) records
    the failure and sends no further turns; `fail` fails the turn (score 0) and goes on.
    A `{regex: ...}` search over its time bound (2 s) makes the test an `execution_error`.
    """

    model_config = ConfigDict(extra="forbid")

    must_contain_any: list[Pattern] = Field(default_factory=list)
    must_contain_all: list[Pattern] = Field(default_factory=list)
    must_not_contain: list[Pattern] = Field(default_factory=list)
    ignore_case: bool = False
    on_fail: Literal["skip_remaining", "fail"] = "skip_remaining"

    @model_validator(mode="after")
    def _not_empty(self) -> PostCondition:
        if not (self.must_contain_any or self.must_contain_all or self.must_not_contain):
            raise ValueError("give must_contain_any, must_contain_all or must_not_contain")
        return self


def one_or_many(value: object) -> object:
    """`capture: {...}` is read as a list of one."""
    return [value] if isinstance(value, dict) else value


class Hook(Model):
    """A workspace hook: a shell command run in the workspace (or `cwd` inside it)."""

    model_config = ConfigDict(extra="forbid")

    command: str = Field(
        min_length=1, description="A shell line; AgentV's list form (argv) is rewritten into one when the file loads."
    )
    cwd: str | None = Field(None, description="Relative to the workspace.")
    timeout_ms: int = Field(60_000, gt=0, le=86_400_000)


class Hooks(Model):
    """AgentV's workspace hooks: `before_each` / `after_each` run in the workspace around every
    trial; `before_all` / `after_all` once per run, in the eval file's folder (or `cwd` in it),
    before the first and after the last trial."""

    model_config = ConfigDict(extra="forbid")

    before_all: Hook | None = None
    before_each: Hook | None = None
    after_each: Hook | None = None
    after_all: Hook | None = None


class RepoSource(Model):
    """Where a repository comes from: a git `url` (`type: git`) or a local `path` (`type: local`)."""

    model_config = ConfigDict(extra="forbid")

    type: Literal["git", "local"] = "git"
    url: str | None = None
    path: str | None = Field(None, description="A local repository (relative to the eval file).")

    @model_validator(mode="after")
    def _one_place(self) -> RepoSource:
        if (self.url is None) == (self.path is None):
            raise ValueError("give the repository's `url` (type: git) or `path` (type: local)")
        return self


class Checkout(Model):
    """What to check out: `ref` (branch, tag or commit) and `ancestor` commits back from it."""

    model_config = ConfigDict(extra="forbid")

    ref: str | None = None
    resolve: Literal["remote", "local"] = "remote"
    ancestor: int = Field(0, ge=0)

    _ref = field_validator("ref")(_not_an_option)


class Clone(Model):
    """How to clone: `depth` (shallow), `filter` (partial clone), `sparse` (paths to check out)."""

    model_config = ConfigDict(extra="forbid")

    depth: int | None = Field(None, ge=1)
    filter: str | None = None
    sparse: list[str] = Field(default_factory=list)


class Repo(Model):
    """A git repository cloned into the workspace at `path` before turn 1 (AgentV's `repos`)."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(".", description="Where in the workspace.")
    source: RepoSource
    checkout: Checkout = Field(default_factory=Checkout)
    clone: Clone = Field(default_factory=Clone)


class Docker(Model):
    """A container the workspace lives in across turns: hooks and `verify` run with `docker exec`."""

    model_config = ConfigDict(extra="forbid")

    image: str = Field(min_length=1)
    timeout: int = Field(600, gt=0, description="Seconds the container may live.")
    memory: str | None = Field(None, description="Docker's --memory, e.g. 2g.")
    cpus: float | None = Field(None, gt=0)

    _image = field_validator("image")(_not_an_option)


class Workspace(Model):
    """`workspace:` of a test: one working directory per trial, kept across all its turns.

    `template` (a folder, relative to the eval file) is copied in before turn 1; agent targets
    run there and `verify` checks it. The folder is removed after the trial unless `keep`
    says otherwise (`always`, `on_failure`); the result records where a kept one is.
    """

    model_config = ConfigDict(extra="forbid")

    environment: str = Field("directory", description="Who makes the workspace (registry kind `environment`).")
    template: str | None = None
    repos: list[Repo] = Field(default_factory=list)
    hooks: Hooks = Field(default_factory=Hooks)
    docker: Docker | None = None
    keep: Literal["never", "on_failure", "always"] = "never"
    env: list[str] = Field(
        default_factory=list,
        description="Secret-named variables (`*KEY*`, `*TOKEN*`, ...) that hooks, repo clones and verify may "
        "see; the others are removed from their environment.",
    )
    sandbox: SandboxSettings | None = Field(
        None, description="The sandbox of the trial's commands: `network: true`, limits (memory_mb, processes, ...)."
    )


def _or_a_string(schema: JsonSchemaValue) -> None:
    """JSON Schema: the object, or a non-empty string standing for its `command`."""
    description = schema.pop("description", None)
    whole = dict(schema)
    schema.clear()
    schema["anyOf"] = [{"type": "string", "minLength": 1}, whole]
    if description:
        schema["description"] = description


class Verify(Model):
    """`verify:` a shell command run in the workspace after each turn; exit code 0 ends the
    conversation early with success, anything else sends the next turn (with its hint).
    A plain string is the command: `verify: python3 test_calc.py`."""

    model_config = ConfigDict(extra="forbid", json_schema_extra=lambda schema: _or_a_string(schema))

    command: str = Field(min_length=1)
    timeout_s: float = Field(60.0, gt=0, le=86_400)
    required: bool = Field(
        True, description="A conversation that never verified fails the test (false: verify only adds its score)."
    )

    @model_validator(mode="before")
    @classmethod
    def _command_as_string(cls, value: object) -> object:
        return {"command": value} if isinstance(value, str) else value


class Limits(Model):
    """Budget limits; a turn (or conversation) that goes over one has exhausted its budget."""

    model_config = ConfigDict(extra="forbid")

    tool_calls: int | None = Field(None, ge=1, description="Tool calls at most (the tool agent stops at it).")
    seconds: float | None = Field(None, gt=0, description="Wall-clock seconds of the target's replies.")
    tokens: int | None = Field(None, ge=1, description="Target tokens (input + output).")
    cost_usd: float | None = Field(None, gt=0)


class Budget(Model):
    """`budget:` of a test: limits per turn and per conversation. Hitting one ends the
    conversation (unless `on_budget: continue`) with `execution_status: budget_exhausted`."""

    model_config = ConfigDict(extra="forbid")

    turn: Limits | None = None
    conversation: Limits | None = None
    on_budget: Literal["stop", "continue"] = "stop"
