"""OpenAI Codex CLI: `codex exec --json [OPTIONS] -- -`, later turns
`codex exec --json [OPTIONS] resume THREAD_ID -- -` (options before the subcommand; `-`: the
prompt is read from standard input). The system prompt is Codex's `developer_instructions`
(`-c`), given on every turn. The endpoint, the target's `base_url` else `OPENAI_BASE_URL`, is
Codex's `openai_base_url` (`-c`): Codex no longer reads that variable (openai/codex#16720).

Events (`codex exec --json`, one JSON object a line): `thread.started` (`thread_id`),
`turn.started`, `item.started` / `item.updated` / `item.completed` with an `item` of type
`agent_message` (text), `reasoning`, `command_execution` (command, aggregated_output,
exit_code), `file_change` (changes), `mcp_tool_call` (server, tool, arguments, result, error),
`web_search` (query), `todo_list`, `error` (a warning, `item.message`); then `turn.completed`
(`usage`) or `turn.failed` (`error.message`). A top-level `error` (`message`) is not the end of
the turn: Codex prints `Reconnecting... 1/5` for retries it may recover from, so only a turn
without `turn.completed` fails (with the last error it printed). A command still running when
the turn ends (a server the agent started) has only its `item.started`: it is a call, with its
output so far. After `exec resume`, `turn.completed.usage` is the
thread's running total; the turn's own figures come from the rollout file Codex writes
(`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-*-THREAD.jsonl`, see `_codex_rollout`), or the
difference with the previous total. The rollout also shows the commands Codex's sandbox
blocked, which the event stream leaves out: they are kept with `status: blocked`. The cost is
the tokens at the target's prices, else its model's list price (`target_prices`), the input
tokens Codex counts as cached at the model's cached-input list price (`cache_prices`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..._text import shorten
from ...results import ToolCall, Usage
from .._base import ChatReply, ChatRequest, TargetConfig, TargetError, env_base_url, provider
from .._prices import cache_prices, target_prices, usage_cost
from ._agent_cli import AgentCli
from ._codex_rollout import UNSUPPORTED, RolloutTurn, codex_usage, command_of, find_rollout, read_last_turn
from ._process import Finished, Line, failure

#: Variables Codex reads for its credentials and configuration.
CODEX_ENV = ("OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "CODEX_HOME")


@provider("codex")
class CodexTarget(AgentCli):
    """Settings: `model` (`--model`), `base_url`, `executable` (default `codex`), `args` (options of
    `codex exec`, placed before `resume`, e.g. `[--skip-git-repo-check, --sandbox,
    workspace-write]`), `cwd`, `timeout_s`, `env` / `env_passthrough`, `keep_sessions`, prices
    per million tokens (cost from usage)."""

    default_executable = "codex"
    env_names = CODEX_ENV
    key_names = ("OPENAI_API_KEY", "CODEX_API_KEY")
    config_names = ("OPENAI_BASE_URL",)
    system_option = "-c developer_instructions=..."

    def __init__(self, config: TargetConfig):
        super().__init__(config)
        self._totals: dict[str, Usage] = {}
        self.prices, self.priced = target_prices(
            config.model, config.price_input_per_mtok, config.price_output_per_mtok
        )
        #: What a prompt-cache (read, write) token costs.
        self.cache_prices = cache_prices(
            config.model or "", self.prices[0], own_input_price=config.price_input_per_mtok is not None
        )

    def argv(self, request: ChatRequest) -> list[str]:
        system, _ = self.prompt(request)
        argv = [self.executable, "exec", "--json"]
        if self.config.model:
            argv += ["--model", self.config.model]
        if system:
            argv += ["-c", f"developer_instructions={toml_string(system)}"]
        if endpoint := self.config.base_url or env_base_url("OPENAI_BASE_URL"):
            argv += ["-c", f"openai_base_url={toml_string(endpoint)}"]
        argv += self.args
        if request.session_id:
            argv += ["resume", request.session_id]
        return [*argv, "--", "-"]

    def watcher(self) -> Callable[[Line], str | None]:
        return stop_on_refused_key

    def explain_timeout(self, lines: list[Line]) -> str | None:
        return timeout_detail(lines)

    def reply(self, finished: Finished, request: ChatRequest, env: dict[str, str]) -> ChatReply:
        try:
            reply = parse_events(finished.lines, request.session_id)
        except TargetError as exc:  # what the turn spent is added by `spent`
            if finished.returncode and "without `turn.completed`" in str(exc) and not _has_events(finished):
                raise failure(self.name, finished, events=True) from None
            raise TargetError(f"{self.name}: {exc}") from None
        total = reply.usage
        previous = self._totals.get(reply.session_id or "")
        if reply.session_id:
            self._totals[reply.session_id] = total
        self._account(reply, previous, env)
        return reply

    def spent(self, lines: list[Line], request: ChatRequest, env: dict[str, str]) -> ChatReply:
        """The text and tool calls the stream shows, with the tokens and blocked commands of the
        turn's rollout so far (Codex writes the turn's tokens after each model call)."""
        try:
            stream = parse_events(lines, request.session_id)
            calls, text = stream.tool_calls, stream.text
        except TargetError as exc:
            calls, text = exc.tool_calls, exc.text
        so_far = ChatReply(text=text, tool_calls=calls, session_id=_thread(lines, request))
        self._account(so_far, None, env, self.prompt(request)[1])
        return so_far

    def _account(
        self, reply: ChatReply, previous: Usage | None, env: dict[str, str], prompt: str | None = None
    ) -> None:
        """The turn's own tokens (`_turn_usage`: `reply.usage` is the running total printed, if
        any), its cost, and what its rollout adds to its tool calls (`_merge_rollout`). With
        `prompt`, the rollout's last turn counts only if it is this one (a CLI stopped early may
        not have written it yet: the last turn is then an earlier one)."""
        rollout = find_rollout(env, reply.session_id)
        turn = read_last_turn(rollout) if rollout is not None else None
        if turn is not None and prompt is not None and prompt.strip() not in (u.strip() for u in turn.user):
            turn = None
        reply.usage = _turn_usage(reply.usage, previous, turn)
        if turn is not None:
            _merge_rollout(reply, turn)
        reply.cost_usd = usage_cost(reply.usage, self.prices, self.cache_prices)
        reply.cost_known = self.priced


def toml_string(text: str) -> str:
    """`text` as a TOML basic string: JSON's escapes are TOML's, non-ASCII stays as is, and
    DEL (which JSON leaves raw and TOML refuses) is escaped too."""
    return json.dumps(text, ensure_ascii=False).replace("\x7f", "\\u007f")


def stop_on_refused_key(line: Line) -> str | None:
    """A message when Codex retries a request the API refused for good (401, 403): no retry
    will fix a bad key, so the turn ends at once instead of after Codex's five reconnects."""
    if not line.text.startswith('{"type":"error"') or not _REFUSED.search(line.text):
        return None
    event = _event(line.text) or {}
    message = _RETRY_PREFIX.sub("", str(event.get("message") or "")).rstrip(")")
    return f"Codex: the API refused the key: {message}; stopped instead of retrying (check the provider's key)"


_REFUSED = re.compile(r"status (401|403)\b")
_RETRY_PREFIX = re.compile(r"^Reconnecting\.\.\. \d+/\d+ \(")


def timeout_detail(lines: list[Line]) -> str | None:
    """What Codex was doing when it was stopped, in words (None when it did not say): the
    commands still running, and the last error it printed (a top-level `error` event, or an
    `error` item)."""
    running: dict[str, str] = {}
    error: str | None = None
    for line in lines:
        event = _event(line.text) or {}
        raw_item = event.get("item")
        item: dict[str, Any] = raw_item if isinstance(raw_item, dict) else {}
        if event.get("type") == "error" and event.get("message"):
            error = str(event["message"])
        elif item.get("type") == "error" and item.get("message"):
            error = str(item["message"])
        elif item.get("type") == "command_execution" and event.get("type") == "item.started":
            running[str(item.get("id"))] = str(item.get("command", ""))
        elif event.get("type") == "item.completed":
            running.pop(str(item.get("id")), None)
    said = [f"Codex was running `{shorten(c, 200)}`" for c in running.values()]
    if error is not None:
        said.append(f"Codex's last error: {shorten(error, 500)}")
    return "; ".join(said) or None


def _thread(lines: list[Line], request: ChatRequest) -> str | None:
    """The thread a turn ran in: the one it started, else the one it resumed."""
    started = (e for e in map(_event, (line.text for line in lines if '"thread.started"' in line.text)) if e)
    return next((str(e["thread_id"]) for e in started if e.get("thread_id")), None) or request.session_id


def _has_events(finished: Finished) -> bool:
    return any(line.text.startswith('{"type":"turn.') for line in finished.lines)


def _turn_usage(total: Usage, previous: Usage | None, turn: RolloutTurn | None) -> Usage:
    """This turn's tokens: the rollout's own count, else the growth of the running total."""
    if turn is not None and turn.usage is not None:
        return turn.usage
    if previous is not None:
        return Usage(
            input_tokens=max(0, total.input_tokens - previous.input_tokens),
            output_tokens=max(0, total.output_tokens - previous.output_tokens),
            cached_input_tokens=max(0, total.cached_input_tokens - previous.cached_input_tokens),
            cache_write_tokens=max(0, total.cache_write_tokens - previous.cache_write_tokens),
        )
    return total  # the first turn of a thread (or a resumed thread whose total is unknown)


def _merge_rollout(reply: ChatReply, turn: RolloutTurn) -> None:
    """Codex's own duration of each command (the event stream has none), the output of one
    still running when the turn ended (the stream has only its start), the commands its
    sandbox blocked, and the calls of tools it does not have (a failed call, as Claude Code
    records one): the stream leaves both out."""
    commands = [c for c in reply.tool_calls if c.name == "command_execution"]
    for call in turn.commands:
        same = next((c for c in commands if command_of(c) == command_of(call)), None)
        if same is not None:
            commands.remove(same)
            same.duration_ms = call.duration_ms if call.duration_ms is not None else same.duration_ms
            same.output = same.output or call.output
            if call.status == "blocked":
                same.status, same.error, same.arguments = call.status, call.error, call.arguments
        elif call.status == "blocked":
            reply.tool_calls.append(call)
    reply.tool_calls += [c for c in turn.calls if c.name != "command_execution" and UNSUPPORTED.match(c.error or "")]


def parse_events(lines: list[Line], thread_id: str | None = None) -> ChatReply:
    """The reply in a `codex exec --json` event stream (`usage` as printed: after a resume,
    the thread's running total).

    Raises:
        TargetError: `turn.failed`, or no `turn.completed` (with the last `error` printed).
    """
    texts: list[str] = []
    calls: dict[str, ToolCall] = {}
    started: dict[str, float] = {}
    usage: Usage | None = None
    errors: list[str] = []
    for line in lines:
        event = _event(line.text)
        if event is None:
            continue
        kind = event.get("type")
        raw_item = event.get("item")
        item: dict[str, Any] = raw_item if isinstance(raw_item, dict) else {}
        if kind == "thread.started":
            thread_id = str(event.get("thread_id") or "") or thread_id
        elif kind in ("item.started", "item.updated"):
            started.setdefault(str(item.get("id")), line.at)
            if item.get("type") == "command_execution":  # kept if it never completes (still running)
                calls[str(item.get("id"))] = _running(item)
        elif kind == "item.completed":
            if item.get("type") == "agent_message" and item.get("text"):
                texts.append(str(item["text"]))
            call = _tool_call(item)
            if call is not None:
                call.duration_ms = _duration(started.get(str(item.get("id"))), line.at)
                calls[str(item.get("id"))] = call
        elif kind == "turn.completed":
            data = event.get("usage")
            usage = codex_usage(data if isinstance(data, dict) else {})
        elif kind == "turn.failed":
            message = (event.get("error") or {}).get("message", "") if isinstance(event.get("error"), dict) else ""
            failed = f"Codex turn failed: {message or (errors[-1] if errors else 'no message')}"
            raise TargetError(failed, tool_calls=list(calls.values()), text="\n\n".join(texts))
        elif kind == "error":
            errors.append(str(event.get("message") or "no message"))
    if usage is None:
        last = f": {errors[-1]}" if errors else ""
        failed = f"the event stream ended without `turn.completed`{last}"
        raise TargetError(failed, tool_calls=list(calls.values()), text="\n\n".join(texts))
    return ChatReply(text="\n\n".join(texts), usage=usage, tool_calls=list(calls.values()), session_id=thread_id)


def _duration(start: float | None, end: float) -> float | None:
    """Milliseconds between an item's start and end lines; None when they came together (the
    pipe delivered both at once: no measure at all, rather than a made-up 0.01 ms)."""
    if start is None or end - start < 0.001:
        return None
    return round((end - start) * 1000, 1)


def _running(item: dict[str, Any]) -> ToolCall:
    """A command that has started, with its output so far (no exit code yet: no error)."""
    return ToolCall(
        name="command_execution",
        arguments={"command": item.get("command", "")},
        output=item.get("aggregated_output", ""),
        id=item.get("id"),
    )


def _tool_call(item: dict[str, Any]) -> ToolCall | None:
    """A completed item as a tool call (None for messages, reasoning and plans)."""
    kind, item_id = item.get("type"), item.get("id")
    if kind == "command_execution":
        code = item.get("exit_code")
        return ToolCall(
            name="command_execution",
            arguments={"command": item.get("command", "")},
            output=item.get("aggregated_output", ""),
            id=item_id,
            error=None if code in (0, None) and item.get("status") != "failed" else f"exit code {code}",
        )
    if kind == "file_change":
        return ToolCall(
            name="file_change",
            arguments={"changes": item.get("changes") or []},
            id=item_id,
            output=item.get("status"),
            error="patch failed" if item.get("status") == "failed" else None,
        )
    if kind == "mcp_tool_call":
        error = item.get("error")
        arguments = item.get("arguments") if isinstance(item.get("arguments"), dict) else {}
        return ToolCall(
            name=str(item.get("tool", "")),
            arguments=arguments,
            id=item_id,
            output=item.get("result"),
            error=error.get("message") if isinstance(error, dict) else (str(error) if error else None),
        )
    if kind == "web_search":
        return ToolCall(name="web_search", arguments={"query": item.get("query", "")}, id=item_id)
    return None


def _event(text: str) -> dict[str, Any] | None:
    if not text.strip().startswith("{"):
        return None
    try:
        event = json.loads(text)
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) else None
