"""Progress of a running run: a rich bar on a terminal, plain periodic lines otherwise.

Both read the run's `RunMeter` (tests, turns, calls, cache hits, errors, tokens, cost); they
never slow the run down: the bar is redrawn by rich's own thread a few times a second and the
plain lines come from a timer thread.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from rich.console import Console
from rich.text import Text

from ..engine import RunEvents, RunMeter
from ..results import EvaluationResult
from ..run import Job

if TYPE_CHECKING:
    from rich.progress import Progress, Task, TaskID

Mode = Literal["bar", "lines", "off"]


def meter_line(meter: RunMeter) -> str:
    """`12/100 tests, 60 turns, 120 calls, 3 cached, 0 errors, 45,210 tokens, $0.0123`."""
    t = meter.totals
    line = (
        f"{meter.tests_done}/{meter.tests_total} tests, {meter.turns} turns, {t.calls} calls, "
        f"{t.cache_hits} cached, {t.errors} errors, {t.tokens:,} tokens, ${t.cost_usd:.4f}"
    )
    if t.spent_usd != t.cost_usd:
        line += f" (spent ${t.spent_usd:.4f})"
    if meter.max_cost_usd is not None:
        line += f", budget ${meter.max_cost_usd:g}" + (" REACHED" if meter.budget_exhausted else "")
    return line


class RunProgress(RunEvents):
    """Shows a run's progress on `console` (it is the run's `RunEvents`).

    Args:
        mode: `bar` (a terminal), `lines` (one plain line every `interval_s`) or `off`.

    Example:
        progress = RunProgress(console, "bar" if console.is_terminal else "lines")
        report = await arun(paths, events=progress)
        progress.stop()
    """

    def __init__(self, console: Console, mode: Mode, interval_s: float = 10.0):
        self.console = console
        self.mode = mode
        self.interval_s = interval_s
        self.meter: RunMeter | None = None
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self, meter: RunMeter) -> None:
        self.meter = meter
        if self.mode == "bar":
            self._bar = _progress_bar(meter, self.console)
            self._task = self._bar.add_task("run", total=meter.tests_total, completed=meter.tests_done)
            self._bar.start()
        elif self.mode == "lines":
            self._thread = threading.Thread(target=self._lines, name="convoeval-progress", daemon=True)
            self._thread.start()

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        self.advance()

    def advance(self, *_: object) -> None:
        """Call as each result arrives (it moves the bar)."""
        if self._bar is not None and self._task is not None and self.meter is not None:
            self._bar.update(self._task, completed=self.meter.tests_done)

    def stop(self) -> None:
        self._stop.set()
        if self._bar is not None:
            self.advance()
            self._bar.stop()
            self._bar = None
        if self._thread is not None:
            self._thread.join()
            self._thread = None

    def _lines(self) -> None:
        started = time.monotonic()
        while not self._stop.wait(self.interval_s):
            if self.meter is not None:
                elapsed = time.monotonic() - started
                self.console.print(
                    f"progress {elapsed:.0f}s: {meter_line(self.meter)}", markup=False, highlight=False, soft_wrap=True
                )


def _progress_bar(meter: RunMeter, console: Console) -> Progress:
    """A rich progress bar of the run's tests, with the meter's live totals beside it
    (rich.progress loads here: only a run on a terminal draws one)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TextColumn, TimeElapsedColumn

    class MeterColumn(ProgressColumn):
        def render(self, task: Task) -> Text:
            t = meter.totals
            text = (
                f"{meter.turns} turns · {t.calls} calls · {t.cache_hits} cached · "
                f"{t.errors} errors · {t.tokens:,} tok · ${t.cost_usd:.4f}"
            )
            if meter.budget_exhausted:
                text += " · budget reached"
            return Text(text, style="dim")

    return Progress(
        TextColumn("[bold]tests"),
        BarColumn(),
        MofNCompleteColumn(),
        MeterColumn(),
        TimeElapsedColumn(),
        console=console,
        refresh_per_second=4,
    )


def _number(data: Mapping[str, object], key: str, default: float = 0) -> float:
    """A number of the run's summary (`default` when it has none)."""
    value = data.get(key)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def print_run_totals(summary: Mapping[str, object], console: Console) -> None:
    """The run's totals: calls, cache hits, errors, tokens, cost per target and in all."""
    calls, hits, errors = _number(summary, "calls"), _number(summary, "cache_hits"), _number(summary, "errors")
    tokens = _number(summary, "input_tokens") + _number(summary, "output_tokens")
    line = (
        f"{calls} model call(s), {hits} cache hit(s), {errors} failed call(s), {tokens:,} tokens, "
        f"cost ${_number(summary, 'cost_usd', 0.0):.4f}"
    )
    if _number(summary, "spent_usd", 0.0) != _number(summary, "cost_usd", 0.0):
        line += f" (spent ${_number(summary, 'spent_usd', 0.0):.4f}; the rest came from the cache)"
    if summary.get("resumed") or summary.get("resumed_trials"):
        kept = f"{int(_number(summary, 'resumed'))} result(s) and {int(_number(summary, 'resumed_trials'))} trial(s)"
        line += f"; not counted here: the {kept} from before the resume"
    console.print(line, markup=False, highlight=False, soft_wrap=True)
    models = summary.get("by_model")
    unpriced = [str(k) for k, t in (models.items() if isinstance(models, dict) else ()) if _number(t, "unpriced_calls")]
    if unpriced and summary.get("max_cost_usd") is None:  # with --max-cost, the run's note says it
        console.print(
            f"  {int(_number(summary, 'unpriced_calls'))} call(s) of {', '.join(unpriced)} had no known price and count as $0 "
            "(set price_input_per_mtok / price_output_per_mtok)",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    given = summary.get("by_target")
    by_target = {
        str(name): t for name, t in (given.items() if isinstance(given, dict) else ()) if isinstance(t, Mapping)
    }
    if len(by_target) > 1 or any(t.get("cost_usd") or t.get("judge_cost_usd") for t in by_target.values()):
        for name, t in by_target.items():
            console.print(
                f"  {name}: {int(_number(t, 'tests'))} test(s), target ${_number(t, 'cost_usd'):.4f}, "
                f"judge ${_number(t, 'judge_cost_usd'):.4f}, {int(_number(t, 'tokens')):,} tokens",
                markup=False,
                highlight=False,
                soft_wrap=True,
            )
