"""Throughput, start-up, cache and memory benchmark of `convoeval run` (whole processes, loopback server).

    python benchmarks/run.py                 # all of it
    python benchmarks/run.py --skip-memory   # without the 10k x 10 memory run (about a minute)

Workload W: 100 conversations x 5 live turns, each turn graded by one rubric judge call
(1000 model calls), at most 20 requests in flight (`--concurrency 100 --max-connections 20`),
against a fake OpenAI-compatible server answering after 0.1 s. The server
(benchmarks/fake_server.py, aiohttp) runs in its own process so its CPU is not counted, and
reports the most requests it held at once. The floor is the same calls made by the plainest
client (benchmarks/floor.py: asyncio + aiohttp, 20 in flight), measured in the same run; the
ratio convoeval / floor is the goal (W within 1.05x, the generation-only half, 500 calls
without judging, within 1.1x). Every process is measured whole: wall time, CPU seconds
(user + system, from wait4) and peak RSS.

Each process's wall time is split into start-up, requests and tear-down by the times the
server saw its first request and answered its last. Start-up: a one-test, one-turn run against
a 0-latency server, next to `python -c pass` and to importing the libraries a run uses (what no
code of ours can avoid; goal: the run within 1.6x of that floor), the three taken in turn. Then the cached re-run of W (0 model calls, < 2 s), and the memory run:
10,000 conversations x 10 turns (deterministic assertions, 100,000 calls) against a 0-latency
server, under 300 MB peak RSS.
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
W_CONVERSATIONS, W_TURNS, W_CONNECTIONS, W_LATENCY = 100, 5, 20, 0.1
W_IDEAL_S = W_CONVERSATIONS * W_TURNS * 2 * W_LATENCY / W_CONNECTIONS  # 5 s
MEMORY_CONVERSATIONS, MEMORY_TURNS, MEMORY_FILES, MEMORY_CONCURRENCY = 10_000, 10, 100, 50


@dataclass
class Measure:
    wall_s: float
    cpu_s: float
    rss_mb: float
    calls: int
    exit_code: int
    in_flight: int = 0
    start_s: float = 0.0  # process start -> first request the server saw
    span_s: float = 0.0  # first request -> last answer
    end_s: float = 0.0  # last answer -> process exit

    @property
    def split(self) -> str:
        return f"{self.start_s:.2f} + {self.span_s:.2f} + {self.end_s:.2f}"


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

    def stats(self) -> dict:
        return self._call("/stats")

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait()


def measure(argv: list[str], cwd: Path, server: Server | None) -> Measure:
    """One whole process: wall, CPU and peak RSS of that process alone, and the server's counts."""
    env = {**os.environ}
    if server is not None:
        env.update(OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY="sk-bench-not-a-secret")
        server.reset()
    started, started_at = time.perf_counter(), time.time()
    process = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(process.pid, 0)
    wall, ended_at = time.perf_counter() - started, time.time()
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode() if process.stderr else ""  # type: ignore[union-attr]
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:4])} failed ({process.returncode}):\n{stderr}")
    stats = server.stats() if server is not None else {}
    first, last = stats.get("first") or started_at, stats.get("last") or started_at
    return Measure(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, rss_mb=usage.ru_maxrss / 1024,
                   calls=int(stats.get("requests", 0)), exit_code=process.returncode,
                   in_flight=int(stats.get("max_in_flight", 0)), start_s=first - started_at, span_s=last - first,
                   end_s=ended_at - last)


def run_convoeval(args: list[str], cwd: Path, server: Server) -> Measure:
    return measure([sys.executable, "-m", "convoeval", "run", *args], cwd, server)


def run_floor(server: Server, judge: bool) -> Measure:
    argv = [sys.executable, str(HERE / "floor.py"), server.url + "/v1/chat/completions", "--conversations",
            str(W_CONVERSATIONS), "--turns", str(W_TURNS), "--max", str(W_CONNECTIONS)]
    return measure(argv + (["--judge"] if judge else []), HERE, server)


def write_w(work: Path, judged: bool = True, name: str = "w") -> Path:
    lines = ["tests:"]
    for i in range(W_CONVERSATIONS):
        lines.append(f"  - id: conv-{i:03d}\n    mode: conversation\n    turns:")
        for t in range(1, W_TURNS + 1):
            lines.append(f"      - input: 'Question {t} of conversation {i}: what should I pack?'")
            if judged:
                lines.append(f"        assertions: ['The reply answers question {t}']")
    path = work / f"{name}.eval.yaml"
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


#: The libraries a `convoeval run` imports before its first request: what no code of ours can avoid.
DEPENDENCIES = "import aiohttp, pydantic, typer, yaml, rich.console, rich.table, sqlite3, importlib.metadata"


#: The one-test run at most this many times the library floor (medians of the same run).
STARTUP_GOAL = 1.6


def startup(work: Path, runs: int = 7) -> list[tuple[str, Measure, str, str]]:
    """`python -c pass`, importing the libraries a run needs (the floor) and a one-test, one-turn
    `convoeval run`, each `runs` times taken in turn (so a busy moment hits all three); prints
    their medians and returns the summary rows: the floor and the run with its ratio to it."""
    suite = work / "one.eval.yaml"
    suite.write_text("tests:\n  - id: one\n    input: hello\n")
    server = Server(0.0)
    bare: list[Measure] = []
    libraries: list[Measure] = []
    one: list[Measure] = []
    try:
        for _ in range(runs):
            bare.append(measure([sys.executable, "-c", "pass"], work, None))
            libraries.append(measure([sys.executable, "-c", DEPENDENCIES], work, None))
            one.append(run_convoeval([str(suite), "--target", "openai:bench-target", "--quiet", "--no-cache",
                                      "--store", str(work / "startup-state")], work, server))
    finally:
        server.stop()
    b, f, o = median(bare), median(libraries), median(one)
    ratio = o.wall_s / f.wall_s
    print(f"start-up: python -c pass {b.wall_s:.3f} s, importing the libraries a run uses {f.wall_s:.3f} s "
          f"(CPU {f.cpu_s:.3f} s), a one-test run {o.wall_s:.3f} s (CPU {o.cpu_s:.3f} s): {ratio:.2f}x the floor, "
          f"CPU {o.cpu_s / f.cpu_s:.2f}x (medians of {runs} processes each)")
    return [("floor: importing the libraries", f, "-", "-"),
            ("one-test run (start-up)", o, f"{ratio:.2f}x floor", "PASS" if ratio <= STARTUP_GOAL else "FAIL")]


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
    rows += startup(work)
    server = Server(W_LATENCY)
    try:
        suite, generation = write_w(work), write_w(work, judged=False, name="g")
        fresh, cached, floor, plain, plain_floor = [], [], [], [], []
        for i in range(args.runs):
            cache_dir = work / f"cache-{i}"
            common = [str(suite), "--target", "openai:bench-target", "--judge", "openai:bench-judge",
                      "--concurrency", str(W_CONVERSATIONS), "--max-connections", str(W_CONNECTIONS), "--quiet",
                      "--cache-dir", str(cache_dir), "-o", str(work / f"w-{i}.jsonl")]
            floor.append(run_floor(server, judge=True))
            fresh.append(run_convoeval(common, work, server))
            cached.append(run_convoeval(common, work, server))
            plain_floor.append(run_floor(server, judge=False))
            plain.append(run_convoeval([str(generation), "--target", "openai:bench-target", "--concurrency",
                                        str(W_CONVERSATIONS), "--max-connections", str(W_CONNECTIONS), "--quiet",
                                        "--no-cache", "-o", str(work / f"g-{i}.jsonl")], work, server))
            print(f"  run {i + 1}: W {fresh[-1].wall_s:.2f} s ({fresh[-1].calls} calls, "
                  f"{fresh[-1].in_flight} in flight at most), floor {floor[-1].wall_s:.2f} s; "
                  f"generation-only {plain[-1].wall_s:.2f} s, floor {plain_floor[-1].wall_s:.2f} s; "
                  f"cached re-run {cached[-1].wall_s:.2f} s, {cached[-1].calls} calls")
            print(f"         start + requests + end: W {fresh[-1].split}, floor {floor[-1].split}; "
                  f"generation-only {plain[-1].split}, floor {plain_floor[-1].split}")
        w, c, f, g, gf = median(fresh), median(cached), median(floor), median(plain), median(plain_floor)
        mean_us, worst_us = cache_lookup_us(work / "cache-0" / "cache.sqlite")
        print(f"cache lookup on the loop thread: mean {mean_us:.0f} us, worst {worst_us:.0f} us "
              f"({W_CONVERSATIONS * W_TURNS * 2} keys)")
        bounded = max(m.in_flight for m in fresh + plain) <= W_CONNECTIONS
        rows.append(("floor: asyncio + aiohttp, 1000 calls", f, f"{f.wall_s / W_IDEAL_S:.2f}x of 5 s", "-"))
        rows.append(("W: 100 conv x 5 turns + judge", w, f"{w.wall_s / f.wall_s:.3f}x floor",
                     "PASS" if w.wall_s <= 1.05 * f.wall_s and w.calls == 1000 and bounded else "FAIL"))
        rows.append(("floor: 500 calls, no judge", gf, "-", "-"))
        rows.append(("generation only: 500 calls", g, f"{g.wall_s / gf.wall_s:.3f}x floor",
                     "PASS" if g.wall_s <= 1.1 * gf.wall_s and g.calls == 500 and bounded else "FAIL"))
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
    print(f"\ngoals: at most {W_CONNECTIONS} requests in flight; W within 1.05x of the floor, generation-only "
          f"within 1.1x; a one-test run within {STARTUP_GOAL}x of importing its libraries; cached re-run < 2 s "
          "with 0 calls; "
          "10k x 10 under 300 MB")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
