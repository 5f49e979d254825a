"""Applying a turn's `capture` rules and `post_condition` to its reply.

Both add checks to the turn's score (a `GraderScore` each, so reports show them like any
grader) and may end the conversation (`skip_remaining`).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field

from .. import _regex
from .._jsonpath import parse_jsonpath
from ..errors import ConvoevalError
from ..graders import NoJson, parse_json
from ..results import AssertionOutcome, GraderScore
from ..spec import Budget, Capture, PostCondition, substitute, substitute_regex
from ..spec._controls import RegexItem
from ..targets import ChatReply


class ControlError(ConvoevalError):
    """A capture's or post-condition's regex could not be decided on a reply (stopped after
    its time bound, or invalid once `{{ name }}` variables were put in): the test is an error."""


@dataclass
class TurnControls:
    """What a turn's captures and post-condition decided."""

    captured: dict[str, object] = field(default_factory=dict)
    scores: list[GraderScore] = field(default_factory=list)
    stop_note: str | None = None  # set when no further turn may be sent


def apply_controls(
    number: int, captures: list[Capture], post: PostCondition | None, reply: ChatReply, variables: dict[str, object]
) -> TurnControls:
    """Run the captures (updating `variables`), then the post-condition, on one reply;
    `ControlError` when a regex of theirs cannot be decided."""
    result = TurnControls()
    for rule in captures:
        value, evidence = capture_value(rule, reply)
        if value is not None:
            variables[rule.name] = result.captured[rule.name] = value
            outcome = AssertionOutcome(text=f"capture {rule.name}", passed=True, evidence=f"= {value[:80]!r}")
            result.scores.append(_score(f"capture:{rule.name}", "capture", [outcome], weight=0.0))
            continue
        outcome = AssertionOutcome(text=f"capture {rule.name}", passed=False, evidence=evidence)
        required = rule.on_missing == "fail"  # the turn fails, and so does the test
        result.scores.append(_score(f"capture:{rule.name}", "capture", [outcome], required=required, weight=0.0))
        if rule.on_missing != "continue":  # the turns after it would be sent with `{{ name }}` unfilled
            reason = f"capture {rule.name} found nothing in turn {number} ({evidence})"
            result.stop_note = result.stop_note or (reason if required else f"skipped after turn {number}: {reason}")
    if post is not None:
        outcomes = check_post_condition(post, reply.text, variables)
        failed = [o for o in outcomes if not o.passed]
        required = post.on_fail == "fail"
        result.scores.append(
            _score("post_condition", "post-condition", outcomes, required=required, weight=1.0 if required else 0.0)
        )
        if failed and post.on_fail == "skip_remaining":
            reason = "; ".join(f"{o.text}: {o.evidence}" for o in failed)
            result.stop_note = result.stop_note or f"skipped after turn {number}: post_condition failed ({reason})"
    return result


def _score(
    name: str, kind: str, outcomes: list[AssertionOutcome], *, required: bool = False, weight: float = 1.0
) -> GraderScore:
    passed = all(o.passed for o in outcomes)
    return GraderScore(
        name=name,
        type=kind,
        score=1.0 if passed else 0.0,
        verdict="pass" if passed else "fail",
        weight=weight,
        required=required,
        assertions=outcomes,
    )


def capture_value(rule: Capture, reply: ChatReply) -> tuple[str | None, str]:
    """The captured text, or None and why nothing was found."""
    if rule.source.startswith("tool:"):
        tool = rule.source[5:].strip()
        calls = [c for c in reply.tool_calls if c.name == tool]
        if not calls:
            called = ", ".join(dict.fromkeys(c.name for c in reply.tool_calls)) or "none"
            return None, f"no call to tool {tool!r} in this reply (tools called: {called})"
        output = calls[-1].output
        data: object = output
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False, default=str)
    else:
        text = reply.text
        data = None
    if rule.jsonpath is not None:
        if data is None or isinstance(data, str):
            try:
                data = parse_json(text, fenced=True, embedded=True).value
            except NoJson as exc:
                return None, f"no JSON to apply {rule.jsonpath} to: {exc}"
        matches = parse_jsonpath(rule.jsonpath).find(data)
        if not matches:
            return None, f"JSONPath {rule.jsonpath} matched nothing"
        value = matches[0].value
        return (value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)), ""
    if rule.regex is not None:
        match = _search(rule.regex, text, f"capture {rule.name}: regex")
        if match is None:
            return None, f"regex {rule.regex!r} did not match"
        group = rule.group if rule.group is not None else (1 if match.re.groups else 0)
        value = match.group(group)
        return (value, "") if value is not None else (None, f"group {group} of {rule.regex!r} did not take part")
    return (text, "") if text else (None, "the text is empty")


def check_post_condition(post: PostCondition, text: str, variables: dict[str, object]) -> list[AssertionOutcome]:
    """One outcome per list of the post-condition."""

    def found(item: str | RegexItem, where: str) -> bool:
        if isinstance(item, str):
            needle = substitute(item, variables)
            return needle.lower() in text.lower() if post.ignore_case else needle in text
        flags = _regex.flag_bits("i") if post.ignore_case else 0
        return (
            _search(substitute_regex(item.regex, variables), text, f"post_condition.{where}: regex", flags) is not None
        )

    def shown(item: str | RegexItem) -> str:
        return (
            repr(substitute(item, variables))
            if isinstance(item, str)
            else f"/{substitute_regex(item.regex, variables)}/"
        )

    outcomes = []
    if post.must_contain_any:
        hits = [shown(i) for i in post.must_contain_any if found(i, "must_contain_any")]
        outcomes.append(
            AssertionOutcome(
                text=f"must contain any of {', '.join(shown(i) for i in post.must_contain_any)}",
                passed=bool(hits),
                evidence=f"found {', '.join(hits)}" if hits else "none found in the reply",
            )
        )
    if post.must_contain_all:
        missing = [shown(i) for i in post.must_contain_all if not found(i, "must_contain_all")]
        outcomes.append(
            AssertionOutcome(
                text=f"must contain all of {', '.join(shown(i) for i in post.must_contain_all)}",
                passed=not missing,
                evidence=f"missing {', '.join(missing)}" if missing else "all found",
            )
        )
    if post.must_not_contain:
        present = [shown(i) for i in post.must_not_contain if found(i, "must_not_contain")]
        outcomes.append(
            AssertionOutcome(
                text=f"must not contain {', '.join(shown(i) for i in post.must_not_contain)}",
                passed=not present,
                evidence=f"found {', '.join(present)}" if present else "none found",
            )
        )
    return outcomes


def _search(pattern: str, text: str, field: str, flags: int = 0) -> _regex.Match[str] | None:
    """A capture's or post-condition's regex searched in a reply with a time bound; one that
    cannot be decided raises `ControlError` (the test becomes an `execution_error`)."""
    try:
        return _regex.search(pattern, text, field=field, flags=flags, what="reply")
    except _regex.RegexTimeout as exc:
        raise ControlError(str(exc)) from None
    except _regex.PatternError as exc:  # only possible after {{ name }} substitution
        raise ControlError(f"{field} {_regex.shown(pattern)} is not a valid regular expression: {exc}") from None


#: What a reply used of each limit, or None when it does not say (no usage, no prices).
_USED: dict[str, Callable[[ChatReply], float | None]] = {
    "tool_calls": lambda r: len(r.tool_calls),
    "seconds": lambda r: r.latency_ms / 1000,
    "tokens": lambda r: r.usage.total_tokens or None,
    "cost_usd": lambda r: r.cost_usd if r.cost_usd or r.cost_known else None,
}
_UNMEASURED = {
    "tokens": "the target reported no token usage",
    "cost_usd": "the target has no prices (set price_input_per_mtok / price_output_per_mtok) and reported no cost",
}


def budget_hit(budget: Budget | None, number: int, reply: ChatReply, replies: list[ChatReply]) -> str | None:
    """Which budget the turn just played went over (`tool_calls=5 at turn 2`), or None.

    A target that stopped its own turn on a limit says so in `finish_reason`
    (`budget:tool_calls=3`: the tool agent stops at the test's tool-call budget). A limit the
    target gives no measure of (tokens without usage, cost without prices) raises
    `ControlError`: a budget that cannot be checked is never a pass.
    """
    if reply.finish_reason and reply.finish_reason.startswith("budget:"):
        return f"{reply.finish_reason.removeprefix('budget:')} at turn {number}"
    if budget is None:
        return None
    scopes = [(budget.turn, [reply], ""), (budget.conversation, replies, " per conversation")]
    for limits, played, scope in scopes:
        if limits is None:
            continue
        for name, used in _USED.items():
            limit = getattr(limits, name)
            if limit is None:
                continue
            values = [used(r) for r in played]
            if None in values:
                raise ControlError(f"budget {name}{scope} cannot be checked: {_UNMEASURED[name]}")
            if sum(v for v in values if v is not None) > limit:
                return f"{name}={limit:g}{scope} at turn {number}"
    return None
