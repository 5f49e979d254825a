"""Langfuse exports as recorded conversations.

Read: a trace downloaded from the UI (`trace-<id>.json`: the trace with its `observations`
and `scores`), a session download (`session-<id>.json`: `{id, traces: [...]}`), a table
export of traces (a JSON list or JSON Lines), or an observations listing (`{data: [...]}`).

Traces with the same `sessionId` form one conversation (a trace alone is its own), in time
order. A trace's turn is its last `GENERATION` whose `input` is chat messages, followed by
that generation's output; without one, the trace's own `input` (user) and `output`
(assistant). Tool observations (`TOOL`, or spans with a tool name in their metadata) become
the reply's tool calls. Langfuse scores are kept as metadata.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ._chat_logs import ROLES, arguments_of, has_dialogue, merge_calls, slug, text_of, unique


def _load(path: Path) -> Any:
    text = path.read_text(encoding="utf-8")
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: not JSON ({exc.msg})") from None
    return rows


def _is_trace(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and "id" in value
        and "messages" not in value
        and any(k in value for k in ("observations", "sessionId", "htmlPath"))
    )


def is_langfuse_export(path: Path, head: str) -> bool:
    """A Langfuse trace, session, trace list or observations listing: by the keys of the first
    record when the first line is one (JSON Lines), else by Langfuse's field names."""
    try:
        first = json.loads(head.splitlines()[0]) if head.strip() else None
    except (ValueError, IndexError):
        first = None
    if isinstance(first, dict):
        data = first.get("data")
        listing: list[Any] = data if isinstance(data, list) else [first]
        observation = bool(listing) and isinstance(listing[0], dict) and {"traceId", "type"} <= listing[0].keys()
        return _is_trace(first) or isinstance(first.get("traces"), list) or observation
    markers = ('"observations"', '"sessionId"', '"traceId"', '"htmlPath"', '"projectId"')
    return head.lstrip()[:1] in "{[" and any(m in head for m in markers) and '"resourceSpans"' not in head


def _traces(data: Any, path: Path) -> list[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("traces"), list):  # a session
        return [dict(t, sessionId=t.get("sessionId") or data.get("id")) for t in data["traces"]]
    if isinstance(data, dict) and isinstance(data.get("data"), list):  # an API listing
        data = data["data"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise DatasetError(f"{path}:1: not a Langfuse export (a trace, a session, or a list of traces)")
    if data and all(isinstance(o, dict) and "traceId" in o and "type" in o for o in data):  # observations
        by_trace: dict[str, dict[str, Any]] = {}
        for o in data:
            trace = by_trace.setdefault(o["traceId"], {"id": o["traceId"], "observations": []})
            trace["observations"].append(o)
            trace.setdefault("timestamp", o.get("startTime"))
        return list(by_trace.values())
    return [t for t in data if _is_trace(t) or (isinstance(t, dict) and "input" in t and "id" in t)]


def read_langfuse(path: Path) -> list[dict[str, Any]]:
    """One `transcript:` test per Langfuse session (or trace without a session)."""
    traces = _traces(_load(path), path)
    sessions: dict[str, list[dict[str, Any]]] = {}
    for trace in traces:
        sessions.setdefault(str(trace.get("sessionId") or trace["id"]), []).append(trace)
    tests: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name, group in sessions.items():
        group.sort(key=lambda t: str(t.get("timestamp") or ""))
        transcript = merge_calls([_turn(t) for t in group])
        if not has_dialogue(transcript):
            continue
        test: dict[str, Any] = {"id": unique(slug(name), seen), "transcript": transcript}
        metadata = _metadata(group)
        if metadata:
            test["metadata"] = metadata
        tests.append(test)
    if not tests:
        raise DatasetError(f"{path}:1: no Langfuse trace holds a user message and a reply")
    return tests


def _chat(raw: Any) -> list[dict[str, Any]] | None:
    """Chat messages from a generation's input (a list, or `{messages: [...]}`)."""
    if isinstance(raw, dict) and isinstance(raw.get("messages"), list):
        raw = raw["messages"]
    if isinstance(raw, list) and raw and all(isinstance(m, dict) and m.get("role") in ROLES for m in raw):
        return [_message(m) for m in raw]
    return None


def _message(raw: dict[str, Any]) -> dict[str, Any]:
    message: dict[str, Any] = {"role": raw["role"], "content": text_of(raw.get("content"))}
    calls = []
    for call in raw.get("tool_calls") or []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            calls.append(
                {
                    "name": str(function.get("name")),
                    "arguments": arguments_of(function.get("arguments")),
                    "id": call.get("id"),
                }
            )
    if calls:
        message["tool_calls"] = calls
    if raw.get("tool_call_id"):
        message["tool_call_id"] = raw["tool_call_id"]
    return message


def _reply(output: Any) -> dict[str, Any]:
    if isinstance(output, dict) and output.get("role") == "assistant":
        return _message(output)
    if isinstance(output, dict) and isinstance(output.get("choices"), list) and output["choices"]:
        return _reply(output["choices"][0].get("message"))
    return {"role": "assistant", "content": text_of(output)}


def _turn(trace: dict[str, Any]) -> list[dict[str, Any]]:
    observations = sorted(trace.get("observations") or [], key=lambda o: str(o.get("startTime") or ""))
    generations = [o for o in observations if o.get("type") == "GENERATION" and _chat(o.get("input"))]
    if generations:
        last = generations[-1]
        messages = [*(_chat(last.get("input")) or []), _reply(last.get("output"))]
    else:
        messages = [{"role": "user", "content": text_of(trace.get("input"))}, _reply(trace.get("output"))]
    tools = [o for o in observations if o.get("type") == "TOOL" or (o.get("metadata") or {}).get("tool_name")]
    known = {c["name"] for m in messages for c in m.get("tool_calls", [])}  # logged by the model call already
    tools = [o for o in tools if str(o.get("name") or "tool") not in known]
    if tools and messages[-1]["role"] == "assistant":
        messages[-1].setdefault("tool_calls", []).extend(
            {"name": str(o.get("name") or "tool"), "arguments": arguments_of(o.get("input")), "output": o.get("output")}
            for o in tools
        )
    return messages


def _metadata(traces: list[dict[str, Any]]) -> dict[str, Any]:
    metadata: dict[str, Any] = {"langfuse_traces": [t["id"] for t in traces]}
    scores = [s for t in traces for s in t.get("scores") or [] if isinstance(s, dict)]
    if scores:
        metadata["langfuse_scores"] = [
            {k: s[k] for k in ("name", "value", "stringValue", "comment") if s.get(k) is not None} for s in scores
        ]
    user = next((t.get("userId") for t in traces if t.get("userId")), None)
    if user:
        metadata["user_id"] = user
    return metadata
