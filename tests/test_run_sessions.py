"""The loop's session protocol: resumed sessions, single-shot fallback, tool-call messages and
pluggable user-message sources, driven through `convoeval.run` with small in-test targets."""

from __future__ import annotations

from pathlib import Path

import convoeval
from convoeval.results import Message, ToolCall
from convoeval.run import Conversation, TrialContext, TurnPlan, plan_test, run_trial
from convoeval.spec import load_suite
from convoeval.targets import ChatReply, ChatRequest

from .conftest import write

THREE_TURNS = """\
tests:
  - id: three
    mode: conversation
    input:
      - role: system
        content: Be brief.
    turns:
      - input: one
        assertions: [{type: contains, value: "got one"}]
      - input: two
        assertions: [{type: contains, value: "got two"}]
      - input: three
        assertions: [{type: contains, value: "got three"}]
    assertions:
      - type: contains
        value: "three"
"""


class ResumingAgent:
    """Keeps its own history per session; answers with what it received."""

    name = "resuming"
    session = "resume"
    cacheable = False

    def __init__(self) -> None:
        self.requests: list[ChatRequest] = []
        self.sessions: dict[str, list[str]] = {}
        self.ended: list[str] = []

    async def chat(self, request: ChatRequest) -> ChatReply:
        self.requests.append(request)
        sid = request.session_id or f"s{len(self.sessions) + 1}"
        seen = self.sessions.setdefault(sid, [])
        seen += [m["content"] for m in request.messages if m["role"] == "user"]
        call = ToolCall(name="lookup", arguments={"q": seen[-1]}, output={"hits": len(seen)}, duration_ms=3.0)
        return ChatReply(text=f"got {seen[-1]} (after {len(seen)})", session_id=sid, tool_calls=[call])

    async def end_session(self, session_id: str) -> None:
        self.ended.append(session_id)

    async def aclose(self) -> None:
        pass


class OneShotAgent(ResumingAgent):
    name = "oneshot"
    session = "single_shot"


def test_resumed_session_gets_only_new_messages_and_the_session_id(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", THREE_TURNS)
    agent = ResumingAgent()
    report = convoeval.run(suite, target=agent, judge=agent, cache=False)
    result = report.results[0]
    first, second, third = agent.requests
    assert first.session_id is None and [m["role"] for m in first.messages] == ["system", "user"]
    assert second.session_id == "s1" and second.messages == [{"role": "user", "content": "two"}]
    assert third.messages == [{"role": "user", "content": "three"}]
    assert agent.ended == ["s1"]
    assert result.verdict == "pass" and result.session == "resumed" and result.fallback is None
    turns = [s for s in result.scores if s.type == "turn"]
    assert [t.session_id for t in turns] == ["s1", "s1", "s1"]
    assert turns[1].tool_calls[0].arguments == {"q": "two"}
    # Each tool call is a `source: tool` message before the reply it belongs to.
    sources = [(m.source, m.turn) for m in result.output if m.turn == 2]
    assert sources == [("user", 2), ("tool", 2), ("target", 2)]
    tool = next(m for m in result.output if m.source == "tool")
    assert tool.role == "tool" and tool.content == '{"hits": 1}' and tool.tool_calls[0].duration_ms == 3.0


def test_target_that_cannot_resume_falls_back_to_single_shot(tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", THREE_TURNS)
    agent = OneShotAgent()
    result = convoeval.run(suite, target=agent, judge=agent, cache=False).results[0]
    assert len(agent.requests) == 1
    prompt = agent.requests[0].messages[-1]["content"]
    assert prompt == "Turn 1: one\n\nTurn 2: two\n\nTurn 3: three"
    assert result.fallback == "single_shot" and result.session == "single_shot"
    turns = [s for s in result.scores if s.type == "turn"]
    assert [t.verdict for t in turns] == ["skip"] * 3 and all("single_shot" in (t.note or "") for t in turns)
    conversation = next(s for s in result.scores if s.type == "conversation")
    assert conversation.verdict == "pass" and result.verdict == "pass"


def test_single_shot_without_conversation_assertions_is_an_error_not_a_pass(tmp_path: Path) -> None:
    suite = write(
        tmp_path / "s.eval.yaml",
        THREE_TURNS.split('    assertions:\n      - type: contains\n        value: "three"')[0],
    )
    agent = OneShotAgent()
    result = convoeval.run(suite, target=agent, judge=agent, cache=False).results[0]
    assert result.verdict == "error" and "single_shot" in (result.error or "")


class Echo:
    name = "echo"

    async def chat(self, request: ChatRequest) -> ChatReply:
        return ChatReply(text=f"got {request.messages[-1]['content']}")

    async def aclose(self) -> None:
        pass


class TwoMadeUpTurns:
    """A user-message source that is not the script: it reads the conversation so far."""

    def __init__(self) -> None:
        self.seen: list[int] = []

    async def next_turn(self, convo: Conversation) -> TurnPlan | None:
        self.seen.append(len(convo.replies))
        if len(convo.replies) == 2:
            return None
        text = "hello" if not convo.replies else f"you said {convo.replies[-1].text!r}"
        return TurnPlan(messages=[Message(role="user", content=text, source="simulator")], assertions=[])

    def unsent(self) -> list[TurnPlan]:
        return []


async def test_a_custom_turn_source_drives_the_loop(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path / "s.eval.yaml", THREE_TURNS))
    plan = plan_test(suite, suite.tests[0])
    source = TwoMadeUpTurns()
    result = await run_trial(plan, TrialContext(target=Echo(), judge=None, turns=source))
    assert source.seen == [0, 1, 2]
    users = [m for m in result.output if m.role == "user"]
    assert [m.source for m in users] == ["simulator", "simulator"]
    assert users[1].content == "you said 'got hello'"
    assert [s.name for s in result.scores if s.type == "turn"] == ["turn-1", "turn-2"]
    assert result.session == "history"


def test_tool_calls_show_in_the_terminal_table(cli, tmp_path: Path) -> None:
    from rich.console import Console

    from convoeval.report import print_summary

    suite = write(tmp_path / "s.eval.yaml", THREE_TURNS)
    agent = ResumingAgent()
    results = list(convoeval.run(suite, target=agent, judge=agent, cache=False).results)
    console = Console(record=True, width=200)
    print_summary(results, console)
    text = console.export_text()
    assert 'tool lookup(q="two")' in text and 'tool lookup(q="three")' in text
