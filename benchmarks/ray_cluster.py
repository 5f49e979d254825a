"""The Ray backend on a real cluster: a head and a second node, each its own raylet, started
with `ray start` on this machine, and `convoeval run --ray-address` joining it.

The same suite (N conversations x 3 turns, deterministic graders, a judged rubric) runs against
the loopback fake server (benchmarks/fake_server.py) with the local backend and on the cluster;
the results must be identical, requests in flight per endpoint must stay within
`--max-connections` across both nodes, and the script prints the overhead per conversation and
how many trials each node ran (from the Ray state of the finished tasks).

    python benchmarks/ray_cluster.py --conversations 60

Ray 2.60 asks a joining node for an auth token unless `RAY_AUTH_MODE=disabled` (set here for
both nodes); the cluster's files go to a temporary folder, and `ray stop` ends it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import ray

import convoeval

from run import Server  # benchmarks/run.py

PORT = 6391


def ray_cli(*args: str, env: dict[str, str]) -> None:
    ray = Path(sys.executable).with_name("ray")
    done = subprocess.run([str(ray), *args], env=env, capture_output=True, text=True, timeout=180)
    if done.returncode != 0:
        sys.exit(f"ray {' '.join(args)} failed:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")


def outcomes(report: convoeval.RunReport) -> list[tuple[str, str, float | None]]:
    return sorted((r.test_id, r.verdict, r.score) for r in report.results)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=60)
    parser.add_argument("--max-connections", type=int, default=4)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="convoeval-ray-cluster-"))
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0", "HOME": str(work)}
    os.environ.update(RAY_AUTH_MODE="disabled", RAY_USAGE_STATS_ENABLED="0")
    server = Server(0.02)
    try:
        (work / "targets.yaml").write_text(
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.url}/v1'}}\n"
        )
        turns = "".join(
            f"      - {{input: 'q{t}', assertions: [{{type: contains, value: Reply}}, Answers politely]}}\n"
            for t in range(3)
        )
        tests = "".join(f"  - id: c{i}\n    mode: conversation\n    turns:\n{turns}" for i in range(args.conversations))
        suite = work / "s.eval.yaml"
        suite.write_text("tests:\n" + tests)
        started = time.perf_counter()
        common = ["--num-cpus", "1", "--disable-usage-stats", "--temp-dir", str(work / "ray")]
        ray_cli("start", "--head", "--port", str(PORT), "--include-dashboard=false", *common, env=env)
        ray_cli("start", "--address", f"127.0.0.1:{PORT}", *common, env=env)
        print(f"ray start, head and a second node (1 CPU each): {time.perf_counter() - started:.1f} s")
        timings, reports = {}, {}
        for backend, address in (("local", None), ("ray", f"127.0.0.1:{PORT}")):
            server.reset()
            started = time.perf_counter()
            reports[backend] = convoeval.run(
                suite,
                target="bot",
                judge="bot",
                backend=backend,
                ray_address=address,
                max_connections=args.max_connections,
                concurrency=8,
                cache=False,
                store=False,
            )
            timings[backend] = time.perf_counter() - started
            peak = int(server.stats()["max_in_flight"])
            print(f"{backend}: {timings[backend]:.2f} s, requests in flight at most {peak}")
            assert peak <= args.max_connections, (backend, peak)
        assert outcomes(reports["ray"]) == outcomes(reports["local"]), "the cluster's results differ"
        per = (timings["ray"] - timings["local"]) / args.conversations * 1000
        print(
            f"{args.conversations} conversations x 3 turns (+ a judge call each turn): identical results; "
            f"overhead {per:.1f} ms per conversation on the two-node cluster"
        )
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        print(f"nodes alive in the cluster: {len(nodes)}")
    finally:
        server.stop()
        ray.shutdown()  # the driver leaves before the cluster stops
        ray_cli("stop", "--force", env=env)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
