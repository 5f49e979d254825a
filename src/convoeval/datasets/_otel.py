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
`gen_ai.tool.call.result`) fill in tool calls' results.

Calls with the same `gen_ai.conversation.id` (else the same trace) form one conversation, in
start-time order; the call's model and token usage are kept as metadata.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ._chat_logs import ROLES, arguments_of, has_dialogue, merge_calls, slug, unique


def is_otel_spans(path: Path, head: str) -> bool:
    """OTLP JSON, or SDK console-exporter spans with GenAI attributes."""
    return '"resourceSpans"' in head or ('"context"' in head and '"span_id"' in head and "gen_ai." in head)


def _documents(path: Path) -> list[Any]:
    text = path.read_text(encoding="utf-8")
    decoder, at = json.JSONDecoder(), 0
    docs: list[Any] = []
    while True:
        while at < len(text) and text[at].isspace():
            at += 1
        if at >= len(text):
            return docs
        try:
            value, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
        docs.extend(value if isinstance(value, list) else [value])


def _otlp_value(value: dict[str, Any]) -> Any:
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        return int(value["intValue"])
    if "arrayValue" in value:
        return [_otlp_value(v) for v in value["arrayValue"].get("values", [])]
    return None


def _spans(docs: list[Any]) -> list[dict[str, Any]]:
    """Every span as `{trace, id, start, name, attributes}` (both JSON shapes)."""
    spans = []
    for doc in docs:
        if not isinstance(doc, dict):
            continue
        for resource in doc.get("resourceSpans") or []:
            for scope in resource.get("scopeSpans") or []:
                for span in scope.get("spans") or []:
                    attributes = {a["key"]: _otlp_value(a.get("value") or {}) for a in span.get("attributes") or []}
                    for event in span.get("events") or []:  # messages may come as an event's attributes
                        for a in event.get("attributes") or []:
                            attributes.setdefault(a["key"], _otlp_value(a.get("value") or {}))
                    spans.append(
                        {
                            "trace": span.get("traceId"),
                            "start": int(span.get("startTimeUnixNano") or 0),
                            "name": span.get("name"),
                            "attributes": attributes,
                        }
                    )
        if "context" in doc and isinstance(doc.get("attributes"), dict):  # SDK console exporter
            context = doc["context"] or {}
            for event in doc.get("events") or []:
                for key, value in (event.get("attributes") or {}).items():
                    doc["attributes"].setdefault(key, value)
            spans.append(
                {
                    "trace": context.get("trace_id"),
                    "start": str(doc.get("start_time") or ""),
                    "name": doc.get("name"),
                    "attributes": doc["attributes"],
                }  # fmt: skip
            )
    return spans


def read_otel(path: Path) -> list[dict[str, Any]]:
    """One `transcript:` test per GenAI conversation in the spans."""
    spans = sorted(_spans(_documents(path)), key=lambda s: str(s["start"]).zfill(24))
    if not spans:
        raise DatasetError(f"{path}:1: no spans (expected OTLP JSON `resourceSpans` or SDK-exported spans)")
    results = {
        str(s["attributes"].get("gen_ai.tool.call.id")): s["attributes"].get("gen_ai.tool.call.result")
        for s in spans
        if s["attributes"].get("gen_ai.tool.call.id") is not None
    }
    conversations: dict[str, list[dict[str, Any]]] = {}
    for span in spans:
        attributes = span["attributes"]
        if _call_messages(attributes) is None:
            continue
        key = str(attributes.get("gen_ai.conversation.id") or span["trace"] or "conversation")
        conversations.setdefault(key, []).append(span)
    tests: list[dict[str, Any]] = []
    seen: set[str] = set()
    for name, calls in conversations.items():
        transcript = merge_calls([_call_messages(c["attributes"]) or [] for c in calls])
        for message in transcript:
            for call in message.get("tool_calls", []):
                if call.get("id") in results and "output" not in call:
                    call["output"] = _maybe_json(results[call["id"]])
        if not has_dialogue(transcript):
            continue
        first = calls[0]["attributes"]
        metadata = {
            "model": first.get("gen_ai.response.model") or first.get("gen_ai.request.model"),
            "provider": first.get("gen_ai.provider.name") or first.get("gen_ai.system"),
            "input_tokens": sum(int(c["attributes"].get("gen_ai.usage.input_tokens") or 0) for c in calls),
            "output_tokens": sum(int(c["attributes"].get("gen_ai.usage.output_tokens") or 0) for c in calls),
        }
        test: dict[str, Any] = {"id": unique(slug(name), seen), "transcript": transcript}
        test["metadata"] = {k: v for k, v in metadata.items() if v}
        tests.append(test)
    if not tests:
        raise DatasetError(f"{path}:1: no GenAI model-call span holds a user message and a reply")
    return tests


def _maybe_json(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _call_messages(attributes: dict[str, Any]) -> list[dict[str, Any]] | None:
    """A model call's input messages followed by its output, or None for other spans."""
    if "gen_ai.input.messages" in attributes or "gen_ai.output.messages" in attributes:
        messages = [
            {"role": "system", "content": _parts_text(_maybe_json(attributes["gen_ai.system_instructions"]))}
        ] if attributes.get("gen_ai.system_instructions") else []  # fmt: skip
        for key in ("gen_ai.input.messages", "gen_ai.output.messages"):
            raw = _maybe_json(attributes.get(key)) or []
            if not isinstance(raw, list):
                raise DatasetError(f"{key}: expected a JSON list of messages")
            messages.extend(m for raw_message in raw for m in _semconv_message(raw_message))
        return messages
    if any(k.startswith("gen_ai.prompt.") for k in attributes):
        return _indexed(attributes, "gen_ai.prompt") + _indexed(attributes, "gen_ai.completion")
    return None


def _parts_text(parts: Any) -> str:
    if isinstance(parts, str):
        return parts
    if isinstance(parts, list):
        return "\n".join(str(p.get("content", "")) for p in parts if isinstance(p, dict) and p.get("type") == "text")
    return ""


def _semconv_message(raw: Any) -> list[dict[str, Any]]:
    """A semconv message (role + parts); tool results become one `tool` message each."""
    if not isinstance(raw, dict) or raw.get("role") not in ROLES:
        return []
    parts = raw.get("parts") or []
    if isinstance(raw.get("content"), str):  # older, flat shape
        parts = [{"type": "text", "content": raw["content"]}]
    out: list[dict[str, Any]] = []
    message: dict[str, Any] = {"role": raw["role"], "content": _parts_text(parts)}
    calls = [
        {"name": str(p.get("name")), "arguments": arguments_of(p.get("arguments")), "id": p.get("id")}
        for p in parts
        if isinstance(p, dict) and p.get("type") == "tool_call"
    ]
    if calls:
        message["tool_calls"] = calls
    responses = [p for p in parts if isinstance(p, dict) and p.get("type") == "tool_call_response"]
    for p in responses:
        result = p.get("response", p.get("result"))
        text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)
        out.append({"role": "tool", "content": text, "tool_call_id": p.get("id")})
    if message["content"] or calls or not responses:
        out.insert(0, message)
    return out


_INDEX = re.compile(r"^(gen_ai\.(?:prompt|completion))\.(\d+)\.(\w+)$")


def _indexed(attributes: dict[str, Any], prefix: str) -> list[dict[str, Any]]:
    rows: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        match = _INDEX.match(key)
        if match and match.group(1) == prefix:
            rows.setdefault(int(match.group(2)), {})[match.group(3)] = value
    messages = []
    for _, row in sorted(rows.items()):
        role = row.get("role") or ("assistant" if prefix.endswith("completion") else "user")
        if role in ROLES:
            messages.append({"role": role, "content": str(row.get("content") or "")})
    return messages
