"""Files and folders an eval file names (`tests: cases.yaml`, `prompt: file://x.md`, a workspace
`template:`): confined to the suite's folder, the git repository that holds it, or a root the
user names (`CONVOEVAL_ROOT`); files regular only and size-limited."""

from __future__ import annotations

import os
from pathlib import Path

#: The environment variable naming a folder that suite file references may also reach.
ROOT_ENV = "CONVOEVAL_ROOT"
#: Largest file a suite may name.
MAX_FILE_BYTES = 10 * 1024 * 1024


def enclosing_repository(folder: Path) -> Path | None:
    """The nearest folder holding `.git` at or above `folder`, resolved; None outside a repository."""
    start = folder.resolve()
    return next((p for p in (start, *start.parents) if (p / ".git").exists()), None)


def confined_path(ref: str, base_dir: Path, root: str | Path | None) -> Path | None:
    """`ref` resolved against `base_dir` when it lies in the suite's folder, its repository
    (AgentV's `file://../graders/x.md`, `../template`) or the root the user names; else None
    (`/root/.ssh`, `../../..` out of the repository).

    Raises:
        ValueError: `ref` holds a NUL character (no file has such a name), or names a link loop.
    """
    if "\0" in ref:
        raise ValueError(f"{ref!r} names no file: it holds a NUL character")
    try:
        path = (base_dir / ref).resolve()
    except RuntimeError:  # Python 3.11's resolve() on a symlink loop (3.13 raises OSError)
        raise ValueError(f"{ref}: a symbolic link loop") from None
    base = base_dir.resolve()
    roots = [base]
    if (repository := enclosing_repository(base)) is not None:
        roots.append(repository)
    if root := root or os.environ.get(ROOT_ENV):
        roots.append(Path(root).resolve())
    return path if any(path == r or r in path.parents for r in roots) else None


def _outside(shown: str, base_dir: Path) -> ValueError:
    return ValueError(
        f"{shown} is outside the suite's folder {base_dir.resolve()} and its repository"
        f" (name a wider root with --root or {ROOT_ENV})"
    )


def confined_file(ref: str, base_dir: Path, root: str | Path | None = None) -> Path:
    """The file `ref` (relative to `base_dir`, or `file://...`) names, checked (`confined_path`).

    Raises:
        ValueError: it lies outside, is not a regular file, or is too big.
    """
    path = confined_path(ref[len("file://") :] if ref.startswith("file://") else ref, base_dir, root)
    if path is None:
        raise _outside(ref, base_dir)
    try:
        if not path.exists():
            raise ValueError(f"{ref}: no such file")
        if not path.is_file():
            raise ValueError(f"{ref} is not a regular file")
        size = path.stat().st_size
    except OSError as exc:  # a name too long, a folder that cannot be searched
        raise ValueError(f"{ref[:200]}: {exc.strerror or exc}") from None
    if size > MAX_FILE_BYTES:
        raise ValueError(f"{ref} is larger than {MAX_FILE_BYTES // (1024 * 1024)} MB")
    return path


def confined_folder(ref: str, base_dir: Path, what: str) -> Path:
    """The folder `ref` (relative to `base_dir`) names, resolved and checked (`confined_path`);
    `what` names it in the message.

    Raises:
        ValueError: it lies outside.
    """
    path = confined_path(ref, base_dir, None)
    if path is None:
        raise _outside(f"{what} {ref!r}", base_dir)
    return path
