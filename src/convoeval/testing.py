"""Test helpers: `assert_conversation` for Python tests of eval files; `assertion`,
`grade_context` and `grade` for unit tests of a grader; and a loopback fake OpenAI-compatible
server, for tests and benchmarks.

It answers `/v1/chat/completions` (and Anthropic's `/v1/messages`) from Python callables, records every request it received,
and can be told to misbehave (status codes, `Retry-After`, delays, non-JSON bodies).

Example:
    with FakeOpenAIServer(reply=lambda body: "Paris.") as server:
        os.environ["OPENAI_BASE_URL"] = server.base_url
        ...
        assert server.requests[0]["messages"][-1]["content"] == "Capital of France?"
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from ._sync import run_sync
from .api import SuiteData, run
from .errors import ConfigError, field_problems, suggest
from .graders import Assertion, GradeContext, assertion_type_names, lookup_assertion_type
from .report import failure_lines
from .results import EvaluationResult, GraderScore, Message
from .targets import ChatReply

Body = dict[str, Any]


@dataclass
class Fault:
    """One scripted misbehaviour, used for the next matching request.

    Args:
        status: HTTP status to answer (e.g. 429, 500).
        body: raw body to send instead of a completion (e.g. "not json").
        headers: extra response headers (e.g. {"Retry-After": "1"}).
        delay_s: wait before answering (a client timeout shorter than this fails the call).
        purpose: only for requests of this kind: "target" (no response_format) or "judge".
        match: only for requests whose last message contains this text.
        times: how many requests it applies to before it is used up.
    """

    status: int = 200
    body: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    purpose: str | None = None
    match: str | None = None
    times: int = 1


def echo_reply(body: Body) -> str:
    """The default target behaviour: a reply naming the last user message."""
    users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
    return f"Reply to: {users[-1] if users else ''}"


def tool_calls(*calls: tuple[str, Mapping[str, object]]) -> Body:
    """A target reply that calls tools instead of answering: return it from a `reply` function.

    Example:
        server.reset(reply=lambda body: tool_calls(("read_file", {"path": "app.py"})))
    """
    wire = [
        {"id": f"call_{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        for i, (name, args) in enumerate(calls)
    ]
    return {"content": None, "tool_calls": wire}


def schema_instance(schema: dict[str, Any], *, satisfied: bool = True) -> Any:
    """A value that satisfies a JSON Schema: booleans `satisfied`, numbers at their maximum
    (or minimum when not satisfied), strings short. The default judge behaviour."""
    kind = schema.get("type")
    if "enum" in schema:
        return schema["enum"][0]
    if kind == "object" or "properties" in schema:
        return {k: schema_instance(v, satisfied=satisfied) for k, v in schema.get("properties", {}).items()}
    if kind == "array":
        return [schema_instance(schema.get("items", {}), satisfied=satisfied)]
    if kind == "boolean":
        return satisfied
    if kind in ("integer", "number"):
        value = schema.get("maximum", 10) if satisfied else schema.get("minimum", 0)
        return int(value) if kind == "integer" else float(value)
    return "looks right" if satisfied else "does not hold"


def default_judge(body: Body) -> str:
    """The default answer to a structured call: the schema's satisfied instance; a simulated
    user (`user_step`) asks for help and goes on until its `max_turns`."""
    format_ = (body.get("response_format") or {}).get("json_schema", {})
    if format_.get("name") == "user_step":
        return json.dumps(
            {"message": "Could you help me with my request, please?", "stop": False, "stop_reason": "none"}
        )
    return json.dumps(schema_instance(format_.get("schema", {})))


class FakeOpenAIServer:
    """A threaded HTTP server on 127.0.0.1 speaking the chat-completions protocol."""

    def __init__(
        self,
        reply: Callable[[Body], str | Body] = echo_reply,
        judge: Callable[[Body], str] = default_judge,
        latency_s: float = 0.0,
    ):
        self.reply = reply
        self.judge = judge
        self.latency_s = latency_s
        self.requests: list[Body] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []  # the request paths, in order (e.g. an Azure deployment URL)
        self.faults: deque[Fault] = deque()
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}/v1"

    def reset(
        self, reply: Callable[[Body], str | Body] = echo_reply, judge: Callable[[Body], str] = default_judge
    ) -> FakeOpenAIServer:
        """Forget requests and faults and answer with `reply` and `judge` (reuse across tests)."""
        with self._lock:
            self.requests.clear()
            self.headers.clear()
            self.paths.clear()
            self.faults.clear()
            self.max_in_flight = 0
        self.reply, self.judge = reply, judge
        return self

    def target_requests(self) -> list[Body]:
        """Requests sent by targets (no structured output asked)."""
        return [r for r in self.requests if "response_format" not in r]

    def judge_requests(self) -> list[Body]:
        """Requests sent by judges (structured output asked)."""
        return [r for r in self.requests if "response_format" in r]

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _take_fault(self, body: Body, purpose: str) -> Fault | None:
        messages = body.get("messages") or [{}]
        last = str(messages[-1].get("content", ""))
        with self._lock:
            for fault in self.faults:
                if fault.purpose in (None, purpose) and (fault.match is None or fault.match in last):
                    fault.times -= 1
                    if fault.times <= 0:
                        self.faults.remove(fault)
                    return fault
        return None

    def _handle(self, body: Body, headers: dict[str, str]) -> tuple[int, str, dict[str, str], float]:
        if "tools" in body and body.get("tool_choice", {}).get("type") == "tool":  # Anthropic structured
            body = {**body, "response_format": {"json_schema": {"schema": body["tools"][0]["input_schema"]}}}
        with self._lock:
            self.requests.append(body)
            self.headers.append(headers)
        purpose = "judge" if "response_format" in body else "target"
        fault = self._take_fault(body, purpose)
        delay = self.latency_s + (fault.delay_s if fault else 0.0)
        if fault and (fault.status != 200 or fault.body is not None):
            text = fault.body if fault.body is not None else json.dumps({"error": {"message": f"fake {fault.status}"}})
            return fault.status, text, fault.headers, delay
        answer = self.judge(body) if purpose == "judge" else self.reply(body)
        message = (
            {"role": "assistant", **answer} if isinstance(answer, dict) else {"role": "assistant", "content": answer}
        )
        words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        out = len(json.dumps(answer).split()) if isinstance(answer, dict) else len(answer.split())
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        completion = {
            "id": f"fake-{len(self.requests)}",
            "object": "chat.completion",
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": finish, "message": message}],
            "usage": {"prompt_tokens": words, "completion_tokens": out, "total_tokens": words + out},
        }
        return 200, json.dumps(completion), fault.headers if fault else {}, delay

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except json.JSONDecodeError:
                    self._send(400, '{"error": "bad json"}', {})
                    return
                with server._lock:
                    server.paths.append(self.path)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    status, text, headers, delay = server._handle(body, dict(self.headers.items()))
                    if status == 200 and self.path.rstrip("/").endswith("/messages"):
                        text = _as_anthropic(text, body)
                    if delay:
                        time.sleep(delay)
                finally:
                    # Out of flight before the answer leaves: a client that gets it and sends
                    # its next request at once is never counted twice.
                    with server._lock:
                        server.in_flight -= 1
                self._send(status, text, headers)

            def _send(self, status: int, text: str, headers: dict[str, str]) -> None:
                data = text.encode()
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (timeout test)

            def log_message(self, *args: object) -> None:
                return None

        return Handler


def _as_anthropic(openai_text: str, request: Body) -> str:
    """Serve the same completion in the shape of Anthropic's Messages API (a forced tool call
    answers with a `tool_use` block, as Anthropic does)."""
    completion = json.loads(openai_text)
    content = completion["choices"][0]["message"]["content"]
    usage = completion["usage"]
    block: dict[str, object] = {"type": "text", "text": content}
    if request.get("tool_choice", {}).get("type") == "tool":
        block = {
            "type": "tool_use",
            "id": "toolu_fake",
            "name": request["tool_choice"]["name"],
            "input": json.loads(content),
        }
    return json.dumps(
        {
            "id": completion["id"],
            "type": "message",
            "role": "assistant",
            "model": completion["model"],
            "content": [block],
            "stop_reason": "end_turn",
            "usage": {"input_tokens": usage["prompt_tokens"], "output_tokens": usage["completion_tokens"]},
        }
    )


def assert_conversation(
    path: str | Path | SuiteData, *, test_id: str | None = None, target: Any = None, judge: Any = None, **options: Any
) -> list[EvaluationResult]:
    """Run an eval file and fail, listing the failed turns and checks, unless every test passed.

    Args:
        path: the eval file (or a suite as data, as `convoeval.run` takes it).
        test_id: check only this test (the file still runs whole).
        target, judge, options: as for `convoeval.run`.

    Returns:
        The results checked.

    Example:
        def test_travel_planning():
            assert_conversation("examples/travel-planning.eval.yaml", target="openai:gpt-4o-mini")
    """
    results = [
        r for r in run(path, target=target, judge=judge, **options).results if test_id is None or r.test_id == test_id
    ]
    if not results:
        where = f"suite {path.get('name') or ''}".rstrip() if isinstance(path, Mapping) else path
        raise AssertionError(f"{where}: no test {test_id!r}" if test_id else f"{where}: no tests")
    failed = [r for r in results if r.verdict != "pass"]
    if failed:
        raise AssertionError("\n".join(line for r in failed for line in failure_lines(r)))
    return results


def assertion(data: Mapping[str, object] | str | Assertion) -> Assertion:
    """An assertion from its YAML mapping, validated as the eval-file loader does.

    A plain string is a rubric criterion, as in YAML.

    Raises:
        ConfigError: the type is not registered (a built-in missing from the index, a plugin
            not loaded), or a field is missing or wrong (`contains: value: Field required`).
    """
    if isinstance(data, Assertion):
        return data
    if isinstance(data, str):
        data = {"type": "rubrics", "criteria": [data]}
    if not isinstance(data, Mapping):
        raise ConfigError("an assertion is a string (a rubric criterion) or a mapping with a `type`")
    name = str(data.get("type", ""))
    cls = lookup_assertion_type(name)
    if cls is None:
        raise ConfigError(f"unknown assertion type {name!r}{suggest(name, assertion_type_names())}")
    try:
        return cls.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"{name}: " + "; ".join(map(str, field_problems(exc)))) from None


def grade_context(
    output: str = "",
    *,
    level: Literal["turn", "conversation"] = "turn",
    history: list[Message] | str | None = None,
    transcript: list[Message] | None = None,
    reply: ChatReply | None = None,
    turn: int = 1,
    **fields: Any,
) -> GradeContext:
    """What a grader sees, for a grader's unit test, as the run would build it.

    Args:
        output: the reply graded (at conversation level: default, every target message joined).
        level: `turn` or `conversation`.
        history: the messages before the reply (`{{ input }}`), or one user message's text.
            Default: one user message `Hello`.
        transcript: the whole transcript; default `history` plus the reply.
        reply: the target's reply object; default one with `output` as its text (turn level).
        fields: any other `GradeContext` field (`judge`, `variables`, `expected_output`...).

    Example:
        score = grade({"type": "contains", "value": "Paris"}, grade_context("Paris it is."))
        assert score.verdict == "pass"
    """
    if history is None:
        history = "Hello"
    if isinstance(history, str):
        history = [Message(role="user", content=history, source="user", turn=turn)]
    if level == "conversation":
        transcript = list(history if transcript is None else transcript)
        if not output:
            output = "\n\n".join(m.content for m in transcript if m.source == "target")
        return GradeContext(level=level, output=output, history=transcript, transcript=transcript, **fields)
    if transcript is None:
        transcript = [*history, Message(role="assistant", content=output, source="target", turn=turn)]
    return GradeContext(
        level=level,
        output=output,
        history=list(history),
        transcript=transcript,
        reply=reply if reply is not None else ChatReply(text=output),
        turn=turn,
        **fields,
    )


async def agrade(
    check: Mapping[str, object] | str | Assertion, ctx: GradeContext | None = None, **context: Any
) -> GraderScore:
    """Grade with one assertion as a run does (errors, `negate`, `min_score`, `required`
    applied): on `ctx`, else on `grade_context(**context)`."""
    return await assertion(check).evaluate(ctx if ctx is not None else grade_context(**context))


def grade(
    check: Mapping[str, object] | str | Assertion, ctx: GradeContext | None = None, **context: Any
) -> GraderScore:
    """`agrade` from synchronous code (inside a running event loop, `await agrade` does not block it).

    Example:
        assert grade({"type": "regex", "value": r"\\d+"}, output="42").verdict == "pass"
    """
    return run_sync(agrade(check, ctx, **context))
