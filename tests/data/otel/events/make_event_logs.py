"""Spans by opentelemetry-instrumentation-openai-v2 around the real OpenAI SDK talking to a loopback fake."""
import json, sys, threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

N = {"n": 0}
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        msgs = body["messages"]
        if msgs[-1]["role"] == "user" and "weather" in msgs[-1]["content"]:
            msg = {"role": "assistant", "content": "Let me check.", "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": json.dumps({"city": "Zoë-ville"})}}]}
            fin = "tool_calls"
        else:
            msg = {"role": "assistant", "content": f"Réponse {len(msgs)} 👋"}
            fin = "stop"
        out = {"id": "x", "object": "chat.completion", "created": 0, "model": body["model"] + "-2024", "choices": [{"index": 0, "finish_reason": fin, "message": msg}], "usage": {"prompt_tokens": 10 * len(msgs), "completion_tokens": 5, "total_tokens": 10 * len(msgs) + 5}}
        data = json.dumps(out).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def log_message(self, *a): pass

srv = ThreadingHTTPServer(("127.0.0.1", 0), H); threading.Thread(target=srv.serve_forever, daemon=True).start()

from opentelemetry import trace, _logs
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, ConsoleSpanExporter
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor, ConsoleLogExporter
out = open(sys.argv[1], "w")
tp = TracerProvider(); tp.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=out))); trace.set_tracer_provider(tp)
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
memory = InMemoryLogRecordExporter()
lp = LoggerProvider(); lp.add_log_record_processor(SimpleLogRecordProcessor(ConsoleLogExporter(out=open(sys.argv[1] + ".logs", "w")))); lp.add_log_record_processor(SimpleLogRecordProcessor(memory)); _logs.set_logger_provider(lp)
from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor
OpenAIInstrumentor().instrument()
from openai import OpenAI
c = OpenAI(base_url=f"http://127.0.0.1:{srv.server_address[1]}/v1", api_key="sk-x")
msgs = [{"role": "system", "content": "Sois bref."}, {"role": "user", "content": "What's the weather in Zoë-ville?"}]
r = c.chat.completions.create(model="gpt-4o-mini", messages=msgs)
m = r.choices[0].message
msgs.append({"role": "assistant", "content": m.content, "tool_calls": [t.model_dump() for t in m.tool_calls]})
msgs.append({"role": "tool", "tool_call_id": "call_1", "content": "1.50"})
r = c.chat.completions.create(model="gpt-4o-mini", messages=msgs)
msgs.append({"role": "assistant", "content": r.choices[0].message.content})
msgs.append({"role": "user", "content": "Merci ! Et demain ?"})
r = c.chat.completions.create(model="gpt-4o-mini", messages=msgs)
tp.shutdown(); lp.shutdown()
# the OTLP JSON a collector's file exporter writes (ids as hex, as OTLP/JSON specifies)
import base64
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
def hexed(v):
    if isinstance(v, dict):
        return {k: base64.b64decode(x).hex() if k in ("traceId", "spanId") and x else hexed(x) for k, x in v.items()}
    if isinstance(v, list):
        return [hexed(x) for x in v]
    return v
with open(sys.argv[1] + ".otlp.jsonl", "w") as f:
    f.write(json.dumps(hexed(MessageToDict(encode_logs(memory.get_finished_logs())))) + "\n")
