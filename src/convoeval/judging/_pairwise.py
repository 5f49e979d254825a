"""The pairwise judge: which of two whole conversations of the same test is better, A, B or EQUAL.

This is TD-Eval's dialogue-level comparison (Acikgoz et al., 2025): the judge reads two complete
conversations that answer the same user requests and prefers one, or neither, on conversation
cohesion, backend knowledge consistency and policy compliance. The answer is structured:

    {"reasoning": string, "winner": "A" | "B" | "EQUAL"}

It goes through `JudgeSession` like every grader: the schema is sent as the request's structured
output, the answer is parsed strictly (an unknown label such as "a", "tie" or "Both" is not
accepted), a malformed answer is re-asked once, and a second malformed answer raises
`JudgeError` - it never silently becomes a tie.

Position bias is not handled here: the arena (`convoeval.rank.judge_arena`) asks every pair in
both orders.

Example:
    verdict = await judge_pair(judge, result_a.output, result_b.output,
                               criteria="Book a table for two", test_id="booking")
    verdict.winner  # "A", "B" or "EQUAL"
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypedDict

from pydantic import ConfigDict, JsonValue, StrictStr

from .._base_model import Model
from .._templates import check_template, render
from ..results import Message, Usage
from ..targets import Target
from ._call import JudgeError, JudgeOutputError, JudgeSession
from ._format import PolicyLike, format_data, format_policy, format_transcript
from ._panel import JudgePanel, PanelRule, settled

PairwiseWinner = Literal["A", "B", "EQUAL"]
PAIRWISE_LABELS: tuple[PairwiseWinner, ...] = ("A", "B", "EQUAL")
#: Per-turn backend results: turn number -> data, or a list whose i-th item is turn i+1's.
Backend = Mapping[int, object] | Sequence[object] | None

#: The variables a custom pairwise prompt (Jinja2) may use.
PAIRWISE_VARIABLES = frozenset({"conversation_a", "conversation_b", "criteria", "policy", "test_id", "backend"})

_PROMPT_SUFFIXES = (".md", ".txt", ".j2", ".jinja", ".jinja2", ".prompt")

PAIRWISE_SYSTEM = (
    "You are a careful, impartial judge comparing two conversations between a user and an AI "
    "assistant. Judge only what is written. Reply with one JSON object and nothing else."
)

PAIRWISE_FORMAT = (
    'Reply with one JSON object with the keys "reasoning" (two or three sentences, written '
    'first) and "winner": "A" if conversation A is better, "B" if conversation B is better, '
    '"EQUAL" if neither is better.'
)

CRITERIA_TEXT = (
    "Compare the assistants over the whole conversation, every turn, on:\n"
    "- Conversation cohesion: each reply answers what the user just asked and follows on from "
    "what was said before; no request is ignored, nothing is repeated or out of place.\n"
    "- Backend knowledge consistency: every name, number, price, time or availability the "
    "assistant states agrees with the data it was given (the backend results, the system "
    "message); nothing is made up.\n"
    "- Policy compliance: the assistant follows the domain policy (or, without one, a careful "
    "service protocol): it asks for the details it needs before suggesting or booking, does not "
    "act before the user has agreed, and keeps to its rules.\n"
    "Then weigh which conversation gets the user closer to their goal."
)

FAIRNESS_TEXT = (
    "The order in which the conversations are shown says nothing about their quality, and a "
    "longer reply is not better for being longer. Answer EQUAL when both are about as good or "
    "both fail in the same way."
)


class PairwiseAnswer(Model):
    """The parsed pairwise answer: reasoning first, then exactly "A", "B" or "EQUAL"."""

    model_config = ConfigDict(extra="forbid", strict=True)

    reasoning: StrictStr
    winner: PairwiseWinner


def pairwise_schema() -> dict[str, JsonValue]:
    """`{"reasoning": string, "winner": "A" | "B" | "EQUAL"}`, both required, nothing else."""
    return {
        "type": "object",
        "properties": {
            "reasoning": {"type": "string"},
            "winner": {"type": "string", "enum": list(PAIRWISE_LABELS)},
        },
        "required": ["reasoning", "winner"],
        "additionalProperties": False,
    }


class PanelPairAnswer(TypedDict):
    """One judge's answer to a pair, when a panel judged it (`winner` None: it failed)."""

    judge: str
    winner: PairwiseWinner | None
    reasoning: str
    error: str | None


@dataclass(frozen=True)
class PairwiseVerdict:
    """What the judge said about one ordered pair of conversations.

    Attributes:
        winner: "A" (the first conversation shown), "B" (the second) or "EQUAL".
        reasoning: the judge's reasoning.
        usage, cost_usd: tokens and cost of the judge calls (a re-ask included).
        calls: judge calls made (2 when the first answer had to be re-asked).
        panel: with a judge panel, each judge's answer `{judge, winner, reasoning, error}`.
        rule: with a judge panel, how the answers were combined.
    """

    winner: PairwiseWinner
    reasoning: str
    usage: Usage
    cost_usd: float = 0.0
    calls: int = 1
    panel: list[PanelPairAnswer] | None = None
    rule: PanelRule | None = None


#: A pairwise label as a score for model A (the mean rule).
_LABEL_SCORE: dict[str, float] = {"A": 1.0, "EQUAL": 0.5, "B": 0.0}
_LABELS: tuple[PairwiseWinner, ...] = ("A", "B", "EQUAL")  # what a judge that failed could have said


def combine_labels(labels: Sequence[PairwiseWinner], rule: PanelRule) -> PairwiseWinner:
    """A panel's pairwise label: `majority`, the label more than half of the judges gave
    (else EQUAL); `mean`, the sign of the mean of A=1, EQUAL=0.5, B=0; `min`, a winner only
    when every judge names it (else EQUAL).

    Example:
        >>> combine_labels(["A", "A", "B"], "majority"), combine_labels(["A", "A", "B"], "min")
        ('A', 'EQUAL')
    """
    if not labels:
        raise ValueError("no labels to combine")
    if rule == "mean":
        mean = sum(_LABEL_SCORE[x] for x in labels) / len(labels)
        return "A" if mean > 0.5 + 1e-9 else "B" if mean < 0.5 - 1e-9 else "EQUAL"
    if rule == "min":
        return labels[0] if all(x == labels[0] for x in labels) else "EQUAL"
    for label in ("A", "B", "EQUAL"):
        if labels.count(label) * 2 > len(labels):
            return label
    return "EQUAL"


def load_pairwise_prompt(prompt: str | Path, base_dir: str | Path | None = None) -> str:
    """The text of a custom pairwise prompt, checked.

    Args:
        prompt: a `Path`, `file://path`, a path to an existing file (a single word ending in
            .md, .txt, .j2, .jinja, .jinja2 or .prompt is always taken as a path), or the
            Jinja2 template itself.
        base_dir: what relative paths are relative to (default: the working directory).

    Raises:
        ValueError: the file cannot be read, or the template does not parse or uses a
            variable other than conversation_a, conversation_b, criteria, policy, test_id
            and backend.
    """
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    path: Path | None = None
    if isinstance(prompt, Path):
        path = prompt
    else:
        text = prompt.strip()
        if text.startswith("file://"):
            path = Path(text[len("file://") :])
        elif text and "\n" not in text and "{{" not in text and "{%" not in text:
            candidate = Path(text).expanduser()
            candidate = candidate if candidate.is_absolute() else base / candidate
            if candidate.is_file() or (" " not in text and text.lower().endswith(_PROMPT_SUFFIXES)):
                path = Path(text).expanduser()
    if path is not None:
        full = path if path.is_absolute() else base / path
        try:
            source = full.read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"pairwise prompt file {str(path)!r} cannot be read ({exc.strerror or exc})") from None
    else:
        source = str(prompt)
    if not source.strip():
        raise ValueError("the pairwise prompt is empty")
    problem = check_template(source, PAIRWISE_VARIABLES)
    if problem:
        raise ValueError(f"pairwise prompt: {problem}")
    return source


def format_backend(backend: Backend) -> str | None:
    """Per-turn backend results as text (`turn N: {...}`), or None when there are none.

    `backend` maps a turn number to its data, or is a list whose i-th item belongs to turn i+1.
    """
    if not backend:
        return None
    items = backend.items() if isinstance(backend, Mapping) else enumerate(backend, start=1)
    lines = []
    for turn, data in items:
        text = format_data(data)
        if text is not None:
            lines.append(f"turn {turn}: {text}")
    return "\n".join(lines) or None


def pairwise_messages(
    conversation_a: Sequence[Message],
    conversation_b: Sequence[Message],
    *,
    criteria: str | None = None,
    policy: PolicyLike = None,
    test_id: str | None = None,
    backend: Backend = None,
    prompt: str | None = None,
) -> list[dict[str, str]]:
    """The judge prompt comparing conversation A with conversation B.

    Args:
        conversation_a, conversation_b: the two whole transcripts (same test, two targets).
        criteria: the test's goal, if any.
        policy: the domain policy (`convoeval.spec.Policy`, a mapping or text), if any.
        test_id: the test's id (shown to the judge).
        backend: per-turn backend / database results of the test, if any.
        prompt: a custom Jinja2 prompt (the TEXT, see `load_pairwise_prompt`) with the
            variables conversation_a, conversation_b (formatted transcripts), criteria,
            policy (text, '' when absent), test_id and backend (text, '' when absent). The
            answer format is appended to the system message either way.
    """
    text_a = format_transcript(conversation_a)
    text_b = format_transcript(conversation_b)
    policy_text = format_policy(policy)
    backend_text = format_backend(backend)
    if prompt is not None:
        body = render(
            prompt,
            {
                "conversation_a": text_a,
                "conversation_b": text_b,
                "criteria": (criteria or "").strip(),
                "policy": policy_text or "",
                "test_id": test_id or "",
                "backend": backend_text or "",
            },
        )
        return [
            {"role": "system", "content": f"{PAIRWISE_SYSTEM}\n{PAIRWISE_FORMAT}"},
            {"role": "user", "content": body},
        ]
    which = f" ({test_id})" if test_id else ""
    parts = [
        f"Two assistants took part in the same test{which}: the user sent them the same requests. "
        "Decide which assistant handled the WHOLE conversation better.",
    ]
    if criteria and criteria.strip():
        parts.append(f"Goal of the test: {criteria.strip()}")
    if policy_text:
        parts.append(f"Domain policy:\n{policy_text}")
    if backend_text:
        parts.append(f"Backend results available to the assistants, by turn:\n{backend_text}")
    parts += [
        f"Conversation A:\n<<<\n{text_a}\n>>>",
        f"Conversation B:\n<<<\n{text_b}\n>>>",
        CRITERIA_TEXT,
        FAIRNESS_TEXT,
        "First write your reasoning, naming the turns that decide it as `turn N`; then give the "
        'winner. Reply with one JSON object with the keys "reasoning" and "winner" ("A", "B" or '
        '"EQUAL").',
    ]
    return [{"role": "system", "content": PAIRWISE_SYSTEM}, {"role": "user", "content": "\n\n".join(parts)}]


async def judge_pair(
    judge: Target,
    conversation_a: Sequence[Message],
    conversation_b: Sequence[Message],
    *,
    criteria: str | None = None,
    policy: PolicyLike = None,
    test_id: str | None = None,
    backend: Backend = None,
    prompt: str | None = None,
    trial: int = 0,
    temperature: float = 0.0,
    max_tokens: int | None = None,
) -> PairwiseVerdict:
    """Ask `judge` whether conversation A or B is better (or EQUAL).

    Args:
        judge: any Target (it receives the schema as structured output).
        conversation_a, conversation_b: the two transcripts, A shown first.
        criteria, policy, test_id, backend, prompt: see `pairwise_messages`.
        trial: sent with the request (keeps repeated comparisons apart in the cache).
        temperature, max_tokens: of the judge calls.

    Raises:
        JudgeError: the call failed, or the answer was still not `{"reasoning", "winner"}`
            with a winner of exactly "A", "B" or "EQUAL" after one re-ask. Its `usage`,
            `cost_usd` and `calls` say what the failed attempt consumed.

    Example:
        verdict = await judge_pair(judge, a.output, b.output, criteria=test.criteria)
        print(verdict.winner, verdict.reasoning)
    """
    if isinstance(judge, JudgePanel):
        options: _PairOptions = {
            "criteria": criteria,
            "policy": policy,
            "test_id": test_id,
            "backend": backend,
            "prompt": prompt,
            "trial": trial,
            "temperature": temperature,
            "max_tokens": max_tokens,
        }
        return await _judge_pair_by_panel(judge, lambda j: judge_pair(j, conversation_a, conversation_b, **options))
    messages = pairwise_messages(
        conversation_a,
        conversation_b,
        criteria=criteria,
        policy=policy,
        test_id=test_id,
        backend=backend,
        prompt=prompt,
    )
    session = JudgeSession(judge, trial=trial, temperature=temperature, max_tokens=max_tokens)
    answer = await session.ask(messages, pairwise_schema(), PairwiseAnswer, name="pairwise")
    return PairwiseVerdict(
        winner=answer.winner,
        reasoning=answer.reasoning,
        usage=session.usage,
        cost_usd=round(session.cost_usd, 10),
        calls=session.calls,
    )


#: FastChat's pairwise labels, in the order `run_judge_pair` looks for them ("[[C]]": a tie).
FASTCHAT_LABELS: tuple[tuple[str, PairwiseWinner], ...] = (("[[A]]", "A"), ("[[B]]", "B"), ("[[C]]", "EQUAL"))


def fastchat_label(text: str) -> PairwiseWinner:
    """The label of a FastChat pairwise judgment (`output_format` "[[A]]"), read as FastChat's
    `run_judge_pair` reads it: "[[A]]" anywhere in it, else "[[B]]", else "[[C]]" (a tie).

    Raises:
        JudgeOutputError: none of them: FastChat's "error" (its show_result.py drops the match).
    """
    for mark, label in FASTCHAT_LABELS:
        if mark in text:
            return label
    raise JudgeOutputError('no verdict "[[A]]", "[[B]]" or "[[C]]" in the judgment')


async def judge_pair_as_written(
    judge: Target, messages: list[dict[str, str]], *, trial: int = 0, max_tokens: int | None = None
) -> PairwiseVerdict:
    """One pairwise judgment with a prompt of FastChat's (`messages`, sent as written at
    temperature 0, no answer format imposed), read by `fastchat_label`. Like FastChat, an
    answer without a label is not asked again: it is a JudgeError (not a battle). A judge panel
    asks each of its judges and combines their labels (`judge_pair`'s rule).

    Raises:
        JudgeError: the call failed or the judgment holds no label.
    """
    if isinstance(judge, JudgePanel):
        return await _judge_pair_by_panel(
            judge, lambda j: judge_pair_as_written(j, messages, trial=trial, max_tokens=max_tokens)
        )
    session = JudgeSession(judge, trial=trial, max_tokens=max_tokens)
    text = await session.ask(messages, None, str, name="pairwise")
    try:
        winner = fastchat_label(text)
    except JudgeOutputError as exc:
        raise session.error(f"{exc}: {text[-300:]!r}") from None
    return PairwiseVerdict(
        winner=winner, reasoning=text, usage=session.usage, cost_usd=round(session.cost_usd, 10), calls=session.calls
    )


class _PairOptions(TypedDict):
    """`judge_pair`'s options, passed on to each judge of a panel."""

    criteria: str | None
    policy: PolicyLike
    test_id: str | None
    backend: Backend
    prompt: str | None
    trial: int
    temperature: float
    max_tokens: int | None


async def _judge_pair_by_panel(
    panel: JudgePanel, ask: Callable[[Target], Awaitable[PairwiseVerdict]]
) -> PairwiseVerdict:
    """Every judge of the panel compares the pair (`ask`); their labels combine by the panel's
    rule (default majority). A judge that failed is kept with its error and left out when no
    label of its could change the panel's; otherwise, and when every judge failed, a JudgeError
    is raised (the pair is not a battle)."""
    rule: PanelRule = panel.rule or "majority"
    outcomes = await asyncio.gather(*(ask(j) for j in panel.judges), return_exceptions=True)
    answers: list[PanelPairAnswer] = []
    verdicts: list[PairwiseVerdict] = []
    usage, cost, calls = Usage(), 0.0, 0
    for judge, outcome in zip(panel.judges, outcomes, strict=True):
        if isinstance(outcome, JudgeError):
            answers.append({"judge": judge.name, "winner": None, "reasoning": "", "error": str(outcome)})
            usage, cost = usage + outcome.usage, cost + outcome.cost_usd
            calls += outcome.calls
        elif isinstance(outcome, BaseException):
            raise outcome
        else:
            verdicts.append(outcome)
            answers.append(
                {"judge": judge.name, "winner": outcome.winner, "reasoning": outcome.reasoning, "error": None}
            )
            usage, cost, calls = usage + outcome.usage, cost + outcome.cost_usd, calls + outcome.calls
    if not verdicts:
        raise JudgeError(
            f"no judge of the panel answered: {answers[0]['error']}", usage=usage, cost_usd=cost, calls=calls
        )
    missing = len(answers) - len(verdicts)
    winner = settled(lambda labels: combine_labels(labels, rule), [v.winner for v in verdicts], missing, _LABELS)
    if winner is None:
        failed = "; ".join(f"{a['judge']}: {a['error']}" for a in answers if a["error"])
        raise JudgeError(
            f"the judges that failed could change the panel's label ({rule}): {failed}",
            usage=usage,
            cost_usd=cost,
            calls=calls,
        )
    reasoning = "\n".join(f"{a['judge']}: {a['winner'] or 'error'}: {a['reasoning'] or a['error']}" for a in answers)
    return PairwiseVerdict(
        winner=winner, reasoning=reasoning, usage=usage, cost_usd=round(cost, 10), calls=calls, panel=answers, rule=rule
    )
