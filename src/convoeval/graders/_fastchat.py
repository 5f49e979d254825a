"""`mt-bench-judge`: MT-Bench's single-answer grading with FastChat's own judge prompts, as written.

`prompt` is one record of FastChat's `fastchat/llm_judge/data/judge_prompts.jsonl` (a
`single` prompt whose `output_format` is `[[rating]]`: `single-v1`, `single-math-v1` and their
`-multi-turn` variants). Its `system_prompt` and `prompt_template` are sent unchanged, the
template filled as FastChat fills it (`str.format` with `question`, `answer`, `ref_answer_1`,
or, for the multi-turn variants, `question_1`, `answer_1`, `question_2`, `answer_2`,
`ref_answer_1`, `ref_answer_2`): the questions and answers are the conversation's first two
user messages and replies, the references are `references` (judge only). No JSON format is
imposed; the rating is read from the answer as FastChat reads it (`[[N]]`, else `[N]`; decimals
such as `[[7.5]]` too) and the score is N / 10. An answer without a rating is not asked again, as
FastChat asks once and records -1, which `show_result.py` leaves out: it is a grader error, which
`report`'s `turns mean` leaves out. A rating outside the prompts' 1-10 scale (`[[0]]`, `[[15]]`)
is a grader error too (FastChat would average it in): it is never clamped into a score.

Example (YAML, on the second turn of an MT-Bench test):
    assertions:
      - type: mt-bench-judge
        prompt: {name: single-math-v1-multi-turn, type: single, system_prompt: "...",
                 prompt_template: "...", output_format: "[[rating]]"}
        references: ["first reference answer", "second reference answer"]
"""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from pathlib import Path
from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from .._base_model import Model
from .._jsonl import JsonlError, as_int
from ..judging import GradingLevel, JudgeOutputError
from ..results import AssertionOutcome, meets
from ._base import Grade, GradeContext, GraderError, JudgedAssertion, assertion_type
from ._llm import judge_session, pass_mark

#: FastChat's patterns for a rating (`one_score_pattern`, then `one_score_pattern_backup`):
#: digits with an optional decimal part, so no sign (`[[-3]]` holds no rating).
RATING = re.compile(r"\[\[(\d+\.?\d*)\]\]")
RATING_BACKUP = re.compile(r"\[(\d+\.?\d*)\]")
#: The scale of FastChat's `single` judge prompts ("a scale of 1 to 10").
LOWEST, HIGHEST = 1.0, 10.0
MAX_EVIDENCE = 2000  # the end of the judge's explanation, where the rating is
FIELDS = frozenset(
    {"question", "answer", "ref_answer_1", "question_1", "answer_1", "question_2", "answer_2", "ref_answer_2"}
)


#: Categories FastChat grades against a reference answer (its NEED_REF_CATS; arena-hard-200 is
#: FastChat's other question set).
REFERENCE_CATEGORIES = ("math", "reasoning", "coding", "arena-hard-200")


def reference_answers(records: Iterable[tuple[int, object]], path: Path) -> dict[int, list[str]]:
    """FastChat's reference answers (`reference_answer/gpt-4.jsonl`: `{question_id, choices:
    [{turns: [...]}]}` a line), read from `records` (`(line, record)` of `path`), by question id.

    Raises:
        JsonlError: a record without a question id or `choices[0].turns` (`file:line: what`).
    """
    references: dict[int, list[str]] = {}
    for line, record in records:
        fields = record if isinstance(record, dict) else {}
        choices = fields.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        turns = first.get("turns") if isinstance(first, dict) else None
        qid = as_int(fields.get("question_id"))
        if qid is None or not isinstance(turns, list):
            raise JsonlError(f"{path}:{line}: expected question_id and choices[0].turns")
        references[qid] = [str(t) for t in turns]
    return references


class JudgePrompt(Model):
    """One record of FastChat's judge_prompts.jsonl (other keys are kept, unused)."""

    model_config = ConfigDict(extra="allow")

    name: str
    type: Literal["single"] = "single"
    system_prompt: str = ""
    prompt_template: str
    output_format: Literal["[[rating]]"] = "[[rating]]"


def parse_rating(text: str) -> float:
    """The rating of a FastChat-style judge answer (FastChat's patterns, in its order).

    Raises:
        JudgeOutputError: no `[[N]]` (nor `[N]`) in the answer, or N is outside 1-10.
    """
    match = RATING.search(text) or RATING_BACKUP.search(text)
    if match is None:
        raise JudgeOutputError('no rating in the format "[[rating]]", for example "Rating: [[5]]"')
    rating = float(match.group(1))
    if not LOWEST <= rating <= HIGHEST:
        raise JudgeOutputError(
            f"the rating {match.group(1)} is outside the scale of {LOWEST:g} to {HIGHEST:g}; "
            'rate on that scale, for example "Rating: [[5]]"'
        )
    return rating


def template_fields(template: str) -> set[str]:
    """The `{names}` a FastChat template is filled with."""
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


@assertion_type
class MTBenchJudge(JudgedAssertion):
    """A judge rates the answer 1-10 with one of FastChat's MT-Bench prompts, sent as written."""

    type: Literal["mt-bench-judge"] = "mt-bench-judge"
    prompt: JudgePrompt = Field(description="A `single` record of FastChat's judge_prompts.jsonl.")
    references: list[str] = Field(
        default_factory=list, description="Reference answers to the first and second question (judge only)."
    )

    levels: ClassVar[tuple[GradingLevel, ...]] = ("turn",)

    def template_problems(self, known: frozenset[str]) -> list[tuple[str, str]]:
        try:
            unknown = template_fields(self.prompt.prompt_template) - FIELDS
        except ValueError as exc:
            return [("prompt.prompt_template", f"not a FastChat template: {exc}")]
        if unknown:
            return [("prompt.prompt_template", f"unknown fields {sorted(unknown)} (FastChat's: {sorted(FIELDS)})")]
        if (
            any(f.startswith("ref_answer") for f in template_fields(self.prompt.prompt_template))
            and not self.references
        ):
            return [("references", f"{self.prompt.name} compares with reference answers: give `references`")]
        return []

    def _values(self, ctx: GradeContext) -> dict[str, str]:
        questions = [m.content for m in ctx.transcript if m.role == "user"]
        answers = [m.content for m in ctx.transcript if m.role == "assistant"]
        if not questions or not answers:
            raise GraderError("mt-bench-judge needs a question and an answer")
        refs = [*self.references, "", ""]
        return {
            "question": questions[0],
            "answer": answers[0],
            "question_1": questions[0],
            "answer_1": answers[0],
            "question_2": questions[1] if len(questions) > 1 else "",
            "answer_2": answers[1] if len(answers) > 1 else "",
            "ref_answer_1": refs[0],
            "ref_answer_2": refs[1],
        }

    async def grade(self, ctx: GradeContext) -> Grade:
        values = self._values(ctx)
        if "question_2" in template_fields(self.prompt.prompt_template) and not values["answer_2"]:
            raise GraderError(f"{self.prompt.name} judges the second answer: grade it on the second turn")
        messages: list[dict[str, str]] = []
        if self.prompt.system_prompt:
            messages.append({"role": "system", "content": self.prompt.system_prompt})
        messages.append({"role": "user", "content": self.prompt.prompt_template.format(**values)})
        session = judge_session(ctx)

        def judgment(text: str) -> tuple[float, str]:
            try:
                return parse_rating(text), text
            except JudgeOutputError as exc:  # a JudgeError: FastChat's -1, not asked again
                raise session.error(f"{self.prompt.name}: {exc}; the answer: {text[-200:]!r}") from None

        answers = await session.ask_repeated(messages, None, judgment, repeats=ctx.judge_repeats, name="mt_bench_judge")
        ratings = [rating for rating, _ in answers.values]
        score = sum(ratings) / len(ratings) / 10
        outcome = AssertionOutcome(
            text=f"{self.prompt.name}: FastChat judge prompt",
            passed=meets(score, pass_mark(self, ctx)),
            evidence=answers.values[0][1][-MAX_EVIDENCE:],
        )
        details: dict[str, object] = {
            "rating": ratings[0] if len(ratings) == 1 else ratings,
            "prompt": self.prompt.name,
        }
        if answers.errors:
            details["repeat_errors"] = answers.errors
        return Grade.judged(session, score, [outcome], details)
