"""`code-grader`: grade with any program that reads the grading context as JSON on stdin.

The program gets one JSON object on stdin:

    {"output": [{role, content, tool_calls}], "output_text", "answer", "question",
     "input": [{role, content}], "expected_output", "reference_answer", "criteria", "config",
     "turn", "level", "variables", "transcript": [{role, content, source, turn, tool_calls}],
     "test_id", "trial", "latency_ms", "latencies_ms", "token_usage", "cost_usd", "tool_calls"}

`output` is the list of messages being graded (the reply at turn level, every target message
at conversation level; `output_text`/`answer` hold the text; a reply an agent gave as content
parts also has them as `content_parts`), as AgentV up to v4.35 sent it, and
`config` holds the assertion's `config:` mapping plus any extra keys written on the assertion.
For AgentV's files (`agentv_protocol`) `output` is the text, as AgentV v4.38 and later send it
(`_agentv_code.agentv_payload`), unless the program's AgentV SDK is older than 4.36.

and prints one JSON object on stdout (if it prints other lines first, the last line that is
a JSON object counts):

    {"score": 0.75, "assertions": [{"text": "...", "passed": true, "evidence": "..."}],
     "details": {...}}

`{"pass": true}` alone means score 1 (false: 0); with both, `pass` decides the verdict; with
neither, the share of `assertions` that passed (AgentV). `workspace_path` repeats `workspace`
and `messages` the transcript as `{role, content}`, under AgentV v4.42's names.
A `reason` string is kept in the details. A non-zero exit, a timeout, a missing program or
output without a score is a grader error, never a score.

With `target: {max_calls: N}` (AgentV's target proxy; `_target_proxy.py`) the program may call
the check's judge through a loopback proxy of its own, without the judge's keys.

Example:
    - type: code-grader
      command: python graders/check_itinerary.py
      timeout_s: 10
"""

from __future__ import annotations

import json
import math
import shlex
import signal
from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, ValidationError, field_validator, model_validator

from .. import _sandbox as sandbox
from .._base_model import Model
from .._secrets import scrubbed_env
from .._text import shorten
from ..results import AssertionOutcome
from ._agentv_code import agentv_grade, agentv_payload, grader_sdk
from ._base import Grade, GradeContext, GraderError, JudgedAssertion, assertion_type
from ._target_proxy import Field_, TargetAccess, TargetProxy

_STDERR_CHARS = 300
#: Bytes of a sandboxed program's stdout (and of its stderr) kept.
PROGRAM_BYTES = 4 * 1024 * 1024


@assertion_type
class CodeGrader(JudgedAssertion):
    """Runs a command that reads the grading context as JSON on stdin and prints
    `{"score": 0..1, "assertions": [...], "details": {...}}` (or `{"pass": true}`) on stdout."""

    model_config = ConfigDict(extra="allow")  # extra keys reach the program as `config` (AgentV)

    type: Literal["code-grader"]
    config: dict[str, object] = Field(
        default_factory=dict, description="Settings passed to the program as `config` on stdin."
    )
    command: list[str] | str = Field(
        description="The program and its arguments: a list, or a string split like a shell "
        "command line (no shell features such as pipes or $VARS)."
    )
    cwd: str | None = Field(
        None,
        description="Working directory, relative to the eval file's folder (default: the test's "
        "workspace if it has one, else that folder).",
    )
    timeout_s: float = Field(30.0, gt=0, le=86_400, description="Seconds before the command is killed.")
    agentv_protocol: bool = Field(
        False,
        description="Read the program as AgentV does (set for AgentV files): a non-zero exit scores 0, "
        "plain text on a zero exit scores 1, a score is clamped to 0..1 (see `_agentv_code.py`).",
    )
    env: dict[str, str] | list[str] = Field(
        default_factory=dict,
        description="Extra environment variables for the command (a mapping), or "
        "names of variables to pass on (a list). Variables named like *KEY*, *TOKEN*, *SECRET* are "
        "not passed unless named here.",
    )
    target: TargetAccess | None = Field(
        None,
        description="AgentV's target proxy: `true` or `{max_calls: N}` lets the program call the check's judge "
        "(AGENTV_TARGET_PROXY_URL and _TOKEN, `createTargetClient()`); see the AgentV guide.",
    )
    provider: TargetAccess | None = Field(
        None, description="`target` under AgentV's later name (AGENTV_PROVIDER_PROXY_URL and _TOKEN)."
    )

    @field_validator("target", "provider", mode="before")
    @classmethod
    def _switch(cls, value: object) -> object:
        """`true` turns the proxy on with AgentV's defaults, `false` leaves it off."""
        if value is True:
            return {}
        if value is not None and value is not False and not isinstance(value, dict):
            raise ValueError("the target proxy is `true` or a mapping like `{max_calls: 10}`")
        return None if value is False else value

    @model_validator(mode="after")
    def _one_proxy(self) -> CodeGrader:
        if self.target is not None and self.provider is not None:
            raise ValueError("give `target` or `provider` (the same target proxy), not both")
        if self.judge is not None and self.access is None:
            raise ValueError("a code-grader's `judge` answers its target proxy: add `target: {max_calls: N}`")
        return self

    @property
    def access(self) -> tuple[Field_, TargetAccess] | None:
        """The proxy's field and settings, or None when the program gets no model."""
        if self.target is not None:
            return "target", self.target
        return ("provider", self.provider) if self.provider is not None else None

    @property
    def uses_judge(self) -> bool:  # type: ignore[override]
        return self.judge is None and self.access is not None

    @field_validator("command")
    @classmethod
    def _check_command(cls, command: list[str] | str) -> list[str] | str:
        return nonempty_command(command)

    @property
    def argv(self) -> list[str]:
        return split_command(self.command)

    def _environment(self) -> dict[str, str]:
        """The command's environment: no secrets (API keys) unless `env` names or sets them."""
        if isinstance(self.env, list):
            return scrubbed_env(self.env)
        return {**scrubbed_env(self.env), **self.env}

    async def grade(self, ctx: GradeContext) -> Grade:
        argv = self.argv
        shown = shown_command(argv)
        cwd = self._cwd(ctx)
        if cwd != Path(ctx.base_dir):  # in the workspace: the eval folder's scripts by full path
            argv = [
                str(ctx.base_dir / a) if not Path(a).is_absolute() and (ctx.base_dir / a).is_file() else a for a in argv
            ]
        env = self._environment()
        sdk = grader_sdk(argv, cwd, env) if self.speaks_agentv else None
        payload = json.dumps(self.payload(ctx, sdk), ensure_ascii=False, default=str).encode()
        if self.access is None:
            return await self._run(argv, shown, cwd, ctx, payload, env, None)
        field, access = self.access
        if ctx.judge is None:  # a caller of `agrade` without a judge: the program could not call one
            raise GraderError(f"this code-grader's `{field}:` needs a judge model; pass --judge")
        others = {name: judge for name, judge in ctx.judges.items() if name != self.judge}
        proxy = TargetProxy(
            ctx.judge,
            others,
            access.max_calls,
            field,
            trial=ctx.trial,
            test_id=ctx.test_id,
            temperature=ctx.judge_temperature,
        )
        async with proxy:
            try:
                grade = await self._run(argv, shown, cwd, ctx, payload, env, proxy)
            except GraderError as exc:
                exc.judge_calls, exc.judge_usage, exc.judge_cost_usd = proxy.calls, proxy.usage, proxy.cost_usd
                raise
        grade.judge_calls, grade.judge_usage, grade.judge_cost_usd = proxy.calls, proxy.usage, proxy.cost_usd
        grade.details = {**(grade.details or {}), "target_proxy": proxy.record()}
        return grade

    async def _run(
        self,
        argv: list[str],
        shown: str,
        cwd: Path,
        ctx: GradeContext,
        payload: bytes,
        env: dict[str, str],
        proxy: TargetProxy | None,
    ) -> Grade:
        """Run the program in `env` (with the proxy's relay and token) and read its grade."""
        relay = None
        if proxy is not None:
            env, relay = {**env, **proxy.env}, proxy.relay
        try:
            if ctx.workdir is not None and cwd == ctx.workdir:  # in the workspace: in the run's sandbox
                stdout, err_text = await run_sandboxed(argv, shown, ctx, env, payload, self.timeout_s, relay)
            else:
                stdout, err_text = await run_program(argv, shown, cwd, env, payload, self.timeout_s, relay=relay)
        except ProgramFailed as failed:
            if not self.agentv_protocol:
                raise
            return agentv_grade(failed.code, failed.stdout, failed.stderr, shown)
        if self.agentv_protocol:
            return agentv_grade(0, stdout, err_text, shown)
        result = parse_program_json(stdout, shown, stderr_note(err_text))
        grade = self.grade_result(result, shown)
        if err_text:
            grade.details = {**(grade.details or {}), "stderr": shorten(err_text, _STDERR_CHARS)}
        return grade

    @property
    def speaks_agentv(self) -> bool:
        """Whether the program reads AgentV's stdin (`agentv_payload`)."""
        return self.agentv_protocol

    def payload(self, ctx: GradeContext, sdk: tuple[int, ...] | None = None) -> dict[str, object]:
        """What the program reads on stdin (AgentV's shape for AgentV files: `agentv_payload`,
        for a grader whose AgentV SDK has the version `sdk`)."""
        found = grading_payload(ctx, {**(self.model_extra or {}), **self.config})
        return agentv_payload(found, ctx, sdk) if self.speaks_agentv else found

    def grade_result(self, result: dict[str, object], shown: str) -> Grade:
        """The grade of what the program printed."""
        return grade_from_json(result, shown)

    def _cwd(self, ctx: GradeContext) -> Path:
        """`cwd` (relative to the eval file's folder), else the workspace, else that folder."""
        if self.cwd is None and ctx.workdir is not None:
            return ctx.workdir
        base = Path(ctx.base_dir)
        cwd = base if self.cwd is None else base / Path(self.cwd).expanduser()
        if not cwd.is_dir():
            raise GraderError(f"code-grader working directory {str(cwd)!r} does not exist")
        return cwd


class OutputTransform(Model):
    """A program that rewrites the output before checks grade it (promptfoo's `transform`): it
    reads the grading context as a code-grader does (JSON on stdin) and what it prints on stdout
    (one trailing newline dropped) is the output the checks see. It runs where a code-grader
    does: in the trial's sandboxed workspace if there is one, else in the eval file's folder.
    A failure (non-zero exit, timeout) is a grader error, never a verdict.

    Example:
        transform: {command: [python3, scripts/extract_answer.py]}
    """

    model_config = ConfigDict(extra="forbid")

    command: list[str] | str = Field(
        description="The program and its arguments (a list, or a string split as a shell would)."
    )
    config: dict[str, object] = Field(default_factory=dict, description="Settings passed to the program as `config`.")
    timeout_s: float = Field(30.0, gt=0, le=86_400, description="Seconds before the program is killed.")

    @field_validator("command")
    @classmethod
    def _check_command(cls, command: list[str] | str) -> list[str] | str:
        return nonempty_command(command)

    async def apply(self, ctx: GradeContext) -> str:
        """The output the program makes of `ctx`'s."""
        argv = split_command(self.command)
        shown = shown_command(argv)
        payload = json.dumps(grading_payload(ctx, self.config), ensure_ascii=False, default=str).encode()
        if ctx.workdir is not None:
            stdout, _ = await run_sandboxed(argv, shown, ctx, scrubbed_env(), payload, self.timeout_s)
        else:
            stdout, _ = await run_program(
                argv, shown, Path(ctx.base_dir), scrubbed_env(), payload, self.timeout_s, "transform"
            )
        return stdout.removesuffix("\n")


def shown_command(argv: list[str]) -> str:
    """A command line for messages: an inline script (an argument of several lines, such as the
    program of `node -e`) as `<script>`, the whole cut to 120 characters."""
    return shorten(shlex.join("<script>" if "\n" in arg else arg for arg in argv), 120)


def nonempty_command(command: list[str] | str) -> list[str] | str:
    """`command`, if it names a program (else a ValueError for the validator)."""
    argv = split_command(command)
    if not argv or not argv[0].strip():
        raise ValueError("the command must not be empty")
    return command


def split_command(command: list[str] | str) -> list[str]:
    """A command as argv: a list as is, a string split like a shell command line."""
    if isinstance(command, str):
        try:
            return shlex.split(command)
        except ValueError as exc:  # unbalanced quotes
            raise ValueError(f"cannot split the command {command!r}: {exc}") from None
    return list(command)


def grading_payload(ctx: GradeContext, config: dict[str, object]) -> dict[str, object]:
    """The grading context as a program reads it on stdin (see the module docstring)."""
    reply = ctx.reply
    usage = reply.usage if reply is not None else ctx.usage
    token_usage = {**usage.model_dump(), "total_tokens": usage.total_tokens} if usage is not None else None
    if reply is not None:
        graded = [
            {
                "role": "assistant",
                "content": ctx.output,
                "tool_calls": [c.model_dump(mode="json") for c in reply.tool_calls],
                **({"content_parts": reply.content} if reply.content is not None else {}),
            }
        ]
    else:
        graded = [
            {"role": m.role, "content": m.content, "tool_calls": [c.model_dump(mode="json") for c in m.tool_calls]}
            for m in ctx.transcript
            if m.source == "target"
        ]
    users = [m.content for m in ctx.history if m.role == "user"]
    return {
        "output": graded,
        "output_text": ctx.output,
        "answer": ctx.output,
        "question": users[-1] if users else "",
        "input": [m.to_chat() for m in ctx.history],
        "expected_output": ctx.expected_output,
        "reference_answer": ctx.expected_output,
        "criteria": ctx.criteria,
        "config": config,
        "turn": ctx.turn,
        "level": ctx.level,
        "variables": ctx.variables,
        "transcript": [m.model_dump(mode="json") for m in ctx.transcript],
        "messages": [m.to_chat() for m in ctx.transcript],  # AgentV v4.42: the conversation as role/content
        "test_id": ctx.test_id,
        "trial": ctx.trial,
        "latency_ms": reply.latency_ms if reply is not None else None,
        "latencies_ms": ctx.latencies_ms if reply is None else None,
        "token_usage": token_usage,
        "cost_usd": reply.cost_usd if reply is not None else ctx.cost_usd,
        "tool_calls": [c.model_dump(mode="json") for c in reply.tool_calls] if reply is not None else [],
        "workspace": str(ctx.workdir) if ctx.workdir is not None else None,
        "workspace_path": str(ctx.workdir) if ctx.workdir is not None else None,  # AgentV's name
        "file_changes": ctx.file_changes,
    }


async def run_program(
    argv: list[str],
    shown: str,
    cwd: Path,
    env: dict[str, str],
    payload: bytes,
    timeout_s: float,
    what: str = "code-grader",
    *,
    relay: sandbox.Relay | None = None,
) -> tuple[str, str]:
    """Run the command (in the eval file's folder, on the host) with `payload` on stdin and
    return its stdout and (stripped) stderr, each read as it arrives and kept up to
    PROGRAM_BYTES; on timeout or cancellation it is killed with its children. A non-zero exit
    is a GraderError quoting its stderr. `what` names the command in errors (`code-grader`,
    `llm-grader prompt command`). With `relay`, the program runs under it (`_sandbox/_relay.py`)."""
    try:
        ran = await sandbox.run(
            argv,
            cwd,
            timeout_s=timeout_s,
            env=env,
            stdin=payload,
            cap=PROGRAM_BYTES,
            separate_stderr=True,
            host=True,
            relay=relay,
        )
    except FileNotFoundError:
        raise GraderError(
            f"{what} command not found: {argv[0]!r} (not on PATH, nor relative to {str(cwd)!r})"
        ) from None
    except PermissionError:
        raise GraderError(
            f"{what} command {argv[0]!r} is not executable (chmod +x it, or run it through "
            "its interpreter, e.g. `python script.py`)"
        ) from None
    except OSError as exc:
        raise GraderError(f"{what} `{shown}` could not start: {exc}") from None
    if _not_started(ran):
        raise GraderError(f"{what} command not found: {argv[0]!r} (not on PATH, nor relative to {str(cwd)!r})")
    return _finished(ran, shown, timeout_s, what)


def _signal(number: int) -> str:
    """`signal 6 (SIGABRT)`, with a hint where a sandbox limit is the usual cause."""
    try:
        name = signal.Signals(number).name
    except ValueError:
        return f"signal {number}"
    hint = _LIMIT_HINTS.get(name)
    return f"signal {number} ({name}{'; ' + hint if hint else ''})"


#: What a signal usually means for a command under the sandbox's limits.
_LIMIT_HINTS = {
    "SIGABRT": "a runtime that could not reserve memory aborts: raise `sandbox: {memory_mb: ...}`",
    "SIGSEGV": "past `sandbox: {memory_mb: ...}` a program may crash",
    "SIGXCPU": "it used `sandbox: {cpu_seconds: ...}`",
    "SIGXFSZ": "it wrote a file larger than `sandbox: {file_size_mb: ...}`",
}


def _not_started(ran: sandbox.Finished) -> bool:
    """Whether bubblewrap or the proxy's relay could not start the program (no such file)."""
    starts = ran.stderr.startswith("bwrap: execvp") or ran.stderr.startswith(sandbox.RELAY_NOT_FOUND)
    return ran.code == 1 and starts and "No such file" in ran.stderr


def _finished(ran: sandbox.Finished, shown: str, timeout_s: float, what: str) -> tuple[str, str]:
    """stdout and stripped stderr of a program that ended well; otherwise a GraderError."""
    err_text = ran.stderr.strip()
    if ran.timed_out:
        raise GraderError(f"{what} `{shown}` timed out after {timeout_s:g}s and was killed")
    if ran.killed_by:
        raise GraderError(f"{what} `{shown}` was killed by {_signal(ran.killed_by)}{stderr_note(err_text)}")
    if ran.code != 0:
        raise ProgramFailed(f"{what} `{shown}` exited with code {ran.code}{stderr_note(err_text)}", ran, err_text)
    return ran.output, err_text


class ProgramFailed(GraderError):
    """A program that ran to its end with a non-zero exit status (its `code`, `stdout`, `stderr`)."""

    def __init__(self, message: str, ran: sandbox.Finished, stderr: str):
        super().__init__(message)
        self.code, self.stdout, self.stderr = ran.code, ran.output, stderr


async def run_sandboxed(
    argv: list[str],
    shown: str,
    ctx: GradeContext,
    env: dict[str, str],
    payload: bytes,
    timeout_s: float,
    relay: sandbox.Relay | None = None,
) -> tuple[str, str]:
    """Run a code-grader in the trial's workspace, in the run's sandbox (the workspace writable,
    the eval folder readable, the proxy's socket folder bound with `relay`); like `run_program`,
    a failure is a GraderError."""
    assert ctx.workdir is not None
    try:
        ran = await sandbox.run(
            argv,
            ctx.workdir,
            timeout_s=timeout_s,
            writable=ctx.workdir,
            readable=[Path(ctx.base_dir)],
            env=env,
            stdin=payload,
            cap=PROGRAM_BYTES,
            separate_stderr=True,
            relay=relay,
        )
    except sandbox.SandboxError as exc:
        raise GraderError(f"code-grader `{shown}`: {exc}") from None
    except FileNotFoundError:
        ran = None
    except OSError as exc:
        raise GraderError(f"code-grader `{shown}` could not start: {exc}") from None
    if ran is None or _not_started(ran):
        raise GraderError(
            f"code-grader command not found: {argv[0]!r} (not on PATH, nor relative to {str(ctx.base_dir)!r})"
        )
    return _finished(ran, shown, timeout_s, "code-grader")


def stderr_note(err_text: str) -> str:
    """`; stderr: ...` to end an error message with, or "" when the program printed nothing there."""
    return f"; stderr: {shorten(err_text, _STDERR_CHARS)}" if err_text else ""


def parse_program_json(stdout: str, shown: str, err_note: str) -> dict[str, object]:
    """The JSON object a program printed (the whole output, else its last JSON line)."""
    text = stdout.strip()
    expected = 'a JSON object like {"score": 0.8} or {"pass": true}'
    if not text:
        raise GraderError(f"code-grader `{shown}` printed nothing on stdout; expected {expected}{err_note}")
    try:
        result = json.loads(text)
    except json.JSONDecodeError:
        result = None
        for line in reversed(text.splitlines()):
            line = line.strip()
            if line.startswith("{"):
                try:
                    result = json.loads(line)
                    break
                except json.JSONDecodeError:
                    continue
    if not isinstance(result, dict):
        raise GraderError(
            f"code-grader `{shown}` did not print {expected}; stdout ended with {shorten(text[-200:], 200)!r}{err_note}"
        )
    return result


def grade_from_json(result: dict[str, object], shown: str) -> Grade:
    """A Grade from `{score?, pass?, assertions?, details?, reason?}` (with neither score nor pass,
    the share of `assertions` that passed, as AgentV does); anything else is a GraderError."""
    score = result.get("score")
    verdict = result.get("pass", result.get("passed"))
    if verdict is not None and not isinstance(verdict, bool):
        raise GraderError(f"code-grader `{shown}` printed pass={verdict!r}; it must be true or false")
    raw_assertions = result.get("assertions")
    if score is None and verdict is None and isinstance(raw_assertions, list) and raw_assertions:
        # AgentV (v4.42): without `score`, the share of its assertions that passed.
        passed = [a.get("passed") is True for a in raw_assertions if isinstance(a, dict)]
        score = sum(passed) / len(raw_assertions)
    if score is None:
        if verdict is None:
            raise GraderError(
                f"code-grader `{shown}` printed JSON without `score` or `pass`: {shorten(json.dumps(result), 200)}"
            )
        score = 1.0 if verdict else 0.0
    if isinstance(score, bool):
        score = float(score)
    if not isinstance(score, (int, float)) or not math.isfinite(score) or not 0 <= score <= 1:
        raise GraderError(f"code-grader `{shown}` printed score {score!r}; it must be a number from 0 to 1")
    raw = result.get("assertions") or []
    if not isinstance(raw, list):
        raise GraderError(f"code-grader `{shown}`: `assertions` must be a list of {{text, passed, evidence?}}")
    outcomes = []
    for k, item in enumerate(raw):
        if isinstance(item, dict) and "evidence" in item and not isinstance(item["evidence"], str):
            evidence = item["evidence"]
            item = {**item, "evidence": "" if evidence is None else json.dumps(evidence, default=str)}
        try:
            outcomes.append(AssertionOutcome.model_validate(item))
        except ValidationError:
            raise GraderError(
                f"code-grader `{shown}`: assertions[{k}] must be {{text, passed, evidence?}}, "
                f"got {shorten(json.dumps(item, default=str), 120)}"
            ) from None
    given = result.get("details")
    details: dict[str, object] | None = given if isinstance(given, dict) or given is None else {"details": given}
    reason = result.get("reason")
    if isinstance(reason, str):
        details = {**(details or {}), "reason": reason}
    return Grade(score=float(score), assertions=outcomes, details=details, passed=verdict)
