"""CPU per model call of the state a run keeps: the response cache and the run store.

    python benchmarks/state_cpu.py            # medians of 3, at W-large's pace
    python benchmarks/state_cpu.py --runs 5 --rate 0   # as fast as the loop goes

W-large's calls (benchmarks/run.py: 2,000 conversations x 5 turns, each turn graded by one
rubric judge call: 20,000 calls) replayed in one process against targets that answer at once,
through what a run does around each call for its state: the cache (key, lookup, storing the
reply), the run store (a row per graded turn, a committed row per result), the redaction of
each result and its line in the `-o` JSONL file. The replies, graded turns and results are
those of a real two-conversation run against benchmarks/fake_server.py.

The conversations run 200 at a time, as W-large's do, each call waiting so that they make
`--rate` calls per second in all (W-large's pace on a 2-core machine: 20,000 calls in about
10 s): the writer threads commit as often as in a run (the cache every half second; the store
once for the results that finish together), and what a commit costs depends on what it holds.

The floor is the same loop with neither cache nor store (what the loop itself costs), measured
in the same process, in turn with the others, with the garbage collector tuned as in a run. Each figure is the process's CPU (every thread:
SQLite's writers run on their own) over the loop and closing the files, per model call; the
writer threads' share is printed beside it.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (benchmarks/run.py: the fake server and W's suites)

import convoeval  # noqa: E402
from convoeval._result_files import ResultWriter  # noqa: E402
from convoeval.engine import RunEvents  # noqa: E402
from convoeval.engine._cache import CachedTarget, ResponseCache  # noqa: E402
from convoeval.engine._meter import RunMeter  # noqa: E402
from convoeval.engine._options import RecordedOptions  # noqa: E402
from convoeval.engine._recorder import RunRecorder  # noqa: E402
from convoeval.engine._runner import _Listeners, _run_heap  # noqa: E402
from convoeval.engine._store import RunStore  # noqa: E402
from convoeval.results import EvaluationResult  # noqa: E402
from convoeval.run import GradedTurn, Job  # noqa: E402
from convoeval.spec import load_suites  # noqa: E402
from convoeval.targets import ChatReply, ChatRequest  # noqa: E402

CONVERSATIONS, TURNS = bench.LARGE_CONVERSATIONS, bench.LARGE_TURNS
#: Conversations under way at once, as in W-large (200 calls in flight): results that finish
#: together share the store's commits as in a run.
IN_FLIGHT = bench.LARGE_CONNECTIONS
SECRET = "sk-bench-not-a-secret"


class Recorded(RunEvents):
    """Keeps a real run's graded turns and results."""

    def __init__(self) -> None:
        self.turns: list[GradedTurn] = []
        self.results: list[EvaluationResult] = []

    def turn(self, turn: GradedTurn) -> None:
        self.turns.append(turn)

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        self.results.append(result)


class Instant:
    """A target that answers at once with the reply it is given."""

    name = "openai:bench-target"

    def __init__(self) -> None:
        self.reply: ChatReply | None = None

    async def chat(self, request: ChatRequest) -> ChatReply:
        assert self.reply is not None
        return self.reply

    async def aclose(self) -> None:
        pass


def record(work: Path) -> Recorded:
    """A real two-conversation W run: its graded turns (replies included) and results."""
    small = bench.write_w(work, name="small", conversations=2, turns=TURNS)
    server = bench.Server(0.0)
    os.environ.update(OPENAI_BASE_URL=server.url + "/v1", OPENAI_API_KEY=SECRET)
    events = Recorded()
    try:
        convoeval.run(
            [str(small)],
            target="openai:bench-target",
            judge="openai:bench-judge",
            events=events,
            cache=False,
            store=str(work / "recorded"),
        )
    finally:
        server.stop()
    return events


def judge_request(conversation: int, turn: int) -> ChatRequest:
    """A rubric judge's call as the run makes it (system, the transcript, a schema)."""
    lines = "".join(
        f"[turn {t}] user: Question {t} of conversation {conversation}: what should I pack?\n\n"
        f"[turn {t}] assistant: Reply to: Question {t} of conversation {conversation}\n\n"
        for t in range(1, turn + 1)
    )
    criterion = {
        "type": "object",
        "properties": {"reasoning": {"type": "string"}, "satisfied": {"type": "boolean"}},
        "required": ["reasoning", "satisfied"],
        "additionalProperties": False,
    }
    return ChatRequest(
        messages=[
            {"role": "system", "content": "You are a careful, impartial evaluator. Reply with one JSON object."},
            {
                "role": "user",
                "content": f"Conversation (turns are numbered):\n{lines}Criteria:\n- c1: The reply "
                f"answers question {turn}\n\nReply with one JSON object.",
            },
        ],
        response_schema={
            "type": "object",
            "properties": {"c1": criterion},
            "required": ["c1"],
            "additionalProperties": False,
        },
        schema_name="rubric",
        temperature=0.0,
        purpose="judge",
    )


def thread_cpu(native_id: int) -> float:
    fields = Path(f"/proc/self/task/{native_id}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def one(work: Path, recorded: Recorded, cache_on: bool, store_on: bool, rate: float) -> tuple[float, float, float]:
    """CPU microseconds per call of the whole loop, of the writer threads alone (until closing)
    and of the main thread alone (the loop, without closing)."""
    folder = Path(tempfile.mkdtemp(dir=work))
    suite = load_suites([str(bench.write_w(folder, name="big", conversations=CONVERSATIONS, turns=TURNS))])[0]
    target, judge = Instant(), Instant()
    cache = ResponseCache(folder / "cache.sqlite") if cache_on else None
    store = RunStore(folder / "runs.sqlite") if store_on else None
    identity = {"provider": "openai", "model": "bench-target", "base_url": "http://127.0.0.1:1/v1"}
    cached_target = CachedTarget(target, cache, identity, (SECRET,)) if cache is not None else target
    cached_judge = (
        CachedTarget(judge, cache, {**identity, "model": "bench-judge"}, (SECRET,)) if cache is not None else judge
    )
    job = Job(target=target, suite=suite)  # type: ignore[arg-type]
    recorder = RunRecorder(store, [job], RunMeter())
    recorder.begin(RecordedOptions(), lambda note: None)
    writer = ResultWriter(folder / "results.jsonl")
    listeners = _Listeners(recorder, writer, RunEvents())
    turns, template = recorded.turns[:TURNS], recorded.results[0]

    async def loop() -> None:
        with _run_heap():  # the collector tuned as a run tunes it (it needs the running loop)
            await conversations()

    pause = IN_FLIGHT / rate if rate else 0.0  # each call's wait: `rate` calls a second in all

    async def conversation(position: int) -> None:
        messages: list[dict[str, object]] = []
        for number, graded in enumerate(turns, 1):
            messages.append({"role": "user", "content": f"Question {number} of conversation {position}"})
            await asyncio.sleep(pause)  # the model's latency: sleeping costs no CPU, only the pace changes
            target.reply = graded.reply
            reply = await cached_target.chat(ChatRequest(messages=list(messages)))
            messages.append({"role": "assistant", "content": reply.text})
            await asyncio.sleep(pause)
            judge.reply = dataclasses.replace(graded.reply, text='{"c1": {"reasoning": "ok", "satisfied": true}}')
            await cached_judge.chat(judge_request(position, number))
            listeners.turn(GradedTurn(job, position, 0, number, graded.entry, graded.reply))
        await listeners.result(job, position, template.model_copy(update={"test_id": suite.tests[position].id}))

    async def conversations() -> None:
        gate = asyncio.Semaphore(IN_FLIGHT)

        async def one(position: int) -> None:
            async with gate:
                await conversation(position)

        await asyncio.gather(*(one(position) for position in range(CONVERSATIONS)))

    threads = []
    started, main_started = time.process_time(), time.thread_time()
    asyncio.run(loop())
    main = time.thread_time() - main_started
    for state in (cache, store):
        if state is not None:
            threads.append(state._writer._thread.native_id)
    writers = sum(thread_cpu(t) for t in threads)
    writer.close()
    for state in (cache, store):
        if state is not None:
            state.close()
    calls = CONVERSATIONS * TURNS * 2
    shutil.rmtree(folder, ignore_errors=True)
    return (time.process_time() - started) / calls * 1e6, writers / calls * 1e6, main / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rate", type=float, default=2000.0, help="calls per second (0: unpaced)")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="convoeval-state-"))
    try:
        recorded = record(work)
        variants = {
            "floor (no cache, no store)": (False, False),
            "cache": (True, False),
            "store (+ JSONL)": (False, True),
            "cache + store": (True, True),
        }
        figures: dict[str, list[tuple[float, float, float]]] = {name: [] for name in variants}
        for _ in range(args.runs):
            for name, (cache_on, store_on) in variants.items():
                figures[name].append(one(work, recorded, cache_on, store_on, args.rate))
        floor = statistics.median(f[0] for f in figures["floor (no cache, no store)"])
        floor_main = statistics.median(f[2] for f in figures["floor (no cache, no store)"])
        print(
            f"{CONVERSATIONS * TURNS * 2} calls at {args.rate:g}/s, medians of {args.runs}; load {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
        )
        for name, runs in figures.items():
            total, writers, main = (statistics.median(r[i] for r in runs) for i in range(3))
            print(
                f"  {name:28} {total:6.1f} us CPU per call (+{total - floor:5.1f} over the floor; writer threads "
                f"{writers:4.1f} until closing; main thread +{main - floor_main:5.1f})"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
