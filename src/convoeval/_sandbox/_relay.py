"""A relay that lets a command reach one host Unix socket as `http://127.0.0.1:PORT`, and
nothing else of the host's network.

A code-grader with AgentV's target proxy (`graders/_target_proxy.py`) calls a loopback URL. In
bubblewrap (`--unshare-all`) the command has a network namespace of its own, whose `lo` is up
but holds nothing of the host's. The proxy therefore listens on a Unix socket in a private
folder; that folder alone is bound into the sandbox, read-only (`RELAY_DIR`; connecting to a
socket needs no write access to its mount), and the command is started
by this relay, a stdlib-only Python program (`RELAY_SOURCE`, run with `python -I -S -c`): it
listens on the sandbox's own 127.0.0.1, puts that URL in the variable it is told, starts the
command (which inherits its stdin, stdout and stderr) and copies every connection to the socket
until the command ends, then exits with the command's status (re-raising the signal that
killed it). On the host (`none`, a grader outside a workspace) the same relay runs, so every
backend reaches the proxy one way. A program it cannot start is reported as bubblewrap reports
one (`RELAY_NOT_FOUND`), exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

#: Where the proxy's socket folder is bound inside bubblewrap (a private tmpfs /run there).
RELAY_DIR = "/run/convoeval-proxy"
#: How the relay begins its message about a command it cannot start.
RELAY_NOT_FOUND = "convoeval relay: execvp"

RELAY_SOURCE = r"""
import asyncio, logging, os, signal, sys

logging.getLogger("asyncio").disabled = True  # the program's stderr is its own: no word of the relay's
SOCKET, VARIABLE, ARGV = sys.argv[1], sys.argv[2], sys.argv[3:]

async def copy(reader, writer):
    try:
        while True:
            data = await reader.read(65536)
            if not data:
                break
            writer.write(data)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except (OSError, RuntimeError):
        pass

async def serve(reader, writer):
    try:
        far_reader, far_writer = await asyncio.open_unix_connection(SOCKET)
    except (OSError, asyncio.CancelledError):  # no proxy, or the program ended meanwhile
        writer.close()
        return
    try:
        await asyncio.gather(copy(reader, far_writer), copy(far_reader, writer))
    except asyncio.CancelledError:
        pass
    for w in (writer, far_writer):
        w.close()

async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    env = dict(os.environ)
    env[VARIABLE] = "http://127.0.0.1:%d" % port
    try:
        child = await asyncio.create_subprocess_exec(*ARGV, env=env)
    except OSError as exc:
        sys.stderr.write("convoeval relay: execvp %s: %s\n" % (ARGV[0], exc.strerror))
        return 1
    return await child.wait()

status = asyncio.run(main())
if status < 0:
    signal.signal(-status, signal.SIG_DFL)
    os.kill(os.getpid(), -status)
sys.exit(status)
"""


@dataclass(frozen=True)
class Relay:
    """A host Unix socket (in a folder of its own, which the sandbox binds) that a command
    reaches at the URL put in `variable`."""

    socket: Path
    variable: str

    def argv(self, command: Sequence[str], *, inside: bool) -> list[str]:
        """`command` started by the relay; `inside`: the socket as bubblewrap shows it."""
        socket = f"{RELAY_DIR}/{self.socket.name}" if inside else str(self.socket)
        return [sys.executable, "-I", "-S", "-c", RELAY_SOURCE, socket, self.variable, *command]

    def bind(self) -> list[str]:
        """bubblewrap's arguments that show the socket's folder (and nothing else of the host)."""
        return ["--ro-bind", str(self.socket.parent), RELAY_DIR]
