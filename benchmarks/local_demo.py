"""Speed of the embedded model (SmolLM2-135M on llama.cpp): raw tokens/s, the demo, judge quality.

    python benchmarks/local_demo.py                    # all three parts, 3 demo runs
    python benchmarks/local_demo.py --part tps         # prompt / generation tokens/s, 1 and 2 threads
    python benchmarks/local_demo.py --part demo -n 5   # `convoeval run examples/demo/travel-demo.eval.yaml`
    python benchmarks/local_demo.py --part judge       # labelled criteria: does the judge get them right?

Every run is a whole process (`convoeval run ... --no-cache`, fresh state folder), timed with
wall clock and CPU seconds (user + system, from wait4). Other work on the machine slows the
model down, so the 1-minute load average is printed next to each figure; compare medians.
`--threads N` runs the demo and judge parts with a `local` target of N threads (default: the
provider's own choice). `--python PATH` measures another installation (e.g. an older checkout).
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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo" / "travel-demo.eval.yaml"  # what `make demo` runs
JUDGE_SUITE = ROOT / "benchmarks" / "local_judge" / "judge.eval.yaml"

TPS_SCRIPT = r"""
import json, sys, time, llama_cpp
from convoeval.targets._local import bundled_model_path
threads = int(sys.argv[1])
llm = llama_cpp.Llama(model_path=str(bundled_model_path()), n_ctx=2048, n_threads=threads,
                      n_threads_batch=threads, verbose=False)
prompt = llm.tokenize(("Kyoto has temples, gardens and old wooden streets. " * 80).encode())[:512]
best_prompt = best_gen = 0.0
for _ in range(3):
    llm.reset()
    started = time.perf_counter(); llm.eval(prompt); elapsed = time.perf_counter() - started
    best_prompt = max(best_prompt, len(prompt) / elapsed)
    started = time.perf_counter()
    for token in prompt[:64]:
        llm.eval([token])
    best_gen = max(best_gen, 64 / (time.perf_counter() - started))
print(json.dumps({"prompt": best_prompt, "generation": best_gen}))
"""


def load() -> float:
    return os.getloadavg()[0]


def run_cli(python: str, args: list[str]) -> tuple[float, float, subprocess.CompletedProcess[str]]:
    """`convoeval ARGS` as a whole process: wall seconds, CPU seconds, the result."""
    before = os.times()
    started = time.perf_counter()
    done = subprocess.run([python, "-m", "convoeval", *args], capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return wall, cpu, done


def targets_file(tmp: Path, threads: int | None) -> list[str]:
    """`--targets FILE` redefining `local` with `threads`, or nothing for the default."""
    if threads is None:
        return []
    path = tmp / "targets.yaml"
    path.write_text(f"targets:\n  - name: local\n    provider: local\n    threads: {threads}\n")
    return ["--targets", str(path)]


def part_tps(python: str) -> None:
    print("tokens/s of SmolLM2-135M (best of 3; prompt: one 512-token batch, generation: 64 single tokens)")
    for threads in (1, 2):
        loaded = load()
        done = subprocess.run([python, "-c", TPS_SCRIPT, str(threads)], capture_output=True, text=True, check=True)
        rates = json.loads(done.stdout)
        print(f"  threads={threads}: prompt {rates['prompt']:.0f} tok/s, generation {rates['generation']:.1f} tok/s"
              f"  (load {loaded:.1f})")


def part_demo(python: str, runs: int, threads: int | None) -> None:
    print(f"demo: convoeval run {DEMO.relative_to(ROOT)} --no-cache ({runs} runs)")
    walls, cpus = [], []
    for k in range(runs):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "r.jsonl"
            loaded = load()
            wall, cpu, done = run_cli(python, [
                "run", str(DEMO), "--no-cache", "--quiet", "--store", tmp, "-o", str(out),
                *targets_file(Path(tmp), threads)])
            if done.returncode not in (0, 1):
                sys.exit(f"demo failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
            results = [json.loads(line) for line in out.read_text().splitlines()]
            [result] = [r for r in results if r["test_id"] == "travel-planning"]  # the conversation's criteria
        graders = [g for s in result["scores"] for g in s["graders"]]
        errors = sum(g["verdict"] == "error" for g in graders)
        verdicts = " ".join(
            "".join("+" if a["passed"] else "-" for a in g["assertions"]) or g["verdict"] for g in graders)
        tokens = result["token_usage"]["output_tokens"], result["judge_token_usage"]["output_tokens"]
        print(f"  run {k + 1}: {wall:5.1f} s wall, {cpu:5.1f} s CPU, load {loaded:.1f}; score {result['score']:.2f}, "
              f"criteria {verdicts}, {errors} grader errors; generated {tokens[0]} target + {tokens[1]} judge tokens")
        walls.append(wall)
        cpus.append(cpu)
    print(f"  median: {statistics.median(walls):.1f} s wall, {statistics.median(cpus):.1f} s CPU")


def part_judge(python: str, threads: int | None) -> None:
    print(f"judge quality: {JUDGE_SUITE.relative_to(ROOT)} (labelled criteria, canned replies)")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "r.jsonl"
        targets = Path(tmp) / "targets.yaml"
        shutil.copy(JUDGE_SUITE.parent / "targets.yaml", targets)
        if threads is not None:
            targets.write_text(targets.read_text() + f"  - name: local\n    provider: local\n    threads: {threads}\n")
        loaded = load()
        wall, cpu, done = run_cli(python, ["run", str(JUDGE_SUITE), "--no-cache", "--quiet", "--store", tmp,
                                           "-o", str(out), "--targets", str(targets), "--judge", "local"])
        if done.returncode not in (0, 1):
            sys.exit(f"judge run failed (exit {done.returncode}):\n{done.stdout}\n{done.stderr}")
        results = [json.loads(line) for line in out.read_text().splitlines()]
    right = total = errors = 0
    for result in results:
        labels = result["metadata"]["labels"]
        [grader] = [g for s in result["scores"] for g in s["graders"]]
        if grader["verdict"] == "error":
            errors += len(labels)
            total += len(labels)
            continue
        for label, outcome in zip(labels, grader["assertions"]):
            right += outcome["passed"] == label
            total += 1
    print(f"  {right}/{total} criteria right, {errors} undecided (errors); "
          f"{wall:.1f} s wall, {cpu:.1f} s CPU, load {loaded:.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["tps", "demo", "judge", "all"], default="all")
    parser.add_argument("-n", "--runs", type=int, default=3, help="demo runs (default 3)")
    parser.add_argument("--threads", type=int, default=None, help="threads of the local model (default: its own)")
    parser.add_argument("--python", default=sys.executable, help="the Python whose convoeval is measured")
    args = parser.parse_args()
    if args.part in ("tps", "all"):
        part_tps(args.python)
    if args.part in ("demo", "all"):
        part_demo(args.python, args.runs, args.threads)
    if args.part in ("judge", "all"):
        part_judge(args.python, args.threads)


if __name__ == "__main__":
    main()
