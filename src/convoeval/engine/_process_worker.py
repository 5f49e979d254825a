"""A worker process of `--processes N` (started as `python -P -c "...import main; main()"`).

It reads frames (`_frames`) from its stdin and writes frames to its stdout; fds 0 and 1 are
moved aside first, so that nothing a trial prints or reads (a hook, a command) reaches the
driver's pipes. Messages, all tuples:

- driver -> worker: `("setup", WorkerSetup)` once; `("job", number, pickled (suite, threshold,
  trials))` before the first trial of a job (`_frames.registry_dumps`); `("trial", id, job,
  position, trial, roles, settings, finish)`; `("cancel", id)`. End of input: cancel what runs,
  close the targets and the cache, exit.
- worker -> driver: `("done", id, trial result JSON, calls by model, turns)`; with `finish`, for
  a test of one trial, `("finished", id, the test's result JSON, its summary, calls by model,
  turn rows)`; or `("raised", id, exception type name, message)`. The frames of one turn of the
  event loop go in one write, both ways.

At setup the worker loads the driver's plugins (with its Python path) and builds each target,
judge and simulator once from its config, wrapped as the driver wraps them (response cache,
meter, this worker's share of each endpoint's limits). Each trial plans its test from the job's
suite (sent once), runs in its own task and counts its calls in its own meter (a context
variable picks it). The process is non-dumpable, as the driver is; it gets SIGTERM when the
driver dies, and then kills its commands and exits at once; Ctrl-C is left to the driver, which
ends its workers (they run in their own session: a terminal's Ctrl-C does not reach them).
"""

from __future__ import annotations

import asyncio
import gc
import importlib
import os
import pickle
import signal
import sys
from contextvars import ContextVar
from dataclasses import dataclass, field
from types import FrameType
from typing import Any

from .. import _sandbox as sandbox
from .. import registry
from .._secrets import keep_environment_private, remember, reread_environment
from ..judging import PanelRule, panel_of
from ..results import EvaluationResult, ScoreEntry, ToolCall, TrialResult
from ..run import GradedTurn, Job, TestPlan, TrialContext, combine_trials, run_trial
from ..spec import Suite, stored_checks, suite_checks
from ..targets import ChatReply, ChatRequest, Target, TargetConfig, endpoint_limits
from ._cache import ResponseCache, counted_usage, usage_counts
from ._frames import frame, read_frame
from ._meter import RunMeter
from ._pool import TargetPool

#: Limits of one endpoint for one worker: connections at once, requests and tokens a minute.
Share = tuple[int | None, float | None, float | None]

#: A trial's roles by config name: target, simulated user (`JUDGE`: the judge), judges, and the
#: judges checks name (each as the name the check gives and its config's name).
Roles = tuple[str, str | None, tuple[str, ...], tuple[tuple[str, str], ...]]

#: A trial's judging settings: repeats, temperature, a panel's rule.
Settings = tuple[int, float, PanelRule | None]

#: A graded turn as the run store keeps it: number, verdict, score, reply text, entry JSON.
TurnRow = tuple[int, str, float | None, str | None, str]

#: What a finished test's summary holds (`finished`), besides its token counts.
SUMMARY = (
    "test_id", "target", "suite", "mode", "score", "verdict", "execution_status", "threshold", "cost_usd",
    "judge_cost_usd", "simulator_cost_usd", "duration_ms", "error", "grader_errors", "stop_reason", "outcome",
    "budget_hit", "provider", "session", "fallback", "sandbox",
)  # fmt: skip

#: The simulated user is the judge (a test whose simulated_user names no model).
JUDGE = "\0judge"

#: Seconds between two collections of the cyclic garbage collector (as the driver does).
COLLECT_EVERY_S = 30.0


@dataclass
class WorkerSetup:
    """What every worker gets once: the target configs by name, the response cache's file,
    the run's sandbox backend, this worker's share of each endpoint's limits, the driver's
    plugin modules (name, file) and Python path, what no sandboxed command sees, and the
    secret variables the worker was started without (any process of the user can read a
    starting worker's environment, before it makes itself private)."""

    configs: dict[str, TargetConfig]
    cache_file: str | None
    sandbox_name: str
    shares: dict[str, Share] = field(default_factory=dict)
    plugins: list[tuple[str, str | None]] = field(default_factory=list)
    sys_path: list[str] = field(default_factory=list)
    unseen: list[str] = field(default_factory=list)  # what no sandboxed command sees
    secrets: dict[str, str] = field(default_factory=dict)


_trial_meter: ContextVar[RunMeter | None] = ContextVar("convoeval_trial_meter", default=None)


class _TrialMeters(RunMeter):
    """The meter the worker's targets are wrapped with: each call goes to its trial's meter."""

    def record_call(self, name: str, request: ChatRequest, reply: ChatReply | Exception) -> None:
        meter = _trial_meter.get()
        if meter is not None:
            meter.record_call(name, request, reply)


class _Turns:
    """A trial's graded turns, sent with its result (the driver tells its listeners then).

    Each entry is kept as it was when graded (a shallow copy: a few are changed later, e.g. an
    AgentV bare turn); one still equal to the entry of the result it ended in is sent as its
    index in `result.scores`, which the result's JSON carries anyway, and each reply as a tuple
    (`reply_state`): pickling the models again cost the driver 0.17 ms a trial of five turns."""

    def __init__(self) -> None:
        self.turns: list[tuple[int, ScoreEntry, ScoreEntry, ChatReply]] = []

    def turn(self, turn: GradedTurn) -> None:
        self.turns.append((turn.number, turn.entry, turn.entry.model_copy(), turn.reply))

    def trial(self, job: Job, position: int, trial: TrialResult) -> None:
        """Trials are the driver's."""

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        """Results are the driver's."""

    def rows(self) -> list[TurnRow]:
        """Each turn as the run store keeps it: (number, verdict, score, reply text, entry JSON)."""
        return [
            (n, graded.verdict, graded.score, reply.text, graded.model_dump_json())
            for n, _, graded, reply in self.turns
        ]

    def packed(self, scores: list[ScoreEntry]) -> list[tuple[int, int | str, tuple[Any, ...]]]:
        """Each turn as (number, index in `scores` or the entry's JSON, reply state): plain values
        only, which the driver reads whatever a target put in a reply."""
        packed: list[tuple[int, int | str, tuple[Any, ...]]] = []
        for number, entry, graded, reply in self.turns:
            at = next((i for i, s in enumerate(scores) if s is entry), None)
            kept = at if at is not None and graded == entry else graded.model_dump_json()
            packed.append((number, kept, reply_state(reply)))
        return packed


def reply_state(reply: ChatReply) -> tuple[Any, ...]:
    """`reply` as plain values (`from_reply_state` makes it again)."""
    usage = reply.usage
    return (
        reply.text,
        usage_counts(usage),
        reply.latency_ms,
        reply.cost_usd,
        reply.cost_known,
        [call.model_dump(mode="json") for call in reply.tool_calls] or None,
        reply.finish_reason,
        reply.cached,
        reply.session_id,
    )


def from_reply_state(state: tuple[Any, ...]) -> ChatReply:
    text, counts, latency, cost, known, tools, finish, cached, session = state
    return ChatReply(
        text=text,
        usage=counted_usage(counts),
        latency_ms=latency,
        cost_usd=cost,
        cost_known=known,
        tool_calls=[ToolCall.model_validate(call) for call in tools or ()],
        finish_reason=finish,
        cached=cached,
        session_id=session,
    )


class _Worker:
    def __init__(self, send: asyncio.WriteTransport):
        self.transport = send
        self.setup: WorkerSetup | None = None
        self.pool: TargetPool | None = None
        self.cache: ResponseCache | None = None
        self.jobs: dict[int, tuple[Suite, float | None, Any] | Exception] = {}
        self.broken: Exception | None = None  # a plugin that could not be loaded
        self.targets: dict[str, Target] = {}
        self.running: dict[int, asyncio.Task[None]] = {}
        self.outgoing: list[bytes] = []  # frames to write at the end of this turn of the loop
        self.checks: dict[int, dict[str, object]] = {}  # each job's `suite_checks`

    def handle(self, message: tuple[Any, ...]) -> None:
        kind = message[0]
        if kind == "trial":
            tid = message[1]
            task = asyncio.get_running_loop().create_task(self.trial(*message[1:]))
            self.running[tid] = task
            task.add_done_callback(lambda _: self.running.pop(tid, None))
        elif kind == "cancel":
            if (running := self.running.get(message[1])) is not None:
                running.cancel()
        elif kind == "job":
            try:
                self.jobs[message[1]] = pickle.loads(message[2])
            except Exception as exc:  # each trial of the job says why
                self.jobs[message[1]] = RuntimeError(f"its suite could not be read in a worker process: {exc}")
        elif kind == "setup":
            try:
                self.configure(message[1])
            except Exception as exc:  # e.g. the cache cannot be opened: each trial says why
                self.broken = RuntimeError(f"a worker process could not be set up: {type(exc).__name__}: {exc}")

    def configure(self, setup: WorkerSetup) -> None:
        os.environ.update(setup.secrets)  # private since `main` started
        remember(*setup.secrets.values())  # secrets here too, whatever their names: no command gets them
        reread_environment()
        sandbox.choose(setup.sandbox_name)  # the trials' tasks, made from this context, inherit it
        sandbox.hide_from_models(setup.unseen)
        self.setup = setup
        sys.path[:] = list(dict.fromkeys([*setup.sys_path, *sys.path]))
        for name, file in setup.plugins:
            try:
                if name in sys.modules:
                    continue
                if name.startswith("convoeval_plugin_") and file:  # loaded from a file: the same name again
                    registry.load_plugin(file)
                else:
                    importlib.import_module(name)
            except Exception as exc:  # each trial says why
                self.broken = RuntimeError(f"plugin {file or name} could not be loaded in a worker process: {exc}")
        self.cache = ResponseCache(setup.cache_file) if setup.cache_file else None
        self.pool = TargetPool({}, cache=self.cache, meter=_TrialMeters())
        for name in setup.configs:  # now, while the driver gets the run going, not at the first trial
            try:
                self.target(name)
            except Exception:  # the driver built it: each trial that uses it will say what is wrong
                self.targets.pop(name, None)

    def target(self, name: str) -> Target:
        """The target of config `name`, built and wrapped on first use."""
        if name not in self.targets:
            assert self.setup is not None and self.pool is not None
            built = self.pool.get(self.setup.configs[name], keyed=False)  # the driver checked its keys
            if (found := endpoint_limits(built)) is not None and found[1] in self.setup.shares:
                found[2].tighten(*self.setup.shares[found[1]])
            self.targets[name] = self.pool.wrap(built)
        return self.targets[name]

    async def trial(
        self, tid: int, job_no: int, position: int, trial: int, roles: Roles, settings: Settings, finish: bool
    ) -> None:
        meter, turns = RunMeter(), _Turns()
        _trial_meter.set(meter)  # in this task's own context
        try:
            target_name, simulator_name, judge_names, named = roles
            repeats, temperature, rule = settings
            job_setup = self.jobs[job_no]
            if self.broken is not None:
                raise self.broken
            if isinstance(job_setup, Exception):
                raise job_setup
            suite, threshold, trials = job_setup
            target = self.target(target_name)
            job = Job(target=target, suite=suite, threshold=threshold, trials=trials)
            test_plan = job.plan(suite.tests[position])
            plan = test_plan.for_trial(trial)
            judge = panel_of([self.target(n) for n in judge_names], rule)
            simulator = judge if simulator_name == JUDGE else self.target(simulator_name) if simulator_name else None
            ctx = TrialContext(
                target=target,
                judge=judge,
                judges={spec: self.target(name) for spec, name in named},
                trial=trial,
                judge_repeats=repeats,
                judge_temperature=temperature,
                simulator=simulator,
                events=turns,
                job=job,
                position=position,
            )
            result = await run_trial(plan, ctx)
            if finish and test_plan.trials.count == 1 and not test_plan.trials.adaptive:
                done, summary = self.finished(job_no, position, test_plan, target.name, result)
                data = frame(("finished", tid, done, summary, meter.by_model, turns.rows()))
            else:
                data = frame(("done", tid, result.model_dump_json(), meter.by_model, turns.packed(result.scores)))
        except Exception as exc:
            data = frame(("raised", tid, type(exc).__name__, str(exc)))
        self.send(data)

    def send(self, data: bytes) -> None:
        """Write `data` to the driver with the other frames of this turn of the event loop: one
        write for the trials that end together (a write to a pipe, and the driver's wake-up,
        cost more than copying the bytes)."""
        if not self.outgoing:
            asyncio.get_running_loop().call_soon(self.flush)
        self.outgoing.append(data)

    def flush(self) -> None:
        data, self.outgoing = b"".join(self.outgoing), []
        self.transport.write(data)

    def finished(
        self, job_no: int, position: int, plan: TestPlan, target: str, trial: TrialResult
    ) -> tuple[str, dict[str, Any]]:
        """The test's result combined from its one trial, as the driver would store it (with its
        `checks`; the driver redacts it), and its summary: the fields of `SUMMARY`, and the
        token counts as `usage_counts`."""
        suite = self.suite_of(job_no)
        result = combine_trials(plan, target, [trial])
        if job_no not in self.checks:
            self.checks[job_no] = suite_checks(suite)
        result.checks = stored_checks(suite, suite.tests[position], self.checks[job_no])
        summary = {name: getattr(result, name) for name in SUMMARY}
        for name in ("token_usage", "judge_token_usage", "simulator_token_usage"):
            usage = getattr(result, name)
            summary[name] = usage_counts(usage)
        return result.model_dump_json(), summary

    def suite_of(self, job_no: int) -> Suite:
        found = self.jobs[job_no]
        assert not isinstance(found, Exception)
        return found[0]

    async def aclose(self) -> None:
        for task in list(self.running.values()):
            task.cancel()
        await asyncio.gather(*self.running.values(), return_exceptions=True)
        if self.pool is not None:
            await self.pool.aclose()
        if self.cache is not None:
            self.cache.close()


async def _serve(fd_in: int, fd_out: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**20)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(fd_in, "rb", 0))
    transport, _ = await loop.connect_write_pipe(asyncio.Protocol, os.fdopen(fd_out, "wb", 0))
    worker = _Worker(transport)
    collector = _collect_by_the_clock(loop)
    try:
        while (message := await read_frame(reader)) is not None:
            worker.handle(message)
            if message[0] == "setup":
                gc.freeze()  # what the worker holds for good (modules, configs) out of the collector's sight
    finally:
        collector.cancel()
        await worker.aclose()
        if worker.outgoing:
            worker.flush()
        transport.close()


def _collect_by_the_clock(loop: asyncio.AbstractEventLoop) -> asyncio.Task[None]:
    """The young and middle generations collected every COLLECT_EVERY_S instead of every 700
    allocations (see `_runner._run_heap`: many live conversations make each collection long)."""
    gc.disable()

    async def collect() -> None:
        while True:
            await asyncio.sleep(COLLECT_EVERY_S)
            gc.collect(1)

    return loop.create_task(collect())


def _end_with_parent() -> None:
    """SIGTERM for this process when the driver dies (Linux; `_ended`), so that no worker, nor
    a command it started, outlives it."""
    if sys.platform != "linux":
        return
    import ctypes

    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _ended(signum: int, frame: FrameType | None) -> None:
    """SIGTERM: the driver died (or someone ended this worker): kill the commands running now,
    those being started too (every child of the worker is a command), and exit at once, as the
    driver does on a second Ctrl-C. A SIGTERM that comes meanwhile (two came at times) is
    ignored: it would end the process before this handler had removed what it was removing."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sandbox.end_all_now()
    sandbox.kill_children()
    os._exit(128 + signum)


def _ignore(signum: int, frame: FrameType | None) -> None:
    """Ctrl-C is the driver's, which ends its workers; a handler (not SIG_IGN) so that commands
    started here get the default handling back when they run their program."""


def main() -> None:
    fd_in, fd_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)  # what a trial prints goes to stderr, never into the frames
    os.close(null)
    keep_environment_private()
    _end_with_parent()
    signal.signal(signal.SIGINT, _ignore)
    signal.signal(signal.SIGTERM, _ended)
    if os.getppid() != int(os.environ.get("CONVOEVAL_DRIVER_PID", os.getppid())):
        return  # the driver died before this process asked to die with it
    import aiohttp  # noqa: F401  (the HTTP client: loaded while the driver loads the suites, not at the first call)

    asyncio.run(_serve(fd_in, fd_out))
    sys.stderr.flush()
    os._exit(0)  # the cache and targets are closed: no need to free every object one by one


if __name__ == "__main__":
    main()
