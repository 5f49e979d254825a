"""The response cache: keys, hits, --no-cache, --cache-dir, errors never cached, no secrets."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.engine import CachedTarget, ResponseCache, cache_key, target_identity
from convoeval.targets import ChatReply, ChatRequest, TargetConfig, TargetError, create_target
from convoeval.testing import FakeOpenAIServer, Fault

from .conftest import read_jsonl, write

SECRET = "sk-test-SECRET-never-stored-1234"

CONVERSATION = """\
tests:
  - id: chat
    mode: conversation
    turns:
      - input: first question
        assertions: ["The reply mentions the first question"]
      - input: second question
        assertions: [{type: contains, value: second}]
  - id: single
    input: hello
"""


def _request(**changes: object) -> ChatRequest:
    request = ChatRequest(messages=[{"role": "user", "content": "hi"}])
    for key, value in changes.items():
        setattr(request, key, value)
    return request


def test_cache_key_covers_what_decides_the_answer_and_nothing_secret() -> None:
    config = TargetConfig(
        name="a", provider="openai", model="m", base_url="http://x/v1", temperature=0.2, params={"seed": 1}
    )
    identity = target_identity(config)
    base = cache_key(identity, _request())
    # Each of these changes the answer, so each changes the key.
    assert cache_key(identity, _request(trial=1)) != base
    assert cache_key(identity, _request(messages=[{"role": "user", "content": "hi!"}])) != base
    assert cache_key(identity, _request(temperature=0.0)) != base
    assert cache_key(identity, _request(max_tokens=10)) != base
    assert cache_key(identity, _request(response_schema={"type": "object"})) != base
    for change in (
        {"model": "m2"},
        {"base_url": "http://y/v1"},
        {"params": {"seed": 2}},
        {"provider": "anthropic"},
        {"temperature": 0.3},
    ):
        other = config.model_copy(update=change)
        assert cache_key(target_identity(other), _request()) != base, change
    # ...while the name, the key, headers, retries and limits do not.
    same = TargetConfig(
        name="b",
        provider="openai",
        model="m",
        base_url="http://x/v1",
        temperature=0.2,
        params={"seed": 1},
        api_key=SECRET,
        headers={"X-Key": SECRET},
        max_retries=9,
        timeout_s=5,
        concurrency=3,
        rpm=10,
        tpm=1000,
        price_input_per_mtok=1.0,
    )
    assert cache_key(target_identity(same), _request()) == base
    assert SECRET not in repr(target_identity(same))


class Counting:
    name = "counting"

    def __init__(self, fail: bool = False):
        self.calls = 0
        self.fail = fail

    async def chat(self, request: ChatRequest) -> ChatReply:
        self.calls += 1
        if self.fail:
            raise TargetError("boom")
        return ChatReply(text=f"answer {request.trial}", latency_ms=12.5, cost_usd=0.01)

    async def aclose(self) -> None:
        return None


async def test_cached_target_hits_misses_and_never_caches_errors(tmp_path: Path) -> None:
    cache = ResponseCache(tmp_path / "c.sqlite")
    inner = Counting()
    target = CachedTarget(inner, cache, {"provider": "test", "model": "m"})
    first = await target.chat(_request())
    assert not first.cached and inner.calls == 1
    cache.close()  # commits the background writes

    cache = ResponseCache(tmp_path / "c.sqlite")
    target = CachedTarget(inner, cache, {"provider": "test", "model": "m"})
    again = await target.chat(_request())
    assert again.cached and again.text == "answer 0" and again.latency_ms == 12.5 and again.cost_usd == 0.01
    assert inner.calls == 1
    assert (await target.chat(_request(trial=1))).text == "answer 1" and inner.calls == 2  # trials differ

    failing = CachedTarget(Counting(fail=True), cache, {"provider": "test", "model": "other"})
    for _ in range(2):
        with pytest.raises(TargetError):
            await failing.chat(_request())
    assert failing.inner.calls == 2  # the error was not cached
    cache.close()


async def test_a_reply_holding_a_secret_is_not_cached(tmp_path: Path) -> None:
    class Leaky(Counting):
        async def chat(self, request: ChatRequest) -> ChatReply:
            self.calls += 1
            return ChatReply(text=f"your key is {SECRET}")

    cache = ResponseCache(tmp_path / "c.sqlite")
    target = CachedTarget(Leaky(), cache, {"provider": "t"}, secrets=(SECRET,))
    await target.chat(_request())
    cache.close()
    assert SECRET.encode() not in (tmp_path / "c.sqlite").read_bytes()
    assert len(ResponseCache(tmp_path / "c.sqlite")) == 0


def test_rerun_of_an_unchanged_suite_makes_no_model_calls(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", CONVERSATION)
    args = ("run", suite, "--target", "openai:m", "--judge", "openai:judge", "-o", tmp_path / "r.jsonl")
    code, out, _ = cli(*args)
    assert code == 0, out
    calls = len(fake_openai.requests)
    assert calls == 4 and len(fake_openai.judge_requests()) == 1
    assert "4 model call(s), 0 cache hit(s)" in out
    first = read_jsonl(tmp_path / "r.jsonl")

    code, out, _ = cli(*args)
    assert code == 0 and len(fake_openai.requests) == calls  # target and judge answered from the cache
    assert "0 model call(s), 4 cache hit(s)" in out
    again = read_jsonl(tmp_path / "r.jsonl")
    assert [(r["test_id"], r["score"], r["output"]) for r in again] == [
        (r["test_id"], r["score"], r["output"]) for r in first
    ]
    assert again[0]["scores"][0]["graders"][0]["verdict"] == "pass"

    code, out, _ = cli(*args, "--no-cache")
    assert len(fake_openai.requests) == 2 * calls and "4 model call(s), 0 cache hit(s)" in out


def test_cache_dir_and_trials(cli, fake_openai, tmp_path: Path) -> None:
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    cli(
        "run",
        suite,
        "--target",
        "openai:m",
        "--trials",
        "3",
        "--cache-dir",
        tmp_path / "elsewhere",
        "-o",
        tmp_path / "r.jsonl",
    )
    assert len(fake_openai.requests) == 3  # one call per trial: trials are not answered from the cache
    assert (tmp_path / "elsewhere" / "cache.sqlite").is_file()
    assert not (tmp_path / ".convoeval" / "cache.sqlite").exists()
    code, out, _ = cli(
        "run",
        suite,
        "--target",
        "openai:m",
        "--trials",
        "3",
        "--cache-dir",
        tmp_path / "elsewhere",
        "-o",
        tmp_path / "r.jsonl",
    )
    assert len(fake_openai.requests) == 3 and "3 cache hit(s)" in out


def test_failed_calls_are_not_cached(cli, fake_openai, tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", "targets:\n  - {name: t, provider: openai, model: m, max_retries: 0}\n")
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    fake_openai.faults.append(Fault(status=500))
    code, _, _ = cli("run", suite, "--target", "t", "-o", tmp_path / "r.jsonl")
    assert code == 3 and read_jsonl(tmp_path / "r.jsonl")[0]["execution_status"] == "execution_error"
    code, _, _ = cli("run", suite, "--target", "t", "-o", tmp_path / "r.jsonl")
    assert code == 0 and len(fake_openai.requests) == 2


def test_secrets_never_reach_cache_store_results_or_output(cli, fake_openai, tmp_path: Path, monkeypatch) -> None:
    team_key = "sk-team-TOPSECRET-abcdef123456"
    monkeypatch.setenv("TEAM_KEY", team_key)
    write(
        tmp_path / "targets.yaml",
        f"""\
targets:
  - name: team
    provider: openai
    model: m
    base_url: "{fake_openai.base_url}"
    api_key_env: TEAM_KEY
    headers: {{X-Team: "${{{{ TEAM_KEY }}}}"}}
""",
    )
    suite = write(tmp_path / "s.eval.yaml", CONVERSATION)
    fake_openai.faults.append(Fault(status=401, body=f'{{"error": "bad key {team_key}"}}', match="hello"))
    code, out, err = cli("run", suite, "--target", "team", "--judge", "openai:judge", "-o", tmp_path / "r.jsonl")
    assert {r["test_id"]: r["execution_status"] for r in read_jsonl(tmp_path / "r.jsonl")}[
        "single"
    ] == "execution_error"
    headers = {k.lower(): v for k, v in fake_openai.headers[0].items()}
    assert headers["authorization"] == f"Bearer {team_key}"  # the key was used...
    state = [p for p in (tmp_path / ".convoeval").rglob("*") if p.is_file()]
    assert any(p.name == "cache.sqlite" for p in state) and any(p.name == "runs.sqlite" for p in state)
    for path in [*state, tmp_path / "r.jsonl"]:
        data = path.read_bytes()
        for secret in (team_key, SECRET):  # ...but is nowhere on disk (WAL files included)
            assert secret.encode() not in data, path
    assert team_key not in out + err and SECRET not in out + err


def test_target_objects_are_cached_only_when_they_say_so(tmp_path: Path, monkeypatch) -> None:
    import convoeval

    monkeypatch.chdir(tmp_path)
    suite = write(tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n")
    plain, willing = Counting(), Counting()
    willing.name = "willing"
    willing.cacheable = True  # type: ignore[attr-defined]
    for _ in range(2):
        convoeval.run(suite, target=[plain, willing])
    assert plain.calls == 2 and willing.calls == 1


async def test_openai_target_cache_round_trip_over_http(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        config = TargetConfig(name="t", provider="openai", model="m", base_url=server.base_url)
        inner = create_target(config)
        cache = ResponseCache(tmp_path / "c.sqlite")
        target = CachedTarget(inner, cache, target_identity(config, inner))
        first = await target.chat(_request())
        second = await target.chat(_request())
        await target.aclose()
        cache.close()
        assert len(server.requests) == 1 and second.cached and second.text == first.text
        assert second.usage == first.usage


#: The responses table as releases before this one made it (and the statements they used).
_EARLIER_SCHEMA = (
    "CREATE TABLE responses (key TEXT PRIMARY KEY, provider TEXT NOT NULL, model TEXT NOT NULL,"
    " created REAL NOT NULL, value TEXT NOT NULL) WITHOUT ROWID"
)
_EARLIER_INSERT = "INSERT OR REPLACE INTO responses (key, provider, model, created, value) VALUES (?, ?, ?, ?, ?)"


async def test_cache_files_of_either_layout_are_shared_with_earlier_releases(tmp_path: Path) -> None:
    import sqlite3

    identity = {"provider": "test", "model": "m"}
    stored = '{"text": "from before", "usage": [3, 4], "latency_ms": 9.0, "cost_usd": 0.5, "tool_calls": [],'
    stored += ' "finish_reason": "stop"}'
    earlier = tmp_path / "earlier.sqlite"  # a file an earlier release wrote: its reply is found
    with sqlite3.connect(earlier) as conn:
        conn.execute(_EARLIER_SCHEMA)
        conn.execute(_EARLIER_INSERT, (cache_key(identity, _request()), "test", "m", 1.0, stored))
    cache = ResponseCache(earlier)
    inner = Counting()
    target = CachedTarget(inner, cache, identity)
    hit = await target.chat(_request())
    assert hit.cached and hit.text == "from before" and hit.usage.output_tokens == 4 and inner.calls == 0
    assert not (await target.chat(_request(trial=1))).cached  # stored in the earlier file's layout
    cache.close()
    with sqlite3.connect(earlier) as conn:
        assert "WITHOUT ROWID" in conn.execute("SELECT sql FROM sqlite_master WHERE name = 'responses'").fetchone()[0]
        assert conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 2

    fresh = tmp_path / "fresh.sqlite"  # a file this release made: an earlier release's statements work on it
    cache = ResponseCache(fresh)
    await CachedTarget(inner, cache, identity).chat(_request())
    cache.close()
    key = cache_key(identity, _request())
    with sqlite3.connect(fresh) as conn:
        (value,) = conn.execute("SELECT value FROM responses WHERE key = ?", (key,)).fetchone()
        assert value.startswith('{"text":"answer 0"')
        conn.execute(_EARLIER_INSERT, (key, "test", "m", 2.0, stored))  # replaces, never duplicates
        assert conn.execute("SELECT COUNT(*), MAX(value) FROM responses").fetchone() == (1, stored)
        with pytest.raises(sqlite3.IntegrityError):
            conn.execute(_EARLIER_INSERT.replace("OR REPLACE ", ""), (key, "p", "m", 0.0, "v"))
    cache = ResponseCache(fresh)
    assert (await CachedTarget(inner, cache, identity).chat(_request())).text == "from before"
    cache.close()
