"""A loopback chat-completions server that gives AgentV's real CLI and convoeval the same answers.

The target's reply to a request depends only on its last user message: the first rule of
`replies` (a list of `[words, reply]`) whose words the message contains, else `You said: MESSAGE`.
The judge's answer depends only on what is judged, in the form each program asks for:

- AgentV's free-form llm-grader (a system message with `"score": <number between 0.0 and 1.0>`)
  gets `{"score": S, "assertions": [...]}`; its rubrics (`"satisfied"` in the schema) get
  `{"checks": [{"id", "satisfied", "reasoning"}]}`; its score ranges get integer scores 0-10.
- convoeval's judge (a `response_format` JSON schema) gets the same decisions in its schema:
  `score` as an integer 0-10 (S x 10), one boolean or 0-10 value per criterion.

S is written in the judged text as `(judge-score=0.7)`; a rubric criterion containing `(unmet)`
is not satisfied, one with `(met)` is. Without a marker the decision comes from a CRC-32 of
the criterion's text (or the graded reply), so both programs decide the same way.

Run as a script (`python tests/agentv_loopback.py REPLIES.json`) it prints `PORT n` and serves
until killed; every request is appended to `$AGENTV_LOOPBACK_LOG` when that is set.
"""

from __future__ import annotations

import json
import os
import re
import sys
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

Body = dict[str, Any]
SCORES = (0.0, 0.3, 0.5, 0.7, 0.8, 1.0)
_MARK = re.compile(r"\(judge-score=([0-9.]+)\)")
_AGENTV_RUBRIC = re.compile(r"^- \[(?P<id>[^\]]+)\](?: \([^)]*\))*: (?P<text>.*)$", re.M)
_LABELS = re.compile(r"^(?:\([^)]*\) )+")  # convoeval's `(guard: ...)` before a criterion's text


def _crc(text: str) -> int:
    return zlib.crc32(" ".join(text.split()).encode())


def satisfied(text: str) -> bool:
    """Whether the judge finds a rubric criterion met."""
    if "(unmet)" in text:
        return False
    if "(met)" in text:
        return True
    return _crc(text) % 3 != 0


def score_of(text: str) -> float:
    """The judge's 0-1 score for a judged text: its marker, else one of SCORES by CRC-32."""
    found = _MARK.search(text)
    if found:
        return float(found.group(1))
    return SCORES[_crc(text) % len(SCORES)]


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
    return str(content or "")


class Replies:
    """The target's and the judge's answers (see the module docstring)."""

    def __init__(self, rules: list[list[str]] | None = None):
        self.rules = [(words, reply) for words, reply in rules or []]
        self.served: set[str] = set()

    def target(self, body: Body) -> str:
        users = [_text(m.get("content")) for m in body.get("messages", []) if m.get("role") == "user"]
        last = users[-1] if users else ""
        for words, reply in self.rules:
            if words in last:
                self.served.add(reply)
                return reply
        reply = f"You said: {last.strip()}"
        self.served.add(reply)
        return reply

    def judged_reply(self, prompt: str) -> str:
        """The longest reply served so far that the judge prompt quotes (what is graded), its
        surrounding white space aside (AgentV quotes a reply trimmed)."""
        found = [r.strip() for r in self.served if r.strip() and r.strip() in prompt]
        return max(found, key=len) if found else ""

    def judge(self, body: Body) -> str | None:
        """The judge's answer, or None when `body` is not a judge request."""
        messages = body.get("messages", [])
        system = "\n".join(_text(m.get("content")) for m in messages if m.get("role") == "system")
        prompt = "\n".join(_text(m.get("content")) for m in messages if m.get("role") != "system")
        if "response_format" in body:
            return json.dumps(self._convoeval(body["response_format"], prompt))
        if '"satisfied"' in system:
            checks = [
                {"id": m["id"], "satisfied": satisfied(m["text"]), "reasoning": "scripted"}
                for m in _AGENTV_RUBRIC.finditer(prompt)
            ]
            return json.dumps({"checks": checks, "overall_reasoning": "scripted"})
        if "### Criterion:" in prompt and '"score"' in system:
            parts = re.split(r"^### Criterion: ", prompt, flags=re.M)[1:]
            checks = [
                {"id": p.split()[0], "score": round(10 * _scored(p.split()[0], p)), "reasoning": "scripted"}
                for p in parts
            ]
            return json.dumps({"checks": checks, "overall_reasoning": "scripted"})
        if "<number between 0.0 and 1.0>" in system:
            score = self._free_score(prompt)
            return json.dumps({"score": score, "assertions": [{"text": "scripted", "passed": score >= 0.5}]})
        return None

    def _free_score(self, prompt: str) -> float:
        """The marker, else by the graded reply, else (an aggregator's prompt, which AgentV
        sends bare and convoeval followed by the results) by its first line."""
        found = _MARK.search(prompt)
        if found:
            return float(found.group(1))
        first = next((line for line in prompt.splitlines() if line.strip()), "")
        return score_of(self.judged_reply(prompt) or first)

    def _convoeval(self, response_format: Body, prompt: str) -> Body:
        schema = response_format.get("json_schema", {}).get("schema", {})
        props = schema.get("properties", {})
        if "score" in props and "criteria" not in props:
            return {"reasoning": "scripted", "score": round(10 * self._free_score(prompt))}
        return _fill(schema, prompt)


def _scored(key: str, text: str) -> float:
    """A 0-10 criterion's score (0-1): its marker, else by its id (both programs show the id)."""
    found = _MARK.search(text)
    return float(found.group(1)) if found else score_of(key)


def _criterion_text(prompt: str, key: str) -> str:
    """convoeval's rubric prompt lists each criterion as `- KEY: text` (labels may follow KEY),
    and its score ranges on the lines below it."""
    found = re.search(rf"^- {re.escape(key)}\b[^:\n]*: (.*(?:\n(?!- ).*)*)", prompt, re.M)
    return _LABELS.sub("", found.group(1)) if found else key


def _fill(schema: Body, prompt: str) -> Body:
    """An answer to convoeval's rubric schema: one object per criterion key."""
    answer: Body = {}
    for key, prop in schema.get("properties", {}).items():
        if prop.get("type") == "object":
            text = _criterion_text(prompt, key)
            item: Body = {}
            for field, kind in prop.get("properties", {}).items():
                if kind.get("type") == "boolean":
                    item[field] = satisfied(text.splitlines()[0] if text else text)
                elif kind.get("type") in ("integer", "number"):
                    item[field] = round(10 * _scored(key, text))
                else:
                    item[field] = "scripted"
            answer[key] = item
        else:
            answer[key] = "scripted"
    return answer


def _completion(body: Body, text: str) -> Body:
    return {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": 0,
        "model": body.get("model", "loopback"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _chunks(body: Body, text: str) -> list[Body]:
    base = {"id": "chatcmpl-loopback", "object": "chat.completion.chunk", "created": 0, "model": body.get("model")}
    first = {**base, "choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": None}]}
    last = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    usage = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
    return [first, {**last, "usage": usage}]


class LoopbackServer:
    """A threaded chat-completions server on 127.0.0.1 answering from `Replies`."""

    def __init__(self, replies: Replies, log: Path | None = None):
        self.replies = replies
        self.requests: list[Body] = []
        self.targets: list[list[dict[str, str]]] = []  # the messages of each target request
        self.log = log
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def answer(self, body: Body) -> str:
        with self._lock:
            self.requests.append(body)
            if self.log:
                with self.log.open("a") as out:
                    out.write(json.dumps(body) + "\n")
            judged = self.replies.judge(body)
            if judged is not None:
                return judged
            self.targets.append(
                [{"role": m.get("role"), "content": _text(m.get("content"))} for m in body.get("messages", [])]
            )
            return self.replies.target(body)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                text = server.answer(body)
                if body.get("stream"):
                    self.send_response(200)
                    self.send_header("Content-Type", "text/event-stream")
                    self.send_header("Connection", "close")
                    self.end_headers()
                    for chunk in _chunks(body, text):
                        self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                    self.wfile.write(b"data: [DONE]\n\n")
                    self.close_connection = True
                    return
                data = json.dumps(_completion(body, text)).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def main(argv: list[str]) -> None:
    rules = json.loads(Path(argv[0]).read_text()) if argv else []
    log = os.environ.get("AGENTV_LOOPBACK_LOG")
    with LoopbackServer(Replies(rules), Path(log) if log else None) as server:
        print("PORT", server.base_url.split(":")[2].split("/")[0], flush=True)
        threading.Event().wait()


if __name__ == "__main__":
    main(sys.argv[1:])
