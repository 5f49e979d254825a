"""The trial as a pipeline of steps, and one RunEvents object from the API to the scheduler
(issue 25): a new trial feature is one TrialStep plus one line where the steps are chosen, and
everything a run tells reaches the object given to `convoeval.run(events=...)`."""

from __future__ import annotations

from pathlib import Path

import pytest

import convoeval
from convoeval.engine import RunMeter
from convoeval.errors import ConfigError
from convoeval.results import EvaluationResult, ScoreEntry, ToolCall, TrialResult, Usage
from convoeval.run import (
    BudgetStep,
    Conversation,
    GradedTurn,
    Job,
    TestPlan,
    TrialContext,
    TrialStep,
    plan_test,
    run_trial,
)
from convoeval.spec import load_suite
from convoeval.targets import ChatReply, ChatRequest

from .conftest import write

SUITE = """\
tests:
  - id: two
    mode: conversation
    turns:
      - input: one
        assertions: [{type: contains, value: "got one"}]
      - input: two
        assertions: [{type: contains, value: "got two"}]
"""


class Echo:
    name = "echo"
    cacheable = False

    async def chat(self, request: ChatRequest) -> ChatReply:
        return ChatReply(text=f"got {request.messages[-1]['content']}")

    async def aclose(self) -> None:
        pass


class WordCount(TrialStep):
    """A made-up feature: the replies' words, as an entry that weighs nothing and a note."""

    def after_turns(self, convo: Conversation) -> None:
        self.words = sum(len(r.text.split()) for r in convo.replies)

    async def entries(self, convo: Conversation) -> list[ScoreEntry]:
        return [ScoreEntry(name="words", type="simulator", score=1.0, verdict="pass", note=f"{self.words} words")]

    def adjust(self, result: TrialResult, convo: Conversation) -> None:
        result.notes.append(f"{self.words} words in {len(convo.replies)} replies")


def test_the_steps_are_chosen_when_the_test_is_planned(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path / "s.eval.yaml", SUITE))
    plan = plan_test(suite, suite.tests[0])
    assert plan.steps == (BudgetStep,)  # a target may always stop on a limit of its own
    with_verify = load_suite(
        write(tmp_path / "v.eval.yaml", SUITE.replace("    turns:", "    verify: {command: 'true'}\n    turns:"))
    )
    assert [s.__name__ for s in plan_test(with_verify, with_verify.tests[0]).steps] == ["VerifyStep", "BudgetStep"]


async def test_a_new_step_adds_entries_and_adjusts_the_result(tmp_path: Path) -> None:
    suite = load_suite(write(tmp_path / "s.eval.yaml", SUITE))
    plan: TestPlan = plan_test(suite, suite.tests[0])
    plan.steps = (*plan.steps, WordCount)
    result = await run_trial(plan, TrialContext(target=Echo(), judge=None))
    assert [s.name for s in result.scores] == ["turn-1", "turn-2", "words"]
    assert result.scores[-1].note == "4 words" and "4 words in 2 replies" in result.notes
    assert result.verdict == "pass" and result.score == 1.0  # a `simulator` entry never counts


class Recorded(convoeval.RunEvents):
    def __init__(self) -> None:
        self.seen: list[str] = []

    def start(self, meter: RunMeter) -> None:
        self.seen.append(f"start {meter.tests_total}")

    def note(self, text: str) -> None:
        self.seen.append("note")

    def turn(self, turn: GradedTurn) -> None:
        self.seen.append(f"turn {turn.job.suite.tests[turn.position].id} {turn.number} {turn.entry.verdict}")

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        self.seen.append(f"result {result.test_id} {result.verdict}")


def test_one_events_object_hears_the_whole_run(tmp_path: Path) -> None:
    path = write(tmp_path / "s.eval.yaml", SUITE)
    events = Recorded()
    report = convoeval.run(path, target=Echo(), events=events, store=False, cache=False)
    assert report.exit_code == 0
    assert [e for e in events.seen if e != "note"] == [
        "start 1",
        "turn two 1 pass",
        "turn two 2 pass",
        "result two pass",
    ]


def test_events_and_callbacks_together_are_refused(tmp_path: Path) -> None:
    path = write(tmp_path / "s.eval.yaml", SUITE)
    with pytest.raises(ConfigError, match="not both"):
        convoeval.run(path, target=Echo(), events=Recorded(), on_note=print, store=False)


RECORDED = """\
tests:
  - id: booked
    mode: conversation
    turns:
      - input: Book it
        capture: [{name: ref, regex: "REF-\\\\d+"}]
        assertions: [{type: contains, value: "booked"}]
      - input: "Cancel {{ ref }}"
        assertions: [{type: contains, value: "never said"}]
        post_condition: {must_contain_any: [nowhere]}
      - input: unsent
"""


class Booker:
    """A `resume` target that calls a tool and returns a session; it costs money."""

    name = "booker"
    cacheable = False
    session = "resume"

    async def chat(self, request: ChatRequest) -> ChatReply:
        said = str(request.messages[-1]["content"])
        calls = [ToolCall(name="book", arguments={"said": said}, output={"ref": "REF-7"})]
        return ChatReply(
            text=f"booked REF-7 ({said})",
            usage=Usage(input_tokens=11, output_tokens=3),
            cost_usd=0.25,
            tool_calls=calls,
            session_id="s-1",
            latency_ms=5.0,
        )

    async def aclose(self) -> None:
        pass


def test_a_turn_entry_records_its_session_tool_calls_captures_usage_and_why_it_stopped(tmp_path: Path) -> None:
    """Each turn's entry is made in one go with what the turn recorded besides its grades."""
    suite = write(tmp_path / "booked.eval.yaml", RECORDED)
    result = convoeval.run([str(suite)], target=Booker(), store=False, cache=False).results[0]
    first, second, third = result.scores
    assert (first.verdict, first.score, first.note) == ("pass", 1.0, None)
    assert first.captures == {"ref": "REF-7"} and first.session_id == "s-1"
    assert [(c.name, c.arguments, c.output) for c in first.tool_calls] == [
        ("book", {"said": "Book it"}, {"ref": "REF-7"})
    ]
    assert (first.token_usage, first.cost_usd, first.latency_ms) == (Usage(input_tokens=11, output_tokens=3), 0.25, 5.0)
    assert second.tool_calls[0].arguments == {"said": "Cancel REF-7"}  # the capture filled the second turn
    assert second.verdict == "fail" and (second.note or "").startswith("skipped after turn 2: post_condition failed")
    assert (third.verdict, third.score, third.note) == ("skip", None, second.note)
    assert result.token_usage == Usage(input_tokens=22, output_tokens=6) and result.cost_usd == 0.5
