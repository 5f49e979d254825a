"""MT-Bench (FastChat `llm_judge`): 80 two-turn questions as a conversation suite.

Input: FastChat's `question.jsonl` (`question_id`, `category`, `turns[2]`, optional
`reference`) and, for the categories MT-Bench grades against a reference (math, reasoning,
coding), the GPT-4 reference answers (`reference_answer/gpt-4.jsonl`: `question_id`,
`choices[0].turns[2]`), found beside the questions or given explicitly.

Output: one `mode: conversation` test per question; each turn is graded by an `llm-grader`
with a single-answer 1-10 prompt in the shape of MT-Bench's (`single-v1`, `single-math-v1`
and their multi-turn variants: the second turn is judged on the whole two-turn conversation,
focused on the second answer). References are the turns' `expected_output`, which only the
judge sees; the second question goes to the target after its own live first answer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..errors import DatasetError
from ._common import read_jsonl

#: Categories MT-Bench grades against a reference answer (FastChat's NEED_REF_CATS).
REFERENCE_CATEGORIES = ("math", "reasoning", "coding")
REFERENCE_NAMES = ("reference_answer_gpt-4.jsonl", "reference_answer/gpt-4.jsonl", "gpt-4.jsonl")

_SCALE = (
    "Rate the answer from 1 (very poor) to 10 (excellent). Explain briefly first, in the reasoning, "
    "then give the rating as the score."
)
GENERAL = """You are an impartial judge of an AI assistant's answer to the user's question below. \
Weigh how helpful, relevant, accurate, deep, creative and detailed the answer is, and stay objective. \
{scale}

[Question]
{{{{ input }}}}

[Assistant's answer]
{{{{ output }}}}"""
WITH_REFERENCE = """You are an impartial judge of an AI assistant's answer to the user's question below. \
Judge correctness and helpfulness: compare the answer with the reference answer, and find and correct \
its mistakes before rating. {scale}

[Question]
{{{{ input }}}}

[Reference answer]
{{{{ expected_output }}}}

[Assistant's answer]
{{{{ output }}}}"""
GENERAL_SECOND = """You are an impartial judge of an AI assistant in a two-turn conversation. Weigh how \
helpful, relevant, accurate, deep, creative and detailed its answers are, focusing on its answer to the \
SECOND user question, and stay objective. {scale}

[Conversation]
{{{{ input }}}}

[Assistant's answer to the second question]
{{{{ output }}}}"""
WITH_REFERENCE_SECOND = """You are an impartial judge of an AI assistant in a two-turn conversation. \
Judge correctness and helpfulness of its answer to the SECOND user question: compare it with the \
reference answers, and find and correct its mistakes before rating. {scale}

[Reference answers]
{{{{ expected_output }}}}

[Conversation]
{{{{ input }}}}

[Assistant's answer to the second question]
{{{{ output }}}}"""


def _prompt(template: str) -> str:
    return template.format(scale=_SCALE)


def import_mt_bench(source: Path, *, references: Path | None = None) -> dict[str, Any]:
    """The MT-Bench suite (a plain dict, ready to write as YAML).

    Args:
        source: `question.jsonl`.
        references: the GPT-4 reference answers; default: a known file name beside `source`.

    Raises:
        DatasetError: a file is missing or a record is malformed (file:line: what is wrong).
    """
    questions = read_jsonl(source)
    ref_path = references or next((source.parent / n for n in REFERENCE_NAMES if (source.parent / n).is_file()), None)
    refs: dict[int, list[str]] = {}
    if ref_path is not None:
        for line, record in read_jsonl(ref_path):
            try:
                refs[int(record["question_id"])] = [str(t) for t in record["choices"][0]["turns"]]
            except (KeyError, IndexError, TypeError, ValueError):
                raise DatasetError(f"{ref_path}:{line}: expected question_id and choices[0].turns") from None
    tests = []
    for line, record in questions:
        try:
            qid, category, turns = int(record["question_id"]), str(record["category"]), record["turns"]
        except (KeyError, TypeError, ValueError):
            raise DatasetError(f"{source}:{line}: expected question_id, category and turns") from None
        if not isinstance(turns, list) or len(turns) != 2 or not all(isinstance(t, str) and t.strip() for t in turns):
            raise DatasetError(f"{source}:{line}: turns: expected two non-empty questions")
        reference = (refs.get(qid) or record.get("reference")) if category in REFERENCE_CATEGORIES else None
        tests.append(_test(qid, category, turns, reference))
    return {
        "name": "mt-bench",
        "description": "MT-Bench: 80 two-turn questions, each answer rated 1-10 by a judge "
        "(references for math, reasoning and coding go to the judge only)",
        "metadata": {
            "source": str(source.name),
            "imported_by": "convoeval import mt-bench",
            "paper": "Zheng et al. 2023, arXiv:2306.05685",
            "licence": "Apache-2.0 (FastChat)",
        },
        "tests": tests,
    }


def _test(qid: int, category: str, turns: list[str], reference: list[str] | None) -> dict[str, Any]:
    first: dict[str, Any] = {"input": turns[0]}
    second: dict[str, Any] = {"input": turns[1]}
    if reference:
        first["expected_output"] = reference[0]
        second["expected_output"] = (
            f"Reference answer to the first question:\n{reference[0]}\n\n"
            f"Reference answer to the second question:\n{reference[1] if len(reference) > 1 else ''}"
        )
    first["assertions"] = [_grader("mt-bench-turn-1", WITH_REFERENCE if reference else GENERAL)]
    second["assertions"] = [_grader("mt-bench-turn-2", WITH_REFERENCE_SECOND if reference else GENERAL_SECOND)]
    return {
        "id": f"mt-bench-{qid}",
        "mode": "conversation",
        "metadata": {"question_id": qid, "category": category},
        "turns": [first, second],
    }


def _grader(name: str, template: str) -> dict[str, Any]:
    return {"type": "llm-grader", "name": name, "prompt": _prompt(template)}
