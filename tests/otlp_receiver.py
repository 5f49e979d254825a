"""A loopback OTLP/HTTP traces receiver for tests: it decodes each export request with the
OpenTelemetry protobuf definitions and keeps it as OTLP JSON (`{"resourceSpans": [...]}`, the
collector file exporter's shape: trace and span ids as hex, as OTLP/JSON specifies, not the
base64 of protobuf's own JSON mapping)."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_IDS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(value: Any) -> Any:
    """`value` with every trace and span id (base64 in protobuf's JSON mapping) as hex."""
    if isinstance(value, dict):
        return {k: base64.b64decode(v).hex() if k in _IDS and v else _hex_ids(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_hex_ids(v) for v in value]
    return value


class OtlpReceiver:
    """`with OtlpReceiver() as r:` ... `r.endpoint`, `r.requests` (OTLP JSON documents), `r.spans()`."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server naming
                from google.protobuf.json_format import MessageToDict
                from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver.paths.append(self.path)
                receiver.requests.append(_hex_ids(MessageToDict(request)))
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1/traces"

    def spans(self) -> list[dict[str, Any]]:
        return [
            span
            for request in self.requests
            for resource in request.get("resourceSpans", [])
            for scope in resource.get("scopeSpans", [])
            for span in scope.get("spans", [])
        ]

    def write_jsonl(self, path: Any) -> None:
        """The received requests, one OTLP JSON document a line (as the collector's file exporter)."""
        with open(path, "w", encoding="utf-8") as out:
            for request in self.requests:
                out.write(json.dumps(request) + "\n")

    def __enter__(self) -> OtlpReceiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
