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

With `judge_prompts` (the user's copy of FastChat's `judge_prompts.jsonl`), each turn is
graded by `mt-bench-judge` with FastChat's own prompts, as written (`single-v1` on the first
turn, `single-v1-multi-turn` on the second; the `single-math-v1` pair with the references for
math, reasoning and coding, as FastChat does), its `[[rating]]` answers parsed as FastChat
parses them. Each prompt is written once in the suite and referred to by YAML aliases.

The answers are asked for as FastChat's `gen_api_answer.py` asks an API model for them: each
test carries its category's temperature (`temperature_config` of `fastchat/llm_judge/common.py`,
or the question's own `required_temperature`) and the suite FastChat's default `max_tokens`,
1024; the suite's input is the system message of FastChat's `chatgpt` conversation template
(the one its OpenAI models use), "You are a helpful assistant.". FastChat takes the system
message from each model's template (none for Claude, Llama 2's own...): for such a model, edit
the suite's `input`.
"""

from __future__ import annotations

from pathlib import Path

from .._jsonl import JsonlError, as_int
from ..errors import DatasetError
from ..graders._fastchat import REFERENCE_CATEGORIES, reference_answers
from ._common import JsonObject, as_list, read_jsonl
from ._suite_types import Suite, SuiteTest, Turn

#: FastChat's `temperature_config` (fastchat/llm_judge/common.py): the sampling temperature of
#: each category's answers; other categories get 0.7, as in its gen_api_answer.py.
TEMPERATURES = {
    "writing": 0.7,
    "roleplay": 0.7,
    "extraction": 0.0,
    "math": 0.0,
    "coding": 0.0,
    "reasoning": 0.0,
    "stem": 0.1,
    "humanities": 0.1,
    "arena-hard-200": 0.0,
}
DEFAULT_TEMPERATURE = 0.7
#: gen_api_answer.py's `--max-tokens` (and gen_model_answer.py's `--max-new-token`) default.
MAX_TOKENS = 1024
#: The system message of FastChat's `chatgpt` conversation template (fastchat/conversation.py),
#: which its OpenAI models (gpt-3.5-turbo, gpt-4) answer MT-Bench under.
SYSTEM_MESSAGE = "You are a helpful assistant."

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


def import_mt_bench(source: Path, *, references: Path | None = None, judge_prompts: Path | None = None) -> Suite:
    """The MT-Bench suite (a plain dict, ready to write as YAML).

    Args:
        source: `question.jsonl`.
        references: the GPT-4 reference answers; default: a known file name beside `source`.
        judge_prompts: FastChat's judge_prompts.jsonl, to judge with its prompts as written.

    Raises:
        DatasetError: a file is missing or a record is malformed (file:line: what is wrong).
    """
    questions = read_jsonl(source)
    ref_path = references or next((source.parent / n for n in REFERENCE_NAMES if (source.parent / n).is_file()), None)
    try:
        refs = reference_answers(read_jsonl(ref_path), ref_path) if ref_path is not None else {}
    except JsonlError as exc:
        raise DatasetError(str(exc)) from None
    prompts = read_judge_prompts(judge_prompts) if judge_prompts is not None else None
    tests = []
    for line, record in questions:
        qid = as_int(record.get("question_id"))
        if qid is None or "category" not in record or "turns" not in record:
            raise DatasetError(f"{source}:{line}: expected question_id, category and turns")
        category = str(record["category"])
        turns = [t for t in as_list(record["turns"]) if isinstance(t, str) and t.strip()]
        if not isinstance(record["turns"], list) or len(record["turns"]) != 2 or len(turns) != 2:
            raise DatasetError(f"{source}:{line}: turns: expected two non-empty questions")
        reference = (
            (refs.get(qid) or _own_reference(record, source, line)) if category in REFERENCE_CATEGORIES else None
        )
        missing = [n for n in ("single-math-v1", "single-math-v1-multi-turn") if n not in (prompts or {})]
        if prompts is not None and reference and missing:
            raise DatasetError(f"{judge_prompts}:1: no judge prompt named {missing[0]!r} (for {category} questions)")
        test = _test(qid, category, turns, reference, prompts)
        test["execution"] = {"temperature": _temperature(record, category, source, line)}
        tests.append(test)
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
        "input": [{"role": "system", "content": SYSTEM_MESSAGE}],
        "execution": {"max_tokens": MAX_TOKENS},
        "tests": tests,
    }


def _temperature(record: JsonObject, category: str, source: Path, line: int) -> float:
    """The answers' sampling temperature, as gen_api_answer.py picks it: the question's
    `required_temperature`, else its category's, else 0.7."""
    given = record.get("required_temperature")
    if given is None:
        return TEMPERATURES.get(category, DEFAULT_TEMPERATURE)
    if isinstance(given, bool) or not isinstance(given, int | float) or not 0 <= given <= 2:
        raise DatasetError(f"{source}:{line}: required_temperature: expected a number from 0 to 2, got {given!r:.40}")
    return float(given)


def _own_reference(record: JsonObject, source: Path, line: int) -> list[str] | None:
    """The question's own `reference` answers (FastChat's question.jsonl has them for some)."""
    reference = record.get("reference")
    if reference is not None and not isinstance(reference, list):
        raise DatasetError(f"{source}:{line}: reference: expected a list of reference answers")
    return [str(r) for r in reference] if reference else None


def read_judge_prompts(path: Path) -> dict[str, JsonObject]:
    """FastChat's single-answer judge prompts by name (`single-v1`, ...), as written.

    Raises:
        DatasetError: the file is missing, or lacks `single-v1` / `single-v1-multi-turn`, or a
            single prompt's fields are not FastChat's.
    """
    prompts: dict[str, JsonObject] = {}
    for line, record in read_jsonl(path):
        if record.get("type") != "single":
            continue  # pairwise prompts: MT-Bench's single-answer grading does not use them
        name, output_format = record.get("name"), record.get("output_format")
        fields = ("name", "system_prompt", "prompt_template", "output_format")
        if not isinstance(name, str) or not all(isinstance(record.get(k), str) for k in fields):
            raise DatasetError(
                f"{path}:{line}: a FastChat judge prompt has name, system_prompt, prompt_template, output_format"
            )
        if output_format != "[[rating]]":
            raise DatasetError(f"{path}:{line}: output_format {output_format!r}: only '[[rating]]' is read")
        prompts[name] = {k: record[k] for k in ("name", "type", *fields[1:])}
    for name in ("single-v1", "single-v1-multi-turn"):
        if name not in prompts:
            raise DatasetError(
                f"{path}:1: no single-answer judge prompt named {name!r} (is it FastChat's judge_prompts.jsonl?)"
            )
    return prompts


def _test(
    qid: int,
    category: str,
    turns: list[str],
    reference: list[str] | None,
    prompts: dict[str, JsonObject] | None = None,
) -> SuiteTest:
    first: Turn = {"input": turns[0]}
    second: Turn = {"input": turns[1]}
    if reference:
        first["expected_output"] = reference[0]
        second["expected_output"] = (
            f"Reference answer to the first question:\n{reference[0]}\n\n"
            f"Reference answer to the second question:\n{reference[1] if len(reference) > 1 else ''}"
        )
    if prompts is not None:
        kind = "single-math-v1" if reference else "single-v1"
        refs: JsonObject = {"references": [*reference]} if reference else {}
        first["assertions"] = [{"type": "mt-bench-judge", "name": "mt-bench-turn-1", "prompt": prompts[kind], **refs}]
        second["assertions"] = [
            {"type": "mt-bench-judge", "name": "mt-bench-turn-2", "prompt": prompts[f"{kind}-multi-turn"], **refs}
        ]
    else:
        first["assertions"] = [_grader("mt-bench-turn-1", WITH_REFERENCE if reference else GENERAL)]
        second["assertions"] = [_grader("mt-bench-turn-2", WITH_REFERENCE_SECOND if reference else GENERAL_SECOND)]
    return {
        "id": f"mt-bench-{qid}",
        "mode": "conversation",
        "metadata": {"question_id": qid, "category": category},
        "turns": [first, second],
    }


def _grader(name: str, template: str) -> JsonObject:
    return {"type": "llm-grader", "name": name, "prompt": _prompt(template)}
