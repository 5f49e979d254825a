"""AgentV's `cli` provider: any shell command as a target.

The `command` template may use `{PROMPT}` (shell-quoted), `{PROMPT_FILE}` (a file holding
the prompt), `{OUTPUT_FILE}` (a file the command may write its reply to), `{FILES}`,
`{EVAL_ID}` (the test id), `{ATTEMPT}` and `{SESSION_ID}`. The reply is the output file when
the command wrote one, else its stdout (bytes that are not UTF-8 read as U+FFFD): plain text,
or JSON with `output` messages (and their `tool_calls`) or `text`, `token_usage`, `cost_usd`,
`duration_ms`, `session_id`, `error` (the turn failed), read as AgentV reads them
(`_replies.reply_from_json`).

Without `session:` settings the command cannot continue a conversation, so a multi-turn test
runs single-shot (all turns in one prompt); in an AgentV eval file, as AgentV runs it
(`orchestrator.ts` `runConversationMode`), once per turn with that turn's message alone. With
them it is resumed every turn:

    session:
      resume_args: "--session {SESSION_ID}"   # appended to the command on later turns
      id_jsonpath: "$.session_id"             # where the id is in the JSON output, or
      id_regex: "session: (\\S+)"             # a regex (group 1) over the output

An `id_regex` search that takes over 2 s is stopped: no id is found in that output (the
call fails, saying so, unless an earlier turn's id is kept).

Where the command runs: the trial's workspace when the test has one; else, for an eval file
found as AgentV's, `cwd` relative to the eval file's folder, or that folder itself (AgentV's
`resolveCliConfig`, `providers/targets.ts` v4.42.4 lines 286-299); else (convoeval's own suites)
`cwd` relative to the targets file's folder, or the working folder. The healthcheck runs there
too, or in its own `cwd` read the same way. In AgentV's files `{FILES}` is the test's attachments (absolute paths, AgentV's
`file_paths`), then the `files` setting's.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import tempfile
from pathlib import Path

from ..._jsonpath import parse_jsonpath
from ..._regex import RegexTimeout, compile_pattern, search
from ..._sandbox import scratch_folder
from ..._secrets import shown_url
from .._base import ChatReply, ChatRequest, TargetConfig, TargetError, provider
from .._settings import settings_of
from ._process import STDERR_TAIL, Line, agent_env, ending, failure, run_command, work_dir
from ._replies import priced, prompt_text, reply_from_text
from ._settings import CliSettings


@provider("cli")
class CliTarget:
    """Settings: `command` (required), `cwd`, `timeout_s` (or AgentV's `timeout_seconds`),
    `healthcheck` (`{command, timeout_s}` run once before the first call), `files`,
    `files_format` (default `{path}`), `keep_temp_files`, `session`, `env` / `env_passthrough`."""

    cacheable = False
    settings_model = CliSettings

    def __init__(self, config: TargetConfig):
        self.config = config
        self.name = config.name
        self.settings = settings_of(config, CliSettings)
        self.command = self.settings.command
        self.timeout_s = float(self.settings.timeout_seconds or config.timeout_s)
        session = self.settings.session
        self.resume_args = session.resume_args if session else ""
        self.id_path = parse_jsonpath(session.id_jsonpath) if session and session.id_jsonpath else None
        self.id_regex = compile_pattern(session.id_regex) if session and session.id_regex else None
        self.session = "resume" if session else "single_shot"
        self._healthy: bool | None = None

    async def chat(self, request: ChatRequest) -> ChatReply:
        env, secrets = agent_env(self.config, self.settings)
        await self._check_health(env, secrets, request.agent.eval_dir)
        system, prompt = prompt_text(request.messages)
        if system and not request.session_id:
            prompt = f"{system}\n\n{prompt}"
        if self.session == "single_shot" and request.agent.agentv_turns:  # AgentV's `question`
            prompt = next(
                (str(m.get("content", "")) for m in reversed(request.messages) if m.get("role") == "user"), ""
            )
        with scratch_folder("convoeval-cli-") as scratch:
            prompt_file, output_file = scratch / "prompt.txt", scratch / "output.txt"
            prompt_file.write_text(prompt, encoding="utf-8")
            command = self._render(prompt, prompt_file, output_file, request)
            cwd = request.agent.workdir or self._cwd(request.agent.eval_dir)
            finished = await run_command(
                [command],
                cwd=cwd,
                env=env,
                timeout_s=self.timeout_s,
                name=self.name,
                secrets=secrets,
                shell=True,
                explain=_printed,
            )
            if finished.returncode:
                raise failure(self.name, finished, secrets)
            raw = output_file.read_bytes().decode("utf-8", "replace") if output_file.exists() else ""
            if self.settings.keep_temp_files:
                kept = Path(tempfile.mkdtemp(prefix="convoeval-cli-kept-"))
                for file in (prompt_file, output_file):
                    if file.exists():
                        shutil.copyfile(file, kept / file.name)
        text = raw if raw.strip() else finished.stdout
        try:
            reply = reply_from_text(text)
        except TargetError as exc:
            raise exc.reworded(f"{self.name}: {exc}") from None
        if self.session == "resume":
            found, why = (reply.session_id, "") if reply.session_id else self._session_id(text)
            reply.session_id = found or request.session_id
            if reply.session_id is None:
                raise TargetError(f"{self.name}: no session id in the output (session: id_jsonpath / id_regex){why}")
        reply.latency_ms = reply.latency_ms or finished.duration_ms
        return priced(reply, self.config)

    def _render(self, prompt: str, prompt_file: Path, output_file: Path, request: ChatRequest) -> str:
        command = self.command
        if request.session_id and self.resume_args:
            command = f"{command} {self.resume_args}"
        files = " ".join(
            self.settings.files_format.replace("{path}", shlex.quote(f)).replace(
                "{basename}", shlex.quote(Path(f).name)
            )
            for f in dict.fromkeys([*request.agent.input_files, *self.settings.files])
        )
        values = {
            "PROMPT": shlex.quote(prompt),
            "PROMPT_FILE": shlex.quote(str(prompt_file)),
            "OUTPUT_FILE": shlex.quote(str(output_file)),
            "FILES": files,
            "EVAL_ID": shlex.quote(request.test_id or "test"),
            "ATTEMPT": "0",
            "SESSION_ID": shlex.quote(request.session_id or ""),
        }
        return re.sub(
            r"\{(PROMPT_FILE|PROMPT|OUTPUT_FILE|FILES|EVAL_ID|ATTEMPT|SESSION_ID)\}",
            lambda m: values[m.group(1)],
            command,
        )

    def _session_id(self, text: str) -> tuple[str | None, str]:
        """The session id in the output, or None and (when it is worth saying) why: an
        `id_regex` search over its time bound is stopped and finds nothing."""
        if self.id_regex is not None:
            try:
                match = search(self.id_regex, text, field="session.id_regex", what="output")
            except RegexTimeout as exc:
                return None, f": {exc}"
            return ((match.group(1) if match.re.groups else match.group(0)) if match else None), ""
        if self.id_path is not None:
            reply_json = _json(text)
            found = self.id_path.find(reply_json) if reply_json is not None else []
            return (str(found[0].value) if found else None), ""
        return None, ""

    def _cwd(self, eval_dir: str | None, cwd: object = None) -> Path | None:
        """Where the command runs without a workspace (the module docstring); `cwd`: the
        healthcheck's own, read the same way (AgentV's `normalizeCliHealthcheck`)."""
        given = cwd if isinstance(cwd, str) else self.settings.cwd
        if eval_dir is None:
            return work_dir(self.config, given)
        folder = Path(eval_dir).resolve()
        return folder if given is None else folder / Path(given).expanduser()

    async def _check_health(self, env: dict[str, str], secrets: list[str], eval_dir: str | None) -> None:
        check = self.settings.healthcheck
        if check is None or self._healthy:
            return
        if self._healthy is False:
            raise TargetError(f"{self.name}: healthcheck failed earlier in this run")
        given = check.get("timeout_s") or check.get("timeout_seconds")
        timeout = float(given) if isinstance(given, int | float) else 30.0
        if isinstance(url := check.get("url"), str):
            self._healthy = False
            await _check_url(url, timeout, f"{self.name} healthcheck")
            self._healthy = True
            return
        finished = await run_command(
            [str(check["command"])],
            cwd=self._cwd(eval_dir, check.get("cwd")),
            env=env,
            timeout_s=timeout,
            name=f"{self.name} healthcheck",
            secrets=secrets,
            shell=True,
        )
        self._healthy = finished.returncode == 0
        if not self._healthy:
            raise failure(f"{self.name} healthcheck", finished, secrets)

    async def aclose(self) -> None:
        return None


async def _check_url(url: str, timeout_s: float, name: str) -> None:
    """AgentV's HTTP healthcheck (`cli.ts` `runHealthcheck`): a GET of `url` must answer 2xx
    within `timeout_s`.

    Raises:
        TargetError: it answered otherwise, or not at all.
    """
    import aiohttp

    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timeout_s)) as session,
            session.get(url) as response,
        ):
            if response.status // 100 != 2:
                raise TargetError(
                    f"{name}: {shown_url(url)} answered HTTP {response.status} {response.reason or ''}".rstrip()
                )
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise TargetError(
            f"{name}: {shown_url(url)}: {str(exc) or 'timed out after ' + format(timeout_s, 'g') + ' s'}"
        ) from None


def _printed(lines: list[Line]) -> str | None:
    """What a command that timed out had printed (its end), for the error."""
    text = "\n".join(line.text for line in lines).strip()
    return f"it printed: {ending(text, STDERR_TAIL)}" if text else None


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return None
