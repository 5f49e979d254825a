"""Helpers for the judging tests: judge answers built from the schema a request carries,
grading contexts, and a judge wrapper that records the ChatRequests it forwards."""

from __future__ import annotations

import json
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from convoeval.graders import GradeContext
from convoeval.results import Message, Usage
from convoeval.targets import ChatReply, ChatRequest, Target, TargetConfig, create_target
from convoeval.testing import FakeOpenAIServer, assertion, grade_context

Body = dict[str, Any]


@pytest.fixture(scope="module")
def shared_server() -> Iterator[FakeOpenAIServer]:
    """One fake server per test module (stopping one takes half a second)."""
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def server(shared_server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The module's fake server, reset: default judge and replies, no requests, no faults."""
    return shared_server.reset()


@pytest.fixture
async def judge(server: FakeOpenAIServer) -> AsyncIterator[Target]:
    """A real OpenAI-compatible judge target talking to the fake server (no retries)."""
    target = create_target(
        TargetConfig(name="judge", provider="openai", model="fake-judge", base_url=server.base_url, max_retries=0)
    )
    yield target
    await target.aclose()


def schema_of(body: Body) -> dict[str, Any]:
    return body["response_format"]["json_schema"]["schema"]


def prompt_of(body: Body) -> str:
    """The user message of a judge request (the first one: re-asks append more)."""
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def _leaf(props: dict[str, Any], value: Any, reason: str) -> dict[str, Any]:
    reason_key = next(k for k in props if k in ("reasoning", "justification"))
    if "satisfied" in props:
        return {reason_key: reason, "satisfied": bool(value)}
    score = props["score"]
    if value is True:
        value = score["maximum"]
    elif value is False:
        value = score["minimum"]
    return {reason_key: reason, "score": value}


def answer(
    schema: dict[str, Any], values: dict[str, Any] | None = None, default: Any = True, reason: str = "because"
) -> dict[str, Any]:
    """A valid answer to `schema`: `values[key]` per key (True/False, or a score), else
    `default`; for a flat `{reasoning, score}` schema use the key ''."""
    values = values or {}
    props = schema["properties"]
    if "score" in props or "satisfied" in props:
        return _leaf(props, values.get("", default), reason)
    return {k: _leaf(sub["properties"], values.get(k, default), f"{reason} {k}") for k, sub in props.items()}


def judge_with(
    values: dict[str, Any] | None = None, default: Any = True, reason: str = "because"
) -> Callable[[Body], str]:
    """A FakeOpenAIServer judge callable answering every request with `answer(...)`."""
    return lambda body: json.dumps(answer(schema_of(body), values, default, reason))


def scripted_judge(*answers: str | Callable[[Body], str]) -> Callable[[Body], str]:
    """Answers the n-th judge request with the n-th item (text, or a callable of the body);
    the last one repeats."""
    lock = threading.Lock()
    calls = {"n": 0}

    def judge(body: Body) -> str:
        with lock:
            n = calls["n"]
            calls["n"] += 1
        item = answers[min(n, len(answers) - 1)]
        return item(body) if callable(item) else item

    return judge


def fake_usage(bodies: list[Body], replies: list[str]) -> Usage:
    """The usage FakeOpenAIServer reports for these requests and replies (words)."""
    prompt = sum(len(str(m.get("content", "")).split()) for b in bodies for m in b["messages"])
    completion = sum(len(r.split()) for r in replies)
    return Usage(input_tokens=prompt, output_tokens=completion)


class RecordingJudge:
    """Forwards to a real judge target and keeps the ChatRequests (to check trial, purpose)."""

    def __init__(self, inner: Target):
        self.inner = inner
        self.name = inner.name
        self.requests: list[ChatRequest] = []

    async def chat(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        return await self.inner.chat(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


make = assertion


HISTORY = [
    Message(role="system", content="You are a concise math tutor.", source="input"),
    Message(role="user", content="What is 15% of 200?", source="user", turn=1),
    Message(role="assistant", content="15% of 200 is 30.", source="target", turn=1),
    Message(role="user", content="Now double that result.", source="user", turn=2),
]
REPLY = "Double 30 is 60."


def turn_ctx(
    judge: Target | None, output: str = REPLY, history: list[Message] | None = None, **kwargs: Any
) -> GradeContext:
    history = list(HISTORY if history is None else history)
    defaults: dict[str, Any] = dict(turn=2, judge=judge, base_dir=Path.cwd(), test_id="t", trial=0)
    defaults.update(kwargs)
    return grade_context(output, history=history, **defaults)


def conversation_ctx(judge: Target | None, transcript: list[Message] | None = None, **kwargs: Any) -> GradeContext:
    transcript = list(
        transcript
        if transcript is not None
        else [*HISTORY, Message(role="assistant", content=REPLY, source="target", turn=2)]
    )
    defaults: dict[str, Any] = dict(judge=judge, base_dir=Path.cwd(), test_id="t", trial=0)
    defaults.update(kwargs)
    return grade_context(level="conversation", transcript=transcript, **defaults)
