"""Retries against a misbehaving server, per-provider connection limits, rpm/tpm token buckets."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from convoeval.run import dependency_order
from convoeval.spec import Test
from convoeval.targets import ChatRequest, ProviderLimits, TargetConfig, TargetError, TokenBucket, create_target
from convoeval.targets._limits import Connections
from convoeval.testing import FakeOpenAIServer, Fault

from .conftest import read_jsonl, write


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_token_bucket_paces_requests_after_the_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(rate_per_minute=60, clock=clock)  # one a second, bursts of one
    assert [bucket.reserve() for _ in range(4)] == [0.0, 1.0, 2.0, 3.0]
    clock.now += 10  # a quiet spell refills the bucket, but only up to the burst
    assert [bucket.reserve() for _ in range(2)] == [0.0, 1.0]


def test_token_bucket_for_tokens_lets_a_big_call_through_alone_and_settles_after() -> None:
    clock = Clock()
    bucket = TokenBucket(rate_per_minute=6000, clock=clock)  # 100 tokens a second, burst 100
    assert bucket.reserve(50) == 0.0 and bucket.reserve(50) == 0.0
    assert bucket.reserve(50) == pytest.approx(0.5)
    clock.now += 100
    assert bucket.reserve(1000) == 0.0  # bigger than the burst: goes when the bucket is full
    assert bucket.reserve(10) == pytest.approx(9.1)  # ...and the next waits until 10 are back
    bucket.adjust(-900)  # the big call used 100 tokens, not 1000: give 900 back
    assert bucket.reserve(10) == pytest.approx(0.2)


async def test_provider_limits_pause_holds_every_caller(monkeypatch) -> None:
    clock = Clock()
    slept: list[float] = []

    async def fake_sleep(seconds: float) -> None:
        slept.append(round(seconds, 6))
        clock.now += seconds

    monkeypatch.setattr(asyncio, "sleep", fake_sleep)
    limits = ProviderLimits(rpm=120, clock=clock)
    limits.pause(3.0)
    for _ in range(3):
        async with limits.slot():
            pass
    assert slept == [3.0, 0.5]  # the Retry-After pause, then rpm pacing (2 a second, burst of 2)


async def test_connection_limit_of_a_target_is_respected() -> None:
    with FakeOpenAIServer(latency_s=0.05) as server:
        target = create_target(
            TargetConfig(name="t", provider="openai", model="m", base_url=server.base_url, concurrency=2)
        )
        await asyncio.gather(
            *(target.chat(ChatRequest(messages=[{"role": "user", "content": str(i)}])) for i in range(8))
        )
        await target.aclose()
        assert len(server.requests) == 8 and server.max_in_flight <= 2


async def test_a_freed_connection_is_taken_before_its_last_holder_goes_on() -> None:
    """The caller waiting for a connection sends its request before the one that freed it goes
    on with its reply; with no caller waiting, the holder goes on at once."""
    limits, order = ProviderLimits(concurrency=1), []

    async def call(name: str, start_after: float) -> None:
        await asyncio.sleep(start_after)
        async with limits.slot():
            order.append(f"{name} sends")
            await asyncio.sleep(0.01)
        order.append(f"{name} goes on")

    await asyncio.gather(call("a", 0), call("b", 0.001))
    assert order == ["a sends", "b sends", "a goes on", "b goes on"]


async def test_replies_that_arrive_together_let_every_waiting_caller_send_first() -> None:
    """Two holders whose replies arrive in one turn of the event loop: both callers waiting for
    their connections send before either holder goes on (one turn would let `a` go on before
    `d`, woken by `b`, sends); a cancelled holder leaves no callback failing behind it."""
    limits, order, replies = ProviderLimits(concurrency=2), [], asyncio.Event()

    async def call(name: str) -> None:
        async with limits.slot():
            order.append(f"{name} sends")
            if name in "ab":
                await replies.wait()
        order.append(f"{name} goes on")

    calls = [asyncio.create_task(call(name)) for name in "abcd"]
    await asyncio.sleep(0.01)
    replies.set()
    await asyncio.gather(*calls)
    assert order[:4] == ["a sends", "b sends", "c sends", "d sends"]
    assert sorted(order[4:]) == ["a goes on", "b goes on", "c goes on", "d goes on"]

    limits, failed = ProviderLimits(concurrency=1), []
    asyncio.get_running_loop().set_exception_handler(lambda loop, context: failed.append(context))
    holder, waiter = asyncio.create_task(call("a")), asyncio.create_task(call("e"))
    replies.clear()
    await asyncio.sleep(0.01)
    replies.set()
    await asyncio.sleep(0)  # `a` frees its connection for `e` and waits its two turns
    holder.cancel()
    await asyncio.gather(holder, waiter, return_exceptions=True)
    await asyncio.sleep(0.01)
    assert holder.cancelled() and order[-1] == "e goes on" and failed == []


async def test_connections_go_to_the_longest_waiting_caller_and_survive_cancellations() -> None:
    """Freed connections go to waiting callers in their order, never to a newcomer; a caller
    cancelled while it waits leaves its place, and one cancelled once handed a connection
    hands it on; no connection is lost or made up."""
    connections, order = Connections(2), []

    async def use(name: str, hold: asyncio.Event) -> None:
        async with connections:
            order.append(name)
            await hold.wait()

    gates = {name: asyncio.Event() for name in "abcdef"}
    tasks = {name: asyncio.create_task(use(name, gates[name])) for name in "abcd"}
    await asyncio.sleep(0.01)
    assert order == ["a", "b"] and connections.free == 0 and len(connections.waiters) == 2
    tasks["c"].cancel()  # cancelled while it waits: `d` is next
    await asyncio.sleep(0.01)
    assert len(connections.waiters) == 1
    gates["a"].set()
    assert not connections.take()  # `a`'s connection goes to `d`, not to a newcomer
    await asyncio.sleep(0.01)
    assert order == ["a", "b", "d"] and connections.free == 0
    tasks["e"] = asyncio.create_task(use("e", gates["e"]))
    await asyncio.sleep(0.01)
    gates["b"].set()  # handed to `e`, which is cancelled before it runs: it hands it on
    await asyncio.sleep(0)
    tasks["e"].cancel()
    await asyncio.sleep(0.01)
    assert "e" not in order and connections.free == 1 and not connections.waiters and connections.woken == 0
    gates["d"].set()
    await asyncio.gather(*tasks.values(), return_exceptions=True)
    assert connections.free == 2 and connections.take() and connections.free == 1
    assert connections.release() is False and (connections.free, connections.woken) == (2, 0)


def test_rate_limit_settings_come_from_the_targets_file(tmp_path: Path) -> None:
    target = create_target(
        TargetConfig(name="t", provider="openai", model="m", base_url="http://127.0.0.1:9/v1", rpm=600, tpm=100_000)
    )
    assert target.limits.requests.rate == 10 and target.limits.tokens.rate == pytest.approx(100_000 / 60)
    with pytest.raises(TargetError, match="t: rpm: Input should be a valid number"):
        create_target(TargetConfig(name="t", provider="openai", model="m", rpm="lots"))


def test_transient_failures_are_retried_then_the_run_goes_on(cli, tmp_path: Path, monkeypatch) -> None:
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        write(
            tmp_path / "targets.yaml",
            f"""\
targets:
  - name: flaky
    provider: openai
    model: m
    base_url: {server.base_url}
    timeout_s: 0.3
    max_retries: 4
""",
        )
        suite = write(
            tmp_path / "s.eval.yaml",
            """\
tests:
  - id: survives
    input: survive please
  - id: gives-up
    input: give up please
  - id: fine
    input: fine
""",
        )
        now = {"Retry-After": "0"}  # keeps the test fast; the timeout backs off (< 0.5 s)
        server.faults.extend(
            [
                Fault(delay_s=1.0, match="survive"),  # longer than timeout_s: a timeout
                Fault(status=429, headers=now, match="survive"),
                Fault(status=500, headers=now, match="survive"),
                Fault(body="<html>not json</html>", headers=now, match="survive"),
                Fault(status=503, headers=now, match="give up", times=99),
            ]
        )
        code, out, err = cli("run", suite, "--target", "flaky", "-o", tmp_path / "r.jsonl", "--no-cache")
        results = {r["test_id"]: r for r in read_jsonl(tmp_path / "r.jsonl")}
        survive_calls = [r for r in server.requests if r["messages"][-1]["content"] == "survive please"]
        assert len(survive_calls) == 5 and results["survives"]["verdict"] == "pass"
        gave_up = results["gives-up"]
        assert gave_up["execution_status"] == "execution_error" and "HTTP 503" in gave_up["error"]
        assert "5 attempt" in gave_up["error"]
        assert results["fine"]["verdict"] == "pass"
        assert code == 1
        assert "1 failed call(s)" in out


def test_dependency_order_puts_dependencies_first() -> None:
    tests = [
        Test(id="c", input="x", depends_on=["b"]),
        Test(id="a", input="x"),
        Test(id="b", input="x", depends_on=["a"]),
        Test(id="d", input="x"),
    ]
    assert [tests[i].id for i in dependency_order(tests)] == ["a", "b", "c", "d"]


def _judged_suite(tmp_path: Path, n: int) -> Path:
    tests = "".join(
        f"  - id: t{i}\n    mode: conversation\n    turns:\n"
        f"      - {{input: 'a{i}', assertions: [Says something useful]}}\n"
        f"      - {{input: 'b{i}', assertions: [Says something useful]}}\n"
        for i in range(n)
    )
    return write(tmp_path / "s.eval.yaml", "tests:\n" + tests)


@pytest.mark.parametrize("limit", [3, 5])
def test_max_connections_bounds_target_and_judge_on_one_endpoint(cli, tmp_path: Path, monkeypatch, limit) -> None:
    # Target and judge are two entries on the same server and key: together they never have
    # more than --max-connections requests in flight, though 8 conversations run at once.
    with FakeOpenAIServer(latency_s=0.1) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        code, _, _ = cli(
            "run", _judged_suite(tmp_path, 8), "--target", "openai:m", "--judge", "openai:j",
            "--concurrency", "8", "--max-connections", str(limit), "--no-cache", "-o", tmp_path / "r.jsonl",
        )  # fmt: skip
        assert code == 0
        assert len(server.target_requests()) == 16 and len(server.judge_requests()) == 16
        assert server.max_in_flight == limit  # bounded, and the bound is really used


def test_targets_on_one_endpoint_share_the_tightest_connection_limit(cli, tmp_path: Path, monkeypatch) -> None:
    with FakeOpenAIServer(latency_s=0.1) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        write(
            tmp_path / "targets.yaml",
            "targets:\n"
            "  - {name: bot, provider: openai, model: m, max_connections: 2}\n"
            "  - {name: grader, provider: openai, model: j, concurrency: 6}\n",
        )
        code, _, _ = cli(
            "run", _judged_suite(tmp_path, 6), "--target", "bot", "--judge", "grader",
            "--concurrency", "6", "--no-cache", "-o", tmp_path / "r.jsonl",
        )  # fmt: skip
        assert code == 0 and server.max_in_flight == 2


def test_endpoints_with_other_keys_or_servers_have_their_own_limits() -> None:
    from convoeval.targets import EndpointLimits
    from convoeval.targets._limits import endpoint_key

    shared = EndpointLimits(max_connections=4)
    a = shared.share(endpoint_key("http://127.0.0.1:8000/v1/chat/completions", "k1"), ProviderLimits())
    b = shared.share(endpoint_key("http://127.0.0.1:8000/v1/messages", "k1"), ProviderLimits(concurrency=9, rpm=60))
    c = shared.share(endpoint_key("http://127.0.0.1:8000/v1/chat/completions", "k2"), ProviderLimits())
    assert a is b and a is not c
    assert a.concurrency == 4 and a.requests is not None and a.requests.rate == 1.0
    assert "k1" not in endpoint_key("http://h/v1", "k1")  # a hash, never the key


def test_max_connections_bounds_a_tool_agent_target_too(cli, tmp_path: Path, monkeypatch) -> None:
    # The built-in tool agent wraps an HTTP target: its requests count against the endpoint's bound.
    with FakeOpenAIServer(latency_s=0.1) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        write(
            tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: openai, model: m, agent: {tools: [bash]}}\n"
        )
        tests = "".join(f"  - {{id: t{i}, input: 'question {i}'}}\n" for i in range(6))
        suite = write(tmp_path / "s.eval.yaml", "execution: {target: bot}\ntests:\n" + tests)
        code, out, err = cli(
            "run", suite, "--judge", "scripted", "--concurrency", "6", "--max-connections", "2", "--no-cache",
            "-o", tmp_path / "r.jsonl",
        )  # fmt: skip
        assert code == 0, out + err
        assert len(server.requests) == 6 and server.max_in_flight == 2
