"""Writes OpenTelemetry GenAI spans with the official Python SDK, as an instrumented chat app
would emit them (GenAI semantic conventions: `chat` model calls with `gen_ai.input.messages` /
`gen_ai.output.messages`, an `execute_tool` span, one `gen_ai.conversation.id`).

    python make_spans.py console OUT.json          # the SDK's ConsoleSpanExporter output
    python make_spans.py otlp http://127.0.0.1:PORT/v1/traces   # OTLP/HTTP (protobuf) to a receiver

Used by tests/test_interop_otel.py and to make the copies in this folder (see SOURCE.txt).
"""

import json
import sys

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.trace import SpanKind

SYSTEM = [{"type": "text", "content": "You are a weather assistant. Answer in one sentence."}]
USER_1 = {"role": "user", "parts": [{"type": "text", "content": "Weather in Paris tomorrow?"}]}
CALL = {
    "role": "assistant",
    "parts": [{"type": "tool_call", "id": "call_1", "name": "get_forecast", "arguments": {"city": "Paris"}}],
}
RESULT = {
    "role": "tool",
    "parts": [{"type": "tool_call_response", "id": "call_1", "response": {"summary": "light rain", "temp_c": 14}}],
}
REPLY_1 = {
    "role": "assistant",
    "parts": [{"type": "text", "content": "Light rain and 14 °C in Paris tomorrow."}],
    "finish_reason": "stop",
}
USER_2 = {"role": "user", "parts": [{"type": "text", "content": "Umbrella or not?"}]}
REPLY_2 = {
    "role": "assistant",
    "parts": [{"type": "text", "content": "Yes, take an umbrella."}],
    "finish_reason": "stop",
}


def chat(tracer, inputs, outputs, tokens):
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.conversation.id": "conv-paris-weather",
        "gen_ai.system_instructions": json.dumps(SYSTEM),
        "gen_ai.input.messages": json.dumps(inputs),
        "gen_ai.output.messages": json.dumps(outputs),
        "gen_ai.usage.input_tokens": tokens[0],
        "gen_ai.usage.output_tokens": tokens[1],
    }
    with tracer.start_as_current_span("chat gpt-4o-mini", kind=SpanKind.CLIENT, attributes=attributes):
        pass


def emit(exporter):
    provider = TracerProvider(resource=Resource.create({"service.name": "weather-bot"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("weather-bot")
    with tracer.start_as_current_span("invoke_agent weather-bot", attributes={"gen_ai.operation.name": "invoke_agent"}):
        chat(tracer, [USER_1], [CALL], (30, 12))
        tool = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "get_forecast",
            "gen_ai.tool.call.id": "call_1",
            "gen_ai.tool.call.arguments": json.dumps({"city": "Paris"}),
            "gen_ai.tool.call.result": json.dumps({"summary": "light rain", "temp_c": 14}),
        }
        with tracer.start_as_current_span("execute_tool get_forecast", attributes=tool):
            pass
        chat(tracer, [USER_1, CALL, RESULT], [REPLY_1], (60, 14))
    with tracer.start_as_current_span("invoke_agent weather-bot", attributes={"gen_ai.operation.name": "invoke_agent"}):
        chat(tracer, [USER_1, CALL, RESULT, REPLY_1, USER_2], [REPLY_2], (80, 7))
    provider.shutdown()


if __name__ == "__main__":
    if sys.argv[1] == "console":
        with open(sys.argv[2], "w", encoding="utf-8") as out:
            emit(ConsoleSpanExporter(out=out))
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        emit(OTLPSpanExporter(endpoint=sys.argv[2]))
