"""Checked before the first call, through the real CLI against the loopback fake OpenAI server:
every target and judge name an eval file gives is defined (`validate` and `run`, all problems at
once, `file:line: field: ...`), and every target the run will call has the API key it needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer

from .conftest import write

REPO = Path(__file__).resolve().parent.parent

SUITE = """\
tests:
  - id: t1
    input: Where should I go in May?
    assertions:
      - {type: contains, value: Reply}
      - Answers the question
"""
NAMES = """\
execution:
  target: my-bot
  judge: gpt-4o
tests:
  - id: t1
    input: hi
    assertions:
      - {type: rubrics, criteria: [Friendly], judge: strict-jduge}
  - id: t2
    simulated_user: {objective: book a room, max_turns: 2, model: user-bot}
    success: [A room is booked]
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


def test_a_target_only_recorded_tests_name_needs_no_key(cli, tmp_path: Path) -> None:
    """A recorded transcript never calls its target: grading one under `--target openai:...` with
    no key set is no configuration error (the first key check stopped it)."""
    recorded = write(
        tmp_path / "r.eval.yaml",
        "tests:\n  - id: r\n    mode: conversation\n    transcript:\n      - {role: user, content: hi}\n"
        "      - {role: assistant, content: hello}\n    turn_assertions: [{type: contains, value: hello}]\n",
    )
    code, stdout, stderr = cli("run", recorded, "--target", "openai:gpt-4o-mini", "--no-cache")
    assert code == 0, stdout + stderr
    live = write(tmp_path / "l.eval.yaml", "tests:\n  - {id: l, input: hi}\n")
    code, _, stderr = cli("run", live, "--target", "openai:gpt-4o-mini", "--no-cache")
    assert code == 2 and "error: target 'openai:gpt-4o-mini': no API key; set OPENAI_API_KEY" in stderr


# -- target and judge names -------------------------------------------------------------------
def test_validate_and_run_name_every_undefined_target_and_judge_at_once(cli, tmp_path: Path) -> None:
    write(tmp_path / "targets.yaml", "targets:\n  - {name: strict-judge, provider: scripted}\n")
    suite = write(tmp_path / "s.eval.yaml", NAMES)
    expected = [
        f"{suite}:2: execution.target: 'my-bot' is neither `provider:model` nor a name from a targets file",
        f"{suite}:3: execution.judge: 'gpt-4o' is neither `provider:model` nor a name from a targets file",
        f"{suite}:8: tests[0].assertions[0].judge: 'strict-jduge' is neither `provider:model` nor a name from a "
        "targets file (did you mean 'strict-judge'?) (names defined: strict-judge)",
        f"{suite}:10: tests[1].simulated_user.model: 'user-bot' is neither `provider:model` nor a name",
    ]
    code, stdout, stderr = cli("validate", suite)
    assert code == 2 and "valid" not in stdout
    lines = stderr.strip().splitlines()
    assert len(lines) == 4 and all(line.startswith(e) for line, e in zip(lines, expected, strict=True)), lines
    code, _, stderr = cli("run", suite, "--no-cache")
    assert code == 2 and stderr.strip().splitlines() == lines  # the same, before anything runs
    code, _, stderr = cli("run", suite, "--target", "scripted", "--no-cache")  # --target replaces my-bot
    assert code == 2 and [line.split(": ")[1] for line in stderr.strip().splitlines()] == [
        "execution.judge",
        "tests[0].assertions[0].judge",
        "tests[1].simulated_user.model",
    ]


def test_names_resolve_in_the_targets_file_a_run_reads(cli, tmp_path: Path) -> None:
    fixed = NAMES.replace("strict-jduge", "strict-judge").replace("gpt-4o\n", "openai:gpt-4o\n")
    suite = write(tmp_path / "evals" / "s.eval.yaml", fixed)
    elsewhere = write(tmp_path / "ci.yaml", "targets:\n  - {name: my-bot, provider: scripted}\n  - {name: strict-judge, provider: scripted}\n  - {name: user-bot, provider: scripted}\n")  # fmt: skip
    code, _, stderr = cli("validate", suite)  # no targets file: its own target is for --target
    assert code == 2 and "'my-bot'" not in stderr and "'strict-judge'" in stderr
    code, stdout, stderr = cli("validate", suite, "--targets", elsewhere)
    assert (code, stdout.strip()) == (0, "1 file(s) valid"), stderr
    write(tmp_path / ".git" / "HEAD", "ref: refs/heads/main\n")  # AgentV looks up to the repository root
    write(tmp_path / ".agentv" / "targets.yaml", elsewhere.read_text())
    code, stdout, stderr = cli("validate", suite)
    assert (code, stdout.strip()) == (0, "1 file(s) valid"), stderr
    code, stdout, stderr = cli("validate", suite, "--targets", tmp_path / "missing.yaml")
    assert code == 2 and "targets file not found" in stderr


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("description: x\n\ntarget: nope\ntests:\n  - {id: a, input: hi, criteria: c}\n", "execution.target"),
        ("description: x\n\nproviders: [llm, nope]\ntests:\n  - {id: a, vars: {input: hi}, assert: [Hi]}\n",
         "execution.targets[1]"),
    ],
)  # fmt: skip
def test_agentv_names_a_target_where_its_file_does(cli, tmp_path: Path, text: str, field: str) -> None:
    """AgentV's top-level `target` and v5's `providers` are the suite's targets, at their lines."""
    write(tmp_path / ".agentv" / "targets.yaml", "targets:\n  - {name: llm, provider: scripted}\n")
    suite = write(tmp_path / "suite.yaml", text)
    code, _, stderr = cli("validate", suite)
    assert code == 2 and stderr.startswith(f"{suite}:3: {field}: 'nope' is neither `provider:model` nor a name"), stderr
    assert len(stderr.strip().splitlines()) == 1


def test_the_shared_agentv_suites_validate_as_they_are(cli, tmp_path: Path) -> None:
    """The two AgentV suites copied without a targets file (as in shared/peers/agentv): their
    SOURCE.txt says `validate` accepts them (AgentV's own `validate` checks no target names);
    `run` still needs their `llm` given (--target), before any call."""
    for name in ("rubric.eval.yaml", "multi-turn-conversation-live.eval.yaml"):
        write(tmp_path / name, (REPO / "examples" / "agentv" / name).read_text())
    code, stdout, stderr = cli(
        "validate", tmp_path / "rubric.eval.yaml", tmp_path / "multi-turn-conversation-live.eval.yaml"
    )
    assert (code, stdout.strip()) == (0, "2 file(s) valid"), stderr
    code, _, stderr = cli("run", tmp_path / "rubric.eval.yaml", "--no-cache")
    assert code == 2 and "execution.target: 'llm' is neither `provider:model` nor a name" in stderr, stderr


def test_a_suite_shared_alone_has_the_provider_of_its_provider_model_target_checked(cli, tmp_path: Path) -> None:
    """Without a targets file, a suite's own target *name* is left to `run --target`; but
    `opnai:gpt-4o` is no name, and every run of it fails: `validate` says so, as `run` does."""
    suite = write(tmp_path / "s.eval.yaml", "execution:\n  target: opnai:gpt-4o\ntests:\n  - {id: a, input: hi}\n")
    code, _, stderr = cli("validate", suite)
    assert code == 2 and stderr.startswith(
        f"{suite}:2: execution.target: unknown provider 'opnai' (did you mean 'openai'?)"
    )
    code, _, run_stderr = cli("run", suite, "--no-cache")
    assert code == 2 and run_stderr == stderr
