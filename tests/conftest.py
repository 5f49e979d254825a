"""Shared fixtures: a loopback fake OpenAI-compatible server and the CLI runner."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

# Loaded here, once: pytester's in-process runs (tests/test_pytest_plugin.py) drop the modules
# first imported inside them, and an aiohttp loaded again inside the next one would not take the
# `ClientTimeout` objects convoeval keeps from the first (`targets/_http.py`'s `_timeout`).
import aiohttp  # noqa: F401
import pytest
from typer.testing import CliRunner

from convoeval import registry
from convoeval.cli import app
from convoeval.results import EvaluationResult
from convoeval.testing import FakeOpenAIServer

REPO = Path(__file__).resolve().parent.parent
#: tests/data holds other projects' files (AgentV's own Python tests among them): never collected.
collect_ignore_glob = ["data/*"]
#: tests/test_agentv_compat.py's classes of AgentV's eval files, by tag: [(file, class, reason)].
AGENTV_COUNTS = pytest.StashKey[dict]()
DATA = Path(__file__).resolve().parent / "data"


@pytest.fixture
def fake_openai(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeOpenAIServer]:
    """A fake server; OPENAI_BASE_URL points at it and OPENAI_API_KEY is a dummy secret."""
    with FakeOpenAIServer() as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET-never-stored-1234")
        yield server


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Run `convoeval ARGS...` in-process from tmp_path; returns (exit_code, stdout, stderr)."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")

    def invoke(*args: str) -> tuple[int, str, str]:
        result = CliRunner().invoke(app, [str(a) for a in args], catch_exceptions=False)
        return result.exit_code, result.stdout, result.stderr

    return invoke


@pytest.fixture
def clean_registry() -> Iterator[None]:
    """Names registered during the test (plugins it loads) are forgotten afterwards."""
    before = {kind: set(registry.names(kind)) for kind in registry.KINDS}
    yield
    for kind, names in before.items():
        for name in set(registry.names(kind)) - names:
            registry.unregister(kind, name)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(autouse=True)
def _no_real_keys(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Tests never reach a real provider, and runs store their state in the test's own
    directory (./.convoeval), never in the checkout."""
    monkeypatch.chdir(tmp_path)
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(key, raising=False)
    if not os.environ.get("OPENAI_BASE_URL", "").startswith("http://127.0.0.1"):
        monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
        monkeypatch.delenv("OPENAI_API_KEY", raising=False)


@pytest.fixture(autouse=True)
def _no_mount_point_left_in_tmp() -> Iterator[None]:
    """A test running the real Codex leaves an empty `.git` in `/tmp` (seen with Codex 0.171.0;
    likely its sandbox's mount point in a writable root): `/tmp` would then pass for a
    repository, and every test after it that confines a suite's file references to its
    repository would see `/tmp` as one. Such a folder, left empty by the test, is removed."""
    mount_point = Path("/tmp/.git")
    before = os.path.lexists(mount_point)
    yield
    if not before and mount_point.is_dir() and not mount_point.is_symlink():
        try:
            mount_point.rmdir()  # only when empty
        except OSError:
            pass


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    """The AgentV compatibility figure (tests/test_agentv_compat.py), shown even with -q."""
    counts = config.stash.get(AGENTV_COUNTS, None)
    if not counts:
        return
    terminalreporter.section("AgentV compatibility (AgentV's own eval files)")
    for tag, rows in sorted(counts.items()):
        classes: dict[str, int] = {}
        for _, found, _ in rows:
            classes[found] = classes.get(found, 0) + 1
        shown = ", ".join(f"{n} {name}" for name, n in sorted(classes.items(), key=lambda kv: -kv[1]))
        terminalreporter.write_line(f"{tag}: {len(rows)} files: {shown}")
        for name, found, reason in rows:
            if found != "runs unchanged":
                terminalreporter.write_line(f"  {found}: {name}: {' '.join(reason.split())[:160]}")


def command_lines() -> list[str]:
    """The command lines of every process (read from /proc once)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace"))
            except OSError:
                continue
    return found


def passing_result(i: int, note: str, suite: str | None = None) -> EvaluationResult:
    """A passed result `t{i}` of target `m` whose metadata holds `note`: what the store tests save."""
    return EvaluationResult(
        test_id=f"t{i}",
        suite=suite,
        target="m",
        score=1.0,
        verdict="pass",
        execution_status="ok",
        threshold=0.8,
        metadata={"note": note},
    )
