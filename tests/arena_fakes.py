"""Helpers for the arena tests: a small support suite, three scripted bots, and pairwise judges
for FakeOpenAIServer that read the two conversations out of the prompt."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from convoeval.testing import FakeOpenAIServer, default_judge

Body = dict[str, Any]

SUITE = """\
name: desk
input:
  - role: system
    content: You are the support assistant of a shop.
policy:
  rules:
    - Ask for the order number first.
tests:
  - id: late-order
    mode: conversation
    criteria: The user learns when the late order arrives.
    turns:
      - input: My order is late.
        assertions: [{type: icontains, value: order number}]
      - input: It is NW-1.
        context: {order: NW-1, arrives: Thursday}
        assertions: [{type: icontains, value: thursday}]
  - id: refund
    mode: conversation
    criteria: The user learns how to return an item.
    turns:
      - input: I want to return a jacket.
        assertions: [{type: icontains, value: label}]
      - input: When is the refund paid?
        assertions: [{type: icontains, value: arrives}]
  - id: address
    mode: conversation
    turns:
      - input: Can I change my address?
        assertions: [{type: icontains, value: order number}]
      - input: To 5 Elm Street.
        assertions: [{type: icontains, value: 5 Elm Street}]
"""

TARGETS = """\
targets:
  - name: polite
    provider: scripted
    rules:
      - {{match: "late", reply: "POLITE: sorry! What is your order number?"}}
      - {{match: "NW-1", reply: "POLITE: it arrives on Thursday."}}
      - {{match: "return", reply: "POLITE: print the return label from your account."}}
      - {{match: "refund", reply: "POLITE: we pay it once the jacket arrives."}}
      - {{match: "change my address", reply: "POLITE: yes; your order number, please?"}}
      - {{match: "Elm", reply: "POLITE: done, it goes to 5 Elm Street."}}
  - name: middle
    provider: scripted
    rules:
      - {{match: "late", reply: "MIDDLE: give me the order number."}}
      - {{match: "return", reply: "MIDDLE: use the label."}}
    default: "MIDDLE: ok."
  - name: terse
    provider: scripted
    default: "TERSE: no."
  - name: judge
    provider: openai
    model: fake-judge
    base_url: {base_url}
    api_key: dummy-key
    max_retries: 0
  - name: judge-b
    provider: openai
    model: fake-judge-b
    base_url: {base_url}
    api_key: dummy-key
    max_retries: 0
"""

RANK = {"POLITE": 3, "MIDDLE": 2, "TERSE": 1}
_SECTION = re.compile(r"Conversation ([AB]):\n<<<\n(.*?)\n>>>", re.DOTALL)


def is_pairwise(body: Body) -> bool:
    return body.get("response_format", {}).get("json_schema", {}).get("name") == "pairwise"


def prompt_of(body: Body) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def conversations(body: Body) -> dict[str, str]:
    """{"A": text, "B": text} of a pairwise request."""
    return dict(_SECTION.findall(prompt_of(body)))


def bot_of(text: str) -> str:
    return next(name for name in RANK if f"{name}:" in text)


def shown(body: Body) -> tuple[str, str]:
    """Which bots were shown as A and as B."""
    found = conversations(body)
    return bot_of(found["A"]), bot_of(found["B"])


def which_test(body: Body) -> str:
    match = re.search(r"the same test \(([^)]+)\)", prompt_of(body))
    assert match, prompt_of(body)[:300]
    return match.group(1)


def fair_winner(body: Body) -> str:
    a, b = shown(body)
    return "A" if RANK[a] > RANK[b] else "B" if RANK[b] > RANK[a] else "EQUAL"


def pairwise_judge(
    decide: Callable[[Body], str] = fair_winner, other: Callable[[Body], str] = default_judge
) -> Callable[[Body], str]:
    """A FakeOpenAIServer judge: pairwise requests get `{"reasoning", "winner": decide(body)}`
    (any label, even an invalid one; `RAW:text` sends text as the whole answer), others
    `other(body)`."""

    def judge(body: Body) -> str:
        if not is_pairwise(body):
            return other(body)
        decision = decide(body)
        if decision.startswith("RAW:"):
            return decision[len("RAW:") :]
        return json.dumps({"reasoning": f"compared {shown(body)}", "winner": decision})

    return judge


@pytest.fixture(scope="module")
def arena_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        yield fake


@pytest.fixture
def judge_server(arena_server: FakeOpenAIServer) -> FakeOpenAIServer:
    """The module's fake server, reset; its judge answers pairwise requests fairly."""
    return arena_server.reset(judge=pairwise_judge())


@pytest.fixture
def desk(tmp_path: Path, judge_server: FakeOpenAIServer) -> Path:
    """The suite file, with targets.yaml (bots and judges) next to it."""
    (tmp_path / "targets.yaml").write_text(TARGETS.format(base_url=judge_server.base_url))
    suite = tmp_path / "desk.eval.yaml"
    suite.write_text(SUITE)
    return suite


class Counter:
    """Thread-safe call counter (the fake server answers on several threads)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.n = 0

    def next(self) -> int:
        with self.lock:
            self.n += 1
            return self.n
