"""The seccomp filter bubblewrap loads before a command starts (`--seccomp FD`): no file of the
command's may get a set-user-ID or set-group-ID bit. As root the command's uid 0 is the host's,
so such a file it leaves where other users reach it (the eval folder a `before_all` hook writes)
is a root program any user of the machine runs. `chmod`, `open(O_CREAT)` and `mknod` with one
of those bits fail with EPERM; `openat2` (whose mode the filter cannot read) and io_uring (whose
operations no filter sees) with ENOSYS, which makes callers fall back to the plain calls."""

from __future__ import annotations

import errno
import os
import platform
import struct

_LD_W_ABS, _JEQ, _JSET, _JGE, _RET = 0x20, 0x15, 0x45, 0x35, 0x06
_ALLOW, _KILL_PROCESS = 0x7FFF0000, 0x80000000
_DENY, _MISSING = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
_ARCH_OFFSET, _NR_OFFSET, _ARGS_OFFSET = 4, 0, 16
_SPECIAL_BITS = 0o6000
_X32_BIT = 0x40000000

#: Per audit architecture: syscall number -> the argument holding the mode, or None (refused).
_I386 = {5: 2, 8: 1, 14: 1, 15: 1, 94: 1, 295: 3, 297: 2, 306: 2, 452: 2, 437: None, 425: None}
_X86_64 = {2: 2, 85: 1, 133: 1, 90: 1, 91: 1, 257: 3, 259: 2, 268: 2, 452: 2, 437: None, 425: None}
_AARCH64 = {56: 3, 33: 2, 52: 1, 53: 2, 452: 2, 437: None, 425: None}
_ARCHES = {
    "x86_64": {0xC000003E: _X86_64, 0x40000003: _I386},
    "aarch64": {0xC00000B7: _AARCH64},
}


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _checks(calls: dict[int, int | None], x32: bool) -> list[bytes]:
    """One architecture's checks, with the syscall number already loaded; each matched call
    returns, so what falls through is allowed."""
    out = [_op(_JGE, _X32_BIT, 0, 1), _op(_RET, _MISSING)] if x32 else []
    for nr, arg in calls.items():
        if arg is None:
            out += [_op(_JEQ, nr, 0, 1), _op(_RET, _MISSING)]
            continue
        mode = _ARGS_OFFSET + 8 * arg + (0 if struct.pack("=H", 1)[0] == 1 else 4)  # the low half
        out += [
            _op(_JEQ, nr, 0, 4),
            _op(_LD_W_ABS, mode),
            _op(_JSET, _SPECIAL_BITS, 0, 1),
            _op(_RET, _DENY),
            _op(_RET, _ALLOW),
        ]
    return [*out, _op(_RET, _ALLOW)]


def program(machine: str | None = None) -> bytes | None:
    """The filter for this machine's architecture (`struct sock_filter`s, as bubblewrap reads
    them), None where convoeval has no table for it. Another architecture's calls (32-bit ones
    on a 64-bit kernel that has no table here) end the process."""
    arches = _ARCHES.get(machine or platform.machine())
    if arches is None:
        return None
    out: list[bytes] = []
    for arch, calls in arches.items():
        body = [_op(_LD_W_ABS, _NR_OFFSET), *_checks(calls, x32=arch == 0xC000003E)]
        out += [_op(_LD_W_ABS, _ARCH_OFFSET), _op(_JEQ, arch, 0, len(body)), *body]
    return b"".join([*out, _op(_RET, _KILL_PROCESS)])


_PROGRAM = program()


def filter_fd() -> int | None:
    """A pipe's read end holding the filter, for one bubblewrap (`--seccomp FD`; it reads to the
    end, so each command needs its own); None where there is no filter for this machine. The
    caller closes it once the command has started."""
    if _PROGRAM is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, _PROGRAM)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read
