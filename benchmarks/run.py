"""Throughput, cache and memory benchmark of `convoeval run` (whole processes, loopback server).

    python benchmarks/run.py                 # W x3, cached re-run x3, 10k x 10 memory run
    python benchmarks/run.py --skip-memory   # W and the cached re-run only (about 30 s)

Workload W: 100 conversations x 5 live turns, each turn graded by one rubric judge call
(1000 model calls), `--concurrency 20`, against a fake OpenAI-compatible server answering
after 0.1 s. The server (benchmarks/fake_server.py, aiohttp) runs in its own process so its
CPU is not counted. Ideal W time: 1000 calls x 0.1 s / 20 = 5 s. Each `convoeval run` is
measured as a whole process: wall time, CPU seconds (user + system, from wait4) and peak RSS.

Then the cached re-run of W (same cache: must make 0 model calls, in < 2 s), and the memory
run: 10,000 conversations x 10 turns (deterministic assertions, 100,000 calls) against a
0-latency server, which must stay under 300 MB peak RSS.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
W_CONVERSATIONS, W_TURNS, W_CONCURRENCY, W_LATENCY = 100, 5, 20, 0.1
W_IDEAL_S = W_CONVERSATIONS * W_TURNS * 2 * W_LATENCY / W_CONCURRENCY  # 5 s
MEMORY_CONVERSATIONS, MEMORY_TURNS, MEMORY_FILES, MEMORY_CONCURRENCY = 10_000, 10, 100, 50


@dataclass
class Measure:
    wall_s: float
    cpu_s: float
    rss_mb: float
    calls: int
    exit_code: int


class Server:
    """benchmarks/fake_server.py in a subprocess."""

    def __init__(self, latency_s: float):
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "fake_server.py"), "--latency", str(latency_s)],
            stdout=subprocess.PIPE, text=True,
        )
        line = self.process.stdout.readline()  # type: ignore[union-attr]
        if not line.startswith("PORT "):
            raise SystemExit(f"the fake server did not start: {line!r}")
        self.url = f"http://127.0.0.1:{int(line.split()[1])}"

    def _call(self, path: str, method: str = "GET") -> dict:
        request = urllib.request.Request(self.url + path, method=method, data=b"" if method == "POST" else None)
        with urllib.request.urlopen(request) as response:
            return json.loads(response.read())

    def reset(self) -> None:
        self._call("/reset", "POST")

    def requests(self) -> int:
        return int(self._call("/stats")["requests"])

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def run_convoeval(args: list[str], cwd: Path, server: Server) -> Measure:
    """One whole `convoeval run` process: wall, CPU and peak RSS of that process alone."""
    env = {**os.environ, "OPENAI_BASE_URL": server.url + "/v1", "OPENAI_API_KEY": "sk-bench-not-a-secret"}
    server.reset()
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-m", "convoeval", "run", *args], cwd=cwd, env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode() if process.stderr else ""  # type: ignore[union-attr]
    if process.returncode not in (0, 1):
        raise SystemExit(f"convoeval run failed ({process.returncode}):\n{stderr}")
    return Measure(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, rss_mb=usage.ru_maxrss / 1024,
                   calls=server.requests(), exit_code=process.returncode)


def write_w(work: Path) -> Path:
    lines = ["tests:"]
    for i in range(W_CONVERSATIONS):
        lines.append(f"  - id: conv-{i:03d}\n    mode: conversation\n    turns:")
        for t in range(1, W_TURNS + 1):
            lines.append(f"      - input: 'Question {t} of conversation {i}: what should I pack?'\n"
                         f"        assertions: ['The reply answers question {t}']")
    path = work / "w.eval.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def write_memory_suites(work: Path, files: int) -> list[Path]:
    per_file = MEMORY_CONVERSATIONS // files
    paths = []
    for f in range(files):
        lines = ["tests:"]
        for i in range(f * per_file, (f + 1) * per_file):
            lines.append(f"  - id: c{i:05d}\n    mode: conversation\n    turns:")
            for t in range(1, MEMORY_TURNS + 1):
                lines.append(f"      - input: 'q{t} of c{i:05d}'\n        assertions: [{{type: contains, value: Reply}}]")
        path = work / "memory" / f"s{f:03d}.eval.yaml"
        path.parent.mkdir(exist_ok=True)
        path.write_text("\n".join(lines) + "\n")
        paths.append(path)
    return paths


def import_time(runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import convoeval.cli"], check=True)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def cache_lookup_us(cache_file: Path) -> tuple[float, float]:
    """Mean and max microseconds of a cache lookup (done on the event loop's thread)."""
    code = f"""
import json, sqlite3, time
from convoeval.engine import ResponseCache
cache = ResponseCache({str(cache_file)!r})
keys = [k for (k,) in cache._reader.execute("SELECT key FROM responses")]
times = []
for key in keys:
    t = time.perf_counter(); cache.get(key); times.append(time.perf_counter() - t)
cache.close()
print(json.dumps([sum(times) / len(times) * 1e6, max(times) * 1e6]))
"""
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    mean, worst = json.loads(out)
    return mean, worst


def median(measures: list[Measure]) -> Measure:
    return Measure(
        wall_s=statistics.median(m.wall_s for m in measures), cpu_s=statistics.median(m.cpu_s for m in measures),
        rss_mb=statistics.median(m.rss_mb for m in measures), calls=int(statistics.median(m.calls for m in measures)),
        exit_code=max(m.exit_code for m in measures),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of W and of its cached re-run (median)")
    parser.add_argument("--skip-memory", action="store_true", help="skip the 10k x 10 memory run")
    parser.add_argument("--memory-files", type=int, default=MEMORY_FILES,
                        help="suite files the 10k conversations are spread over (1 = one big file)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="convoeval-bench-"))
    rows: list[tuple[str, Measure, str, str]] = []
    print(f"work directory: {work}")
    print(f"import convoeval.cli: {import_time():.2f} s (median of 3 processes)")
    server = Server(W_LATENCY)
    try:
        suite = write_w(work)
        fresh, cached = [], []
        for i in range(args.runs):
            cache_dir = work / f"cache-{i}"
            common = [str(suite), "--target", "openai:bench-target", "--judge", "openai:bench-judge",
                      "--concurrency", str(W_CONCURRENCY), "--quiet", "--cache-dir", str(cache_dir),
                      "-o", str(work / f"w-{i}.jsonl")]
            fresh.append(run_convoeval(common, work, server))
            cached.append(run_convoeval(common, work, server))
            print(f"  W run {i + 1}: {fresh[-1].wall_s:.2f} s, {fresh[-1].calls} calls; "
                  f"cached re-run {cached[-1].wall_s:.2f} s, {cached[-1].calls} calls")
        w, c = median(fresh), median(cached)
        mean_us, worst_us = cache_lookup_us(work / "cache-0" / "cache.sqlite")
        print(f"cache lookup on the loop thread: mean {mean_us:.0f} us, worst {worst_us:.0f} us "
              f"({W_CONVERSATIONS * W_TURNS * 2} keys)")
        rows.append(("W: 100 conv x 5 turns + judge, c=20", w, f"{w.wall_s / W_IDEAL_S:.2f}x of 5 s",
                     "PASS" if w.wall_s <= 1.2 * W_IDEAL_S and w.calls == 1000 else "FAIL"))
        rows.append(("W cached re-run", c, "-", "PASS" if c.wall_s < 2 and c.calls == 0 else "FAIL"))
    finally:
        server.stop()

    if not args.skip_memory:
        server = Server(0.0)
        try:
            paths = write_memory_suites(work, args.memory_files)
            print(f"memory run: {MEMORY_CONVERSATIONS} conversations x {MEMORY_TURNS} turns in "
                  f"{len(paths)} file(s) (loading the suites takes most of the time)...")
            m = run_convoeval([*map(str, paths), "--target", "openai:bench-target", "--concurrency",
                               str(MEMORY_CONCURRENCY), "--quiet", "--no-cache", "-o", str(work / "memory.jsonl")],
                              work, server)
            rows.append((f"10k conv x 10 turns, c={MEMORY_CONCURRENCY}", m, "-",
                         "PASS" if m.rss_mb < 300 and m.calls == MEMORY_CONVERSATIONS * MEMORY_TURNS else "FAIL"))
        finally:
            server.stop()

    print()
    header = f"{'workload':<38} {'wall s':>8} {'ratio':>14} {'CPU s':>7} {'peak RSS MB':>12} {'calls':>7}  goal"
    print(header)
    print("-" * len(header))
    for name, m, ratio, verdict in rows:
        print(f"{name:<38} {m.wall_s:>8.2f} {ratio:>14} {m.cpu_s:>7.2f} {m.rss_mb:>12.0f} {m.calls:>7}  {verdict}")
    print("\ngoals: W within 1.2x of 5 s; cached re-run < 2 s with 0 calls; 10k x 10 under 300 MB")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
