"""MT-Bench's pairwise grading as FastChat does it, for the arena (`--judge-prompts`).

FastChat (`fastchat/llm_judge/common.py`: `make_match`, `run_judge_pair`, `play_a_match_pair`)
judges each pair of models on each question twice, once per turn: the first turn with
`pair-v2`, the second with `pair-v2-multi-turn` (both questions and both answers shown); the
questions of its reference categories (NEED_REF_CATS: math, reasoning, coding, arena-hard-200)
with `pair-math-v1` and `pair-math-v1-multi-turn`, the GPT-4 reference answers filled in. Each
match is judged in both orders. The prompts are sent as written: the system prompt, then the
template filled by `str.format`; the judgment is read by `convoeval.judging.fastchat_label`.
A match with an order the judge left without a label is no battle (FastChat's show_result.py
drops it); orders that disagree, or a tie, are a tie (FastChat's rule, and the arena's).

The questions and answers are each conversation's user messages and replies; the category
and FastChat's `question_id` come from the results' metadata (what `convoeval import mt-bench`
writes), the references from the suite's `mt-bench-judge` checks, else from FastChat's
reference answers file (`--references`).
"""

from __future__ import annotations

import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .._jsonl import JsonlError, as_int, read_jsonl
from ..errors import ConfigError
from ..graders._fastchat import REFERENCE_CATEGORIES, reference_answers
from ..results import EvaluationResult

#: The pairwise prompts of each kind of question, for turn 1 and turn 2.
PAIR_PROMPTS = {False: ("pair-v2", "pair-v2-multi-turn"), True: ("pair-math-v1", "pair-math-v1-multi-turn")}
#: The fields FastChat fills its pairwise templates with.
FIELDS = frozenset(
    {"question", "answer_a", "answer_b", "ref_answer_1", "ref_answer_2"}
    | {"question_1", "question_2", "answer_a_1", "answer_b_1", "answer_a_2", "answer_b_2"}
)


@dataclass(frozen=True)
class PairPrompt:
    """A pairwise record of FastChat's judge_prompts.jsonl."""

    name: str
    system_prompt: str
    prompt_template: str


@dataclass(frozen=True)
class FastChatPairwise:
    """FastChat's pairwise prompts (by name) and reference answers (by question id)."""

    prompts: Mapping[str, PairPrompt]
    references: Mapping[int, Sequence[str]] = field(default_factory=dict)

    @classmethod
    def load(cls, judge_prompts: str | Path, references: str | Path | None = None) -> FastChatPairwise:
        """Read FastChat's judge_prompts.jsonl (and reference answers, FastChat's
        `reference_answer/gpt-4.jsonl`). Raises ConfigError (`file:line: what is wrong`)."""
        try:
            prompts = _pair_prompts(Path(judge_prompts))
            path = Path(references) if references is not None else None
            refs = reference_answers(read_jsonl(path, objects=True), path) if path is not None else {}
        except JsonlError as exc:
            raise ConfigError(str(exc)) from None
        return cls(prompts, refs)

    def matches(
        self, first: EvaluationResult, second: EvaluationResult, references: Sequence[str] | None
    ) -> tuple[list[list[dict[str, str]]], list[list[dict[str, str]]]] | str:
        """The judge's messages of each turn's match (turn 1, then turn 2 when both conversations
        have it), in `first`-as-A order and in `second`-as-A order; or why the pair cannot be
        judged FastChat's way. `references`: the test's reference answers, if it has any."""
        metadata = first.metadata or second.metadata
        needs_reference = metadata.get("category") in REFERENCE_CATEGORIES
        qid = as_int(metadata.get("question_id"))
        refs = list(references or (self.references.get(qid, ()) if qid is not None else ()))
        if needs_reference and not refs:
            return (
                f"a {metadata.get('category')} question is judged against its reference answers: "
                "give FastChat's reference answers (--references) or judge the imported suite"
            )
        questions, answers_a, answers_b = _said(first, "user"), _said(first, "assistant"), _said(second, "assistant")
        turns = min(2, len(questions), len(answers_a), len(answers_b))
        if turns == 0:
            return "no answered question to judge"
        names = PAIR_PROMPTS[needs_reference]
        orders: tuple[list[list[dict[str, str]]], list[list[dict[str, str]]]] = ([], [])
        for turn in range(1, turns + 1):
            prompt = self.prompts[names[turn - 1]]
            for order, (a, b) in zip(orders, ((answers_a, answers_b), (answers_b, answers_a)), strict=True):
                values = _values(questions, a, b, refs, turn)
                messages = [{"role": "system", "content": prompt.system_prompt}] if prompt.system_prompt else []
                messages.append({"role": "user", "content": prompt.prompt_template.format(**values)})
                order.append(messages)
        return orders


def _said(result: EvaluationResult, role: str) -> list[str]:
    return [m.content for m in result.output if m.role == role]


def _values(questions: list[str], a: list[str], b: list[str], refs: list[str], turn: int) -> dict[str, str]:
    """The fields of FastChat's pairwise templates (`run_judge_pair`): one turn's, or both
    turns' for the multi-turn prompts; `str.format` ignores the ones a template leaves out."""
    refs = [*refs, "", ""]
    if turn == 1:
        return {"question": questions[0], "answer_a": a[0], "answer_b": b[0], "ref_answer_1": refs[0]}
    return {
        "question_1": questions[0],
        "question_2": questions[1],
        "answer_a_1": a[0],
        "answer_b_1": b[0],
        "answer_a_2": a[1],
        "answer_b_2": b[1],
        "ref_answer_1": refs[0],
        "ref_answer_2": refs[1],
    }


def _pair_prompts(path: Path) -> dict[str, PairPrompt]:
    """The `[[A]]` pairwise prompts of FastChat's judge_prompts.jsonl, by name."""
    prompts: dict[str, PairPrompt] = {}
    for line, record in read_jsonl(path, objects=True):
        assert isinstance(record, dict)
        if record.get("type") != "pairwise" or record.get("output_format") != "[[A]]":
            continue  # single-answer prompts, and the "[[rating_a,rating_b]]" ones MT-Bench does not use
        name, system, template = record.get("name"), record.get("system_prompt"), record.get("prompt_template")
        if not (isinstance(name, str) and isinstance(system, str) and isinstance(template, str)):
            raise ConfigError(f"{path}:{line}: a FastChat judge prompt has name, system_prompt and prompt_template")
        try:
            unknown = {f for _, f, _, _ in string.Formatter().parse(template) if f} - FIELDS
        except ValueError as exc:
            raise ConfigError(f"{path}:{line}: prompt_template: not a str.format template: {exc}") from None
        if unknown:
            raise ConfigError(
                f"{path}:{line}: prompt_template: unknown fields {sorted(unknown)} (FastChat's: {sorted(FIELDS)})"
            )
        prompts[name] = PairPrompt(name, system, template)
    missing = [n for names in PAIR_PROMPTS.values() for n in names if n not in prompts]
    if missing:
        raise ConfigError(
            f"{path}: no pairwise judge prompt named {missing[0]!r} (is it FastChat's judge_prompts.jsonl?)"
        )
    return prompts
