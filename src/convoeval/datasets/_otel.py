"""OpenTelemetry GenAI spans as recorded conversations.

Read: OTLP JSON (`{"resourceSpans": [...]}`, one document or one per line, as the
collector's file exporter writes it) and the Python SDK's `ConsoleSpanExporter` output
(`span.to_json()` objects, one after another). Spans follow the GenAI semantic conventions:
a model call (`gen_ai.operation.name` `chat` / `text_completion`, or any span with
`gen_ai.input.messages`) carries `gen_ai.input.messages`, `gen_ai.output.messages` and
`gen_ai.system_instructions` as JSON (messages of `parts`: `text`, `tool_call`,
`tool_call_response`); OpenLLMetry's indexed `gen_ai.prompt.N.*` / `gen_ai.completion.N.*`
are read too, and so are the same attributes on a span's events (such as
`gen_ai.client.inference.operation.details`). `execute_tool` spans (`gen_ai.tool.name`, `gen_ai.tool.call.arguments`,
`gen_ai.tool.call.result`) fill in tool calls' results. GenAI message events written as log
records (`gen_ai.user.message`, ..., `gen_ai.choice`; the console log exporter's records or
OTLP JSON `resourceLogs`) are read as one model call per span they belong to.

Calls with the same `gen_ai.conversation.id` (else the same trace: its id as hex, however the
export wrote it) form one conversation, in start-time order; the call's model and token usage
are kept as metadata, and so is every failed span of the conversation (status ERROR, or an
`error.type`: a model call that failed before its retry, a tool that raised) in `errors`; a
conversation whose agent run failed (an `invoke_agent` span with status ERROR) ends in that
error (the test's `error`), and one with no reply is left out and named in a warning.
Attribute values may be OTLP's `kvlistValue`s and arrays of them (structured messages).
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import warnings
from pathlib import Path
from typing import TypedDict

from pydantic import JsonValue

from .._jsonl import as_int, raw_decode
from ..errors import DatasetError
from ._chat_logs import (
    ROLES,
    LoggedMessage,
    LoggedTest,
    has_dialogue,
    merge_calls,
    slug,
    tool_call_of,
    unique,
)
from ._common import DatasetWarning, JsonObject, as_object, decode_json, object_list, objects, read_text


class Span(TypedDict):
    """A span of either JSON shape: its trace, start time, name, (event) attributes and, for a
    failed span, what failed."""

    trace: JsonValue
    start: int | str
    name: JsonValue
    attributes: JsonObject
    error: str | None


def _trace_id(raw: JsonValue) -> JsonValue:
    """A trace id as lowercase hex: OTLP/JSON's hex, the console exporter's `0x...`, or the
    base64 of protobuf's JSON mapping."""
    if not isinstance(raw, str) or not raw:
        return raw
    text = raw.removeprefix("0x")
    if re.fullmatch(r"[0-9a-fA-F]{32}", text):
        return text.lower()
    try:
        decoded = base64.b64decode(raw + "=" * (-len(raw) % 4), validate=True)
    except (binascii.Error, ValueError):
        return raw
    return decoded.hex() if len(decoded) == 16 else raw


def _error(status: JsonValue, attributes: JsonObject) -> str | None:
    """`error.type` and the status description of a failed span, else None."""
    status = as_object(status) or {}
    code = status.get("code", status.get("status_code"))
    failed = code in (2, "2", "STATUS_CODE_ERROR", "ERROR") or attributes.get("error.type") is not None
    if not failed:
        return None
    parts = [str(p) for p in (attributes.get("error.type"), status.get("message", status.get("description"))) if p]
    return ": ".join(parts) or "error"


def is_otel_spans(path: Path, head: str) -> bool:
    """OTLP JSON, or SDK console-exporter spans with GenAI attributes or GenAI event log records."""
    console = '"span_id"' in head and "gen_ai." in head and ('"context"' in head or '"body"' in head)
    return '"resourceSpans"' in head or '"resourceLogs"' in head or console


def _documents(path: Path) -> list[tuple[int, JsonValue]]:
    """The JSON values of the file (one, a list's items, or one a line) with the line each starts on."""
    text = read_text(path)
    at = 0
    docs: list[tuple[int, JsonValue]] = []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return docs
        line = text.count("\n", 0, at) + 1
        try:
            value: JsonValue
            value, at = raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
        docs.extend((line, item) for item in (value if isinstance(value, list) else [value]))


#: OTLP documents of the other signals, which a collector's file exporter may write beside spans.
_OTHER_SIGNALS = ("resourceLogs", "resourceMetrics", "resourceProfiles")


def _whole(value: JsonValue, where: str) -> int:
    """A whole number given as JSON number or text (OTLP writes 64-bit integers as text)."""
    number = as_int(value)
    if number is None:
        raise DatasetError(f"{where}: expected a whole number, got {value!r:.60}")
    return number


def _otlp_value(value: JsonObject, where: str) -> JsonValue:
    for key in ("stringValue", "boolValue", "doubleValue", "bytesValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return _whole(value["intValue"], f"{where}: intValue")
    if "arrayValue" in value:
        values = objects((as_object(value["arrayValue"]) or {}).get("values", []))
        return [_otlp_value(v, where) for v in values]
    if "kvlistValue" in value:
        return dict(_otlp_attributes((as_object(value["kvlistValue"]) or {}).get("values", []), where))
    return None


def _otlp_attributes(listing: JsonValue, where: str) -> list[tuple[str, JsonValue]]:
    """OTLP `[{key, value: {stringValue | intValue | ...}}]` as (key, value) pairs."""
    pairs = []
    for attribute in object_list(listing, f"{where}: attributes"):
        key = attribute.get("key")
        if not isinstance(key, str):
            raise DatasetError(f"{where}: attributes: each attribute needs a key")
        pairs.append((key, _otlp_value(as_object(attribute.get("value")) or {}, f"{where}: {key}")))
    return pairs


#: The GenAI conventions' message events (log records) and the role each message has.
_EVENT_ROLES = {
    "gen_ai.system.message": "system",
    "gen_ai.user.message": "user",
    "gen_ai.assistant.message": "assistant",
    "gen_ai.tool.message": "tool",
    "gen_ai.choice": "assistant",
}


def _event_message(name: str, body: JsonObject) -> JsonObject:
    """A GenAI message event's body (`{content, tool_calls?, id?}`; a choice's `{message}`) as a
    semconv message (role + parts)."""
    if name == "gen_ai.choice":
        body = as_object(body.get("message")) or {}
    role = str(body.get("role") or _EVENT_ROLES[name])
    content = body.get("content")
    if role == "tool":
        return {"role": "tool", "parts": [{"type": "tool_call_response", "id": body.get("id"), "response": content}]}
    parts: list[JsonValue] = [{"type": "text", "content": content}] if content not in (None, "") else []
    parts += [{**call, "type": "tool_call"} for call in objects(body.get("tool_calls"))]
    return {"role": role, "parts": parts}


def _event_calls(events: list[tuple[JsonValue, JsonValue, int | str, str, JsonObject]]) -> list[Span]:
    """GenAI message events (trace, span, time, event name, body) as one model call per span:
    its input message events, then its `gen_ai.choice` events as the output."""
    calls: dict[tuple[str, str], Span] = {}
    for trace, span, at, name, body in events:
        call = calls.setdefault(
            (str(trace), str(span)),
            {
                "trace": trace,
                "start": at,
                "name": "chat",
                "attributes": {"gen_ai.input.messages": [], "gen_ai.output.messages": []},
                "error": None,
            },
        )
        key = "gen_ai.output.messages" if name == "gen_ai.choice" else "gen_ai.input.messages"
        messages = call["attributes"][key]
        assert isinstance(messages, list)
        messages.append(_event_message(name, body))
    return list(calls.values())


def _events(docs: list[tuple[int, JsonValue]], path: Path) -> list[Span]:
    """The model calls that GenAI message events of a logs export record (the SDK console
    exporter's log records, or OTLP JSON `resourceLogs`), where an instrumentation wrote the
    messages as events instead of span attributes."""
    events: list[tuple[JsonValue, JsonValue, int | str, str, JsonObject]] = []
    for line, doc in docs:
        if not isinstance(doc, dict):
            continue
        for resource in object_list(doc.get("resourceLogs"), f"{path}:{line}: resourceLogs"):
            for scope in object_list(resource.get("scopeLogs"), f"{path}:{line}: scopeLogs"):
                for record in object_list(scope.get("logRecords"), f"{path}:{line}: logRecords"):
                    where = f"{path}:{line}: log record"
                    attributes = dict(_otlp_attributes(record.get("attributes"), where))
                    name = record.get("eventName") or attributes.get("event.name")
                    body = _otlp_value(as_object(record.get("body")) or {}, f"{where}: body")
                    if name in _EVENT_ROLES and isinstance(body, dict):
                        nanos = _whole(record.get("timeUnixNano") or record.get("observedTimeUnixNano") or 0, where)
                        events.append((_trace_id(record.get("traceId")), record.get("spanId"), nanos, str(name), body))
        if "body" in doc and "trace_id" in doc:  # SDK console exporter
            name = doc.get("event_name") or (as_object(doc.get("attributes")) or {}).get("event.name")
            body = doc.get("body")
            if name in _EVENT_ROLES and isinstance(body, dict):
                at = str(doc.get("timestamp") or doc.get("observed_timestamp") or "")
                events.append((_trace_id(doc.get("trace_id")), doc.get("span_id"), at, str(name), body))
    return _event_calls(events)


def _spans(docs: list[tuple[int, JsonValue]], path: Path) -> list[Span]:
    """Every span as `{trace, id, start, name, attributes}` (both JSON shapes); a document that
    is neither (but another signal's) is an error, never left out unsaid."""
    spans: list[Span] = _events(docs, path)
    for line, doc in docs:
        if isinstance(doc, dict) and "body" in doc and "trace_id" in doc:  # a log record (`_events`)
            continue
        if not isinstance(doc, dict) or not (
            "resourceSpans" in doc or "context" in doc or any(k in doc for k in _OTHER_SIGNALS)
        ):
            raise DatasetError(
                f"{path}:{line}: expected OTLP JSON (`resourceSpans`) or an exported span, got {doc!r:.60}"
            )
        for resource in object_list(doc.get("resourceSpans"), f"{path}:{line}: resourceSpans"):
            for scope in object_list(resource.get("scopeSpans"), f"{path}:{line}: scopeSpans"):
                for span in object_list(scope.get("spans"), f"{path}:{line}: spans"):
                    where = f"{path}:{line}: span {span.get('name')!r}"
                    attributes = dict(_otlp_attributes(span.get("attributes"), where))
                    for event in object_list(span.get("events"), f"{where}: events"):  # messages may come as an event's
                        for key, value in _otlp_attributes(event.get("attributes"), where):
                            attributes.setdefault(key, value)
                    start = _whole(span.get("startTimeUnixNano") or 0, f"{where}: startTimeUnixNano")
                    spans.append(
                        {
                            "trace": _trace_id(span.get("traceId")),
                            "start": start,
                            "name": span.get("name"),
                            "attributes": attributes,
                            "error": _error(span.get("status"), attributes),
                        }
                    )
        exported = as_object(doc.get("attributes"))
        if "context" in doc and exported is not None:  # SDK console exporter
            context = as_object(doc["context"]) or {}
            for event in object_list(doc.get("events"), f"{path}:{line}: span {doc.get('name')!r}: events"):
                for key, value in (as_object(event.get("attributes")) or {}).items():
                    exported.setdefault(key, value)
            spans.append(
                {
                    "trace": _trace_id(context.get("trace_id")),
                    "start": str(doc.get("start_time") or ""),
                    "name": doc.get("name"),
                    "attributes": exported,
                    "error": _error(doc.get("status"), exported),
                }  # fmt: skip
            )
    return spans


def read_otel(path: Path) -> list[LoggedTest]:
    """One `transcript:` test per GenAI conversation in the spans."""
    spans = sorted(_spans(_documents(path), path), key=_start)
    if not spans:
        raise DatasetError(f"{path}:1: no spans (expected OTLP JSON `resourceSpans` or SDK-exported spans)")
    results = {
        str(s["attributes"].get("gen_ai.tool.call.id")): s["attributes"].get("gen_ai.tool.call.result")
        for s in spans
        if s["attributes"].get("gen_ai.tool.call.id") is not None and "gen_ai.tool.call.result" in s["attributes"]
    }
    tool_spans = {
        str(s["attributes"]["gen_ai.tool.call.id"]): s for s in spans if "gen_ai.tool.call.id" in s["attributes"]
    }
    conversations: dict[str, list[Span]] = {}
    agent_errors: dict[str, str] = {}  # a failed agent run (`invoke_agent` ERROR) per conversation
    for span in spans:
        attributes = span["attributes"]
        key = str(attributes.get("gen_ai.conversation.id") or span["trace"] or "conversation")
        if attributes.get("gen_ai.operation.name") == "invoke_agent" and span["error"]:
            agent_errors[key] = span["error"]
        if _call_messages(attributes, path) is None:
            continue
        conversations.setdefault(key, []).append(span)
    tests: list[LoggedTest] = []
    seen: set[str] = set()
    left_out: list[str] = []
    for name, calls in conversations.items():
        transcript = merge_calls([_call_messages(c["attributes"], path) or [] for c in calls])
        for message in transcript:
            for call in message.get("tool_calls", []):
                call_id = call.get("id")
                if isinstance(call_id, str) and call_id in results and "output" not in call:
                    call["output"] = _structured(results[call_id])
        if not has_dialogue(transcript):
            left_out.append(f"{name} ({agent_errors.get(name) or 'no reply'})")
            continue
        first = calls[0]["attributes"]
        ids = [str(c.get("id")) for m in transcript for c in m.get("tool_calls", [])]
        failed = [*calls, *(tool_spans[i] for i in ids if i in tool_spans)]
        metadata: JsonObject = {
            "model": first.get("gen_ai.response.model") or first.get("gen_ai.request.model"),
            "provider": first.get("gen_ai.provider.name") or first.get("gen_ai.system"),
            "input_tokens": sum(_tokens(c, "input", path) for c in calls),
            "output_tokens": sum(_tokens(c, "output", path) for c in calls),
            "errors": [f"{s['name']}: {s['error']}" for s in sorted(failed, key=_start) if s["error"]],
        }
        test: LoggedTest = {"id": unique(slug(name), seen), "transcript": transcript}
        if name in agent_errors:
            test["error"] = f"the agent run failed: {agent_errors[name]}"
        test["metadata"] = {k: v for k, v in metadata.items() if v}
        tests.append(test)
    if not tests:
        raise DatasetError(f"{path}:1: no GenAI model-call span holds a user message and a reply")
    if left_out:
        warnings.warn(
            f"{path}: {len(left_out)} conversation(s) without a user and an assistant message left out: "
            + "; ".join(left_out),
            DatasetWarning,
            stacklevel=2,
        )
    return tests


def _start(span: Span) -> str:
    return str(span["start"]).zfill(24)


#: The token counts' names before the GenAI conventions renamed them (OpenLLMetry 0.40 writes these).
_OLD_USAGE = {"input": "prompt", "output": "completion"}


def _tokens(span: Span, kind: str, path: Path) -> int:
    attributes = span["attributes"]
    key = f"gen_ai.usage.{kind}_tokens"
    if key not in attributes:
        key = f"gen_ai.usage.{_OLD_USAGE[kind]}_tokens"
    return _whole(attributes.get(key) or 0, f"{path}:1: span {span['name']!r}: {key}")


def _structured(value: JsonValue) -> JsonValue:
    """A tool result as the span holds it, with an object or list recorded as JSON text (an
    attribute's encoding of structured values) decoded; other text stays text (`"1.50"`)."""
    decoded = _maybe_json(value)
    return decoded if isinstance(decoded, dict | list) else value


def _maybe_json(value: JsonValue) -> JsonValue:
    if isinstance(value, str):
        try:
            return decode_json(value)
        except ValueError:
            return value
    return value


def _call_messages(attributes: JsonObject, path: Path) -> list[LoggedMessage] | None:
    """A model call's input messages followed by its output, or None for other spans."""
    if "gen_ai.input.messages" in attributes or "gen_ai.output.messages" in attributes:
        messages: list[LoggedMessage] = [
            {"role": "system", "content": _parts_text(_maybe_json(attributes["gen_ai.system_instructions"]))}
        ] if attributes.get("gen_ai.system_instructions") else []  # fmt: skip
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            raw = _maybe_json(attributes.get(key)) or []
            if not isinstance(raw, list):
                raise DatasetError(f"{path}:1: {key}: expected a JSON list of messages")
            messages.extend(m for raw_message in raw for m in _semconv_message(raw_message))
        return messages
    if any(k.startswith("gen_ai.prompt.") for k in attributes):
        return _indexed(attributes, "gen_ai.prompt") + _indexed(attributes, "gen_ai.completion")
    return None


def _text(value: JsonValue) -> str:
    """A value as text: text as it is, anything else as JSON (never Python's repr)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _parts_text(parts: JsonValue) -> str:
    if isinstance(parts, str):
        return parts
    if isinstance(parts, list):
        return "\n".join(_text(p.get("content", "")) for p in objects(parts) if p.get("type") == "text")
    return ""


def _semconv_message(raw: JsonValue) -> list[LoggedMessage]:
    """A semconv message (role + parts); tool results become one `tool` message each."""
    role = raw.get("role") if isinstance(raw, dict) else None
    if not isinstance(raw, dict) or not isinstance(role, str) or role not in ROLES:
        return []
    parts = raw.get("parts") or []
    content = raw.get("content")
    if isinstance(content, str):  # older, flat shape
        parts = [{"type": "text", "content": content}]
    out: list[LoggedMessage] = []
    message: LoggedMessage = {"role": role, "content": _parts_text(parts)}
    calls = [tool_call_of(p) for p in objects(parts) if p.get("type") == "tool_call"]
    if calls:
        message["tool_calls"] = calls
    responses = [p for p in objects(parts) if p.get("type") == "tool_call_response"]
    for p in responses:
        result = p.get("response", p.get("result"))
        out.append({"role": "tool", "content": _text(result), "tool_call_id": p.get("id")})
    if message["content"] or calls or not responses:
        out.insert(0, message)
    return out


_INDEX = re.compile(r"^(gen_ai\.(?:prompt|completion))\.(\d+)\.(.+)$")
_CALL_FIELD = re.compile(r"^tool_calls\.(\d+)\.(id|name|arguments)$")


def _indexed(attributes: JsonObject, prefix: str) -> list[LoggedMessage]:
    """OpenLLMetry's indexed messages: `PREFIX.N.role`, `.content`, `.tool_call_id` and
    `.tool_calls.K.{id, name, arguments}` (0.40: the OpenAI message's fields, flattened)."""
    rows: dict[int, JsonObject] = {}
    for key, value in attributes.items():
        match = _INDEX.match(key)
        if match and match.group(1) == prefix:
            rows.setdefault(int(match.group(2)), {})[match.group(3)] = value
    messages: list[LoggedMessage] = []
    for _, row in sorted(rows.items()):
        role = row.get("role") or ("assistant" if prefix.endswith("completion") else "user")
        if not isinstance(role, str) or role not in ROLES:
            continue
        content = row.get("content")
        message: LoggedMessage = {"role": role, "content": "" if content is None else _text(content)}
        calls: dict[int, JsonObject] = {}
        for key, value in row.items():
            if field := _CALL_FIELD.match(key):
                calls.setdefault(int(field.group(1)), {})[field.group(2)] = value
        if calls:
            message["tool_calls"] = [tool_call_of(call) for _, call in sorted(calls.items())]
        if row.get("tool_call_id") is not None:
            message["tool_call_id"] = row["tool_call_id"]
        messages.append(message)
    return messages
