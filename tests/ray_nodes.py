"""A real Ray cluster on this machine: a head and a second node, each its own raylet, started
with `ray start` (used by tests/test_ray_cluster.py and benchmarks/ray_cluster.py).

Ports are chosen free (nothing collides with another cluster of a parallel session), Ray's
session files go to a fresh folder under /tmp (short: Ray's socket paths must stay under 108
bytes), and `stop` ends exactly this cluster's processes: each `ray start` runs in a session of
its own, so its daemons share its process group, and its raylet's workers are their
descendants. (`ray stop` would also end every other Ray process of the machine.) Ray 2.60 asks
a joining node for a token unless `RAY_AUTH_MODE=disabled`, set here for the nodes and the driver.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import psutil  # a dependency of Ray

RAY_ENV = {"RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _has_client() -> bool:
    """Whether Ray Client can run here (`ray[client]` adds grpcio)."""
    return importlib.util.find_spec("grpc") is not None


class RayNodes:
    """A head and a second node started with `ray start`; `address` is what `--ray-address` takes.

    Args:
        cpus: logical CPUs of each node (Ray runs that many tasks at once per node).
        second_env: variables of the second node only (its workers inherit them).
    """

    def __init__(self, cpus: int = 1, second_env: Mapping[str, str] | None = None):
        self.folder = Path(tempfile.mkdtemp(prefix="cvray-", dir="/tmp"))
        self.groups: list[int] = []
        self.env = {**os.environ, **RAY_ENV, "HOME": str(self.folder)}
        self.address = f"127.0.0.1:{free_port()}"
        self._common = ["--num-cpus", str(cpus), "--node-ip-address", "127.0.0.1", "--disable-usage-stats"]
        self._common += ["--temp-dir", str(self.folder / "ray")]
        try:
            self.client_address = f"ray://127.0.0.1:{free_port()}"  # Ray Client (needs `ray[client]`)
            client = ["--ray-client-server-port", self.client_address.rsplit(":", 1)[1]] if _has_client() else []
            head = self._start("--head", "--port", self.address.split(":")[1], "--include-dashboard=false", *client)
            second = self._start("--address", self.address, env=second_env)  # waits for the head's GCS
            for name, process in (("head", head), ("second node", second)):
                out, _ = process.communicate(timeout=240)
                if process.returncode != 0:
                    raise RuntimeError(f"ray start ({name}) failed:\n{out[-3000:]}")
        except BaseException:
            self.stop()
            raise

    def _start(self, *args: str, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
        ports = ["--dashboard-port", str(free_port()), "--dashboard-agent-listen-port", str(free_port())]
        argv = [str(Path(sys.executable).with_name("ray")), "start", *args, *ports]
        process = subprocess.Popen(
            [*argv, *self._common],
            env={**self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # its daemons keep this process group: `stop` ends exactly them
        )
        self.groups.append(process.pid)
        return process

    def stop(self) -> None:
        """End this cluster's processes (SIGKILL, like `ray stop --force`) and remove its files."""
        found: dict[int, psutil.Process] = {}
        for process in psutil.process_iter():
            try:
                if os.getpgid(process.pid) in self.groups:
                    found[process.pid] = process
                    found.update((c.pid, c) for c in process.children(recursive=True))
            except (OSError, psutil.Error):
                continue
        for process in found.values():
            try:
                process.send_signal(signal.SIGKILL)
            except psutil.Error:
                continue
        psutil.wait_procs(list(found.values()), timeout=10)
        shutil.rmtree(self.folder, ignore_errors=True)
