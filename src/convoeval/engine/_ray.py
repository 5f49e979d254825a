"""The Ray backend (`--backend ray`): each trial runs as a Ray task, on an existing cluster
(`--ray-address`, or `RAY_ADDRESS`) or on a local one started on demand.

The driver keeps everything stateful: it plans the tests, writes each result to the run store
as it arrives and resumes like the local backend. A task gets the test's plan and the configs
of its target and judge (never live clients), builds them in the worker, and returns the
trial's result with the calls it counted. The response cache is the same SQLite file (shared
storage for a cluster on several machines); requests in flight per endpoint are bounded
cluster-wide by one actor holding the semaphores. The run's sandbox choice (`--sandbox`,
else `$CONVOEVAL_SANDBOX` of the driver, else bubblewrap) travels with each task: a worker's
own environment never loosens it. A local cluster starts without the secret variables (Ray's
own processes, `raylet`, `gcs_server`, idle workers, are dumpable: any process of the user reads
their environment); each task gets them once its worker is private (`keep_environment_private`).
A task whose worker dies is retried by Ray (`max_retries`);
one that still fails is that trial's `execution_error`, and the run goes on. The driver counts
the trials each node ran (`placement`).
"""

from __future__ import annotations

import asyncio
import os
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from .. import _sandbox as sandbox
from .._secrets import keep_environment_private, remember, secret_environment
from ..errors import ConfigError
from ..judging import JudgePanel, PanelRule, panel_members, panel_of
from ..results import TrialResult
from ..run import TestPlan, TrialContext, run_trial
from ..targets import Target, TargetConfig, capabilities, create_target, endpoint_limits
from ._cache import CachedTarget, ResponseCache, target_identity
from ._meter import CallTotals, MeteredTarget, RunMeter

if TYPE_CHECKING:
    from ray.actor import ActorHandle

#: Times Ray runs a trial again after its worker died.
MAX_RETRIES = 2
#: Whether this process started the local cluster it uses (without the secret variables).
_started_here = False


def _ray() -> ModuleType:
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray needs Ray: pip install 'convoeval[ray]'") from None
    return ray


class RayTrials:
    """Runs trials as Ray tasks; awaited like `run_trial`.

    Args:
        configs: the run's target configs by name (targets and judges are rebuilt from these).
        cache_file: the response cache's file, or None for no cache.
        meter: the driver's meter; each trial's calls are added to it when the trial returns.
        address: a cluster to join (`auto`, `ray://host:10001`), or None to start a local one.
        max_connections: requests in flight per endpoint at most, across the cluster.
        num_cpus: CPUs of a local cluster started here (default: all).
        sandbox_name: the sandbox backend of the workers' commands (the run's `sandbox.chosen()`).
    """

    def __init__(
        self,
        configs: dict[str, TargetConfig],
        cache_file: Path | None,
        meter: RunMeter,
        address: str | None = None,
        max_connections: int | None = None,
        num_cpus: int | None = None,
        sandbox_name: str = "bubblewrap",
    ):
        global _started_here
        ray = _ray()
        if not ray.is_initialized():
            local = address is None and not os.environ.get("RAY_ADDRESS")
            with _without(secret_environment() if local else {}):
                ray.init(
                    address=address,
                    num_cpus=num_cpus if local else None,
                    include_dashboard=False,
                    logging_level="ERROR",
                    log_to_driver=False,
                    configure_logging=False,
                )
            _started_here = local
        #: The secret variables each task sets (a local cluster's processes started without them).
        self.secrets = secret_environment() if _started_here else {}
        self.configs = configs
        self.cache_file = str(cache_file) if cache_file else None
        self.meter = meter
        self.sandbox_name = sandbox_name
        self.unseen = tuple(sandbox.hidden_from_models())  # the files no sandboxed command sees
        self.nodes: Counter[str] = Counter()  # trials returned, by the id of the node that ran them
        # SPREAD: trials go round the nodes (the default packs the driver's node first).
        self.task = ray.remote(max_retries=MAX_RETRIES, scheduling_strategy="SPREAD")(_trial_task)
        self.limiter: ActorHandle[EndpointSemaphores] | None = (
            ray.remote(EndpointSemaphores).options(num_cpus=0).remote(max_connections)
        )

    def _config(self, target: Target | None, role: str) -> TargetConfig | None:
        if target is None:
            return None
        config = self.configs.get(target.name)
        if config is None:
            raise ConfigError(
                f"--backend ray: the {role} {target.name!r} is a Python object; "
                "give it as provider:model or a targets-file name so that workers can build it"
            )
        return config

    async def __call__(self, plan: TestPlan, ctx: TrialContext) -> TrialResult:
        configs = (
            self._config(ctx.target, "target"),
            self._config(ctx.simulator, "simulated user"),
            *(self._config(judge, "judge") for judge in panel_members(ctx.judge)),
        )
        named = {spec: self._config(judge, "judge") for spec, judge in ctx.judges.items()}
        rule = ctx.judge.rule if isinstance(ctx.judge, JudgePanel) else None
        settings = (ctx.trial, ctx.judge_repeats, ctx.judge_temperature, rule)
        try:
            result, calls, node = await self.task.remote(
                plan,
                configs,
                named,
                settings,
                self.cache_file,
                self.limiter,
                self.sandbox_name,
                self.unseen,
                self.secrets,
            )
        except Exception as exc:  # the worker died MAX_RETRIES + 1 times, or the task raised
            reason = str(exc).strip().splitlines()[-1] if str(exc).strip() else type(exc).__name__
            return TrialResult.not_run(ctx.trial, f"ray: {reason}")
        self.meter.absorb(calls)
        self.nodes[node] += 1
        return result

    def close(self) -> str | None:
        """End the run's limiter actor (a handle left to the garbage collector could, after
        `ray.shutdown()` and a new `ray.init()`, end a later run's actor of the same id), and
        say where the trials ran, for the run's notes: `ray: 40 trial(s) on 2 node(s) (1bc753c8: 21, ...)`."""
        if self.limiter is not None:
            _ray().kill(self.limiter, no_restart=True)
            self.limiter = None  # the handle goes now, while its session runs
        if not self.nodes:
            return None
        each = ", ".join(f"{node[:8]}: {n}" for node, n in self.nodes.most_common())
        return f"ray: {sum(self.nodes.values())} trial(s) on {len(self.nodes)} node(s) ({each})"


@contextmanager
def _without(variables: dict[str, str]) -> Iterator[None]:
    """The process environment without `variables` for the block (what it starts inherits it)."""
    for name in variables:
        os.environ.pop(name, None)
    try:
        yield
    finally:
        os.environ.update(variables)


class EndpointSemaphores:
    """A Ray actor: one semaphore per endpoint, shared by every worker of the cluster."""

    def __init__(self, max_connections: int | None):
        self.max_connections = max_connections
        self.semaphores: dict[str, asyncio.Semaphore] = {}

    async def acquire(self, endpoint: str, concurrency: int | None) -> None:
        most = min(n for n in (concurrency, self.max_connections) if n) if concurrency or self.max_connections else None
        if most is None:
            return
        await self.semaphores.setdefault(endpoint, asyncio.Semaphore(most)).acquire()

    def release(self, endpoint: str) -> None:
        if endpoint in self.semaphores:
            self.semaphores[endpoint].release()


class _ClusterSlot:
    """Stands in for a target's local connection semaphore: the cluster-wide one, through the actor."""

    def __init__(self, limiter: ActorHandle[EndpointSemaphores], endpoint: str, concurrency: int | None):
        self.limiter, self.endpoint, self.concurrency = limiter, endpoint, concurrency

    async def __aenter__(self) -> None:
        await self.limiter.acquire.remote(self.endpoint, self.concurrency)

    async def __aexit__(self, *exc: object) -> None:
        await self.limiter.release.remote(self.endpoint)


def _trial_task(
    plan: TestPlan,
    configs: tuple[TargetConfig | None, ...],
    named: dict[str, TargetConfig | None],
    settings: tuple[int, int, float, PanelRule | None],
    cache_file: str | None,
    limiter: ActorHandle[EndpointSemaphores],
    sandbox_name: str,
    unseen: tuple[str, ...] = (),
    secrets: dict[str, str] | None = None,
) -> tuple[TrialResult, dict[str, CallTotals], str]:
    """In a worker: build the targets, run the trial, return its result, the calls counted and
    the id of the node it ran on. The worker is made non-dumpable first, as the driver is: the
    commands a trial starts run as its user and must not read its keys in /proc; only then does
    it take the `secrets` (the variables a local cluster started without)."""
    keep_environment_private()
    os.environ.update(secrets or {})
    remember(*(secrets or {}).values())  # the other targets' credentials too: no command of this trial gets them
    sandbox.hide_from_models(unseen)  # keys and answers (eval files, store...), where this node has them
    result, calls = asyncio.run(_trial(plan, configs, named, settings, cache_file, limiter, sandbox_name))
    return result, calls, _ray().get_runtime_context().get_node_id()


async def _trial(
    plan: TestPlan,
    configs: tuple[TargetConfig | None, ...],
    named: dict[str, TargetConfig | None],
    settings: tuple[int, int, float, PanelRule | None],
    cache_file: str | None,
    limiter: ActorHandle[EndpointSemaphores],
    sandbox_name: str,
) -> tuple[TrialResult, dict[str, CallTotals]]:
    sandbox.choose(sandbox_name)  # in this task's context only: the next task of this worker sets its own
    meter = RunMeter()
    cache = ResponseCache(cache_file) if cache_file else None
    try:
        async with _built((*configs, *named.values()), cache, meter, limiter) as built:
            target, simulator, *judges = built[: len(configs)]
            trial, repeats, temperature, rule = settings
            assert target is not None
            judge = panel_of([j for j in judges if j is not None], rule)
            ctx = TrialContext(
                target=target,
                judge=judge,
                judges={spec: own for spec, own in zip(named, built[len(configs) :], strict=True) if own is not None},
                trial=trial,
                judge_repeats=repeats,
                judge_temperature=temperature,
                simulator=simulator if simulator is not None else judge if plan.simulated_user else None,
            )
            result = await run_trial(plan, ctx)
    finally:
        if cache is not None:
            cache.close()
    return result, meter.by_model


@asynccontextmanager
async def _built(
    configs: tuple[TargetConfig | None, ...],
    cache: ResponseCache | None,
    meter: RunMeter,
    limiter: ActorHandle[EndpointSemaphores],
) -> AsyncIterator[list[Target | None]]:
    built: dict[str, Target] = {}
    wrapped: list[Target | None] = []
    for config in configs:
        if config is None:
            wrapped.append(None)
            continue
        if config.name not in built:
            built[config.name] = create_target(config)
        target = built[config.name]
        if found := endpoint_limits(target):
            _, endpoint, limits = found
            limits.hold_connections_with(_ClusterSlot(limiter, endpoint, limits.concurrency))
        inner: Target = target
        if cache is not None and capabilities(target).cacheable is not False:
            inner = CachedTarget(target, cache, target_identity(config, target))
        wrapped.append(MeteredTarget(inner, meter))
    try:
        yield wrapped
    finally:
        for target in built.values():
            await target.aclose()
