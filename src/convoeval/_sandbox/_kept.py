"""Placeholders for the `kept` paths of a writable folder that do not exist yet (an eval folder's
`.git`, `.env`): an empty folder made there for the command's time, bound read-only over itself,
so the command cannot make the real one. Every command that uses a placeholder holds a shared
`flock` on it; the last one to end removes it (a concurrent command's stays, a real one is never
removed: only a folder holding just `MARKER` is).

A kept path that is a symbolic link (`targets.yaml -> ../shared/targets.yaml`), or that a link
leads to, is kept where the link leads (`leads_to`); the link itself cannot be bound over (a bind
follows it), so `links_put_back` puts it back when the command removed or replaced it."""

from __future__ import annotations

import fcntl
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

#: The file that tells a placeholder from a real folder.
MARKER = ".convoeval-placeholder"
#: How a placeholder is named while it is made or removed.
STAGING = ".convoeval-placeholder-"
#: Added to the name of what a command put where a kept link was (moved aside, not removed).
REPLACED = ".convoeval-replaced"


def links_on_the_way(path: Path, root: Path) -> list[Path]:
    """The symbolic links below `root` that `path` passes through (itself included), each at the
    place it lies once the links before it are followed."""
    links: list[Path] = []
    here, lexical = root, Path(os.path.abspath(path))
    if not lexical.is_relative_to(root):
        return links
    for part in lexical.relative_to(root).parts:
        here = here / part
        if os.path.islink(here):
            links.append(here)
            here = Path(os.path.realpath(here))
            if not here.is_relative_to(root):
                break
    return links


def leads_to(kept: Sequence[Path]) -> list[Path]:
    """The `kept` paths, each where it leads (its links followed, absent or not), once each."""
    return list(dict.fromkeys(Path(os.path.realpath(k)) for k in kept))


@contextmanager
def links_put_back(kept: Sequence[Path], writable: Path) -> Iterator[list[str]]:
    """Put back, when the block ends (even by an exception), each link in `writable` on the way to
    a `kept` path (`links_on_the_way`) that the command removed, renamed or replaced; what it put
    there is moved aside to `NAME.convoeval-replaced`. Yields the list of the links put back (each
    a line saying so), filled when the block ends."""
    root = writable.resolve()
    links = {str(link): os.readlink(link) for k in kept for link in links_on_the_way(k, root)}
    put_back: list[str] = []
    try:
        yield put_back
    finally:
        for link, text in links.items():
            if not (os.path.islink(link) and os.readlink(link) == text):
                put_back.append(_put_back(link, text))


def _put_back(link: str, text: str) -> str:
    """Make `link` (to `text`) again, what stands there moved aside; the line saying so."""
    aside = ""
    try:
        _writable_folder(os.path.dirname(link))  # the command may have taken its write bit away
        if os.path.lexists(link):
            aside, n = link + REPLACED, 1
            while os.path.lexists(aside):
                aside, n = f"{link}{REPLACED}-{n}", n + 1
            os.rename(link, aside)
        os.symlink(text, link)
    except OSError as exc:
        return f"{link} (a link to {text} kept read-only) was replaced and could not be put back: {exc}"
    moved = f"; what the command put there is now {aside}" if aside else ""
    return f"{link} (a link to {text} kept read-only) was removed or replaced: put back{moved}"


def _writable_folder(folder: str) -> None:
    mode = os.stat(folder).st_mode
    if mode & (stat.S_IWUSR | stat.S_IXUSR) != stat.S_IWUSR | stat.S_IXUSR:
        os.chmod(folder, stat.S_IMODE(mode) | stat.S_IWUSR | stat.S_IXUSR)


@contextmanager
def placeholders(kept: Sequence[Path], writable: Path) -> Iterator[None]:
    """Make a placeholder for each absent `kept` path (where a kept link leads, for a link that leads
    nowhere) whose folder exists inside `writable`, and remove those no other command still holds
    once the block ends (even by an exception)."""
    root = writable.resolve()
    held: list[tuple[str, int]] = []
    try:
        for where in leads_to(kept):
            if not os.path.lexists(where) and where.parent.is_relative_to(root) and where.parent.is_dir():
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
        if not os.path.lexists(path) and not _make(path):
            return None
        if not os.path.isfile(os.path.join(path, MARKER)):
            if os.path.lexists(path):
                return None
            continue  # removed before it was held (`sweep_placeholders` of another run): make it again
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        fcntl.flock(fd, fcntl.LOCK_SH)
        if _same(fd, path):
            return fd
        os.close(fd)  # removed meanwhile by its last holder: make it again


def _make(path: str) -> bool:
    """Make the placeholder at `path` whole at once: a folder with its marker made under a
    staging name and renamed there (a convoeval killed meanwhile never leaves an empty `.git`,
    which would pass for a repository). False when it cannot be made."""
    try:
        staging = tempfile.mkdtemp(prefix=STAGING, dir=os.path.dirname(path))
    except OSError:
        return False
    Path(staging, MARKER).touch()
    os.chmod(staging, 0o755)
    try:
        if not os.path.lexists(path):  # rename would replace an empty folder made meanwhile
            os.rename(staging, path)
            return True
    except OSError:
        pass
    _remove(staging)
    return True  # made by another command meanwhile: `_hold` looks at what is there


def _release(path: str, fd: int) -> None:
    """Remove the placeholder when no other command holds it (its lock taken exclusively): moved
    to a staging name first, so that no step of its removal leaves an empty folder at `path`."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:  # another command's sandbox still has it: that one removes it
        os.close(fd)
        return
    try:
        if _same(fd, path):
            staging = os.path.join(os.path.dirname(path), f"{STAGING}{os.getpid()}-{fd}")
            os.rename(path, staging)
            _remove(staging)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(staging: str) -> None:
    """Remove a placeholder's staging folder: its marker, then itself (left if anything else is
    in it)."""
    try:
        os.unlink(os.path.join(staging, MARKER))
        os.rmdir(staging)
    except OSError:
        pass


def _same(fd: int, path: str) -> bool:
    try:
        here, there = os.fstat(fd), os.lstat(path)
    except OSError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def sweep_placeholders(folder: Path) -> None:
    """Remove the placeholders a convoeval killed during a hook (`kill -9`) left in `folder` (a
    folder holding just `MARKER`, or a staging one, that no running command holds): a
    `targets.yaml` or `.env` folder there made every later run fail ("a folder, not a targets
    file") before any hook could remove it."""
    try:
        with os.scandir(folder) as scan:
            entries = [e.path for e in scan if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for path in entries:
        try:
            if os.listdir(path) != [MARKER]:
                continue
            fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        except OSError:
            continue
        _release(path, fd)
