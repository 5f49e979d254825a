"""Where AgentV looks for things: whether an eval file is AgentV's, its repository root, and
the search roots of attachments (read from AgentV's `file-utils.ts` and `findRepoRoot`, v4.15.0)."""

from __future__ import annotations

import os
from pathlib import Path

from .._paths import confined_file, enclosing_repository


def is_agentv_file(path: Path) -> bool:
    """Whether an eval file is AgentV's: a `.agentv/` folder in its folder or one above it, up
    to the repository root (where AgentV reads its targets and config)."""
    folder = path.parent.resolve()
    root = enclosing_repository(folder) or folder
    for candidate in (folder, *folder.parents):
        if (candidate / ".agentv").is_dir():
            return True
        if candidate == root:
            return False
    return False


def search_roots(folder: Path) -> list[Path]:
    """AgentV's search roots of an eval file's folder: it and each parent up to the repository
    root, then the working folder."""
    root = enclosing_repository(folder) or folder.resolve()
    roots: list[Path] = []
    for candidate in (folder.resolve(), *folder.resolve().parents):
        roots.append(candidate)
        if candidate == root:
            break
    roots.append(Path.cwd().resolve())
    return list(dict.fromkeys(roots))


def find_attachment(ref: str, folder: Path) -> Path | None:
    """The file a `type: file` value names, looked up in the search roots (AgentV's
    `resolveFileReference`): an absolute path as given first, then relative to each root
    with leading separators stripped. Only a file of the suite's folder, its repository or
    `--root` is taken (`confined_file`: what it holds goes to the model).

    Raises:
        ValueError: the only file found lies outside them (or is too big).
    """
    shown = ref.lstrip("/\\") or ref
    candidates = [Path(ref)] if Path(ref).is_absolute() else []
    candidates += [root / shown for root in search_roots(folder)]
    refused: ValueError | None = None
    for candidate in candidates:
        if os.path.isfile(candidate):  # False for a name too long, where Path.is_file raises
            try:
                return confined_file(str(candidate.resolve()), folder)
            except ValueError as exc:
                refused = refused or exc
    if refused is not None:
        raise refused
    return None
