"""A run as OpenTelemetry GenAI spans, sent over OTLP/HTTP with the official SDK (optional extra
`otel`: `opentelemetry-sdk`, `opentelemetry-exporter-otlp-proto-http`).

One trace per test, target and trial: a root span `invoke_agent <target>` for the conversation
(`gen_ai.conversation.id` `suite/test/target`, with `/N` and `convoeval.trial` for each of
several trials; the score, verdict, status and tokens as `convoeval.*` and `gen_ai.usage.*`
attributes), a `chat <target>` child per turn (`gen_ai.request.model` the model and
`gen_ai.provider.name` its provider, when the target names them) carrying the GenAI semantic conventions'
`gen_ai.input.messages` (the conversation up to the turn), `gen_ai.output.messages` (the
reply), `gen_ai.system_instructions`, the turn's tokens (`gen_ai.usage.input_tokens` /
`output_tokens`, where the conventions and trace backends read them) and the turn's score and
verdict, and an
`execute_tool <name>` child per tool call (`gen_ai.tool.name`, `gen_ai.tool.call.id`,
`gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`). Messages use the semconv
`{role, parts: [{type: text | tool_call | tool_call_response, ...}]}` shape, as JSON text.
Span times follow the recorded durations (turn latencies), ending when the export runs.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from .._secrets import redact, remember_credentials, shown_url
from ..errors import ConfigError
from ..results import Accounting, EvaluationResult, Message, ScoreEntry, ToolCall, Usage
from ._overview import suite_name

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from opentelemetry.trace import Span, Tracer
    from opentelemetry.util.types import AttributeValue

OTEL_EXTRA = "opentelemetry-sdk and opentelemetry-exporter-otlp-proto-http (pip install 'convoeval[otel]')"


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


def semconv_messages(message: Message) -> list[dict[str, object]]:
    """A transcript message in the GenAI semconv shape (role + parts); convoeval's tool
    messages (which carry their call) become the assistant's `tool_call` and the `tool` response."""
    if message.source == "tool" or message.role == "tool":
        if not message.tool_calls:
            return [{"role": "tool", "parts": [{"type": "tool_call_response", "response": message.content}]}]
        calls = [
            {"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls
        ]
        responses = [{"type": "tool_call_response", "id": c.id, "response": c.output} for c in message.tool_calls]
        return [{"role": "assistant", "parts": calls}, {"role": "tool", "parts": responses}]
    parts: list[dict[str, object]] = [{"type": "text", "content": message.content}] if message.content else []
    parts += [{"type": "tool_call", "id": c.id, "name": c.name, "arguments": c.arguments} for c in message.tool_calls]
    return [{"role": message.role, "parts": parts}]


def _tracer() -> tuple[TracerProvider, Tracer, InMemorySpanExporter]:
    """A tracer whose finished spans are kept in memory, to be sent in batches afterwards."""
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    except ImportError:
        raise ConfigError(f"exporting OpenTelemetry spans needs {OTEL_EXTRA}") from None
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "convoeval"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    return provider, provider.get_tracer("convoeval"), memory


def otlp_exporter(endpoint: str | None = None, headers: dict[str, str] | None = None) -> SpanExporter:
    """The SDK's OTLP/HTTP span exporter (endpoint default: the OTEL_EXPORTER_OTLP_* variables)."""
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise ConfigError(f"exporting OpenTelemetry spans needs {OTEL_EXTRA}") from None
    if endpoint is not None and urlsplit(endpoint).scheme not in ("http", "https"):
        raise ConfigError(
            f"--otel-endpoint {shown_url(endpoint)!r} is not an http(s) URL like http://127.0.0.1:4318/v1/traces"
        )
    remember_credentials(headers or {}, endpoint)
    _redacted_sdk_logs()
    return OTLPSpanExporter(endpoint=endpoint, headers=headers)


class _Redacting(logging.Filter):
    """Passes the SDK's log records with their text redacted (`_secrets.redact`)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = redact(record.getMessage()), None
        return True


def _redacted_sdk_logs() -> None:
    """The SDK's own log lines (a retry quotes the endpoint's URL, `?token=...` included) go to
    stderr redacted, through a handler of their own, instead of as they are."""
    logger = logging.getLogger("opentelemetry")
    if any(isinstance(f, _Redacting) for h in logger.handlers for f in h.filters):
        return
    handler = logging.StreamHandler()
    handler.addFilter(_Redacting())
    logger.addHandler(handler)
    logger.propagate = False


#: Spans per export request.
BATCH = 512


def export_spans(results: Sequence[EvaluationResult], exporter: SpanExporter) -> int:
    """Send every result as GenAI spans through `exporter` (a SpanExporter), in batches;
    returns the span count.

    Raises:
        ConfigError: the exporter could not send a batch (the endpoint is down or refused it).
    """
    from opentelemetry.sdk.trace.export import SpanExportResult

    provider, tracer, memory = _tracer()
    for result in results:
        _result_spans(tracer, result)
    provider.shutdown()
    spans = memory.get_finished_spans()
    try:
        for start in range(0, len(spans), BATCH):
            if exporter.export(spans[start : start + BATCH]) is not SpanExportResult.SUCCESS:
                raise ConfigError(
                    f"the OpenTelemetry exporter could not send spans {start + 1}-{min(start + BATCH, len(spans))} "
                    f"of {len(spans)} (is the OTLP endpoint up?)"
                )
    finally:
        exporter.shutdown()
    return len(spans)


def _turn_entries(run: Accounting) -> dict[int, ScoreEntry]:
    return {
        int(e.name[5:]): e
        for e in run.scores
        if e.type == "turn" and e.name.startswith("turn-") and e.name[5:].isdigit()
    }


def _result_spans(tracer: Tracer, result: EvaluationResult) -> None:
    """One trace per trial (the result's own when it has one trial)."""
    trials: list[Accounting] = list(result.trials) if len(result.trials) > 1 else [result]
    for n, run in enumerate(trials, start=1):
        _trial_spans(tracer, result, run, n if len(trials) > 1 else None)


def _trial_spans(tracer: Tracer, result: EvaluationResult, run: Accounting, trial: int | None) -> None:
    from opentelemetry.trace import SpanKind, Status, StatusCode

    end = time.time_ns()
    start = end - int(max(run.duration_ms, 1.0) * 1e6)
    conversation_id = f"{suite_name(result)}/{result.test_id}/{result.target}" + (f"/{trial}" if trial else "")
    root_attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": result.target,
        "gen_ai.conversation.id": conversation_id,
        "convoeval.suite": suite_name(result),
        "convoeval.test_id": result.test_id,
        "convoeval.verdict": run.verdict,
        "convoeval.execution_status": run.execution_status,
        "convoeval.threshold": result.threshold,
        **_usage(run.token_usage),
    }
    if trial is not None:
        root_attributes["convoeval.trial"] = trial
    if run.score is not None:
        root_attributes["convoeval.score"] = run.score
    root = tracer.start_span(
        f"invoke_agent {result.target}", kind=SpanKind.CLIENT, start_time=start, attributes=root_attributes
    )
    if run.execution_status == "execution_error":
        root.set_status(Status(StatusCode.ERROR, run.error or "execution error"))
    _turn_spans(tracer, root, result.target, run, conversation_id, start)
    for entry in run.scores:
        if entry.type != "turn" and entry.score is not None:
            root.set_attribute(f"convoeval.{entry.name}.score", entry.score)
        if entry.type != "turn":
            root.set_attribute(f"convoeval.{entry.name}.verdict", entry.verdict)
    root.end(end_time=end)


def _usage(usage: Usage | None) -> dict[str, AttributeValue]:
    """Token counts as the GenAI conventions name them (none when nothing was counted; the
    prompt cache's only when it was used). Their input tokens include the cached ones, as ours."""
    if usage is None or not (usage.input_tokens or usage.output_tokens):
        return {}
    counts: dict[str, AttributeValue] = {
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
    }
    if usage.cached_input_tokens:
        counts["gen_ai.usage.cache_read.input_tokens"] = usage.cached_input_tokens
    if usage.cache_write_tokens:
        counts["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    return counts


def _model(target: str, provider: str | None) -> dict[str, AttributeValue]:
    """The model and provider as the GenAI conventions name them: `openai:gpt-4o` is model
    `gpt-4o` of provider `openai`; a named target is its own model name."""
    model = target.removeprefix(f"{provider}:") if provider else target
    return {"gen_ai.request.model": model or target, **({"gen_ai.provider.name": provider} if provider else {})}


def _turn_spans(tracer: Tracer, root: Span, target: str, run: Accounting, conversation_id: str, start: int) -> None:
    from opentelemetry import trace

    entries = _turn_entries(run)
    system = [m for m in run.output if m.role == "system"]
    at, before = start, [m for m in run.output if m.turn is None and m.role != "system"]
    turns = sorted({m.turn for m in run.output if m.turn is not None})
    context = trace.set_span_in_context(root)
    for number in turns:
        messages = [m for m in run.output if m.turn == number]
        entry = entries.get(number)
        length = int(max((entry.latency_ms if entry and entry.latency_ms else 1.0), 1.0) * 1e6)
        replies = [m for m in messages if m.source == "target"]
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            **_model(target, run.provider),
            "gen_ai.conversation.id": conversation_id,
            "gen_ai.input.messages": _json(
                [
                    s
                    for m in [*before, *messages]
                    if m not in replies and m.role != "system"
                    for s in semconv_messages(m)
                ]
            ),
            "gen_ai.output.messages": _json(
                [{**s, "finish_reason": "stop"} for m in replies for s in semconv_messages(m)]
            ),
            "convoeval.turn": number,
            **_usage(entry.token_usage if entry else None),
        }
        if system:
            attributes["gen_ai.system_instructions"] = _json([{"type": "text", "content": m.content} for m in system])
        if entry is not None:
            attributes["convoeval.turn.verdict"] = entry.verdict
            if entry.score is not None:
                attributes["convoeval.turn.score"] = entry.score
        span = tracer.start_span(f"chat {target}", context=context, start_time=at, attributes=attributes)
        calls = [c for m in messages for c in m.tool_calls if m.source == "target" or m.role == "assistant"]
        calls += [c for m in messages if m.source == "tool" for c in m.tool_calls if c not in calls]
        _tool_spans(tracer, span, calls, at, length)
        span.end(end_time=at + length)
        before = [*before, *messages]
        at += length


def _tool_spans(tracer: Tracer, parent: Span, calls: list[ToolCall], start: int, length: int) -> None:
    from opentelemetry import trace

    context = trace.set_span_in_context(parent)
    for n, call in enumerate(calls):
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.arguments": _json(call.arguments),
        }
        if call.id:
            attributes["gen_ai.tool.call.id"] = call.id
        if call.output is not None:
            attributes["gen_ai.tool.call.result"] = call.output if isinstance(call.output, str) else _json(call.output)
        span = tracer.start_span(
            f"execute_tool {call.name}", context=context, start_time=start + n, attributes=attributes
        )
        if call.error:
            from opentelemetry.trace import Status, StatusCode

            span.set_status(Status(StatusCode.ERROR, call.error))
        span.end(end_time=start + max(length - 1, n + 1))
