"""The seccomp filters bubblewrap loads before a command starts (`--seccomp FD`).

Every command: no file of its may get a set-user-ID or set-group-ID bit. As root the command's
uid 0 is the host's, so such a file it leaves where other users reach it (the eval folder a
`before_all` hook writes) is a root program any user of the machine runs. `chmod`,
`open(O_CREAT)` and `mknod` with one of those bits fail with EPERM; `openat2` (whose mode the
filter cannot read) and io_uring (whose operations no filter sees) with ENOSYS, which makes
callers fall back to the plain calls.

A command whose writable folder other users reach (`shared`: a `before_all`/`after_all` hook in
the eval folder, not a workspace, which lies in a folder of mode 0700) may not open anything to
them either: a `chmod 777 .` there let any user replace `targets.yaml` for the next run. `chmod`
adding write for others fails with EPERM, and setting extended attributes (a POSIX ACL grants
what the mode does not) fails with EOPNOTSUPP, as on a file system without them. What it makes
anew is not covered (a `umask 0` cannot be refused: shells read the mask by setting it to 0),
but convoeval starts every command with a mask that removes write for others, and no file or
folder convoeval reads or runs can be made anew there (`kept_in_eval_folder`)."""

from __future__ import annotations

import errno
import os
import platform
import struct

_LD_W_ABS, _JEQ, _JSET, _JGE, _RET = 0x20, 0x15, 0x45, 0x35, 0x06
_ALLOW, _KILL_PROCESS = 0x7FFF0000, 0x80000000
_DENY, _MISSING = 0x00050000 | errno.EPERM, 0x00050000 | errno.ENOSYS
_UNSUPPORTED = 0x00050000 | errno.EOPNOTSUPP
_ARCH_OFFSET, _NR_OFFSET, _ARGS_OFFSET = 4, 0, 16
_SPECIAL_BITS, _OTHERS_WRITE = 0o6000, 0o002
_X32_BIT = 0x40000000

#: A check of one call: the argument holding a mode and the bits that refuse it when set there,
#: or None and what the call returns whatever its arguments.
Check = tuple[int | None, int]


def _table(create: dict[int, int], chmod: dict[int, int], xattrs: tuple[int, ...], shared: bool) -> dict[int, Check]:
    """One architecture's checks: the calls that create a file with a mode (`create`, number ->
    the mode's argument), those that change a mode (`chmod`), the calls that set an extended
    attribute; openat2 (437), io_uring_setup (425) and setxattrat (463) everywhere."""
    out: dict[int, Check] = {nr: (arg, _SPECIAL_BITS) for nr, arg in create.items()}
    out |= {nr: (arg, _SPECIAL_BITS | (_OTHERS_WRITE if shared else 0)) for nr, arg in chmod.items()}
    out |= {437: (None, _MISSING), 425: (None, _MISSING)}
    if shared:
        out |= {nr: (None, _UNSUPPORTED) for nr in (*xattrs, 463)}
    return out


def _tables(machine: str, shared: bool) -> dict[int, dict[int, Check]] | None:
    """Per audit architecture of `machine`, its checks (None: no table for it)."""
    if machine == "x86_64":
        return {
            0xC000003E: _table(
                {2: 2, 85: 1, 133: 1, 257: 3, 259: 2}, {90: 1, 91: 1, 268: 2, 452: 2}, (188, 189, 190), shared
            ),
            0x40000003: _table(
                {5: 2, 8: 1, 14: 1, 295: 3, 297: 2}, {15: 1, 94: 1, 306: 2, 452: 2}, (226, 227, 228), shared
            ),
        }
    if machine == "aarch64":
        return {0xC00000B7: _table({56: 3, 33: 2}, {52: 1, 53: 2, 452: 2}, (5, 6, 7), shared)}
    return None


def _op(code: int, k: int, jt: int = 0, jf: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _checks(calls: dict[int, Check], x32: bool) -> list[bytes]:
    """One architecture's checks, with the syscall number already loaded; each matched call
    returns, so what falls through is allowed."""
    out = [_op(_JGE, _X32_BIT, 0, 1), _op(_RET, _MISSING)] if x32 else []
    low = 0 if struct.pack("=H", 1)[0] == 1 else 4  # where an argument's low half lies
    for nr, (arg, bits) in calls.items():
        if arg is None:  # `bits` is what it returns
            out += [_op(_JEQ, nr, 0, 1), _op(_RET, bits)]
            continue
        out += [
            _op(_JEQ, nr, 0, 4),
            _op(_LD_W_ABS, _ARGS_OFFSET + 8 * arg + low),
            _op(_JSET, bits, 0, 1),
            _op(_RET, _DENY),
            _op(_RET, _ALLOW),
        ]
    return [*out, _op(_RET, _ALLOW)]


def program(machine: str | None = None, *, shared: bool = False) -> bytes | None:
    """The filter for `machine` (this one's by default; `struct sock_filter`s, as bubblewrap
    reads them), None where convoeval has no table for it; `shared`: also nothing opened to other
    users. Another architecture's calls (32-bit ones on a 64-bit kernel that has no table here)
    end the process."""
    tables = _tables(machine or platform.machine(), shared)
    if tables is None:
        return None
    out: list[bytes] = []
    for arch, calls in tables.items():
        body = [_op(_LD_W_ABS, _NR_OFFSET), *_checks(calls, x32=arch == 0xC000003E)]
        out += [_op(_LD_W_ABS, _ARCH_OFFSET), _op(_JEQ, arch, 0, len(body)), *body]
    return b"".join([*out, _op(_RET, _KILL_PROCESS)])


_PROGRAMS = {shared: program(shared=shared) for shared in (False, True)}


def filter_fd(shared: bool = False) -> int | None:
    """A pipe's read end holding the filter (`shared`: the one for a command whose writable
    folder other users reach), for one bubblewrap (`--seccomp FD`; it reads to the end, so each
    command needs its own); None where there is no filter for this machine. The caller closes it
    once the command has ended."""
    program = _PROGRAMS[shared]
    if program is None:
        return None
    read, write = os.pipe()
    try:
        os.write(write, program)  # a few hundred bytes: far below a pipe's buffer
    finally:
        os.close(write)
    return read
