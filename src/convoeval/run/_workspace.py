"""Persistent environments: a workspace per trial, `verify` after each turn, hints between turns.

An environment (registry kind `environment`, chosen by `workspace.environment`) makes the
trial's place and tears it down. The built-in `directory` environment makes a folder (the
template copied in, `before_each` run) and afterwards runs `after_each` and removes it (or
keeps it, as `keep:` says). A plugin environment registers an object with the same two
async methods, `open(spec, base_dir, test_id) -> Path` and `close(spec, root, passed) -> str | None`.
`VerifiedTurns` wraps the trial's turn source: before asking for the next turn it runs
`verify` in the workspace; exit 0 ends the conversation (`stopped: verified at turn N`, the
turns not needed are recorded as not sent), otherwise the next turn goes out preceded by its
hint (a user message with `source: hint`).
"""

from __future__ import annotations

import asyncio
import difflib
import os
import shutil
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import registry
from ..results import AssertionOutcome, GraderScore, Message, ScoreEntry
from ..spec import Verify, Workspace
from ._plan import TurnPlan
from ._turns import TurnSource

if TYPE_CHECKING:
    from ._conversation import Conversation

#: Longest command output quoted in evidence.
OUTPUT_TAIL = 400
#: Files larger than this are compared by size only in `file_changes`; the diff is cut here.
SNAPSHOT_FILE_BYTES = 256 * 1024
DIFF_CHARS = 50_000
IGNORED = frozenset({".git", "__pycache__"})


class WorkspaceError(Exception):
    """The workspace could not be prepared (missing template, failing hook)."""


@dataclass
class Ran:
    code: int
    output: str


async def shell(command: str, cwd: Path, timeout_s: float) -> Ran:
    """Run a shell command in `cwd`; a timeout is exit code 124 (like `timeout(1)`)."""
    process = await asyncio.create_subprocess_shell(
        command,
        cwd=str(cwd),
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        out, _ = await asyncio.wait_for(process.communicate(), timeout_s)
    except TimeoutError:
        try:
            os.killpg(process.pid, 9)
        except ProcessLookupError:
            pass
        await process.wait()
        return Ran(124, f"timed out after {timeout_s:g} s")
    return Ran(process.returncode or 0, out.decode("utf-8", "replace"))


async def open_workspace(spec: Workspace, base_dir: Path, test_id: str) -> Path:
    """The trial's workspace, made by the environment the spec names."""
    return await environment(spec).open(spec, base_dir, test_id)


async def close_workspace(spec: Workspace, root: Path, passed: bool) -> str | None:
    """Tear the trial's workspace down; returns where it was kept, if it was."""
    return await environment(spec).close(spec, root, passed)


def environment(spec: Workspace) -> Any:
    found = registry.lookup("environment", spec.environment)
    if found is None:
        known = ", ".join(registry.names("environment"))
        raise WorkspaceError(f"unknown workspace environment {spec.environment!r} (known: {known})")
    return found


class DirectoryEnvironment:
    """The built-in environment: a temporary folder per trial."""

    async def open(self, spec: Workspace, base_dir: Path, test_id: str) -> Path:
        return await _open_directory(spec, base_dir, test_id)

    async def close(self, spec: Workspace, root: Path, passed: bool) -> str | None:
        return await _close_directory(spec, root, passed)


async def _open_directory(spec: Workspace, base_dir: Path, test_id: str) -> Path:
    """A fresh folder for one trial, with the template copied in and `before_each` run."""
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in test_id)[:40]
    root = Path(tempfile.mkdtemp(prefix=f"convoeval-ws-{safe}-"))
    if spec.template is not None:
        template = (base_dir / spec.template).resolve()
        if not template.is_dir():
            shutil.rmtree(root, ignore_errors=True)
            raise WorkspaceError(f"workspace template {spec.template!r} is not a folder (looked in {template})")
        shutil.copytree(template, root, dirs_exist_ok=True)
    hook = spec.hooks.before_each
    if hook is not None:
        ran = await shell(hook.command, root / (hook.cwd or "."), hook.timeout_ms / 1000)
        if ran.code != 0:
            shutil.rmtree(root, ignore_errors=True)
            raise WorkspaceError(f"workspace hook before_each exited with code {ran.code}: {ran.output[-OUTPUT_TAIL:]}")
    return root


async def _close_directory(spec: Workspace, root: Path, passed: bool) -> str | None:
    """Run `after_each`, then remove the folder unless it is kept; returns the kept path."""
    hook = spec.hooks.after_each
    if hook is not None:
        await shell(hook.command, root / (hook.cwd or "."), hook.timeout_ms / 1000)
    if spec.keep == "always" or (spec.keep == "on_failure" and not passed):
        return str(root)
    shutil.rmtree(root, ignore_errors=True)
    return None


registry.register("environment", "directory", DirectoryEnvironment())


def snapshot(root: Path) -> dict[str, str]:
    """The text of each file under `root` (`.git` and `__pycache__` left out; a big or binary
    file by its size)."""
    files: dict[str, str] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.is_symlink() or IGNORED.intersection(path.relative_to(root).parts):
            continue
        size = path.stat().st_size
        data = path.read_bytes() if size <= SNAPSHOT_FILE_BYTES else b""
        text = data.decode("utf-8", "replace") if data and b"\0" not in data else f"<{size} bytes>\n"
        files[str(path.relative_to(root))] = text
    return files


def file_changes(before: dict[str, str], root: Path) -> str:
    """A unified diff from `before` (a snapshot) to what `root` holds now ("" when unchanged)."""
    after = snapshot(root)
    parts: list[str] = []
    for name in sorted(before.keys() | after.keys()):
        old, new = before.get(name), after.get(name)
        if old == new:
            continue
        parts.extend(
            difflib.unified_diff(
                (old or "").splitlines(keepends=True),
                (new or "").splitlines(keepends=True),
                fromfile=f"a/{name}" if old is not None else "/dev/null",
                tofile=f"b/{name}" if new is not None else "/dev/null",
            )
        )
    diff = "".join(line if line.endswith("\n") else line + "\n" for line in parts)
    return (
        diff if len(diff) <= DIFF_CHARS else diff[:DIFF_CHARS] + f"[... {len(diff) - DIFF_CHARS} more characters cut]\n"
    )


@dataclass
class VerifiedTurns:
    """A turn source that runs `verify` after each turn and sends hints between turns."""

    inner: TurnSource
    verify: Verify
    workdir: Path
    hints: list[str] = field(default_factory=list)
    checks: list[AssertionOutcome] = field(default_factory=list)
    verified_at: int | None = None
    _checked: int = 0

    async def next_turn(self, convo: Conversation) -> TurnPlan | None:
        if convo.turns_sent > self._checked:
            self._checked = convo.turns_sent
            ran = await shell(self.verify.command, self.workdir, self.verify.timeout_s)
            passed = ran.code == 0
            self.checks.append(
                AssertionOutcome(
                    text=f"verify after turn {convo.turns_sent}",
                    passed=passed,
                    evidence=f"exit code {ran.code}"
                    + (f": {ran.output.strip()[-OUTPUT_TAIL:]}" if ran.output.strip() else ""),
                )
            )
            if passed:
                self.verified_at = convo.turns_sent
                convo.stop_note = f"stopped: verified at turn {convo.turns_sent}"
                convo.skip_score = None
                return None
        turn = await self.inner.next_turn(convo)
        hint_index = convo.turns_sent - 1  # hint k goes before turn k+2
        if turn is not None and 0 <= hint_index < len(self.hints):
            hint = Message(role="user", content=self.hints[hint_index], source="hint")
            turn = replace(turn, messages=[hint, *turn.messages])
        return turn

    def unsent(self) -> list[TurnPlan]:
        return self.inner.unsent()

    def entry(self) -> ScoreEntry:
        """The `verify` score: a pass when some turn verified, with one check per turn."""
        passed = self.verified_at is not None
        grader = GraderScore(
            name="verify",
            type="verify",
            score=1.0 if passed else 0.0,
            verdict="pass" if passed else "fail",
            assertions=self.checks,
        )
        return ScoreEntry(
            name="verify",
            type="conversation",
            score=grader.score,
            verdict=grader.verdict,
            assertions=self.checks,
            graders=[grader],
            note=f"verified at turn {self.verified_at}" if passed else "never verified",
        )
