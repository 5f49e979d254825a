"""`python`: a Python callable as the target.

`python:module:callable` or `python:path/to/file.py:callable` (or `callable:` in the targets
file). Two kinds:

- a function (sync or async) of the messages (`[{role, content}]`, the whole history) that
  returns the reply: a string, a `{text, tool_calls, usage, cost_usd}` mapping, a
  `(text, tool_calls)` pair or a `ChatReply`. A second parameter, when the function takes
  one, receives `{test_id, trial, workdir, session_id}`.
- a factory (a class, or any callable with `factory: true`) called once per conversation;
  the object it returns keeps the conversation's state and is called with only the new
  messages each turn (`respond(messages)`, or the object itself when callable; a second
  parameter receives the same context, whose `workdir` is the trial's workspace). Its
  `close()` / `aclose()`, when present, runs after the conversation.

A call that takes longer than the target's `timeout_s` fails the turn ("timed out after N s").
Sync code runs in a thread of its own, one per conversation (an object stays in the thread
that made it), so it never holds up the other conversations; a call still running at its
timeout is left to finish there.

Example:
    class Agent:
        def __init__(self): self.seen = []
        def respond(self, messages):
            self.seen += messages
            return {"text": f"message {len(self.seen)}", "tool_calls": [{"name": "note", "arguments": {}}]}
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import inspect
import queue
import sys
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from ...results import ToolCall
from .._base import ChatReply, ChatRequest, TargetConfig, TargetError, provider
from .._settings import settings_of
from ._replies import mapped_usage, priced, tool_call
from ._settings import PythonSettings


@provider("python")
class PythonTarget:
    """Settings: `callable` (or the `model` part of `python:MODEL`), `factory` (call it once
    per conversation), `base_dir` (where relative `.py` paths are found; default: the targets
    file's folder, else the current directory)."""

    cacheable = False
    settings_model = PythonSettings

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        settings = settings_of(config, PythonSettings)
        ref = settings.callable_ref or config.model or ""
        self.function = load_callable(ref, config.source_dir / settings.base_dir, config.name)
        self.factory = settings.factory if settings.factory is not None else inspect.isclass(self.function)
        self.session = "resume" if self.factory else "history"
        self.timeout_s = config.timeout_s
        self.objects: dict[str, tuple[object, Worker]] = {}

    @classmethod
    def wrap(
        cls, function: Callable[..., object], name: str | None = None, factory: bool | None = None
    ) -> PythonTarget:
        """A target for a callable given directly (`convoeval.run(target=my_function)`)."""
        target = cls.__new__(cls)
        target.name = name or str(getattr(function, "__name__", "python"))
        target.config = TargetConfig(name=target.name, provider="python")
        target.function = function
        target.factory = inspect.isclass(function) if factory is None else factory
        target.session = "resume" if target.factory else "history"
        target.timeout_s = target.config.timeout_s
        target.objects = {}
        return target

    async def chat(self, request: ChatRequest) -> ChatReply:
        context = {
            "test_id": request.test_id,
            "trial": request.trial,
            "workdir": request.agent.workdir,
            "session_id": request.session_id,
        }
        if not self.factory:
            return priced(
                as_reply(await self._timed(None, self.function, request.messages, context), self.name), self.config
            )
        session_id = request.session_id
        if session_id is None or session_id not in self.objects:
            session_id = session_id or uuid.uuid4().hex
            worker = Worker(self.name)
            self.objects[session_id] = (await self._timed(worker, self.function), worker)
        agent, worker = self.objects[session_id]
        method = getattr(agent, "respond", None) or agent
        if not callable(method):
            raise TargetError(f"{self.name}: the factory's object has no respond(messages) and is not callable")
        reply = priced(as_reply(await self._timed(worker, method, request.messages, context), self.name), self.config)
        reply.session_id = session_id
        return reply

    async def _timed(self, worker: Worker | None, function: Callable[..., object], *args: object) -> object:
        """`bounded` by the target's `timeout_s`."""
        try:
            return await bounded(function, *args, timeout_s=self.timeout_s, worker=worker)
        except TimeoutError:
            raise TargetError(f"{self.name}: timed out after {self.timeout_s:g} s") from None

    async def end_session(self, session_id: str) -> None:
        agent, worker = self.objects.pop(session_id, (None, None))
        if worker is None:
            return
        try:
            close = getattr(agent, "aclose", None) or getattr(agent, "close", None)
            if callable(close):
                await self._timed(worker, close)
        finally:
            worker.stop()

    async def aclose(self) -> None:
        for session_id in list(self.objects):
            await self.end_session(session_id)


async def bounded(
    function: Callable[..., object], *args: object, timeout_s: float, worker: Worker | None = None
) -> object:
    """`_call` within `timeout_s`, sync code in `worker`'s thread (else in a thread of its own).

    Raises:
        TimeoutError: the call took longer (a sync one is left to finish in its thread).
        RuntimeError: the code called `sys.exit()` (which would end the run, with no results).
    """
    own = worker is None and not inspect.iscoroutinefunction(function)  # an async one needs no thread
    thread = Worker(getattr(function, "__name__", "call")) if own else worker
    try:
        async with asyncio.timeout(timeout_s):
            return await _call(function, *args, worker=thread)
    except SystemExit as exc:
        raise RuntimeError(f"sys.exit({exc.code!r}) called") from None
    finally:
        if own and thread is not None:
            thread.stop()


class Worker:
    """A daemon thread running one conversation's sync calls in turn: they never block the
    event loop, and one still running at its timeout holds up neither the run nor its exit."""

    def __init__(self, name: str):
        self.calls: queue.SimpleQueue[Callable[[], None] | None] = queue.SimpleQueue()
        threading.Thread(target=self._serve, name=f"convoeval-python-{name}", daemon=True).start()

    def _serve(self) -> None:
        while (call := self.calls.get()) is not None:
            call()

    async def run(self, function: Callable[..., object], *args: object) -> object:
        loop = asyncio.get_running_loop()
        future: asyncio.Future[object] = loop.create_future()

        def settle(value: object, error: BaseException | None) -> None:
            if future.done():  # timed out meanwhile
                return
            if error is not None:
                future.set_exception(error)
            else:
                future.set_result(value)

        def call() -> None:
            try:
                value, error = function(*args), None
            except (Exception, SystemExit) as exc:  # the user's code failed: the call's error
                value, error = None, exc
            with contextlib.suppress(RuntimeError):  # the loop has closed meanwhile
                loop.call_soon_threadsafe(settle, value, error)

        self.calls.put(call)
        return await future

    def stop(self) -> None:
        self.calls.put(None)


async def _call(function: Callable[..., object], *args: object, worker: Worker | None = None) -> object:
    """Call a sync or async function with as many of `args` as it takes (a sync one in
    `worker`'s thread, when given)."""
    try:
        params = inspect.signature(function).parameters.values()
        takes_all = any(p.kind is p.VAR_POSITIONAL for p in params)
        positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        count = len(args) if takes_all else min(len(args), len(positional))
    except (TypeError, ValueError):  # builtins without a signature
        count = len(args)
    if worker is not None and not inspect.iscoroutinefunction(function):
        value = await worker.run(function, *args[:count])
    else:
        value = function(*args[:count])
    if inspect.isawaitable(value):
        value = await value
    return value


def as_reply(value: object, name: str) -> ChatReply:
    """A callable's return value as a ChatReply."""
    if isinstance(value, ChatReply):
        return value
    if isinstance(value, str):
        return ChatReply(text=value)
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return ChatReply(text=value[0], tool_calls=[_call_of(c) for c in value[1] or []])
    text = value.get("text", "") if isinstance(value, dict) else None
    if isinstance(value, dict) and isinstance(text, str):
        usage, calls, cost = value.get("usage"), value.get("tool_calls"), value.get("cost_usd")
        return ChatReply(
            text=text,
            tool_calls=[_call_of(c) for c in calls] if isinstance(calls, list | tuple) else [],
            usage=mapped_usage(usage),
            cost_usd=float(cost) if isinstance(cost, int | float) else 0.0,
            cost_known=isinstance(cost, int | float),
        )
    raise TargetError(
        f"{name}: the callable returned {type(value).__name__}; return a string, "
        "a {text, tool_calls} mapping or a (text, tool_calls) pair"
    )


def _call_of(value: object) -> ToolCall:
    return value if isinstance(value, ToolCall) else tool_call(value)


def load_callable(ref: str, base_dir: Path, name: str) -> Callable[..., object]:
    """`module:attr` or `path/to/file.py:attr` -> the object."""
    module_ref, _, attr = ref.rpartition(":")
    if not module_ref or not attr:
        raise TargetError(f"{name}: give the callable as module:function or path/to/file.py:function, got {ref!r}")
    try:
        if module_ref.endswith(".py"):
            path = (base_dir / module_ref).resolve()
            if not path.is_file():
                raise TargetError(f"{name}: no such file: {path}")
            spec = importlib.util.spec_from_file_location(f"convoeval_target_{path.stem}_{abs(hash(path))}", path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[spec.name] = module
            spec.loader.exec_module(module)
        else:
            module = importlib.import_module(module_ref)
    except TargetError:
        raise
    except Exception as exc:  # the user's module failed to import
        raise TargetError(f"{name}: cannot import {module_ref}: {type(exc).__name__}: {exc}") from None
    function = getattr(module, attr, None)
    if not callable(function):
        raise TargetError(f"{name}: {module_ref} has no callable {attr!r}")
    return function
