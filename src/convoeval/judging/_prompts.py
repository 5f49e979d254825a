"""Judge prompts: rubrics, llm-grader and the conversation-level metrics.

Prompts are short on purpose: the embedded default judge is a 135M model with a small
context. Each prompt names the exact JSON keys to return; the schema sent with the request
enforces them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple

from pydantic import JsonValue

from ..results import Message, ToolCall
from ._format import clip, format_transcript
from ._schemas import (
    CriterionAnswer,
    KeyedAnswer,
    ScoreAnswer,
    keyed_model,
    keyed_schema,
    score_model,
    score_schema,
    verdict_schema,
)

#: Where a check is graded: on one turn's reply, or on the whole conversation after its last turn.
GradingLevel = Literal["turn", "conversation"]

#: How every judge prompt introduces the transcript.
CONVERSATION_HEADER = "Conversation (turns are numbered):"

JUDGE_SYSTEM = (
    "You are a careful, impartial evaluator of conversations between a user and an AI "
    "assistant. Judge only what is written. Reply with one JSON object and nothing else."
)


def _keys(keys: Sequence[str]) -> str:
    return ", ".join(json.dumps(k) for k in keys)


class _Reply(NamedTuple):
    """The judged reply as its transcript shows it (what a `Message` of it would show)."""

    role: str
    content: str
    source: str
    turn: int | None
    tool_calls: list[ToolCall]


@dataclass(slots=True)
class Subject:
    """What is being judged, shared by every prompt.

    Attributes:
        level: `turn` (one reply) or `conversation` (the whole transcript).
        history: at turn level the messages before the reply (windowed); at conversation
            level the whole transcript.
        output: the reply (turn level).
        turn: the reply's turn number.
        tool_calls: tools the target called while producing the reply.
        expected_output: a reference answer, if the test gives one.
        criteria: the test's criteria (its goal), if any.
    """

    level: GradingLevel
    history: list[Message]
    output: str = ""
    turn: int | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    expected_output: str | None = None
    criteria: str | None = None

    def sections(self) -> list[str]:
        """The conversation (and which reply is judged) as prompt sections.

        Every judge prompt opens the same way, the system prompt and then the transcript with
        the judged reply as its last message, so successive judge calls of a conversation
        share a long prefix that a local model evaluates once (see targets/_local/_prefix.py).
        """
        if self.level == "conversation":
            return [f"{CONVERSATION_HEADER}\n{format_transcript(self.history)}"]
        numbered = any(m.turn is not None for m in self.history)
        reply = _Reply(
            role="assistant",
            content=self.output or "(empty reply)",
            source="target",
            turn=self.turn if numbered else None,
            tool_calls=self.tool_calls,
        )
        of_turn = f" of turn {self.turn}" if self.turn is not None else ""
        return [
            f"{CONVERSATION_HEADER}\n{format_transcript([*self.history, reply])}",
            f"Response to evaluate: the assistant's message{of_turn} (the last message above).",
        ]

    def reference_sections(self) -> list[str]:
        parts = []
        if self.expected_output:
            parts.append(
                f"Reference answer (what a good response contains; wording may differ):\n{clip(self.expected_output)}"
            )
        if self.criteria:
            parts.append(f"Goal of this test: {self.criteria.strip()}")
        return parts


# -- rubrics ----------------------------------------------------------------------------


@dataclass
class RubricItem:
    """One rubric criterion as the judge sees it.

    Attributes:
        id: the JSON key of its verdict.
        text: what must hold (may be empty for a score-range criterion).
        bands: score ranges `(low, high, description)` over 0..10; empty for a yes/no check.
        operator: `contradiction` makes it a guard (holds unless the response contradicts it).
    """

    id: str
    text: str = ""
    bands: list[tuple[int, int, str]] = field(default_factory=list)
    operator: str | None = None

    @property
    def scored(self) -> bool:
        return bool(self.bands)

    def describe(self) -> str:
        text = self.text.strip()
        if self.operator == "contradiction":
            text = f"(guard: satisfied unless the response contradicts this) {text}"
        if not self.scored:
            return f"- {self.id}: {text}"
        head = f"- {self.id} (score 0-10){': ' + text if text else ''}"
        bands = [f"    {lo}-{hi}: {desc}" if lo != hi else f"    {lo}: {desc}" for lo, hi, desc in self.bands]
        return "\n".join([head, *bands])


def rubric_schema(items: Sequence[RubricItem]) -> dict[str, JsonValue]:
    """`{"<id>": {"reasoning", "satisfied"} | {"reasoning", "score" 0-10}, ...}`."""
    return keyed_schema({i.id: score_schema(0, 10) if i.scored else verdict_schema() for i in items})


#: The name of a rubric's answer model (`rubric_parser`).
RUBRIC_ANSWER = "RubricAnswer"


def rubric_parser(items: Sequence[RubricItem]) -> type[KeyedAnswer[ScoreAnswer | CriterionAnswer]]:
    return keyed_model(RUBRIC_ANSWER, {i.id: score_model(0, 10) if i.scored else CriterionAnswer for i in items})


def rubric_criteria_text(items: Sequence[RubricItem], level: GradingLevel) -> str:
    """The end of a rubric prompt: the criteria, how to answer and the keys. It depends only on
    the criteria and the level, so a grader builds it once (`rubric_messages(criteria_text=)`)."""
    whole = level == "conversation"
    about = "the conversation as a whole (all turns)" if whole else "the response"
    instructions = [
        f"For each criterion, first write one short sentence of reasoning about {about}"
        + (", citing turn numbers as `turn N`" if whole else "")
        + ", then give the verdict.",
    ]
    if any(not i.scored for i in items):
        instructions.append('"satisfied" is true only when the criterion clearly holds.')
    if any(i.scored for i in items):
        instructions.append('"score" is the integer 0-10 of the band that fits best.')
    ids = [i.id for i in items]
    return "\n\n".join(
        [
            f"Criteria for {about}:\n" + "\n".join(i.describe() for i in items),
            " ".join(instructions),
            f"Reply with one JSON object whose keys are exactly: {_keys(ids)}.",
        ]
    )


def rubric_messages(
    subject: Subject, items: Sequence[RubricItem], *, criteria_text: str | None = None
) -> list[dict[str, str]]:
    """The prompt of one rubric judge call covering all criteria (`criteria_text`: what
    `rubric_criteria_text(items, subject.level)` returns, when the caller kept it)."""
    if criteria_text is None:
        criteria_text = rubric_criteria_text(items, subject.level)
    parts = [*subject.sections(), *subject.reference_sections(), criteria_text]
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


# -- llm-grader ---------------------------------------------------------------------------

#: llm-grader asks for an integer 0-10 (normalised to 0-1 by dividing by 10): small models and
#: grammar-constrained decoding handle small integers far better than fractions.
GRADER_SCALE = 10

GRADER_FORMAT = (
    'Reply with one JSON object with the keys "reasoning" (one short sentence) and "score" '
    "(an integer from 0 = not at all to 10 = fully), whatever scale the instructions mention."
)


def grader_schema() -> dict[str, JsonValue]:
    """`{"reasoning": string, "score": integer 0-10}`."""
    return score_schema(0, GRADER_SCALE)


def grader_parser() -> type[ScoreAnswer]:
    return score_model(0, GRADER_SCALE)


def grader_messages(prompt: str) -> list[dict[str, str]]:
    """A custom (already rendered) llm-grader prompt with the answer format appended."""
    return [{"role": "system", "content": f"{JUDGE_SYSTEM}\n{GRADER_FORMAT}"}, {"role": "user", "content": prompt}]


def default_grader_messages(subject: Subject) -> list[dict[str, str]]:
    """llm-grader without a prompt: compare with the reference answer and/or the criteria."""
    whole = subject.level == "conversation"
    what = "the conversation as a whole" if whole else "the response"
    if subject.expected_output and subject.criteria:
        task = (
            f"Score how well {what} matches the reference answer in substance (facts, "
            "conclusions, requested content) and meets the goal."
        )
    elif subject.expected_output:
        task = (
            f"Score how well {what} matches the reference answer in substance (facts, "
            "conclusions, requested content); different wording is fine."
        )
    elif subject.criteria:
        task = f"Score how well {what} meets the goal."
    else:
        task = f"Score how correct, relevant and helpful {what} is for the user's requests."
    if whole:
        task += " Cite the turns that matter as `turn N`."
    parts = [*subject.sections(), *subject.reference_sections(), task]
    return grader_messages("\n\n".join(parts))


# -- conversation-level metrics -----------------------------------------------------------


@dataclass(frozen=True)
class Metric:
    """A conversation-level judge metric (MultiChallenge / DeepEval families)."""

    name: str
    title: str
    outcome: str
    definition: str


METRICS: dict[str, Metric] = {
    m.name: m
    for m in [
        Metric(
            "knowledge-retention",
            "Knowledge retention",
            "the assistant retains what the user told it earlier",
            "Does the assistant remember and correctly use information the user gave in earlier "
            "turns (facts, names, numbers, preferences, constraints)? Forgetting it, asking for "
            "it again, or contradicting it is a failure.",
        ),
        Metric(
            "role-adherence",
            "Role adherence",
            "the assistant stays in its assigned role",
            "Does the assistant stay in the role, persona and scope set by the system message "
            "(or, without one, by the conversation) in every turn, even when the user tries to "
            "pull it out of it? Breaking character or acting outside the role is a failure.",
        ),
        Metric(
            "self-coherence",
            "Self-coherence",
            "the assistant never contradicts itself",
            "Are the assistant's statements consistent with each other across turns? Stating "
            "something that conflicts with its own earlier answer, or abandoning a correct "
            "earlier answer just because the user pushed back without a reason, is a failure. "
            "Correcting a real mistake openly is fine.",
        ),
        Metric(
            "instruction-retention",
            "Instruction retention",
            "the assistant keeps following earlier instructions",
            "Does the assistant keep following instructions the user gave in earlier turns "
            "(format, length, style, language, things to include or avoid) in every later turn, "
            "until the user lifts them? Dropping an instruction is a failure.",
        ),
        Metric(
            "versioned-editing",
            "Versioned editing",
            "the assistant edits the right version of earlier work",
            "When the user asks to revise, undo or go back to an earlier version of something "
            "the assistant produced, does it change the right version, apply exactly the "
            "requested changes and keep everything else? Editing the wrong version, losing "
            "earlier changes or ignoring the request is a failure.",
        ),
        Metric(
            "goal-completion",
            "Goal completion",
            "the conversation achieves the user's goal",
            "Does the conversation end with the user's goal achieved: every request fulfilled "
            "or correctly refused, with the information or result the user needed?",
        ),
    ]
}

METRIC_SCALE = (
    "Score from 0 to 10: 10 = no failure in any turn; 7-9 = minor slips; 4-6 = a clear "
    "failure in one turn; 1-3 = failures in several turns; 0 = fails throughout. If the "
    "conversation gives no occasion to test this, give 10 and say so."
)

GOAL_SCALE = (
    "Score from 0 to 10: 10 = fully achieved; 7-9 = achieved with minor gaps; 4-6 = partly "
    "achieved; 1-3 = barely; 0 = not at all."
)


def metric_schema() -> dict[str, JsonValue]:
    """`{"reasoning": string, "score": integer 0-10}`."""
    return score_schema(0, 10)


def metric_parser() -> type[ScoreAnswer]:
    return score_model(0, 10)


def metric_messages(
    metric: Metric, transcript: list[Message], *, goal: str | None = None, guidance: str | None = None
) -> list[dict[str, str]]:
    """The prompt of one conversation-level metric."""
    parts = [f"{CONVERSATION_HEADER}\n{format_transcript(transcript)}"]
    what = f"What to evaluate: {metric.title}. {metric.definition}"
    if metric.name == "goal-completion":
        what += (
            f"\nThe user's goal: {goal.strip()}"
            if goal
            else "\nThe user's goal: what the user asked for in the conversation."
        )
    parts.append(what)
    if guidance:
        parts.append(f"Also consider: {guidance.strip()}")
    parts.append(GOAL_SCALE if metric.name == "goal-completion" else METRIC_SCALE)
    parts.append(
        "First write your reasoning: name the turns involved as `turn N` and quote the words "
        "that matter. Then give the score. Reply with one JSON object with the keys "
        '"reasoning" and "score" (an integer from 0 to 10).'
    )
    return [{"role": "system", "content": JUDGE_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]
