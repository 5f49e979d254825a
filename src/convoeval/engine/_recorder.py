"""The run recorder: a run's bookkeeping in the run store (new or resumed record, the key and
place of every result, what a resumed run already has, saving results and turns, finishing).

A run records a fingerprint of each suite and test (`fingerprints`). Resuming after a suite was
edited runs the new suite: stored results are reused only for tests still there and unchanged
(same suite, test id, target and test fingerprint); the others are dropped from the run, so
verdicts, exit code and `report.results` see the current suite only. A test of several trials
that had no result yet (the run was killed, or `--max-cost` stopped some of its trials) keeps
the trials it finished, under the same rule, and runs only the others.

Without a store it only counts, and the results are kept in memory by the scheduler.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterator

from ..results import EvaluationResult, TrialResult, VerdictStatus
from ..run import GradedTurn, Job
from ..spec import Suite
from ._events import RunEvents
from ._meter import RunMeter
from ._options import RecordedOptions, ResolvedTarget, SuiteFingerprint
from ._store import ResultKey, RunRecord, RunStore, StoredResults


def suite_key(suite: Suite) -> str:
    """How the store names a suite: its file's absolute path (its name when it has no file)."""
    return str(suite.path.resolve()) if suite.path else suite.display_name


def fingerprints(suite: Suite) -> SuiteFingerprint:
    """The suite's hash and its tests' hashes: a test's hash covers the test and what the suite
    adds to every test (input, assertions, policy, execution settings)."""
    shared = suite.model_dump_json(exclude={"tests"})
    tests = {t.id: _sha(shared + t.model_dump_json()) for t in suite.tests}
    return SuiteFingerprint(hash=_suite_hash(tests, shared), tests=tests)


def _suite_hash(tests: dict[str, str], shared: str) -> str:
    return _sha("".join(f"{k}={v};" for k, v in tests.items()) + shared)


def _fingerprints(jobs: list[Job]) -> dict[str, SuiteFingerprint]:
    """The fingerprints of the jobs' suites by suite key; jobs of one suite may hold different
    tests (a test's own `execution.targets`), so their tests are merged."""
    merged: dict[str, SuiteFingerprint] = {}
    for job in jobs:
        key, found = suite_key(job.suite), fingerprints(job.suite)
        entry = merged.setdefault(key, found)
        if entry is not found and not found.tests.items() <= entry.tests.items():
            tests = {**entry.tests, **found.tests}
            merged[key] = SuiteFingerprint(
                hash=_suite_hash(tests, job.suite.model_dump_json(exclude={"tests"})), tests=tests
            )
    return merged


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


#: A run of at most this many results keeps the ones it saves in memory (a few MB) for its
#: report and summary; a larger one reads them back from the store when they are used.
KEPT_UP_TO = 500


class RunRecorder(RunEvents):
    """Records one run's results and turns in a RunStore (or nothing, with `store=None`).

    Args:
        store: the run store, or None.
        jobs: the run's jobs, in run order (a result's place is its test's place in this order).
        meter: the run's meter (counts results; resumed ones are counted as done).
        record: the stored run being resumed, or None for a new run.
    """

    def __init__(self, store: RunStore | None, jobs: list[Job], meter: RunMeter, record: RunRecord | None = None):
        self.store = store
        self.jobs = jobs
        self.meter = meter
        self.record = record
        self._places: dict[int, tuple[int, str]] = {}  # id(job) -> (place of its first test, suite key)
        total = 0
        for job in jobs:
            self._places[id(job)] = (total, suite_key(job.suite))
            total += len(job.suite.tests)
        self.total = total
        #: The results this process saved, by place, for `finish` to hand back without reading
        #: them again; only in a run of at most KEPT_UP_TO results, so memory stays flat.
        self.kept: dict[int, EvaluationResult] | None = {} if total <= KEPT_UP_TO else None
        #: The store keys of the tests whose turns are being graded, by (id(job), position).
        self._turn_keys: dict[tuple[int, int], ResultKey] = {}
        #: The tests with trials in the store, by (id(job), position): their result replaces them.
        self._trialled: set[tuple[int, int]] = set()

    @property
    def run_id(self) -> str | None:
        return self.record.id if self.record is not None and self.store is not None else None

    def key_of(self, job: Job, position: int) -> tuple[ResultKey, int]:
        """The store key and the run-order place of the test at `position` of the job's suite."""
        first, key = self._places[id(job)]
        return ResultKey(key, job.suite.tests[position].id, job.target.name), first + position

    def begin(
        self, options: RecordedOptions, note: Callable[[str], None], rerun: frozenset[str] = frozenset()
    ) -> str | None:
        """Create the run's record (or, resuming, keep the stored results that still match the
        suites and mark them on each job as `job.stored`); returns the run id (None without a
        store). A stored result whose test the run's budget left out runs again, as do those with
        an execution status in `rerun`."""
        meter = self.meter
        suites = _fingerprints(self.jobs)
        if self.store is not None and self.record is None:
            self.record = self.store.new_run(options.with_suites(suites))
        elif self.store is not None and self.record is not None:
            self._resume(suites, note, rerun, options.resolved_targets)
        meter.run_id = self.run_id
        meter.tests_total = self.total
        meter.tests_done = meter.resumed
        return self.run_id

    def _resume(
        self,
        suites: dict[str, SuiteFingerprint],
        note: Callable[[str], None],
        rerun: frozenset[str],
        targets: list[ResolvedTarget],
    ) -> None:
        assert self.store is not None and self.record is not None
        run_id = self.record.id
        recorded = self.record.options.suites
        for name, now in suites.items():
            if name in recorded and recorded[name].hash != now.hash:
                note(
                    f"suite {name} changed since run {run_id} started: running it as it is now, reusing "
                    "stored results only of tests that did not change"
                )
        was = {t.name: t for t in self.record.options.resolved_targets}
        changed = {t.name for t in targets if t.name in was and was[t.name].differs(t)}
        for name in sorted(changed):
            before, after = was[name], next(t for t in targets if t.name == name)
            what = (
                f"{before.describe()}, now {after.describe()}"
                if before.describe() != after.describe()
                else "its temperature, max_tokens or provider settings"
            )
            note(f"target {name} changed since run {run_id} started ({what}): running its tests again")
        stored = self.store.stored_outcomes(run_id)
        costs = self.store.stored_costs(run_id)  # what the kept results spent counts in their suite's budget_usd
        places: dict[ResultKey, int] = {}
        unfinished: dict[ResultKey, tuple[Job, int]] = {}  # valid tests that run: their trials are kept
        for job in self.jobs:
            was_tests = recorded[suite_key(job.suite)].tests if suite_key(job.suite) in recorded else None
            tests_now = suites[suite_key(job.suite)].tests
            job.stored = {}
            for position, test in enumerate(job.suite.tests):
                key, seq = self.key_of(job, position)
                outcome = stored.get(key)
                if (
                    was_tests is not None and was_tests.get(test.id) != tests_now[test.id]
                ) or job.target.name in changed:
                    continue
                if outcome is None or outcome.not_started:
                    unfinished[key] = (job, position)
                if outcome is None:
                    continue
                places[key] = seq
                if not outcome.not_started and outcome.status not in rerun:
                    job.stored[test.id] = outcome
                    job.spent_usd += costs.get(key, 0.0)
            self.meter.resumed += len(job.stored)
        trials = self.store.stored_trials(run_id, unfinished)
        dropped = self.store.keep_results(run_id, places, trials)
        for key, done in trials.items():
            job, position = unfinished[key]
            job.stored_trials[key.test_id] = done
            job.spent_usd += sum(t.cost_usd for t in done.values())
            self._trialled.add((id(job), position))
        if dropped:
            note(f"dropped {dropped} stored result(s) of tests that are no longer in the suites or changed")
        options = (
            self.record.options.model_copy(update={"resolved_targets": targets}) if changed else self.record.options
        )
        self.store.update_options(run_id, options.with_suites(suites))
        self.meter.resumed_trials = reused = sum(map(len, trials.values()))
        if self.meter.resumed or trials:
            note(
                f"resuming run {run_id}: {self.meter.resumed} of {self.total} result(s) already stored"
                + (f", and {reused} finished trial(s) of {len(trials)} unfinished test(s)" if trials else "")
            )

    def stored_json(self) -> Iterator[str]:
        """The results a resumed run already has, as JSON texts (to write them to `-o` first)."""
        if self.store is not None and self.record is not None and self.meter.resumed:
            yield from self.store.results(self.record.id).iter_json()

    async def result(self, job: Job, position: int, result: EvaluationResult) -> None:
        await self.save_result(job, position, result, result.model_dump_json())

    def turn(self, turn: GradedTurn) -> None:
        """Record a graded turn."""
        self.meter.turns += 1
        if self.store is not None and self.record is not None:
            place = (id(turn.job), turn.position)
            key = self._turn_keys.get(place)
            if key is None:  # the test's first graded turn: its key serves the others (until its result)
                key = self._turn_keys[place] = self.key_of(turn.job, turn.position)[0]
            self.store.save_turn(self.record.id, key, turn.trial, turn.number, turn.entry, turn.reply.text)

    def trial(self, job: Job, position: int, trial: TrialResult) -> None:
        """Record a finished trial of a test of several, until the test's result replaces it."""
        if self.store is not None and self.record is not None:
            self._trialled.add((id(job), position))
            self.store.save_trial(self.record.id, self.key_of(job, position)[0], trial.trial, trial.model_dump_json())

    async def save_result(self, job: Job, position: int, result: EvaluationResult, data: str) -> None:
        """Commit a finished test's result (`data`: its JSON) and count it; its stored trials go
        with it, unless the run's budget stopped some of them (a resumed run runs those)."""
        if self.store is not None and self.record is not None:
            self._turn_keys.pop((id(job), position), None)
            key, seq = self.key_of(job, position)
            drop = (id(job), position) in self._trialled and not result.verdict_status.not_started
            if drop:
                self._trialled.discard((id(job), position))
            await self.store.save_result(self.record.id, key, seq, result, data, drop_trials=drop)
            if self.kept is not None:
                self.kept[seq] = result
        self.meter.record_result(result.verdict)
        if result.verdict_status.not_started:
            self.meter.not_started += 1

    def finish(self, summary: dict[str, object]) -> tuple[StoredResults, list[VerdictStatus]]:
        """Mark the run finished with its summary (verdicts and per-target totals added from the
        store, resumed results included); returns its results and (verdict, status) outcomes."""
        assert self.store is not None and self.record is not None
        run_id = self.record.id
        outcomes = self.store.outcomes(run_id)
        summary["verdicts"] = dict(Counter(verdict for verdict, _ in outcomes))
        summary["by_target"] = self.store.totals_by_target(run_id)
        self.store.finish_run(run_id, summary)
        return self.store.results(run_id, self.kept), outcomes
