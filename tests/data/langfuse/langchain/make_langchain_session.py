"""Writes a Langfuse session download of a LangChain tool-calling chat traced by Langfuse's own
LangChain integration (langfuse 5.0.4 `langfuse.langchain.CallbackHandler`, langchain-core 1.8.3).

    python make_langchain_session.py OUT.json

A fake chat model (LangChain's FakeMessagesListChatModel: no network) asks for get_weather(city=
Paris) in LangChain's tool-call shape `{name, args, id, type: tool_call}`, the tool runs under
the handler (a TOOL observation), the model answers; a second turn follows. Langfuse's SDK
writes observations as OpenTelemetry spans (caught in memory: no server runs, it needs
Postgres and ClickHouse); each span's `langfuse.observation.*` attributes become the
observation's fields, as Langfuse's server does when it ingests them, and the traces are
written as a session download (`{id, traces: [{..., observations}]}`).
"""

import datetime
import json
import sys

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.tools import tool
from langfuse import Langfuse, propagate_attributes
from langfuse.langchain import CallbackHandler
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter


@tool
def get_weather(city: str) -> str:
    """Weather for a city."""
    return "sunny, 21C"


def chat(handler: CallbackHandler, langfuse: Langfuse) -> None:
    call = {"name": "get_weather", "args": {"city": "Paris"}, "id": "call_1", "type": "tool_call"}
    model = FakeMessagesListChatModel(
        responses=[
            AIMessage(content="", tool_calls=[call]),
            AIMessage(content="It is sunny in Paris."),
            AIMessage(content="You're welcome!"),
        ]
    )
    config = {"callbacks": [handler]}
    question = "What's the weather in Paris?"
    with langfuse.start_as_current_observation(name="turn-1", as_type="span", input=question) as root:
        with propagate_attributes(session_id="sess-1", user_id="u1"):
            messages = [SystemMessage(content="You are helpful."), HumanMessage(content=question)]
            reply = model.invoke(messages, config=config)
            messages.append(reply)
            for made in reply.tool_calls:
                result = get_weather.invoke(made["args"], config=config)
                messages.append(ToolMessage(content=result, tool_call_id=made["id"]))
            reply = model.invoke(messages, config=config)
            messages.append(reply)
            root.update(output=reply.content)
    with langfuse.start_as_current_observation(name="turn-2", as_type="span", input="thanks") as root:
        with propagate_attributes(session_id="sess-1", user_id="u1"):
            messages.append(HumanMessage(content="thanks"))
            root.update(output=model.invoke(messages, config=config).content)
    langfuse.flush()


def _iso(ns: int) -> str:
    stamp = datetime.datetime.fromtimestamp(ns / 1e9, datetime.UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _json(value):
    try:
        return json.loads(value) if value is not None else None
    except ValueError:
        return value


def main(out: str) -> None:
    exporter = InMemorySpanExporter()
    langfuse = Langfuse(public_key="pk-lf-x", secret_key="sk-lf-x", host="http://127.0.0.1:9", span_exporter=exporter)
    chat(CallbackHandler(), langfuse)
    traces: dict[str, dict] = {}
    for span in sorted(exporter.get_finished_spans(), key=lambda s: s.start_time):
        a = dict(span.attributes)
        trace_id = format(span.context.trace_id, "032x")
        trace = traces.setdefault(
            trace_id, {"id": trace_id, "sessionId": a.get("session.id"), "userId": a.get("user.id"), "observations": []}
        )
        fields = {"input": _json(a.get("langfuse.observation.input")), "output": _json(a.get("langfuse.observation.output"))}
        if span.parent is None:
            trace.update(name=span.name, timestamp=_iso(span.start_time), **fields)
        trace["observations"].append(
            {
                "id": format(span.context.span_id, "016x"),
                "traceId": trace_id,
                "type": str(a.get("langfuse.observation.type", "span")).upper(),
                "name": span.name,
                "startTime": _iso(span.start_time),
                "endTime": _iso(span.end_time),
                "parentObservationId": format(span.parent.span_id, "016x") if span.parent else None,
                "level": "DEFAULT",
                **fields,
            }
        )
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"id": "sess-1", "traces": list(traces.values())}, handle, indent=1)


if __name__ == "__main__":
    main(sys.argv[1])
