"""Loopback OpenAI-compatible server: models x and y answer MT-Bench turns; any other model judges.
Judge: pairwise prompts -> the label of the assistant whose part holds GOOD ("[[C]]" when none,
no label at all when NOLABEL is shown); single prompts -> "Rating: [[7]]". Logs pairwise judge messages."""
import json, sys, re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
LOG = open(sys.argv[2], "a")
ANSWERS = {"x": ["x one GOOD", "x two"], "y": ["y one", "y two GOOD"]}
def judge(messages):
    text = messages[-1]["content"]
    if "Assistant A" not in text:
        return "Rating: [[7]]"
    LOG.write(json.dumps(messages, sort_keys=True) + "\n"); LOG.flush()
    if "NOLABEL" in text:
        return "I cannot tell."
    if "supervisor" in text:  # question 82: a judge that always prefers what it reads first
        return "[[A]]"
    i = text.find("GOOD")
    if i < 0:
        return "Both are fine. [[C]]"
    a, b = text.rfind("Assistant A", 0, i), text.rfind("Assistant B", 0, i)
    return "A is better. [[A]]" if a > b else "B is better. [[B]]"
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        model = body["model"]
        if model in ANSWERS:
            n = sum(m["role"] == "user" for m in body["messages"])
            q = [m["content"] for m in body["messages"] if m["role"] == "user"][0]
            text = ANSWERS[model][n - 1] + (" NOLABEL" if model == "x" and n == 2 and "Benjamin" in q else "")
        else:
            text = judge(body["messages"])
        out = {"id": "x", "object": "chat.completion", "created": 0, "model": model,
               "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
               "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}}
        data = json.dumps(out).encode()
        self.send_response(200); self.send_header("Content-Type", "application/json"); self.send_header("Content-Length", str(len(data))); self.end_headers(); self.wfile.write(data)
    def log_message(self, *a): pass
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
