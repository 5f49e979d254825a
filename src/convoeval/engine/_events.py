"""`RunEvents`: what a run tells as it happens, as one object.

The same object goes from `convoeval.run(events=...)` through the engine to the scheduler
(`convoeval.run.JobEvents`); the CLI's progress and the run recorder are `RunEvents` too.
Adding an event is one method here and one call where it happens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import ClassVar

from ..results import EvaluationResult, TrialResult
from ..run import GradedTurn, Job
from ._meter import RunMeter


class RunEvents:
    """What a run tells; override what you need (every method does nothing by default).

    Example:
        class Printed(RunEvents):
            async def result(self, job, position, result):
                print(result.test_id, result.verdict)

        convoeval.run("suite.eval.yaml", events=Printed())
    """

    #: True: `result` reads only a result's keys, verdict, score, status and totals, and `turn`
    #: needs no call: a run of more than 500 results in worker processes (`--processes`) then
    #: hands `result` such a summary and skips `turn` (the store keeps the whole result).
    summaries_only: ClassVar[bool] = False

    def start(self, meter: RunMeter) -> None:
        """The run is planned: `meter` counts it live (run id, tests, turns, calls, cost)."""

    def note(self, text: str) -> None:
        """A one-line note: a default chosen, a budget reached, a warning."""

    def turn(self, turn: GradedTurn) -> None:
        """A turn was graded."""

    def trial(self, job: Job, position: int, trial: TrialResult) -> None:
        """A trial of a test of several trials finished."""

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        """A test finished against a target (`job.suite.tests[position]` on `job.target`);
        secrets are already redacted. Raising stops the run."""


class CallbackEvents(RunEvents):
    """RunEvents from plain callables (`convoeval.run(on_result=..., on_note=..., on_start=...)`)."""

    def __init__(
        self,
        on_result: Callable[[EvaluationResult], None] | None = None,
        on_note: Callable[[str], None] | None = None,
        on_start: Callable[[RunMeter], None] | None = None,
    ):
        self.on_result, self.on_note, self.on_start = on_result, on_note, on_start

    def start(self, meter: RunMeter) -> None:
        if self.on_start is not None:
            self.on_start(meter)

    def note(self, text: str) -> None:
        if self.on_note is not None:
            self.on_note(text)

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        if self.on_result is not None:
            self.on_result(result)


class EventFanout(RunEvents):
    """Tells every one of `events`, in order (the recorder first, the caller's last)."""

    def __init__(self, *events: RunEvents):
        self.events = events

    def start(self, meter: RunMeter) -> None:
        for events in self.events:
            events.start(meter)

    def note(self, text: str) -> None:
        for events in self.events:
            events.note(text)

    def turn(self, turn: GradedTurn) -> None:
        for events in self.events:
            events.turn(turn)

    def trial(self, job: Job, position: int, trial: TrialResult) -> None:
        for events in self.events:
            events.trial(job, position, trial)

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        for events in self.events:
            await events.result(job, position, result)
