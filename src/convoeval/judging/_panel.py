"""Judge panels: several judges grade every LLM check, a rule combines their answers.

After PoLL ("Replacing Judges with Juries", Verga et al. 2024): a panel of smaller judges from
different model families agrees with humans better than one large judge and costs less.

A `JudgePanel` stands where one judge would (`GradeContext.judge`, the arena's judge): code
that knows about panels asks each member (`panel_members`); anything else that only needs a
model (a simulated user defaulting to the judge) talks to the first member, the chair.

Rules (`combine`), over the judges that answered. A judge that failed is kept with verdict
`error` and left out only when no answer of its could have changed the panel's verdict
(`settled`); otherwise, and when no judge answered, the check is an error: a panel that could not
decide never passes on the answers of the judges that were left.
- `mean`: the mean score; pass when it reaches the check's pass mark.
- `majority`: pass when more judges pass than fail (a tie fails); the score is the mean of the
  scores of the judges on the winning side, so score and verdict agree.
- `min`: the lowest score; pass only when every judge passes.
Without a rule, pass/fail checks (yes/no rubrics, scenario criteria, pairwise votes) use
`majority` and scored checks (0-10 graders, Likert dimensions, metrics) use `mean`.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal, TypeVar, get_args

from ..results import meets
from ..targets import ChatReply, ChatRequest, Target

PanelRule = Literal["mean", "majority", "min"]
PANEL_RULES: tuple[str, ...] = get_args(PanelRule)

Answer = TypeVar("Answer")
Outcome = TypeVar("Outcome")


class JudgePanel:
    """Two or more judges standing in for one.

    Args:
        judges: the members, in order (the first is the chair).
        rule: how their answers combine, or None for each check's default.

    Example:
        panel = JudgePanel([pool.get("openai:gpt-4o-mini"), pool.get("anthropic:claude-haiku-4-5")])
        ctx = GradeContext(..., judge=panel)   # every LLM check is graded by both
    """

    cacheable = False

    def __init__(self, judges: Sequence[Target], rule: PanelRule | None = None):
        if len(judges) < 2:
            raise ValueError("a judge panel needs at least two judges")
        names = [j.name for j in judges]
        if len(set(names)) != len(names):
            twice = next(n for n in names if names.count(n) > 1)
            raise ValueError(f"judge {twice!r} is named twice in the panel")
        if rule is not None and rule not in PANEL_RULES:
            raise ValueError(f"panel rule must be one of {', '.join(PANEL_RULES)}, got {rule!r}")
        self.judges = list(judges)
        self.rule: PanelRule | None = rule
        self.name = "panel(" + ", ".join(names) + ")"

    async def chat(self, request: ChatRequest) -> ChatReply:
        """A plain model call goes to the chair (the first judge)."""
        return await self.judges[0].chat(request)

    async def aclose(self) -> None:
        """The members are closed by whoever built them."""


def panel_members(judge: Target | None) -> list[Target]:
    """The judges behind `judge`: a panel's members, or `[judge]` (none without a judge)."""
    if judge is None:
        return []
    if isinstance(judge, JudgePanel):
        return list(judge.judges)
    return [judge]


def panel_of(members: Sequence[Target], rule: PanelRule | None) -> Target | None:
    """The judge `members` make (`panel_members` undone): a panel of two or more, the one
    judge alone, or None."""
    if len(members) > 1:
        return JudgePanel(list(members), rule)
    return members[0] if members else None


def panel_rule(judge: Target | None, default: PanelRule) -> PanelRule:
    """The rule a panel's answers combine by: the panel's own, else the check's `default`."""
    rule = judge.rule if isinstance(judge, JudgePanel) else None
    return rule or default


@dataclass(frozen=True)
class Vote:
    """One judge's decided answer: its score in [0, 1] and whether it passes."""

    score: float
    passed: bool


@dataclass(frozen=True)
class Decision:
    """The panel's answer: score, verdict, and which votes are on the deciding side."""

    score: float
    passed: bool
    deciding: tuple[int, ...]  # indices into the votes given to `combine`


def combine(votes: Sequence[Vote], rule: PanelRule, pass_mark: float) -> Decision:
    """The panel's score and verdict from the judges' votes (see the module docstring).

    Example:
        >>> combine([Vote(1.0, True), Vote(0.0, False)], "majority", 0.8).passed
        False
        >>> combine([Vote(0.9, True), Vote(0.7, False)], "mean", 0.8).score
        0.8
    """
    if not votes:
        raise ValueError("no votes to combine")
    everyone = tuple(range(len(votes)))
    if rule == "mean":
        score = math.fsum(v.score for v in votes) / len(votes)
        return Decision(score, meets(score, pass_mark), everyone)
    if rule == "min":
        lowest = min(everyone, key=lambda i: votes[i].score)
        return Decision(votes[lowest].score, all(v.passed for v in votes), everyone)
    if rule != "majority":
        raise ValueError(f"unknown panel rule {rule!r}")
    yes = tuple(i for i in everyone if votes[i].passed)
    no = tuple(i for i in everyone if not votes[i].passed)
    side = yes if len(yes) > len(no) else no
    score = math.fsum(votes[i].score for i in side) / len(side)
    return Decision(score, side is yes, side)


def settled(
    decide: Callable[[list[Answer]], Outcome], answered: Sequence[Answer], missing: int, could_say: Sequence[Answer]
) -> Outcome | None:
    """What `decide` makes of the panel's answers when the `missing` judges (that failed) could
    not change it, whichever of `could_say` each would have given; None when they could.

    Example:
        >>> passes = lambda votes: combine(votes, "majority", 0.5).passed
        >>> either = (Vote(0.0, False), Vote(1.0, True))
        >>> settled(passes, [Vote(1.0, True), Vote(1.0, True)], 1, either)
        True
        >>> settled(passes, [Vote(1.0, True)], 1, either) is None
        True
    """
    outcomes = {decide([*answered, *said]) for said in itertools.product(could_say, repeat=missing)}
    return outcomes.pop() if len(outcomes) == 1 else None
