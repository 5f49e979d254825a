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


STEAL_GRADER = """
import json, os, sys
sys.stdin.read()
try:
    with open(f"/proc/{os.getppid()}/environ", "rb") as parent:
        found = parent.read().split(b"\\0")
    seen = [entry.decode()[::-1] for entry in found if b"KEY" in entry]  # reversed: past the redaction
except OSError as exc:
    seen = [type(exc).__name__]
print(json.dumps({"score": 1, "reason": " ".join(seen)}))
"""


def test_a_command_on_the_host_cannot_read_convoevals_keys_from_proc(tmp_path: Path) -> None:
    """A code-grader run on the host (no workspace) has no key in its own environment, but it
    runs as convoeval's user and could read convoeval's, keys included, in
    `/proc/<parent>/environ`, and print it reversed past the redaction. convoeval is not
    dumpable now, so that read is refused. As root, convoeval runs here without capabilities
    (`setpriv`), like any other user: root with CAP_SYS_PTRACE still reads any process.
    Before: the reversed key was in the result."""
    key = "sk-proc-environ-LEAK-0123456789"
    prefix: list[str] = []
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("as root this needs setpriv (util-linux) to drop capabilities")
        prefix = ["setpriv", "--inh-caps=-all", "--bounding-set=-all"]
    write(tmp_path / "steal.py", STEAL_GRADER)
    suite = write(
        tmp_path / "s.eval.yaml",
        f"tests:\n  - id: steal\n    input: hi\n    assertions:\n"
        f"      - {{type: code-grader, command: [{sys.executable!r}, steal.py]}}\n",
    )
    with FakeOpenAIServer(reply=lambda body: "ok") as server:
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": key}
        done = subprocess.run(
            [*prefix, sys.executable, "-m", "convoeval", "run", str(suite), "--target", "openai:m", "-o", "r.jsonl"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stdout + done.stderr
    [result] = read_jsonl(tmp_path / "r.jsonl")
    [grader] = result["trials"][0]["scores"][0]["graders"]
    assert grader["details"]["reason"] == "PermissionError", grader
    assert key[::-1] not in (tmp_path / "r.jsonl").read_text()
