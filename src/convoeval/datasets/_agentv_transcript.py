"""AgentV transcript JSONL (`agentv.transcript.v1`) as recorded conversations.

One row per message: `test_id`, `target`, `message_index`, `role`, `content` (text or
blocks), `tool_calls` ([{tool, input, output, id, status}]), `source` ({provider,
session_id, model, ...}), and optional usage, timing and cost. Rows with the same `test_id`
and `target` form one conversation, ordered by `message_index`; each becomes a
`transcript:` test named `<test_id>@<target>`, with `source` kept as metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ._chat_logs import ROLES, arguments_of, has_dialogue, slug, text_of, unique
from ._common import read_jsonl


def is_agentv_transcript(path: Path, head: str) -> bool:
    """The first line is an AgentV transcript row."""
    try:
        first = json.loads(head.splitlines()[0]) if head.strip() else None
    except (ValueError, IndexError):
        return False
    return isinstance(first, dict) and {"test_id", "target", "message_index", "role"} <= first.keys()


def read_agentv_transcript(path: Path) -> list[dict[str, Any]]:
    """One `transcript:` test per (test_id, target)."""
    groups: dict[tuple[str, str], list[tuple[int, int, dict[str, Any]]]] = {}
    for line, row in read_jsonl(path):
        missing = [k for k in ("test_id", "target", "message_index", "role") if k not in row]
        if missing:
            raise DatasetError(f"{path}:{line}: {missing[0]}: missing (an AgentV transcript row needs it)")
        if row["role"] not in ROLES:
            raise DatasetError(f"{path}:{line}: role: {row['role']!r} is not system, user, assistant or tool")
        if not isinstance(row["message_index"], int):
            raise DatasetError(f"{path}:{line}: message_index: expected a whole number")
        groups.setdefault((str(row["test_id"]), str(row["target"])), []).append((row["message_index"], line, row))
    tests: list[dict[str, Any]] = []
    seen: set[str] = set()
    for (test_id, target), rows in groups.items():
        rows.sort(key=lambda r: (r[0], r[1]))
        transcript = [_message(row) for _, _, row in rows]
        if not has_dialogue(transcript):
            raise DatasetError(f"{path}:{rows[0][1]}: {test_id}: a conversation needs a user and an assistant message")
        test: dict[str, Any] = {"id": unique(slug(f"{test_id}@{target}"), seen), "transcript": transcript}
        source = rows[0][2].get("source")
        if isinstance(source, dict) and source:
            test["metadata"] = {"source": source}
        tests.append(test)
    if not tests:
        raise DatasetError(f"{path}:1: no transcript rows in the file")
    return tests


def _message(row: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": row["role"], "content": text_of(row.get("content"))}
    calls = []
    for call in row.get("tool_calls") or []:
        if isinstance(call, dict) and call.get("tool"):
            entry: dict[str, Any] = {"name": str(call["tool"]), "arguments": arguments_of(call.get("input"))}
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
