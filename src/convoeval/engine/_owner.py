"""Which process is running a run: pid, host and process start time, and whether it still lives.

A run in the store records its owner; `--resume` of a run whose owner still lives is refused,
and a run whose owner is gone (killed, crashed) may be resumed. The start time (from
`/proc/PID/stat` where there is one) tells a live owner from a new process that reuses its pid.
"""

from __future__ import annotations

import os
import socket
from dataclasses import asdict, dataclass

from .._sandbox import stat_fields


@dataclass(frozen=True)
class Owner:
    """A process, as a run records it."""

    pid: int
    host: str
    started: str | None = None  # the process start time (clock ticks since boot), when known

    @classmethod
    def this_process(cls) -> Owner:
        return cls(os.getpid(), socket.gethostname(), process_start(os.getpid()))

    @classmethod
    def from_json(cls, data: object) -> Owner:
        """The owner a store recorded; ValueError, KeyError or TypeError for one convoeval did not write."""
        if not isinstance(data, dict):
            raise TypeError(f"an owner is a JSON object, got {data!r:.60}")
        started = data.get("started")
        return cls(int(str(data["pid"])), str(data["host"]), None if started is None else str(started))

    def to_json(self) -> dict[str, object]:
        return asdict(self)

    def is_this_process(self) -> bool:
        return self.pid == os.getpid() and self.host == socket.gethostname()

    def state(self) -> str:
        """`alive` or `gone` for a process on this host; `unknown` for one on another host."""
        if self.host != socket.gethostname():
            return "unknown"
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return "gone"
        except PermissionError:
            pass  # exists, owned by another user
        stat = stat_fields(self.pid)
        if stat and stat[0] in ("Z", "X"):
            return "gone"  # killed, and not yet reaped by its parent: it runs no more
        if self.started is not None and stat and len(stat) > 19 and stat[19] != self.started:
            return "gone"  # the pid was reused by another process
        return "alive"

    def describe(self) -> str:
        return f"process {self.pid}" + ("" if self.host == socket.gethostname() else f" on host {self.host}")


def process_start(pid: int) -> str | None:
    """The start time of process `pid` in clock ticks since boot (Linux), else None."""
    fields = stat_fields(pid)
    return fields[19] if fields and len(fields) > 19 else None
