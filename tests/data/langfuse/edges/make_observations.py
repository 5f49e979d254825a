"""Writes a Langfuse 5 observations listing (`GET /api/public/v2/observations`, what
`langfuse.api.observations.get_many()` returns) with the SDK's own API models (langfuse 5.0.4):
ObservationsV2Response of ObservationV2, dumped by alias as the API sends it.

    python make_observations.py OUT.json

A session of two traces: a chat generation with a tool call, the TOOL observation, and a
generation after it; in the second trace a generation that failed (level ERROR, statusMessage)
and its retry with an empty reply; non-ASCII text throughout.
"""

import datetime as dt
import json
import sys

from langfuse.api.commons.types.observation_v2 import ObservationV2
from langfuse.api.observations.types.observations_v2meta import ObservationsV2Meta
from langfuse.api.observations.types.observations_v2response import ObservationsV2Response

T0 = dt.datetime(2026, 11, 26, 9, 0, 0, tzinfo=dt.timezone.utc)
SYSTEM = {"role": "system", "content": "Tu es l'assistant de la boutique Zoë. Réponds en français."}
U1 = {"role": "user", "content": "Où en est ma commande 42 ? 你好 👋"}
CALL = {
    "role": "assistant",
    "content": None,
    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "order_status", "arguments": json.dumps({"order": 42})}}],
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "content": json.dumps({"status": "expédiée"}, ensure_ascii=False)}
A1 = {"role": "assistant", "content": "Votre commande 42 est expédiée."}
U2 = {"role": "user", "content": "Merci ! Et la facture ?"}


def obs(n, trace, kind, name, **fields):
    return ObservationV2(
        id=f"obs-{n}",
        trace_id=trace,
        project_id="proj-1",
        session_id="session-zoë",
        user_id="client-7",
        type=kind,
        name=name,
        start_time=T0 + dt.timedelta(seconds=n),
        end_time=T0 + dt.timedelta(seconds=n, milliseconds=500),
        environment="default",
        **fields,
    )


data = [
    obs(1, "trace-a", "GENERATION", "OpenAI-generation", model="gpt-4o-mini", input=[SYSTEM, U1], output=CALL,
        usage_details={"input": 30, "output": 12, "total": 42}, level="DEFAULT"),
    obs(2, "trace-a", "TOOL", "order_status", input={"order": 42}, output={"status": "expédiée"}, level="DEFAULT"),
    obs(3, "trace-a", "GENERATION", "OpenAI-generation", model="gpt-4o-mini", input=[SYSTEM, U1, CALL, RESULT], output=A1,
        usage_details={"input": 60, "output": 9, "total": 69}, level="DEFAULT"),
    obs(4, "trace-b", "GENERATION", "OpenAI-generation", model="gpt-4o-mini", input=[SYSTEM, U1, CALL, RESULT, A1, U2], output=None,
        level="ERROR", status_message="RateLimitError: 429 Too Many Requests"),
    obs(5, "trace-b", "GENERATION", "OpenAI-generation", model="gpt-4o-mini", input=[SYSTEM, U1, CALL, RESULT, A1, U2],
        output={"role": "assistant", "content": ""}, level="DEFAULT"),
]
response = ObservationsV2Response(data=data, meta=ObservationsV2Meta(cursor=None))
with open(sys.argv[1], "w", encoding="utf-8") as out:
    json.dump(json.loads(response.json()), out, ensure_ascii=False, indent=1)
