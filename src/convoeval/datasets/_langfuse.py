"""Langfuse exports as recorded conversations.

Read: a trace downloaded from the UI (`trace-<id>.json`: the trace with its `observations`
and `scores`), a session download (`session-<id>.json`: `{id, traces: [...]}`), a table
export of traces (a JSON list or JSON Lines), or an observations listing (`{data: [...]}`).

Traces with the same `sessionId` form one conversation (a trace alone is its own), in time
order. A trace's turn is its last `GENERATION` whose `input` is chat messages, followed by
that generation's output; without one, the trace's own `input` (user) and `output`
(assistant). Tool observations (`TOOL`, or spans with a tool name in their metadata) become
the reply's tool calls. Langfuse scores are kept as metadata, and so are the observations
that failed (`level: ERROR`, with their `statusMessage`: a model call before its retry).
An observations listing (Langfuse 5's `GET /api/public/v2/observations`, whose observations
carry their trace's `sessionId` and `userId`) is grouped by trace, then by session.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import JsonValue

from ..errors import DatasetError
from ._chat_logs import (
    ROLES,
    LoggedMessage,
    LoggedTest,
    arguments_of,
    has_dialogue,
    merge_calls,
    slug,
    text_of,
    tool_call_of,
    unique,
)
from ._common import JsonObject, as_list, as_object, decode_json, object_list, objects, read_text

#: A trace as Langfuse exports it: `id`, `sessionId`, `timestamp`, `input`, `output`,
#: `userId`, `scores` and `observations` (`type` GENERATION/TOOL/SPAN, `name`, `startTime`,
#: `input`, `output`, `metadata`), each a JSON object.
Trace = JsonObject


def _load(path: Path) -> tuple[JsonValue, list[int] | None]:
    """The file's JSON, or the list of its lines' (JSON Lines) with the line of each."""
    text = read_text(path)
    try:
        return decode_json(text), None
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":  # the first value is broken (or too deep): said where; else JSON Lines
            raise DatasetError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    rows: list[JsonValue] = []
    lines: list[int] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            try:
                rows.append(decode_json(line))
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: not JSON ({exc.msg})") from None
            lines.append(number)
    return rows, lines


def _is_trace(value: JsonValue) -> bool:
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
        first = decode_json(head.splitlines()[0]) if head.strip() else None
    except (ValueError, IndexError):
        first = None
    if isinstance(first, dict):
        data = first.get("data")
        listing: list[JsonValue] = data if isinstance(data, list) else [first]
        observation = bool(listing) and isinstance(listing[0], dict) and {"traceId", "type"} <= listing[0].keys()
        return _is_trace(first) or isinstance(first.get("traces"), list) or observation
    markers = ('"observations"', '"sessionId"', '"traceId"', '"htmlPath"', '"projectId"')
    return head.lstrip()[:1] in "{[" and any(m in head for m in markers) and '"resourceSpans"' not in head


def _traces(data: JsonValue, path: Path, lines: list[int] | None = None) -> list[Trace]:
    """The traces of an export (a trace, a session, a list or JSON Lines of traces, observations);
    an entry that is no trace is an error (`lines`: the line of each entry of JSON Lines)."""
    if isinstance(data, dict) and isinstance(data.get("traces"), list):  # a session
        session = data.get("id")
        return [{**t, "sessionId": t.get("sessionId") or session} for t in _trace_list(data["traces"], path)]
    if isinstance(data, dict) and isinstance(data.get("data"), list):  # an API listing
        data = data["data"]
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise DatasetError(f"{path}:1: not a Langfuse export (a trace, a session, or a list of traces)")
    listing = objects(data)
    if data and len(listing) == len(data) and all("traceId" in o and "type" in o for o in listing):  # observations
        by_trace: dict[str, tuple[Trace, list[JsonValue]]] = {}
        for o in listing:
            trace, observations = by_trace.setdefault(str(o["traceId"]), ({"id": o["traceId"]}, []))
            observations.append(o)
            trace.setdefault("timestamp", o.get("startTime"))
            for key in ("sessionId", "userId"):  # v2 observations carry their trace's
                if o.get(key) and not trace.get(key):
                    trace[key] = o[key]
        return [{**trace, "observations": observations} for trace, observations in by_trace.values()]
    for n, item in enumerate(data):
        if not isinstance(item, dict) or not (_is_trace(item) or ("input" in item and "id" in item)):
            where = f"{path}:{lines[n]}" if lines else f"{path}:1: [{n}]"
            raise DatasetError(f"{where}: not a Langfuse trace (a JSON object with an id), got {item!r:.60}")
    return listing


def _trace_list(traces: JsonValue, path: Path) -> list[Trace]:
    listing = objects(traces)
    if not isinstance(traces, list) or len(listing) != len(traces):
        raise DatasetError(f"{path}:1: traces: expected a list of Langfuse traces (JSON objects)")
    for n, trace in enumerate(listing):
        if "id" not in trace:
            raise DatasetError(f"{path}:1: traces[{n}]: a Langfuse trace has an id")
    return listing


def read_langfuse(path: Path) -> list[LoggedTest]:
    """One `transcript:` test per Langfuse session (or trace without a session)."""
    data, lines = _load(path)
    traces = _traces(data, path, lines)
    sessions: dict[str, list[Trace]] = {}
    for trace in traces:
        sessions.setdefault(str(trace.get("sessionId") or trace["id"]), []).append(trace)
    tests: list[LoggedTest] = []
    seen: set[str] = set()
    for name, group in sessions.items():
        group.sort(key=lambda t: str(t.get("timestamp") or ""))
        transcript = merge_calls([_turn(t, f"{path}:1: trace {t.get('id')}") for t in group])
        if not has_dialogue(transcript):
            continue
        test: LoggedTest = {"id": unique(slug(name), seen), "transcript": transcript}
        metadata = _metadata(group)
        if metadata:
            test["metadata"] = metadata
        tests.append(test)
    if not tests:
        raise DatasetError(f"{path}:1: no Langfuse trace holds a user message and a reply")
    return tests


def _chat(raw: JsonValue) -> list[LoggedMessage] | None:
    """Chat messages from a generation's input (a list, or `{messages: [...]}`)."""
    if isinstance(raw, dict) and isinstance(raw.get("messages"), list):
        raw = raw["messages"]
    messages = objects(raw)
    if isinstance(raw, list) and raw and len(messages) == len(raw):
        chat = [_message(m) for m in messages]
        if all(m is not None for m in chat):
            return [m for m in chat if m is not None]
    return None


def _message(raw: JsonObject) -> LoggedMessage | None:
    """A chat message (None when it has no role of a chat message)."""
    role = raw.get("role")
    if not isinstance(role, str) or role not in ROLES:
        return None
    message: LoggedMessage = {"role": role, "content": text_of(raw.get("content"))}
    calls = [tool_call_of(call) for call in objects(raw.get("tool_calls"))]
    if calls:
        message["tool_calls"] = calls
    if raw.get("tool_call_id"):
        message["tool_call_id"] = raw["tool_call_id"]
    return message


def _reply(output: JsonValue, where: str) -> LoggedMessage:
    message = _message(output) if isinstance(output, dict) and output.get("role") == "assistant" else None
    if message is not None:
        return message
    choices = as_list(output.get("choices")) if isinstance(output, dict) else []
    if choices:
        choice = as_object(choices[0])
        if choice is None:
            raise DatasetError(f"{where}: output: choices[0]: expected an object with the reply's `message`")
        return _reply(choice.get("message"), where)
    return {"role": "assistant", "content": text_of(output)}


def _turn(trace: Trace, where: str) -> list[LoggedMessage]:
    listed = object_list(trace.get("observations"), f"{where}: observations")
    observations = sorted(listed, key=lambda o: str(o.get("startTime") or ""))
    generations = [o for o in observations if o.get("type") == "GENERATION" and _chat(o.get("input"))]
    if generations:
        last = generations[-1]
        messages = [*(_chat(last.get("input")) or []), _reply(last.get("output"), where)]
    else:
        messages = [{"role": "user", "content": text_of(trace.get("input"))}, _reply(trace.get("output"), where)]
    tools = [
        o for o in observations if o.get("type") == "TOOL" or (as_object(o.get("metadata")) or {}).get("tool_name")
    ]
    known = {c["name"] for m in messages for c in m.get("tool_calls", [])}  # logged by the model call already
    tools = [o for o in tools if str(o.get("name") or "tool") not in known]
    if tools and messages[-1]["role"] == "assistant":
        messages[-1].setdefault("tool_calls", []).extend(
            {"name": str(o.get("name") or "tool"), "arguments": arguments_of(o.get("input")), "output": o.get("output")}
            for o in tools
        )
    return messages


def _metadata(traces: list[Trace]) -> JsonObject:
    metadata: JsonObject = {"langfuse_traces": [t["id"] for t in traces]}
    scores = [s for t in traces for s in objects(t.get("scores"))]
    if scores:
        metadata["langfuse_scores"] = [
            {k: s[k] for k in ("name", "value", "stringValue", "comment") if s.get(k) is not None} for s in scores
        ]
    user = next((t.get("userId") for t in traces if t.get("userId")), None)
    if user:
        metadata["user_id"] = user
    failed = [o for t in traces for o in objects(t.get("observations")) if o.get("level") == "ERROR"]
    if failed:
        metadata["errors"] = [f"{o.get('name') or o.get('type')}: {o.get('statusMessage') or 'error'}" for o in failed]
    return metadata
