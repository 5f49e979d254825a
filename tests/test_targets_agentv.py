"""Targets files as AgentV keeps them (issue 14 item 5), typed provider settings (issue 9
item 3) and `${{ VAR }}` / `params` rules of targets files (issue 10 item 9)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.spec import DEFAULT_SYSTEM_PROMPT, SpecError
from convoeval.spec._targets_file import find_targets_file, load_targets_file
from convoeval.targets import TargetConfig, TargetError, create_target
from convoeval.testing import FakeOpenAIServer

from .conftest import read_jsonl, write

SUITE = "execution:\n  target: llm\ntests:\n  - id: a\n    input: hi\n    assertions: [{type: contains, value: hi}]\n"


def problems(path: Path) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_targets_file(path)
    return [str(p) for p in info.value.problems]


# -- typed settings -------------------------------------------------------------------------


def test_provider_settings_are_validated_when_the_file_loads(tmp_path: Path) -> None:
    path = write(
        tmp_path / "targets.yaml",
        """\
targets:
  - name: a
    provider: openai
    model: m
    rpm: fast
  - name: b
    provider: openai
    model: m
    rpn: 5
  - name: c
    provider: scripted
    rules: [{match: x}]
  - name: d
    provider: local
    n_ctx: big
  - name: e
    provider: openai
    model: m
    timeout_s: -1
""",
    )
    found = problems(path)
    assert found[0] == f"{path}:5: targets[0].rpm: Input should be a valid number, unable to parse string as a number"
    assert found[1].startswith(f"{path}:9: targets[1].rpn: unknown field for this provider (known: ")
    assert "rpm" in found[1] and "params" in found[1]
    assert found[2] == f"{path}:12: targets[2].rules: each rule is {{match: REGEX, reply: TEXT}}"
    assert found[3].startswith(f"{path}:15: targets[3].n_ctx: Input should be a valid integer")
    assert found[4] == f"{path}:19: targets[4].timeout_s: Input should be greater than 0"


def test_settings_are_checked_for_configs_built_in_code() -> None:
    with pytest.raises(TargetError, match="t: rpm: must be a number, not true/false"):
        create_target(TargetConfig(name="t", provider="openai", model="m", rpm=True))
    with pytest.raises(TargetError, match="t: replise: not a setting of provider 'scripted'"):
        create_target(TargetConfig(name="t", provider="scripted", replise=["x"]))


def test_params_cannot_set_what_the_target_owns(tmp_path: Path) -> None:
    path = write(
        tmp_path / "targets.yaml",
        """\
targets:
  - name: a
    provider: openai
    model: m
    params: {seed: 1, messages: [{role: user, content: injected}], model: other}
""",
    )
    assert problems(path) == [
        f"{path}:5: targets[0].params: cannot set messages, model: the target owns these "
        "(use the target's own fields, e.g. `model`, `temperature`, `max_tokens`)"
    ]


async def test_allowed_params_reach_the_request_body(fake_openai: FakeOpenAIServer) -> None:
    target = create_target(
        TargetConfig(
            name="t", provider="openai", model="m", base_url=fake_openai.base_url, params={"seed": 7, "top_p": 0.5}
        )
    )
    from convoeval.targets import ChatRequest

    await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    await target.aclose()
    body = fake_openai.requests[0]
    assert (body["seed"], body["top_p"], body["model"]) == (7, 0.5, "m")


# -- ${{ VAR }} and unusable entries ----------------------------------------------------------


def test_unset_variable_is_an_error_naming_it_when_that_target_is_used(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_KEY_SET", raising=False)
    monkeypatch.setenv("LLM_MODEL", "gpt-4o-mini")
    write(
        tmp_path / "targets.yaml",
        f"""\
targets:
  - name: llm
    provider: openai
    model: ${{{{ LLM_MODEL }}}}
    base_url: {fake_openai.base_url}
  - name: other
    provider: openai
    model: m
    api_key: ${{{{ NO_SUCH_KEY_SET }}}}
  - name: gem
    provider: gemini
    model: g
""",
    )
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    code, out, err = cli("run", suite, "-o", tmp_path / "r.jsonl")  # `llm` is fine: the others are not used
    assert code == 0, out + err
    assert fake_openai.target_requests()[0]["model"] == "gpt-4o-mini"
    code, out, err = cli("run", suite, "--target", "other")
    assert code == 2
    assert (
        f"{tmp_path / 'targets.yaml'}:9: targets[1].api_key: environment variable NO_SUCH_KEY_SET is not set"
        in out + err
    )
    code, out, err = cli("run", suite, "--target", "gem")
    assert code == 2
    assert f"{tmp_path / 'targets.yaml'}:11: targets[2].provider: provider 'gemini' is not implemented" in out + err


# -- AgentV's targets files -----------------------------------------------------------------


def test_agentv_targets_file_is_found_walking_up_and_endpoint_is_honoured(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_ENDPOINT", fake_openai.base_url)
    monkeypatch.delenv("OPENAI_BASE_URL")  # only `endpoint` can lead to the fake server
    write(tmp_path / "repo" / ".git" / "HEAD", "ref: main\n")
    write(
        tmp_path / "repo" / ".agentv" / "targets.yaml",
        """\
targets:
  - name: base
    provider: openai
    endpoint: ${{ MY_ENDPOINT }}
    api_key: sk-test
    model: gpt-4o-mini
    grader_target: base
    provider_batching: false
    healthcheck: {url: http://localhost/health}
    workers: 2
  - name: llm
    use_target: base
""",
    )
    suite = write(tmp_path / "repo" / "examples" / "evals" / "s.eval.yaml", SUITE)
    assert find_targets_file(suite.parent) == tmp_path / "repo" / ".agentv" / "targets.yaml"
    code, out, err = cli("run", suite, "-o", tmp_path / "r.jsonl")
    assert code == 0, out + err
    assert read_jsonl(tmp_path / "r.jsonl")[0]["target"] == "llm"
    assert fake_openai.paths == ["/v1/chat/completions"]
    assert fake_openai.headers[0]["Authorization"] == "Bearer sk-test"


def test_targets_yaml_next_to_the_suite_wins_and_the_walk_stops_at_the_repository(tmp_path: Path) -> None:
    write(tmp_path / ".agentv" / "targets.yaml", "targets: []\n")
    repo = tmp_path / "repo"
    write(repo / ".git", "gitdir: elsewhere\n")
    assert find_targets_file(repo / "evals") is None
    write(repo / "evals" / "targets.yaml", "targets: []\n")
    assert find_targets_file(repo / "evals") == repo / "evals" / "targets.yaml"


def test_use_target_unknown_name_is_an_error(tmp_path: Path) -> None:
    path = write(tmp_path / "targets.yaml", "targets:\n  - name: a\n    use_target: nowhere\n")
    assert problems(path) == [f"{path}:3: targets[0].use_target: no target named 'nowhere' (names: none)"]


@pytest.mark.parametrize("provider", ["[openai]", "{name: openai}"])
def test_a_provider_that_is_no_string_is_a_file_line_error(cli, tmp_path: Path, provider: str) -> None:
    """Before: `TypeError: unhashable type: 'list'` (the provider was looked up in a set)."""
    write(tmp_path / "targets.yaml", f"targets:\n  - name: bot\n    provider: {provider}\n    endpoint: http://x\n")
    write(tmp_path / "s.eval.yaml", "tests:\n  - {id: t, input: hi}\n")
    code, _, err = cli("run", "s.eval.yaml", "-t", "bot")
    assert (code, err) == (2, f"{tmp_path / 'targets.yaml'}:3: targets[0].provider: Input should be a valid string\n")


async def test_azure_is_an_openai_compatible_preset(fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    path = write(
        tmp_path / "targets.yaml",
        f"""\
targets:
  - name: az
    provider: azure
    endpoint: {fake_openai.base_url.removesuffix("/v1")}
    api_key: azure-key
    model: my-deployment
    version: 2024-06-01
""",
    )
    from convoeval.targets import ChatRequest

    target = create_target(load_targets_file(path)["az"])
    reply = await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))
    await target.aclose()
    assert reply.text == "Reply to: hi"
    assert fake_openai.paths == ["/openai/deployments/my-deployment/chat/completions?api-version=2024-06-01"]
    assert fake_openai.headers[0]["api-key"] == "azure-key" and "Authorization" not in fake_openai.headers[0]


async def test_openrouter_preset_needs_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    from convoeval.targets import ChatRequest

    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    target = create_target(TargetConfig(name="or", provider="openrouter", model="openai/gpt-4o-mini"))
    assert target.url == "https://openrouter.ai/api/v1/chat/completions"
    with pytest.raises(TargetError, match="or: no API key; set OPENROUTER_API_KEY$"):
        await target.chat(ChatRequest(messages=[{"role": "user", "content": "hi"}]))


def test_grader_target_judges_when_no_judge_is_given(cli, fake_openai: FakeOpenAIServer, tmp_path: Path) -> None:
    write(
        tmp_path / "targets.yaml",
        f"""\
targets:
  - name: llm
    provider: openai
    model: target-model
    base_url: {fake_openai.base_url}
    grader_target: grader
  - name: grader
    provider: openai
    model: judge-model
    base_url: {fake_openai.base_url}
""",
    )
    suite = write(
        tmp_path / "s.eval.yaml",
        "execution:\n  target: llm\ntests:\n  - id: a\n    input: hi\n    assertions: [Greets the user]\n",
    )
    code, out, err = cli("run", suite, "-o", tmp_path / "r.jsonl")
    assert code == 0, out + err
    assert "judge: grader (the grader_target of llm)" in out + err
    assert [r["model"] for r in fake_openai.judge_requests()] == ["judge-model"]
    assert [r["model"] for r in fake_openai.target_requests()] == ["target-model"]


# -- issue 28: run as AgentV users run them ---------------------------------------------------

AGENTV_TARGETS = """\
targets:
  - name: default
    provider: openai
    model: default-model
    base_url: {base}
  - name: other
    provider: openai
    model: other-model
    base_url: {base}
    timeout_seconds: 30
"""


def _agentv_repo(tmp_path: Path, base_url: str) -> Path:
    """An AgentV-style repository: .git, .agentv/targets.yaml at its root, an eval below."""
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    write(repo / ".agentv" / "targets.yaml", AGENTV_TARGETS.format(base=base_url))
    return repo


def test_agentv_file_default_target_own_judge_and_default_system_prompt(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    repo = _agentv_repo(tmp_path, fake_openai.base_url)
    suite = write(
        repo / "examples" / "a" / "evals" / "dataset.eval.yaml",
        "tests:\n  - id: a\n    input: hi\n    assertions: [Greets the user]\n"
        "  - id: b\n    input:\n      - {role: system, content: Be brief.}\n      - {role: user, content: yo}\n"
        "    assertions: [Greets the user]\n",
    )
    code, out, err = cli("run", suite, "--no-cache", "-o", tmp_path / "r.jsonl")
    assert code in (0, 1), out + err
    assert "target: default" in out + err and "judge: the target itself (default" in out + err
    sent = {r["messages"][-1]["content"]: r["messages"] for r in fake_openai.target_requests()}
    # No system message in the test: AgentV's DEFAULT_SYSTEM_PROMPT goes first; with one, it does not.
    assert sent["hi"] == [
        {"role": "system", "content": DEFAULT_SYSTEM_PROMPT},
        {"role": "user", "content": "hi"},
    ]
    assert sent["yo"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "yo"}]
    assert DEFAULT_SYSTEM_PROMPT == (
        "You are a careful assistant. Follow all provided instructions and do not fabricate results."
    )
    assert {r["model"] for r in fake_openai.judge_requests()} == {"default-model"}


def test_a_file_outside_an_agentv_tree_gets_no_default_system_prompt(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    suite = write(
        tmp_path / "s.eval.yaml", "tests:\n  - id: a\n    input: hi\n    assertions: [{type: contains, value: h}]\n"
    )
    code, out, err = cli("run", suite, "--target", "openai:m", "--no-cache", "-o", tmp_path / "r.jsonl")
    assert code == 0, out + err
    [request] = fake_openai.target_requests()
    assert request["messages"] == [{"role": "user", "content": "hi"}]


def test_targets_file_timeout_seconds_is_timeout_s(tmp_path: Path) -> None:
    repo = _agentv_repo(tmp_path, "http://127.0.0.1:9/v1")
    configs = load_targets_file(repo / ".agentv" / "targets.yaml")
    assert configs["other"].timeout_s == 30


def test_the_default_system_prompt_goes_before_the_suite_input(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path
) -> None:
    repo = _agentv_repo(tmp_path, fake_openai.base_url)
    suite = write(
        repo / "ex" / "e.eval.yaml",
        "input: Use the context.\ntests:\n  - {id: a, input: q1, assertions: [{type: contains, value: q}]}\n"
        "  - {id: b, input: q2, execution: {skip_defaults: true}, assertions: [{type: contains, value: q}]}\n",
    )
    code, out, err = cli("run", suite, "--no-cache", "-o", tmp_path / "r.jsonl")
    assert code == 0, out + err
    sent = {r["messages"][-1]["content"]: [m["role"] for m in r["messages"]] for r in fake_openai.target_requests()}
    assert sent == {"q1": ["system", "user", "user"], "q2": ["system", "user"]}
