"""Codex's rollout files: the record of a thread Codex writes as it works.

`$CODEX_HOME/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl` (`CODEX_HOME` defaults to
`~/.codex`), one JSON object a line: `{timestamp, type, payload}` with `type` one of
`session_meta`, `turn_context`, `response_item` (what the model saw and said: `message`,
`function_call` / `function_call_output`, `custom_tool_call` / `custom_tool_call_output`,
`reasoning`), `event_msg` (`task_started` / `task_complete` around each turn, `item_completed`
with `UserMessage`, `AgentMessage`, `CommandExecution`, `FileChange` items, `token_count`) and
`token_usage_record` (`turn_token_usage`: the turn's tokens so far). A command Codex's
sandbox refused has its `function_call` and output, and most often no `CommandExecution` item
(the `exec --json` stream leaves it out too); it is read here as a call with `status: blocked`,
as is one whose record shows that Codex judges it denied (a record it writes for some denied
commands: when is a race). So has a command still running when the rollout was written (a server the agent started), but
its output says so (`Process running with session ID N`): it is a call that ran.
"""

from __future__ import annotations

import json
import os
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..._jsonl import bounded_lines
from ...results import ToolCall, Usage
from ._boxed import MAX_SESSION_BYTES, MAX_SESSION_LINE

#: Function calls that run a shell command.
EXEC_TOOLS = ("exec_command", "shell", "container.exec", "local_shell")
#: Words of a failed command's output that Codex takes for its sandbox's denial (`SANDBOX_DENIED_KEYWORDS`).
DENIED_WORDS = (
    "operation not permitted",
    "permission denied",
    "read-only file system",
    "seccomp",
    "sandbox",
    "landlock",
    "failed to write file",
)
#: What the output of a command still running says (`exec_command` returns after `yield_time_ms`).
RUNNING = re.compile(r"^Process running with session ID \d+", re.MULTILINE)
#: The output Codex gives a call of a tool it does not have (`unsupported_tool_call_message`).
UNSUPPORTED = re.compile(r"^unsupported (custom tool )?call: ")


@dataclass
class RolloutTurn:
    """One turn of a rollout: the user's text, the agent's messages, its tool calls, its tokens."""

    user: list[str] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    usage: Usage | None = None

    @property
    def commands(self) -> list[ToolCall]:
        return [c for c in self.calls if c.name == "command_execution"]


def find_rollout(env: dict[str, str], thread_id: str | None) -> Path | None:
    """The rollout file of a thread under the CLI's `CODEX_HOME` (or `HOME/.codex`)."""
    home = env.get("CODEX_HOME") or (str(Path(env["HOME"]) / ".codex") if env.get("HOME") else None)
    if not home or not thread_id:
        return None
    found = sorted((Path(home) / "sessions").glob(f"*/*/*/rollout-*{thread_id}.jsonl"))
    found = [p for p in found if p.is_file() and not p.is_symlink()]  # no link, pipe or device the CLI left
    return found[-1] if found else None


def read_records(path: Path) -> list[dict[str, Any]]:
    """The JSON records of a rollout file (lines that are not JSON objects are skipped). The
    file lies in the CLI's HOME, which the agent's commands may write: it is read as
    `keep_sessions` copies it (`MAX_SESSION_LINE` a line), and one longer than
    `MAX_SESSION_BYTES` has no records read (its last turn would be past them)."""
    records = []
    with path.open("rb") as lines:
        if os.fstat(lines.fileno()).st_size > MAX_SESSION_BYTES:
            return []
        for line in filter(None, bounded_lines(lines, MAX_SESSION_LINE, MAX_SESSION_BYTES)):
            try:
                record = json.loads(line.decode("utf-8", "replace"))
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("payload"), dict):
                records.append(record)
    return records


def read_turns(records: list[dict[str, Any]]) -> list[RolloutTurn]:
    """The turns of a rollout, in order."""
    turns: list[RolloutTurn] = []
    calls: dict[str, ToolCall] = {}
    ran: set[str] = set()
    sandboxed = True  # `codex exec` runs commands in its read-only sandbox unless told otherwise
    for record in records:
        kind, payload = record.get("type"), record["payload"]
        sub = payload.get("type")
        if kind == "turn_context" and isinstance(payload.get("sandbox_policy"), dict):
            sandboxed = payload["sandbox_policy"].get("type") != "danger-full-access"
        if kind == "event_msg" and sub == "task_started" or (not turns and kind == "response_item"):
            _close(turns, calls, ran)
            turns.append(RolloutTurn())
            calls, ran = {}, set()
        if not turns:
            continue
        turn = turns[-1]
        if kind == "event_msg" and sub == "item_completed" and isinstance(payload.get("item"), dict):
            _item(turn, payload["item"], calls, ran, sandboxed)
        elif kind == "response_item":
            _response_item(payload, calls)
        elif kind == "token_usage_record" and isinstance(payload.get("turn_token_usage"), dict):
            turn.usage = codex_usage(payload["turn_token_usage"])
    _close(turns, calls, ran)
    return [t for t in turns if t.user or t.texts or t.calls]


def read_last_turn(path: Path) -> RolloutTurn | None:
    """The newest turn of a rollout file."""
    turns = read_turns(read_records(path))
    return turns[-1] if turns else None


def _item(turn: RolloutTurn, item: dict[str, Any], calls: dict[str, ToolCall], ran: set[str], sandboxed: bool) -> None:
    """An `item_completed` event: the user's and the agent's messages, commands that ran (one
    Codex judges its sandbox denied is blocked, whether or not it wrote this record of it)."""
    kind = item.get("type")
    content = item.get("content")
    texts = [str(c.get("text", "")) for c in content if isinstance(c, dict)] if isinstance(content, list) else []
    if kind == "UserMessage":
        turn.user.append("\n".join(texts))
    elif kind == "AgentMessage":
        turn.texts.append("\n".join(texts))
    elif kind == "FileChange":  # a patch, also one the model ran as a command (`apply_patch <<EOF`)
        call_id = str(item.get("id"))
        ran.add(call_id)
        raw = item.get("changes")
        changes: dict[str, Any] = raw if isinstance(raw, dict) else {}
        kinds = [{"path": path, "kind": c.get("type") if isinstance(c, dict) else None} for path, c in changes.items()]
        calls[call_id] = ToolCall(  # as `exec --json` shows it
            name="file_change",
            arguments={"changes": kinds},
            output=item.get("status"),
            id=call_id,
            error="patch failed" if item.get("status") == "failed" else None,
        )
    elif kind == "CommandExecution":
        call_id = str(item.get("id"))
        ran.add(call_id)
        command = item.get("command")
        code = item.get("exit_code")
        calls[call_id] = ToolCall(
            name="command_execution",
            arguments={"command": shlex.join(map(str, command)) if isinstance(command, list) else str(command or "")},
            output=item.get("aggregated_output"),
            id=call_id,
            duration_ms=_ms(item.get("duration")),
            error=None if code in (0, None) and item.get("status") != "failed" else f"exit code {code}",
        )
        if sandboxed and _denied(code, calls[call_id].output):
            _block(calls[call_id])


def _response_item(payload: dict[str, Any], calls: dict[str, ToolCall]) -> None:
    """A function call the model made, or its output."""
    kind = payload.get("type")
    call_id = str(payload.get("call_id"))
    if kind in ("function_call", "custom_tool_call"):
        raw = payload.get("arguments", payload.get("input"))
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else raw
        except json.JSONDecodeError:
            arguments = {"input": raw}
        calls.setdefault(
            call_id,
            ToolCall(name=str(payload.get("name", "tool")), arguments=arguments if isinstance(arguments, dict) else {}),
        )
        calls[call_id].id = call_id
    elif kind in ("function_call_output", "custom_tool_call_output") and call_id in calls:
        output = payload.get("output")  # what the model was shown: a command's output framed
        call = calls[call_id]
        if call.name not in ("command_execution", "file_change"):
            call.output = output if isinstance(output, str) else json.dumps(output)
        elif call.output is None:  # an empty output is one
            call.output = output


def _close(turns: list[RolloutTurn], calls: dict[str, ToolCall], ran: set[str]) -> None:
    """Finish a turn: shell calls that never ran as a command were blocked by the sandbox,
    unless their output says the command is still running (it started, and had not ended
    when the rollout was written); a call of a tool Codex does not have failed, saying so."""
    if not turns:
        return
    for call_id, call in calls.items():
        other = call.name not in (*EXEC_TOOLS, "command_execution", "file_change")
        if other and isinstance(call.output, str) and UNSUPPORTED.match(call.output):
            call.error = call.output
        if call.name in EXEC_TOOLS and call_id not in ran:
            command = call.arguments.get("cmd", call.arguments.get("command", ""))
            output = call.output if isinstance(call.output, str) else ""
            call.name = "command_execution"
            call.arguments = {"command": shlex.join(map(str, command)) if isinstance(command, list) else str(command)}
            if not RUNNING.search(output):
                _block(call)
        turns[-1].calls.append(call)


def _block(call: ToolCall) -> None:
    """Mark a command Codex's sandbox denied (its command as the model wrote it)."""
    output = call.output.strip() if isinstance(call.output, str) else ""
    call.status = "blocked"
    call.arguments = {"command": command_of(call)}
    call.error = "blocked by the Codex sandbox" + (f": {output[-300:]}" if output else "")


def command_of(call: ToolCall) -> str:
    """The command a call ran, without the shell Codex runs it in (`/bin/bash -lc '...'`): the
    event stream shows it wrapped, a rollout's call not yet ended as the model wrote it."""
    command = str(call.arguments.get("command", ""))
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    if len(words) == 3 and words[1] in ("-c", "-lc") and os.path.basename(words[0]) in ("bash", "sh", "zsh"):
        return words[2]
    return command


def _denied(code: Any, output: Any) -> bool:
    """Whether Codex takes a command that ended so for one its sandbox denied (its
    `is_likely_sandbox_denied`: a failure whose output names a denial, or a seccomp SIGSYS)."""
    if not isinstance(code, int) or code == 0:
        return False
    text = output.lower() if isinstance(output, str) else ""
    return any(word in text for word in DENIED_WORDS) or code == 128 + 31


def _ms(duration: Any) -> float | None:
    """A Rust `Duration` (`{secs, nanos}`) in milliseconds."""
    if not isinstance(duration, dict):
        return None
    return round(_whole(duration.get("secs")) * 1000 + _whole(duration.get("nanos")) / 1e6, 3)


def codex_usage(used: dict[str, Any]) -> Usage:
    """A `Usage` of Codex's token counts (its `TokenUsage`: `input_tokens` counts the cached and
    cache-written ones, `output_tokens` the reasoning ones)."""
    return Usage(
        input_tokens=_whole(used.get("input_tokens")),
        output_tokens=_whole(used.get("output_tokens")),
        cached_input_tokens=_whole(used.get("cached_input_tokens")),
        cache_write_tokens=_whole(used.get("cache_write_input_tokens")),
    )


def _whole(value: Any) -> int:
    """A count Codex wrote (0 when it is missing or not a whole number)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
