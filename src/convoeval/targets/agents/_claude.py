"""Claude Code in headless mode: `claude -p --output-format stream-json --verbose`, the prompt on
its standard input.

Turn 1 starts a session; later turns add `--resume SESSION_ID`. The system prompt is passed
with `--append-system-prompt` on every turn (Claude Code does not keep it in the session).
The stream is one JSON event a line (the Agent SDK's message types): `system`/`init` (the
`session_id`), `system`/`api_retry` (`attempt`, `error_status`: a 401 or 403 stops the CLI at
once instead of waiting for its retries), `assistant` messages whose content blocks are `text`
and `tool_use`, `user` messages carrying `tool_result` blocks, and a final `result` (`result`
text, `session_id`, `is_error`, `subtype`, `api_error_status`, `permission_denials`, and the
figures, see `run_figures`). A run stopped by the target's own `--max-turns` or
`--max-budget-usd` (subtypes `error_max_turns`, `error_max_budget_usd`) is a reply that hit a
budget; any other failed result is an error that still carries the figures and tool calls. A
`tool_use` that never got its `tool_result` before the `result` (a limit stopped the run) did not
run: it is left out. A run stopped before its `result` (a timeout, a crash) keeps what its
printed messages show it spent and ran (`spent_so_far`), a tool still running included.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..._text import shorten
from ...results import ToolCall, Usage
from .._anthropic import anthropic_usage
from .._base import ChatReply, ChatRequest, TargetConfig, TargetError, provider
from .._prices import cache_prices, lookup_price, target_prices, usage_cost
from ._agent_cli import AgentCli
from ._process import Finished, Line, failure

#: Variables Claude Code reads for its credentials and endpoint.
CLAUDE_ENV = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "CLAUDE_CODE_USE_BEDROCK",
    "CLAUDE_CODE_USE_VERTEX",
    "CLAUDE_CONFIG_DIR",
)
#: API answers that no retry will fix.
FATAL_STATUS = {401: "the API key was refused", 403: "the API key has no access"}
#: Result subtypes of a run stopped by one of Claude Code's own limits: the budget's name, its option.
LIMITS = {
    "error_max_turns": ("max_turns", "--max-turns"),
    "error_max_budget_usd": ("max_budget_usd", "--max-budget-usd"),
}


@provider("claude-code")
class ClaudeCodeTarget(AgentCli):
    """Settings (targets file): `model` (passed as `--model`), `base_url` (the API endpoint, as
    `ANTHROPIC_BASE_URL`), `executable` (default
    `claude`), `args` (extra arguments, e.g. `[--permission-mode, acceptEdits]`), `cwd`
    (default: the conversation's workspace, else the current directory), `timeout_s` (a turn's,
    default `TURN_TIMEOUT_S`),
    `env` / `env_passthrough` (see `agent_env`), `keep_sessions` (see `_boxed`)."""

    default_executable = "claude"
    env_names = CLAUDE_ENV
    key_names = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN")
    config_names = ("ANTHROPIC_BASE_URL", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX")
    system_option = "--append-system-prompt"
    base_url_env = "ANTHROPIC_BASE_URL"

    def argv(self, request: ChatRequest) -> list[str]:
        system, _ = self.prompt(request)
        argv = [self.executable, "-p", "--output-format", "stream-json", "--verbose"]
        if request.session_id:
            argv += ["--resume", request.session_id]
        if system:
            argv += ["--append-system-prompt", system]
        if self.config.model:
            argv += ["--model", self.config.model]
        return [*argv, *self.args]

    def watcher(self) -> Callable[[Line], str | None]:
        return stop_on_fatal_retry

    def finisher(self) -> Callable[[Line], bool]:
        return answered_with_background_tasks()

    def spent(self, lines: list[Line], request: ChatRequest, env: dict[str, str]) -> ChatReply:
        return spent_so_far(lines, self.config)

    def explain_timeout(self, lines: list[Line]) -> str | None:
        return retrying(lines)

    def reply(self, finished: Finished, request: ChatRequest, env: dict[str, str]) -> ChatReply:
        try:
            reply = parse_stream(finished.lines, self.args, self.config)
        except TargetError as exc:
            if finished.returncode and "without a `result`" in str(exc):
                raise failure(self.name, finished, events=True) from None
            raise exc.reworded(f"{self.name}: {exc}") from None
        return reply


def retrying(lines: list[Line]) -> str | None:
    """What Claude Code was doing, in words, when its last `system/api_retry` event came (None
    without one): the attempt, and the API's status or, when the connection failed or the
    stream broke (2.1.332 retries a cut stream), that there was none."""
    retries = [e for e in map(_event, (line.text for line in lines if '"api_retry"' in line.text)) if e]
    if not retries:
        return None
    last = retries[-1]
    status = last.get("error_status")
    reason = f"status {status}" if status is not None else "no status"
    return (
        f"Claude Code was retrying the API: attempt {last.get('attempt')} of {last.get('max_retries')}, "
        f"{reason} ({last.get('error')})"
    )


def answered_with_background_tasks() -> Callable[[Line], bool]:
    """A check that is True at a `result` event printed while background commands run (Bash's
    `run_in_background`, a server the agent started): Claude Code 2.1.332 then stays up until
    they end, and answers again when one does, so a turn that started a server would run to its
    timeout. The turn ends at that `result`, as a Codex turn does at its end (Claude Code, ended
    with SIGTERM, ends its commands). The tasks running are the last `background_tasks_changed`
    event's `tasks`."""
    running = False

    def check(line: Line) -> bool:
        nonlocal running
        if '"background_tasks_changed"' in line.text:
            event = _event(line.text) or {}
            if event.get("subtype") == "background_tasks_changed":
                running = bool(event.get("tasks"))
        return running and '"result"' in line.text and (_event(line.text) or {}).get("type") == "result"

    return check


def stop_on_fatal_retry(line: Line) -> str | None:
    """A message when Claude Code is about to retry a request the API refused for good."""
    if '"api_retry"' not in line.text:
        return None
    event = _event(line.text) or {}
    status = event.get("error_status")
    if event.get("subtype") != "api_retry" or status not in FATAL_STATUS:
        return None
    return (
        f"Claude Code: the API answered {status} ({event.get('error') or FATAL_STATUS[status]}): "
        f"{FATAL_STATUS[status]}; stopped instead of retrying (check ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL)"
    )


def parse_stream(lines: list[Line], args: Sequence[str] = (), config: TargetConfig | None = None) -> ChatReply:
    """The reply in a stream-json transcript; `args`, the CLI's options, give the limit a run
    stopped by `--max-turns` / `--max-budget-usd` hit (its `finish_reason`: `budget:max_turns=3`);
    `config`, the target's prices for a model Claude Code has none for (`run_figures`).

    Raises:
        TargetError: no `result` event, or a result that reports an error (in words: the API
            status and Claude Code's message; with the figures and tool calls of the run).
    """
    stream = read_stream(lines)
    result, calls = stream.result, stream.calls
    if result is None:
        retries = stream.retries
        last = f" (last API retry: status {retries[-1].get('error_status')})" if retries else ""
        raise TargetError(f"the stream ended without a `result` event{last}")
    for denial in [d for r in stream.results for d in r.get("permission_denials") or []]:
        call = calls.get(str(denial.get("tool_use_id"))) if isinstance(denial, dict) else None
        if call is not None:
            call.status = "denied"
    usage, cost, known = run_figures(result, config)
    if len(stream.results) > 1 and all(
        isinstance(r.get("model_usage_since_last_result"), dict) for r in stream.results
    ):
        usage, cost, known = Usage(), 0.0, True  # answered again: each result counts what came since the one before
        for each in (r for r in stream.results if r["model_usage_since_last_result"]):  # `{}`: no model call
            used, spent, priced = run_figures(each, config)
            usage, cost, known = usage + used, cost + spent, known and priced
    ran = stream.ran
    subtype = str(result.get("subtype", "success"))
    finish = subtype
    if subtype in LIMITS:
        name, option = LIMITS[subtype]
        given = _option(args, option)
        finish = f"budget:{name}" + (f"={given}" if given else "")
    elif result.get("is_error") or subtype != "success":
        raise TargetError(
            result_error(result), usage=usage, cost_usd=cost, tool_calls=ran, text="\n\n".join(stream.texts)
        )
    answers = [str(r["result"]) for r in stream.results if str(r.get("result") or "").strip()]
    last = str(result["result"]) if result.get("result") is not None else "\n\n".join(stream.texts)
    return ChatReply(
        text="\n\n".join(answers) if len(answers) > 1 else last or "\n\n".join(answers),
        usage=usage,
        cost_usd=cost,
        cost_known=known,
        latency_ms=float(result.get("duration_ms") or 0.0),
        tool_calls=ran,
        session_id=str(result.get("session_id") or stream.session_id or "") or None,
        finish_reason=finish,
    )


@dataclass
class Stream:
    """What a stream-json transcript holds: tool calls by id, the assistant's texts, the session,
    the last `result` event (None before the end) and all of them (Claude Code 2.1.332 answers
    again when a background command it ran ends: a `result` each time), the API retries, and
    the `usage` of each model call (by message id: Claude Code prints a message once per content
    block) with its model."""

    calls: dict[str, ToolCall] = field(default_factory=dict)
    texts: list[str] = field(default_factory=list)
    session_id: str | None = None
    result: dict[str, Any] | None = None
    results: list[dict[str, Any]] = field(default_factory=list)
    retries: list[dict[str, Any]] = field(default_factory=list)
    usages: dict[str, dict[str, Any]] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)

    @property
    def ran(self) -> list[ToolCall]:
        """The tool calls that ran (in a finished run, a call with no result never did)."""
        return [call for call in self.calls.values() if call.output is not None]

    @property
    def started(self) -> list[ToolCall]:
        """The tool calls of a run stopped before its `result`: one with no result yet was still
        running (Claude Code runs a tool once it has printed the call), its output unknown."""
        if self.result is not None:
            return self.ran
        return [c if c.output is not None else c.model_copy(update={"output": ""}) for c in self.calls.values()]


def read_stream(lines: list[Line]) -> Stream:
    """The events of a stream-json transcript, complete or cut short."""
    stream = Stream()
    started: dict[str, float] = {}
    for line in lines:
        event = _event(line.text)
        if event is None:
            continue
        stream.session_id = event.get("session_id") or stream.session_id
        kind = event.get("type")
        if kind in ("assistant", "user"):
            _read_message(event, line.at, stream.calls, started, stream.texts)
            message = event.get("message")
            if kind == "assistant" and isinstance(message, dict) and isinstance(message.get("usage"), dict):
                stream.usages[str(message.get("id"))] = message["usage"]
                stream.models[str(message.get("id"))] = str(message.get("model") or "")
        elif kind == "system" and event.get("subtype") == "api_retry":
            stream.retries.append(event)
        elif kind == "result":
            stream.result = event
            stream.results.append(event)
    return stream


def spent_so_far(lines: list[Line], config: TargetConfig) -> ChatReply:
    """What a run stopped before its `result` had said, spent (tokens of each model call it printed,
    priced at its model's list price, else the target's; cache reads and writes as
    Anthropic charges them, `cache_prices`) and the tool calls that ran or were running
    (`Stream.started`). Claude Code prints a message's `usage` as the API's stream starts it:
    its input is exact, its output a floor."""
    stream = read_stream(lines)
    usage, cost = Usage(), 0.0
    for message_id, used in stream.usages.items():
        spent = anthropic_usage(used)
        usage += spent
        answered = stream.models[message_id]  # the model that answered, if listed; else the target's
        model = answered if answered and lookup_price(answered) else (config.model or "")
        prices, _ = target_prices(model, config.price_input_per_mtok, config.price_output_per_mtok)
        cost += usage_cost(spent, prices, cache_prices(model, prices[0], own_input_price=True, anthropic=True))
    text = "\n\n".join(stream.texts)
    return ChatReply(text=text, usage=usage, cost_usd=cost, tool_calls=stream.started, session_id=stream.session_id)


def _option(args: Sequence[str], name: str) -> str | None:
    """The value of option `name` in `args` (`--name VALUE` or `--name=VALUE`; the last given)."""
    found = None
    for index, arg in enumerate(args):
        if arg == name and index + 1 < len(args):
            found = args[index + 1]
        elif arg.startswith(name + "="):
            found = arg.removeprefix(name + "=")
    return found


def run_figures(result: dict[str, Any], config: TargetConfig | None = None) -> tuple[Usage, float, bool]:
    """The tokens and cost of this run of the CLI (one turn), from its `result` event, and
    whether the cost is known.

    Newer Claude Code (2.1.332 is) carries a resumed session's running total in
    `total_cost_usd` and `modelUsage`; `model_usage_since_last_result` (per model, what this
    process counted since its previous result: with `-p`, the whole run, subagents included)
    is the turn's own. Older ones (2.1.197) have no such field and report the run's own
    `total_cost_usd` and main-loop `usage`. A model Claude Code has no price for (`costBasis:
    unknown`, e.g. a gateway's) gets a guessed `costUSD`: it is priced as convoeval prices a
    model instead (the target's `price_input_per_mtok` / `price_output_per_mtok`, else the list
    price), else its cost is unknown.
    """
    since = result.get("model_usage_since_last_result")
    if isinstance(since, dict) and since:
        usage, cost, known = Usage(), 0.0, True
        for name, model in since.items():
            if not isinstance(model, dict):
                continue
            read, written = (int(model.get(k) or 0) for k in ("cacheReadInputTokens", "cacheCreationInputTokens"))
            used = Usage(
                input_tokens=int(model.get("inputTokens") or 0) + read + written,
                output_tokens=int(model.get("outputTokens") or 0),
                cached_input_tokens=read,
                cache_write_tokens=written,
            )
            usage += used
            if model.get("costBasis") != "unknown":
                cost += float(model.get("costUSD") or 0.0)
                continue
            own = (config.price_input_per_mtok, config.price_output_per_mtok) if config else (None, None)
            prices, priced = target_prices(str(name), *own)
            cost += usage_cost(used, prices, cache_prices(str(name), prices[0], own_input_price=True, anthropic=True))
            known = known and priced
        return usage, cost, known
    usage = anthropic_usage(result.get("usage"))
    if isinstance(since, dict):  # `{}`: the run counted no model call (its total is earlier turns')
        return usage, 0.0, True
    total = result.get("total_cost_usd", result.get("cost_usd"))
    return usage, float(total or 0.0), isinstance(total, int | float)


def result_error(result: dict[str, Any]) -> str:
    """A failed `result` event in words: `Claude Code failed (API status 401): Invalid API key`."""
    status = result.get("api_error_status")
    subtype = str(result.get("subtype") or "error")
    what = f"API status {status}" if status else ("error" if subtype == "success" else subtype)
    text = result.get("result")
    errors = result.get("errors")
    detail = str(text) if isinstance(text, str) and text.strip() else "; ".join(str(e) for e in errors or [])
    return f"Claude Code failed ({what})" + (f": {shorten(detail.strip(), 500)}" if detail.strip() else "")


def _read_message(
    event: dict[str, Any], at: float, calls: dict[str, ToolCall], started: dict[str, float], texts: list[str]
) -> None:
    """Text and tool calls of an `assistant` message; tool results of a `user` message. A
    message of model `<synthetic>` is Claude Code's own (an API error in words, which the
    turn's error says): its text is not the model's."""
    message = event.get("message") or {}
    content = message.get("content") or []
    said = event.get("type") == "assistant" and message.get("model") != "<synthetic>"
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text" and block.get("text") and said:
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            call_id = str(block.get("id") or len(calls))
            calls[call_id] = ToolCall(name=str(block.get("name", "")), arguments=block.get("input") or {}, id=call_id)
            started[call_id] = at
        elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
            call_id = str(block["tool_use_id"])
            output = _result_text(block.get("content"))
            calls[call_id].output = output
            calls[call_id].duration_ms = round((at - started[call_id]) * 1000, 1)
            if block.get("is_error"):
                calls[call_id].error = shorten(output, 500) or "tool error"


def _event(text: str) -> dict[str, Any] | None:
    if not text.strip().startswith("{"):
        return None
    try:
        event = json.loads(text)
    except json.JSONDecodeError:
        return None
    return event if isinstance(event, dict) else None


def _result_text(content: Any) -> str:
    """A tool_result's content: a string, or a list of `{type: text, text}` blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return "" if content is None else json.dumps(content, default=str)
