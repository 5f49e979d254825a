"""Files an eval file names (`tests: cases.yaml`, `prompt: file://x.md`): confined to the
suite's folder or to a root the user names (`CONVOEVAL_ROOT`), regular files only, size-limited."""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable naming a folder that suite file references may also reach.
ROOT_ENV = "CONVOEVAL_ROOT"
#: Largest file a suite may name.
MAX_FILE_BYTES = 10 * 1024 * 1024


def confined_file(ref: str, base_dir: Path, root: str | Path | None = None) -> Path:
    """The file `ref` (relative to `base_dir`, or `file://...`) names, checked.

    Raises:
        ValueError: it leaves `base_dir` (and the root), is not a regular file, or is too big.
    """
    text = ref[len("file://") :] if ref.startswith("file://") else ref
    path = (base_dir / text).resolve()
    roots = [base_dir.resolve()]
    root = root or os.environ.get(ROOT_ENV)
    if root:
        roots.append(Path(root).resolve())
    if not any(path == r or r in path.parents for r in roots):
        raise ValueError(
            f"{ref} is outside the suite's folder {roots[0]} (name a wider root with --root or {ROOT_ENV})"
        )
    if not path.exists():
        raise ValueError(f"{ref}: no such file")
    if not path.is_file():
        raise ValueError(f"{ref} is not a regular file")
    if path.stat().st_size > MAX_FILE_BYTES:
        raise ValueError(f"{ref} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    return path


def confined_folder(ref: str, base_dir: Path, what: str) -> Path:
    """The folder `ref` (relative to `base_dir`) names, resolved: it must lie in the suite's
    folder, the repository that holds it (the nearest `.git` above: AgentV's `../template`) or
    the root the user names, like the files a suite names; `what` names it in the message.

    Raises:
        ValueError: it lies elsewhere (`/root/.ssh`, `../../..`).
    """
    path = (base_dir / ref).resolve()
    base = base_dir.resolve()
    roots = [base, next((p for p in (base, *base.parents) if (p / ".git").exists()), base)]
    if root := os.environ.get(ROOT_ENV):
        roots.append(Path(root).resolve())
    if not any(path == r or r in path.parents for r in roots):
        raise ValueError(
            f"{what} {ref!r} is outside the suite's folder {base} and its repository"
            f" (name a wider root with --root or {ROOT_ENV})"
        )
    return path
