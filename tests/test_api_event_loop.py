"""The synchronous API called where an event loop already runs: a Jupyter cell, an async test.
Before, each call was `RuntimeError: asyncio.run() cannot be called from a running event loop`
(and `RuntimeWarning: coroutine 'arun' was never awaited`)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import convoeval
from convoeval.testing import FakeOpenAIServer, assert_conversation, grade

from .arena_fakes import arena_server, desk, judge_server  # noqa: F401  (fixtures)
from .conftest import write

SUITE = """\
tests:
  - id: greet
    input: say hello
    assertions: [{type: contains, value: hello}]
"""


def test_run_grade_assert_conversation_and_arena_work_inside_a_running_loop(
    fake_openai: FakeOpenAIServer,
    desk: Path,
    judge_server: FakeOpenAIServer,
    tmp_path: Path,
) -> None:
    suite = write(tmp_path / "s.eval.yaml", SUITE)

    async def cell() -> list[object]:
        report = convoeval.run(suite, target="openai:fake-model", store=False)
        checked = assert_conversation(suite, target="openai:fake-model", store=False)
        arena = convoeval.arena(desk, targets=["polite", "terse"], judge="judge", bootstrap=0, store=False)
        return [
            [(r.test_id, r.verdict) for r in report.results],
            [r.verdict for r in checked],
            grade({"type": "contains", "value": "hi"}, output="hi there").verdict,
            [row["target"] for row in arena.rows()],
        ]

    assert asyncio.run(cell()) == [[("greet", "pass")], ["pass"], "pass", ["polite", "terse"]]


def test_an_error_of_the_run_reaches_the_caller_inside_a_running_loop(tmp_path: Path) -> None:
    async def cell() -> None:
        convoeval.run(tmp_path / "missing.eval.yaml", store=False)

    try:
        asyncio.run(cell())
    except convoeval.SpecError as exc:
        assert "missing.eval.yaml:1: (file): no such file" in str(exc)
    else:
        raise AssertionError("no SpecError")


INTERRUPTED = """\
import asyncio, os, signal, sys, threading, time
from convoeval.testing import FakeOpenAIServer
server = FakeOpenAIServer(latency_s=1.0).start()
os.environ.update(OPENAI_BASE_URL=server.base_url, OPENAI_API_KEY="sk-test")
import convoeval

async def cell():
    threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGINT)).start()
    start = time.monotonic()
    try:
        convoeval.run(sys.argv[1], target="openai:m", judge="openai:m", store=False, cache=False)
    except KeyboardInterrupt:
        seen = len(server.requests)
        time.sleep(1.5)
        print(round(time.monotonic() - start), len(server.requests) - seen, threading.active_count())

asyncio.new_event_loop().run_until_complete(cell())
"""


def test_an_interrupt_inside_a_running_loop_stops_the_run(tmp_path: Path) -> None:
    """Ctrl-C (a kernel interrupt) while the cell waits: the run is cancelled, sends nothing
    more, and its thread has ended (the server's two threads are left)."""
    turns = "".join(f"      - input: turn {n}\n" for n in range(1, 6))
    suite = write(tmp_path / "s.eval.yaml", f"tests:\n  - id: talk\n    mode: conversation\n    turns:\n{turns}")
    script = write(tmp_path / "cell.py", INTERRUPTED)
    done = subprocess.run(
        [sys.executable, str(script), str(suite)], capture_output=True, text=True, timeout=60, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    seconds, sent_after, threads = map(int, done.stdout.split())
    assert seconds <= 3 and sent_after == 0 and threads <= 2, done.stdout
