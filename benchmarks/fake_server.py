"""A fast loopback fake OpenAI-compatible server for the benchmarks (plain asyncio, one process).

It answers `POST /v1/chat/completions` after a fixed latency: target calls (no
`response_format`) get a short reply naming the last user message, judge calls get a JSON
value that satisfies the requested schema (the same as `convoeval.testing.default_judge`).
`GET /stats` returns `{"requests": N, "target": N, "judge": N, "max_in_flight": N, "first": T,
"last": T, "cpu_s": S, "connections": N}`: the most requests it held at once, the wall-clock times (`time.time()`)
the first request arrived and the last answer was sent, which split a client's wall time into
its start-up, its request span and its tear-down, and the server's own CPU seconds since the
last reset (to show it is not the bottleneck) and the connections opened; `POST /reset` zeroes them.

HTTP/1.1 with keep-alive is spoken directly on `asyncio.Protocol` (no web framework), so that
the server spends a small fraction of a core at thousands of requests a second and never limits
the client it measures; the listen backlog is 4096.

Run it in its own process so that its CPU is not counted as the client's:

    python benchmarks/fake_server.py --latency 0.1      # prints "PORT 12345" when ready
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import json
import sys
import time

from convoeval.testing import default_judge

Counts = dict[str, float]


def new_counts() -> Counts:
    return {"requests": 0, "target": 0, "judge": 0, "in_flight": 0, "max_in_flight": 0, "first": 0.0, "last": 0.0,
            "cpu_s": 0.0, "connections": 0}


@functools.lru_cache(maxsize=256)
def judge_reply(response_format: str) -> str:
    return default_judge({"response_format": json.loads(response_format)})


def completion(body: dict, counts: Counts) -> bytes:
    counts["requests"] += 1
    if "response_format" in body:
        counts["judge"] += 1
        content = judge_reply(json.dumps(body["response_format"], sort_keys=True))
    else:
        counts["target"] += 1
        users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
        content = f"Reply to: {users[-1] if users else ''}"
    words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
    out_words = len(content.split())
    return json.dumps({
        "id": f"fake-{int(counts['requests'])}",
        "object": "chat.completion",
        "model": body.get("model", "fake"),
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": words, "completion_tokens": out_words, "total_tokens": words + out_words},
    }).encode()


class Http(asyncio.Protocol):
    """One keep-alive connection: requests are answered in order, each after the latency."""

    def __init__(self, latency_s: float, counts: Counts, cpu_base: list[float]):
        self.latency_s, self.counts, self.cpu_base = latency_s, counts, cpu_base
        self.buffer = b""
        self.queue: asyncio.Queue[tuple[str, str, bytes, bool] | None] = asyncio.Queue()
        self.transport: asyncio.Transport | None = None
        self.worker: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.counts["connections"] += 1
        self.worker = asyncio.get_running_loop().create_task(self.answer())

    def connection_lost(self, exc: Exception | None) -> None:
        self.queue.put_nowait(None)

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            head = self.buffer[:end].decode("latin-1").split("\r\n")
            method, path = head[0].split(" ")[:2]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in head[1:])}
            length = int(headers.get("content-length", "0"))
            if len(self.buffer) < end + 4 + length:
                return
            body = self.buffer[end + 4 : end + 4 + length]
            self.buffer = self.buffer[end + 4 + length :]
            self.queue.put_nowait((method, path, body, headers.get("connection", "").lower() == "close"))

    async def answer(self) -> None:
        while (item := await self.queue.get()) is not None:
            method, path, body, close = item
            status, payload = await self.route(method, path, body)
            if self.transport is None or self.transport.is_closing():
                return
            self.transport.write(
                f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(payload)}\r\n"
                f"{'Connection: close' if close else 'Connection: keep-alive'}\r\n\r\n".encode() + payload
            )
            if close:
                self.transport.close()
                return

    async def route(self, method: str, path: str, body: bytes) -> tuple[str, bytes]:
        counts = self.counts
        if method == "POST" and path.startswith("/v1/chat/completions"):
            counts["first"] = counts["first"] or time.time()
            request = json.loads(body)
            counts["in_flight"] += 1
            counts["max_in_flight"] = max(counts["max_in_flight"], counts["in_flight"])
            try:
                if self.latency_s:
                    await asyncio.sleep(self.latency_s)
            finally:
                counts["in_flight"] -= 1
            payload = completion(request, counts)
            counts["last"] = time.time()
            return "200 OK", payload
        if method == "GET" and path == "/stats":
            return "200 OK", json.dumps({**counts, "cpu_s": time.process_time() - self.cpu_base[0]}).encode()
        if method == "POST" and path == "/reset":
            counts.update(new_counts())
            self.cpu_base[0] = time.process_time()
            return "200 OK", json.dumps(counts).encode()
        return "404 Not Found", b'{"error": "not found"}'


async def serve(latency_s: float, port: int) -> None:
    counts, cpu_base = new_counts(), [time.process_time()]
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Http(latency_s, counts, cpu_base), "127.0.0.1", port, backlog=4096)
    actual = server.sockets[0].getsockname()[1]
    sys.stdout.write(f"PORT {actual}\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    try:
        asyncio.run(serve(args.latency, args.port))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
