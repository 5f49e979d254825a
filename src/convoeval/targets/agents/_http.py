"""`http`: any JSON endpoint as a target (an agent service, a RAG API, a chat wrapper).

The request body is a template: a mapping whose string values may use `{{ prompt }}` (the
newest user message), `{{ session_id }}`, `{{ test_id }}`; a value that is exactly
`"{{ messages }}"` becomes the message list (`[{role, content}]`) itself. JSONPaths read the
reply text (`reply_path`; several matches are joined by newlines), the tool calls
(`tool_calls_path`) and the session id (`session_id_path`) from the response, a JSON object or
array. With `stateful: true` the endpoint keeps the
conversation: once it returned a session id, only the newest user message is sent.

Example (targets.yaml):
    targets:
      - name: support-bot
        provider: http
        url: http://localhost:8080/chat
        body: {message: "{{ prompt }}", session: "{{ session_id }}", history: "{{ messages }}"}
        reply_path: $.reply
        tool_calls_path: $.tools
        session_id_path: $.session
        stateful: true
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..._jsonpath import parse_jsonpath
from .._base import ChatReply, ChatRequest, TargetConfig, TargetError, http_url_problem, provider
from .._http_target import HttpTarget
from .._settings import settings_of
from ._replies import mapped_usage, tool_call, turn_prompt
from ._settings import HttpAgentSettings

if TYPE_CHECKING:
    from jsonpath_ng import JSONPath

_VAR = re.compile(r"\{\{\s*(prompt|session_id|test_id|messages)\s*\}\}")
#: Where an answer that is a JSON array (Rasa's REST channel: one object per bot message) is
#: put for the JSONPaths, which then read it as the whole answer (`$[*].text`).
_ARRAY = "convoeval:array"


@provider("http")
class HttpAgentTarget(HttpTarget):
    """Settings: `url` (or `base_url`), `body` (the template; default `{messages: "{{ messages }}"}`),
    `reply_path` (default `$.reply`), `tool_calls_path`, `session_id_path`, `usage_path`
    (`Usage`'s fields, or an OpenAI or Anthropic `usage`: `mapped_usage`), `cost_path` (the
    turn's USD cost the agent reports; else its usage at the target's prices), `stateful`, `headers`, `api_key_env`
    (sent as `Authorization: Bearer ...`), and the common retry/limit settings."""

    cacheable = False
    settings_model = HttpAgentSettings

    def __init__(self, config: TargetConfig):
        super().__init__(config)
        settings = settings_of(config, HttpAgentSettings)
        url = settings.url or config.base_url
        if not url:
            raise TargetError(f"{config.name}: the http provider needs a `url` (http:// or https://)")
        if problem := http_url_problem(url):
            raise TargetError(f"{config.name}: url: {problem}")
        self.url = url
        self.body = settings.body or {"messages": "{{ messages }}"}
        self.reply_path = settings.reply_path
        self.paths = {
            key: parse_jsonpath(path) if path else None
            for key, path in (
                ("reply_path", settings.reply_path),
                ("tool_calls_path", settings.tool_calls_path),
                ("session_id_path", settings.session_id_path),
                ("usage_path", settings.usage_path),
                ("cost_path", settings.cost_path),
            )
        }
        self.session = "resume" if settings.stateful else "history"

    async def chat(self, request: ChatRequest) -> ChatReply:
        values = {
            "prompt": turn_prompt(request.messages),
            "session_id": request.session_id,
            "test_id": request.test_id,
            "messages": request.messages,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        data = await self.post(self.url, {k: _render(v, values) for k, v in self.body.items()}, headers, _ARRAY)
        return self._reply(data[_ARRAY] if data.keys() == {_ARRAY} else data, request)

    def _reply(self, data: object, request: ChatRequest) -> ChatReply:
        texts = _find(self.paths["reply_path"], data)
        if not texts:
            raise TargetError(f"{self.name}: malformed response: {self.reply_path} matched nothing")
        text = "\n".join(t if isinstance(t, str) else "" if t is None else json.dumps(t) for t in texts)
        raw_calls = _find(self.paths["tool_calls_path"], data)
        calls: list[object] = raw_calls[0] if len(raw_calls) == 1 and isinstance(raw_calls[0], list) else raw_calls
        try:
            tool_calls = [tool_call(c) for c in calls]
        except TargetError as exc:
            raise TargetError(f"{self.name}: malformed response: {exc}") from None
        sessions = _find(self.paths["session_id_path"], data)
        usage_data = (_find(self.paths["usage_path"], data) or [{}])[0]
        usage = mapped_usage(usage_data)
        costs = [
            c for c in _find(self.paths["cost_path"], data) if isinstance(c, int | float) and not isinstance(c, bool)
        ]
        return ChatReply(
            text=text,
            tool_calls=tool_calls,
            usage=usage,
            cost_usd=float(costs[0]) if costs else self.cost(usage),
            cost_known=bool(costs) or self.priced,
            session_id=str(sessions[0]) if sessions and sessions[0] not in (None, "") else request.session_id,
        )


def _find(path: JSONPath | None, data: object) -> list[object]:
    return [m.value for m in path.find(data)] if path is not None else []


def _render(template: object, values: Mapping[str, object]) -> object:
    """The body template with values filled in (`"{{ messages }}"` alone is the list itself)."""
    if isinstance(template, str):
        whole = _VAR.fullmatch(template.strip())
        if whole:
            return values[whole.group(1)]
        return _VAR.sub(lambda m: "" if values[m.group(1)] is None else str(values[m.group(1)]), template)
    if isinstance(template, dict):
        return {k: _render(v, values) for k, v in template.items()}
    if isinstance(template, list):
        return [_render(v, values) for v in template]
    return template
