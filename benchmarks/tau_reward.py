"""`tau-reward` on tau-bench's own airline database and recorded trajectories.

    python benchmarks/tau_reward.py --tau-bench PATH [--tasks 50]

PATH is a checkout of github.com/sierra-research/tau-bench (MIT). From it the benchmark takes
the airline database (tau_bench/envs/airline/data: flights, reservations, users; 3.3 MB as
compact JSON), the airline tool classes (wrapped as convoeval tool functions
`name(state, /, **arguments)`, tau_bench's package __init__ files are not run) and
historical_trajectories/gpt-4o-airline.json (50 tasks x 4 trials, each with tau-bench's reward).

It imports the trajectories with `convoeval import tau-bench --recorded`, grades them with
`convoeval grade` (concurrency 1, so each grading's time is its own) and prints the time of
each `tau-reward` grading (the replay of the agent's calls and of the goal actions, and the
comparison), how many trials get tau-bench's recorded reward, how many trial verdicts are pass
exactly when that reward is 1, and the trials that differ. Run it with PYTHONPATH set
to the convoeval sources to measure (for example those of an older commit).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TOOLS = '''\
"""tau-bench's airline tools (from {root}) as convoeval tool functions."""

import importlib.util
import sys
import types
from pathlib import Path

ROOT = Path({root!r})
for name in ("tau_bench", "tau_bench.envs", "tau_bench.envs.airline"):  # their __init__ files import agents, models
    package = types.ModuleType(name)
    package.__path__ = [str(ROOT.joinpath(*name.split(".")))]
    sys.modules.setdefault(name, package)
sys.path.insert(0, str(ROOT))
from tau_bench.envs.airline.tools import ALL_TOOLS  # noqa: E402


def _tool(cls):
    def call(state, /, **arguments):
        return cls.invoke(data=state, **arguments)

    call.__name__ = cls.get_info()["function"]["name"]
    return call


for _cls in ALL_TOOLS:
    _fn = _tool(_cls)
    globals()[_fn.__name__] = _fn
'''


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tau-bench", type=Path, required=True, help="a checkout of sierra-research/tau-bench")
    parser.add_argument("--tasks", type=int, default=50, help="how many tasks (4 trials each)")
    args = parser.parse_args()
    root = args.tau_bench.resolve()
    data = root / "tau_bench" / "envs" / "airline" / "data"
    records = json.loads((root / "historical_trajectories" / "gpt-4o-airline.json").read_text())
    records = [r for r in records if r["task_id"] < args.tasks]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        backend = {
            name: json.loads((data / f"{name}.json").read_text()) for name in ("flights", "reservations", "users")
        }
        (work / "backend.json").write_text(json.dumps(backend, separators=(",", ":")))
        (work / "tools.py").write_text(TOOLS.format(root=str(root)))
        (work / "runs.json").write_text(json.dumps(records))
        python = [sys.executable, "-m", "convoeval"]
        subprocess.run(
            [*python, "import", "tau-bench", "runs.json", "--recorded", "-o", "s.eval.yaml"], cwd=work, check=True
        )
        started = time.perf_counter()
        subprocess.run(
            [*python, "grade", "s.eval.yaml", "-o", "r.jsonl", "--quiet", "--store", "state"],
            cwd=work,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "CONVOEVAL_CONCURRENCY": "1"},
        )
        wall = time.perf_counter() - started
        rows = [json.loads(line) for line in (work / "r.jsonl").read_text().splitlines()]
    times, agree, graded, differ, verdicts = [], 0, 0, [], 0
    for row in rows:
        for position, trial in enumerate(row.get("trials") or [row]):
            for entry in trial["scores"]:
                for grader in entry.get("graders") or []:
                    if grader["type"] != "tau-reward" or grader.get("details") is None:
                        continue
                    graded += 1
                    times.append(grader["duration_ms"] / 1000)
                    meta = row["metadata"]
                    if "recorded_rewards" in meta:  # one test per task, its trials in the file's order
                        expected = meta["recorded_rewards"][position]
                    else:  # older importers: one test per trajectory
                        expected = meta.get("recorded_reward")
                    agree += grader["details"]["reward"] == expected
                    verdicts += trial["verdict"] == ("pass" if expected == 1 else "fail")
                    if grader["details"]["reward"] != expected:
                        differ.append(f"{row['test_id']} trial {position}: {grader['details']['reward']} vs {expected}")
    print(f"{len(records)} trajectories, {graded} tau-reward gradings, `convoeval grade` wall {wall:.1f} s")
    if times:
        times.sort()
        print(f"slowest 5: {', '.join(f'{t:.3f}' for t in times[-5:])} s (the first grading also reads the database)")
        print(
            f"per trajectory: median {statistics.median(times):.3f} s, "
            f"p90 {times[int(0.9 * (len(times) - 1))]:.3f} s, max {times[-1]:.3f} s"
        )
    print(f"reward equal to tau-bench's recorded reward: {agree} of {graded}")
    print(f"trial verdict pass exactly when tau-bench's reward is 1: {verdicts} of {graded}")
    for line in differ:
        print(f"  differs: {line} (convoeval vs tau-bench)")


if __name__ == "__main__":
    main()
