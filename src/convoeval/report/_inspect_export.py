"""A run as an Inspect AI eval log (`.eval` or `.json`), written with Inspect's own models and
`write_eval_log` (optional extra `inspect`: `inspect_ai`), so that `inspect view` opens it and
`read_eval_log` reads it back.

One log per target (a run with several targets writes `<name>-<target>.eval` for each). Each
test is a sample (`id` the test id, one epoch per trial): its transcript as Inspect chat
messages (tool calls with their results as `tool` messages; a call that never returned gets
none), the last reply as the output, its metadata with convoeval's `suite`, `target` (the
system under test) and `mode`, and a `convoeval` score whose value is the score, `answer` the
verdict, and whose metadata holds the execution status and every turn's and the
conversation's score and verdict. Each epoch has its trial's own error, budget (Inspect's
`limit`: `tokens` and `seconds` as `token` and `time`, others `custom`, the budget as the
reason), token usage (`model_usage`) and duration (`total_time`). A sample imported from an
Inspect log goes back as it came: its own id, epoch, target, metadata, error and scores, next
to convoeval's. The log's results carry the mean score and the pass rate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from ..errors import ConfigError
from ..results import EvaluationResult, Message, ToolCall, TrialResult, Usage
from ._failures import headline

if TYPE_CHECKING:
    from inspect_ai import model, scorer
    from inspect_ai.log import EvalLog, EvalSample, EvalSampleLimit
    from inspect_ai.model import ChatMessage

INSPECT_EXTRA = "inspect_ai (pip install 'convoeval[inspect]')"


def _require_inspect() -> None:
    """Inspect AI is installed (the functions below import from it), or a ConfigError."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        raise ConfigError(f"writing an Inspect log needs {INSPECT_EXTRA}") from None


def _messages(messages: Sequence[Message]) -> list[ChatMessage]:
    """Inspect's messages; those before the first reply are the sample's input (`source: input`,
    as Inspect marks them), an input history's assistant answers included."""
    from inspect_ai import model

    out: list[ChatMessage] = []
    given = True
    for m in messages:
        given = given and m.source != "tool" and (m.role != "assistant" or m.source == "input")
        source: Literal["input", "generate"] | None = "input" if given else None
        if m.source == "tool" or m.role == "tool":
            if m.tool_calls:  # convoeval's record of calls: Inspect's assistant call, then results
                out += _calls(len(out), "", m.tool_calls)
            else:
                out.append(model.ChatMessageTool(content=m.content))
        elif m.role == "system":
            out.append(model.ChatMessageSystem(content=m.content, source=source))
        elif m.role == "user":
            out.append(model.ChatMessageUser(content=m.content, source=source))
        else:
            out += _calls(len(out), m.content, m.tool_calls, source or "generate")
    return out


def _calls(
    at: int, text: str, calls: Sequence[ToolCall], source: Literal["input", "generate"] = "generate"
) -> list[ChatMessage]:
    """An assistant message saying `text` and making `calls`, then a `tool` message for each call
    that returned (a call with no output nor error never did: no result is made up for it)."""
    from inspect_ai import model, tool

    made = [
        tool.ToolCall(id=c.id or f"call-{at}-{n}", function=c.name, arguments=c.arguments) for n, c in enumerate(calls)
    ]
    out: list[ChatMessage] = [model.ChatMessageAssistant(content=text, tool_calls=made or None, source=source)]
    for call, raw in zip(made, calls, strict=True):
        if raw.output is not None or raw.error:
            content = raw.output if isinstance(raw.output, str) else _text(raw.output)
            error = tool.ToolCallError("unknown", raw.error) if raw.error else None
            out.append(
                model.ChatMessageTool(content=content, tool_call_id=call.id, function=call.function, error=error)
            )
    return out


def _text(value: object) -> str:
    import json

    return "" if value is None else json.dumps(value, ensure_ascii=False, default=str)


#: Inspect's limit types that every Inspect release reads, and convoeval's budgets among them.
_INSPECT_LIMITS = ("context", "time", "working", "message", "token", "operator")
_BUDGET_LIMITS = {"seconds": "time", "tokens": "token"}
_BUDGET = re.compile(r"(\w+?)(?:_limit)?=([0-9.eE+-]+)")


def _limit(budget_hit: str) -> EvalSampleLimit:
    """A budget convoeval hit (`tokens=100 at turn 2`, an imported `message_limit=6 (...)`) as
    Inspect's sample `limit`, with the whole text as its reason."""
    from inspect_ai import log

    match = _BUDGET.match(budget_hit)
    name = match.group(1) if match else ""
    kind = name if name in _INSPECT_LIMITS else _BUDGET_LIMITS.get(name, "custom")
    try:
        value = float(match.group(2)) if match else 0.0
    except ValueError:
        value = 0.0
    return log.EvalSampleLimit(type=kind, limit=int(value) if value.is_integer() else value, reason=budget_hit)


def _scores(result: EvaluationResult, score: scorer.Score) -> dict[str, scorer.Score]:
    """The `convoeval` score, after an imported sample's own scores (`inspect_scores`)."""
    from inspect_ai import scorer

    own = result.metadata.get("inspect_scores")
    kept = {
        name: scorer.Score(**{k: v for k, v in fields.items() if k in ("value", "answer", "explanation", "metadata")})
        for name, fields in (own.items() if isinstance(own, dict) else [])
        if isinstance(fields, dict) and "value" in fields and name != "convoeval"
    }
    return {**kept, "convoeval": score}


def _sample(result: EvaluationResult, trial: TrialResult | None, sample_id: str | int, epoch: int) -> EvalSample:
    from inspect_ai import log, model, scorer

    run = trial if trial is not None else result
    replies = [m.content for m in run.output if m.source == "target"]
    users = [m.content for m in run.output if m.role == "user"]
    entries = {e.name: {"score": e.score, "verdict": e.verdict, "type": e.type} for e in run.scores}
    target = result.metadata.get("inspect_target", "")  # an imported sample's own
    if not isinstance(target, str) and not (isinstance(target, list) and all(isinstance(t, str) for t in target)):
        target = str(target)
    metadata = {**result.metadata}
    error = run.error
    usage = {_model(result.target): _usage(run.token_usage)} if run.token_usage.total_tokens else {}
    seconds = round(run.duration_ms / 1000, 3) if run.duration_ms else None
    if "inspect_sample_id" in result.metadata:  # imported: its own metadata, error, tokens and time
        own = metadata.pop("sample", None)
        metadata = {k: v for k, v in metadata.items() if not k.startswith("inspect_")}
        metadata |= own if isinstance(own, dict) else {}
        if error and isinstance(result.metadata.get("inspect_error"), str):
            error = str(result.metadata["inspect_error"])
        counted, times = result.metadata.get("inspect_model_usage"), result.metadata.get("inspect_times")
        if isinstance(counted, dict) and not usage:
            usage = {m: model.ModelUsage.model_validate(c) for m, c in counted.items() if isinstance(c, dict)}
        if isinstance(times, dict) and isinstance(times.get("total_time"), int | float):
            seconds = times["total_time"]
    messages = _messages(run.output)
    given = [m for m in messages if m.source == "input"]
    return log.EvalSample(
        id=sample_id,
        epoch=epoch,
        input=given if any(m.role == "assistant" for m in given) else users[0] if users else "",
        target=target,
        messages=messages,
        output=model.ModelOutput.from_content(model=result.target, content=replies[-1] if replies else ""),
        scores=_scores(
            result,
            scorer.Score(
                value=run.score if run.score is not None else 0.0,
                answer=run.verdict,
                explanation=headline(result),
                metadata={"verdict": run.verdict, "execution_status": run.execution_status, "entries": entries},
            ),
        ),
        metadata={**metadata, "suite": result.suite, "target": result.target, "mode": result.mode},
        model_usage=usage,
        total_time=seconds,
        error=log.EvalError(message=error, traceback="", traceback_ansi="") if error else None,
        limit=_limit(run.budget_hit) if run.budget_hit else None,
    )


def _model(target: str) -> str:
    """A target as an Inspect model name (`openai:gpt-4o` -> `openai/gpt-4o`)."""
    return target.replace(":", "/", 1)


def _usage(usage: Usage) -> model.ModelUsage:
    from inspect_ai import model

    read, written = usage.cached_input_tokens, usage.cache_write_tokens
    return model.ModelUsage(
        input_tokens=max(0, usage.input_tokens - read - written),  # Inspect's leaves the prompt cache's out
        output_tokens=usage.output_tokens,
        total_tokens=usage.input_tokens + usage.output_tokens,
        input_tokens_cache_read=read or None,
        input_tokens_cache_write=written or None,
    )


class _Epoch(NamedTuple):
    """One sample to write: the result, its trial (None: the result stands for it), id and epoch."""

    result: EvaluationResult
    trial: TrialResult | None
    id: str | int
    epoch: int


def _epochs(results: Sequence[EvaluationResult]) -> list[_Epoch]:
    """The samples to write: a result's trials are its epochs. A sample imported from an Inspect
    log goes back under its own id and epoch (`inspect_sample_id`, `inspect_epoch`), unless
    another sample of the log already has them."""
    samples: list[_Epoch] = []
    taken: set[tuple[str, int]] = set()
    for result in results:
        trials: list[TrialResult | None] = list(result.trials) if len(result.trials) > 1 else [None]
        own, epoch = result.metadata.get("inspect_sample_id"), result.metadata.get("inspect_epoch", 1)
        if (
            len(trials) == 1
            and isinstance(own, str | int)
            and isinstance(epoch, int)
            and (str(own), epoch) not in taken
        ):
            taken.add((str(own), epoch))
            samples.append(_Epoch(result, None, own, epoch))
            continue
        for n, trial in enumerate(trials, start=1):
            taken.add((result.test_id, n))
            samples.append(_Epoch(result, trial, result.test_id, n))
    return samples


def _log(results: Sequence[EvaluationResult], target: str, name: str) -> EvalLog:
    from inspect_ai import log

    samples = [_sample(e.result, e.trial, e.id, e.epoch) for e in _epochs(results)]
    scored = [r.score for r in results if r.score is not None]  # as the run's summary: skips and errors left out
    metrics = {
        "mean": log.EvalMetric(name="mean", value=sum(scored) / len(scored) if scored else 0.0),
        "pass_rate": log.EvalMetric(
            name="pass_rate", value=sum(r.verdict == "pass" for r in results) / len(results) if results else 0.0
        ),
    }
    created = datetime.now(UTC).isoformat(timespec="seconds")
    epochs = max((s.epoch for s in samples), default=1)
    suites = {r.suite for r in results}
    suite = suites.pop() if len(suites) == 1 else None
    name = suite or name  # Inspect's task: the suite
    usage = Usage.total(r.token_usage for r in results)
    return log.EvalLog(
        status="success",
        eval=log.EvalSpec(
            created=created,
            task=name,
            dataset=log.EvalDataset(name=name, samples=len(results)),
            model=_model(target),
            config=log.EvalConfig(epochs=epochs),
            metadata={"producer": "convoeval"},
        ),
        results=log.EvalResults(
            total_samples=len(samples),
            completed_samples=len(samples),
            scores=[log.EvalScore(name="convoeval", scorer="convoeval", metrics=metrics)],
        ),
        stats=log.EvalStats(
            started_at=created,
            completed_at=created,
            model_usage={_model(target): _usage(usage)} if usage.input_tokens or usage.output_tokens else {},
        ),
        samples=samples,
    )


def write_inspect_log(results: Sequence[EvaluationResult], path: str | Path, *, name: str = "convoeval") -> list[Path]:
    """Write the results as Inspect eval log(s) at `path` (`.eval` or `.json`); returns the files."""
    _require_inspect()
    path = Path(path)
    if path.suffix not in (".eval", ".json"):
        raise ConfigError(f"{path}: an Inspect log is a .eval or .json file")
    targets = list(dict.fromkeys(r.target for r in results))
    if not targets:
        raise ConfigError("no results to write as an Inspect log")
    written = []
    for target in targets:
        out = path
        if len(targets) > 1:
            out = path.with_name(f"{path.stem}-{re.sub(r'[^A-Za-z0-9_.-]+', '-', target)}{path.suffix}")
        out.parent.mkdir(parents=True, exist_ok=True)
        from inspect_ai.log import write_eval_log

        log = _log([r for r in results if r.target == target], target, name)
        write_eval_log(log, str(out), format="eval" if out.suffix == ".eval" else "json")
        written.append(out)
    return written
