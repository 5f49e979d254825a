"""Recorded conversations as tests graded without calling a target (`transcript:` tests).

Input, one JSON object a line:
- OpenAI chat logs: `{"messages": [...], "id"?: ..., "metadata"?: {...}}` (tool calls in
  OpenAI's format, tool results as `tool` messages);
- convoeval results (`results.jsonl`): `{"test_id", "target", "output": [...]}`; each becomes
  one test named `<test_id>@<target>`, for re-judging a stored run with a new judge;
- other tools' logs, told apart by their content (`_log_formats`): Inspect eval logs (`.eval`,
  `.json`), AgentV transcript JSONL, Langfuse exports, OpenTelemetry GenAI spans.

`grading_suite` adds the graders (a YAML file with suite keys such as `turn_assertions`,
`assertions`, `policy`, `execution`), or by default one judge check per turn
(`conversation-cohesion`) and one for the conversation (`self-coherence`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from ..errors import DatasetError
from ._common import read_jsonl
from ._log_formats import log_reader

DEFAULT_GRADERS: dict[str, Any] = {
    "turn_assertions": [{"type": "conversation-cohesion"}],
    "assertions": [{"type": "self-coherence"}],
}
GRADER_KEYS = ("turn_assertions", "assertions", "policy", "execution", "metadata", "plugins")


def import_transcripts(source: Path, log_format: str | None = None) -> dict[str, Any]:
    """One `transcript:` test per recorded conversation of `source`."""
    reader = log_reader(source, log_format)
    if reader is not None:
        return _suite(
            source, [{**t, "transcript": [_message(m, source, 1) for m in t["transcript"]]} for t in reader(source)]
        )
    tests: list[dict[str, Any]] = []
    seen: set[str] = set()
    for line, record in read_jsonl(source):
        if isinstance(record.get("output"), list) and "test_id" in record:
            messages = record["output"]
            name = f"{record['test_id']}@{record.get('target', 'target')}"
        elif isinstance(record.get("messages"), list):
            messages = record["messages"]
            name = str(record.get("id") or f"conversation-{len(tests) + 1}")
        else:
            raise DatasetError(
                f"{source}:{line}: expected `messages` (OpenAI chat format) or a convoeval result (`test_id`, `output`)"
            )
        transcript = [_message(m, source, line) for m in messages]
        roles = {m["role"] for m in transcript}
        if not {"user", "assistant"} <= roles:
            raise DatasetError(f"{source}:{line}: a conversation needs a user and an assistant message")
        test_id, n = name, 2
        while test_id in seen:
            test_id, n = f"{name}-{n}", n + 1
        seen.add(test_id)
        test: dict[str, Any] = {"id": test_id, "transcript": transcript}
        if isinstance(record.get("metadata"), dict) and record["metadata"]:
            test["metadata"] = record["metadata"]
        tests.append(test)
    if not tests:
        raise DatasetError(f"{source}:1: no conversations in the file")
    return {
        "name": source.name.removesuffix(".jsonl"),
        "description": f"Recorded conversations from {source.name}, graded without calling a target",
        "tests": tests,
    }


def _suite(source: Path, tests: list[dict[str, Any]]) -> dict[str, Any]:
    name = source.name.rsplit(".", 1)[0]
    return {
        "name": name,
        "description": f"Recorded conversations from {source.name}, graded without calling a target",
        "tests": tests,
    }


def _message(raw: Any, source: Path, line: int) -> dict[str, Any]:
    if not isinstance(raw, dict) or raw.get("role") not in ("system", "user", "assistant", "tool"):
        raise DatasetError(f"{source}:{line}: every message needs a role (system, user, assistant or tool)")
    content = raw.get("content")
    if isinstance(content, list):  # content blocks: keep the text
        content = "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    message = {"role": raw["role"], "content": content}
    for key in ("tool_calls", "tool_call_id", "name", "source"):
        if raw.get(key):
            message[key] = raw[key]
    return message


def grading_suite(source: Path, graders: Path | None = None) -> dict[str, Any]:
    """The suite `convoeval grade` runs: the imported transcripts plus the graders."""
    suite = import_transcripts(source)
    extra = DEFAULT_GRADERS
    if graders is not None:
        if not graders.is_file():
            raise DatasetError(f"{graders}:1: no such file")
        try:
            extra = yaml.safe_load(graders.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            raise DatasetError(f"{graders}:{mark.line + 1 if mark else 1}: not YAML") from None
        if not isinstance(extra, dict):
            raise DatasetError(f"{graders}:1: expected a mapping with {', '.join(GRADER_KEYS)}")
        unknown = [k for k in extra if k not in GRADER_KEYS]
        if unknown:
            raise DatasetError(f"{graders}:1: {unknown[0]}: not a grader setting (use {', '.join(GRADER_KEYS)})")
    return {**{k: v for k, v in suite.items() if k != "tests"}, **extra, "tests": suite["tests"]}
