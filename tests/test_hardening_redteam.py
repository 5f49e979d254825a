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
