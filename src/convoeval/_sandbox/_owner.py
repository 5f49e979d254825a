"""Who made a leftover (a workspace folder, a cgroup): `<pid>.<start>` of the convoeval process,
so that a later run can tell whether its owner still runs (same pid, same start time)."""

from __future__ import annotations

import os
from pathlib import Path


def start_ticks(pid: int) -> str:
    """When process `pid` started (clock ticks since boot, from /proc), or "0" where unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "0"
    return stat.rsplit(")", 1)[1].split()[19]


def owner_tag() -> str:
    """`<pid>.<start>`: this process, as a sweep later tells whether it still runs."""
    return f"{os.getpid()}.{start_ticks(os.getpid())}"


def left_by_gone_owner(tagged: str) -> bool:
    """Whether `tagged` (a leftover's name after its prefix: `<pid>.<start>-...`) was made by a
    process that has ended; False for a name that holds no such tag."""
    pid_text, _, rest = tagged.partition(".")
    start = rest.split("-", 1)[0]
    return pid_text.isdigit() and start.isdigit() and owner_gone(int(pid_text), start)


def owner_gone(pid: int, start: str) -> bool:
    """Whether the process that wrote `<pid>.<start>` has ended (a new process with the same
    pid has another start time); "0" (unknown) on either side counts as the same process."""
    alive = Path(f"/proc/{pid}").exists() if Path("/proc/self").exists() else _alive(pid)
    return not (alive and (start == "0" or start_ticks(pid) in (start, "0")))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
