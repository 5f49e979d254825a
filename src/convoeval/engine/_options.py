"""`RunOptions`: everything that configures a run, as the API takes it and the store records it."""

from __future__ import annotations

import inspect
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from .._base_model import Model
from .._sandbox import BACKENDS
from .._sandbox import describe as describe_sandbox
from ..errors import ConfigError, first_problem, suggest
from ..spec import MAX_TRIALS
from ..targets import Target, TargetConfig, agents, redact
from ._cache import settings_hash
from ._select import parse_shard

TargetLike = str | TargetConfig | Target
"""A target as the API takes it: `provider:model` or a targets-file name, a config, or an object."""

#: Options that decide what a run is: a resumed run keeps the recorded ones.
RUN_SHAPING = (
    "paths",
    "target",
    "judge",
    "targets_file",
    "threshold",
    "trials",
    "judge_repeats",
    "test_ids",
    "tags",
    "limit",
    "shard",
)


#: A target option as the store records it: a spec as given, `{"config": name}` for a
#: TargetConfig, `{"object": name}` for a Target object (never a key), or a list of those.
TargetRecord = str | dict[str, str] | list[str | dict[str, str]] | None


class ResolvedTarget(Model):
    """A target the run used, as recorded (its base URL redacted)."""

    name: str
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None
    settings: str | None = Field(
        None,
        description="A hash of what else decides its answers (temperature, max_tokens, provider settings; "
        "no key or header); None in runs recorded before it was kept.",
    )

    @classmethod
    def of(cls, config: TargetConfig) -> ResolvedTarget:
        return cls(
            name=config.name,
            provider=config.provider,
            model=config.model,
            base_url=redact(config.base_url) if config.base_url else None,
            settings=settings_hash(config),
        )

    def differs(self, now: ResolvedTarget) -> bool:
        """Whether `now` answers otherwise than this recorded target (settings compared only when
        both were recorded)."""
        return self != (now if self.settings is not None else now.model_copy(update={"settings": None}))

    def describe(self) -> str:
        return f"{self.provider}:{self.model}" + (f" at {self.base_url}" if self.base_url else "")


class SuiteFingerprint(Model):
    """A suite's hash and its tests' hashes (a resumed run reuses only unchanged tests)."""

    hash: str
    tests: dict[str, str] = Field(default_factory=dict)


class RecordedOptions(Model):
    """What the run store keeps about a run's options: enough to resume or re-run it, never a
    secret. Keys a newer or older convoeval wrote are kept as they are."""

    model_config = ConfigDict(extra="allow")

    paths: list[str] | None = None
    target: TargetRecord = None
    judge: TargetRecord = None
    panel_rule: Literal["mean", "majority", "min"] | None = None
    targets_file: str | None = None
    threshold: float | None = None
    trials: int | Literal["auto"] | None = None
    judge_repeats: int | None = None
    test_ids: list[str] | None = None
    tags: list[str] | None = None
    limit: int | None = None
    shard: str | None = None
    concurrency: int | None = None
    max_connections: int | None = None
    max_cost: float | None = None
    output: str | None = None
    cache: bool | None = None
    sandbox: str | None = Field(None, description="The sandbox the run's commands used (`unavailable`: none could).")
    resolved_targets: list[ResolvedTarget] = Field(default_factory=list)
    cwd: str | None = None
    convoeval: str | None = None
    rerun_of: str | None = Field(None, description="The run whose failed tests this run runs again.")
    only: list[tuple[str, str]] | None = Field(None, description="(suite, test id) of the tests a re-run runs.")
    suites: dict[str, SuiteFingerprint] = Field(default_factory=dict)

    def with_suites(self, suites: Mapping[str, SuiteFingerprint]) -> RecordedOptions:
        """These options with the fingerprints of the run's suites."""
        return RecordedOptions.model_validate({**self.model_dump(exclude_none=True), "suites": suites})

    def shaping(self, name: str) -> object:
        """A run-shaping option's recorded value (`RUN_SHAPING`)."""
        return getattr(self, name)


#: Options as other tools' Python APIs name them: convoeval's name, and whose name it was.
PEER_OPTIONS = {
    "epochs": ("trials", "Inspect's `epochs`"),
    "repeat": ("trials", "promptfoo's `repeat`; `judge_repeats` repeats only the judge's call"),
    "model": ("target", "Inspect's `model`; `judge` is the grading model"),
    "sample_id": ("test_ids", "Inspect's `sample_id`"),
    "max_samples": ("concurrency", "Inspect's `max_samples`"),
    "max_concurrency": ("concurrency", "promptfoo's `maxConcurrency`"),
}


class SharedOptions(Model):
    """The options a run (`RunOptions`) and an arena (`convoeval.arena.ArenaOptions`) share,
    declared once: which suites, the targets file, threshold and trials, cache and store."""

    model_config = ConfigDict(arbitrary_types_allowed=True, extra="forbid", frozen=True)

    paths: list[Path] | None = None
    targets_file: Path | None = None
    threshold: float | None = Field(default=None, ge=0, le=1)
    trials: int | None = Field(default=None, ge=1, le=MAX_TRIALS)
    cache: bool = True
    cache_dir: Path | None = None
    store: bool | Path = True

    #: How an error names one of these options (`run option trials: ...`).
    what: ClassVar[str] = "option"

    def __init__(self, **data: object) -> None:
        """As pydantic's, raising ConfigError (`run option NAME: what is wrong`) instead of its ValidationError."""
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise self._config_error(exc) from None

    @field_validator("paths", mode="before")
    @classmethod
    def _one_or_many(cls, value: object) -> object:
        return [value] if isinstance(value, (str, Path)) else value

    @classmethod
    def _validated(cls, data: dict[str, object]) -> Self:
        """`cls` from `data`, or ConfigError `{what} NAME: what is wrong` (e.g. `run option trials: ...`)."""
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise cls._config_error(exc) from None

    @classmethod
    def _config_error(cls, exc: ValidationError) -> ConfigError:
        problem = first_problem(exc, "options")
        peer = PEER_OPTIONS.get(problem.field, ("", ""))
        hint = f" (convoeval's is {peer[0]!r}; {peer[1]})" if peer[0] in cls.model_fields else ""
        unknown = f"unknown option{hint or suggest(problem.field, cls.model_fields)}"
        return ConfigError(f"{cls.what} {problem.field}: {unknown if problem.unknown else problem.message}")


class RunOptions(SharedOptions):
    """The options of a run (`convoeval.run(paths, **options)` builds one from keywords).

    Attributes:
        paths: eval files or folders of them (not needed with `resume`).
        target: one or more targets (`provider:model`, a name from the targets file, a
            TargetConfig or a Target object). Default: the suite's `execution.target`, else `local`.
        judge: the model for LLM graders, or a list of two or more: a judge panel (each LLM
            check graded by every judge). Default: the suite's `execution.judges` or
            `execution.judge`, else the targets file's `judges:`, else the embedded local
            model when installed, else the target itself.
        panel_rule: how a judge panel's answers combine: `mean`, `majority` or `min`
            (default: the suite's `execution.panel_rule`, else majority for pass/fail checks
            and mean for scores).
        targets_file: a targets file; default `targets.yaml` next to each suite.
        threshold, trials: override the suites' settings (`trials="auto"`: adaptive trials,
            run until the verdict is settled, `TrialsConfig.until`).
        judge_repeats: ask the judge K times per grader (mean and standard deviation reported).
        concurrency: conversations run at once (default: the suites' `execution.workers`, else 8).
        backend: where conversations run: `local` (this process) or `ray` (Ray tasks; default:
            the suites' `execution.backend`, else local).
        ray_address: the Ray cluster to join (default: `RAY_ADDRESS`, else a local one).
        processes: run the trials in this many worker processes of this machine (default 1:
            in this process); each endpoint's limits are split between them, and a trial's
            graded turns are told when it returns. Targets, judges and simulators must be
            specs or TargetConfigs (workers build them); not with Ray.
        keep_workspaces: keep every test's workspace folder after its trial (the result's
            `workspace` says where), whatever its `keep:` says.
        sandbox: where the commands a model or a suite controls run (`bash` and command tools,
            verify, hooks, code-graders in a workspace): `bubblewrap` (the default where `bwrap`
            is installed), `docker`, or `none` (unconfined, only by name). Default:
            `$CONVOEVAL_SANDBOX`, else bubblewrap.
        max_connections: model requests in flight per endpoint (server and API key) at most,
            shared by every target and judge calling it (default: each target's `concurrency`).
        output: write results here (`.jsonl` as each test finishes, or `.json`); with a store,
            the file is finally (re)written from the stored results, in run order.
        cache: answer model calls from the response cache and store new answers. Targets
            built from a spec or TargetConfig are cached (unless the target class sets
            `cacheable = False`); Target objects only when they set `cacheable = True`.
        cache_dir: the cache's directory (default: the state folder, `$CONVOEVAL_HOME` or
            `.convoeval`; file `cache.sqlite`). A damaged cache file is set aside with a note.
        store: record the run in the run store: True for `runs.sqlite` in the state folder, a
            path for another file, False for none (results are then kept in memory).
        resume: a run id (or `last`): run only the tests that have no result in that run yet,
            with the run's recorded suites, targets and options. A run still running in a live
            process is refused; a suite edited since is run as it is now (see the recorder).
        test_ids, tags, limit, shard: run only some tests: ids matching any glob, tests with any
            of the tags, the first `limit`, shard `i/n` (see `convoeval.engine.select_tests`).
        rerun_failed: a run id (or `last`): a new run of only the tests that did not pass in that
            run, with its suites, targets and options (unless given); it records where it came from.
        takeover: resume even when the run's process may still be running (another host).
        retry_errors: resuming, also run again the tests whose stored result is an
            `execution_error`.
        max_cost: USD budget: once the calls made (cache hits are free) cost this much, no new
            test or trial starts; those left get execution_status `budget_exhausted` (a
            resumed run runs them). Conversations already running finish.
    """

    what: ClassVar[str] = "run option"

    target: Any = None  # TargetLike | list[TargetLike] | None
    judge: Any = None  # TargetLike | list[TargetLike] | None
    panel_rule: Literal["mean", "majority", "min"] | None = None
    trials: int | Literal["auto"] | None = None  # type: ignore[assignment]  # a run's may also be `auto`
    judge_repeats: int | None = Field(default=None, ge=1)
    concurrency: int | None = Field(default=None, ge=1)
    max_connections: int | None = Field(default=None, ge=1)
    keep_workspaces: bool = False
    sandbox: Literal["bubblewrap", "docker", "none"] | None = None
    backend: Literal["local", "ray"] | None = None
    ray_address: str | None = None
    processes: int = Field(default=1, ge=1)
    output: Path | None = None
    test_ids: list[str] = Field(default_factory=list)
    tags: list[str] = Field(default_factory=list)
    limit: int | None = Field(default=None, ge=1)
    shard: str | None = None
    resume: str | None = None
    rerun_failed: str | None = None
    takeover: bool = False
    retry_errors: bool = False
    max_cost: float | None = Field(default=None, ge=0)

    @field_validator("trials", mode="before")
    @classmethod
    def _trials_in_range(cls, value: Any) -> Any:
        if isinstance(value, str) and value.strip().lower() == "auto":
            return "auto"
        if (isinstance(value, str) and value.strip().isdigit()) or (isinstance(value, float) and value.is_integer()):
            value = int(value)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise PydanticCustomError("trials", "Input should be a number from 1 to {le} or 'auto'", {"le": MAX_TRIALS})
        if isinstance(value, int) and value > MAX_TRIALS:
            raise PydanticCustomError(
                "less_than_equal", "Input should be less than or equal to {le}", {"le": MAX_TRIALS}
            )
        if isinstance(value, int) and value < 1:
            raise PydanticCustomError("greater_than_equal", "Input should be greater than or equal to 1", {})
        return value

    @field_validator("output", mode="before")
    @classmethod
    def _file_name(cls, value: Any) -> Any:
        if isinstance(value, str) and value.endswith(("/", os.sep)):  # Path() would drop the slash
            raise ValueError(f"{value!r} ends with a slash; give a file name")
        return value

    @field_validator("shard")
    @classmethod
    def _shard(cls, value: str | None) -> str | None:
        if value is not None:
            parse_shard(value)
        return value

    @field_validator("test_ids", "tags", mode="before")
    @classmethod
    def _names(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value or []

    @field_validator("target", mode="before")
    @classmethod
    def _target_list(cls, value: Any) -> Any:
        if isinstance(value, (str, TargetConfig)) or value is None or not isinstance(value, Sequence):
            return checked_target(value)
        return [checked_target(v) for v in value]

    @field_validator("judge", mode="before")
    @classmethod
    def _judge(cls, value: Any) -> Any:
        if isinstance(value, (str, TargetConfig)) or value is None or not isinstance(value, Sequence):
            return checked_target(value)
        judges = [checked_target(v) for v in value]
        if not judges:
            return None
        return judges[0] if len(judges) == 1 else judges

    @classmethod
    def build(cls, options: RunOptions | None = None, **changes: object) -> RunOptions:
        """`options` with `changes` applied (keywords alone build new options).

        Raises:
            ConfigError: an unknown option or a value out of range, named.
        """
        data = {**(options.model_dump() if options else {}), **changes}
        if options is not None:  # keep objects (targets) as they are, not as dumped dicts
            data.update({name: getattr(options, name) for name in ("target", "judge") if name not in changes})
        return cls._validated(data)

    def shape(self) -> dict[str, object]:
        """The run-shaping options as the store records them: paths absolute, Target objects
        and TargetConfigs by name only (never a key)."""
        return {
            "paths": [str(p.resolve()) for p in self.paths] if self.paths is not None else None,
            "target": _target_record(self.target),
            "judge": _target_record(self.judge),
            "panel_rule": self.panel_rule,
            "targets_file": str(self.targets_file.resolve()) if self.targets_file else None,
            "threshold": self.threshold,
            "trials": self.trials,
            "judge_repeats": self.judge_repeats,
            "test_ids": self.test_ids or None,
            "tags": self.tags or None,
            "limit": self.limit,
            "shard": self.shard,
        }

    def record(self, configs: Sequence[TargetConfig], version: str) -> RecordedOptions:
        """What the store keeps about a run: enough to resume it, never a secret."""
        return RecordedOptions.model_validate(
            {
                **self.shape(),
                "concurrency": self.concurrency,
                "max_connections": self.max_connections,
                "max_cost": self.max_cost,
                "output": str(self.output.resolve()) if self.output else None,
                "cache": self.cache,
                "sandbox": describe_sandbox(),  # the backend the run resolved (set by then)
                "resolved_targets": [ResolvedTarget.of(c) for c in configs],
                "cwd": os.getcwd(),
                "convoeval": version,
            }
        )

    def rerunning(self, run_id: str, recorded: RecordedOptions) -> RunOptions:
        """The options of a new run of the failed tests of run `run_id` (recorded with `recorded`)."""
        return _rerun_of(self, run_id, recorded)

    def resuming(self, run_id: str, recorded: RecordedOptions) -> RunOptions:
        """The options of a resumed run: the recorded ones; given run-shaping options must
        agree with them; concurrency, output, cache, max_cost and the sandbox may change (the
        run's own sandbox unless another is given).

        Raises:
            ConfigError: a given run-shaping option differs from the recorded one.
        """
        given = self.shape()
        for name in RUN_SHAPING:
            if given[name] is not None and _comparable(given[name]) != _comparable(recorded.shaping(name)):
                raise ConfigError(
                    f"run {run_id} was recorded with {name} = {recorded.shaping(name)!r}; a resumed run keeps "
                    f"its suites, targets and options (leave {name} out, or start a new run)"
                )
        for name in ("target", "judge"):
            if given[name] is None and _has_objects(recorded.shaping(name)):
                raise ConfigError(f"run {run_id} used Python objects as {name}; pass the same {name} again to resume")
        return RunOptions.build(
            self,
            paths=recorded.paths,
            target=self.target if self.target is not None else recorded.target,
            judge=self.judge if self.judge is not None else recorded.judge,
            panel_rule=self.panel_rule or recorded.panel_rule,
            targets_file=recorded.targets_file,
            threshold=recorded.threshold,
            trials=recorded.trials,
            judge_repeats=recorded.judge_repeats,
            test_ids=recorded.test_ids or [],
            tags=recorded.tags or [],
            limit=recorded.limit,
            shard=recorded.shard,
            concurrency=self.concurrency or recorded.concurrency,
            max_connections=self.max_connections or recorded.max_connections,
            output=self.output if self.output is not None else recorded.output,
            max_cost=self.max_cost if self.max_cost is not None else recorded.max_cost,
            sandbox=self.sandbox or (recorded.sandbox if recorded.sandbox in BACKENDS else None),
        )


def _rerun_of(options: RunOptions, run_id: str, recorded: RecordedOptions) -> RunOptions:
    """The options of a new run of `run_id`'s failed tests: the recorded run-shaping options,
    except the ones given."""
    given = options.shape()
    for name in ("target", "judge"):
        if given[name] is None and _has_objects(recorded.shaping(name)):
            raise ConfigError(f"run {run_id} used Python objects as {name}; pass the {name} to run it again")
    names = ("paths", "target", "judge", "panel_rule", "targets_file", "threshold", "trials", "judge_repeats")
    return RunOptions.build(
        options, **{n: getattr(options, n) if given[n] is not None else recorded.shaping(n) for n in names}
    )


def checked_target(value: Any) -> Any:
    """A target option's value as a run takes it (a plain function wrapped as a `python`
    target); ValueError when it is none of the kinds a target can be."""
    if value is None or isinstance(value, (str, TargetConfig)):
        return value
    if callable(value) and not callable(getattr(value, "chat", None)):
        return agents.PythonTarget.wrap(value)  # a plain (async) function, or a class: one object per conversation
    if not isinstance(getattr(value, "name", None), str) or not callable(getattr(value, "chat", None)):
        kind = type(value).__name__
        raise ValueError(
            f"expected `provider:model`, a TargetConfig, a Target object (with a `name` and an "
            f"async `chat(request)`) or a function of the messages, got a {kind}"
        )
    chat = value.chat
    if (inspect.isfunction(chat) or inspect.ismethod(chat)) and not inspect.iscoroutinefunction(inspect.unwrap(chat)):
        raise ValueError(
            f"{value.name!r}: a Target object's `chat(request)` is `async def` (a plain function of the "
            "messages may be synchronous: pass it as the target)"
        )
    return value


def _comparable(value: object) -> object:
    if isinstance(value, list) and len(value) == 1:
        return _comparable(value[0])
    return value


def _has_objects(record: object) -> bool:
    if isinstance(record, list):
        return any(_has_objects(r) for r in record)
    return isinstance(record, dict)


def _target_record(spec: Any) -> Any:
    """A target option as recorded in the store: specs as given, objects by name only (no secrets)."""
    if spec is None or isinstance(spec, str):
        return spec
    if isinstance(spec, TargetConfig):
        return {"config": spec.name}
    if isinstance(spec, list):
        return [_target_record(s) for s in spec]
    return {"object": getattr(spec, "name", type(spec).__name__)}
