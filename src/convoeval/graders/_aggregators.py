"""How a `composite` combines its nested assertions: `weighted_average`, `threshold`, and
AgentV's `code_judge` (a program decides) and `llm_judge` (the judge decides).

Both deciders get the nested results by name, as AgentV sends them (`graders/composite.ts`,
v4.15 to main: each result's `assertions`), with the older `hits` / `misses` beside them:

    {"results": {"safety": {"type", "score", "verdict", "assertions": [{"text", "passed", "evidence"?}],
                            "hits": [...], "misses": [...], "reasoning"}}}

A `code_judge` program reads that JSON on stdin and prints `{"score": 0..1, "verdict"?,
"assertions"?, "hits"?, "misses"?, "reasoning"?}`; an `llm_judge` prompt gets it where it writes
`{{EVALUATOR_RESULTS_JSON}}` (appended when it does not). A decider that fails is a grader
error, never a score.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Literal, TypedDict

from pydantic import AliasChoices, ConfigDict, Field, field_validator, model_validator

from .._base_model import Model
from .._secrets import scrubbed_env
from .._text import shorten
from ..judging import JudgeSession, grader_messages, grader_parser, grader_schema
from ..results import AssertionOutcome, GraderScore, Verdict, meets
from ._base import Grade, GradeContext, GraderError
from ._code import grade_from_json, parse_program_json, run_program, split_command, stderr_note

AggregatorType = Literal["weighted_average", "threshold", "code_judge", "llm_judge"]
_RESULTS = "{{EVALUATOR_RESULTS_JSON}}"
_DEFAULT_PROMPT = (
    f"Review the following evaluation results:\n{_RESULTS}\n\nDecide the final score based on all evaluator results."
)
#: Other names of aggregator types the loader reads (dashes are read as underscores too).
AGGREGATOR_ALIASES = {"code_grader": "code_judge", "llm_grader": "llm_judge", "weighted_mean": "weighted_average"}


class Aggregator(Model):
    """How a composite combines its nested assertions."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    type: AggregatorType = "weighted_average"
    weights: dict[str, float] = Field(default_factory=dict, description="Weight per nested name.")
    threshold: float | None = Field(None, ge=0, le=1)
    path: list[str] | str | None = Field(
        None,
        validation_alias=AliasChoices("path", "command"),
        description="code_judge: the program reading the nested results on stdin (a list, or a string split "
        "like a command line).",
    )
    cwd: str | None = Field(None, description="code_judge: working directory, relative to the eval file's folder.")
    timeout_s: float = Field(30.0, gt=0, description="code_judge: seconds before the program is killed.")
    prompt: str | None = Field(None, description="llm_judge: the judge prompt, with {{EVALUATOR_RESULTS_JSON}}.")

    @field_validator("type", mode="before")
    @classmethod
    def _spelling(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        name = value.replace("-", "_")
        return AGGREGATOR_ALIASES.get(name, name)

    @model_validator(mode="after")
    def _fields_of_type(self) -> Aggregator:
        if self.type == "code_judge" and not (self.path and split_command(self.path)):
            raise ValueError("a code_judge aggregator needs `path` (the program to run)")
        if self.type != "code_judge" and (self.path is not None or self.cwd is not None):
            raise ValueError("`path` and `cwd` belong to a code_judge aggregator")
        if self.type != "llm_judge" and self.prompt is not None:
            raise ValueError("`prompt` belongs to an llm_judge aggregator")
        return self

    @property
    def decides(self) -> bool:
        """Whether a program or the judge decides (rather than a formula)."""
        return self.type in ("code_judge", "llm_judge")

    async def decide(self, scores: list[GraderScore], ctx: GradeContext) -> Grade:
        """The composite's grade as the program or the judge decides it from `scores`."""
        results = {s.name: _result(s) for s in scores}
        if self.type == "code_judge":
            return await self._run_program(results, ctx)
        return await self._ask_judge(results, ctx)

    async def _run_program(self, results: dict[str, NestedResult], ctx: GradeContext) -> Grade:
        assert self.path is not None
        argv = split_command(self.path)
        shown = shorten(shlex.join(argv), 120)
        cwd = Path(ctx.base_dir) / (self.cwd or ".")
        if not cwd.is_dir():
            raise GraderError(f"code_judge aggregator working directory {str(cwd)!r} does not exist")
        payload = json.dumps({"results": results}, ensure_ascii=False, default=str).encode()
        what = "code_judge aggregator"
        stdout, err_text = await run_program(argv, shown, cwd, scrubbed_env(), payload, self.timeout_s, what)
        printed = parse_program_json(stdout, shown, stderr_note(err_text))
        verdict = printed.get("verdict")
        hits, misses = printed.get("hits") or [], printed.get("misses") or []
        given = printed.get("assertions") or []
        if not isinstance(hits, list) or not isinstance(misses, list) or not isinstance(given, list):
            raise GraderError(f"{what} `{shown}`: `assertions`, `hits` and `misses` must be lists")
        as_grader: dict[str, object] = {
            "score": printed.get("score"),
            "assertions": given
            + [{"text": str(h), "passed": True} for h in hits]
            + [{"text": str(m), "passed": False} for m in misses],
        }
        if verdict in ("pass", "fail"):
            as_grader["pass"] = verdict == "pass"
        if isinstance(printed.get("reasoning"), str):
            as_grader["reason"] = printed["reasoning"]
        return grade_from_json(as_grader, shown)

    async def _ask_judge(self, results: dict[str, NestedResult], ctx: GradeContext) -> Grade:
        if ctx.judge is None:
            raise GraderError("an llm_judge aggregator needs a judge (--judge)")
        text = json.dumps(results, ensure_ascii=False, indent=2, default=str)
        template = self.prompt if self.prompt is not None else _DEFAULT_PROMPT
        prompt = (
            template.replace(_RESULTS, text) if _RESULTS in template else f"{template}\n\nEvaluation results:\n{text}"
        )
        session = JudgeSession(ctx.judge, trial=ctx.trial, temperature=ctx.judge_temperature)
        answers = await session.ask_repeated(
            grader_messages(prompt), grader_schema(), grader_parser(), repeats=ctx.judge_repeats, name="aggregator"
        )
        raw = [a.score for a in answers.values]
        score = math.fsum(r / 10 for r in raw) / len(raw)
        first = answers.values[0]
        outcome = AssertionOutcome(
            text="llm_judge aggregator",
            passed=meets(score, ctx.threshold),
            evidence=f"{first.score}/10: {first.reasoning}",
        )
        return Grade.judged(session, score, [outcome], {"judge_score": raw[0] if len(raw) == 1 else raw})


class NestedResult(TypedDict):
    """One nested result as AgentV's deciders read it (`{"results": {name: NestedResult}}`)."""

    type: str
    score: float | None
    verdict: Verdict
    weight: float
    assertions: list[dict[str, object]]
    hits: list[str]
    misses: list[str]
    reasoning: str | None


def _result(score: GraderScore) -> NestedResult:
    """One nested result as AgentV's deciders read it."""
    reasoning = "; ".join(o.evidence for o in score.assertions if o.evidence) or score.error
    return {
        "type": score.type,
        "score": score.score,
        "verdict": score.verdict,
        "weight": score.weight,
        "assertions": [
            {"text": o.text, "passed": o.passed, **({"evidence": o.evidence} if o.evidence else {})}
            for o in score.assertions
        ],
        "hits": [o.text for o in score.assertions if o.passed],
        "misses": [o.text for o in score.assertions if not o.passed],
        "reasoning": reasoning,
    }
