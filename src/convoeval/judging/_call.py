"""Structured judge calls: one JSON Schema, a strict parser, one re-ask, usage accounting.

Every LLM grader talks to its judge through a `JudgeSession`:

    session = JudgeSession(ctx.judge, trial=ctx.trial)
    answers = await session.ask_repeated(messages, schema, Model, repeats=ctx.judge_repeats)
    ...
    return Grade.judged(session, score, outcomes, details)  # convoeval.graders.Grade

The judge is asked for JSON that follows `schema` (sent as the request's `response_schema`, so
OpenAI-compatible servers and llama.cpp constrain decoding to it). The reply is parsed by a
pydantic model. When it does not parse, the judge is shown its own answer and the error and
asked once more; when that fails too the grader errors (`JudgeError`), it never scores.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypedDict, TypeVar, overload

from pydantic import BaseModel, JsonValue, ValidationError

from .._json_in_text import NoJson, parse_json
from .._text import shorten
from ..errors import GraderError, TargetError
from ..results import Usage
from ..targets import AgentContext, ChatReply, ChatRequest, Purpose, Target, capabilities
from ._agentv import agentv_answer

T = TypeVar("T")
T_co = TypeVar("T_co", covariant=True)
M = TypeVar("M", bound=BaseModel)
#: A judge prompt: OpenAI-style `{"role", "content"}` messages.
JudgeMessages = list[dict[str, str]]

#: The agent context of every judge request: none (it is frozen, so one serves all).
_NO_AGENT = AgentContext()
#: A session's usage before its first reply (never changed: usage is added up into new objects).
_NO_USAGE = Usage()

#: How much of a bad judge answer is sent back on the re-ask and quoted in errors.
_ECHO_CHARS = 2000
_QUOTE_CHARS = 160

REASK = (
    "Your answer could not be used: {error}\n"
    "Reply again with only one JSON object that follows the required format exactly "
    "(keys: {keys}). No text before or after it."
)


class JudgeError(GraderError):
    """The judge failed: an HTTP error, or output that still did not parse after the re-ask.

    It is a `GraderError`, so the assertion's verdict becomes `error` (left out of the score).
    `usage` and `cost_usd` hold what the judge calls of this grader had consumed so far;
    `calls` and `reasks` how many calls were made, and how many of them re-asked.
    """

    def __init__(
        self, message: str, *, usage: Usage | None = None, cost_usd: float = 0.0, calls: int = 0, reasks: int = 0
    ):
        super().__init__(message, judge_usage=usage, judge_cost_usd=cost_usd, judge_calls=calls, judge_reasks=reasks)

    @property
    def usage(self) -> Usage:
        return self.judge_usage

    @property
    def cost_usd(self) -> float:
        return self.judge_cost_usd

    @property
    def calls(self) -> int:
        return self.judge_calls


class JudgeOutputError(ValueError):
    """A judge answer is not the JSON the schema asked for (the message says what is wrong)."""


def extract_json(text: str) -> JsonValue:
    """The JSON value in a judge answer, found by `parse_json` (`convoeval._json_in_text`, the
    one JSON finder): the whole answer, else a ```json fenced block, else the first JSON object
    in prose; what the value must look like is then checked strictly by the parser.

    Raises:
        JudgeOutputError: the answer is empty or holds no JSON.
    """
    if not text.strip():
        raise JudgeOutputError("the answer was empty")
    try:
        return parse_json(text, fenced=True, embedded=True, objects_only=True).value
    except NoJson as exc:
        raise JudgeOutputError(f"the answer is not valid JSON ({exc})") from None


def parse_answer(model: type[M], text: str) -> M:
    """Parse a judge answer with a pydantic model; raise `JudgeOutputError` saying what is wrong.

    The usual answer, one JSON object that follows the schema, is validated from its text in
    one step when the model says that gives the same value (`json_direct`, the answer shapes of
    `convoeval.judging`); anything else takes the general path, which finds the JSON in the text
    and says what is wrong.
    """
    if getattr(model, "json_direct", False):
        try:
            return model.model_validate_json(text)
        except ValueError:  # not JSON, not this shape, or a text JSON cannot hold: the general path says why
            pass
    data = extract_json(text)
    if not isinstance(data, dict):
        raise JudgeOutputError(f"expected a JSON object, got {type(data).__name__}")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise JudgeOutputError(describe_validation_error(exc)) from None


def describe_validation_error(exc: ValidationError) -> str:
    """Pydantic errors as one short line: `c2: missing; c1.satisfied: must be true or false`."""
    parts = []
    for error in exc.errors(include_url=False)[:8]:
        where = ".".join(str(p) for p in error["loc"]) or "(answer)"
        kind = error["type"]
        if kind == "missing":
            message = "missing"
        elif kind == "extra_forbidden":
            message = "not an allowed key"
        elif kind.startswith("bool"):
            message = "must be true or false"
        else:
            message = error["msg"]
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


#: The re-ask of an answer in the prompt's own format (no schema).
TEXT_REASK = "Your answer could not be used: {error}\nAnswer again, in the format the instructions ask for."


def schema_keys(schema: dict[str, JsonValue]) -> str:
    props = schema.get("properties")
    return ", ".join(json.dumps(k) for k in props) if isinstance(props, dict) and props else "see the schema"


@dataclass(frozen=True)
class Repeated(Generic[T_co]):
    """The parsed answers of K repeated judge calls (a failed repeat leaves an error)."""

    values: Sequence[T_co]
    errors: Sequence[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.values) + len(self.errors)


class RepeatSummary(TypedDict):
    """One grader's repeated judge scores: how many, each, their mean and standard deviation."""

    repeats: int
    scores: list[float]
    mean: float
    stdev: float


def repeat_summary(scores: list[float]) -> RepeatSummary:
    """`{"repeats", "scores", "mean", "stdev"}` of one grader's repeated judge scores.

    The standard deviation is the sample one (ddof=1), as in `convoeval.stats.judge_consistency`;
    it is 0.0 for a single score.
    """
    n = len(scores)
    mean = math.fsum(scores) / n if n else 0.0
    stdev = math.sqrt(math.fsum((s - mean) ** 2 for s in scores) / (n - 1)) if n > 1 else 0.0
    return {"repeats": n, "scores": [round(s, 6) for s in scores], "mean": round(mean, 6), "stdev": round(stdev, 6)}


class JudgeSession:
    """Calls one judge on behalf of one grader and adds up tokens and cost of every call.

    Args:
        judge: any Target.
        trial: the trial index; repeat r of a call is sent as trial `trial * 1000 + r` so that a
            response cache keeps repeats apart.
        temperature: judges default to 0.
        max_tokens: cap of the judge's answer (default: the judge target's own setting).
        purpose: sent with each request: `judge`, or `simulator` for a simulated user's calls
            (counted apart by the run meter).
        seed: a sampling seed sent with each request, or None.

    Example:
        session = JudgeSession(ctx.judge, trial=ctx.trial)
        answer = await session.ask(messages, schema, MyAnswer)
        grade = Grade.judged(session, answer.score / 10, [...])  # convoeval.graders.Grade
    """

    def __init__(
        self,
        judge: Target,
        *,
        trial: int = 0,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        purpose: Purpose = "judge",
        seed: int | None = None,
    ):
        self.judge = judge
        self.purpose: Purpose = purpose
        self.seed = seed
        self.trial = trial
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.usage = _NO_USAGE
        self.cost_usd = 0.0
        self.calls = 0
        self.reasks = 0
        self.unanswered = 0.0  # the share of a repeated ask's repeats that failed (`ask_repeated`)

    def _speaks_agentv(self) -> bool:
        """Whether the judge is a program (`cli`), which may answer in AgentV's judge protocol."""
        return capabilities(self.judge).provider_name == "cli"

    async def _chat(
        self, messages: JudgeMessages, schema: dict[str, JsonValue] | None, name: str, repeat: int
    ) -> ChatReply:
        request = ChatRequest(
            messages=messages,
            response_schema=schema,
            schema_name=name,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            trial=self.trial * 1000 + repeat,
            purpose=self.purpose,
            seed=self.seed,
            agent=_NO_AGENT,
        )
        self.calls += 1
        try:
            reply = await self.judge.chat(request)
        except TargetError as exc:
            raise self.error(f"judge call failed: {exc}") from None
        # The first reply's usage is kept as it is: adding it to nothing would make an equal copy.
        self.usage = reply.usage if self.usage is _NO_USAGE else self.usage + reply.usage
        self.cost_usd += reply.cost_usd
        return reply

    @overload
    async def ask(
        self,
        messages: JudgeMessages,
        schema: dict[str, JsonValue] | None,
        parser: type[M],
        *,
        name: str = ...,
        repeat: int = ...,
    ) -> M: ...
    @overload
    async def ask(
        self,
        messages: JudgeMessages,
        schema: dict[str, JsonValue] | None,
        parser: Callable[[str], T],
        *,
        name: str = ...,
        repeat: int = ...,
    ) -> T: ...
    async def ask(
        self,
        messages: JudgeMessages,
        schema: dict[str, JsonValue] | None,
        parser: type[BaseModel] | Callable[[str], object],
        *,
        name: str = "verdict",
        repeat: int = 0,
    ) -> object:
        """One structured judge call, re-asked once when the answer does not parse.

        Args:
            messages: the prompt (`{"role", "content"}` dicts).
            schema: the JSON Schema the answer must follow, or None for an answer in the
                prompt's own format (the parser reads it; nothing is imposed).
            parser: a pydantic model, or a function text -> value raising JudgeOutputError.
            name: the schema's name (letters, digits, `_` and `-`).
            repeat: which repetition this is (changes the trial sent to the judge).

        Raises:
            JudgeError: the call failed, or the answer did not parse twice.
        """
        parse = _as_parser(parser, self._speaks_agentv)
        reply = await self._chat(messages, schema, name, repeat)
        try:
            return parse(reply.text)
        except JudgeOutputError as exc:
            error = str(exc)
        return await self._reask(messages, schema, parse, name, repeat, reply.text, error)

    async def _reask(
        self,
        messages: JudgeMessages,
        schema: dict[str, JsonValue] | None,
        parse: Callable[[str], object],
        name: str,
        repeat: int,
        answer: str,
        error: str,
    ) -> object:
        """Show the judge its unusable `answer` and why (`error`), and parse its second answer."""
        self.reasks += 1
        retry = [
            *messages,
            {"role": "assistant", "content": answer[:_ECHO_CHARS]},
            {
                "role": "user",
                "content": REASK.format(error=error, keys=schema_keys(schema))
                if schema is not None
                else TEXT_REASK.format(error=error),
            },
        ]
        second = await self._chat(retry, schema, name, repeat)
        try:
            return parse(second.text)
        except JudgeOutputError as exc:
            raise self.error(
                f"judge output unparseable after a re-ask: {exc} "
                f"(first answer: {error}); last answer: {_quote(second.text)}"
            ) from None

    @overload
    async def ask_repeated(
        self,
        messages: JudgeMessages,
        schema: dict[str, JsonValue] | None,
        parser: type[M],
        *,
        repeats: int = ...,
        name: str = ...,
    ) -> Repeated[M]: ...
    @overload
    async def ask_repeated(
        self,
        messages: JudgeMessages,
        schema: dict[str, JsonValue] | None,
        parser: Callable[[str], T],
        *,
        repeats: int = ...,
        name: str = ...,
    ) -> Repeated[T]: ...
    async def ask_repeated(
        self,
        messages: JudgeMessages,
        schema: dict[str, JsonValue] | None,
        parser: type[BaseModel] | Callable[[str], object],
        *,
        repeats: int = 1,
        name: str = "verdict",
    ) -> Repeated[object]:
        """`ask` K times concurrently (repeat r is sent as trial `trial * 1000 + r`).

        A repeat that fails is recorded in `errors` (and its share in `unanswered`: a grade
        decides only when those repeats could not change it); when all fail, the first error is
        raised.
        """
        k = max(1, int(repeats))
        if k == 1:  # the usual call: no task to gather (`ask`'s JudgeError is the one to raise)
            return Repeated(values=[await self.ask(messages, schema, parser, name=name, repeat=0)])
        results = await asyncio.gather(
            *(self.ask(messages, schema, parser, name=name, repeat=r) for r in range(k)),
            return_exceptions=True,
        )
        values: list[object] = []
        errors: list[str] = []
        for result in results:
            if isinstance(result, JudgeError):
                errors.append(str(result))
            elif isinstance(result, BaseException):
                raise result
            else:
                values.append(result)
        if not values:
            raise self.error(f"all {k} judge repeats failed; first: {errors[0]}")
        self.unanswered = max(self.unanswered, len(errors) / k)
        return Repeated(values=values, errors=errors)

    def error(self, message: str) -> JudgeError:
        """A JudgeError carrying the usage consumed so far (calls and re-asks included)."""
        return JudgeError(message, usage=self.usage, cost_usd=self.cost_usd, calls=self.calls, reasks=self.reasks)


def _as_parser(
    parser: type[BaseModel] | Callable[[str], object], speaks_agentv: Callable[[], bool] | None = None
) -> Callable[[str], object]:
    """`parser` as a function of the answer's text; an answer a pydantic model refuses is read in
    one of AgentV's shapes (`convoeval.judging._agentv`) when `speaks_agentv()` says the judge is
    a program (AgentV's `cli` grader targets answer in AgentV's judge protocol), asked only then."""
    if isinstance(parser, type) and issubclass(parser, BaseModel):
        model = parser
        return lambda text: _parse_answer(model, text, speaks_agentv)
    return parser


def _parse_answer(model: type[BaseModel], text: str, speaks_agentv: Callable[[], bool] | None) -> object:
    try:
        return parse_answer(model, text)
    except JudgeOutputError:
        if speaks_agentv is None or not speaks_agentv():
            raise
        answer = agentv_answer(model, extract_json(text))
        if answer is None:
            raise
        return answer


def _quote(text: str) -> str:
    return repr(shorten(text, _QUOTE_CHARS))
