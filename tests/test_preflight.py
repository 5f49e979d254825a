"""Checked before the first call, through the real CLI against the loopback fake OpenAI server:
every target the run will call has the API key it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer

from .conftest import write

SUITE = """\
tests:
  - id: t1
    input: Where should I go in May?
    assertions:
      - {type: contains, value: Reply}
      - Answers the question
"""
SIMULATED = """\
tests:
  - id: t2
    simulated_user: {objective: book a room, max_turns: 2, model: anthropic:claude-haiku-4-5}
    success: [A room is booked]
"""


# -- API keys ---------------------------------------------------------------------------------
@pytest.mark.parametrize("processes", ["1", "2"])
def test_a_judge_without_its_key_stops_the_run_before_the_target_is_called(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, processes: str
) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    code, stdout, stderr = cli(
        "run", suite, "--target", "openai:gpt-4o-mini", "--judge", "anthropic:claude-sonnet-4-5", "--no-cache",
        "--processes", processes,
    )  # fmt: skip
    assert code == 2, stdout + stderr
    assert (
        stderr.strip().splitlines()[-1]
        == "error: judge 'anthropic:claude-sonnet-4-5': no API key; set ANTHROPIC_API_KEY"
    )
    assert fake_openai.requests == []  # nothing paid for


@pytest.mark.parametrize(
    ("targets", "options", "said"),
    [
        ("", ["--target", "openai:gpt-4o-mini"], "target 'openai:gpt-4o-mini': no API key; set OPENAI_API_KEY"
         " or point OPENAI_BASE_URL at a local server"),
        ("  - {name: j, provider: anthropic, model: claude-x, api_key_env: MY_CLAUDE_KEY}\n",
         ["--target", "scripted", "--judge", "j"], "judge 'j': no API key; set MY_CLAUDE_KEY"),
        ("  - {name: r, provider: openrouter, model: openai/gpt-4o-mini}\n",
         ["--target", "r"], "target 'r': no API key; set OPENROUTER_API_KEY"),
    ],
)  # fmt: skip
def test_a_hosted_api_without_its_key_is_a_configuration_error(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, targets: str, options: list[str], said: str
) -> None:
    monkeypatch.delenv("OPENROUTER_API_KEY", raising=False)
    monkeypatch.delenv("MY_CLAUDE_KEY", raising=False)
    write(tmp_path / "targets.yaml", "targets:\n" + targets if targets else "targets: []\n")
    suite = write(tmp_path / "s.eval.yaml", SUITE)
    code, stdout, stderr = cli("run", suite, *options, "--no-cache")
    assert code == 2, stdout + stderr
    assert stderr.strip().splitlines()[-1] == f"error: {said}"


def test_a_check_judge_and_a_simulator_without_their_keys_are_found_before_the_run(cli, tmp_path: Path) -> None:
    judged = SUITE.replace("      - Answers the question\n", "      - {type: rubrics, criteria: [Polite], judge: anthropic:claude-x}\n")  # fmt: skip
    code, _, stderr = cli("run", write(tmp_path / "s.eval.yaml", judged), "--target", "scripted", "--no-cache")
    assert code == 2 and "error: a check's judge 'anthropic:claude-x': no API key; set ANTHROPIC_API_KEY" in stderr
    simulated = write(tmp_path / "u.eval.yaml", SIMULATED)
    code, _, stderr = cli("run", simulated, "--target", "scripted", "--judge", "scripted", "--no-cache")
    assert code == 2 and "error: simulated_user.model 'anthropic:claude-haiku-4-5': no API key" in stderr


def test_a_local_server_needs_no_key_and_an_unneeded_judge_needs_none(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY")  # OPENAI_BASE_URL points at the loopback server
    write(tmp_path / "targets.yaml", f"targets:\n  - {{name: vllm, provider: openai, model: m, base_url: '{fake_openai.base_url}'}}\n")  # fmt: skip
    suite = write(tmp_path / "s.eval.yaml", SUITE.replace("      - Answers the question\n", ""))
    for target in ("openai:gpt-4o-mini", "vllm"):
        code, stdout, stderr = cli("run", suite, "--target", target, "--judge", "anthropic:claude-x", "--no-cache")
        assert code == 0, stdout + stderr  # no check needs a judge: the judge is never built
    assert len(fake_openai.target_requests()) == 2
