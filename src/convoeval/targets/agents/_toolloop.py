"""The built-in tool agent: any chat target becomes an agent with `agent: {tools: [...]}`.

Within each turn convoeval runs the loop itself: the model gets the tools (its own and the
suite's domain tools, which run on the trial's backend), its tool calls run (in the trial's
workspace), their results go back as `tool` messages, and the model is asked
again until it answers without calling a tool. Every call is recorded on the reply like any
agent's. Reaching `max_tool_calls` (or the test's per-turn `budget.turn.tool_calls`) or
`max_seconds` ends the turn with `finish_reason` `budget:<name>=<limit>`, which the run records
as `budget_exhausted`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from ..._sandbox import SandboxError, backend
from ..._secrets import redact
from ...results import ToolCall, Usage
from .._base import AgentContext, Capabilities, ChatReply, ChatRequest, Target, TargetError, TargetWrapper, capabilities
from .._tool_settings import ToolAgentSettings
from ._tools import ToolBox


class ToolAgent(TargetWrapper):
    """`inner` with convoeval's tool loop around each call (see the module docstring)."""

    def __init__(self, inner: Target, settings: ToolAgentSettings, base_dir: Path):
        super().__init__(inner)
        self.provider_name = f"{capabilities(inner).provider_name or type(inner).__name__}+agent"
        self.settings = settings
        self.box = ToolBox(settings, base_dir, inner.name)

    def capabilities(self) -> Capabilities:
        """History each turn, never cached (a reply depends on the workspace, not only on the
        messages), and the model's calls wrapped one by one (`with_model`)."""
        return Capabilities(cacheable=False, provider_name=self.provider_name, with_model=self.with_model)

    def with_model(self, wrap: Callable[[Target], Target]) -> None:
        """Put `wrap` around the model the loop calls (the run's cache and meter: each model call
        is cached and counted on its own, while the tools run again every time)."""
        self.inner = wrap(self.inner)

    async def chat(self, request: ChatRequest) -> ChatReply:
        started = time.monotonic()
        if self.box.runs_commands:
            try:
                backend()  # a test that offers `bash` needs a sandbox: fail it now, saying how to get one
            except SandboxError as exc:
                raise TargetError(f"{self.name}: {exc}") from None
        given = request.agent.max_tool_calls
        most = min(self.settings.max_tool_calls, math.inf if given is None else given)
        system = [{"role": "system", "content": self.settings.system_prompt}] if self.settings.system_prompt else []
        messages: list[Mapping[str, object]] = [*system, *request.messages]
        workdir = Path(request.agent.workdir) if request.agent.workdir else None
        done: list[ToolCall] = []
        usage, cost, known = Usage(), 0.0, True
        agent = request.agent
        domain = {_spec_name(t) for t in agent.domain_tools or []} if agent.call_domain_tool else set()
        specs = [*self.box.specs(), *(t for t in agent.domain_tools or [] if domain)]
        while True:
            reply = await self.inner.chat(replace(request, messages=messages, tools=specs, agent=AgentContext()))
            usage, cost, known = usage + reply.usage, cost + reply.cost_usd, known and reply.cost_known
            stop = None if reply.tool_calls else reply.finish_reason
            calls = [
                c if c.id else c.model_copy(update={"id": f"call_{len(done) + i}"})
                for i, c in enumerate(reply.tool_calls)
            ]
            if calls:
                messages.append(
                    {"role": "assistant", "content": reply.text or None, "tool_calls": [_wire(c) for c in calls]}
                )
            for call in calls:
                if len(done) >= most:
                    stop = f"budget:tool_calls={most:g}"
                    break
                if time.monotonic() - started > self.settings.max_seconds:
                    stop = f"budget:seconds={self.settings.max_seconds:g}"
                    break
                if call.name in domain and agent.call_domain_tool is not None:
                    call = await agent.call_domain_tool(call)
                else:
                    call = await self.box.run(call, workdir)
                done.append(call)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": _result_text(call)})
            if calls and stop is None and time.monotonic() - started > self.settings.max_seconds:
                stop = f"budget:seconds={self.settings.max_seconds:g}"
            if not calls or stop is not None:
                return ChatReply(
                    text=reply.text,
                    usage=usage,
                    latency_ms=(time.monotonic() - started) * 1000,
                    cost_usd=cost,
                    cost_known=known,
                    tool_calls=done,
                    finish_reason=stop,
                )


def _spec_name(spec: Mapping[str, object]) -> str:
    """The function name of an OpenAI `tools` entry."""
    function = spec.get("function")
    return str(function.get("name", "")) if isinstance(function, dict) else ""


def _wire(call: ToolCall) -> dict[str, object]:
    """A tool call as the assistant message of the OpenAI protocol carries it."""
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": json.dumps(call.arguments)}}


def _result_text(call: ToolCall) -> str:
    """The call's result as the model gets it, with every known secret redacted (a tool may
    print a key: `env`, a file it should not have read)."""
    if call.error is not None:
        return redact(f"error: {call.error}")
    return redact(call.output if isinstance(call.output, str) else json.dumps(call.output, default=str))
