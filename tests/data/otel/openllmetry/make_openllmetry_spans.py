"""Writes OpenTelemetry spans with OpenLLMetry's OpenAI instrumentation
(opentelemetry-instrumentation-openai, Apache-2.0) around the real OpenAI SDK, talking to a
loopback fake of OpenAI's chat completions (no network, no key).

    python make_openllmetry_spans.py OUT.json

A two-turn chat: the model says "Let me check." with a get_weather call, the tool's result goes
back, the model answers, the user thanks it. Spans are the SDK's ConsoleSpanExporter output
(span.to_json() objects one after another).
"""

import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer

import openai
from opentelemetry import trace
from opentelemetry.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor


class FakeOpenAI(BaseHTTPRequestHandler):
    """A tool call when asked about the weather, then text."""

    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        last = body["messages"][-1]
        if last["role"] == "user" and "weather" in str(last["content"]):
            call = {"id": "call_w1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}
            message, finish = {"role": "assistant", "content": "Let me check.", "tool_calls": [call]}, "tool_calls"
        elif last["role"] == "tool":
            message, finish = {"role": "assistant", "content": "It is sunny in Paris, 21C."}, "stop"
        else:
            message, finish = {"role": "assistant", "content": "You're welcome!"}, "stop"
        data = json.dumps(
            {
                "id": "chatcmpl-1",
                "object": "chat.completion",
                "created": 1,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            }
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def main(out_path: str) -> None:
    server = HTTPServer(("127.0.0.1", 0), FakeOpenAI)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with open(out_path, "w", encoding="utf-8") as out:
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out)))
        trace.set_tracer_provider(provider)
        OpenAIInstrumentor().instrument()
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key="sk-test")
        weather = {"type": "object", "properties": {"city": {"type": "string"}}}
        tools = [{"type": "function", "function": {"name": "get_weather", "parameters": weather}}]
        with trace.get_tracer("app").start_as_current_span("conversation"):
            messages = [
                {"role": "system", "content": "You are helpful."},
                {"role": "user", "content": "What's the weather in Paris?"},
            ]
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools).choices[0]
            messages.append(reply.message.model_dump(exclude_none=True))
            for call in reply.message.tool_calls or []:
                messages.append({"role": "tool", "tool_call_id": call.id, "content": "1.50"})
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools).choices[0]
            messages += [reply.message.model_dump(exclude_none=True), {"role": "user", "content": "thanks"}]
            client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=tools)
        provider.shutdown()
    server.shutdown()


if __name__ == "__main__":
    main(sys.argv[1])
