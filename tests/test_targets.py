"""Providers over real HTTP to the loopback fake server, and the scripted target."""

from __future__ import annotations

import json

import pytest

from convoeval.results import Usage
from convoeval.targets import ChatRequest, TargetConfig, TargetError, create_target
from convoeval.testing import FakeOpenAIServer, Fault

SCHEMA = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}


async def test_openai_structured_output_request_and_usage(fake_openai: FakeOpenAIServer) -> None:
    target = create_target(
        TargetConfig(name="j", provider="openai", model="m", price_input_per_mtok=1.0, price_output_per_mtok=2.0)
    )
    try:
        reply = await target.chat(
            ChatRequest(
                messages=[{"role": "user", "content": "a b c"}],
                response_schema=SCHEMA,
                schema_name="verdict",
                temperature=0.0,
            )
        )
    finally:
        await target.aclose()
    sent = fake_openai.requests[0]
    assert sent["response_format"]["json_schema"] == {"name": "verdict", "schema": SCHEMA, "strict": True}
    assert sent["temperature"] == 0.0
    assert json.loads(reply.text) == {"ok": True}
    assert reply.usage == Usage(input_tokens=3, output_tokens=2)  # the fake counts words
    assert reply.cost_usd == pytest.approx((3 * 1.0 + 2 * 2.0) / 1e6)


async def test_openai_malformed_completion_is_a_target_error(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.faults.append(Fault(body='{"choices": []}'))
    target = create_target(TargetConfig(name="t", provider="openai", model="m", max_retries=0))
    with pytest.raises(TargetError, match="malformed response"):
        await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    await target.aclose()


async def test_openai_reply_the_standard_library_reads_is_read(fake_openai: FakeOpenAIServer) -> None:
    # NaN is not JSON, so orjson refuses it; Python's json module (and servers written with it) allow it.
    fake_openai.faults.append(
        Fault(
            body='{"choices": [{"message": {"content": "ok"}}], "usage": {"prompt_tokens": NaN, "completion_tokens": 2}}'
        )
    )
    target = create_target(TargetConfig(name="t", provider="openai", model="m", max_retries=0))
    try:
        reply = await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    finally:
        await target.aclose()
    assert reply.text == "ok" and reply.usage == Usage(input_tokens=0, output_tokens=2)  # a count that is no number: 0


async def test_openai_client_errors_are_not_retried_and_keys_are_redacted(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.faults.append(
        Fault(status=401, body='{"error": "Incorrect API key provided: sk-test-SECRET-never-stored-1234"}')
    )
    target = create_target(TargetConfig(name="t", provider="openai", model="m", max_retries=3))
    with pytest.raises(TargetError) as info:
        await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    await target.aclose()
    assert "HTTP 401" in str(info.value) and "SECRET" not in str(info.value)
    assert len(fake_openai.requests) == 1


async def test_openai_timeout_then_give_up() -> None:
    with FakeOpenAIServer() as server:
        server.faults.append(Fault(delay_s=1.0, times=2))
        target = create_target(
            TargetConfig(name="t", provider="openai", model="m", base_url=server.base_url, timeout_s=0.2, max_retries=1)
        )
        with pytest.raises(TargetError, match="timed out after 0.2s.*2 attempt"):
            await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
        await target.aclose()


async def test_official_openai_without_key_says_what_to_do(monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    target = create_target(TargetConfig(name="openai:gpt-4o-mini", provider="openai", model="gpt-4o-mini"))
    with pytest.raises(TargetError, match="set OPENAI_API_KEY"):
        await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))


async def test_anthropic_messages_api(monkeypatch) -> None:
    with FakeOpenAIServer(reply=lambda body: "Bonjour") as server:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url.removesuffix("/v1"))
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-key-123456789")
        target = create_target(TargetConfig(name="a", provider="anthropic", model="claude-x"))
        reply = await target.chat(
            ChatRequest(messages=[{"role": "system", "content": "be french"}, {"role": "user", "content": "hello"}])
        )
        structured = await target.chat(
            ChatRequest(messages=[{"role": "user", "content": "judge"}], response_schema=SCHEMA)
        )
        await target.aclose()
        first = server.requests[0]
        assert first["system"] == "be french" and first["messages"] == [{"role": "user", "content": "hello"}]
        assert first["max_tokens"] == 1024
        headers = {k.lower(): v for k, v in server.headers[0].items()}
        assert headers["x-api-key"] == "sk-ant-test-key-123456789" and headers["anthropic-version"]
        assert reply.text == "Bonjour" and reply.usage.output_tokens == 1
        assert server.requests[1]["tool_choice"] == {"type": "tool", "name": "submit"}
        assert json.loads(structured.text) == {"ok": True}  # from the forced tool_use block


async def test_scripted_target_rules_replies_and_failures() -> None:
    target = create_target(
        TargetConfig(
            name="s",
            provider="scripted",
            replies=["first", "second"],
            rules=[{"match": "(?i)paris", "reply": "France"}],
            fail_on="explode",
        )
    )
    ask = lambda *users: target.chat(ChatRequest(messages=[{"role": "user", "content": u} for u in users]))  # noqa: E731
    assert (await ask("hi")).text == "first"
    assert (await ask("hi", "again")).text == "second"
    assert (await ask("hi", "again", "more")).text == "first"
    assert (await ask("Where is Paris?")).text == "France"
    with pytest.raises(TargetError, match="scripted failure"):
        await ask("explode now")


def test_unknown_provider() -> None:
    with pytest.raises(TargetError, match="unknown provider 'nope'"):
        create_target(TargetConfig(name="x", provider="nope"))


def test_basic_auth_in_the_url_and_an_api_key_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both would be the Authorization header. Before: every call failed with aiohttp's
    `ValueError: Cannot combine AUTHORIZATION header with AUTH argument...`."""
    config = TargetConfig(
        name="gw", provider="openai", model="m", base_url="http://u:pw@127.0.0.1:9/v1", api_key="sk-k"
    )
    with pytest.raises(TargetError, match="HTTP basic auth.*API key"):
        create_target(config)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    create_target(config.model_copy(update={"api_key": None}))  # the URL's credentials alone are fine
