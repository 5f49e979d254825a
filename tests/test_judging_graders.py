"""llm-grader, TD-Eval turn dimensions, conversation metrics and composite, against a real
OpenAI-compatible judge over loopback HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from convoeval import ConfigError
from convoeval.graders import _dialogue, _llm  # noqa: F401  (register the LLM assertion types)
from convoeval.graders._llm_grader import LLMGrader
from convoeval.results import Message
from convoeval.spec import GRADER_VARIABLES, Policy
from convoeval.testing import Fault

from .judge_fakes import (  # noqa: F401  (judge, server, shared_server are fixtures)
    RecordingJudge,
    answer,
    conversation_ctx,
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

# -- llm-grader -------------------------------------------------------------------------


async def test_llm_grader_inline_prompt_renders_variables(server, judge) -> None:
    server.judge = judge_with({"": 7}, reason="close enough")
    grader = make(
        {
            "type": "llm-grader",
            "criteria": "Doubles the previous answer",
            "prompt": "Q: {{ input }}\nA: {{ output }}\nWant: {{ criteria }} / {{ expected_output }}"
            " / user {{ user_name }}",
        }
    )
    ctx = turn_ctx(judge, expected_output="60", criteria="ignored: overridden", variables={"user_name": "Ada"})
    result = await grader.evaluate(ctx)

    [request] = server.judge_requests()
    system, user = request["messages"]
    assert user["content"] == (
        "Q: system: You are a concise math tutor.\n\nuser: What is 15% of 200?\n\nassistant: 15% of "
        "200 is 30.\n\nuser: Now double that result.\nA: Double 30 is 60.\n"
        "Want: Doubles the previous answer / 60 / user Ada"
    )
    assert '"score" (an integer from 0 = not at all to 10 = fully)' in system["content"]
    assert "whatever scale" in system["content"]
    schema = schema_of(request)
    assert list(schema["properties"]) == ["reasoning", "score"]
    assert schema["properties"]["score"] == {"type": "integer", "minimum": 0, "maximum": 10}
    assert request["response_format"]["json_schema"]["name"] == "llm_grader"

    # 7/10 -> 0.7: below the default threshold 0.8.
    assert result.score == 0.7 and result.verdict == "fail"
    [outcome] = result.assertions
    assert outcome.passed is False and outcome.evidence == "7/10: close enough"
    assert result.details["judge_score"] == 7
    passing = make({"type": "llm_grader", "min_score": 0.7, "prompt": "Grade {{ output }}"})
    assert (await passing.evaluate(ctx)).verdict == "pass"


async def test_llm_grader_prompt_file_relative_to_the_eval_file(server, judge, tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "tone.md").write_text("Is this polite? {{ output }}")
    server.judge = judge_with({"": 10})
    result = await make({"type": "llm-grader", "prompt": "file://prompts/tone.md"}).evaluate(
        turn_ctx(judge, base_dir=tmp_path)
    )
    assert result.verdict == "pass", result.error
    assert prompt_of(server.judge_requests()[0]) == "Is this polite? Double 30 is 60."
    # Without file:// a path is inline criteria text (AgentV >= 4.6), judged with the default prompt.
    server.requests.clear()
    bare = make({"type": "llm-grader", "prompt": "./prompts/tone.md"})
    assert bare.path_like_prompt(tmp_path) == "./prompts/tone.md"
    assert (await bare.evaluate(turn_ctx(judge, base_dir=tmp_path))).verdict == "pass"
    sent = prompt_of(server.judge_requests()[0])
    assert "./prompts/tone.md" in sent and "Double 30 is 60." in sent and "Is this polite?" not in sent
    missing = await make({"type": "llm-grader", "prompt": "file://prompts/nope.md"}).evaluate(
        turn_ctx(judge, base_dir=tmp_path)
    )
    assert missing.verdict == "error" and "prompt file 'prompts/nope.md' cannot be read" in missing.error
    broken = await make({"type": "llm-grader", "prompt": "{{ not_captured }}"}).evaluate(turn_ctx(judge))
    assert broken.verdict == "error" and "not_captured" in broken.error


def test_llm_grader_template_problems_at_load_time(tmp_path: Path) -> None:
    assert (
        make({"type": "llm-grader", "prompt": "{{ output }} vs {{ expected_output }}"}).template_problems(
            GRADER_VARIABLES
        )
        == []
    )
    [(field, message)] = make({"type": "llm-grader", "prompt": "{{ outptu }}"}).template_problems(GRADER_VARIABLES)
    assert field == "prompt" and "outptu" in message
    [(field, message)] = make({"type": "llm-grader", "prompt": "{% if %}"}).template_problems(GRADER_VARIABLES)
    assert field == "prompt" and "syntax error" in message
    assert make({"type": "llm-grader", "prompt": "file://x.md"}).template_problems(GRADER_VARIABLES) == []

    from convoeval.spec import SpecError, load_suite

    suite = tmp_path / "s.eval.yaml"
    suite.write_text(
        "tests:\n  - id: a\n    input: hi\n    assertions:\n"
        "      - type: llm-grader\n        prompt: 'Rate {{ outptu }}'\n"
    )
    with pytest.raises(SpecError) as caught:
        load_suite(suite)
    [problem] = caught.value.problems
    assert problem.line == 6 and problem.field == "tests[0].assertions[0].prompt" and "outptu" in problem.message


async def test_implicit_expected_output_grader_at_turn_level(server, judge) -> None:
    server.judge = judge_with({"": 9}, reason="same number")
    grader = LLMGrader.model_validate({"type": "llm-grader", "name": "expected_output"})
    result = await grader.evaluate(turn_ctx(judge, expected_output="The answer is 60."))
    prompt = prompt_of(server.judge_requests()[0])
    assert "Reference answer (what a good response contains; wording may differ):\nThe answer is 60." in prompt
    assert "[turn 2] user: Now double that result." in prompt
    assert "[turn 2] assistant: Double 30 is 60.\n\nResponse to evaluate: the assistant's message of turn 2" in prompt
    assert "matches the reference answer in substance" in prompt
    assert result.name == "expected_output" and result.score == 0.9 and result.verdict == "pass"
    assert result.assertions[0].text == "reply matches the expected output"


async def test_implicit_criteria_grader_at_conversation_level(server, judge) -> None:
    server.judge = judge_with({"": 10})
    grader = LLMGrader.model_validate({"type": "llm-grader", "name": "criteria"})
    result = await grader.evaluate(conversation_ctx(judge, criteria="Tutor keeps track of earlier answers"))
    prompt = prompt_of(server.judge_requests()[0])
    assert "Conversation (turns are numbered):" in prompt
    assert "[turn 1] assistant: 15% of 200 is 30." in prompt and "[turn 2] assistant: Double 30 is 60." in prompt
    assert "Goal of this test: Tutor keeps track of earlier answers" in prompt
    assert "the conversation as a whole meets the goal" in prompt
    assert result.verdict == "pass"
    assert result.assertions[0].text == "conversation meets: Tutor keeps track of earlier answers"


async def test_llm_grader_negate_and_errors(server, judge) -> None:
    server.judge = judge_with({"": 2})
    result = await make({"type": "llm-grader", "negate": True, "prompt": "Is {{ output }} rude?"}).evaluate(
        turn_ctx(judge)
    )
    assert result.score == 0.8 and result.verdict == "pass"
    assert result.assertions[0].text.startswith("NOT ") and result.assertions[0].passed is True

    server.judge = scripted_judge('{"reasoning": "fine", "score": 11}')
    result = await make({"type": "llm-grader"}).evaluate(turn_ctx(judge))
    assert result.verdict == "error" and "score: Input should be less than or equal to 10" in result.error
    assert len(server.judge_requests()) == 3  # 1 above + the call and its re-ask

    server.faults.append(Fault(status=500, purpose="judge"))
    result = await make({"type": "llm-grader"}).evaluate(turn_ctx(judge))
    assert result.verdict == "error" and "HTTP 500" in result.error


async def test_llm_grader_repeats(server, judge) -> None:
    server.judge = scripted_judge(judge_with({"": 6}), judge_with({"": 8}), judge_with({"": 10}), judge_with({"": 8}))
    recording = RecordingJudge(judge)
    result = await make({"type": "llm-grader"}).evaluate(turn_ctx(recording, judge_repeats=4, trial=1))
    assert sorted(r.trial for r in recording.requests) == [1000, 1001, 1002, 1003]
    assert result.score == 0.8 and result.details["mean"] == 0.8 and result.details["repeats"] == 4
    assert sorted(result.details["scores"]) == [0.6, 0.8, 0.8, 1.0]
    assert result.details["stdev"] == pytest.approx(0.163299, abs=1e-6)
    assert sorted(result.details["judge_score"]) == [6, 8, 8, 10]


# -- TD-Eval ------------------------------------------------------------------------------

POLICY = Policy(
    domain="restaurant",
    slots={"area": "part of town", "food": "cuisine", "bookpeople": "party size"},
    rules=["Ask for the party size before booking."],
)
DB = {
    "count": 2,
    "matches": [
        {"name": "pizza hut city centre", "area": "centre", "pricerange": "cheap"},
        {"name": "zizzi cambridge", "area": "centre", "pricerange": "cheap"},
    ],
}
TOD = [
    Message(role="system", content="You are a Cambridge restaurant booking assistant.", source="input"),
    Message(role="user", content="Hi, I need a place to eat.", source="user", turn=1),
    Message(role="assistant", content="Sure, what cuisine and area?", source="target", turn=1),
    Message(role="user", content="Cheap Italian in the centre.", source="user", turn=2),
]
TOD_REPLY = "Pizza Hut City Centre and Zizzi Cambridge are cheap Italian places in the centre."


async def test_td_eval_one_call_three_dimensions(server, judge) -> None:
    server.judge = judge_with(
        {"conversation_cohesion": 5, "backend_consistency": 4, "policy_compliance": 2}, reason="since"
    )
    ctx = turn_ctx(judge, output=TOD_REPLY, history=TOD, context=DB, policy=POLICY)
    result = await make({"type": "td-eval"}).evaluate(ctx)

    [request] = server.judge_requests()
    schema = schema_of(request)
    assert list(schema["properties"]) == ["conversation_cohesion", "backend_consistency", "policy_compliance"]
    assert schema["additionalProperties"] is False
    for sub in schema["properties"].values():
        assert list(sub["properties"]) == ["justification", "score"]
        assert sub["properties"]["score"] == {"type": "integer", "minimum": 1, "maximum": 5}
    prompt = prompt_of(request)
    assert "Dialogue history:\n[system] You are a Cambridge" in prompt
    assert "[turn 1] assistant: Sure, what cuisine and area?" in prompt
    assert "User query:\nCheap Italian in the centre." in prompt
    assert "[turn 2] user" not in prompt  # the query is shown once, as the query
    assert '"name": "zizzi cambridge"' in prompt
    assert "Domain: restaurant" in prompt and "- bookpeople: party size" in prompt
    assert "- Ask for the party size before booking." in prompt
    assert f"Agent response to evaluate:\n<<<\n{TOD_REPLY}\n>>>" in prompt

    # (5-1)/4 = 1, (4-1)/4 = 0.75, (2-1)/4 = 0.25 -> mean 2/3
    assert result.score == pytest.approx(2 / 3) and result.verdict == "fail"
    assert [(a.text, a.passed) for a in result.assertions] == [
        ("Conversation cohesion: 5/5", True),
        ("Backend knowledge consistency: 4/5", False),
        ("Policy compliance: 2/5", False),
    ]
    assert result.assertions[2].evidence == "since policy_compliance"
    assert result.dimensions is not None
    assert result.dimensions["policy_compliance"].model_dump() == {
        "likert": 2,
        "justification": "since policy_compliance",
        "score": 0.25,
    }
    assert result.judge_calls == 1 and result.judge_usage is not None and result.judge_usage.input_tokens > 0
    assert result.details["backend_result"] is True and result.details["policy"] is True
    lenient = await make({"type": "td-eval", "min_score": 0.6}).evaluate(ctx)
    assert lenient.verdict == "pass"


async def test_td_eval_single_dimensions_and_missing_inputs(server, judge) -> None:
    server.judge = judge_with({"backend_consistency": 3})
    ctx = turn_ctx(judge, output=TOD_REPLY, history=TOD, context=None, policy=None)
    result = await make({"type": "backend-consistency"}).evaluate(ctx)
    [request] = server.judge_requests()
    assert list(schema_of(request)["properties"]) == ["backend_consistency"]
    prompt = prompt_of(request)
    assert "(none: no backend data was given for this turn" in prompt
    assert "must then not claim specific availability" in prompt
    assert "(no domain policy given: judge against the general protocol above.)" in prompt
    assert result.score == 0.5 and result.assertions[0].text == "Backend knowledge consistency: 3/5"

    for kind, key in [("conversation-cohesion", "conversation_cohesion"), ("policy_compliance", "policy_compliance")]:
        server.requests.clear()
        result = await make({"type": kind}).evaluate(ctx)
        assert list(schema_of(server.judge_requests()[0])["properties"]) == [key]
        assert result.score == 1.0

    server.requests.clear()
    result = await make({"type": "td-eval", "dimensions": ["policy-compliance", "conversation_cohesion"]}).evaluate(ctx)
    assert list(schema_of(server.judge_requests()[0])["properties"]) == ["policy_compliance", "conversation_cohesion"]
    with pytest.raises(ConfigError, match="unknown dimension"):
        make({"type": "td-eval", "dimensions": ["politeness"]})


async def test_td_eval_repeats_and_string_backend(server, judge) -> None:
    server.judge = scripted_judge(judge_with({"conversation_cohesion": 5}), judge_with({"conversation_cohesion": 3}))
    ctx = turn_ctx(judge, output=TOD_REPLY, history=TOD, context="2 matches", policy=None, judge_repeats=2)
    result = await make({"type": "conversation-cohesion"}).evaluate(ctx)
    assert "Backend results for this turn:\n2 matches" in prompt_of(server.judge_requests()[0])
    assert result.score == pytest.approx(0.75) and result.details["repeats"] == 2
    assert result.dimensions is not None and sorted(result.dimensions["conversation_cohesion"].likert) == [3, 5]  # type: ignore[arg-type]
    assert result.assertions[0].text == "Conversation cohesion: 4.00/5 over 2 repeats"


# -- conversation metrics -----------------------------------------------------------------

METRIC_TYPES = [
    "knowledge-retention",
    "role-adherence",
    "self-coherence",
    "instruction-retention",
    "versioned-editing",
    "goal-completion",
]


@pytest.mark.parametrize("kind", METRIC_TYPES)
async def test_conversation_metrics_cite_turns(server, judge, kind: str) -> None:
    server.judge = judge_with({"": 6}, reason='In turn 2 the assistant says "Double 30 is 60", consistent with turn 1.')
    metric = make({"type": kind})
    assert metric.levels == ("conversation",) and metric.uses_judge
    result = await metric.evaluate(conversation_ctx(judge, criteria="Get 15% of 200 doubled"))
    [request] = server.judge_requests()
    prompt = prompt_of(request)
    assert "[turn 1] user: What is 15% of 200?" in prompt and "[turn 2] assistant: Double 30 is 60." in prompt
    assert "turn N" in prompt
    assert list(schema_of(request)["properties"]) == ["reasoning", "score"]
    assert request["response_format"]["json_schema"]["name"] == kind.replace("-", "_")
    assert result.score == 0.6 and result.verdict == "fail"
    assert result.details["turns"] == [1, 2]
    assert result.assertions[0].evidence.startswith("6/10: In turn 2")
    if kind == "goal-completion":
        assert "The user's goal: Get 15% of 200 doubled" in prompt
        assert result.details["goal"] == "Get 15% of 200 doubled"


async def test_metric_options(server, judge) -> None:
    server.judge = judge_with({"": 10})
    await make({"type": "goal-completion", "goal": "Book a table"}).evaluate(conversation_ctx(judge, criteria="other"))
    assert "The user's goal: Book a table" in prompt_of(server.judge_requests()[-1])
    await make({"type": "role_adherence", "role": "a pirate"}).evaluate(conversation_ctx(judge))
    assert "The assistant's assigned role: a pirate" in prompt_of(server.judge_requests()[-1])
    await make({"type": "instruction-retention", "guidance": "Answers must stay under 10 words."}).evaluate(
        conversation_ctx(judge)
    )
    assert "Also consider: Answers must stay under 10 words." in prompt_of(server.judge_requests()[-1])


def test_levels_are_checked_when_loading(tmp_path: Path) -> None:
    from convoeval.spec import SpecError, load_suite

    suite = tmp_path / "s.eval.yaml"
    suite.write_text(
        "tests:\n"
        "  - id: a\n    mode: conversation\n    turns:\n"
        "      - input: hi\n        assertions:\n          - type: knowledge-retention\n"
        "    assertions:\n      - type: td-eval\n"
    )
    with pytest.raises(SpecError) as caught:
        load_suite(suite)
    messages = sorted(str(p) for p in caught.value.problems)
    assert any(":7: " in m and "'knowledge-retention' grades at conversation level" in m for m in messages)
    assert any(":9: " in m and "'td-eval' grades at turn level" in m for m in messages)


# -- composite ---------------------------------------------------------------------------


async def test_composite_weighted_average_with_nested_outcomes(server, judge) -> None:
    server.judge = judge_with({"c1": True, "c2": False, "": 6})
    composite = make(
        {
            "type": "composite",
            "aggregator": {"type": "weighted_average", "weights": {"quality": 3}},
            "assertions": [
                {"type": "contains", "value": "60", "name": "has-60"},
                {"type": "llm-grader", "name": "quality"},
                "Mentions 60",
                "Is in French",
            ],
        }
    )
    result = await composite.evaluate(turn_ctx(judge))
    names = [s["name"] for s in result.details["scores"]]
    assert names == ["has-60", "quality", "rubrics"]
    # rubrics: 0.5 (its required criterion failed: verdict fail); weights 1, 3, 1.
    assert result.score == pytest.approx((1.0 + 3 * 0.6 + 0.5) / 5)
    assert [a.text for a in result.assertions] == [
        "[has-60] contains '60'",
        "[quality] reply is correct, relevant and helpful",
        "[rubrics] Mentions 60",
        "[rubrics] Is in French",
    ]
    children = [s.get("judge_usage") or {} for s in result.details["scores"]]
    assert result.judge_usage is not None
    assert result.judge_usage.input_tokens == sum(c.get("input_tokens", 0) for c in children) > 0
    assert result.judge_calls == sum(s["judge_calls"] for s in result.details["scores"]) == 2
    assert len(server.judge_requests()) == 2  # children graded concurrently, one call each


async def test_composite_threshold_required_and_errors(server, judge) -> None:
    server.judge = judge_with({"": 10})
    both = [{"type": "contains", "value": "60"}, {"type": "contains", "value": "sixty"}]
    result = await make(
        {"type": "composite", "aggregator": "threshold", "threshold": 1.0, "assertions": both}
    ).evaluate(turn_ctx(judge))
    assert result.score == 0.5 and result.verdict == "fail"
    result = await make(
        {"type": "composite", "aggregator": {"type": "threshold", "threshold": 0.5}, "assertions": both}
    ).evaluate(turn_ctx(judge))
    assert result.score == 0.5 and result.verdict == "pass"
    # 2 of 3 is kept as 0.666667: it meets a threshold of 0.666667, as every other pass mark does
    # (before: 0.6666666666666666 < 0.666667 - 1e-9 failed).
    thirds = [*both, {"type": "contains", "value": "6"}]
    aggregator = {"type": "threshold", "threshold": 0.666667}
    result = await make({"type": "composite", "aggregator": aggregator, "assertions": thirds}).evaluate(turn_ctx(judge))
    assert round(result.score, 6) == 0.666667 and result.verdict == "pass"

    required = [{"type": "contains", "value": "sixty", "required": True}, {"type": "llm-grader"}]
    result = await make({"type": "composite", "assertions": required}).evaluate(turn_ctx(judge))
    assert result.score == 0.0 and result.verdict == "fail" and result.failed_required == ["contains"]

    server.faults.append(Fault(status=500, purpose="judge"))
    mixed = [{"type": "contains", "value": "60"}, {"type": "llm-grader"}]
    result = await make({"type": "composite", "assertions": mixed}).evaluate(turn_ctx(judge))
    assert result.score == 1.0 and "HTTP 500" in result.details["errors"]["llm-grader"]

    server.faults.append(Fault(status=500, purpose="judge"))
    result = await make({"type": "composite", "assertions": [{"type": "llm-grader"}]}).evaluate(turn_ctx(judge))
    assert result.verdict == "error" and "every nested assertion failed" in result.error

    negated = await make({"type": "composite", "negate": True, "assertions": both}).evaluate(turn_ctx(judge))
    assert negated.score == 0.5 and negated.assertions[0].text.startswith("NOT [contains]")


def test_composite_uses_judge_follows_its_members() -> None:
    assert make({"type": "composite", "assertions": [{"type": "contains", "value": "x"}]}).uses_judge is False
    assert make({"type": "composite", "assertions": ["x"]}).uses_judge is True
    with pytest.raises(ConfigError, match="unknown assertion type"):
        make({"type": "composite", "assertions": [{"type": "nope"}]})
    with pytest.raises(ConfigError):
        make({"type": "composite", "assertions": []})


def test_composite_from_yaml_nests_strings_into_one_rubric(tmp_path: Path) -> None:
    from convoeval.spec import load_suite

    suite = tmp_path / "s.eval.yaml"
    suite.write_text(
        "tests:\n  - id: a\n    input: hi\n    assertions:\n"
        "      - type: composite\n        aggregator: {type: threshold, threshold: 1.0}\n"
        "        assertions:\n          - Says hello\n          - Is brief\n"
        "          - {type: icontains, value: hello}\n"
    )
    [test] = load_suite(suite).tests
    [composite] = test.assertions
    kinds = [a.type for a in composite.assertions]
    assert kinds == ["rubrics", "icontains"] and composite.assertions[0].criteria == ["Says hello", "Is brief"]
    assert composite.aggregator.type == "threshold" and composite.aggregator.threshold == 1.0
    assert json.loads(composite.model_dump_json())["assertions"][1]["value"] == "hello"


def test_answer_helper_matches_schemas() -> None:
    # The helper used by these tests builds valid answers for each schema shape.
    from convoeval.judging import grader_schema, metric_schema, tdeval_schema

    assert answer(grader_schema(), {"": 4}) == {"reasoning": "because", "score": 4}
    assert answer(metric_schema()) == {"reasoning": "because", "score": 10}
    assert answer(tdeval_schema(["policy_compliance"]), default=False) == {
        "policy_compliance": {"justification": "because policy_compliance", "score": 1}
    }
