"""Judging: structured judge calls, judge prompts, TD-Eval dimensions.

The LLM graders (`rubrics`, `llm-grader`, TD-Eval dimensions, conversation metrics) are thin
assertion classes in `convoeval.graders`; everything they share lives here:

- `JudgeSession`: one grader's judge calls: JSON Schema structured output, a strict pydantic
  parser, ONE re-ask on malformed output, K repeats, token and cost accounting.
- prompt builders and the JSON Schemas of their answers (criterion ids / dimension names as
  the object's keys).
- transcript formatting with turn numbers, backend results and domain policies.
- judge panels (`JudgePanel`, `combine`): several judges per check, combined by a rule.
- the pairwise judge (`judge_pair`): which of two whole conversations is better, A, B or
  EQUAL (TD-Eval's dialogue-level comparison), used by the arena.

Example:
    from convoeval.judging import JudgeSession, Subject, RubricItem, rubric_messages, \
        rubric_schema, rubric_parser, values_by_key

    items = [RubricItem("c1", "Names Paris as the capital")]
    session = JudgeSession(judge_target, trial=0)
    answer = await session.ask(rubric_messages(Subject("turn", history, "Paris."), items),
                               rubric_schema(items), rubric_parser(items), name="rubric")
    values_by_key(answer)["c1"].satisfied
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_attributes
from ._call import (
    JudgeError,
    JudgeOutputError,
    JudgeSession,
    Repeated,
    describe_validation_error,
    extract_json,
    parse_answer,
    repeat_summary,
)
from ._format import (
    Policy,
    cited_turns,
    clip,
    format_data,
    format_policy,
    format_tool_calls,
    format_transcript,
    last_user_message,
    turn_count,
    turn_numbers,
)
from ._panel import (
    PANEL_RULES,
    Decision,
    JudgePanel,
    PanelRule,
    Vote,
    combine,
    panel_members,
    panel_of,
    panel_rule,
    settled,
)
from ._prompts import (
    GRADER_SCALE,
    JUDGE_SYSTEM,
    METRICS,
    GradingLevel,
    Metric,
    RubricItem,
    Subject,
    default_grader_messages,
    grader_messages,
    grader_parser,
    grader_schema,
    metric_messages,
    metric_parser,
    metric_schema,
    rubric_criteria_text,
    rubric_messages,
    rubric_parser,
    rubric_schema,
)
from ._schemas import (
    CriterionAnswer,
    KeyedAnswer,
    ScoreAnswer,
    keyed_model,
    keyed_schema,
    score_model,
    score_schema,
    values_by_key,
    verdict_schema,
)
from ._simulation import (
    FidelityAnswer,
    Persona,
    ScenarioOutcome,
    UserStep,
    criterion_ids,
    fidelity_messages,
    fidelity_schema,
    scenario_messages,
    scenario_outcome,
    scenario_parser,
    scenario_schema,
    user_step_messages,
    user_step_schema,
)

if TYPE_CHECKING:
    from ._pairwise import (
        PAIRWISE_LABELS,
        PAIRWISE_VARIABLES,
        PairwiseAnswer,
        PairwiseVerdict,
        PairwiseWinner,
        combine_labels,
        fastchat_label,
        judge_pair,
        judge_pair_as_written,
        load_pairwise_prompt,
        pairwise_messages,
        pairwise_schema,
    )
    from ._tdeval import DIMENSIONS, Dimension, normalise, tdeval_messages, tdeval_parser, tdeval_schema

# The arena's pairwise judge and TD-Eval load with the first check or arena that uses them.
__getattr__ = lazy_attributes(
    __name__,
    {
        "._pairwise": (
            "PAIRWISE_LABELS",
            "PAIRWISE_VARIABLES",
            "PairwiseAnswer",
            "PairwiseVerdict",
            "PairwiseWinner",
            "combine_labels",
            "fastchat_label",
            "judge_pair",
            "judge_pair_as_written",
            "load_pairwise_prompt",
            "pairwise_messages",
            "pairwise_schema",
        ),
        "._tdeval": ("DIMENSIONS", "Dimension", "normalise", "tdeval_messages", "tdeval_parser", "tdeval_schema"),
    },
)

__all__ = [
    "GradingLevel",
    "Decision",
    "JudgePanel",
    "PANEL_RULES",
    "PanelRule",
    "Vote",
    "combine",
    "combine_labels",
    "panel_members",
    "panel_of",
    "panel_rule",
    "settled",
    "CriterionAnswer",
    "KeyedAnswer",
    "ScoreAnswer",
    "DIMENSIONS",
    "Dimension",
    "FidelityAnswer",
    "GRADER_SCALE",
    "JUDGE_SYSTEM",
    "JudgeError",
    "JudgeOutputError",
    "JudgeSession",
    "METRICS",
    "Metric",
    "PAIRWISE_LABELS",
    "PAIRWISE_VARIABLES",
    "PairwiseAnswer",
    "PairwiseVerdict",
    "PairwiseWinner",
    "Persona",
    "Policy",
    "Repeated",
    "RubricItem",
    "ScenarioOutcome",
    "Subject",
    "UserStep",
    "cited_turns",
    "clip",
    "criterion_ids",
    "default_grader_messages",
    "describe_validation_error",
    "extract_json",
    "fidelity_messages",
    "fidelity_schema",
    "format_data",
    "format_policy",
    "format_tool_calls",
    "format_transcript",
    "grader_messages",
    "grader_parser",
    "grader_schema",
    "fastchat_label",
    "judge_pair",
    "judge_pair_as_written",
    "keyed_model",
    "keyed_schema",
    "last_user_message",
    "load_pairwise_prompt",
    "metric_messages",
    "metric_parser",
    "metric_schema",
    "normalise",
    "pairwise_messages",
    "pairwise_schema",
    "parse_answer",
    "repeat_summary",
    "rubric_criteria_text",
    "rubric_messages",
    "rubric_parser",
    "rubric_schema",
    "scenario_messages",
    "scenario_outcome",
    "scenario_parser",
    "scenario_schema",
    "score_model",
    "score_schema",
    "tdeval_messages",
    "tdeval_parser",
    "tdeval_schema",
    "turn_count",
    "turn_numbers",
    "user_step_messages",
    "user_step_schema",
    "values_by_key",
    "verdict_schema",
]
