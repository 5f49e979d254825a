"""The tools of the built-in tool agent: file and shell tools confined to the workspace, and the
user's tools declared in YAML (a command or a Python callable).

Every tool answers with text for the model; what goes wrong (a path outside the workspace, an
edit whose text is not unique, a command that times out) is an error the model sees and the
transcript records, never an exception out of the turn.
"""

from __future__ import annotations

import functools
import json
import os
import stat
import time
from collections.abc import Callable
from pathlib import Path

from ... import _sandbox as sandbox
from ..._sandbox import SandboxError, command_env, trial_settings
from ..._text import shorten
from ...results import ToolCall
from .._tool_settings import ToolAgentSettings, UserTool
from ._python import bounded, load_callable

_PATH = {"type": "string", "description": "A path relative to the workspace."}
#: The largest file `edit_file` reads whole.
EDIT_BYTES = 16 * 2**20

#: OpenAI function specs of the built-in tools.
BUILTIN_SPECS: dict[str, dict[str, object]] = {
    "bash": {
        "description": "Run a shell command in the workspace; returns its exit code and output.",
        "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
    },
    "read_file": {
        "description": "Read a text file of the workspace.",
        "parameters": {"type": "object", "properties": {"path": _PATH}, "required": ["path"]},
    },
    "write_file": {
        "description": "Create or overwrite a text file of the workspace.",
        "parameters": {
            "type": "object",
            "properties": {"path": _PATH, "content": {"type": "string"}},
            "required": ["path", "content"],
        },
    },
    "edit_file": {
        "description": "Replace one occurrence of `old` (which must occur exactly once) with `new` in a file.",
        "parameters": {
            "type": "object",
            "properties": {"path": _PATH, "old": {"type": "string"}, "new": {"type": "string"}},
            "required": ["path", "old", "new"],
        },
    },
    "list_files": {
        "description": "List the files under a folder of the workspace (default: all of it).",
        "parameters": {"type": "object", "properties": {"path": _PATH}},
    },
}


class ToolFailure(Exception):
    """A tool could not do what it was asked; the message is shown to the model."""


class ToolBox:
    """The tools one agent target offers, and running them.

    Args:
        settings: the `agent:` settings (which tools, timeouts, output cap).
        base_dir: the folder of the targets file (Python tools' files resolve there).
        name: the target's name, for error messages.
    """

    def __init__(self, settings: ToolAgentSettings, base_dir: Path, name: str):
        self.base_dir = base_dir
        self.settings = settings
        self.builtin = [t for t in settings.tools if isinstance(t, str)]
        self.user = {t.name: t for t in settings.tools if isinstance(t, UserTool)}
        self.functions: dict[str, Callable[..., object]] = {
            t.name: load_callable(t.python, base_dir, name) for t in self.user.values() if t.python
        }

    @property
    def runs_commands(self) -> bool:
        """Whether a tool runs a command (`bash`, a user `command` tool): those need the sandbox."""
        return "bash" in self.builtin or any(t.command for t in self.user.values())

    def specs(self) -> list[dict[str, object]]:
        """The tools as OpenAI `tools` entries."""
        specs: list[dict[str, object]] = [{"name": n, **BUILTIN_SPECS[n]} for n in self.builtin]
        specs += [
            {"name": t.name, "description": t.description, "parameters": t.parameters} for t in self.user.values()
        ]
        return [{"type": "function", "function": spec} for spec in specs]

    async def run(self, call: ToolCall, workdir: Path | None) -> ToolCall:
        """Run one call; the returned copy holds its output or error and how long it took."""
        started = time.perf_counter()
        try:
            output = await self._dispatch(call.name, call.arguments, workdir)
            done = {"output": output}
        except ToolFailure as exc:
            done = {"error": str(exc)}
        except Exception as exc:  # a user tool's bug is the model's problem to read, not the run's
            done = {"error": f"{type(exc).__name__}: {exc}"}
        duration = round((time.perf_counter() - started) * 1000, 3)
        return call.model_copy(update={**done, "duration_ms": duration})

    async def _dispatch(self, name: str, args: dict[str, object], workdir: Path | None) -> object:
        if name in self.user:
            tool = self.user[name]
            if tool.python:
                try:
                    return await bounded(functools.partial(self.functions[name], **args), timeout_s=tool.timeout_s)
                except TimeoutError:
                    raise ToolFailure(f"timed out after {tool.timeout_s:g} s: {name}") from None
            assert tool.command is not None
            return await self._shell(tool.command, _need(workdir), tool.timeout_s, json.dumps(args))
        if name not in self.builtin:
            raise ToolFailure(f"no tool named {name!r} (tools: {', '.join([*self.builtin, *self.user])})")
        root = _need(workdir)
        if name == "bash":
            return await self._shell(_text(args, "command"), root, self.settings.bash_timeout_s)
        if name == "list_files":
            return self._list(root, _inside(root, _text(args, "path") if args.get("path") else "."))
        path = _inside(root, _text(args, "path"))
        if name == "write_file":
            path.parent.mkdir(parents=True, exist_ok=True)
            _write(path, _text(args, "content"), str(args["path"]))
            return f"wrote {path.relative_to(root)}"
        if not path.is_file():
            raise ToolFailure(f"no such file: {args['path']}")
        if name == "read_file":
            return self._read(path)
        if path.stat().st_size > EDIT_BYTES:
            raise ToolFailure(f"{args['path']}: larger than {EDIT_BYTES // 2**20} MB; edit it with `bash` instead")
        text = path.read_text(errors="replace")
        old, new = _text(args, "old"), _text(args, "new")
        if text.count(old) != 1:
            raise ToolFailure(f"`old` occurs {text.count(old)} times in {args['path']}; it must occur exactly once")
        _write(path, text.replace(old, new, 1), str(args["path"]))
        return f"edited {path.relative_to(root)}"

    async def _shell(self, command: str, cwd: Path, timeout_s: float, stdin: str | None = None) -> str:
        """Run a model's (or a command tool's) command in the run's sandbox, in the workspace: the
        workspace is all it may change, no key reaches it, its output is cut while it is read."""
        extra = {"TOOL_ARGS": stdin} if stdin is not None else {}
        settings = trial_settings().merged(self.settings.sandbox)
        limit = self.settings.output_chars
        try:
            ran = await sandbox.run(
                command,
                cwd,
                timeout_s=timeout_s,
                writable=cwd,
                readable=[self.base_dir] if stdin is not None else [],  # a command tool's scripts
                env=command_env(extra=extra),
                stdin=(stdin or "").encode(),
                cap=limit * 4,
                settings=settings,
                system_only=True,  # not the eval files, the run store, homes or the project
            )
        except SandboxError as exc:
            raise ToolFailure(str(exc)) from None
        if ran.timed_out:
            so_far = f"\noutput so far:\n{self._cap(ran.output)}" if ran.output else ""
            raise ToolFailure(f"timed out after {timeout_s:g} s and was killed: {shorten(command, 80)}{so_far}")
        more = f"\n[... more output cut: {ran.cut} bytes not shown]" if ran.cut else ""
        return f"exit code {ran.code}\n{self._cap(ran.output)}{more}"

    def _list(self, root: Path, folder: Path) -> str:
        """The files under `folder`, listed until `output_chars` is reached (never all of a huge tree)."""
        limit, size = self.settings.output_chars, 0
        lines: list[str] = []
        for current, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != ".git")
            for file in sorted(files):
                line = str((Path(current) / file).relative_to(root))
                size += len(line) + 1
                if size > limit:
                    return "\n".join(lines) + f"\n[... listing cut at {limit} characters]"
                lines.append(line)
        return "\n".join(lines)

    def _read(self, path: Path) -> str:
        """The file's text, reading no more than `output_chars` can show."""
        limit = self.settings.output_chars
        with path.open("rb") as handle:
            data = handle.read(limit * 4 + 1)
            total = os.fstat(handle.fileno()).st_size
        text = data[: limit * 4].decode("utf-8", "replace")
        if len(text) <= limit and total <= limit * 4:
            return text
        return text[:limit] + f"\n[... cut at {limit} characters of a {total}-byte file]"

    def _cap(self, text: str) -> str:
        limit = self.settings.output_chars
        return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


def _need(workdir: Path | None) -> Path:
    if workdir is None:
        raise ToolFailure("this test has no workspace: give it `workspace:` to use file and shell tools")
    return workdir


def _inside(root: Path, relative: str) -> Path:
    """`relative` under `root`; a path that leaves it (`..`, absolute, a symlink out, a hard
    link) is refused."""
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ToolFailure(f"{relative}: outside the workspace")
    try:
        info = path.stat()
    except OSError:
        return path
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1:  # its other name may be outside the workspace
        raise ToolFailure(f"{relative}: a hard link (it may be a file outside the workspace); refused")
    return path


def _write(path: Path, text: str, shown: str) -> None:
    """Write `text` to the regular file `path` (made if missing). Anything else is refused
    without waiting: a FIFO the model made would block convoeval (and every conversation of
    the run) in `open` until something read it; a link is never followed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        raise ToolFailure(f"{shown}: cannot be written ({exc.strerror})") from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ToolFailure(f"{shown}: not a regular file; refused")
        handle.truncate()
        handle.write(text)


def _text(args: dict[str, object], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolFailure(f"`{key}` must be a string")
    return value
