"""`rubrics` through the real judge path: an OpenAI-compatible judge over loopback HTTP."""

from __future__ import annotations

import json

import pytest

from convoeval import ConfigError
from convoeval.graders import _dialogue, _llm  # noqa: F401  (register the LLM assertion types)
from convoeval.testing import Fault

from .judge_fakes import (  # noqa: F401  (judge, server, shared_server are fixtures)
    HISTORY,
    RecordingJudge,
    answer,
    conversation_ctx,
    fake_usage,
    judge,
    judge_with,
    make,
    prompt_of,
    schema_of,
    scripted_judge,
    server,
    shared_server,
    turn_ctx,
)

# What a turn-2 grader sees with window_size 1: the system message and the last user message.
HISTORY_WINDOW = [HISTORY[0], HISTORY[3]]

HTTP_GUIDE = [
    {"id": "structure", "outcome": "Has clear headings and organization", "weight": 1.0, "required": True},
    {"id": "success-codes", "outcome": "Covers 2xx success codes with examples", "weight": 2.0, "required": True},
    {"id": "client-errors", "outcome": "Explains 4xx client error codes", "weight": 2.0, "required": True},
    {"id": "server-errors", "outcome": "Explains 5xx server error codes", "weight": 1.5, "required": False},
    {"id": "practical-examples", "outcome": "Includes practical use case examples", "weight": 1.0, "required": False},
]

SUMMARY = [
    {
        "id": "factual_accuracy",
        "weight": 2.0,
        "min_score": 0.8,
        "score_ranges": {
            0: "Contains major factual errors.",
            3: "At least one clear factual error.",
            6: "Generally accurate but misses an important point.",
            8: "Accurate, minor omissions.",
            10: "Fully accurate.",
        },
    },
    {
        "id": "brevity_and_clarity",
        "weight": 1.0,
        "score_ranges": {
            0: "Exceeds 50 words.",
            3: "Unclear.",
            6: "Mostly clear.",
            8: "Clear and concise.",
            10: "Exceptionally clear.",
        },
    },
]


async def test_all_criteria_in_one_call_keyed_by_criterion_ids(server, judge) -> None:
    server.judge = judge_with()
    rubric = make(
        {
            "type": "rubrics",
            "criteria": [
                "References the previous answer of 30",
                "Correctly calculates double as 60",
                {"id": "tone", "outcome": "Is polite"},
            ],
        }
    )
    result = await rubric.evaluate(turn_ctx(judge))

    [request] = server.judge_requests()
    assert server.target_requests() == []
    schema = schema_of(request)
    assert list(schema["properties"]) == ["c1", "c2", "tone"]
    assert schema["required"] == ["c1", "c2", "tone"] and schema["additionalProperties"] is False
    for sub in schema["properties"].values():
        assert list(sub["properties"]) == ["reasoning", "satisfied"]  # reasoning first
        assert sub["required"] == ["reasoning", "satisfied"] and sub["additionalProperties"] is False
        assert sub["properties"]["satisfied"] == {"type": "boolean"}
    assert request["response_format"]["json_schema"]["name"] == "rubric"
    assert request["response_format"]["json_schema"]["strict"] is True
    assert request["temperature"] == 0.0
    prompt = prompt_of(request)
    assert "- c1: References the previous answer of 30" in prompt and "- tone: Is polite" in prompt
    assert '"c1", "c2", "tone"' in prompt
    assert "[turn 1] user: What is 15% of 200?" in prompt and "Double 30 is 60." in prompt

    assert result.verdict == "pass" and result.score == 1.0
    assert [(a.text, a.passed) for a in result.assertions] == [
        ("References the previous answer of 30", True),
        ("Correctly calculates double as 60", True),
        ("Is polite", True),
    ]
    assert result.assertions[0].evidence == "because c1"
    assert result.judge_calls == 1 and result.judge_reasks == 0
    assert result.judge_usage == fake_usage([request], [json.dumps(answer(schema))])


async def test_weights_and_required_criteria(server, judge) -> None:
    rubric = make({"type": "rubrics", "criteria": HTTP_GUIDE})
    # An optional criterion fails: score = (1 + 2 + 2 + 1) / 7.5 = 0.8, still a pass.
    server.judge = judge_with({"server-errors": False})
    result = await rubric.evaluate(turn_ctx(judge))
    assert result.score == pytest.approx(6 / 7.5) and result.verdict == "pass"
    assert [a.passed for a in result.assertions] == [True, True, True, False, True]

    # A required one fails: the score stays weighted (6.5 / 7.5) but the verdict is fail.
    server.judge = judge_with({"structure": False})
    result = await rubric.evaluate(turn_ctx(judge))
    assert result.score == pytest.approx(6.5 / 7.5) and result.verdict == "fail"
    assert result.failed_required == ["structure"]
    assert result.assertions[0].evidence == "because structure"


async def test_a_weighted_score_of_exactly_the_threshold_passes(server, judge) -> None:
    criteria = [
        {"id": "yes", "outcome": "Says yes", "weight": 0.7, "required": False},
        {"id": "short", "outcome": "Is short", "weight": 0.1, "required": False},
        {"id": "why", "outcome": "Explains why", "weight": 0.2, "required": False},
    ]
    rubric = make({"type": "rubrics", "criteria": criteria, "required": True})
    server.judge = judge_with({"why": False})  # (0.7 + 0.1) / 1.0 = 0.7999999999999999
    result = await rubric.evaluate(turn_ctx(judge))
    assert (result.score, result.verdict) == (0.8, "pass")


async def test_score_ranges_min_score_and_normalisation(server, judge) -> None:
    rubric = make({"type": "rubrics", "criteria": SUMMARY})
    server.judge = judge_with({"factual_accuracy": 10, "brevity_and_clarity": 9})
    result = await rubric.evaluate(turn_ctx(judge))
    [request] = server.judge_requests()
    sub = schema_of(request)["properties"]["factual_accuracy"]
    assert list(sub["properties"]) == ["reasoning", "score"]
    assert sub["properties"]["score"] == {"type": "integer", "minimum": 0, "maximum": 10}
    prompt = prompt_of(request)
    assert "- factual_accuracy (score 0-10)" in prompt and "    6-7: Generally accurate" in prompt
    assert "    10: Fully accurate." in prompt
    assert result.score == pytest.approx((2 * 1.0 + 0.9) / 3) and result.verdict == "pass"

    # 7/10 misses factual_accuracy's min_score 0.8: fail although the score reaches 0.8.
    server.judge = judge_with({"factual_accuracy": 7, "brevity_and_clarity": 10})
    result = await rubric.evaluate(turn_ctx(judge))
    assert result.score == pytest.approx((2 * 0.7 + 1.0) / 3) and result.verdict == "fail"
    accuracy, brevity = result.assertions
    assert accuracy.text == "factual_accuracy" and accuracy.passed is False
    assert accuracy.evidence == "7/10 (Generally accurate but misses an important point.): because factual_accuracy"
    assert brevity.passed is True
    assert result.details["criteria"]["factual_accuracy"]["judge_score"] == 7

    # Without min_score a score-range criterion needs the pass mark (threshold, or the
    # assertion's min_score); required (the default) makes it fail the grader.
    server.judge = judge_with({"factual_accuracy": 10, "brevity_and_clarity": 6})
    result = await rubric.evaluate(turn_ctx(judge, threshold=0.8))
    assert result.verdict == "fail" and result.failed_required == ["brevity_and_clarity"]
    lenient = make({"type": "rubrics", "min_score": 0.6, "criteria": SUMMARY})
    result = await lenient.evaluate(turn_ctx(judge, threshold=0.8))
    assert result.verdict == "pass" and result.score == pytest.approx(2.6 / 3)


def test_criterion_config_validation() -> None:
    rubric = make(
        {
            "type": "rubrics",
            "criteria": [
                {
                    "id": "a",
                    "score_ranges": [
                        {"score_range": [0, 4], "outcome": "bad"},
                        {"score_range": [5, 10], "expected_outcome": "good"},
                    ],
                },
                {"expected_outcome": "Mentions Paris", "required_min_score": 7},
                "A plain criterion",
                {"id": "c2", "description": "Taken id", "operator": "contradiction"},
            ],
        }
    )
    items = [item for item, _ in rubric.resolved()]
    assert [i.id for i in items] == ["a", "c3", "c4", "c2"]  # auto ids skip user ids
    assert items[0].bands == [(0, 4, "bad"), (5, 10, "good")]
    assert items[1].text == "Mentions Paris" and rubric.resolved()[1][1].gate == 0.7
    assert items[3].operator == "contradiction"
    shorthand = make({"type": "rubrics", "criteria": [{"id": "x", "score_ranges": {10: "top", 0: "low", 5: "mid"}}]})
    assert shorthand.resolved()[0][0].bands == [(0, 4, "low"), (5, 9, "mid"), (10, 10, "top")]

    bad = [
        ([{"id": "x", "outcome": "a"}, {"id": "x", "outcome": "b"}], "duplicate criterion id"),
        ([{"id": "x"}], "needs an `outcome` or `score_ranges`"),
        (["  "], "blank"),
        ([], "at least 1"),
        (
            [{"score_ranges": [{"score_range": [0, 6], "outcome": "a"}, {"score_range": [5, 10], "outcome": "b"}]}],
            "overlap",
        ),
        ([{"score_ranges": {11: "too high"}}], "outside 0..10"),
        ([{"outcome": "a", "min_score": 8}], "less than or equal to 1"),
        ([{"outcome": "a", "bogus": 1}], "Extra inputs"),
    ]
    for criteria, message in bad:
        with pytest.raises(ConfigError, match=message):
            make({"type": "rubrics", "criteria": criteria})


async def test_malformed_output_is_reasked_once_then_parses(server, judge) -> None:
    good = judge_with({"c2": False})
    server.judge = scripted_judge("Sure! The response looks fine to me.", good)
    rubric = make({"type": "rubrics", "criteria": ["Mentions 60", "Shows steps"]})
    result = await rubric.evaluate(turn_ctx(judge))

    first, second = server.judge_requests()
    assert result.verdict == "fail" and result.score == 0.5
    assert [a.passed for a in result.assertions] == [True, False]
    # The re-ask shows the judge its bad answer and the parse error, with the same schema.
    assert second["messages"][:-2] == first["messages"]
    assert second["messages"][-2] == {"role": "assistant", "content": "Sure! The response looks fine to me."}
    assert "not valid JSON" in second["messages"][-1]["content"]
    assert '"c1", "c2"' in second["messages"][-1]["content"]
    assert schema_of(second) == schema_of(first)
    assert result.judge_calls == 2 and result.judge_reasks == 1
    replies = ["Sure! The response looks fine to me.", good(second)]
    assert result.judge_usage == fake_usage([first, second], replies)


async def test_partial_answer_missing_a_criterion_is_reasked(server, judge) -> None:
    def partial(body: dict) -> str:
        full = answer(schema_of(body))
        del full["c2"]
        return json.dumps(full)

    server.judge = scripted_judge(partial, judge_with())
    rubric = make({"type": "rubrics", "criteria": ["Mentions 60", "Shows steps"]})
    result = await rubric.evaluate(turn_ctx(judge))
    assert result.verdict == "pass" and result.score == 1.0
    assert "c2: missing" in server.judge_requests()[1]["messages"][-1]["content"]

    # Missing twice: a grader error (left out of the score), never a score.
    server.requests.clear()
    server.judge = partial
    result = await rubric.evaluate(turn_ctx(judge))
    assert result.verdict == "error" and result.score is None
    assert "unparseable after a re-ask" in result.error and "c2: missing" in result.error
    assert len(server.judge_requests()) == 2


async def test_still_malformed_after_reask_is_an_error(server, judge) -> None:
    server.judge = scripted_judge('{"c1": {"reasoning": "ok", "satisfied": "yes"}}')
    result = await make({"type": "rubrics", "criteria": ["Mentions 60"]}).evaluate(turn_ctx(judge))
    assert result.verdict == "error" and result.score is None and result.assertions == []
    assert "c1.satisfied: must be true or false" in result.error
    assert "last answer:" in result.error


async def test_json_in_a_code_fence_is_accepted(server, judge) -> None:
    server.judge = lambda body: "```json\n" + json.dumps(answer(schema_of(body))) + "\n```"
    result = await make({"type": "rubrics", "criteria": ["Mentions 60"]}).evaluate(turn_ctx(judge))
    assert result.verdict == "pass" and len(server.judge_requests()) == 1


@pytest.mark.parametrize("status", [500, 400])
async def test_judge_http_failures_are_grader_errors(server, judge, status: int) -> None:
    server.faults.append(Fault(status=status, purpose="judge"))
    result = await make({"type": "rubrics", "criteria": ["Mentions 60"]}).evaluate(turn_ctx(judge))
    assert result.verdict == "error" and result.score is None
    assert "judge call failed" in result.error and f"HTTP {status}" in result.error


async def test_no_judge_is_an_error() -> None:
    result = await make({"type": "rubrics", "criteria": ["x"]}).evaluate(turn_ctx(None))
    assert result.verdict == "error" and "needs a judge" in result.error


async def test_conversation_level_shows_the_whole_numbered_transcript(server, judge) -> None:
    server.judge = judge_with()
    rubric = make({"type": "rubrics", "criteria": ["Agent never contradicts itself"]})
    result = await rubric.evaluate(conversation_ctx(judge, criteria="Coherent tutoring"))
    prompt = prompt_of(server.judge_requests()[0])
    assert "Conversation (turns are numbered):" in prompt
    assert "[system] You are a concise math tutor." in prompt
    assert "[turn 1] user: What is 15% of 200?" in prompt
    assert "[turn 1] assistant: 15% of 200 is 30." in prompt
    assert "[turn 2] assistant: Double 30 is 60." in prompt
    assert "the conversation as a whole" in prompt and "Goal of this test: Coherent tutoring" in prompt
    assert "Response to evaluate" not in prompt
    assert result.verdict == "pass"


async def test_turn_level_prompt_shows_history_reference_and_goal(server, judge) -> None:
    server.judge = judge_with()
    ctx = turn_ctx(judge, history=HISTORY_WINDOW, expected_output="60", criteria="Correct arithmetic")
    await make({"type": "rubrics", "criteria": ["Says 60"]}).evaluate(ctx)
    prompt = prompt_of(server.judge_requests()[0])
    assert "What is 15% of 200?" not in prompt  # only the (windowed) history the loop passed
    assert "[turn 2] user: Now double that result." in prompt
    assert "[turn 2] assistant: Double 30 is 60.\n\nResponse to evaluate: the assistant's message of turn 2" in prompt
    assert "Reference answer" in prompt and "\n60" in prompt
    assert "Goal of this test: Correct arithmetic" in prompt


async def test_negate_inverts_rubric_results(server, judge) -> None:
    server.judge = judge_with({"c2": False})
    result = await make({"type": "rubrics", "negate": True, "criteria": ["Mentions 60", "Is rude"]}).evaluate(
        turn_ctx(judge)
    )
    assert result.score == 0.5
    assert [(a.text, a.passed) for a in result.assertions] == [("NOT Mentions 60", False), ("NOT Is rude", True)]
    # A failed required criterion fails the rubric; negated, that becomes a pass.
    assert result.verdict == "pass"


async def test_repeats_report_mean_and_stdev_with_distinct_trials(server, judge) -> None:
    server.judge = scripted_judge(judge_with(), judge_with(), judge_with({"c1": False}))
    recording = RecordingJudge(judge)
    rubric = make({"type": "rubrics", "criteria": ["Mentions 60", "Shows steps"]})
    result = await rubric.evaluate(turn_ctx(recording, judge_repeats=3, trial=2))
    assert sorted(r.trial for r in recording.requests) == [2000, 2001, 2002]
    assert {r.purpose for r in recording.requests} == {"judge"} and {r.temperature for r in recording.requests} == {0.0}
    details = result.details
    assert details["repeats"] == 3 and sorted(details["scores"]) == [0.5, 1.0, 1.0]
    assert details["mean"] == pytest.approx(2.5 / 3) and details["stdev"] == pytest.approx(0.288675, abs=1e-5)
    assert result.score == pytest.approx(2.5 / 3)
    # c1 satisfied in 2 of 3 repeats: a majority, so it passes.
    assert result.assertions[0].passed is True and "[satisfied in 2/3 repeats]" in result.assertions[0].evidence
    assert result.judge_calls == 3
    bodies = server.judge_requests()
    assert result.judge_usage is not None and result.judge_usage.input_tokens == fake_usage(bodies, []).input_tokens


async def test_one_failed_repeat_is_recorded_not_fatal(server, judge) -> None:
    """2 of 3 repeats satisfied: a majority whatever the failed one said."""
    server.faults.append(Fault(status=500, purpose="judge"))
    server.judge = judge_with()
    result = await make({"type": "rubrics", "criteria": ["Mentions 60"]}).evaluate(turn_ctx(judge, judge_repeats=3))
    assert result.verdict == "pass" and result.details["repeats"] == 2
    assert "HTTP 500" in result.details["repeat_errors"][0]


async def test_failed_repeats_that_could_change_the_verdict_leave_it_undecided(server, judge) -> None:
    """One repeat of two failed: its "no" would have failed the required criterion (1 of 2 is
    no majority), so the rubric cannot decide; nor can a 0-10 grader at 9/10 against 0.8, whose
    mean of both could be 0.45."""
    server.faults.append(Fault(status=500, purpose="judge"))
    server.judge = judge_with()
    result = await make({"type": "rubrics", "criteria": ["Mentions 60"]}).evaluate(turn_ctx(judge, judge_repeats=2))
    assert (result.verdict, result.score) == ("error", None)
    assert "1 judge repeat(s) failed and could change criterion 'c1'" in (result.error or "")
    server.faults.append(Fault(status=500, purpose="judge"))
    server.judge = lambda body: json.dumps({"reasoning": "good", "score": 9})
    graded = await make({"type": "llm-grader"}).evaluate(turn_ctx(judge, judge_repeats=2))
    assert (graded.verdict, graded.score, graded.judge_calls) == ("error", None, 2)
    assert "50% of the judge repeats failed and could change the verdict" in (graded.error or "")
    server.faults.append(Fault(status=500, purpose="judge"))
    lenient = await make({"type": "llm-grader", "min_score": 0.4}).evaluate(turn_ctx(judge, judge_repeats=2))
    assert (lenient.verdict, lenient.score) == ("pass", 0.9)  # 0.45 at worst


async def test_judge_cost_and_temperature(server) -> None:
    from convoeval.targets import TargetConfig, create_target

    priced = create_target(
        TargetConfig(
            name="judge",
            provider="openai",
            model="fake-judge",
            base_url=server.base_url,
            max_retries=0,
            price_input_per_mtok=2.0,
            price_output_per_mtok=10.0,
        )
    )
    try:
        server.judge = scripted_judge("not json", judge_with())
        ctx = turn_ctx(priced, judge_temperature=0.3)
        result = await make({"type": "rubrics", "criteria": ["Mentions 60"]}).evaluate(ctx)
    finally:
        await priced.aclose()
    usage = result.judge_usage
    assert usage is not None
    expected = (usage.input_tokens * 2.0 + usage.output_tokens * 10.0) / 1_000_000
    assert result.judge_cost_usd == pytest.approx(expected) and expected > 0
    assert [b["temperature"] for b in server.judge_requests()] == [0.3, 0.3]


def test_transcript_formatting_marks_turns_and_prefilled_messages() -> None:
    from convoeval.judging import cited_turns, format_transcript, turn_numbers
    from convoeval.results import Message, ToolCall

    messages = [
        Message(role="system", content="Be kind."),
        Message(role="user", content="Earlier question", source="input"),
        Message(role="assistant", content="Earlier answer", source="input"),
        Message(role="user", content="Hello", source="simulator", turn=1),
        Message(
            role="assistant",
            content="Hi",
            source="target",
            turn=1,
            tool_calls=[ToolCall(name="lookup", arguments={"q": "x"})],
        ),
    ]
    assert format_transcript(messages) == (
        "[system] Be kind.\n\n[before turn 1] user: Earlier question\n\n[before turn 1] assistant: Earlier answer"
        '\n\n[turn 1] user (simulated): Hello\n\n[turn 1] assistant: Hi\n(tool calls: lookup({"q": "x"}))'
    )
    goodbye = Message(role="user", content="Thanks, bye!", source="simulator")  # said while stopping, never sent
    assert format_transcript([*messages, goodbye]).endswith("\n\n[after turn 1] user (simulated): Thanks, bye!")
    unnumbered = [m.model_copy(update={"turn": None}) for m in messages]
    assert turn_numbers(unnumbered) == [None, 1, 1, 2, 2]
    assert cited_turns("see turn 2, turns 3 and 4, turns 5-6 and turn 40", last_turn=6) == [2, 3, 4, 5, 6]
