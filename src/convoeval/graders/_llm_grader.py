"""`llm-grader`: a judge model scores the reply (or the conversation) against a prompt or criteria."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from pydantic import (
    Field,
)

from .._jsonl import read_problem
from .._paths import confined_file
from .._templates import TemplateProblem, check_template, render
from ..judging import (
    default_grader_messages,
    grader_messages,
    grader_parser,
    grader_schema,
    repeat_summary,
)
from ..results import AssertionOutcome, meets
from ._base import Grade, GradeContext, GraderError, JudgedAssertion, assertion_type
from ._llm import _mean, judge_session, pass_mark, subject_for
from ._prompt_command import PromptCommand


@assertion_type
class LLMGrader(JudgedAssertion):
    """A judge scores the reply (or the conversation) 0-10 (normalised to 0-1).

    `prompt` is inline Jinja2 text or `file://path` (relative to the eval file's folder) with
    `{{ input }}`, `{{ output }}`, `{{ criteria }}`, `{{ expected_output }}` (and AgentV's names
    for them) and captured variables. An inline prompt without `{{ }}` is criteria text, judged
    with the default grading prompt (as AgentV does); a bare path is inline text too. Without a prompt, the
    judge compares the reply with the expected output and/or the criteria. The judge always
    answers `{"reasoning": str, "score": int 0-10}`.
    """

    type: Literal["llm-grader"]
    prompt: str | PromptCommand | None = Field(
        None, description="Jinja2 prompt text, file://relative/path, or {command, config}: a program printing it."
    )
    criteria: str | None = Field(None, description="Overrides the test's criteria.")
    expected_output: str | None = Field(None, description="Overrides the turn's expected_output.")
    temperature: float | None = Field(
        None, ge=0, description="The judge's temperature for this grader (AgentV); default the run's (0)."
    )

    def _prompt_file(self) -> str | None:
        """The path of a `file://` prompt; any other prompt is inline text (as in AgentV >= 4.6)."""
        prompt = self.prompt.strip() if isinstance(self.prompt, str) else ""
        return prompt[len("file://") :] if prompt.startswith("file://") else None

    @property
    def prompt_is_criteria(self) -> bool:
        """An inline prompt without template syntax is AgentV's criteria text: it goes inside
        the default grading prompt, with the conversation and the reply."""
        prompt = self.prompt if isinstance(self.prompt, str) else ""
        return bool(prompt.strip()) and self._prompt_file() is None and "{{" not in prompt and "{%" not in prompt

    def path_like_prompt(self, base_dir: Path) -> str | None:
        """The prompt, when it is one word naming an existing file (it is still sent as text)."""
        if (
            not self.prompt_is_criteria
            or not isinstance(self.prompt, str)
            or any(c.isspace() for c in self.prompt.strip())
        ):
            return None
        prompt = self.prompt.strip()
        return prompt if os.path.isfile(base_dir / prompt) else None  # a name too long is text

    def template_problems(self, known: frozenset[str]) -> list[tuple[str, str]]:
        if not isinstance(self.prompt, str) or not self.prompt or self._prompt_file() is not None:
            return []
        problem = check_template(self.prompt, known)
        return [("prompt", problem)] if problem else []

    def file_problems(self, base_dir: Path) -> list[tuple[str, str]]:
        if isinstance(self.prompt, PromptCommand):
            missing = self.prompt.missing_file(base_dir)
            return [("prompt.command", missing)] if missing else []
        relative = self._prompt_file()
        if relative is None:
            return []
        try:
            confined_file(relative, base_dir).read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError) as exc:  # not UTF-8 text (a ValueError too), unreadable
            return [("prompt", read_problem(Path(relative), exc))]
        except ValueError as exc:  # outside the suite's folder, no such file
            return [("prompt", str(exc))]
        return []

    def _load_prompt(self, ctx: GradeContext) -> str:
        assert isinstance(self.prompt, str)
        relative = self._prompt_file()
        if relative is None:
            return self.prompt
        try:
            return confined_file(relative, ctx.base_dir).read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise GraderError(f"prompt file {read_problem(Path(relative), exc)}") from None
        except ValueError as exc:
            if str(exc).endswith("no such file"):
                raise GraderError(
                    f"prompt file {relative!r} cannot be read (no such file); "
                    "paths are relative to the eval file's folder"
                ) from None
            raise GraderError(f"prompt file: {exc}") from None
        except OSError as exc:
            raise GraderError(
                f"prompt file {relative!r} cannot be read ({exc.strerror or exc}); "
                "paths are relative to the eval file's folder"
            ) from None

    async def grade(self, ctx: GradeContext) -> Grade:
        assert ctx.judge is not None
        criteria = self.criteria if self.criteria is not None else ctx.criteria
        expected = self.expected_output if self.expected_output is not None else ctx.expected_output
        if isinstance(self.prompt, PromptCommand):  # AgentV's executable prompt template
            messages = grader_messages(await self.prompt.render(ctx, criteria, expected))
            what = f"{self.name or 'llm-grader'}: prompt from `{' '.join(self.prompt.command)}`"
        elif self.prompt_is_criteria:
            assert isinstance(self.prompt, str)
            criteria = self.prompt.strip()
            messages = default_grader_messages(subject_for(ctx, expected_output=expected, criteria=criteria))
            what = _default_outcome(expected, criteria, ctx.level)
        elif self.prompt:
            variables = {
                **ctx.template_vars(),
                "criteria": criteria or "",
                "expected_outcome": criteria or "",
                "expected_output": expected or "",
                "expected_output_text": expected or "",
                "reference_answer": expected or "",
            }
            try:
                text = render(self._load_prompt(ctx), variables)
            except TemplateProblem as exc:
                raise GraderError(f"prompt: {exc}") from None
            messages = grader_messages(text)
            what = f"{self.name or 'llm-grader'}: judge prompt"
        else:
            messages = default_grader_messages(subject_for(ctx, expected_output=expected, criteria=criteria))
            what = _default_outcome(expected, criteria, ctx.level)
        session = judge_session(ctx)
        if self.temperature is not None:
            session.temperature = self.temperature
        answers = await session.ask_repeated(
            messages, grader_schema(), grader_parser(), repeats=ctx.judge_repeats, name="llm_grader"
        )
        raw = [a.score for a in answers.values]
        score = _mean([r / 10 for r in raw])
        first = answers.values[0]
        evidence = f"{first.score}/10: {first.reasoning}"
        if len(raw) > 1:
            evidence += f" [scores over {len(raw)} repeats: {', '.join(map(str, raw))}]"
        details: dict[str, object] = {"judge_score": raw[0] if len(raw) == 1 else raw, "scale": "0-10"}
        if answers.count > 1:
            details.update(repeat_summary([r / 10 for r in raw]))
        if answers.errors:
            details["repeat_errors"] = answers.errors
        outcome = AssertionOutcome(text=what, passed=meets(score, pass_mark(self, ctx)), evidence=evidence)
        return Grade.judged(session, score, [outcome], details)


def _default_outcome(expected: str | None, criteria: str | None, level: str) -> str:
    subject = "conversation" if level == "conversation" else "reply"
    if expected and criteria:
        return f"{subject} matches the expected output and meets: {criteria.strip()}"
    if expected:
        return f"{subject} matches the expected output"
    if criteria:
        return f"{subject} meets: {criteria.strip()}"
    return f"{subject} is correct, relevant and helpful"
