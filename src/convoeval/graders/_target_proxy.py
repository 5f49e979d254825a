"""AgentV's target proxy: a code-grader that calls a model, without the model's keys.

A code-grader (or `script`) with `target: {max_calls: N}` (or `target: true`; AgentV after
v5.3 writes `provider:`) gets, for each run of its program, a proxy of its own (AgentV's
`runtime/target-proxy.ts`, v4.15 to v5.3): an HTTP server on a Unix socket in a private folder,
which the program reaches at `http://127.0.0.1:PORT` through the sandbox's relay
(`_sandbox/_relay.py`). The program gets the URL and a one-time token, in
`AGENTV_TARGET_PROXY_URL` / `AGENTV_TARGET_PROXY_TOKEN` (`AGENTV_PROVIDER_PROXY_*` for
`provider:`), which `@agentv/sdk`'s `createTargetClient()` reads. Every request needs
`Authorization: Bearer TOKEN` (else 401):

- `POST /invoke` `{question, systemPrompt?, evalCaseId?, attempt?, target?}` ->
  `{output: [{role: "assistant", content}], rawText, tokenUsage: {input, output}}`; 400 without
  a `question` or for a `target` the run cannot resolve (the names available are listed), 429
  once `max_calls` calls were made, 500 `{error}` when the model call fails.
- `POST /invokeBatch` `{requests: [...]}` -> `{responses: [...]}`, the calls one after the
  other; 429 when the batch would pass `max_calls`; a request that cannot be made answers
  `{output: [], rawText: "Error: ..."}`.
- `GET /info` -> `{targetName, maxCalls, callCount, availableTargets}` (and `providerLabel`,
  `availableProviderLabels`, AgentV's names after v5.3).

The default target is the check's judge (its own `judge:`, else the run's); `target` may name
another judge of the run (a check's own `judge:`). Calls go through the run's model path
(response cache, meter, limits) as judge calls, so they count in the run's totals and budgets;
the grade records them (`judge_calls`, usage, cost) and `details.target_proxy` holds
`{call_count, max_calls}`.
"""

from __future__ import annotations

import hmac
import json
import secrets
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from pydantic import ConfigDict, Field

from .. import _sandbox as sandbox
from .._base_model import Model
from .._secrets import redact
from ..results import Usage
from ..targets import AgentContext, ChatRequest, Target

if TYPE_CHECKING:
    from aiohttp import web

#: AgentV's `DEFAULT_MAX_CALLS`.
DEFAULT_MAX_CALLS = 50
#: Bytes of a request body the proxy reads.
_MAX_BODY = 4 * 1024 * 1024
_NO_AGENT = AgentContext()

Field_ = Literal["target", "provider"]
#: The program's variables, by the field that asked for the proxy: (URL, token).
VARIABLES: dict[Field_, tuple[str, str]] = {
    "target": ("AGENTV_TARGET_PROXY_URL", "AGENTV_TARGET_PROXY_TOKEN"),
    "provider": ("AGENTV_PROVIDER_PROXY_URL", "AGENTV_PROVIDER_PROXY_TOKEN"),
}


class TargetAccess(Model):
    """A code-grader's `target:` (`true`, or a mapping): the program may call the judge."""

    model_config = ConfigDict(extra="forbid")

    max_calls: int = Field(
        DEFAULT_MAX_CALLS, ge=0, strict=True, description="Model calls one run of the program may make (AgentV: 50)."
    )


class TargetProxy:
    """One grader invocation's proxy: `async with TargetProxy(...) as proxy`, then run the
    program with `proxy.relay` and `proxy.env`; `proxy.calls`, `usage`, `cost_usd` afterwards."""

    def __init__(
        self,
        judge: Target,
        others: Mapping[str, Target],
        max_calls: int,
        field: Field_ = "target",
        *,
        trial: int = 0,
        test_id: str = "",
        temperature: float = 0.0,
    ):
        self.judge, self.max_calls, self.field = judge, max_calls, field
        self.targets = {**others, judge.name: judge}
        self.names = [judge.name, *(n for n in others if n != judge.name)]
        self.trial, self.test_id, self.temperature = trial, test_id, temperature
        self.token = secrets.token_hex(32)
        self.calls = 0
        self.usage = Usage()
        self.cost_usd = 0.0
        self._folder: Path | None = None
        self._runner: web.AppRunner | None = None

    @property
    def relay(self) -> sandbox.Relay:
        assert self._folder is not None, "the proxy is not started"
        return sandbox.Relay(self._folder / "proxy.sock", VARIABLES[self.field][0])

    @property
    def env(self) -> dict[str, str]:
        """The token's variable (the relay sets the URL's)."""
        return {VARIABLES[self.field][1]: self.token}

    def record(self) -> dict[str, object]:
        """What the grade's details keep (AgentV's `target_proxy` of its grader request)."""
        return {"call_count": self.calls, "max_calls": self.max_calls}

    async def __aenter__(self) -> TargetProxy:
        from aiohttp import web  # imported when a program asks for the proxy, not with the graders

        self._folder = Path(tempfile.mkdtemp(prefix="convoeval-proxy-"))  # mode 0700
        app = web.Application(client_max_size=_MAX_BODY)
        app.router.add_route("*", "/{path:.*}", self._route)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        await web.UnixSite(self._runner, str(self.relay.socket)).start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)

    async def _route(self, request: web.Request) -> web.Response:
        """The token first (401), then the endpoint (404 for any other path or method)."""
        from aiohttp import web

        given = request.headers.get("Authorization", "")
        if not hmac.compare_digest(given.encode(), f"Bearer {self.token}".encode()):
            return _answer(401, {"error": "Unauthorized"})
        handler = self._endpoints.get((request.method, request.path))
        if handler is None:
            return _answer(404, {"error": "Not found"})
        try:
            return await handler(request)
        except web.HTTPException as exc:  # a body too large
            return _answer(exc.status, {"error": exc.reason})

    @property
    def _endpoints(self) -> dict[tuple[str, str], Callable[[web.Request], Awaitable[web.Response]]]:
        return {
            ("GET", "/info"): self._info,
            ("POST", "/invoke"): self._invoke,
            ("POST", "/invokeBatch"): self._invoke_batch,
        }

    async def _info(self, request: web.Request) -> web.Response:
        return _answer(
            200,
            {
                "targetName": self.judge.name,
                "providerLabel": self.judge.name,
                "maxCalls": self.max_calls,
                "callCount": self.calls,
                "availableTargets": self.names,
                "availableProviderLabels": self.names,
            },
        )

    async def _invoke(self, request: web.Request) -> web.Response:
        if self.calls >= self.max_calls:
            return _answer(429, {"error": self._spent()})
        body = await _json(request)
        if not isinstance(body, dict):
            return _answer(400, {"error": "the body must be a JSON object"})
        problem, target = self._target_of(body)
        if target is None:
            return _answer(400, {"error": problem})
        try:
            return _answer(200, await self._call(target, body))
        except _Spent:  # calls made while this body was read used up the rest
            return _answer(429, {"error": self._spent()})
        except Exception as exc:  # the model call failed: the program reads why (no traceback)
            return _answer(500, {"error": _failure(exc)})

    def _spent(self) -> str:
        return f"Max calls exceeded (limit: {self.max_calls})"

    async def _invoke_batch(self, request: web.Request) -> web.Response:
        body = await _json(request)
        requests = body.get("requests") if isinstance(body, dict) else None
        if not isinstance(requests, list):
            return _answer(400, {"error": "Missing required field: requests (array)"})
        if self.calls + len(requests) > self.max_calls:
            return _answer(
                429,
                {
                    "error": f"Batch would exceed max calls (current: {self.calls}, batch: {len(requests)}, "
                    f"limit: {self.max_calls})"
                },
            )
        responses: list[dict[str, object]] = []
        for item in requests:
            problem, target = self._target_of(item) if isinstance(item, dict) else ("a request is an object", None)
            if target is None:
                responses.append({"output": [], "rawText": f"Error: {problem}"})
                continue
            try:
                responses.append(await self._call(target, item))
            except _Spent:
                responses.append({"output": [], "rawText": f"Error: {self._spent()}"})
            except Exception as exc:
                responses.append({"output": [], "rawText": f"Error: {_failure(exc)}"})
        return _answer(200, {"responses": responses})

    def _target_of(self, body: dict[str, object]) -> tuple[str, Target | None]:
        """The model a request asks (its `target`/`provider`, else the judge), or why none."""
        question = body.get("question")
        if not isinstance(question, str) or not question:
            return "Missing required field: question", None
        name = body.get("target", body.get("provider"))
        if name is None:
            return "", self.judge
        found = self.targets.get(name) if isinstance(name, str) else None
        if found is None:
            return f"Unknown target {name!r}. Available: {', '.join(self.names)}", None
        return "", found

    async def _call(self, target: Target, body: dict[str, object]) -> dict[str, object]:
        """One model call, counted before it is made (AgentV counts a call that fails); _Spent
        when `max_calls` were made (checked here too: requests run concurrently)."""
        if self.calls >= self.max_calls:
            raise _Spent
        self.calls += 1
        system = body.get("systemPrompt")
        messages = [{"role": "system", "content": system}] if isinstance(system, str) and system else []
        messages.append({"role": "user", "content": str(body["question"])})
        reply = await target.chat(
            ChatRequest(
                messages=messages,
                temperature=self.temperature,
                trial=self.trial,
                purpose="judge",
                test_id=self.test_id,
                agent=_NO_AGENT,
            )
        )
        self.usage = self.usage + reply.usage
        self.cost_usd += reply.cost_usd
        tokens = {"input": reply.usage.input_tokens, "output": reply.usage.output_tokens}
        return {"output": [{"role": "assistant", "content": reply.text}], "rawText": reply.text, "tokenUsage": tokens}


def _failure(exc: Exception) -> str:
    """Why a model call failed, with any secret in the message redacted."""
    return redact(f"model call failed: {exc or type(exc).__name__}", key_shaped=True)


class _Spent(Exception):
    """No call is left."""


async def _json(request: web.Request) -> object:
    try:
        return json.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        return None


def _answer(status: int, body: dict[str, object]) -> web.Response:
    from aiohttp import web

    return web.Response(status=status, text=json.dumps(body), content_type="application/json")
