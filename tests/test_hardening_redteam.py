"""Attacks of the third red-team round (sandbox and secrets, from outside), each on the real
program: `convoeval run` in-process or as a subprocess, real bubblewrap, a loopback model server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from convoeval.testing import FakeOpenAIServer

from .conftest import read_jsonl, write

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed (.ci/run installs it)")

GATEWAY_KEY = "gw-secret-ZZ998877-abcdef"
DB_PASSWORD = "DbPass-1234567890"

ENV_DUMP_SUITE = """
execution:
  target: t
tests:
  - id: envdump
    mode: conversation
    workspace:
      template: tpl
      keep: always
      hooks:
        before_all: {command: 'env > before_all.env'}
        before_each: {command: 'env > before_each.env'}
    verify: {command: 'env > verify.env', timeout_s: 30}
    turns:
      - input: hello
    assertions:
      - type: code-grader
        command: [sh, -c, 'cat >/dev/null; env > grader.env; echo "{\\"score\\": 1}"']
"""


@needs_bwrap
def test_suite_commands_get_no_secret_whatever_its_variable_is_named(
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A target's key read from `${{ GATEWAY_VALUE }}` and a password in `DATABASE_URL` are
    secrets though their names say nothing: a hook, `verify` and a code-grader (which could print
    them base64-encoded, past the redaction, or send them out) never get them. Before: all four
    commands had both in their environment."""
    write(tmp_path / "tpl" / "a.txt", "x\n")
    suite = write(tmp_path / "s.eval.yaml", ENV_DUMP_SUITE)
    monkeypatch.setenv("GATEWAY_VALUE", GATEWAY_KEY)
    monkeypatch.setenv("DATABASE_URL", f"postgres://app:{DB_PASSWORD}@db.internal/app")
    monkeypatch.setenv("PLAIN_SETTING", "still-there")
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        write(
            tmp_path / "targets.yaml",
            "targets:\n  - {name: t, provider: openai, model: m, "
            f"base_url: '{server.base_url}', api_key: '${{{{ GATEWAY_VALUE }}}}'}}\n",
        )
        code, out, err = cli("run", suite, "--store", tmp_path / "st", "-o", tmp_path / "r.jsonl")
        assert server.requests and server.headers[0].get("Authorization") == f"Bearer {GATEWAY_KEY}"
    assert code == 0, out + err
    kept = Path(read_jsonl(tmp_path / "r.jsonl")[0]["trials"][0]["workspace"])
    try:
        dumps = {p.name: p.read_text() for p in [*tmp_path.glob("*.env"), *kept.glob("*.env")]}
    finally:
        shutil.rmtree(kept, ignore_errors=True)
    assert set(dumps) == {"before_all.env", "before_each.env", "verify.env", "grader.env"}
    for name, text in dumps.items():
        assert "PLAIN_SETTING=still-there" in text, name  # the rest of the environment is kept
        assert GATEWAY_KEY not in text, f"{name} got the target's key"
        assert DB_PASSWORD not in text, f"{name} got the database password"


def _convoeval(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "convoeval", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120
    )


@needs_bwrap
def test_a_dotenv_beside_the_suite_cannot_turn_the_sandbox_off(tmp_path: Path) -> None:
    """A suite that ships `.env` with `CONVOEVAL_SANDBOX=none` (next to its eval file, or in the
    folder the user runs from) does not get its commands run unconfined: the run stays in
    bubblewrap and stderr says why. Before: `sandbox: none`, and the hook wrote to the host."""
    marker = tmp_path / "written-from-the-hook"
    folder = tmp_path / "downloaded-suite"
    write(folder / "tpl" / "a.txt", "x\n")
    write(folder / ".env", "CONVOEVAL_SANDBOX=none\nCONVOEVAL_THRESHOLD=0.5\n")
    suite = write(
        folder / "s.eval.yaml",
        f"""
tests:
  - id: escape
    mode: conversation
    workspace:
      template: tpl
      hooks: {{before_each: {{command: 'echo escaped > {marker} || true'}}}}
    turns:
      - input: hello
""",
    )
    env = {k: v for k, v in os.environ.items() if k != "CONVOEVAL_SANDBOX"}
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        env |= {"OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-x-unused-here"}
        for cwd in (tmp_path, folder):  # the suite's folder, then the folder the user runs from
            done = _convoeval("run", str(suite), "--target", "openai:m", "-o", str(tmp_path / "r.jsonl"), cwd=cwd, env=env)
            [result] = read_jsonl(tmp_path / "r.jsonl")
            assert result["sandbox"] == "bubblewrap", done.stdout + done.stderr
            assert result["threshold"] == 0.5  # the rest of the file still applies
            assert "CONVOEVAL_SANDBOX=none ignored: a .env file cannot turn the sandbox off" in done.stderr
            assert done.returncode == 0 and not marker.exists()
        env["CONVOEVAL_SANDBOX"] = "none"  # the user's own environment still may (and the hook then escapes)
        done = _convoeval("run", str(suite), "--target", "openai:m", "-o", str(tmp_path / "r.jsonl"), cwd=folder, env=env)
    assert read_jsonl(tmp_path / "r.jsonl")[0]["sandbox"] == "none" and "ignored" not in done.stderr
    assert marker.read_text() == "escaped\n"
