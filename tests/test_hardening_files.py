"""File references stay inside the suite's folder, its git repository (or CONVOEVAL_ROOT), regular and small
(issue 10, item 10)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer

from .conftest import DATA, write

SECRET_TEXT = "outside-secret-content"


@pytest.mark.parametrize("ref", ["../outside/x.yaml", "/etc/hostname"])
def test_a_tests_file_outside_the_suite_folder_is_a_file_line_error(cli, tmp_path: Path, ref: str) -> None:
    write(tmp_path / "outside" / "x.yaml", "- {id: t, input: hi}\n")
    suite = write(tmp_path / "suite" / "s.eval.yaml", f"description: d\ntests: {ref}\n")
    code, out, err = cli("validate", suite)
    assert code == 2
    assert err.startswith(f"{suite}:2: tests: {ref} is outside the suite's folder"), err


def test_a_root_widens_where_files_may_be(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "outside" / "x.yaml", "- {id: t, input: hi}\n")
    suite = write(tmp_path / "suite" / "s.eval.yaml", "tests: ../outside/x.yaml\n")
    monkeypatch.setenv("CONVOEVAL_ROOT", str(tmp_path))
    assert cli("validate", suite)[0] == 0


@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_root_option_widens_where_files_may_be(cli, tmp_path: Path, monkeypatch, command: str) -> None:
    monkeypatch.setenv("CONVOEVAL_ROOT", "")  # restored after the test: --root sets it for the process
    write(tmp_path / "outside" / "x.yaml", "- {id: t, input: hi}\n")
    suite = write(tmp_path / "suite" / "s.eval.yaml", "tests: ../outside/x.yaml\n")
    code, _, err = cli(command, suite, "--target", "scripted") if command == "run" else cli(command, suite)
    assert code == 2 and "name a wider root with --root" in err
    extra = ["--target", "scripted", "--judge", "scripted"] if command == "run" else []
    assert cli(command, suite, *extra, "--root", tmp_path)[0] == 0
    assert cli(command, suite, "--root", tmp_path / "nowhere")[0] == 2


def test_a_tests_file_that_is_not_regular_is_refused(cli, tmp_path: Path) -> None:
    (tmp_path / "dir.yaml").mkdir()
    suite = write(tmp_path / "s.eval.yaml", "tests: dir.yaml\n")
    code, _, err = cli("validate", suite)
    assert code == 2 and "dir.yaml is not a regular file" in err


@pytest.mark.parametrize("ref", ["file:///etc/hostname", "file://../outside/secret.txt", "file:///dev/zero"])
def test_a_prompt_file_outside_the_folder_is_a_file_line_error_and_never_sent(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, ref: str
) -> None:
    write(tmp_path / "outside" / "secret.txt", SECRET_TEXT + " {{ output }}")
    suite = write(
        tmp_path / "suite" / "s.eval.yaml",
        f"tests:\n  - id: t\n    input: hi\n    assertions:\n      - type: llm-grader\n        prompt: {ref}\n",
    )
    code, out, err = cli("run", suite, "--target", "openai:m", "--judge", "openai:j", "-o", tmp_path / "r.jsonl")
    # Refused when the suite loads (validate says the same), before any call is made.
    assert code == 2 and f"{suite}:6: tests[0].assertions[0].prompt: " in err and "outside the suite's folder" in err
    assert cli("validate", suite)[0] == 2
    assert not fake_openai.requests
    assert all(SECRET_TEXT not in str(r) for r in fake_openai.requests)


def _repository(path: Path) -> Path:
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    return path


def test_files_in_the_suites_repository_are_reached_without_a_root(
    cli, fake_openai: FakeOpenAIServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """AgentV's v5 suites sit in `suites/` or `evals/` and name graders beside that folder
    (`file://../graders/refusal.md`): in a checkout they run as they are, as in AgentV."""
    monkeypatch.delenv("CONVOEVAL_ROOT", raising=False)
    repo = _repository(tmp_path / "repo")
    write(repo / "graders" / "strict.md", "STRICT-GRADER-TEXT: grade {{ output }}\n")
    write(
        repo / "cases.yaml",
        "- id: t\n  input: hi\n  assertions:\n    - {type: llm-grader, prompt: file://../graders/strict.md}\n",
    )
    suite = write(repo / "suites" / "s.eval.yaml", "tests: ../cases.yaml\n")
    assert cli("validate", suite)[0] == 0
    code, _, err = cli("run", suite, "--target", "openai:m", "--judge", "openai:j", "-o", tmp_path / "r.jsonl")
    assert code in (0, 1), err
    assert any("STRICT-GRADER-TEXT" in str(r["messages"]) for r in fake_openai.requests)
    shutil.rmtree(repo / ".git")
    code, _, err = cli("validate", suite)  # the same files outside a repository: the suite's folder only
    assert code == 2 and "../cases.yaml is outside the suite's folder" in err and "and its repository" in err


def test_a_file_beyond_the_suites_repository_is_still_refused(cli, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("CONVOEVAL_ROOT", raising=False)
    write(tmp_path / "outside" / "secret.md", SECRET_TEXT)
    repo = _repository(tmp_path / "repo")
    suite = write(
        repo / "suites" / "s.eval.yaml",
        "tests:\n  - id: t\n    input: hi\n    assertions:\n"
        "      - {type: llm-grader, prompt: 'file://../../outside/secret.md'}\n",
    )
    code, _, err = cli("validate", suite)
    assert code == 2 and f"{suite}:5: tests[0].assertions[0].prompt: " in err and "outside the suite's folder" in err


def test_agentvs_red_team_suites_validate_in_a_checkout_without_a_root(cli, tmp_path: Path, monkeypatch) -> None:
    """AgentV's own files (v5.3.1-next.1, examples/red-team, copied whole), in a git checkout."""
    monkeypatch.delenv("CONVOEVAL_ROOT", raising=False)
    checkout = _repository(tmp_path / "agentv")
    shutil.copytree(DATA / "agentv" / "v5.3.1-next.1" / "examples" / "red-team", checkout / "examples" / "red-team")
    (checkout / ".agentv").mkdir()  # the checkout's targets (`llm`, `grader`), which the suites name
    shutil.copy(DATA / "agentv" / "v5.3.1-next.1" / ".agentv" / "targets.yaml", checkout / ".agentv" / "targets.yaml")
    suites = sorted((checkout / "examples" / "red-team").rglob("*.eval.yaml"))
    assert len(suites) >= 20
    named = [s for s in suites if "file://../" in s.read_text()]
    assert named, "no suite names a grader outside its folder"
    code, out, err = cli("validate", *suites)
    assert code == 0, err
