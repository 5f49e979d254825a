"""What the sandbox costs and bounds: the time to run a trivial command under each backend
(bubblewrap vs none), and convoeval's peak memory while a command floods its pipe.

    python benchmarks/sandbox_cost.py [--runs 50]

Prints one line per measure. Nothing here is asserted; the tests assert the bounds.
"""

from __future__ import annotations

import argparse
import asyncio
import resource
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from convoeval import _sandbox as sandbox


async def per_command(backend: str, runs: int, folder: Path) -> list[float]:
    sandbox.choose(backend)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        ran = await sandbox.run("true", folder, timeout_s=10, writable=folder, env=sandbox.command_env())
        times.append((time.perf_counter() - started) * 1000)
        assert ran.code == 0, ran.output
    return times


async def flood(folder: Path, seconds: float) -> tuple[int, int]:
    """Bytes `yes` wrote in `seconds` (read and dropped past the cap) and this process's peak RSS."""
    sandbox.choose("bubblewrap" if shutil.which("bwrap") else "none")
    ran = await sandbox.run("yes", folder, timeout_s=seconds, writable=folder, env=sandbox.command_env(), cap=8000)
    return ran.cut + len(ran.output), resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        for backend in ("none", "bubblewrap"):
            if backend == "bubblewrap" and shutil.which("bwrap") is None:
                print("bubblewrap: not installed")
                continue
            times = await per_command(backend, args.runs, folder)
            print(f"{backend}: `true` in {statistics.median(times):.1f} ms median ({args.runs} runs)")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        flowed, peak = await flood(folder, 3.0)
        print(f"`yes` for 3 s: {flowed / 1e6:.0f} MB read, peak RSS {before / 1024:.0f} -> {peak / 1024:.0f} MB")


if __name__ == "__main__":
    asyncio.run(main())
