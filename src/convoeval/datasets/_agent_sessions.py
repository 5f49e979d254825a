"""Coding-agent sessions as recorded conversations: Claude Code session files and Codex
rollout files (one, or all those in a folder), each read as one `transcript:` test with its
tool calls and their results.

- Claude Code writes `~/.claude/projects/<project>/<session id>.jsonl`: one record a line;
  `user` and `assistant` records carry an Anthropic `message` (text, `tool_use` blocks;
  `tool_result` blocks in the next `user` record); other records (`queue-operation`,
  `attachment`, `system`, `ai-title`, `last-prompt`, ...) and side chains (`isSidechain`,
  sub-agents) and meta messages (`isMeta`) are not the conversation and are skipped. A tool
  result the user or a permission rule refused (Claude Code 2.1.332 marks it with
  `toolDenialKind` / `permissionDecision`; older versions do not say) is `status: denied`.
- Codex writes `~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<thread id>.jsonl` (read by
  `convoeval.targets.agents.read_turns`): turns of user and agent messages, commands
  (blocked ones marked `status: blocked`) and function calls with their outputs.

Tool calls become convoeval tool messages (`role: tool` with `tool_calls: [{name, arguments,
output, error, status}]`), so tool checks grade them as they would a live run.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import JsonValue

from .._text import shorten
from ..errors import DatasetError
from ..results import ToolCall
from ..targets.agents import read_turns
from ._common import JsonObject, as_object, decode_json, objects
from ._suite_types import Message, Suite, SuiteTest

#: A session: its test id, its messages, and metadata (`agent`, `session_id`).
Session = tuple[str, list[Message], JsonObject]


def agent_sessions_suite(source: Path) -> Suite | None:
    """The suite of one session file, or of every session file in a folder (a Claude Code
    project folder, `~/.codex/sessions`, ...); None when `source` is another kind of file.

    Raises:
        DatasetError: a session file with a broken line, a lone session without a user message
            and an agent reply, or a folder without session files.
    """
    if source.is_dir():
        found = [(path, agent_session(path)) for path in sorted(source.rglob("*.jsonl"))]
        sessions = [(path, session) for path, session in found if session is not None]
        tests = [_test(*session) for _, session in sessions if _gradable(session[1])]
        if not tests:
            raise DatasetError(f"{source}:1: no Claude Code session or Codex rollout file with a reply in this folder")
        left = len(sessions) - len(tests)
        note = f" ({left} without a user message and an agent reply left out)" if left else ""
        return {"name": source.name, "description": f"The agent sessions in {source}{note}", "tests": tests}
    session = agent_session(source) if source.is_file() else None
    if session is None:
        return None
    if not _gradable(session[1]):
        raise DatasetError(f"{source}:1: the session has no user message with an agent reply")
    return {"name": source.stem, "description": f"The agent session {source.name}", "tests": [_test(*session)]}


def _gradable(messages: list[Message]) -> bool:
    return {"user", "assistant"} <= {str(m["role"]) for m in messages}


def _test(test_id: str, messages: list[Message], metadata: JsonObject) -> SuiteTest:
    return {"id": test_id, "transcript": messages, "metadata": metadata}


def agent_session(source: Path) -> Session | None:
    """`(test id, messages, metadata)` of a Claude Code session or Codex rollout file; None
    when `source` is neither."""
    first = _first_record(source)
    if first is None:
        return None
    if first.get("type") == "session_meta" or (isinstance(first.get("payload"), dict) and "timestamp" in first):
        return _codex(source)
    if "sessionId" in first or first.get("type") in ("summary", "queue-operation", "ai-title"):
        return _claude(source)
    return None


def _first_record(source: Path) -> JsonObject | None:
    try:
        with source.open(encoding="utf-8", errors="replace") as lines:
            for text in lines:
                if text.strip():
                    record: JsonValue = decode_json(text)
                    return as_object(record)
    except (OSError, json.JSONDecodeError):
        return None
    return None


def _records(source: Path, kind: str) -> list[JsonObject]:
    """The JSON objects of a session file, one a line (a line that is not one is an error)."""
    records: list[JsonObject] = []
    with source.open(encoding="utf-8", errors="replace") as lines:
        for number, text in enumerate(lines, start=1):
            if not text.strip():
                continue
            try:
                record: JsonValue = decode_json(text)
            except json.JSONDecodeError:
                record = None
            if not isinstance(record, dict):
                raise DatasetError(f"{source}:{number}: not a JSON object (a {kind} file has one a line)")
            records.append(record)
    return records


def _claude(source: Path) -> Session:
    """A Claude Code session file as messages."""
    messages: list[Message] = []
    calls: dict[str, ToolCall] = {}
    session = source.stem
    for record in _records(source, "Claude Code session"):
        if record.get("isSidechain") or record.get("isMeta"):
            continue
        session = str(record.get("sessionId") or session)
        message = as_object(record.get("message"))
        if record.get("type") in ("user", "assistant") and message is not None:
            denied = bool(record.get("toolDenialKind")) or _decision(record) == "reject"
            _claude_message(message, messages, calls, is_error=bool(record.get("isApiErrorMessage")), denied=denied)
    return f"claude-code-{session}", messages, {"agent": "claude-code", "session_id": session}


def _decision(record: JsonObject) -> JsonValue:
    """The permission decision on a tool result record (Claude Code 2.1.332 writes one)."""
    decision = as_object(record.get("permissionDecision"))
    return decision.get("decision") if decision is not None else None


def _claude_message(
    message: JsonObject, messages: list[Message], calls: dict[str, ToolCall], is_error: bool, denied: bool = False
) -> None:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else objects(content)
    role = message.get("role")
    texts = [str(b.get("text", "")) for b in blocks if b.get("type") == "text"]
    if role == "user" and texts:
        messages.append({"role": "user", "content": "\n".join(texts)})
    elif role == "assistant" and texts and not is_error:
        messages.append({"role": "assistant", "content": "\n".join(texts)})
    for block in blocks:
        if block.get("type") == "tool_use":
            call_id = str(block.get("id"))
            arguments = as_object(block.get("input")) or {}
            calls[call_id] = ToolCall(name=str(block.get("name", "tool")), arguments=arguments, id=call_id)
        elif block.get("type") == "tool_result" and str(block.get("tool_use_id")) in calls:
            call = calls[str(block["tool_use_id"])]
            output = block.get("content")
            if isinstance(output, list):
                output = "\n".join(str(b.get("text", "")) for b in objects(output))
            call.output = output
            if block.get("is_error"):
                call.error = shorten(str(output or "tool error"), 500)
                call.status = "denied" if denied else None
            messages.append(_tool_message(call))


def _codex(source: Path) -> Session:
    """A Codex rollout file as messages."""
    records = [r for r in _records(source, "Codex rollout") if isinstance(r.get("payload"), dict)]
    meta = next((as_object(r["payload"]) for r in records if r.get("type") == "session_meta"), None) or {}
    thread = str(meta.get("id") or source.stem.rsplit("-", 5)[-1])
    messages: list[Message] = []
    for turn in read_turns(records):
        messages += [{"role": "user", "content": text} for text in turn.user]
        messages += [_tool_message(call) for call in turn.calls]
        if turn.texts:
            messages.append({"role": "assistant", "content": "\n\n".join(turn.texts)})
    return f"codex-{thread}", messages, {"agent": "codex", "session_id": thread}


def _tool_message(call: ToolCall) -> Message:
    output = call.output if isinstance(call.output, str) else json.dumps(call.output, default=str)
    calls: list[JsonValue] = [call.model_dump(mode="json", exclude_none=True)]
    return {"role": "tool", "content": output or "", "tool_calls": calls}
