"""The command lines that put a command in a bubblewrap or docker sandbox."""

from __future__ import annotations

import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from ._choice import SandboxError, SandboxSettings

#: Where the fresh HOME is, inside the sandbox's private /tmp.
SANDBOX_HOME = "/tmp/home"


def bwrap_argv(
    argv: list[str],
    shell: bool,
    cwd: Path,
    writable: Path | None,
    readable: Sequence[Path],
    settings: SandboxSettings,
) -> list[str]:
    """bubblewrap's command line: the system read-only, private temp folders, /run and /dev, a
    new PID namespace, no network unless allowed, the workspace bound read-write (same path).
    Programs on PATH and Python's own folders stay readable when they live in a temp folder."""
    out = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all"]
    if settings.network:
        out.append("--share-net")
    hidden = list(dict.fromkeys(str(Path(t).resolve()) for t in ("/tmp", tempfile.gettempdir())))
    out += ["--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/run"]
    for folder in hidden:
        out += ["--tmpfs", folder]
    out += ["--dir", SANDBOX_HOME]
    tools = [*os.environ.get("PATH", "").split(os.pathsep), sys.prefix, sys.base_prefix]
    shown = [*map(str, readable), *(t for t in tools if t and any(_under(t, h) for h in hidden))]
    for path in dict.fromkeys(str(Path(p).resolve()) for p in shown):
        out += ["--ro-bind-try", path, path]
    if writable is not None:
        resolved = str(Path(writable).resolve())
        out += ["--bind", resolved, resolved]
    out += ["--chdir", str(Path(cwd).resolve()), "--"]
    return out + (["/bin/sh", "-c", argv[0]] if shell else argv)


def _under(path: str, folder: str) -> bool:
    """Whether `path` lies inside `folder` (the folder itself does not count)."""
    resolved = Path(path).resolve()
    return resolved != Path(folder) and resolved.is_relative_to(folder)


async def docker_argv(
    argv: list[str],
    shell: bool,
    cwd: Path,
    writable: Path | None,
    env: Mapping[str, str],
    settings: SandboxSettings,
    name: str,
) -> list[str]:
    if shutil.which("docker") is None:
        raise SandboxError("--sandbox docker: the docker command is not installed")
    probe = await asyncio.create_subprocess_exec(
        "docker",
        "info",
        "--format",
        "{{.ServerVersion}}",
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
    )
    if await probe.wait() != 0:
        raise SandboxError("--sandbox docker: no Docker daemon is reachable (start it, or choose another --sandbox)")
    out = ["docker", "run", "--rm", "-i", "--name", name, "--read-only", "--tmpfs", "/tmp", "--tmpfs", SANDBOX_HOME]
    out += ["--tmpfs", "/run"]
    out += ["--network", "bridge" if settings.network else "none", "--pids-limit", str(settings.processes)]
    out += ["--memory", f"{settings.memory_mb}m", "--ulimit", f"fsize={settings.file_size_mb * 1024 * 1024}"]
    out += ["--ulimit", f"cpu={settings.cpu_seconds}"]
    for key in env:  # values come from the docker client's environment, never the command line
        out += ["-e", key]
    if writable is not None:
        resolved = str(Path(writable).resolve())
        out += ["-v", f"{resolved}:{resolved}"]
    out += ["-w", str(Path(cwd).resolve()), settings.image]
    return out + (["/bin/sh", "-c", argv[0]] if shell else argv)
