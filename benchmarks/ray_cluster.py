"""The Ray backend on a real cluster: a head and a second node, each its own raylet, started
with `ray start` on this machine (tests/ray_nodes.py), and `convoeval.run(ray_address=...)`
joining it.

Two workloads run with the local backend, then twice on the cluster (the first run starts the
cluster's workers; the second finds them running):

- W (benchmarks/run.py): 100 conversations x 5 turns, a rubric judge call per turn (1000 calls),
  against the loopback fake server (benchmarks/fake_server.py) answering after 0.1 s, at most
  20 requests in flight (`--max-connections 20`, target and judge on the one endpoint);
- a workspace suite: examples/repair-loop (a Python agent edits files in a fresh workspace per
  trial, `verify` runs in the bubblewrap sandbox, a hint, up to 3 turns) as 40 tests.

For each it prints whether the results (verdict, score, each score's verdict) equal the local
run's, the most requests in flight the server saw, the trials each node ran (the run's note)
and the overhead per conversation: (cluster wall - local wall) / conversations.

    python benchmarks/ray_cluster.py                  # nodes of 10 CPUs each: 20 trials at once
    python benchmarks/ray_cluster.py --conversations 40 --cpus 4
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/ray_nodes.py

import ray  # noqa: E402

import convoeval  # noqa: E402
from run import W_CONNECTIONS, W_CONVERSATIONS, W_LATENCY, W_TURNS, Server, write_w  # noqa: E402 - benchmarks/run.py
from tests.ray_nodes import RAY_ENV, RayNodes  # noqa: E402

WORKSPACE_TESTS = 40


def outcomes(report: convoeval.RunReport) -> list[tuple[str, str, float | None, list[str | None]]]:
    return sorted((r.test_id, r.verdict, r.score, [s.verdict for s in r.scores]) for r in report.results)


def placement(report: convoeval.RunReport) -> str:
    return next((n.removeprefix("ray: ") for n in report.notes if n.startswith("ray: ")), "no trial on Ray")


def repair_suite(work: Path, tests: int) -> Path:
    """examples/repair-loop with its one test repeated `tests` times; every fifth gets no hint and fails."""
    folder = work / "repair"
    shutil.copytree(HERE.parent / "examples" / "repair-loop", folder, ignore=shutil.ignore_patterns(".convoeval"))
    head, test = (folder / "repair.eval.yaml").read_text().split("tests:\n")
    unhinted = test.replace('      - "Hint: add() must return the sum of its arguments."\n', "")
    unhinted = unhinted.replace("    hints:\n", "    hints: []\n")
    body = "".join((unhinted if i % 5 == 4 else test).replace("- id: repair-calc", f"- id: repair-{i:03d}")
                   for i in range(tests))
    path = folder / "repair.eval.yaml"
    path.write_text(head + "tests:\n" + body)
    return path


def compare(name: str, conversations: int, run, server: Server | None, address: str) -> None:
    """Run `run(backend, address)` locally, then twice on the cluster; print what was measured."""
    rows, reports = [], {}
    for label, backend, where in (("local", "local", None), ("cluster, cold", "ray", address),
                                  ("cluster, warm", "ray", address)):
        if server is not None:
            server.reset()
        started = time.perf_counter()
        reports[label] = run(backend, where)
        wall = time.perf_counter() - started
        peak = int(server.stats()["max_in_flight"]) if server is not None else None
        rows.append((label, wall, peak, placement(reports[label]) if backend == "ray" else "this process"))
    local_wall = rows[0][1]
    print(f"\n{name}")
    for label, wall, peak, where in rows:
        extra = "" if label == "local" else f", overhead {(wall - local_wall) / conversations * 1000:+.0f} ms/conversation"
        flight = "" if peak is None else f", {peak} in flight at most"
        print(f"  {label:<14} {wall:6.2f} s{flight}{extra}; {where}")
    same = all(outcomes(reports[k]) == outcomes(reports["local"]) for k in reports)
    verdicts = sorted({r.verdict for r in reports["local"].results})
    print(f"  results identical to the local run: {'yes' if same else 'NO'} "
          f"({len(reports['local'].results)} tests, verdicts {', '.join(verdicts)})")
    if not same:
        sys.exit(f"{name}: the cluster's results differ from the local run's")
    if server is not None and max(r[2] or 0 for r in rows) > W_CONNECTIONS:
        sys.exit(f"{name}: more than {W_CONNECTIONS} requests in flight")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cpus", type=int, default=10, help="logical CPUs of each node (trials at once per node)")
    parser.add_argument("--workspace-tests", type=int, default=WORKSPACE_TESTS)
    args = parser.parse_args()
    os.environ.update(RAY_ENV)
    os.environ.pop("RAY_ADDRESS", None)
    work = Path(tempfile.mkdtemp(prefix="convoeval-ray-cluster-"))
    server = Server(W_LATENCY)
    nodes = None
    try:
        (work / "targets.yaml").write_text(
            f"targets:\n  - {{name: bot, provider: openai, model: bench-target, base_url: '{server.url}/v1'}}\n"
            f"  - {{name: judge, provider: openai, model: bench-judge, base_url: '{server.url}/v1'}}\n"
        )
        w = write_w(work)
        conversations = W_CONVERSATIONS
        started = time.perf_counter()
        nodes = RayNodes(cpus=args.cpus)
        print(f"ray start: a head and a second node, {args.cpus} CPUs each, in {time.perf_counter() - started:.1f} s "
              f"({os.cpu_count()} cores on this machine)")
        ray.init(address=nodes.address, logging_level="ERROR", log_to_driver=False)

        def run_w(backend: str, address: str | None) -> convoeval.RunReport:
            return convoeval.run(w, target="bot", judge="judge", backend=backend, ray_address=address,
                                 max_connections=W_CONNECTIONS, concurrency=conversations, cache=False, store=False)

        compare(f"W: {conversations} conversations x {W_TURNS} turns + a judge call each turn, {W_LATENCY} s "
                f"latency, --max-connections {W_CONNECTIONS}", conversations, run_w, server, nodes.address)

        repair = repair_suite(work, args.workspace_tests)

        def run_repair(backend: str, address: str | None) -> convoeval.RunReport:
            return convoeval.run(repair, judge="scripted", backend=backend, ray_address=address,
                                 concurrency=2 * args.cpus, cache=False, store=False)

        compare(f"workspace suite: examples/repair-loop x {args.workspace_tests} (Python agent, verify in the "
                "sandbox, a hint, up to 3 turns)", args.workspace_tests, run_repair, None, nodes.address)
    finally:
        server.stop()
        ray.shutdown()  # the driver leaves before the cluster stops
        if nodes is not None:
            nodes.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
