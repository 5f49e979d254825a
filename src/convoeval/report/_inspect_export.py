"""A run as an Inspect AI eval log (`.eval` or `.json`), written with Inspect's own models and
`write_eval_log` (optional extra `inspect`: `inspect_ai`), so that `inspect view` opens it and
`read_eval_log` reads it back.

One log per target (a run with several targets writes `<name>-<target>.eval` for each). Each
test is a sample (`id` the test id, one epoch per trial, `target` an imported Inspect sample's
own): its transcript as Inspect chat messages (tool calls with their results as `tool`
messages; a call that never returned gets none), the last reply as the output, its metadata
with convoeval's `suite`, `target` (the system under test) and `mode`,
and a `convoeval` score whose value is the test's score, `answer` its verdict, and whose
metadata holds the execution status and every turn's and the conversation's score and verdict.
The log's results carry the mean score and the pass rate.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ConfigError
from ..results import EvaluationResult, Message, ToolCall, TrialResult
from ._failures import headline

if TYPE_CHECKING:
    from inspect_ai.log import EvalLog, EvalSample
    from inspect_ai.model import ChatMessage

INSPECT_EXTRA = "inspect_ai (pip install 'convoeval[inspect]')"


def _require_inspect() -> None:
    """Inspect AI is installed (the functions below import from it), or a ConfigError."""
    try:
        import inspect_ai.log  # noqa: F401
    except ImportError:
        raise ConfigError(f"writing an Inspect log needs {INSPECT_EXTRA}") from None


def _messages(messages: Sequence[Message]) -> list[ChatMessage]:
    from inspect_ai import model

    out: list[ChatMessage] = []
    for m in messages:
        if m.source == "tool" or m.role == "tool":
            if m.tool_calls:  # convoeval's record of calls: Inspect's assistant call, then results
                out += _calls(len(out), "", m.tool_calls)
            else:
                out.append(model.ChatMessageTool(content=m.content))
        elif m.role == "system":
            out.append(model.ChatMessageSystem(content=m.content))
        elif m.role == "user":
            out.append(model.ChatMessageUser(content=m.content))
        else:
            out += _calls(len(out), m.content, m.tool_calls)
    return out


def _calls(at: int, text: str, calls: Sequence[ToolCall]) -> list[ChatMessage]:
    """An assistant message saying `text` and making `calls`, then a `tool` message for each call
    that returned (a call with no output nor error never did: no result is made up for it)."""
    from inspect_ai import model, tool

    made = [
        tool.ToolCall(id=c.id or f"call-{at}-{n}", function=c.name, arguments=c.arguments) for n, c in enumerate(calls)
    ]
    out: list[ChatMessage] = [model.ChatMessageAssistant(content=text, tool_calls=made or None, source="generate")]
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


def _sample(result: EvaluationResult, trial: TrialResult | None, epoch: int) -> EvalSample:
    from inspect_ai import log, model, scorer

    output = trial.output if trial is not None else result.output
    scores = trial.scores if trial is not None else result.scores
    score = trial.score if trial is not None else result.score
    verdict = trial.verdict if trial is not None else result.verdict
    status = trial.execution_status if trial is not None else result.execution_status
    replies = [m.content for m in output if m.source == "target"]
    users = [m.content for m in output if m.role == "user"]
    entries = {e.name: {"score": e.score, "verdict": e.verdict, "type": e.type} for e in scores}
    target = result.metadata.get("inspect_target", "")  # an imported sample's own
    if not isinstance(target, str) and not (isinstance(target, list) and all(isinstance(t, str) for t in target)):
        target = str(target)
    return log.EvalSample(
        id=result.test_id,
        epoch=epoch,
        input=users[0] if users else "",
        target=target,
        messages=_messages(output),
        output=model.ModelOutput.from_content(model=result.target, content=replies[-1] if replies else ""),
        scores={
            "convoeval": scorer.Score(
                value=score if score is not None else 0.0,
                answer=verdict,
                explanation=headline(result),
                metadata={"verdict": verdict, "execution_status": status, "entries": entries},
            )
        },
        metadata={**result.metadata, "suite": result.suite, "target": result.target, "mode": result.mode},
        error=log.EvalError(message=result.error, traceback="", traceback_ansi="") if result.error else None,
    )


def _log(results: Sequence[EvaluationResult], target: str, name: str) -> EvalLog:
    from inspect_ai import log

    samples = []
    for result in results:
        trials: list[TrialResult | None] = list(result.trials) if len(result.trials) > 1 else [None]
        samples += [_sample(result, trial, n) for n, trial in enumerate(trials, start=1)]
    scored = [r.score or 0.0 for r in results]
    metrics = {
        "mean": log.EvalMetric(name="mean", value=sum(scored) / len(scored) if scored else 0.0),
        "pass_rate": log.EvalMetric(
            name="pass_rate", value=sum(r.verdict == "pass" for r in results) / len(results) if results else 0.0
        ),
    }
    created = datetime.now(UTC).isoformat(timespec="seconds")
    epochs = max((len(r.trials) for r in results), default=1) or 1
    return log.EvalLog(
        status="success",
        eval=log.EvalSpec(
            created=created,
            task=name,
            dataset=log.EvalDataset(name=name, samples=len(results)),
            model=target.replace(":", "/", 1),
            config=log.EvalConfig(epochs=epochs),
            metadata={"producer": "convoeval"},
        ),
        results=log.EvalResults(
            total_samples=len(samples),
            completed_samples=len(samples),
            scores=[log.EvalScore(name="convoeval", scorer="convoeval", metrics=metrics)],
        ),
        stats=log.EvalStats(started_at=created, completed_at=created),
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
