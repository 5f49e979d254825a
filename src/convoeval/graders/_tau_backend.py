"""A task-oriented domain: tool functions over a backend state (tau-bench's shape).

A suite's `tools:` names a Python file or module whose public functions are the domain's tools,
each `name(state, /, **arguments)` reading or changing `state` in place and returning what the
agent sees (the state positional-only, so that a tool may take an argument named `state`, as
tau-bench's retail `modify_user_address` does); `backend:` is the initial state, a JSON/YAML file or the document itself. Every
trial plays on its own copy-on-write view of it (`Domain.session()`: only what the tools reach
is copied, so a 3 MB backend does not cost a deep copy per trial or per call); `tau-reward`
compares the view's final state with the goal. The tools' JSON schemas come from the
functions' signatures. A domain loaded from files is read once per process (until they change).

A domain whose user acts too (tau2-bench's telecom: the user's phone) names, in the same file,
its user's tools as `USER_TOOLS = [names]` and the functions that are nobody's tools, run only to
set a task's initial state or to check its final one, as `ENV_FUNCTIONS = [names]`: the
agent's tools are the other public functions. All of them act on the one state. A trial's
session may start from a task's initial actions (`Domain.session(actions)`); the simulated user
calls its tools on the same session as the agent calls its own (`DomainSession.call(..., side=)`).
"""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import os
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, Literal, TypedDict

import yaml
from pydantic import BaseModel, JsonValue, create_model

from .. import registry
from .._paths import confined_file
from ..errors import GraderError, RegistryError
from ..results import ToolCall
from ._cow import cow, fork
from ._env_call import EnvCall

#: Domains read from files: (tools, backend, folder, file times) -> Domain.
_LOADED: dict[tuple[str, str, str, tuple[int, ...]], Domain] = {}
_LOADING = threading.RLock()


#: A domain's tool: `name(state, /, **arguments)` changes `state` in place and returns what the agent sees.
Tool = Callable[..., object]
#: Who called a tool: the agent (tau2's "assistant") or the user.
Side = Literal["assistant", "user"]


class ToolRun(TypedDict, total=False):
    """What one tool call did: its `output`, or the `error` the agent reads instead."""

    output: object
    error: str


@dataclass(frozen=True)
class Domain:
    """Tool functions and the initial backend state they act on (a JSON/YAML document)."""

    functions: dict[str, Tool]
    initial: object
    user_functions: dict[str, Tool] = field(default_factory=dict)
    env_functions: dict[str, Tool] = field(default_factory=dict)

    @classmethod
    def load(cls, tools: str, backend: str | dict[str, object], base_dir: Path) -> Domain:
        """The domain a suite names (`tools`: a .py file or a module; `backend`: a file or a document).

        Raises:
            GraderError: the module cannot be imported or the backend cannot be read.
        """
        with _LOADING:  # graders load in worker threads: a module is imported once, whole
            if isinstance(backend, dict):
                return cls.of(tools, base_dir, backend)
            key = (tools, backend, str(base_dir), _file_times(base_dir, tools, backend))
            if key not in _LOADED:
                _LOADED[key] = cls.of(tools, base_dir, load_document(backend, base_dir, "backend"))
            return _LOADED[key]

    @classmethod
    def of(cls, tools: str, base_dir: Path, initial: object) -> Domain:
        """The domain of a tools file or module over `initial`."""
        agent, user, env = load_sides(tools, base_dir)
        return cls(agent, initial, user_functions=user, env_functions=env)

    def specs(self, side: Side = "assistant") -> list[dict[str, JsonValue]]:
        """A side's tools as OpenAI `tools` entries (parameters from each signature, `state` left out)."""
        return [_spec(name, fn) for name, fn in (self.user_functions if side == "user" else self.functions).items()]

    def function(self, name: str, field: str) -> Tool:
        """An environment function, or else a tool of either side, by name (`field` names the
        list that calls it, for the error)."""
        fn = self.env_functions.get(name) or self.functions.get(name) or self.user_functions.get(name)
        if fn is None:
            raise GraderError(f"{field}: no function {name!r} in the tools module (ENV_FUNCTIONS or a tool)")
        return fn

    def initial_state(self, actions: list[EnvCall]) -> object:
        """A fresh (copy-on-write) copy of the initial state after a task's `actions`, run in order.

        Raises:
            GraderError: an action names no function, or fails (the task is broken).
        """
        state = cow(self.initial)
        for action in actions:
            fn = self.function(action.name, "initial_actions")
            try:
                call_function(fn, action.name, state, action.arguments)
            except GraderError:
                raise
            except Exception as exc:
                raise GraderError(f"initial_actions: {action.name} failed: {type(exc).__name__}: {exc}") from None
        return state

    def session(self, actions: list[EnvCall] | None = None) -> DomainSession:
        """One trial's copy of the state, after the task's initial `actions`.

        Raises:
            GraderError: an initial action names no function, or fails.
        """
        return DomainSession(self, self.initial_state(actions or []), initial_actions=list(actions or []))

    def replay(
        self,
        calls: list[ToolCall],
        *,
        strict: bool,
        failed: list[str] | None = None,
        start: object | None = None,
        sides: list[Side] | None = None,
    ) -> object:
        """The state after `calls` from the initial one (or `start`); an unknown tool or a failing
        call leaves the state as it was (the agent's mistake), except with `strict` (a broken
        task): then a failing call is an error, unless `failed` collects it (the benchmark skips
        it). `sides[i]` is who makes call i (default: the agent)."""
        state = cow(self.initial) if start is None else fork(start)
        for number, call in enumerate(calls):
            side = sides[number] if sides else "assistant"
            if strict and call.name not in (self.user_functions if side == "user" else self.functions):
                raise GraderError(
                    f"goal_actions: no {'user ' if side == 'user' else ''}tool {call.name!r} in the tools module"
                )
            state, done = self.apply(state, call, side=side)
            if strict and "error" in done:
                if failed is None:
                    raise GraderError(f"goal_actions: {call.name} failed: {done['error']}")
                failed.append(f"{call.name}: {done['error']}")
        return state

    def apply(self, state: object, call: ToolCall, *, side: Side = "assistant") -> tuple[object, ToolRun]:
        """Run one call on `state`: the state after it, and `{"output": ...}` or `{"error": ...}`.
        A call to an unknown tool (the agent's, or with `side="user"` the user's), or one that
        raises, leaves the state as it was."""
        fn = (self.user_functions if side == "user" else self.functions).get(call.name)
        if fn is None:
            return state, {"error": f"no {'user ' if side == 'user' else ''}tool named {call.name!r}"}
        working = fork(state)  # `state` stays as it was, should the call fail halfway
        try:
            return working, {"output": call_function(fn, call.name, working, call.arguments)}
        except GraderError:  # the domain's code cannot take this call: not the agent's mistake
            raise
        except Exception as exc:  # the agent called it wrongly: it reads why
            return state, {"error": f"{type(exc).__name__}: {exc}"}


@dataclass
class DomainSession:
    """One trial's copy of the backend: started from `initial_actions`, changed by the tool
    calls the agent and the user make (`calls`, in order; `sides[i]` made call i)."""

    domain: Domain
    state: object
    calls: list[ToolCall] = field(default_factory=list)
    initial_actions: list[EnvCall] = field(default_factory=list)
    sides: list[Side] = field(default_factory=list)

    async def call(self, call: ToolCall, side: Side = "assistant") -> ToolCall:
        """Run one tool call of `side` (through its tools) on this trial's state; a failing
        call changes nothing and its error is what the caller sees."""
        started = time.perf_counter()
        self.state, done = self.domain.apply(self.state, call, side=side)
        result = call.model_copy(update={**done, "duration_ms": round((time.perf_counter() - started) * 1000, 3)})
        self.calls.append(result)
        self.sides.append(side)
        return result

    def made(self, calls: list[tuple[Side, ToolCall]]) -> bool:
        """Whether these calls (an episode's, from its transcript) are exactly the ones made on
        this session, in order: then its state is the one a replay of them would reach."""
        return len(calls) == len(self.calls) and all(
            side == mine and call.name == done.name and call.arguments == done.arguments
            for (side, call), mine, done in zip(calls, self.sides, self.calls, strict=True)
        )


def call_function(fn: Tool, name: str, state: object, arguments: Mapping[str, object]) -> object:
    """`fn(state, **arguments)`.

    Raises:
        GraderError: an argument has the name of `fn`'s state parameter, which is not
            positional-only (Python would refuse the call: "got multiple values").
    """
    clash = _state_parameter(fn)
    if clash is not None and clash in arguments:
        raise GraderError(
            f"tools: {name}: the call has an argument named {clash!r}, like the function's first parameter "
            f"(the state): make that parameter positional-only, `def {name}({clash}, /, ...)`"
        )
    return fn(state, **arguments)


@functools.lru_cache(maxsize=4096)
def _state_parameter(fn: Tool) -> str | None:
    """The name of `fn`'s first parameter when an argument of that name would clash with it (it
    is not positional-only), else None."""
    try:
        first = next(iter(inspect.signature(fn).parameters.values()), None)
    except (TypeError, ValueError):  # no signature to read: the call itself tells
        return None
    return first.name if first is not None and first.kind is first.POSITIONAL_OR_KEYWORD else None


def _file_times(base_dir: Path, *names: str) -> tuple[int, ...]:
    """The modification times of the named files that exist (a changed file is read again)."""
    paths = (base_dir / name for name in names)
    return tuple(p.stat().st_mtime_ns if p.is_file() else 0 for p in paths)


def domain_file_problems(tools: object, backend: object, base_dir: Path) -> list[tuple[str, str]]:
    """`(field, message)` for a `tools` file or module and a `backend` file that cannot be found
    (a module is looked up on the Python path, else as a .py file in `base_dir`, as it is loaded)."""
    problems = []
    if isinstance(tools, str) and tools.strip():
        spec = tools.strip()
        if spec.endswith(".py") or "/" in spec or "\\" in spec:
            try:
                confined_file(spec, base_dir)
            except ValueError as exc:
                problems.append(("tools", f"{exc} (the domain's tool functions)"))
        elif not os.path.isfile(base_dir / (spec.replace(".", "/") + ".py")) and not _importable(spec):
            problems.append(("tools", f"module {spec!r} not found on the Python path, nor as a .py file here"))
    if isinstance(backend, str):
        try:
            confined_file(backend, base_dir)
        except ValueError as exc:
            problems.append(("backend", f"{exc} (the domain's initial backend)"))
    return problems


def _importable(module: str) -> bool:
    try:  # the top-level package only: nothing is imported to answer
        return importlib.util.find_spec(module.split(".")[0]) is not None
    except (ImportError, ValueError):
        return False


def load_tools(spec: str, base_dir: Path) -> dict[str, Tool]:
    """The public functions of a tools file or module."""
    return _public_functions(_module(spec, base_dir))


def _module(spec: str, base_dir: Path) -> ModuleType:
    try:
        return registry.load_plugin(spec, base_dir=base_dir)
    except RegistryError as exc:
        raise GraderError(f"tools: {exc}") from None


def _public_functions(module: ModuleType) -> dict[str, Tool]:
    return {
        name: fn
        for name, fn in vars(module).items()
        if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == module.__name__
    }


def load_sides(spec: str, base_dir: Path) -> tuple[dict[str, Tool], dict[str, Tool], dict[str, Tool]]:
    """`(the agent's tools, the user's tools, the environment functions)` of a tools file or
    module: its `USER_TOOLS` and `ENV_FUNCTIONS` name the last two, the rest are the agent's."""
    module = _module(spec, base_dir)
    functions = _public_functions(module)
    lists = {attribute: _names(module, attribute, spec) for attribute in ("USER_TOOLS", "ENV_FUNCTIONS")}
    both = sorted(set(lists["USER_TOOLS"]) & set(lists["ENV_FUNCTIONS"]))
    if both:
        raise GraderError(f"tools: {spec}: {both[0]!r} is in both USER_TOOLS and ENV_FUNCTIONS")
    named: list[dict[str, Tool]] = []
    for attribute, names in lists.items():
        missing = sorted(n for n in names if n not in functions)
        if missing:
            raise GraderError(f"tools: {spec}: {attribute}: no public function {missing[0]!r} in the module")
        named.append({n: functions.pop(n) for n in sorted(set(names))})
    return functions, named[0], named[1]


def _names(module: ModuleType, attribute: str, spec: str) -> list[str]:
    names = getattr(module, attribute, [])
    if not isinstance(names, list | tuple | set | frozenset) or not all(isinstance(n, str) for n in names):
        raise GraderError(f"tools: {spec}: {attribute}: expected a list of function names")
    return list(names)


def load_document(value: str | dict[str, object], base_dir: Path, name: str) -> object:
    """A JSON/YAML document given inline or as a file inside the suite's folder."""
    if isinstance(value, dict):
        return value
    try:
        path = confined_file(value, base_dir)
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise GraderError(f"{name}: {value} cannot be read as JSON/YAML: {exc}") from None


def _spec(name: str, fn: Tool) -> dict[str, JsonValue]:
    try:
        signature = inspect.signature(fn, eval_str=True)
    except (NameError, TypeError):  # an annotation that does not evaluate: keep it as written
        signature = inspect.signature(fn)
    params = list(signature.parameters.values())[1:]  # the first is the state
    fields: dict[str, Any] = {  # pydantic's field definitions: (annotation, default)
        p.name: (
            object if p.annotation is inspect.Parameter.empty else p.annotation,  # any value, as JSON
            ... if p.default is inspect.Parameter.empty else p.default,
        )
        for p in params
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    model: type[BaseModel] = create_model(f"{name}_arguments", **fields)
    parameters: dict[str, JsonValue] = model.model_json_schema()
    parameters.pop("title", None)
    properties = parameters.get("properties")
    for prop in properties.values() if isinstance(properties, dict) else ():
        if isinstance(prop, dict):
            prop.pop("title", None)
    description = (inspect.getdoc(fn) or name).split("\n\n")[0].replace("\n", " ")
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}
