"""Who made a leftover (a workspace folder, a cgroup): `<pid>.<start>` of the convoeval process,
so that a later run can tell whether its owner still runs (same pid, same start time)."""

from __future__ import annotations

import os
from pathlib import Path


def stat_fields(pid: int) -> list[str] | None:
    """The fields of `/proc/PID/stat` after the command name (state, ppid, pgrp, session, ...),
    or None (no such process, or no /proc)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_ticks(pid: int) -> str:
    """When process `pid` started (clock ticks since boot, from /proc), or "0" where unknown."""
    fields = stat_fields(pid)
    return fields[19] if fields and len(fields) > 19 else "0"


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
