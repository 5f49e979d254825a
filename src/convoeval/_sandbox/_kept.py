"""Placeholders for the `kept` paths of a writable folder that do not exist yet (an eval folder's
`.git`, `.env`): an empty folder made there for the command's time, bound read-only over itself,
so the command cannot make the real one. Every command that uses a placeholder holds a shared
`flock` on it; the last one to end removes it (a concurrent command's stays, a real one is never
removed: only a folder holding just `MARKER` is)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

#: The file that tells a placeholder from a real folder.
MARKER = ".convoeval-placeholder"


@contextmanager
def placeholders(kept: Sequence[Path], writable: Path) -> Iterator[None]:
    """Make a placeholder for each absent `kept` path whose folder exists inside `writable`, and
    remove those no other command still holds once the block ends (even by an exception)."""
    root = writable.resolve()
    held: list[tuple[str, int]] = []
    try:
        for path in kept:
            where = Path(path)
            if not os.path.lexists(where) and where.parent.resolve().is_relative_to(root) and where.parent.is_dir():
                if (fd := _hold(str(where))) is not None:
                    held.append((str(where), fd))
        yield
    finally:
        for made, fd in held:
            _release(made, fd)


def _hold(path: str) -> int | None:
    """A shared lock on the placeholder at `path`, made if absent; None when a real file or
    folder is there (bound read-only as it is)."""
    while True:
        try:
            os.mkdir(path, 0o755)
            Path(path, MARKER).touch()
        except FileExistsError:
            pass
        except OSError:
            return None
        if not os.path.isfile(os.path.join(path, MARKER)):
            return None
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        fcntl.flock(fd, fcntl.LOCK_SH)
        if _same(fd, path):
            return fd
        os.close(fd)  # removed meanwhile by its last holder: make it again


def _release(path: str, fd: int) -> None:
    """Remove the placeholder when no other command holds it (its lock taken exclusively)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another command's sandbox still has it: that one removes it
        os.close(fd)
        return
    try:
        if _same(fd, path):
            os.unlink(os.path.join(path, MARKER))
            os.rmdir(path)  # fails, and leaves it, if something else was put in it meanwhile
    except OSError:
        pass
    finally:
        os.close(fd)


def _same(fd: int, path: str) -> bool:
    try:
        here, there = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)
