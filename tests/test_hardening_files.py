"""File references stay inside the suite's folder (or CONVOEVAL_ROOT), regular and small (issue 10, item 10)."""

from __future__ import annotations

from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer

from .conftest import write

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
