"""Writes edge-case OpenTelemetry GenAI spans with the official Python SDK (1.45.2).

    python make_edge_spans.py console OUT.json
    python make_edge_spans.py otlp http://127.0.0.1:PORT/v1/traces

One conversation (`gen_ai.conversation.id` "conv-zoë"): French system instructions, a first
model call that fails (span status ERROR, `error.type`, an exception event) and its retry, an
empty user message and an empty reply, a 3,000-character message, CJK and emoji; a tool call
whose `execute_tool` span fails (status ERROR, `error.type`, no result). A second conversation
has no conversation id (grouped by its trace).
"""

import json
import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import SpanKind, Status, StatusCode


def text(role, content, **extra):
    return {"role": role, "parts": [{"type": "text", "content": content}], **extra}


SYSTEM = [{"type": "text", "content": "Tu es un assistant de réservation. Réponds en français."}]
U1 = text("user", "Bonjour ! Une table pour 4 à Montréal ? 你好 👋")
A1 = text("assistant", "Bien sûr, à quelle heure ?", finish_reason="stop")
U2 = text("user", "")
A2 = text("assistant", "", finish_reason="stop")
LONG = "Très long message — " * 150
U3 = text("user", LONG)
CALL = {"role": "assistant", "parts": [{"type": "tool_call", "id": "call_é1", "name": "réserver", "arguments": {"personnes": 4, "ville": "Montréal"}}]}
RESULT = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "call_é1", "response": "error: service indisponible"}]}
A3 = text("assistant", "Désolé, la réservation a échoué.", finish_reason="stop")


def chat(tracer, inputs, outputs, conversation="conv-zoë", error=None):
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.system_instructions": json.dumps(SYSTEM, ensure_ascii=False),
        "gen_ai.input.messages": json.dumps(inputs, ensure_ascii=False),
        "gen_ai.usage.input_tokens": 20,
    }
    if conversation:
        attributes["gen_ai.conversation.id"] = conversation
    if outputs is not None:
        attributes["gen_ai.output.messages"] = json.dumps(outputs, ensure_ascii=False)
        attributes["gen_ai.usage.output_tokens"] = 5
        attributes["gen_ai.response.model"] = "gpt-4o-mini-2024-07-18"
    with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes, record_exception=False, set_status_on_exception=False) as span:
        if error:
            span.set_attribute("error.type", error)
            span.record_exception(RuntimeError("429 Too Many Requests: rate limit reached"))
            span.set_status(Status(StatusCode.ERROR, "429 Too Many Requests"))


def emit(exporter):
    provider = TracerProvider(resource=Resource.create({"service.name": "résa-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("résa-bot")
    with tracer.start_as_current_span("invoke_agent résa-bot", attributes={"gen_ai.operation.name": "invoke_agent"}):
        chat(tracer, [U1], None, error="openai.RateLimitError")
        chat(tracer, [U1], [A1])
        chat(tracer, [U1, A1, U2], [A2])
        chat(tracer, [U1, A1, U2, A2, U3], [CALL])
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "réserver",
            "gen_ai.tool.call.id": "call_é1",
            "gen_ai.tool.call.arguments": json.dumps({"personnes": 4, "ville": "Montréal"}, ensure_ascii=False),
            "error.type": "TimeoutError",
        }
        with tracer.start_as_current_span("execute_tool réserver", attributes=tool) as span:
            span.set_status(Status(StatusCode.ERROR, "service indisponible"))
        chat(tracer, [U1, A1, U2, A2, U3, CALL, RESULT], [A3])
    with tracer.start_as_current_span("invoke_agent résa-bot", attributes={"gen_ai.operation.name": "invoke_agent"}):
        chat(tracer, [text("user", "Merci !")], [text("assistant", "Avec plaisir.")], conversation=None)
    provider.shutdown()


if __name__ == "__main__":
    if sys.argv[1] == "console":
        with open(sys.argv[2], "w", encoding="utf-8") as out:
            emit(ConsoleSpanExporter(out=out))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        emit(OTLPSpanExporter(endpoint=sys.argv[2]))
