"""The common base of coding-agent CLIs resumed turn by turn (`claude-code`, `codex`).

Each turn runs the CLI once: the first turn starts a session, later ones resume it by id.
The prompt goes to the CLI's standard input, so a message starting with `-` is text, never an
option, and no prompt is too long for a command line; the system prompt is given on every turn
(the CLIs do not keep one given on the command line), as an argument: one longer than Linux
takes (`MAX_ARGUMENT`) is an error that says so.
Per-turn figures mean the same for every agent: `usage` and `cost_usd` are this turn's (not
the session's running total), `latency_ms` is the wall-clock time of the CLI process, from
its start to its exit (CLI start-up included), and tool calls that did not run (denied by a
permission rule, blocked by a sandbox) are kept with a `status` and do not count as called.
A turn that fails, times out or whose CLI dies keeps what it had spent and run (`spent`). A
turn is stopped where the test's time budget (`AgentContext.max_seconds`) ends, if sooner than
its timeout: what it did so far is its reply, and the budget says it went over.
A conversation with a workspace runs the CLI inside the run's sandbox (see `_boxed`).
"""

from __future__ import annotations

import asyncio
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from ..._sandbox import lend
from .._base import ChatReply, ChatRequest, TargetConfig, TargetError
from .._http import redact
from .._settings import settings_of
from ._boxed import AgentHomes, Launch, launch, sandboxed
from ._process import Finished, Line, Stopped, agent_env, run_command, work_dir
from ._replies import prompt_text
from ._settings import AgentCliSettings

#: The longest argument Linux takes on a command line (MAX_ARG_STRLEN, 128 KiB with its NUL).
MAX_ARGUMENT = 128 * 1024 - 1
#: A turn's time limit when the target sets no `timeout_s`: an agent's turn is many model calls
#: and commands, minutes where one chat request takes seconds (AgentV sets no limit at all).
TURN_TIMEOUT_S = 600.0


class AgentCli(ABC):
    """A CLI agent target: subclasses say how to call it and how to read what it printed."""

    session = "resume"
    cacheable = False
    settings_model = AgentCliSettings
    #: The program run when the target names no `executable`.
    default_executable: ClassVar[str] = ""
    #: Variables of convoeval's environment the CLI gets (its credentials and configuration).
    env_names: ClassVar[tuple[str, ...]] = ()
    #: Its key variables, in order of preference: in the sandbox, only the first set one goes in.
    key_names: ClassVar[tuple[str, ...]] = ()
    #: Its non-secret settings (endpoint) that go into the sandbox too.
    config_names: ClassVar[tuple[str, ...]] = ()
    #: How the system prompt is given on the command line (named in the error when too long).
    system_option: ClassVar[str] = ""
    #: The variable the CLI reads its API endpoint from: a target's `base_url` is set in it.
    base_url_env: ClassVar[str] = ""

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.settings = settings_of(config, AgentCliSettings)
        if config.base_url and self.base_url_env:  # the target's own `env:` wins
            env = {self.base_url_env: config.base_url, **self.settings.env}
            self.settings = self.settings.model_copy(update={"env": env})
        self.executable = self.settings.executable or self.default_executable
        self.args = self.settings.args
        self.timeout_s = config.timeout_s if "timeout_s" in config.model_fields_set else TURN_TIMEOUT_S
        #: The system prompt of each session: a resumed turn's request carries only the new
        #: user message, and neither CLI keeps a system prompt given on the command line.
        self._systems: dict[str, str] = {}
        keep = self.settings.keep_sessions
        self.homes = AgentHomes(config.source_dir / keep if keep else None)

    def prompt(self, request: ChatRequest) -> tuple[str, str]:
        """`(system prompt, prompt)` of a turn; a resumed turn gets its session's system prompt."""
        system, prompt = prompt_text(request.messages)
        return system or self._systems.get(request.session_id or "", ""), prompt

    @abstractmethod
    def argv(self, request: ChatRequest) -> list[str]:
        """The command line of one turn (the prompt goes to its standard input)."""

    def watcher(self) -> Callable[[Line], str | None] | None:
        """A check of each printed line while the CLI runs; a message it returns stops the CLI."""
        return None

    def finisher(self) -> Callable[[Line], bool] | None:
        """A check of each printed line: True when the CLI has answered but will not exit on its
        own (it waits for commands it left running): it is ended there, its answer kept."""
        return None

    def explain_timeout(self, lines: list[Line]) -> str | None:
        """What the CLI was doing when it timed out (e.g. retrying an API error), if it said."""
        return None

    @abstractmethod
    def reply(self, finished: Finished, request: ChatRequest, env: dict[str, str]) -> ChatReply:
        """The turn's reply from what the CLI printed.

        Raises:
            TargetError: the CLI reported an error, or printed no complete turn.
        """

    def spent(self, lines: list[Line], request: ChatRequest, env: dict[str, str]) -> ChatReply | None:
        """What a turn that did not end well had spent and run (its tokens, cost and tool calls),
        from what the CLI printed (and wrote) so far; None when the CLI says nothing of it."""
        return None

    def _with_spent(
        self, exc: TargetError, lines: list[Line], request: ChatRequest, env: dict[str, str]
    ) -> TargetError:
        """`exc`, with the turn's spending and text read from `lines` when it carries none of its own."""
        so_far = None if exc.spent else self.spent(lines, request, env)
        if so_far is None:
            return exc
        usage, cost, calls = so_far.usage, so_far.cost_usd, so_far.tool_calls
        return TargetError(str(exc), usage=usage, cost_usd=cost, tool_calls=calls, text=exc.text or so_far.text)

    def launch(self, request: ChatRequest) -> Launch:
        """How this turn starts: in the sandbox when the conversation has a workspace (and the
        run's sandbox is not `none`), else on this machine."""
        argv = self.argv(request)
        longest = max(len(a.encode()) for a in argv)
        if longest > MAX_ARGUMENT:
            raise TargetError(
                f"{self.name}: the system prompt is too long for the command line, where the CLI takes it "
                f"({self.system_option}): {longest // 1024} KiB, over the {(MAX_ARGUMENT + 1) // 1024} KiB Linux allows "
                "in one argument; shorten it"
            )
        workdir = request.agent.workdir
        if workdir is not None and sandboxed(self.name):
            names = (self.key_names, self.config_names)
            return launch(self.config, self.settings, self.homes, argv, workdir, request.session_id, names)
        env, secrets = agent_env(self.config, self.settings, self.env_names, self.key_names)
        return Launch(argv, env, env, secrets)

    async def chat(self, request: ChatRequest) -> ChatReply:
        start = self.launch(request)
        session: str | None = None
        lent = None
        try:
            if start.user is not None and request.agent.workdir is not None:  # as root: see `_boxed`
                lent = lend(Path(request.agent.workdir), start.user)
            lines: list[Line] = []
            budget = request.agent.max_seconds
            timeout = self.timeout_s if budget is None else min(self.timeout_s, budget)
            started = time.perf_counter()
            try:
                finished = await run_command(
                    start.argv,
                    cwd=request.agent.workdir or work_dir(self.config, self.settings.cwd),
                    env=start.env,
                    timeout_s=timeout,
                    name=self.name,
                    secrets=start.secrets,
                    watch=self.watcher(),
                    explain=self.explain_timeout,
                    preexec=start.preexec,
                    stdin=self.prompt(request)[1],
                    done=self.finisher(),
                )
                lines = finished.lines
                reply = self.reply(finished, request, start.reply_env)
                reply.latency_ms = finished.duration_ms
            except TargetError as exc:  # every error path: what it spent is kept, the CLI's own key never leaves
                if not (timeout < self.timeout_s and isinstance(exc, Stopped) and exc.timed_out):
                    exc = self._with_spent(
                        exc, exc.lines if isinstance(exc, Stopped) else lines, request, start.reply_env
                    )
                    raise exc.reworded(redact(str(exc), tuple(start.secrets))) from None
                # The test's time budget ran out: the turn so far, over its budget (`budget_hit` says so).
                reply = self.spent(exc.lines, request, start.reply_env) or ChatReply(text="")
                reply.latency_ms = (time.perf_counter() - started) * 1000
            session = reply.session_id
        finally:
            try:
                if start.pids is not None:  # the CLI has ended (or its group was killed)
                    await asyncio.shield(start.pids.remove())
            finally:  # even when cancelled again while its cgroup drains
                if start.home is not None:
                    self.homes.settle(start.home, session or request.session_id)
                if lent is not None:  # nothing of the turn runs any more (its PID namespace is gone)
                    try:
                        lent.give_back()
                    except OSError as exc:
                        raise TargetError(f"{self.name}: the workspace lent to the CLI: {exc}") from None
        system, _ = self.prompt(request)
        if system and reply.session_id:
            self._systems[reply.session_id] = system
        return reply

    async def end_session(self, session_id: str) -> None:
        """The conversation is over: its sandbox HOME goes (its session files kept if asked)."""
        self.homes.end(session_id)

    async def aclose(self) -> None:
        self.homes.close()
