"""`--processes N`: a run's trials in N worker processes of this machine, each with its own
event loop running many trials at once (`_process_worker`).

The driver keeps everything stateful, as with Ray: planning, `--concurrency` (trials at once in
total), dependency order, the run store, the results file, the budget (the calls a trial
counted are absorbed when it returns), progress and resume. A trial goes to the least-loaded
worker as a small frame (the job's suite travels once per worker; the worker plans the test
itself); its result comes back as JSON with the calls it counted and its graded turns, which
the driver then tells its listeners (recorder, progress) as the local path does turn by turn.
In a run whose listeners take summaries (`summaries`), a worker finishes a test of one trial
itself: the test's result JSON and its turns' rows, which the driver stores as they come
(`Finished`), and a summary of the result for the scheduler and the listeners.

Each endpoint's limits (`--max-connections`, a target's concurrency, rpm and tpm) are split
between the workers, so that their sum never exceeds the limit; when an endpoint allows fewer
requests at once than N, only that many workers are used (a note says so). A worker that dies
turns its trials in flight into `execution_error` and is started again (at most N times over a
run); the run goes on. Stopping closes the workers' input (they end while the driver writes its
report); closing then waits for them (SIGKILL after a grace).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from .. import _sandbox as sandbox
from .. import registry
from .._secrets import scrubbed_env, secret_environment
from ..errors import ConfigError
from ..judging import JudgePanel, panel_members
from ..results import EvaluationResult, ScoreEntry, TrialResult
from ..run import CombinedTrial, GradedTurn, Job, TestPlan, TrialContext
from ..targets import Target, endpoint_limits
from ._cache import USAGE_FIELDS
from ._frames import frame, read_frame, registry_dumps
from ._meter import RunMeter
from ._pool import TargetPool
from ._process_worker import JUDGE, Roles, Share, TurnRow, WorkerSetup, from_reply_state

#: Seconds a worker has to end once its input is closed, before it is killed.
GRACE_S = 5.0


class _Worker:
    """One worker process: its trials in flight, the jobs it was sent, its reader."""

    def __init__(self, number: int, process: asyncio.subprocess.Process):
        self.number, self.process = number, process
        self.pending: dict[int, asyncio.Future[tuple[object, ...]]] = {}
        self.jobs: set[int] = set()
        self.trials = 0
        self.alive = True
        self.reader: asyncio.Task[None] | None = None
        self.outgoing: list[bytes] = []  # frames to write at the end of this turn of the loop

    def send(self, message: tuple[object, ...]) -> None:
        """Send `message` with the others of this turn of the event loop: one write for the
        hundreds of trials a run starts at once (each write to a pipe costs a system call)."""
        if not self.outgoing:
            asyncio.get_running_loop().call_soon(self.flush)
        self.outgoing.append(frame(message))

    def flush(self) -> None:
        data, self.outgoing = b"".join(self.outgoing), []
        stdin = self.process.stdin
        if self.alive and stdin is not None and not stdin.is_closing():
            stdin.write(data)


class ProcessTrials:
    """Runs trials in worker processes; awaited like `run_trial` (see the module docstring).

    Args:
        count: worker processes to start (`--processes`).
        meter: the driver's meter; each trial's calls are added to it when the trial returns.
        note: where a one-line note goes (fewer workers than asked, a worker that died).
    """

    def __init__(self, count: int, meter: RunMeter, note: Callable[[str], None]):
        self.count, self.meter, self.note = count, meter, note
        self.workers: list[_Worker] = []
        self.setup: WorkerSetup | None = None  # without shares: each worker gets its own
        self.limits: dict[str, Share] = {}
        self.jobs: dict[int, tuple[int, Job]] = {}  # id(job) -> its number, and the job (kept alive)
        self.pickled: dict[int, bytes] = {}  # each job's suite, threshold and trials, by its number
        self.next_id = 0
        self.restarts_left = count
        self.closing = False
        self.retired: list[_Worker] = []  # started, not used (an endpoint allows fewer connections), or dead
        #: Whether the run's listeners take summaries (`RunEvents.summaries_only`); the workers
        #: then combine each test of one trial into its stored result (`finished`).
        self.summaries = False
        self.finished: dict[int, Finished] = {}  # by id() of the summary the scheduler holds

    async def start(self) -> None:
        """Start the workers (they import while the driver loads and plans the suites)."""
        for number in range(self.count):
            self.workers.append(await self._spawn(number))

    async def _spawn(self, number: int) -> _Worker:
        process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-P",  # not the current folder on sys.path (as for the `convoeval` command)
            "-c",
            "from convoeval.engine._process_worker import main; main()",
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env={**scrubbed_env(), "CONVOEVAL_DRIVER_PID": str(os.getpid())},  # the keys come with the setup
            start_new_session=True,  # a terminal's Ctrl-C reaches the driver only; it ends the workers
            limit=2**20,
        )
        worker = _Worker(number, process)
        worker.reader = asyncio.get_running_loop().create_task(self._read(worker))
        if self.setup is not None:
            worker.send(("setup", self._setup_of(number)))
        return worker

    def _setup_of(self, number: int) -> WorkerSetup:
        assert self.setup is not None
        shares = {e: _share(limit, number, len(self.workers)) for e, limit in self.limits.items()}
        return dataclasses.replace(self.setup, shares=shares)

    def configure(self, pool: TargetPool, cache_file: str | None, sandbox_name: str, roles: list[Target]) -> None:
        """Check that every target, judge and simulator in `roles` can be built in a worker,
        split each endpoint's limits between the workers, and send them their setup.

        Raises:
            ConfigError: a role is a Python object (it cannot be rebuilt in another process).
        """
        for target in roles:
            for member in panel_members(target):
                self._name(member, pool)
        self.limits = _endpoint_limits(pool)
        tightest = min(self.limits.items(), key=lambda item: item[1][0] or self.count, default=None)
        used = self.count
        if tightest is not None and (tightest[1][0] or self.count) < self.count:
            used = tightest[1][0] or self.count
            self.note(
                f"--processes {self.count}: {tightest[0].split('#')[0]} allows {used} request(s) at once; "
                f"{used} worker process(es) used"
            )
        for extra in self.workers[used:]:
            self._retire(extra)
        self.retired += self.workers[used:]
        self.workers = self.workers[:used]
        self.restarts_left = used
        self.setup = WorkerSetup(
            dict(pool.configs),
            cache_file,
            sandbox_name,
            plugins=registry.plugin_modules(),
            sys_path=list(sys.path),
            unseen=sandbox.hidden_from_models(),
            secrets=secret_environment(),
        )
        for worker in self.workers:
            worker.send(("setup", self._setup_of(worker.number)))

    def _name(self, target: Target, pool: TargetPool) -> str:
        if target.name not in pool.configs:
            raise ConfigError(
                f"--processes {self.count}: {target.name!r} is a Python object; give it as provider:model or "
                "a targets-file name so that worker processes can build it (or run with --processes 1)"
            )
        return target.name

    async def __call__(self, plan: TestPlan, ctx: TrialContext) -> TrialResult:
        if self.closing:  # the run was stopped (Ctrl-C, SIGTERM): a trial that cannot run now is
            raise asyncio.CancelledError  # cancelled, never recorded as one that failed
        workers = [w for w in self.workers if w.alive]
        if not workers:
            return TrialResult.not_run(ctx.trial, "--processes: no worker process is left (they all ended)")
        worker = min(workers, key=lambda w: len(w.pending))
        job = ctx.job
        assert job is not None
        number = self.jobs.setdefault(id(job), (len(self.jobs), job))[0]
        if number not in worker.jobs:  # pickled once for all the workers
            if number not in self.pickled:
                self.pickled[number] = registry_dumps((job.suite, job.threshold, job.trials))
            worker.send(("job", number, self.pickled[number]))
            worker.jobs.add(number)
        tid = self.next_id = self.next_id + 1
        future: asyncio.Future[tuple[object, ...]] = asyncio.get_running_loop().create_future()
        worker.pending[tid] = future
        worker.send(("trial", tid, number, ctx.position, ctx.trial, self._roles(ctx), _settings(ctx), self.summaries))
        try:
            message = await future
        except asyncio.CancelledError:
            worker.send(("cancel", tid))
            raise
        finally:
            worker.pending.pop(tid, None)
        return self._outcome(message, ctx)

    def _roles(self, ctx: TrialContext) -> Roles:
        simulator = None
        if ctx.simulator is not None:
            simulator = JUDGE if ctx.simulator is ctx.judge else ctx.simulator.name
        named = tuple((spec, judge.name) for spec, judge in ctx.judges.items())
        return ctx.target.name, simulator, tuple(j.name for j in panel_members(ctx.judge)), named

    def _outcome(self, message: tuple[object, ...], ctx: TrialContext) -> TrialResult:
        kind = message[0]
        if kind == "done":
            _, _, data, calls, turns = message
            result = TrialResult.model_validate_json(data)  # type: ignore[arg-type]
            self.meter.absorb(calls)  # type: ignore[arg-type]
            if ctx.events is not None and ctx.job is not None:
                for number, entry, reply in turns:  # type: ignore[attr-defined]
                    graded = result.scores[entry] if isinstance(entry, int) else ScoreEntry.model_validate_json(entry)
                    ctx.events.turn(
                        GradedTurn(ctx.job, ctx.position, ctx.trial, number, graded, from_reply_state(reply))
                    )
            return result
        if kind == "finished":
            _, _, data, summary, calls, turns = message
            self.meter.absorb(calls)  # type: ignore[arg-type]
            finished = _summary(summary)  # type: ignore[arg-type]
            self.finished[id(finished)] = Finished(finished, data, ctx.trial, turns)  # type: ignore[arg-type]
            return CombinedTrial.of(finished, ctx.trial)
        if kind == "raised":
            _, _, name, text = message
            raise _remote_error(str(name))(text)
        return TrialResult.not_run(ctx.trial, str(message[1]))

    async def _read(self, worker: _Worker) -> None:
        """Hand each answer of `worker` to its trial; when it ends, fail its trials in flight."""
        stdout = worker.process.stdout
        assert stdout is not None
        try:
            while (message := await read_frame(stdout)) is not None:
                future = worker.pending.get(message[1])
                if future is not None and not future.done():
                    future.set_result(message)
                    worker.trials += 1
        except Exception:  # a frame that cannot be read: the worker is of no more use
            with contextlib.suppress(ProcessLookupError):
                worker.process.kill()
        worker.alive = False
        code = await worker.process.wait()
        how = f"was killed by {signal.Signals(-code).name}" if code < 0 else f"exited with code {code}"
        reason = f"worker process {worker.process.pid} {how} while running this trial"
        lost = 0
        for future in worker.pending.values():
            if not future.done():
                future.set_result(("died", reason))
                lost += 1
        if self.closing or worker not in self.workers:
            return
        again = self.restarts_left > 0
        self.note(
            f"warning: worker process {worker.process.pid} {how}; its {lost} trial(s) in flight are execution_error"
            + ("; a new worker takes its place" if again else "")
        )
        self.retired.append(worker)
        if again:
            self.restarts_left -= 1
            fresh = await self._spawn(worker.number)
            if self.closing or worker not in self.workers:  # the run ended meanwhile
                fresh.process.kill()
                await fresh.process.wait()
            else:
                self.workers[self.workers.index(worker)] = fresh

    def _retire(self, worker: _Worker) -> None:
        if worker.outgoing:  # what was sent before its input closes (a cancel)
            worker.flush()
        stdin = worker.process.stdin
        if stdin is not None and not stdin.is_closing():
            stdin.close()

    def stop(self) -> str | None:
        """Close every worker's input (it ends its trials, closes its targets and cache, and
        exits while the driver writes its report) and say where the trials ran, for the run's
        notes: `processes: 40 trial(s) in 2 worker process(es) (21, 19)`."""
        self.closing = True
        workers = self.workers + self.retired
        for worker in workers:
            for future in worker.pending.values():
                future.cancel()  # its trial did not run to its end: cancelled, as in one process
            self._retire(worker)
        done = [w.trials for w in workers if w.trials]
        if not done:
            return None
        return f"processes: {sum(done)} trial(s) in {len(done)} worker process(es) ({', '.join(map(str, done))})"

    async def aclose(self) -> None:
        """Stop the workers (`stop`) and wait for them to end; one still running after GRACE_S is
        killed (at once when they were never set up: they hold nothing yet)."""
        self.stop()
        workers, self.workers, self.retired = self.workers + self.retired, [], []
        for worker in workers:
            if self.setup is None:  # the run ended before it began (a bad option): nothing to close
                with contextlib.suppress(ProcessLookupError):
                    worker.process.kill()
            try:
                await asyncio.wait_for(worker.process.wait(), GRACE_S)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    worker.process.kill()
                await worker.process.wait()
            if worker.reader is not None:
                await asyncio.gather(worker.reader, return_exceptions=True)


@dataclasses.dataclass
class Finished:
    """A test a worker finished: its summary (what the scheduler and listeners read), its
    result's JSON (not redacted yet) and its graded turns as the run store keeps them."""

    summary: EvaluationResult
    data: str
    trial: int
    turns: list[TurnRow]


def _summary(fields: dict[str, Any]) -> EvaluationResult:
    """A finished test's summary as an EvaluationResult: its keys, verdict, score, status and
    totals (`_process_worker.SUMMARY`); no scores, transcript or trials. (Validated: values of a
    valid result pass, and model_construct costs ten times as much, computing its defaults.)"""
    for name in ("token_usage", "judge_token_usage", "simulator_token_usage"):
        fields[name] = dict(zip(USAGE_FIELDS, fields[name], strict=False))
    return EvaluationResult.model_validate(fields)


def _settings(ctx: TrialContext) -> tuple[int, float, object]:
    rule = ctx.judge.rule if isinstance(ctx.judge, JudgePanel) else None
    return ctx.judge_repeats, ctx.judge_temperature, rule


def _endpoint_limits(pool: TargetPool) -> dict[str, Share]:
    """Each endpoint's limits in the driver (connections at once, rpm, tpm), as the pool shared them."""
    limits: dict[str, Share] = {}
    for target in pool.built.values():
        if (found := endpoint_limits(target)) is not None:
            _, endpoint, held = found
            rpm = held.requests.rate * 60 if held.requests else None
            tpm = held.tokens.rate * 60 if held.tokens else None
            limits[endpoint] = (held.concurrency, rpm, tpm)
    return limits


def _share(limit: Share, number: int, workers: int) -> Share:
    """Worker `number`'s part of `limit` split between `workers`: the connections as evenly as
    whole numbers go (their sum is the limit), the rates in equal parts."""
    connections, rpm, tpm = limit
    if connections is not None:
        connections = connections // workers + (1 if number < connections % workers else 0)
    return connections, rpm / workers if rpm else None, tpm / workers if tpm else None


_ERRORS: dict[str, type[Exception]] = {}


def _remote_error(name: str) -> type[Exception]:
    """An exception class named as the one a trial raised in a worker (the result says
    `Name: message`, as in one process)."""
    if name not in _ERRORS:
        _ERRORS[name] = type(name, (Exception,), {})
    return _ERRORS[name]
