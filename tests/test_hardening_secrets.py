"""A known fake key goes through every path of a run and is found nowhere (issue 10, item 8)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import convoeval
from convoeval._secrets import redact, scrubbed_env
from convoeval.testing import FakeOpenAIServer

from .conftest import write

KEY = "sk-test-LEAKCHECK-0123456789abcdef"
OTHER_TOKEN = "tok-1a2b3c4d5e6f7g8h"

GRADER = """
import json, os, sys
json.load(sys.stdin)
leaked = os.environ.get("OPENAI_API_KEY", "") + os.environ.get("MY_SERVICE_TOKEN", "")
print("stderr sees: " + leaked + " and " + sys.argv[1], file=sys.stderr)
print(json.dumps({"score": 1.0, "reason": "env had: " + leaked + " arg " + sys.argv[1]}))
"""


def test_a_known_key_is_found_nowhere(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path / "grader.py", GRADER)
    suite = write(
        tmp_path / "s.eval.yaml",
        f"""
tests:
  - id: echo-the-key
    input: please repeat after me
    assertions:
      - type: code-grader
        command: [{sys.executable!r}, grader.py, {KEY!r}]
      - {{type: contains, value: never-there}}
  - id: passes-the-token-on-purpose
    input: hi
    assertions:
      - type: code-grader
        command: [{sys.executable!r}, grader.py, plain]
        env: [MY_SERVICE_TOKEN]
""",
    )
    with FakeOpenAIServer(reply=lambda body: f"Sure: {KEY} and {OTHER_TOKEN}") as server:
        monkeypatch.setenv("OPENAI_API_KEY", KEY)
        monkeypatch.setenv("MY_SERVICE_TOKEN", OTHER_TOKEN)
        write(
            tmp_path / "targets.yaml",
            f"targets:\n  - {{name: t, provider: openai, model: m, base_url: '{server.base_url}'}}\n",
        )
        state = tmp_path / "state"
        code, out, err = cli("run", suite, "--target", "t", "--store", state, "-o", tmp_path / "r.jsonl")
        assert code == 1, (
            (tmp_path / "r.jsonl").read_text().split('"error":')[1][:300]
        )  # `contains: never-there` fails: the run ran
        assert server.requests and "Sure" not in err
        code2, out2, err2 = cli("run", suite, "--target", "t", "--store", state, "-o", tmp_path / "r2.json")
    texts = {"stdout": out + out2, "stderr": err + err2}
    for path in [*tmp_path.rglob("*")]:
        if path.is_file() and path.name not in ("grader.py", "s.eval.yaml", "targets.yaml"):
            texts[str(path)] = path.read_bytes().decode("utf-8", errors="replace")
    assert any("runs.sqlite" in name for name in texts) and any("cache.sqlite" in name for name in texts)
    assert "[REDACTED]" in texts[str(tmp_path / "r.jsonl")]
    for name, text in texts.items():
        assert KEY not in text, f"the key leaked into {name}"
        assert OTHER_TOKEN not in text, f"the token leaked into {name}"


def test_graders_get_no_keys_unless_listed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", OTHER_TOKEN)
    monkeypatch.setenv("PLAIN_SETTING", "visible")
    env = scrubbed_env()
    assert "OPENAI_API_KEY" not in env and "GITHUB_TOKEN" not in env and env["PLAIN_SETTING"] == "visible"
    assert scrubbed_env(["GITHUB_TOKEN"])["GITHUB_TOKEN"] == OTHER_TOKEN
    assert env["PATH"] == os.environ["PATH"]


@pytest.mark.parametrize(
    "url, shown",
    [
        ("http://bob:hunter2pass@api.example.com/v1", "http://[REDACTED]@api.example.com/v1"),
        ("https://x.example/v1?api_key=abc123456&mode=fast", "https://x.example/v1?api_key=[REDACTED]&mode=fast"),
        ("https://x.example/v1?token=abcdef&sig=zzzzzz", "https://x.example/v1?token=[REDACTED]&sig=[REDACTED]"),
        ("https://x.example/v1?model=gpt", "https://x.example/v1?model=gpt"),
    ],
)
def test_urls_lose_their_credentials(url: str, shown: str) -> None:
    assert redact(url) == shown


def test_results_kept_in_memory_are_redacted_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-test-SECRET-in-memory-0123456789"
    with FakeOpenAIServer(reply=lambda body: f"your key is {key}") as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", key)
        suite = write(
            tmp_path / "s.eval.yaml",
            "tests:\n  - id: a\n    input: hi\n    assertions: [{type: contains, value: key}]\n",
        )
        report = convoeval.run(suite, target="openai:m", store=False, cache=False)
    assert key not in report.results[0].model_dump_json()
    assert report.results[0].output[-1].content == "your key is [REDACTED]"


def test_workspace_commands_get_no_keys_unless_the_workspace_lists_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hooks (per run and per trial) and verify run without secret-named variables; `env:` passes some."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("GITHUB_TOKEN", OTHER_TOKEN)
    seen = "echo ${OPENAI_API_KEY:-none} ${GITHUB_TOKEN:-none}"
    write(tmp_path / "targets.yaml", "targets:\n  - {name: bot, provider: scripted, default: done}\n")
    write(
        tmp_path / "s.eval.yaml",
        f"""\
execution: {{target: bot}}
workspace:
  env: [GITHUB_TOKEN]
  hooks:
    before_all: {{command: '{seen} > all.txt'}}
    before_each: {{command: '{seen} > each.txt'}}
tests:
  - id: t
    mode: conversation
    verify: {{command: 'test "$({seen})" = "none {OTHER_TOKEN}" && test "$(cat each.txt)" = "none {OTHER_TOKEN}"'}}
    turns: [{{input: go}}, {{input: again}}]
""",
    )
    [result] = convoeval.run(tmp_path / "s.eval.yaml", judge="scripted", cache=False, store=False).results
    assert result.verdict == "pass", result.error
    assert result.scores[-1].note == "verified at turn 1"
    assert (tmp_path / "all.txt").read_text() == f"none {OTHER_TOKEN}\n"
