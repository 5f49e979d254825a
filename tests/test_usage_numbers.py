"""Tokens and cost mean the same for every provider: real OpenAI and Anthropic response bodies
with prompt-cache usage, from a loopback server (see `Usage` and the conversation-tests guide)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from convoeval.targets.agents._replies import reply_from_json

from .conftest import read_jsonl, write

#: gpt-4o-mini ($0.15 input, $0.075 cached input per million): 1M prompt tokens, 900k of them cached.
OPENAI = {
    "id": "chatcmpl-AbC",
    "object": "chat.completion",
    "created": 1732000000,
    "model": "gpt-4o-mini-2024-07-18",
    "choices": [
        {
            "index": 0,
            "message": {"role": "assistant", "content": "Hello", "refusal": None, "annotations": []},
            "logprobs": None,
            "finish_reason": "stop",
        }
    ],
    "usage": {
        "prompt_tokens": 1_000_000,
        "completion_tokens": 1000,
        "total_tokens": 1_001_000,
        "prompt_tokens_details": {"cached_tokens": 900_000, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    },
    "service_tier": "default",
    "system_fingerprint": "fp_0aa8d3e20b",
}
#: Claude Sonnet 4.5 ($3 input, $15 output): `input_tokens` leaves out the cache's reads and writes.
ANTHROPIC = {
    "id": "msg_01X",
    "type": "message",
    "role": "assistant",
    "model": "claude-sonnet-4-5-20250929",
    "content": [{"type": "text", "text": "Hello"}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {
        "input_tokens": 100_000,
        "cache_creation_input_tokens": 100_000,
        "cache_read_input_tokens": 800_000,
        "cache_creation": {"ephemeral_5m_input_tokens": 100_000, "ephemeral_1h_input_tokens": 0},
        "output_tokens": 1000,
        "service_tier": "standard",
    },
}


@contextmanager
def canned(body: dict[str, object]) -> Iterator[str]:
    """A loopback server answering every POST with `body`; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server naming
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _run_twice(cli, tmp_path: Path, provider: str, model: str, url: str, *extra: str) -> list[dict]:
    """The test's result of a run and of a second one answered from the response cache."""
    write(
        tmp_path / "targets.yaml",
        f"targets:\n  - {{name: t, provider: {provider}, model: {model}, base_url: '{url}', api_key: sk-test-123456}}\n",
    )
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    results = []
    for n in (1, 2):
        code, out, err = cli("run", suite, "--target", "t", "-o", tmp_path / f"r{n}.jsonl", *extra)
        assert code == 0, out + err
        results.append(read_jsonl(tmp_path / f"r{n}.jsonl")[0])
    return results


@pytest.mark.parametrize("processes", [(), ("--processes", "2")])
def test_openai_cached_prompt_tokens_cost_the_cached_price(cli, tmp_path: Path, processes: tuple[str, ...]) -> None:
    """`prompt_tokens_details.cached_tokens` were charged at the full input price ($0.1506)."""
    with canned(OPENAI) as url:
        fresh, cached = _run_twice(cli, tmp_path, "openai", "gpt-4o-mini", url + "/v1", *processes)
    usage = {"input_tokens": 1_000_000, "output_tokens": 1000, "cached_input_tokens": 900_000, "cache_write_tokens": 0}
    cost = (100_000 * 0.15 + 900_000 * 0.075 + 1000 * 0.6) / 1e6
    for result in (fresh, cached):
        assert (result["token_usage"], result["cost_usd"]) == (usage, pytest.approx(cost)), result
        assert result["trials"][0]["token_usage"] == usage
    # The cache keeps `usage` as the [input, output] pair older versions read.
    with sqlite3.connect(tmp_path / ".convoeval" / "cache.sqlite") as db:
        (stored,) = [json.loads(v) for (v,) in db.execute("SELECT value FROM responses")]
    assert (stored["usage"], stored["prompt_cache"]) == ([1_000_000, 1000], [900_000, 0])


def test_anthropic_input_counts_the_cache_and_its_cost_prices_it(cli, tmp_path: Path) -> None:
    """Anthropic's `input_tokens` leaves out cache reads and writes: they were neither counted nor
    paid (100,000 input tokens, $0.315), where Claude Code's target counts them as input."""
    with canned(ANTHROPIC) as url:
        fresh, cached = _run_twice(cli, tmp_path, "anthropic", "claude-sonnet-4-5", url)
    usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 1000,
        "cached_input_tokens": 800_000,
        "cache_write_tokens": 100_000,
    }
    cost = (100_000 * 3 + 800_000 * 0.3 + 100_000 * 3.75 + 1000 * 15) / 1e6
    for result in (fresh, cached):
        assert (result["token_usage"], result["cost_usd"]) == (usage, pytest.approx(cost)), result


def test_claude_code_and_the_anthropic_target_count_the_same_usage_alike() -> None:
    """The same Anthropic `usage`, printed by Claude Code before its result, is the same `Usage`
    and cost as the `anthropic` target's."""
    from convoeval.targets import TargetConfig
    from convoeval.targets.agents._claude import spent_so_far
    from convoeval.targets.agents._process import Line

    message = {"type": "assistant", "message": {"id": "m1", "model": ANTHROPIC["model"], "usage": ANTHROPIC["usage"]}}
    spent = spent_so_far([Line(json.dumps(message), 0.0)], TargetConfig(name="c", provider="claude-code"))
    assert spent.usage.model_dump() == {
        "input_tokens": 1_000_000,
        "output_tokens": 1000,
        "cached_input_tokens": 800_000,
        "cache_write_tokens": 100_000,
    }
    assert spent.cost_usd == pytest.approx((100_000 * 3 + 800_000 * 0.3 + 100_000 * 3.75 + 1000 * 15) / 1e6)


def test_an_agent_reports_its_cached_tokens_as_agentv_does() -> None:
    """AgentV's `token_usage {input, output, cached}`: the cached count was dropped."""
    reply = reply_from_json({"text": "done", "token_usage": {"input": 10, "output": 2, "cached": 8}})
    assert reply.usage.model_dump() == {
        "input_tokens": 10,
        "output_tokens": 2,
        "cached_input_tokens": 8,
        "cache_write_tokens": 0,
    }


def test_exports_count_the_cached_tokens_as_inspect_and_opentelemetry_do(cli, tmp_path: Path) -> None:
    """Inspect's `input_tokens` leaves out the prompt cache's, counted in `input_tokens_cache_read`;
    the GenAI conventions' input counts them, and `gen_ai.usage.cache_read.input_tokens` says how many."""
    log_module = pytest.importorskip("inspect_ai.log")
    with canned(OPENAI) as url:
        _run_twice(cli, tmp_path, "openai", "gpt-4o-mini", url + "/v1")
    code, _, err = cli("report", tmp_path / "r1.jsonl", "--inspect-log", tmp_path / "run.eval")
    assert code == 0, err
    (sample,) = log_module.read_eval_log(str(tmp_path / "run.eval")).samples
    usage = sample.model_usage["t"]
    assert (usage.input_tokens, usage.input_tokens_cache_read, usage.output_tokens, usage.total_tokens) == (
        100_000,
        900_000,
        1000,
        1_001_000,
    )
    pytest.importorskip("opentelemetry.exporter.otlp.proto.http")
    from .otlp_receiver import OtlpReceiver

    with OtlpReceiver() as receiver:
        code, _, err = cli("report", tmp_path / "r1.jsonl", "--otel-endpoint", receiver.endpoint)
        assert code == 0, err
    (chat,) = [s for s in receiver.spans() if s["name"].startswith("chat")]
    counts = {a["key"]: next(iter(a["value"].values())) for a in chat["attributes"] if "usage" in a["key"]}
    assert counts == {
        "gen_ai.usage.input_tokens": "1000000",
        "gen_ai.usage.output_tokens": "1000",
        "gen_ai.usage.cache_read.input_tokens": "900000",
    }


def test_an_agent_may_report_an_openai_or_anthropic_usage() -> None:
    """A python (or http) agent passing on its model's `usage` as the API gave it: an OpenAI one
    (`prompt_tokens`) was 0 tokens."""
    from convoeval.targets.agents._python import as_reply

    openai = as_reply({"text": "ok", "usage": OPENAI["usage"]}, "agent").usage
    anthropic = as_reply({"text": "ok", "usage": ANTHROPIC["usage"]}, "agent").usage
    assert (openai.input_tokens, openai.output_tokens, openai.cached_input_tokens) == (1_000_000, 1000, 900_000)
    assert (anthropic.input_tokens, anthropic.cached_input_tokens, anthropic.cache_write_tokens) == (
        1_000_000,
        800_000,
        100_000,
    )


def test_a_turn_without_a_known_price_has_no_cost_and_the_run_says_so(cli, tmp_path: Path) -> None:
    """A model with no price (not listed, none set): its turns' cost was 0.0, as a free call's,
    and the run's totals did not say that some calls were unpriced."""
    with canned(OPENAI) as url:
        write(
            tmp_path / "targets.yaml",
            "targets:\n"
            f"  - {{name: free, provider: openai, model: mine, base_url: '{url}/v1', api_key: sk-test-123456,"
            " price_input_per_mtok: 0, price_output_per_mtok: 0}\n"
            f"  - {{name: unknown, provider: openai, model: mine, base_url: '{url}/v1', api_key: sk-test-123456}}\n",
        )
        suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
        code, out, err = cli("run", suite, "-t", "free", "-t", "unknown", "-o", tmp_path / "r.jsonl", "--no-cache")
    assert code == 0, out + err
    costs = {r["target"]: (r["cost_usd"], r["scores"][0]["cost_usd"]) for r in read_jsonl(tmp_path / "r.jsonl")}
    assert costs == {"free": (0.0, 0.0), "unknown": (0.0, None)}
    assert "1 call(s) of unknown had no known price and count as $0" in " ".join(out.split())
    for report in ("r.md", "r.html"):  # the reports say so too
        code, _, err = cli("report", tmp_path / "r.jsonl", "-o", tmp_path / report)
        assert code == 0, err
        assert "1 turn(s) of no known price counted as $0" in (tmp_path / report).read_text(), report


#: An agent's answer with an OpenAI `usage`: 1,000 prompt tokens (400 cached), 200 completion tokens.
AGENT_ANSWER = {
    "text": "done",
    "usage": {"prompt_tokens": 1000, "completion_tokens": 200, "prompt_tokens_details": {"cached_tokens": 400}},
}


def test_python_cli_and_http_agents_price_the_same_usage_alike(cli, tmp_path: Path) -> None:
    """The target's prices priced an `http` agent's usage but not a `python` or `cli` agent's
    (cost $0, unknown), and a `cli` agent's OpenAI-shaped `usage` was 0 tokens."""
    write(tmp_path / "agent.py", f"def chat(messages, **context):\n    return {AGENT_ANSWER!r}\n")
    write(tmp_path / "answer.json", json.dumps(AGENT_ANSWER))
    with canned(AGENT_ANSWER) as url:
        prices = "price_input_per_mtok: 1, price_output_per_mtok: 2"
        write(
            tmp_path / "targets.yaml",
            "targets:\n"
            f"  - {{name: py, provider: python, callable: 'agent.py:chat', {prices}}}\n"
            f"  - {{name: cmd, provider: cli, command: 'cp answer.json {{OUTPUT_FILE}}', cwd: '{tmp_path}', {prices}}}\n"
            f"  - {{name: web, provider: http, url: '{url}', body: {{q: '{{{{ prompt }}}}'}}, reply_path: $.text,"
            f" usage_path: $.usage, {prices}}}\n",
        )
        suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
        targets = ("-t", "py", "-t", "cmd", "-t", "web")
        code, out, err = cli("run", suite, *targets, "-o", tmp_path / "r.jsonl", "--no-cache")
    assert code == 0, out + err
    usage = {"input_tokens": 1000, "output_tokens": 200, "cached_input_tokens": 400, "cache_write_tokens": 0}
    cost = (1000 * 1 + 200 * 2) / 1e6  # a price set on the target prices cached input as input
    results = {r["target"]: (r["token_usage"], r["scores"][0]["cost_usd"]) for r in read_jsonl(tmp_path / "r.jsonl")}
    assert results == {name: (usage, pytest.approx(cost)) for name in ("py", "cmd", "web")}


def test_cache_writes_in_a_chat_completion_count_and_cost_as_anthropic_s(cli, tmp_path: Path) -> None:
    """A Claude model's `usage` as OpenRouter and LiteLLM give it (OpenAI's shape, its cache writes in
    `prompt_tokens_details.cache_write_tokens`): the writes were 0 and cost the input price."""
    body = json.loads(json.dumps(OPENAI))
    body["usage"]["prompt_tokens_details"] = {"cached_tokens": 800_000, "cache_write_tokens": 100_000}
    with canned(body) as url:
        fresh, cached = _run_twice(cli, tmp_path, "openai", "anthropic/claude-sonnet-4-5", url + "/v1")
    usage = {
        "input_tokens": 1_000_000,
        "output_tokens": 1000,
        "cached_input_tokens": 800_000,
        "cache_write_tokens": 100_000,
    }
    cost = (100_000 * 3 + 800_000 * 0.3 + 100_000 * 3.75 + 1000 * 15) / 1e6  # as the anthropic target's
    for result in (fresh, cached):
        assert (result["token_usage"], result["cost_usd"]) == (usage, pytest.approx(cost)), result
