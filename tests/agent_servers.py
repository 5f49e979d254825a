"""Loopback fake model servers for the real agent CLIs: the Anthropic Messages API (Claude Code)
and the OpenAI Responses API (Codex), both streaming server-sent events, with tool calls.

Replies follow `Rule`s matched on the newest user text of a request: a rule may first call one
tool (the CLI runs it and sends the result back), then answer with its text. Every request is
recorded (path, headers, JSON body) with the usage the server reported for it, so a test can
compare the figures the CLI and convoeval report with what the model really said. `faults`
are consumed one per model request: `"401"` (every later request too), `"500"` (one server
error: the CLI retries), `"cut"` (the stream stops mid-text), `"hang"` (no answer until the
server closes), `"ok"` (none: answered as usual, e.g. before a later fault).
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = dict[str, Any]


@dataclass
class Rule:
    """How to answer a user message matching `match` (a regex).

    `tool` is `(name, arguments)` called once before the answer, with `said` (if any) as the
    text of the same model message; `text` may quote the tool's output with `{output}` and the
    user's text with `{user}`.
    """

    match: str
    text: str
    tool: tuple[str, dict[str, Any]] | None = None
    said: str = ""


@dataclass
class Recorded:
    """One request the server received."""

    path: str
    headers: dict[str, str]
    body: Body
    usage: dict[str, int] = field(default_factory=dict)
    fault: str | None = None

    @property
    def is_model_call(self) -> bool:
        return self.path.split("?")[0].endswith(("/messages", "/responses"))


@dataclass
class Answer:
    """What one model call answers: text, or a tool call."""

    text: str = ""
    tool: tuple[str, dict[str, Any]] | None = None
    usage: dict[str, int] = field(default_factory=dict)


class FakeModelServer:
    """A threaded loopback server; subclasses write the wire format."""

    usage_in = 100
    usage_out = 20
    #: Input tokens of every call the API reports as read from the prompt cache.
    usage_cached = 0
    #: Whether a request without `stream: true` gets one JSON answer (`message`), as the real API gives.
    answers_plain = False

    def __init__(self, rules: list[Rule] | None = None, faults: list[str] | None = None):
        self.rules = list(rules or [])
        self.faults: deque[str] = deque(faults or [])
        self.requests: list[Recorded] = []
        self.unauthorized = False
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._calls = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                server._handle(self)

            def do_GET(self) -> None:
                self._empty(404)

            def do_HEAD(self) -> None:
                self._empty(404)

            def _empty(self, status: int) -> None:
                self.send_response(status)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                return None

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> FakeModelServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closing.set()
        self.httpd.shutdown()
        self.httpd.server_close()

    @property
    def model_calls(self) -> list[Recorded]:
        return [r for r in self.requests if r.is_model_call]

    # The request cycle -------------------------------------------------------------------

    def _handle(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("content-length") or 0)
        raw = handler.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        record = Recorded(handler.path, {k.lower(): v for k, v in handler.headers.items()}, body)
        with self._lock:
            self.requests.append(record)
            if not record.is_model_call:
                fault = "404"
            elif self.unauthorized:
                fault = "401"
            else:
                fault = self.faults.popleft() if self.faults and self.takes_fault(body) else None
                self.unauthorized = fault == "401"
                self._calls += fault in (None, "ok")
            record.fault = fault
            count = self._calls
        if fault in ("404", "401", "500"):
            self._error(handler, int(fault))
        elif fault == "hang":
            self._closing.wait()
            handler.close_connection = True
        else:
            answer = self.answer(body)
            answer.usage = self.usage_of(count)
            record.usage = answer.usage
            if body.get("stream") is True or not self.answers_plain:
                self._stream(handler, answer, cut=fault == "cut")
            else:
                self._plain(handler, answer, cut=fault == "cut")

    def takes_fault(self, body: Body) -> bool:
        """Whether a request may receive a scripted fault (side requests never do)."""
        return True

    def usage_of(self, count: int) -> dict[str, int]:
        """Distinct figures for every call, so sums and deltas can be told apart."""
        return {"input": self.usage_in + count, "output": self.usage_out + count}

    def answer(self, body: Body) -> Answer:
        """Call the rule's tool when its output is not in the conversation yet, else answer."""
        user, tool_output = self.last_user_text(body), self.tool_output(body)
        rule = next((r for r in self.rules if re.search(r.match, user)), None)
        if rule is None:
            return Answer(text=f"echo: {user}")
        if rule.tool is not None and tool_output is None:
            return Answer(text=rule.said, tool=rule.tool)
        return Answer(text=rule.text.replace("{output}", (tool_output or "").strip()).replace("{user}", user))

    def _stream(self, handler: BaseHTTPRequestHandler, answer: Answer, cut: bool) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.send_header("cache-control", "no-cache")
        handler.send_header("connection", "close")
        handler.end_headers()
        handler.close_connection = True
        events = self.events(answer)
        if cut:  # the connection drops in the middle of the text
            events = events[: max(1, len(events) // 2)]
        for name, data in events:
            handler.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            handler.wfile.flush()

    def _plain(self, handler: BaseHTTPRequestHandler, answer: Answer, cut: bool) -> None:
        """One JSON answer; `cut`: the connection drops in the middle of it."""
        payload = json.dumps(self.message(answer)).encode()
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.close_connection = True
        handler.wfile.write(payload[: len(payload) // 2] if cut else payload)
        handler.wfile.flush()

    def _error(self, handler: BaseHTTPRequestHandler, status: int) -> None:
        payload = json.dumps(self.error_body(status)).encode()
        handler.send_response(status)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        handler.wfile.write(payload)

    # The wire format ---------------------------------------------------------------------

    def last_user_text(self, body: Body) -> str:
        raise NotImplementedError

    def tool_output(self, body: Body) -> str | None:
        raise NotImplementedError

    def events(self, answer: Answer) -> list[tuple[str, Body]]:
        raise NotImplementedError

    def message(self, answer: Answer) -> Body:
        raise NotImplementedError

    def error_body(self, status: int) -> Body:
        raise NotImplementedError


def _texts(content: Any, kinds: tuple[str, ...]) -> list[str]:
    if isinstance(content, str):
        return [content]
    return [str(b.get("text", "")) for b in content or [] if isinstance(b, dict) and b.get("type") in kinds]


def _reminder(text: str) -> bool:
    """A reminder Claude Code adds to a user message (not what the user said); one that tells of a
    background command's end (`<task-notification>`) is the message of a turn of its own."""
    return text.startswith("<system-reminder>") and "<task-notification>" not in text


class FakeAnthropic(FakeModelServer):
    """The Messages API (`POST /v1/messages`, `stream: true`) as Claude Code calls it.

    Claude Code also asks the model for a session title (a request with a JSON `output_config`
    format); those are answered with a title, and never receive faults. A request without
    `stream: true` (Claude Code's non-streaming retry of a broken stream) gets one JSON message.
    """

    answers_plain = True

    def takes_fault(self, body: Body) -> bool:
        return not self.is_side_request(body)

    @staticmethod
    def is_side_request(body: Body) -> bool:
        return bool((body.get("output_config") or {}).get("format")) or not body.get("tools")

    def answer(self, body: Body) -> Answer:
        if self.is_side_request(body):
            return Answer(text=json.dumps({"title": "Fake session"}))
        return super().answer(body)

    def last_user_text(self, body: Body) -> str:
        for message in reversed(body.get("messages") or []):
            if message.get("role") != "user":
                continue
            texts = [t for t in _texts(message.get("content"), ("text",)) if not _reminder(t)]
            if texts:
                return texts[-1]
        return ""

    def tool_output(self, body: Body) -> str | None:
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        content = last.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                return "\n".join(_texts(block.get("content"), ("text",)))
        return None

    def message(self, answer: Answer) -> Body:
        content: list[Body] = [{"type": "text", "text": answer.text}] if answer.text or answer.tool is None else []
        if answer.tool is not None:
            name, arguments = answer.tool
            content.append(
                {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": name, "input": arguments}
            )
        return {
            "id": f"msg_{uuid.uuid4().hex[:12]}",
            "type": "message",
            "role": "assistant",
            "model": "claude-fake-1",
            "content": content,
            "stop_reason": "end_turn" if answer.tool is None else "tool_use",
            "stop_sequence": None,
            "usage": {**self.input_usage(answer), "output_tokens": answer.usage["output"]},
        }

    def input_usage(self, answer: Answer) -> Body:
        """The input of an Anthropic `usage`: `input_tokens` leaves out what was read from the cache."""
        cached = min(self.usage_cached, answer.usage["input"])
        return {"input_tokens": answer.usage["input"] - cached, "cache_read_input_tokens": cached}

    def events(self, answer: Answer) -> list[tuple[str, Body]]:
        usage = answer.usage
        start = {
            "type": "message_start",
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "type": "message",
                "role": "assistant",
                "model": "claude-fake-1",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {**self.input_usage(answer), "output_tokens": 1},
            },
        }
        events: list[tuple[str, Body]] = [("message_start", start)]
        blocks: list[tuple[Body, list[Body]]] = []  # each content block, with its deltas
        if answer.text or answer.tool is None:
            pieces = re.findall(r"\S+\s*", answer.text)
            blocks.append(({"type": "text", "text": ""}, [{"type": "text_delta", "text": p} for p in pieces]))
        if answer.tool is not None:
            name, arguments = answer.tool
            block = {"type": "tool_use", "id": f"toolu_{uuid.uuid4().hex[:12]}", "name": name, "input": {}}
            blocks.append((block, [{"type": "input_json_delta", "partial_json": json.dumps(arguments)}]))
        for index, (block, deltas) in enumerate(blocks):
            start_block = {"type": "content_block_start", "index": index, "content_block": block}
            events.append(("content_block_start", start_block))
            for delta in deltas:
                events.append(("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}))
            events.append(("content_block_stop", {"type": "content_block_stop", "index": index}))
        end = {"stop_reason": "end_turn" if answer.tool is None else "tool_use", "stop_sequence": None}
        events.append(
            ("message_delta", {"type": "message_delta", "delta": end, "usage": {"output_tokens": usage["output"]}})
        )
        events.append(("message_stop", {"type": "message_stop"}))
        return events

    def error_body(self, status: int) -> Body:
        kinds = {401: ("authentication_error", "invalid x-api-key"), 500: ("api_error", "Internal server error")}
        kind, message = kinds.get(status, ("not_found_error", "not found"))
        return {"type": "error", "error": {"type": kind, "message": message}}

    def system_text(self, record: Recorded) -> str:
        """All the system prompt of a request, as one text."""
        system = record.body.get("system")
        return "\n".join(_texts(system, ("text",))) if isinstance(system, list) else str(system or "")


class FakeResponses(FakeModelServer):
    """The Responses API (`POST /v1/responses`, `stream: true`) as Codex calls it."""

    #: Input tokens of every call the API reports as written to the prompt cache.
    usage_cache_written = 0

    def last_user_text(self, body: Body) -> str:
        for item in reversed(body.get("input") or []):
            if item.get("type", "message") == "message" and item.get("role") == "user":
                texts = [t for t in _texts(item.get("content"), ("input_text",)) if not t.startswith("<")]
                if texts:
                    return texts[-1]
        return ""

    def tool_output(self, body: Body) -> str | None:
        items = body.get("input") or []
        last = items[-1] if items else {}
        if last.get("type") in ("function_call_output", "custom_tool_call_output"):
            output = last.get("output")
            return output if isinstance(output, str) else json.dumps(output)
        return None

    def events(self, answer: Answer) -> list[tuple[str, Body]]:
        response_id = f"resp_{uuid.uuid4().hex[:12]}"
        events: list[tuple[str, Body]] = [
            ("response.created", {"type": "response.created", "response": {"id": response_id}})
        ]
        index = 0
        if answer.text or answer.tool is None:
            item: Body = {
                "type": "message",
                "id": f"msg_{uuid.uuid4().hex[:12]}",
                "role": "assistant",
                "content": [{"type": "output_text", "text": answer.text, "annotations": []}],
            }
            added = {"type": "response.output_item.added", "output_index": index, "item": {**item, "content": []}}
            events.append(("response.output_item.added", added))
            for piece in re.findall(r"\S+\s*", answer.text):
                delta = {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": piece,
                }
                events.append(("response.output_text.delta", delta))
            done_item = {"type": "response.output_item.done", "output_index": index, "item": item}
            events.append(("response.output_item.done", done_item))
            index += 1
        if answer.tool is not None:
            name, arguments = answer.tool
            item = {
                "type": "function_call",
                "id": f"fc_{uuid.uuid4().hex[:12]}",
                "call_id": f"call_{uuid.uuid4().hex[:12]}",
                "name": name,
                "arguments": json.dumps(arguments),
            }
            done_item = {"type": "response.output_item.done", "output_index": index, "item": item}
            events.append(("response.output_item.done", done_item))
        usage = {
            "input_tokens": answer.usage["input"],
            "input_tokens_details": {
                "cached_tokens": min(self.usage_cached, answer.usage["input"]),
                "cache_write_tokens": self.usage_cache_written,
            },
            "output_tokens": answer.usage["output"],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": answer.usage["input"] + answer.usage["output"],
        }
        done = {"type": "response.completed", "response": {"id": response_id, "usage": usage}}
        events.append(("response.completed", done))
        return events

    def instructions_text(self, record: Recorded) -> str:
        """The request's instructions and developer / system messages, as one text."""
        items = [i for i in record.body.get("input") or [] if i.get("role") in ("developer", "system")]
        texts = [t for i in items for t in _texts(i.get("content"), ("input_text",))]
        return "\n".join([str(record.body.get("instructions") or ""), *texts])

    def error_body(self, status: int) -> Body:
        messages = {401: "Incorrect API key provided", 500: "The server had an error"}
        return {"error": {"message": messages.get(status, "not found"), "type": "invalid_request_error", "code": None}}
