"""TD-Eval turn-level dimensions (Acikgoz et al., 2025, "TD-Eval: Revisiting Task-Oriented
Dialogue Evaluation by Combining Turn-Level Precision with Dialogue-Level Comparisons").

A judge rates one agent response on a 1-5 Likert scale, with a short justification, along:

- conversation cohesion: relevant to the user's query and coherent with the dialogue history;
- backend knowledge consistency: agrees with the backend / database result of the turn;
- policy compliance: follows the domain policy (gather required slots before suggesting or
  booking, no premature actions, suggestions only when the results are few enough).

Inputs: the dialogue history, the user query (last user message), the turn's backend result,
the domain policy and the response. All requested dimensions are judged in ONE call whose
answer has one key per dimension: `{"<dimension>": {"justification": str, "score": 1..5}}`.
Scores are normalised as (s - 1) / 4.

Choices where the paper has no input:
- No backend result for the turn: the judge is told so, and backend consistency then asks
  that the response claims no specific availability, prices, addresses, reference numbers or
  other facts only a database could supply (asking for details or general help rates 5).
- No domain policy: policy compliance is judged against the general booking-assistant
  protocol that TD-Eval's policies share (written below), without domain slots.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import JsonValue

from ..results import Message
from ._format import PolicyLike, clip, format_data, format_policy, format_transcript, last_user_message
from ._schemas import KeyedAnswer, ScoreAnswer, keyed_model, keyed_schema, score_model, score_schema

LIKERT_LOW, LIKERT_HIGH = 1, 5


@dataclass(frozen=True)
class Dimension:
    key: str  # JSON key in the judge answer
    type_name: str  # YAML assertion type
    title: str
    definition: str


DIMENSIONS: dict[str, Dimension] = {
    d.key: d
    for d in [
        Dimension(
            "conversation_cohesion",
            "conversation-cohesion",
            "Conversation cohesion",
            "Does the response fit the conversation? It addresses the user's current query, "
            "stays on the topic of the dialogue, and continues it logically from what was said "
            "before (no ignored requests, no repeated or out-of-place content).",
        ),
        Dimension(
            "backend_consistency",
            "backend-consistency",
            "Backend knowledge consistency",
            "Does the response agree with the backend results for this turn? Every name, count, "
            "price, address, time or availability it states must match those results; it must "
            "not invent entries or facts that the results do not support, and it should use "
            "the results that answer the query.",
        ),
        Dimension(
            "policy_compliance",
            "policy-compliance",
            "Policy compliance",
            "Does the response follow the domain policy? The agent asks for the required "
            "information (slots) before suggesting or booking, does not act prematurely (e.g. "
            "book before the user agreed and the details are known), offers suggestions only "
            "when the results are few enough (otherwise says how many match and asks to narrow "
            "down), and respects every rule of the policy.",
        ),
    ]
}

LIKERT_GUIDE = (
    "Scale: 5 = very good (no problems); 4 = good (minor issues); 3 = fair (noticeable "
    "problems); 2 = bad (major problems); 1 = very bad (fails completely)."
)

NO_BACKEND = (
    "(none: no backend data was given for this turn. For backend consistency the response must "
    "then not claim specific availability, prices, addresses, phone or reference numbers or "
    "other facts only a database could supply; asking for details or giving general help "
    "rates 5.)"
)

GENERAL_PROTOCOL = (
    "General protocol: when the backend returns many matches, say how many and ask for details "
    "to narrow them down; when it returns a few, present them; when required details are "
    "missing, ask for them before suggesting or booking; book only after the user chose and "
    "the booking details are known."
)

NO_POLICY = "(no domain policy given: judge against the general protocol above.)"

SYSTEM = (
    "You evaluate one response of a task-oriented dialogue agent: an assistant that helps a user "
    "find or book things using a backend database. Judge only what is written. Reply with one "
    "JSON object and nothing else."
)


def normalise(score: float) -> float:
    """A 1-5 Likert score mapped to 0-1: (s - 1) / 4."""
    return (score - LIKERT_LOW) / (LIKERT_HIGH - LIKERT_LOW)


def tdeval_schema(keys: Sequence[str]) -> dict[str, JsonValue]:
    """`{"<dimension>": {"justification": string, "score": integer 1-5}, ...}`."""
    return keyed_schema({k: score_schema(LIKERT_LOW, LIKERT_HIGH, "justification") for k in keys})


def tdeval_parser(keys: Sequence[str]) -> type[KeyedAnswer[ScoreAnswer]]:
    item = score_model(LIKERT_LOW, LIKERT_HIGH, "justification")
    return keyed_model("TDEvalAnswer", {k: item for k in keys})


def tdeval_messages(
    keys: Sequence[str],
    *,
    history: list[Message],
    response: str,
    backend: object = None,
    policy: PolicyLike = None,
) -> list[dict[str, str]]:
    """The prompt rating `response` on the dimensions `keys` (see DIMENSIONS) in one call.

    Args:
        history: the dialogue up to and including the user query (the response excluded).
        response: the agent response to rate.
        backend: the turn's backend / database result (dict, list, str) or None.
        policy: the domain policy (`convoeval.spec.Policy`, a mapping, text) or None.
    """
    data = format_data(backend)
    policy_text = format_policy(policy)
    earlier = history[:-1] if history and history[-1].role == "user" else history
    parts = [
        f"Dialogue history:\n{format_transcript(earlier) if earlier else '(this is the first turn)'}",
        f"User query:\n{clip(last_user_message(history)) or '(none)'}",
        f"Backend results for this turn:\n{data if data is not None else NO_BACKEND}",
        GENERAL_PROTOCOL,
        f"Domain policy:\n{policy_text if policy_text else NO_POLICY}",
        f"Agent response to evaluate:\n<<<\n{clip(response) or '(empty response)'}\n>>>",
        "Rate the response on each dimension from 1 to 5:\n"
        + "\n".join(f"- {k}: {DIMENSIONS[k].title}. {DIMENSIONS[k].definition}" for k in keys),
        LIKERT_GUIDE,
        "For each dimension write a justification of at most two sentences, then the score. "
        "Reply with one JSON object whose keys are exactly: "
        + ", ".join(f'"{k}"' for k in keys)
        + '; each value is an object with the keys "justification" and "score" (an integer '
        "from 1 to 5).",
    ]
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]
