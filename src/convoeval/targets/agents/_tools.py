"""The tools of the built-in tool agent: file and shell tools confined to the workspace, and the
user's tools declared in YAML (a command or a Python callable).

Every tool answers with text for the model; what goes wrong (a path outside the workspace, an
edit whose text is not unique, a command that times out) is an error the model sees and the
transcript records, never an exception out of the turn.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import signal
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ...results import ToolCall
from .._tool_settings import ToolAgentSettings, UserTool
from ._process import BASE_ENV
from ._python import load_callable

_PATH = {"type": "string", "description": "A path relative to the workspace."}

#: OpenAI function specs of the built-in tools.
BUILTIN_SPECS: dict[str, dict[str, Any]] = {
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
        self.settings = settings
        self.builtin = [t for t in settings.tools if isinstance(t, str)]
        self.user = {t.name: t for t in settings.tools if isinstance(t, UserTool)}
        self.functions: dict[str, Callable[..., Any]] = {
            t.name: load_callable(t.python, base_dir, name) for t in self.user.values() if t.python
        }

    def specs(self) -> list[dict[str, Any]]:
        """The tools as OpenAI `tools` entries."""
        specs = [{"name": n, **BUILTIN_SPECS[n]} for n in self.builtin]
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

    async def _dispatch(self, name: str, args: dict[str, Any], workdir: Path | None) -> Any:
        if name in self.user:
            tool = self.user[name]
            if tool.python:
                result = self.functions[name](**args)
                return await result if inspect.isawaitable(result) else result
            assert tool.command is not None
            return await self._shell(tool.command, _need(workdir), tool.timeout_s, json.dumps(args))
        if name not in self.builtin:
            raise ToolFailure(f"no tool named {name!r} (tools: {', '.join([*self.builtin, *self.user])})")
        root = _need(workdir)
        if name == "bash":
            return await self._shell(_text(args, "command"), root, self.settings.bash_timeout_s)
        if name == "list_files":
            folder = _inside(root, args.get("path") or ".")
            return "\n".join(
                str(p.relative_to(root)) for p in sorted(folder.rglob("*")) if p.is_file() and ".git" not in p.parts
            )
        path = _inside(root, _text(args, "path"))
        if name == "write_file":
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(_text(args, "content"))
            return f"wrote {path.relative_to(root)}"
        if not path.is_file():
            raise ToolFailure(f"no such file: {args['path']}")
        text = path.read_text(errors="replace")
        if name == "read_file":
            return self._cap(text)
        old, new = _text(args, "old"), _text(args, "new")
        if text.count(old) != 1:
            raise ToolFailure(f"`old` occurs {text.count(old)} times in {args['path']}; it must occur exactly once")
        path.write_text(text.replace(old, new, 1))
        return f"edited {path.relative_to(root)}"

    async def _shell(self, command: str, cwd: Path, timeout_s: float, stdin: str | None = None) -> str:
        env = {n: os.environ[n] for n in BASE_ENV if n in os.environ}  # no keys reach the model's commands
        if stdin is not None:
            env["TOOL_ARGS"] = stdin
        process = await asyncio.create_subprocess_shell(
            command,
            cwd=str(cwd),
            env=env,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            out, _ = await asyncio.wait_for(process.communicate((stdin or "").encode()), timeout_s)
        except TimeoutError:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await process.wait()
            raise ToolFailure(f"timed out after {timeout_s:g} s: {command[:80]}") from None
        return f"exit code {process.returncode}\n{self._cap(out.decode(errors='replace'))}"

    def _cap(self, text: str) -> str:
        limit = self.settings.output_chars
        return text if len(text) <= limit else text[:limit] + f"\n[... {len(text) - limit} more characters cut]"


def _need(workdir: Path | None) -> Path:
    if workdir is None:
        raise ToolFailure("this test has no workspace: give it `workspace:` to use file and shell tools")
    return workdir


def _inside(root: Path, relative: str) -> Path:
    """`relative` under `root`; a path that leaves it (`..`, absolute, a symlink out) is refused."""
    path = (root / relative).resolve()
    if not path.is_relative_to(root.resolve()):
        raise ToolFailure(f"{relative}: outside the workspace")
    return path


def _text(args: dict[str, Any], key: str) -> str:
    value = args.get(key)
    if not isinstance(value, str):
        raise ToolFailure(f"`{key}` must be a string")
    return value
