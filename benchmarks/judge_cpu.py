"""CPU of one judged turn's grading: W-large's rubric assertion, evaluated as a run does.

    python benchmarks/judge_cpu.py                      # 2,000 conversations x 5 turns, medians of 5
    python benchmarks/judge_cpu.py --runs 9 --profile /tmp/judge.prof

W-large's suite (benchmarks/run.py: each turn `assertions: ['The reply answers question t']`,
one rubric per turn) is loaded as a run loads it; each turn's assertion is then evaluated
(`Assertion.evaluate`, what the run loop awaits) on the grading context a run builds for that
turn (the history before the reply, turn numbers, the reply), against a judge that answers at
once with a valid verdict. What it prints is the CPU per judged turn of convoeval's grading:
the prompt, the judge call's request and accounting, the answer's parsing and validation, the
grade and its records. Beside it, the floor's work for the same call: formatting one prompt
string and validating the answer with one pydantic model (benchmarks/floor.py's judge).
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import run as bench  # noqa: E402  (benchmarks/run.py: W's suites)

from convoeval.graders import GradeContext  # noqa: E402
from convoeval.results import Message, Usage  # noqa: E402
from convoeval.spec import load_suites  # noqa: E402
from convoeval.targets import ChatReply, ChatRequest  # noqa: E402

VERDICT = '{"c1": {"reasoning": "The reply answers the question.", "satisfied": true}}'


class Judge:
    """A judge that answers every request at once with a satisfied verdict."""

    name = "openai:bench-judge"
    provider_name = "openai"

    async def chat(self, request: ChatRequest) -> ChatReply:
        return ChatReply(text=VERDICT, usage=Usage(input_tokens=200, output_tokens=20))

    async def aclose(self) -> None:
        pass


def contexts(conversations: int) -> list[tuple[object, GradeContext]]:
    """Each turn's assertion and grading context, as the run builds them."""
    with tempfile.TemporaryDirectory() as work:
        suite = bench.write_w(Path(work), name="judged", conversations=conversations, turns=bench.LARGE_TURNS)
        tests = load_suites([str(suite)])[0].tests
    judge = Judge()
    out: list[tuple[object, GradeContext]] = []
    for test in tests:
        transcript: list[Message] = []
        for number, turn in enumerate(test.turns, start=1):
            assert isinstance(turn.input, str)
            transcript.append(Message(role="user", content=turn.input, source="input", turn=number))
            history = list(transcript)
            reply = ChatReply(text=f"Reply to: {turn.input[:40]}", usage=Usage(input_tokens=50, output_tokens=10))
            transcript.append(Message(role="assistant", content=reply.text, source="target", turn=number))
            ctx = GradeContext(
                level="turn",
                output=reply.text,
                history=history,
                transcript=list(transcript),
                reply=reply,
                turn=number,
                judge=judge,  # type: ignore[arg-type]
                test_id=test.id,
            )
            out.append((turn.assertions[0], ctx))
    return out


async def grade_all(work: list[tuple[object, GradeContext]]) -> None:
    for assertion, ctx in work:
        score = await assertion.evaluate(ctx)  # type: ignore[attr-defined]
        assert score.verdict == "pass", score


def floor_call(prompts: list[str]) -> None:
    """The floor's judge work: one prompt string, one pydantic validation of the answer."""
    from pydantic import BaseModel

    class Verdict(BaseModel):
        reasoning: str
        satisfied: bool

    for question in prompts:
        prompt = f"Conversation:\n{question}\n\nCriterion: the reply answers it. Reply with JSON."
        assert prompt
        Verdict.model_validate_json('{"reasoning": "The reply answers the question.", "satisfied": true}')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=bench.LARGE_CONVERSATIONS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--profile", help="write a cProfile of one more run here")
    args = parser.parse_args()
    spent: list[float] = []
    floors: list[float] = []
    for _ in range(args.runs):
        work = contexts(args.conversations)  # fresh assertions each run: a run parses its suite
        started = time.process_time()
        asyncio.run(grade_all(work))
        spent.append((time.process_time() - started) / len(work))
        prompts = [ctx.output for _, ctx in work]
        started = time.process_time()
        floor_call(prompts)
        floors.append((time.process_time() - started) / len(work))
    if args.profile:
        work = contexts(args.conversations)
        profile = cProfile.Profile()
        profile.runcall(asyncio.run, grade_all(work))
        profile.dump_stats(args.profile)
    print(
        f"{len(work)} judged turns, medians of {args.runs}: convoeval {statistics.median(spent) * 1e6:.1f} us of CPU "
        f"per judged turn (runs {', '.join(f'{s * 1e6:.1f}' for s in spent)}); the floor's judge work "
        f"{statistics.median(floors) * 1e6:.1f} us; load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}"
    )


if __name__ == "__main__":
    main()
