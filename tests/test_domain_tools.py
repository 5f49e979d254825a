"""A suite's domain tools over its backend, offered to a chat model by the built-in tool agent:
each trial acts on its own copy of the backend and tau-bench's reward reads the final state."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import convoeval
from convoeval.errors import SpecError
from convoeval.testing import FakeOpenAIServer, tool_calls

from .conftest import REPO, write

AIRLINE = REPO / "examples" / "airline"
Body = dict[str, Any]


def booking_model(flight: str):
    """Searches, then books `flight`, then confirms with the reservation id it got back."""

    def reply(body: Body) -> str | Body:
        last = body["messages"][-1]
        if last["role"] == "user":
            return tool_calls(("search_flights", {"origin": "JFK", "destination": "SFO", "date": "2024-05-20"}))
        if '"flight": "HAT001"' in last["content"] and "reservation_id" not in last["content"]:
            return tool_calls(("book_flight", {"user_id": "mia_li", "flight": flight, "payment_id": "card_7447"}))
        return f"Booked: {json.loads(last['content']).get('reservation_id', 'nothing')}."

    return reply


@pytest.fixture
def airline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    for name in ("backend.json", "tools.py"):
        shutil.copy(AIRLINE / name, tmp_path / name)
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: openai, model: m, agent: {tools: []}}\n")
    suite = write(
        tmp_path / "book.eval.yaml",
        """\
execution: {target: bot, trials: 2}
tools: tools.py
backend: backend.json
assertions:
  - type: tau-reward
    goal_actions: [{name: book_flight, arguments: {user_id: mia_li, flight: HAT001, payment_id: card_7447}}]
    required_outputs: [R101]
tests:
  - id: book
    mode: conversation
    turns:
      - input: "I'm mia_li: one seat JFK to SFO on 2024-05-20 with card_7447, please."
""",
    )
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        yield suite, server


def test_the_right_booking_earns_reward_1_in_every_trial_on_its_own_backend(airline) -> None:
    suite, server = airline
    server.reset(reply=booking_model("HAT001"))
    [result] = convoeval.run(suite, judge="scripted", cache=False, store=False).results
    assert result.verdict == "pass" and result.pass_hat_k["2"] == 1.0, result.error
    for trial in result.trials:
        calls = trial.scores[0].tool_calls
        assert [c.name for c in calls] == ["search_flights", "book_flight"]
        # Each trial booked R101: the second did not see the first one's booking.
        assert calls[1].output == {"reservation_id": "R101", "charged": 220}
    offered = {t["function"]["name"] for t in server.target_requests()[0]["tools"]}
    assert offered == {"search_flights", "book_flight", "cancel_reservation"}  # tools.py's public functions
    book = next(t for t in server.target_requests()[0]["tools"] if t["function"]["name"] == "book_flight")
    assert book["function"]["parameters"]["required"] == ["user_id", "flight", "payment_id"]
    assert json.loads((suite.parent / "backend.json").read_text())["flights"]["HAT001"]["seats"] == 3  # untouched


def test_a_wrong_booking_gets_reward_0_with_the_state_diff(airline) -> None:
    suite, server = airline
    server.reset(reply=booking_model("HAT004"))
    [result] = convoeval.run(suite, judge="scripted", cache=False, store=False).results
    grader = result.trials[0].scores[-1].graders[0]
    assert result.verdict == "fail" and grader.type == "tau-reward" and grader.score == 0.0
    assert "$.flights.HAT004.seats: 1 != 2" in (grader.details or {})["state_diff"]


def test_a_tools_module_that_cannot_load_is_an_execution_error(airline) -> None:
    suite, server = airline
    (suite.parent / "broken.py").write_text("raise RuntimeError('no database here')\n")
    suite.write_text(suite.read_text().replace("tools: tools.py", "tools: broken.py"))
    [result] = convoeval.run(suite, judge="scripted", cache=False, store=False).results
    assert result.execution_status == "execution_error" and "tools:" in (result.error or "")
    assert not server.requests


def test_a_missing_tools_file_is_a_problem_of_the_eval_file(airline) -> None:
    suite, server = airline
    suite.write_text(suite.read_text().replace("tools: tools.py", "tools: nowhere.py"))
    with pytest.raises(SpecError) as raised:
        convoeval.run(suite, judge="scripted", cache=False, store=False)
    assert [str(p) for p in raised.value.problems] == [
        f"{suite}:2: tools: nowhere.py: no such file (the domain's tool functions)"
    ]
    assert not server.requests


BOOKED = "      - {name: book_flight, arguments: {user_id: mia_li, flight: HAT001, payment_id: card_7447}}\n"


def test_a_tests_initial_actions_set_each_trials_backend_up_before_the_agent_acts(airline) -> None:
    """The seat booked before the first turn is taken in every trial: the agent's booking is
    the second, and tau-reward's goal (replayed from the same initial actions) agrees."""
    suite, server = airline
    text = suite.read_text().replace(
        "    mode: conversation\n", "    mode: conversation\n    initial_actions:\n" + BOOKED
    )
    suite.write_text(text.replace("required_outputs: [R101]", "required_outputs: [R102]"))
    server.reset(reply=booking_model("HAT001"))
    [result] = convoeval.run(suite, judge="scripted", cache=False, store=False).results
    assert result.verdict == "pass", result.error
    for trial in result.trials:
        assert trial.scores[0].tool_calls[1].output == {"reservation_id": "R102", "charged": 220}
        details = trial.scores[-1].graders[0].details or {}
        assert (details["reward"], details["final_state"], details["state_diff"]) == (1.0, "live", [])


def test_initial_actions_without_the_suites_tools_are_a_problem_of_the_eval_file(airline) -> None:
    suite, server = airline
    text = suite.read_text().replace("tools: tools.py\nbackend: backend.json\n", "")
    text = text.replace(
        "  - type: tau-reward\n", "  - type: tau-reward\n    tools: tools.py\n    backend: backend.json\n"
    )
    suite.write_text(
        text.replace("    mode: conversation\n", "    mode: conversation\n    initial_actions:\n" + BOOKED)
    )
    line = suite.read_text().splitlines().index("    initial_actions:") + 1
    with pytest.raises(SpecError) as raised:
        convoeval.run(suite, judge="scripted", cache=False, store=False)
    assert [str(p) for p in raised.value.problems] == [
        f"{suite}:{line}: tests[0].initial_actions: needs the suite's `tools:` (and `backend:`): "
        "the domain whose backend they set up"
    ]
    assert not server.requests


def test_an_initial_action_that_fails_is_an_execution_error_before_any_turn(airline) -> None:
    suite, server = airline
    broken = BOOKED.replace("HAT001", "NOPE")
    suite.write_text(
        suite.read_text().replace("    mode: conversation\n", "    mode: conversation\n    initial_actions:\n" + broken)
    )
    [result] = convoeval.run(suite, judge="scripted", cache=False, store=False).results
    assert result.execution_status == "execution_error"
    assert result.error == "; ".join(
        f"trial {n}: initial_actions: book_flight failed: KeyError: 'NOPE'" for n in (0, 1)
    )
    assert not server.requests
