"""Host paths an agent CLI needs under folders its unprivileged user cannot pass through.

bubblewrap, started as that user, resolves its bind sources with the user's rights (even
`--bind-fd`: it resolves the descriptor's path), so a CLI installed in a repo under `/root`
(mode 0700) could not be bound. `Reach` makes them reachable: in the child, still root, before
it drops to the user, a mount namespace of its own (private: nothing reaches the host's), an
empty tmpfs (mode 0755) over each closed folder, and each needed path bound back in at its own
path. bubblewrap then starts from that view; the rest of the closed folders stays out of sight.
"""

from __future__ import annotations

import ctypes
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

CLONE_NEWNS = 0x00020000
MS_NOSUID, MS_NODEV, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18

try:
    _libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None
except OSError:  # pragma: no cover - no libc
    _libc = None


@dataclass(frozen=True)
class Reach:
    """`closed` folders to cover, and the `needed` paths under them to bind back in."""

    closed: list[str] = field(default_factory=list)
    needed: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, paths: list[str], closed: list[str]) -> Reach:
        under = sorted({p for p in paths if any(Path(p).is_relative_to(c) for c in closed)}, key=len)
        needed: list[str] = []
        for path in under:  # one inside another comes in with it
            if not any(Path(path).is_relative_to(n) for n in needed):
                needed.append(path)
        return cls(closed, needed)

    def open_up(self) -> None:
        """In the child, as root: cover the closed folders and bind the needed paths back."""
        if not self.closed:
            return
        if _libc is None:
            raise OSError("no libc to make a mount namespace with")
        _call(_libc.unshare(CLONE_NEWNS), "unshare")
        _mount(None, "/", None, MS_REC | MS_PRIVATE, None)
        # Held open in the new namespace (a bind takes only its own mounts) before the covers.
        kept = [(path, os.open(path, os.O_PATH | os.O_CLOEXEC)) for path in self.needed if os.path.exists(path)]
        for folder in self.closed:
            _mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755")
        for path, fd in kept:
            _mount_point(Path(path), os.path.isdir(f"/proc/self/fd/{fd}"))
            _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC, None)
            os.close(fd)


def _mount_point(path: Path, folder: bool) -> None:
    """Make `path` (and its missing parents, 0755) in the tmpfs: a folder, or an empty file."""
    for parent in reversed(path.parents):
        if not parent.exists():
            parent.mkdir()
            parent.chmod(0o755)
    if folder:
        path.mkdir(exist_ok=True)
        path.chmod(0o755)
    elif not path.exists():
        path.touch(0o644)


def _mount(source: str | None, target: str, fstype: str | None, flags: int, data: str | None) -> None:
    assert _libc is not None
    encode = lambda s: s.encode() if s is not None else None  # noqa: E731
    result = _libc.mount(encode(source), encode(target), encode(fstype), flags, encode(data))
    _call(result, f"mount {target}")


def _call(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")
