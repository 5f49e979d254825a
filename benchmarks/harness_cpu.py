"""CPU per model call of convoeval's own machinery, without HTTP.

    python benchmarks/harness_cpu.py                    # 2,000 conversations, medians of 3
    python benchmarks/harness_cpu.py --conversations 500 --runs 5

W-large's suite (benchmarks/run.py: conversations x 5 turns, each turn graded by one rubric
judge call) run in this process by `convoeval.run`, against a target and a judge that are
Python objects answering at once after yielding to the event loop once (so that the
conversations interleave as they do while waiting on a server). Everything else is a real run:
loading and planning the tests, the conversation loop, the rubric's prompt and answer, grades,
results, the run store and the `-o` JSONL file (no response cache: a cache on Python targets
would key on their objects). What it prints is the CPU of the whole process (every thread)
from the run's start to its end, minus the CPU of loading the suite alone (measured in turn),
divided by the model calls: what convoeval spends per call besides the HTTP client, which
`benchmarks/run.py` measures whole. Each figure is printed with the load average.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (benchmarks/run.py: W's suites)

import convoeval  # noqa: E402
from convoeval.results import Usage  # noqa: E402
from convoeval.spec import load_suites  # noqa: E402
from convoeval.targets import ChatReply, ChatRequest  # noqa: E402

VERDICT = '{"c1": {"reasoning": "The reply answers the question.", "satisfied": true}}'


class Instant:
    """A target (or judge) that answers once the event loop has run the others' callbacks."""

    provider_name = "openai"

    def __init__(self, name: str, judge: bool):
        self.name, self.judge = name, judge

    async def chat(self, request: ChatRequest) -> ChatReply:
        await asyncio.sleep(0)
        if self.judge:
            return ChatReply(text=VERDICT, usage=Usage(input_tokens=200, output_tokens=20))
        question = str(request.messages[-1]["content"])
        return ChatReply(text=f"Reply to: {question[:40]}", usage=Usage(input_tokens=50, output_tokens=10))

    async def aclose(self) -> None:
        pass


def one(suite: Path, work: Path, store: bool) -> float:
    """CPU seconds of one run of `suite` (loading included)."""
    options: dict[str, object] = {"cache": False, "output": str(work / "out.jsonl")}
    options["store"] = str(work / "state") if store else False
    started = time.process_time()
    report = convoeval.run(
        [str(suite)],
        target=Instant("openai:bench-target", judge=False),
        judge=Instant("openai:bench-judge", judge=True),
        concurrency=200,
        **options,
    )
    spent = time.process_time() - started
    assert all(r.verdict == "pass" for r in report.results), "every conversation passes"
    shutil.rmtree(work / "state", ignore_errors=True)
    return spent


def loading(suite: Path) -> float:
    started = time.process_time()
    load_suites([str(suite)])
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=bench.LARGE_CONVERSATIONS)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="convoeval-harness-"))
    try:
        suite = bench.write_w(work, name="harness", conversations=args.conversations, turns=bench.LARGE_TURNS)
        calls = args.conversations * bench.LARGE_TURNS * 2
        figures: dict[str, list[float]] = {"with the store": [], "without the store": []}
        loads: list[float] = []
        for _ in range(args.runs):
            loads.append(loading(suite))
            figures["with the store"].append(one(suite, work, store=True))
            figures["without the store"].append(one(suite, work, store=False))
        load_s = statistics.median(loads)
        print(
            f"{args.conversations} conversations x {bench.LARGE_TURNS} turns + a judge call per turn "
            f"({calls} calls), medians of {args.runs}; loading the suite {load_s:.2f} s of CPU"
        )
        for name, spent in figures.items():
            per_call = (statistics.median(spent) - load_s) / calls * 1e6
            print(f"  {name:>17}: {per_call:.0f} us of CPU per model call")
        print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
