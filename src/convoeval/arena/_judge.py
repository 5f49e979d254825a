"""The arena's pairwise judging: judge the conversations of every pair of targets on every test, then rate them.

For each test and each pair of targets (X, Y) that both have a result for it, the pairwise judge
(`convoeval.judging.judge_pair`) is asked twice: once with X's conversation shown as A, once with
Y's shown as A. When both orders name the same winner (or both say EQUAL) that is the battle's
outcome; when they disagree, the battle is a tie (position-bias control, as in MT-Bench and
TD-Eval) and counts towards the order-disagreement rate. A pair whose judge call failed in either
order (HTTP error, or an answer that was not A/B/EQUAL after the re-ask) is NOT a battle: it is
counted and reported as a judge error.

Battles are rated in the order of the tests and pairs (not in the order the judge answered, so
the online Elo is reproducible) by `leaderboard_from_battles`: online Elo with K, Bradley-Terry
with seeded bootstrap intervals. Next to the ratings each target gets its turn-level mean (the
mean of its `turn-N` scores): TD-Eval's two levels side by side.

Example:
    report = await judge_arena(results, judge_target, bootstrap=200)
    print(report.to_json())
    report.write_battles("battles.jsonl")   # re-rate later: convoeval arena --battles battles.jsonl
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from ..judging import JudgeError, PairwiseWinner, judge_pair, judge_pair_as_written
from ..rank import Battle, Winner, leaderboard_from_battles
from ..results import EvaluationResult, Usage
from ..spec import Policy
from ..targets import Target
from ._fastchat import FastChatPairwise
from ._report import ArenaReport, summarise_target

TestKey = tuple[str | None, str]
"""A test in the arena: (suite name as in the results, test id)."""


def not_run(result: EvaluationResult) -> bool:
    """Whether a result shows no conversation of the target's own to judge: its test was skipped
    or not started (the run's budget), or its simulated user failed (`simulator_error`: the
    conversation was cut short by the simulator, not the target). A test that ran into its own
    `budget:` did run: it is judged."""
    status = result.execution_status
    return status in ("skipped", "simulator_error") or result.verdict_status.not_started


# What each order's label means for the pair (model_a, model_b).
_A_FIRST: dict[str, Winner] = {"A": "model_a", "B": "model_b", "EQUAL": "tie"}
_B_FIRST: dict[str, Winner] = {"A": "model_b", "B": "model_a", "EQUAL": "tie"}


@dataclass(frozen=True)
class ArenaTest:
    """What the judge is told about a test besides the two conversations.

    Attributes:
        criteria: the test's goal.
        policy: the domain policy (test's or suite's).
        backend: per-turn backend results (turn number -> data).
    """

    criteria: str | None = None
    policy: Policy | None = None
    backend: Mapping[int, object] | None = None
    references: tuple[str, ...] = ()


@dataclass
class PairJudgment:
    """One pair of targets on one test, judged in both orders.

    Attributes:
        suite, test_id: the test.
        model_a, model_b: the two targets; model_a is shown first in the first order.
        a_first: the judge's label when model_a's conversation was A ("A" = model_a wins).
        b_first: the judge's label when model_b's conversation was A ("A" = model_b wins).
        reasoning_a_first, reasoning_b_first: the judge's reasoning in each order.
        errors: why an order failed (judge errors); a pair with an error is not a battle.
        usage, cost_usd: the judge calls of both orders.
        panel: with a judge panel, each judge's answer in each order (`a_first`, `b_first`)
            and the `rule` that combined them.
        turn, question: with FastChat's pairwise prompts, the turn judged (1 or 2) and
            FastChat's `question_id` (from the results' metadata).
    """

    suite: str | None
    test_id: str
    model_a: str
    model_b: str
    a_first: PairwiseWinner | None = None
    b_first: PairwiseWinner | None = None
    reasoning_a_first: str | None = None
    reasoning_b_first: str | None = None
    errors: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    cost_usd: float = 0.0
    panel: dict[str, object] | None = None
    turn: int | None = None
    question: object = None

    @property
    def ok(self) -> bool:
        """Both orders were judged."""
        return self.a_first is not None and self.b_first is not None

    @property
    def consistent(self) -> bool | None:
        """Whether both orders gave the same outcome (None when an order failed)."""
        if not self.ok:
            return None
        return _A_FIRST[self.a_first] == _B_FIRST[self.b_first]  # type: ignore[index]

    @property
    def winner(self) -> Winner | None:
        """The battle's outcome for (model_a, model_b): the agreed winner, else a tie."""
        if not self.ok:
            return None
        first = _A_FIRST[self.a_first]  # type: ignore[index]
        return first if first == _B_FIRST[self.b_first] else "tie"  # type: ignore[index]

    def battle(self) -> Battle | None:
        """The battle for the ratings, or None when the judge failed in an order."""
        winner = self.winner
        return None if winner is None else Battle(self.model_a, self.model_b, winner)

    @property
    def question_id(self) -> str:
        return f"{self.suite}/{self.test_id}" if self.suite else self.test_id

    @property
    def label(self) -> str:
        """The test (and turn) judged, as messages name it."""
        return self.question_id if self.turn is None else f"{self.question_id} turn {self.turn}"

    def to_record(self, judge: str | None = None) -> dict[str, object]:
        """The battle in Chatbot Arena's JSONL format, with what the judge said in each order.

        `{model_a, model_b, winner: model_a|model_b|tie, question_id, test_id, suite, judge,
        judgments: {a_first, b_first}, consistent, reasoning: {a_first, b_first}}`; with
        FastChat's prompts, FastChat's `question_id` and the `turn` (as MT-Bench's judgments).
        """
        record: dict[str, object] = {
            "model_a": self.model_a,
            "model_b": self.model_b,
            "winner": self.winner,
            "question_id": self.question_id if self.question is None else self.question,
            "test_id": self.test_id,
            "suite": self.suite,
            "judge": judge,
            "judgments": {"a_first": self.a_first, "b_first": self.b_first},
            "consistent": self.consistent,
            "reasoning": {"a_first": self.reasoning_a_first, "b_first": self.reasoning_b_first},
        }
        if self.panel:
            record["panel"] = self.panel
        if self.turn is not None:
            record["turn"] = self.turn
        return record


def group_results(
    results: Iterable[EvaluationResult], targets: Sequence[str] | None = None
) -> tuple[list[str], dict[TestKey, dict[str, EvaluationResult]]]:
    """The targets (given order, else first appearance) and each test's result per target.

    Raises:
        ValueError: two results for the same test and target, or a given target without results.
    """
    by_test: dict[TestKey, dict[str, EvaluationResult]] = {}
    seen: dict[str, None] = {}
    for result in results:
        if targets is not None and result.target not in targets:
            continue
        seen.setdefault(result.target)
        per_target = by_test.setdefault((result.suite, result.test_id), {})
        if result.target in per_target:
            where = f"{result.suite}/{result.test_id}" if result.suite else result.test_id
            raise ValueError(
                f"two results for test {where} and target {result.target!r}: give the results of one run per target"
            )
        per_target[result.target] = result
    if targets is not None:
        missing = [t for t in targets if t not in seen]
        if missing:
            found = ", ".join(seen) or "none"
            raise ValueError(f"no results for target(s) {', '.join(missing)} (targets with results: {found})")
        order = list(dict.fromkeys(targets))
    else:
        order = list(seen)
    return order, by_test


#: A pair to judge: its judgment, the two results, what the judge is shown, and with FastChat's
#: prompts the messages of each order.
Asked = list[dict[str, str]]
_Pair = tuple[PairJudgment, EvaluationResult, EvaluationResult, ArenaTest, tuple[Asked, Asked] | None]


def _contestants(
    results: list[EvaluationResult], targets: Sequence[str] | None
) -> tuple[list[str], dict[TestKey, dict[str, EvaluationResult]]]:
    """`group_results`, refusing fewer than two targets."""
    order, by_test = group_results(results, targets)
    if len(order) < 2:
        found = ", ".join(order) or "none"
        raise ValueError(f"the arena needs results of at least two targets (found: {found})")
    return order, by_test


def _pairs(
    by_test: Mapping[TestKey, Mapping[str, EvaluationResult]],
    order: list[str],
    tests: Mapping[TestKey, ArenaTest],
    fastchat: FastChatPairwise | None = None,
) -> tuple[list[_Pair], list[str]]:
    """Every pair of targets on every test with both results run (a judgment to fill, the two
    results, what the judge is shown; with FastChat's prompts, one per turn), and why the other
    pairs are skipped."""
    work: list[_Pair] = []
    skipped: list[str] = []
    for (suite, test_id), per_target in by_test.items():
        info = tests.get((suite, test_id)) or tests.get((None, test_id)) or ArenaTest()
        where = f"{suite}/{test_id}" if suite else test_id
        for x, y in itertools.combinations(order, 2):
            rx, ry = per_target.get(x), per_target.get(y)
            missing = [t for t, r in ((x, rx), (y, ry)) if r is None]
            unrun = [t for t, r in ((x, rx), (y, ry)) if r is not None and not_run(r)]
            if rx is None or ry is None or unrun:
                reason = f"no result for {', '.join(missing)}" if missing else f"did not run for {', '.join(unrun)}"
                skipped.append(f"{where} {x} vs {y}: {reason}")
                continue
            if fastchat is None:
                work.append((PairJudgment(suite=suite, test_id=test_id, model_a=x, model_b=y), rx, ry, info, None))
                continue
            matches = fastchat.matches(rx, ry, info.references)
            if isinstance(matches, str):
                skipped.append(f"{where} {x} vs {y}: {matches}")
                continue
            question = (rx.metadata or ry.metadata).get("question_id")
            for turn, asked in enumerate(zip(*matches, strict=True), start=1):
                judgment = PairJudgment(suite, test_id, x, y, turn=turn, question=question)
                work.append((judgment, rx, ry, info, asked))
    return work, skipped


async def _judge_order(
    judge: Target,
    prompt: str | None,
    judgment: PairJudgment,
    first: EvaluationResult,
    second: EvaluationResult,
    info: ArenaTest,
    a_first: bool,
    asked: Asked | None = None,
) -> int:
    """Judge one order of a pair into `judgment` (its winner and reasoning, or the error);
    returns the judge calls made. `asked`: FastChat's messages for this order, sent as written."""
    order = "a_first" if a_first else "b_first"
    try:
        if asked is not None:
            verdict = await judge_pair_as_written(judge, asked, trial=judgment.turn or 0)
        else:
            verdict = await judge_pair(
                judge,
                first.output,
                second.output,
                criteria=info.criteria,
                policy=info.policy,
                test_id=judgment.test_id,
                backend=info.backend,
                prompt=prompt,
            )
    except JudgeError as exc:
        judgment.errors.append(f"{order}: {exc}")
        judgment.usage = judgment.usage + exc.usage
        judgment.cost_usd += exc.cost_usd
        return int(getattr(exc, "calls", 1))
    except Exception as exc:  # a judge target's bug must not end the arena
        judgment.errors.append(f"{order}: judge crashed: {type(exc).__name__}: {exc}")
        return 0
    judgment.usage = judgment.usage + verdict.usage
    judgment.cost_usd += verdict.cost_usd
    if verdict.panel is not None:
        judgment.panel = judgment.panel or {"rule": verdict.rule}
        judgment.panel[order] = verdict.panel
    if a_first:
        judgment.a_first, judgment.reasoning_a_first = verdict.winner, verdict.reasoning
    else:
        judgment.b_first, judgment.reasoning_b_first = verdict.winner, verdict.reasoning
    return verdict.calls


async def judge_arena(
    results: Iterable[EvaluationResult],
    judge: Target,
    *,
    targets: Sequence[str] | None = None,
    tests: Mapping[TestKey, ArenaTest] | None = None,
    prompt: str | None = None,
    fastchat: FastChatPairwise | None = None,
    k: float = 32.0,
    bootstrap: int = 1000,
    seed: int = 0,
    confidence: float = 0.95,
    concurrency: int = 8,
    on_judgment: Callable[[PairJudgment], None] | None = None,
) -> ArenaReport:
    """Judge every pair of targets on every test in both orders, and rate the battles.

    Args:
        results: EvaluationResults of the same tests against two or more targets (one per
            test and target). The conversation judged is each result's `output` (its first
            trial). Results that did not run (skipped, budget exhausted) are left out.
        judge: the pairwise judge (any Target; structured output).
        targets: the targets to compare, in order (default: all, in order of appearance).
        tests: criteria, policy and backend results per (suite, test_id), shown to the judge.
        prompt: a custom pairwise prompt TEXT (see `convoeval.judging.load_pairwise_prompt`).
        fastchat: judge each turn with FastChat's MT-Bench pairwise prompts instead (see
            `FastChatPairwise`): a battle per test, pair and turn.
        k: Elo K-factor; bootstrap, seed, confidence: of the Bradley-Terry intervals.
        concurrency: judge calls in flight at once.
        on_judgment: called with each pair once both its orders are done.

    Raises:
        ValueError: fewer than two targets, or duplicate results for a test and target.
    """
    if concurrency < 1:
        raise ValueError(f"concurrency must be at least 1, got {concurrency}")
    results = list(results)
    order, by_test = _contestants(results, targets)
    semaphore = asyncio.Semaphore(concurrency)
    work, skipped = _pairs(by_test, order, tests or {}, fastchat)
    judgments = [judgment for judgment, *_ in work]
    totals = {"calls": 0}

    async def one_order(
        judgment: PairJudgment,
        first: EvaluationResult,
        second: EvaluationResult,
        info: ArenaTest,
        a_first: bool,
        asked: Asked | None,
    ) -> None:
        async with semaphore:
            calls = await _judge_order(judge, prompt, judgment, first, second, info, a_first, asked)
        totals["calls"] += calls

    async def one_pair(
        judgment: PairJudgment,
        rx: EvaluationResult,
        ry: EvaluationResult,
        info: ArenaTest,
        asked: tuple[Asked, Asked] | None,
    ) -> None:
        a_first, b_first = asked if asked is not None else (None, None)
        await asyncio.gather(
            one_order(judgment, rx, ry, info, True, a_first), one_order(judgment, ry, rx, info, False, b_first)
        )
        if on_judgment:
            on_judgment(judgment)

    await asyncio.gather(*(one_pair(*item) for item in work))
    battles = [b for b in (j.battle() for j in judgments) if b is not None]
    board = (
        leaderboard_from_battles(battles, k=k, bootstrap=bootstrap, seed=seed, confidence=confidence)
        if battles
        else None
    )
    return ArenaReport(
        judgments=judgments,
        leaderboard=board,
        summaries={t: summarise_target(t, results) for t in order},
        judge=judge.name,
        skipped=skipped,
        usage=Usage.total(j.usage for j in judgments),
        cost_usd=sum(j.cost_usd for j in judgments),
        judge_calls=totals["calls"],
    )
