"""The Ray backend's overhead per conversation against the local (asyncio) backend.

Both run the same suite (N conversations x 3 turns, deterministic graders) against the loopback
fake server (benchmarks/fake_server.py, no latency) in one process each, on a local Ray with 2
CPUs started once before timing (Ray's own start-up, about 2-3 s, is reported apart).

    python benchmarks/ray_overhead.py --conversations 100
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import ray

import convoeval

from run import Server  # benchmarks/run.py


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=100)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="convoeval-ray-bench-"))
    server = Server(0.0)
    try:
        (work / "targets.yaml").write_text(
            f"targets:\n  - {{name: bot, provider: openai, model: m, base_url: '{server.url}/v1'}}\n"
        )
        turns = "".join(f"      - {{input: 'q{t}', assertions: [{{type: contains, value: Reply}}]}}\n" for t in range(3))
        tests = "".join(f"  - id: c{i}\n    mode: conversation\n    turns:\n{turns}" for i in range(args.conversations))
        suite = work / "s.eval.yaml"
        suite.write_text("tests:\n" + tests)
        started = time.perf_counter()
        ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
        print(f"ray.init (local, 2 CPUs): {time.perf_counter() - started:.2f} s")
        timings = {}
        for backend in ("local", "ray"):
            started = time.perf_counter()
            report = convoeval.run(suite, target="bot", backend=backend, cache=False, store=False, concurrency=8)
            timings[backend] = time.perf_counter() - started
            assert all(r.verdict == "pass" for r in report.results), backend
        per = (timings["ray"] - timings["local"]) / args.conversations * 1000
        print(f"{args.conversations} conversations x 3 turns: local {timings['local']:.2f} s, "
              f"ray {timings['ray']:.2f} s; overhead {per:.1f} ms per conversation")
    finally:
        server.stop()
        ray.shutdown()


if __name__ == "__main__":
    main()
