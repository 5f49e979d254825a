"""A task-oriented domain: tool functions over a backend state (tau-bench's shape).

A suite's `tools:` names a Python file or module whose public functions are the domain's tools,
each `name(state, **arguments)` reading or changing `state` in place and returning what the
agent sees; `backend:` is the initial state, a JSON/YAML file or the document itself. Every
trial plays on its own copy (`Domain.session()`); `tau-reward` compares the copy's final state
with the goal. The tools' JSON schemas come from the functions' signatures.
"""

from __future__ import annotations

import copy
import inspect
import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, create_model

from .. import registry
from .._paths import confined_file
from ..errors import GraderError, RegistryError
from ..results import ToolCall


@dataclass(frozen=True)
class Domain:
    """Tool functions and the initial backend state they act on."""

    functions: dict[str, Callable[..., Any]]
    initial: Any

    @classmethod
    def load(cls, tools: str, backend: str | dict[str, Any], base_dir: Path) -> Domain:
        """The domain a suite names (`tools`: a .py file or a module; `backend`: a file or a document).

        Raises:
            GraderError: the module cannot be imported or the backend cannot be read.
        """
        return cls(load_tools(tools, base_dir), load_document(backend, base_dir, "backend"))

    def specs(self) -> list[dict[str, Any]]:
        """The tools as OpenAI `tools` entries (parameters from each signature, `state` left out)."""
        return [_spec(name, fn) for name, fn in self.functions.items()]

    def session(self) -> DomainSession:
        """A fresh copy of the state for one trial."""
        return DomainSession(self, copy.deepcopy(self.initial))

    def replay(self, calls: list[ToolCall], *, strict: bool) -> Any:
        """The state after `calls` from the initial one; an unknown tool or a failing call leaves
        the state as it was (the agent's mistake), except with `strict` (a broken task)."""
        state = copy.deepcopy(self.initial)
        for call in calls:
            if strict and call.name not in self.functions:
                raise GraderError(f"goal_actions: no tool {call.name!r} in the tools module")
            state, done = self.apply(state, call)
            if strict and "error" in done:
                raise GraderError(f"goal_actions: {call.name} failed: {done['error']}")
        return state

    def apply(self, state: Any, call: ToolCall) -> tuple[Any, dict[str, Any]]:
        """Run one call on `state`: the state after it, and `{"output": ...}` or `{"error": ...}`.
        A call to an unknown tool, or one that raises, leaves the state as it was."""
        fn = self.functions.get(call.name)
        if fn is None:
            return state, {"error": f"no tool named {call.name!r}"}
        before = copy.deepcopy(state)
        try:
            return state, {"output": fn(state, **call.arguments)}
        except Exception as exc:  # the agent called it wrongly: it reads why
            return before, {"error": f"{type(exc).__name__}: {exc}"}


@dataclass
class DomainSession:
    """One trial's copy of the backend, changed by the tool calls the agent makes."""

    domain: Domain
    state: Any
    calls: list[ToolCall] = field(default_factory=list)

    async def call(self, call: ToolCall) -> ToolCall:
        """Run one tool call on this trial's state; a failing call changes nothing and its
        error is what the agent sees."""
        started = time.perf_counter()
        self.state, done = self.domain.apply(self.state, call)
        result = call.model_copy(update={**done, "duration_ms": round((time.perf_counter() - started) * 1000, 3)})
        self.calls.append(result)
        return result


def load_tools(spec: str, base_dir: Path) -> dict[str, Callable[..., Any]]:
    """The public functions of a tools file or module."""
    try:
        module = registry.load_plugin(spec, base_dir=base_dir)
    except RegistryError as exc:
        raise GraderError(f"tools: {exc}") from None
    return {
        name: fn
        for name, fn in vars(module).items()
        if inspect.isfunction(fn) and not name.startswith("_") and fn.__module__ == module.__name__
    }


def load_document(value: str | dict[str, Any], base_dir: Path, name: str) -> Any:
    """A JSON/YAML document given inline or as a file inside the suite's folder."""
    if isinstance(value, dict):
        return value
    try:
        path = confined_file(value, base_dir)
        text = path.read_text(encoding="utf-8")
        return json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as exc:
        raise GraderError(f"{name}: {value} cannot be read as JSON/YAML: {exc}") from None


def _spec(name: str, fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        signature = inspect.signature(fn, eval_str=True)
    except (NameError, TypeError):  # an annotation that does not evaluate: keep it as written
        signature = inspect.signature(fn)
    params = list(signature.parameters.values())[1:]  # the first is the state
    fields: dict[str, Any] = {
        p.name: (
            Any if p.annotation is inspect.Parameter.empty else p.annotation,
            ... if p.default is inspect.Parameter.empty else p.default,
        )
        for p in params
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)
    }
    model: type[BaseModel] = create_model(f"{name}_arguments", **fields)
    parameters: dict[str, Any] = model.model_json_schema()
    parameters.pop("title", None)
    for prop in parameters.get("properties", {}).values():
        prop.pop("title", None)
    description = (inspect.getdoc(fn) or name).split("\n\n")[0].replace("\n", " ")
    return {"type": "function", "function": {"name": name, "description": description, "parameters": parameters}}
