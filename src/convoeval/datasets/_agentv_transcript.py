"""AgentV transcript JSONL (`agentv.transcript.v1`) as recorded conversations.

One row per message: `test_id`, `target`, `message_index`, `role`, `content` (text or
blocks), `tool_calls` ([{tool, input, output, id, status}]), `source` ({provider,
session_id, model, ...}), and optional usage, timing and cost. Rows with the same `test_id`
and `target` form one conversation, ordered by `message_index`; each becomes a
`transcript:` test named `<test_id>@<target>`, with `source` kept as metadata.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import DatasetError
from ._chat_logs import ROLES, LoggedMessage, LoggedTest, arguments_of, has_dialogue, slug, text_of, unique
from ._common import JsonObject, decode_json, objects, read_jsonl
from ._suite_types import RecordedCall


def is_agentv_transcript(path: Path, head: str) -> bool:
    """The first line is an AgentV transcript row."""
    try:
        first = decode_json(head.splitlines()[0]) if head.strip() else None
    except (ValueError, IndexError):
        return False
    return isinstance(first, dict) and {"test_id", "target", "message_index", "role"} <= first.keys()


def read_agentv_transcript(path: Path) -> list[LoggedTest]:
    """One `transcript:` test per (test_id, target)."""
    groups: dict[tuple[str, str], list[tuple[int, int, str, JsonObject]]] = {}
    for line, row in read_jsonl(path):
        missing = [k for k in ("test_id", "target", "message_index", "role") if k not in row]
        if missing:
            raise DatasetError(f"{path}:{line}: {missing[0]}: missing (an AgentV transcript row needs it)")
        role, index = row["role"], row["message_index"]
        if not isinstance(role, str) or role not in ROLES:
            raise DatasetError(f"{path}:{line}: role: {role!r} is not system, user, assistant or tool")
        if not isinstance(index, int):
            raise DatasetError(f"{path}:{line}: message_index: expected a whole number")
        groups.setdefault((str(row["test_id"]), str(row["target"])), []).append((index, line, role, row))
    tests: list[LoggedTest] = []
    seen: set[str] = set()
    for (test_id, target), rows in groups.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        transcript = [_message(role, row) for _, _, role, row in rows]
        if not has_dialogue(transcript):
            raise DatasetError(f"{path}:{rows[0][1]}: {test_id}: a conversation needs a user and an assistant message")
        test: LoggedTest = {"id": unique(slug(f"{test_id}@{target}"), seen), "transcript": transcript}
        source = rows[0][3].get("source")
        if isinstance(source, dict) and source:
            test["metadata"] = {"source": source}
        tests.append(test)
    if not tests:
        raise DatasetError(f"{path}:1: no transcript rows in the file")
    return tests


def _message(role: str, row: JsonObject) -> LoggedMessage:
    message: LoggedMessage = {"role": role, "content": text_of(row.get("content"))}
    calls = []
    for call in objects(row.get("tool_calls")):
        if call.get("tool"):
            entry: RecordedCall = {"name": str(call["tool"]), "arguments": arguments_of(call.get("input"))}
            if call.get("id"):
                entry["id"] = str(call["id"])
            if "output" in call:
                entry["output"] = call["output"]
            if call.get("duration_ms") is not None:
                entry["duration_ms"] = call["duration_ms"]
            calls.append(entry)
    if calls:
        message["tool_calls"] = calls
    if row.get("name"):
        message["name"] = str(row["name"])
    return message
