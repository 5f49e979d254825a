"""Throughput, start-up, cache and memory benchmark of `convoeval run` (whole processes, loopback server).

    python benchmarks/run.py                 # all of it
    python benchmarks/run.py --skip-memory   # without the 10k x 10 memory run (about a minute)
    python benchmarks/run.py --only w-large  # one part: startup, w, w-large or memory (repeatable)

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

Beside each floor, the floor with state (`floor.py --state`): the same client keeping a response
cache, a run store and a results file as leanly as it can, so that what convoeval spends above
it is known to be neither the calls nor the state an evaluation must keep (printed, no goal).

Workload W-large: 2,000 conversations x 5 turns, each turn graded by one judge call (20,000
calls), 20 ms latency, at most 200 in flight (`--concurrency 2000 --max-connections 200`), next
to the floor doing the same (200 in flight). Here the client's CPU is the limit, so it reports
CPU per model call: the process's CPU minus its start-up CPU (the CPU it had used when the
server saw its first request, sampled from /proc every 5 ms), divided by the calls. Goals:
CPU per call within 1.5x of the floor's, wall within 1.15x. The server's own CPU over the run is
printed beside it, to show it is not the bottleneck. W-large also runs with `--processes 2` (the
trials in two worker processes; same arguments otherwise): its CPU is that of the command and its
workers together (wait4 counts the children it reaped), and its start-up CPU theirs too (the
sampler adds the CPU of the command's living children, and of those it reaped).
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
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
W_CONVERSATIONS, W_TURNS, W_CONNECTIONS, W_LATENCY = 100, 5, 20, 0.1
W_IDEAL_S = W_CONVERSATIONS * W_TURNS * 2 * W_LATENCY / W_CONNECTIONS  # 5 s
LARGE_CONVERSATIONS, LARGE_TURNS, LARGE_CONNECTIONS, LARGE_LATENCY = 2000, 5, 200, 0.02
LARGE_PROCESSES = 2  # W-large is also run with `--processes 2` (worker processes; CPU of all of them)
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
    start_cpu_s: float = 0.0  # CPU seconds used before the server saw the first request
    server_cpu_s: float = 0.0  # the server's CPU seconds over the process's run
    end_cpu_s: float = 0.0  # CPU seconds used after the server answered the last request

    @property
    def split(self) -> str:
        return f"{self.start_s:.2f} + {self.span_s:.2f} + {self.end_s:.2f}"

    @property
    def cpu_per_call_ms(self) -> float:
        """CPU per model call: (process CPU - its start-up CPU) / calls, in milliseconds."""
        return (self.cpu_s - self.start_cpu_s) / max(self.calls, 1) * 1000


class CpuSampler(threading.Thread):
    """Samples a process's CPU seconds every 5 ms, with its children's (its worker processes,
    `--processes`): utime + stime (+ cutime + cstime, of the children it reaped) from
    /proc/PID/stat, plus those of its living children, so that the CPU they had used at a given
    wall-clock time can be looked up after it ended."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.samples, self.done = pid, [(time.time(), 0.0)], threading.Event()
        self.tick = os.sysconf("SC_CLK_TCK")

    def run(self) -> None:
        while not self.done.wait(0.005):
            try:
                cpu = self._cpu(self.pid)
            except (OSError, IndexError, ValueError):
                return
            for child in self._children():
                try:
                    cpu += self._cpu(child)
                except (OSError, IndexError, ValueError):
                    continue  # ended meanwhile: counted in the parent's cutime from now on
            self.samples.append((time.time(), cpu))

    def _cpu(self, pid: int) -> float:
        """utime + stime + cutime + cstime of `pid`, in seconds."""
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        return sum(int(f) for f in fields[11:15]) / self.tick

    def _children(self) -> list[int]:
        children: list[int] = []
        try:
            for task in os.listdir(f"/proc/{self.pid}/task"):
                with open(f"/proc/{self.pid}/task/{task}/children") as listed:
                    children.extend(int(c) for c in listed.read().split())
        except OSError:
            pass
        return children

    def at(self, when: float) -> float:
        """The CPU seconds of the last sample taken at or before `when`."""
        return max((cpu for t, cpu in self.samples if t <= when), default=0.0)


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
    sampler = CpuSampler(process.pid)
    sampler.start()
    _, status, usage = os.wait4(process.pid, 0)
    wall, ended_at = time.perf_counter() - started, time.time()
    sampler.done.set()
    sampler.join()
    process.returncode = os.waitstatus_to_exitcode(status)
    stderr = process.stderr.read().decode() if process.stderr else ""  # type: ignore[union-attr]
    if process.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv[:4])} failed ({process.returncode}):\n{stderr}")
    stats = server.stats() if server is not None else {}
    first, last = stats.get("first") or started_at, stats.get("last") or started_at
    return Measure(wall_s=wall, cpu_s=usage.ru_utime + usage.ru_stime, rss_mb=usage.ru_maxrss / 1024,
                   calls=int(stats.get("requests", 0)), exit_code=process.returncode,
                   in_flight=int(stats.get("max_in_flight", 0)), start_s=first - started_at, span_s=last - first,
                   end_s=ended_at - last, start_cpu_s=sampler.at(first) if stats.get("first") else 0.0,
                   server_cpu_s=float(stats.get("cpu_s", 0.0)),
                   end_cpu_s=usage.ru_utime + usage.ru_stime - sampler.at(last) if stats.get("last") else 0.0)


def run_convoeval(args: list[str], cwd: Path, server: Server) -> Measure:
    return measure([sys.executable, "-m", "convoeval", "run", *args], cwd, server)


def run_floor(server: Server, judge: bool, conversations: int = W_CONVERSATIONS, turns: int = W_TURNS,
              most: int = W_CONNECTIONS, state: Path | None = None) -> Measure:
    """benchmarks/floor.py; with `state` (a new folder), the floor with state (its cache, store and results)."""
    argv = [sys.executable, str(HERE / "floor.py"), server.url + "/v1/chat/completions", "--conversations",
            str(conversations), "--turns", str(turns), "--max", str(most)]
    return measure(argv + (["--judge"] if judge else []) + (["--state", str(state)] if state else []), HERE, server)


def write_w(work: Path, judged: bool = True, name: str = "w", conversations: int = W_CONVERSATIONS,
            turns: int = W_TURNS) -> Path:
    lines = ["tests:"]
    for i in range(conversations):
        lines.append(f"  - id: conv-{i:04d}\n    mode: conversation\n    turns:")
        for t in range(1, turns + 1):
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


def warm_bytecode() -> None:
    """Every measured process runs as installed code does, with bytecode caches: convoeval is
    compiled once here, and PYTHONDONTWRITEBYTECODE (set in some shells) is not passed on, or
    each process would compile all of convoeval's modules again, which an installed package
    never does (the caches go to the usual, git-ignored `__pycache__` folders)."""
    import convoeval

    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(Path(convoeval.__file__).parent)], check=True,
                   stdout=subprocess.DEVNULL)


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
    def mid(field: str) -> float:
        return statistics.median(getattr(m, field) for m in measures)

    return Measure(
        wall_s=mid("wall_s"), cpu_s=mid("cpu_s"), rss_mb=mid("rss_mb"), calls=int(mid("calls")),
        exit_code=max(m.exit_code for m in measures), in_flight=max(m.in_flight for m in measures),
        start_cpu_s=mid("start_cpu_s"), server_cpu_s=mid("server_cpu_s"),
    )


def load() -> str:
    """The machine's load averages (1, 5, 15 minutes), printed beside every wall time."""
    return "load " + " ".join(f"{x:.2f}" for x in os.getloadavg())


def w_large(work: Path, runs: int) -> list[tuple[str, Measure, str, str]]:
    """W-large against its floor, `runs` times each, interleaved; the rows of the medians."""
    print(f"W-large: {LARGE_CONVERSATIONS} conversations x {LARGE_TURNS} turns + a judge call per turn, "
          f"{LARGE_LATENCY * 1000:.0f} ms latency, {LARGE_CONNECTIONS} in flight at most")
    suite = write_w(work, name="w-large", conversations=LARGE_CONVERSATIONS, turns=LARGE_TURNS)
    calls = LARGE_CONVERSATIONS * LARGE_TURNS * 2
    server = Server(LARGE_LATENCY)
    floors, ours, kept, procs = [], [], [], []
    try:
        for i in range(runs):
            floors.append(run_floor(server, True, LARGE_CONVERSATIONS, LARGE_TURNS, LARGE_CONNECTIONS))
            floor_load = load()
            kept.append(run_floor(server, True, LARGE_CONVERSATIONS, LARGE_TURNS, LARGE_CONNECTIONS,
                                  state=work / f"large-floor-state-{i}"))
            kept_load = load()
            args = [str(suite), "--target", "openai:bench-target", "--judge", "openai:bench-judge", "--concurrency",
                    str(LARGE_CONVERSATIONS), "--max-connections", str(LARGE_CONNECTIONS), "--quiet"]
            ours.append(run_convoeval(
                [*args, "--cache-dir", str(work / f"large-cache-{i}"), "--store", str(work / f"large-state-{i}"),
                 "-o", str(work / f"w-large-{i}.jsonl")], work, server))
            ours_load = load()
            procs.append(run_convoeval(
                [*args, "--processes", str(LARGE_PROCESSES), "--cache-dir", str(work / f"large-p-cache-{i}"),
                 "--store", str(work / f"large-p-state-{i}"), "-o", str(work / f"w-large-p-{i}.jsonl")], work, server))
            for name, m, at in (("floor", floors[-1], floor_load), ("+ state", kept[-1], kept_load),
                                 ("convoeval", ours[-1], ours_load), (f"{LARGE_PROCESSES} procs", procs[-1], load())):
                print(f"  run {i + 1} {name:>9}: wall {m.wall_s:.2f} s ({m.split}), CPU {m.cpu_s:.2f} s "
                      f"(start-up {m.start_cpu_s:.2f} s, tear-down {m.end_cpu_s:.2f} s), {m.cpu_per_call_ms:.3f} ms CPU per call, "
                      f"{m.rss_mb:.0f} MB, {m.calls} calls, {m.in_flight} in flight at most; "
                      f"server CPU {m.server_cpu_s:.2f} s; {at}")
    finally:
        server.stop()
    f, k, o, p = median(floors), median(kept), median(ours), median(procs)
    cpu_ratio, wall_ratio = o.cpu_per_call_ms / f.cpu_per_call_ms, o.wall_s / f.wall_s
    p_cpu_ratio, p_wall_ratio = p.cpu_per_call_ms / f.cpu_per_call_ms, p.wall_s / f.wall_s
    print(f"W-large medians of {runs}: floor {f.wall_s:.2f} s, {f.cpu_per_call_ms:.3f} ms CPU per call, "
          f"{f.rss_mb:.0f} MB, {f.in_flight} in flight; floor with state {k.wall_s:.2f} s, "
          f"{k.cpu_per_call_ms:.3f} ms CPU per call ({k.cpu_per_call_ms / f.cpu_per_call_ms:.2f}x); "
          f"convoeval {o.wall_s:.2f} s ({wall_ratio:.3f}x), "
          f"{o.cpu_per_call_ms:.3f} ms CPU per call ({cpu_ratio:.2f}x), {o.rss_mb:.0f} MB, {o.in_flight} in flight; "
          f"--processes {LARGE_PROCESSES} {p.wall_s:.2f} s ({p_wall_ratio:.3f}x), {p.cpu_per_call_ms:.3f} ms CPU per "
          f"call of all its processes ({p_cpu_ratio:.2f}x), {p.rss_mb:.0f} MB, {p.in_flight} in flight")
    ok = o.calls == calls and o.in_flight <= LARGE_CONNECTIONS and cpu_ratio <= 1.5 and wall_ratio <= 1.15
    p_ok = p.calls == calls and p.in_flight <= LARGE_CONNECTIONS and p_cpu_ratio <= 1.5 and p_wall_ratio <= 1.15
    return [
        ("floor: W-large, 20,000 calls", f, f"{f.cpu_per_call_ms:.3f} ms/call", "-"),
        ("floor with state: W-large", k, f"{k.cpu_per_call_ms / f.cpu_per_call_ms:.2f}x CPU/call", "-"),
        ("W-large: 2000 conv x 5 + judge", o, f"{wall_ratio:.3f}x wall", "PASS" if ok else "FAIL"),
        ("  W-large CPU per call", o, f"{cpu_ratio:.2f}x floor", "PASS" if cpu_ratio <= 1.5 else "FAIL"),
        (f"W-large --processes {LARGE_PROCESSES}", p, f"{p_wall_ratio:.3f}x wall", "PASS" if p_ok else "FAIL"),
        (f"  --processes {LARGE_PROCESSES} CPU per call", p, f"{p_cpu_ratio:.2f}x floor",
         "PASS" if p_cpu_ratio <= 1.5 else "FAIL"),
    ]


def w_rows(work: Path, runs: int) -> list[tuple[str, Measure, str, str]]:
    """W, its generation-only half and its cached re-run against their floors; the rows of the medians."""
    rows: list[tuple[str, Measure, str, str]] = []
    server = Server(W_LATENCY)
    try:
        suite, generation = write_w(work), write_w(work, judged=False, name="g")
        fresh, cached, floor, plain, plain_floor, kept = [], [], [], [], [], []
        for i in range(runs):
            cache_dir = work / f"cache-{i}"
            common = [str(suite), "--target", "openai:bench-target", "--judge", "openai:bench-judge",
                      "--concurrency", str(W_CONVERSATIONS), "--max-connections", str(W_CONNECTIONS), "--quiet",
                      "--cache-dir", str(cache_dir), "-o", str(work / f"w-{i}.jsonl")]
            floor.append(run_floor(server, judge=True))
            kept.append(run_floor(server, judge=True, state=work / f"floor-state-{i}"))
            fresh.append(run_convoeval(common, work, server))
            cached.append(run_convoeval(common, work, server))
            plain_floor.append(run_floor(server, judge=False))
            plain.append(run_convoeval([str(generation), "--target", "openai:bench-target", "--concurrency",
                                        str(W_CONVERSATIONS), "--max-connections", str(W_CONNECTIONS), "--quiet",
                                        "--no-cache", "-o", str(work / f"g-{i}.jsonl")], work, server))
            print(f"  run {i + 1}: W {fresh[-1].wall_s:.2f} s ({fresh[-1].calls} calls, "
                  f"{fresh[-1].in_flight} in flight at most), floor {floor[-1].wall_s:.2f} s, "
                  f"floor with state {kept[-1].wall_s:.2f} s; "
                  f"generation-only {plain[-1].wall_s:.2f} s, floor {plain_floor[-1].wall_s:.2f} s; "
                  f"cached re-run {cached[-1].wall_s:.2f} s, {cached[-1].calls} calls; {load()}")
            print(f"         start + requests + end: W {fresh[-1].split}, floor {floor[-1].split}, "
                  f"floor with state {kept[-1].split}; "
                  f"generation-only {plain[-1].split}, floor {plain_floor[-1].split}")
            print(f"         CPU per call: W {fresh[-1].cpu_per_call_ms:.3f} ms, floor {floor[-1].cpu_per_call_ms:.3f} ms")
        w, c, f, g, gf, k = (median(m) for m in (fresh, cached, floor, plain, plain_floor, kept))
        mean_us, worst_us = cache_lookup_us(work / "cache-0" / "cache.sqlite")
        print(f"cache lookup on the loop thread: mean {mean_us:.0f} us, worst {worst_us:.0f} us "
              f"({W_CONVERSATIONS * W_TURNS * 2} keys)")
        bounded = max(m.in_flight for m in fresh + plain) <= W_CONNECTIONS
        rows.append(("floor: asyncio + aiohttp, 1000 calls", f, f"{f.wall_s / W_IDEAL_S:.2f}x of 5 s", "-"))
        rows.append(("floor with state: W", k, f"{k.wall_s / f.wall_s:.3f}x floor", "-"))
        rows.append(("W: 100 conv x 5 turns + judge", w, f"{w.wall_s / f.wall_s:.3f}x floor",
                     "PASS" if w.wall_s <= 1.05 * f.wall_s and w.calls == 1000 and bounded else "FAIL"))
        rows.append(("floor: 500 calls, no judge", gf, "-", "-"))
        rows.append(("generation only: 500 calls", g, f"{g.wall_s / gf.wall_s:.3f}x floor",
                     "PASS" if g.wall_s <= 1.1 * gf.wall_s and g.calls == 500 and bounded else "FAIL"))
        rows.append(("W cached re-run", c, "-", "PASS" if c.wall_s < 2 and c.calls == 0 else "FAIL"))
    finally:
        server.stop()
    return rows


def memory_rows(work: Path, files: int) -> list[tuple[str, Measure, str, str]]:
    """The 10k x 10 run against a 0-latency server: peak RSS."""
    server = Server(0.0)
    try:
        paths = write_memory_suites(work, files)
        print(f"memory run: {MEMORY_CONVERSATIONS} conversations x {MEMORY_TURNS} turns in "
              f"{len(paths)} file(s) (loading the suites takes most of the time)...")
        m = run_convoeval([*map(str, paths), "--target", "openai:bench-target", "--concurrency",
                           str(MEMORY_CONCURRENCY), "--quiet", "--no-cache", "-o", str(work / "memory.jsonl")],
                          work, server)
    finally:
        server.stop()
    return [(f"10k conv x 10 turns, c={MEMORY_CONCURRENCY}", m, "-",
             "PASS" if m.rss_mb < 300 and m.calls == MEMORY_CONVERSATIONS * MEMORY_TURNS else "FAIL")]


PARTS = ("startup", "w", "w-large", "memory")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs of W, W-large and W's cached re-run (median)")
    parser.add_argument("--only", action="append", choices=PARTS, help="run only this part (repeatable)")
    parser.add_argument("--skip-memory", action="store_true", help="skip the 10k x 10 memory run")
    parser.add_argument("--memory-files", type=int, default=MEMORY_FILES,
                        help="suite files the 10k conversations are spread over (1 = one big file)")
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args()
    parts = set(args.only or PARTS) - ({"memory"} if args.skip_memory else set())

    work = Path(tempfile.mkdtemp(prefix="convoeval-bench-"))
    rows: list[tuple[str, Measure, str, str]] = []
    print(f"work directory: {work}; {load()}")
    warm_bytecode()
    if "startup" in parts:
        rows += startup(work)
    if "w" in parts:
        rows += w_rows(work, args.runs)
    if "w-large" in parts:
        rows += w_large(work, args.runs)
    if "memory" in parts:
        rows += memory_rows(work, args.memory_files)

    print()
    header = f"{'workload':<38} {'wall s':>8} {'ratio':>14} {'CPU s':>7} {'peak RSS MB':>12} {'calls':>7}  goal"
    print(header)
    print("-" * len(header))
    for name, m, ratio, verdict in rows:
        print(f"{name:<38} {m.wall_s:>8.2f} {ratio:>14} {m.cpu_s:>7.2f} {m.rss_mb:>12.0f} {m.calls:>7}  {verdict}")
    print(f"\ngoals: at most {W_CONNECTIONS} requests in flight in W, {LARGE_CONNECTIONS} in W-large; W within "
          "1.05x of the floor, generation-only within 1.1x; W-large CPU per model call within 1.5x of the floor's, "
          f"wall within 1.15x; a one-test run within {STARTUP_GOAL}x of importing its libraries; cached re-run "
          f"< 2 s with 0 calls; 10k x 10 under 300 MB; {load()} at the end")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
