"""A fast loopback fake OpenAI-compatible server for the benchmarks (aiohttp, one process).

It answers `POST /v1/chat/completions` after a fixed latency: target calls (no
`response_format`) get a short reply naming the last user message, judge calls get a JSON
value that satisfies the requested schema (the same as `convoeval.testing.default_judge`).
`GET /stats` returns `{"requests": N, "target": N, "judge": N, "max_in_flight": N, "first": T,
"last": T}`: the most requests it held at once, and the wall-clock times (`time.time()`) the
first request arrived and the last answer was sent, which split a client's wall time into its
start-up, its request span and its tear-down; `POST /reset` zeroes them.

Run it in its own process so that its CPU is not counted as the client's:

    python benchmarks/fake_server.py --latency 0.1      # prints "PORT 12345" when ready
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from aiohttp import web

from convoeval.testing import default_judge


def make_app(latency_s: float) -> web.Application:
    counts: dict[str, float] = {"requests": 0, "target": 0, "judge": 0, "in_flight": 0, "max_in_flight": 0,
                                "first": 0.0, "last": 0.0}

    async def completions(request: web.Request) -> web.Response:
        counts["first"] = counts["first"] or time.time()
        body = await request.json()
        counts["requests"] += 1
        if "response_format" in body:
            counts["judge"] += 1
            content = default_judge(body)
        else:
            counts["target"] += 1
            users = [m["content"] for m in body.get("messages", []) if m.get("role") == "user"]
            content = f"Reply to: {users[-1] if users else ''}"
        counts["in_flight"] += 1
        counts["max_in_flight"] = max(counts["max_in_flight"], counts["in_flight"])
        try:
            if latency_s:
                await asyncio.sleep(latency_s)
        finally:
            counts["in_flight"] -= 1
        words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        out_words = len(content.split())
        counts["last"] = time.time()
        return web.json_response({
            "id": f"fake-{counts['requests']}",
            "object": "chat.completion",
            "model": body.get("model", "fake"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": words, "completion_tokens": out_words,
                      "total_tokens": words + out_words},
        })

    async def stats(_: web.Request) -> web.Response:
        return web.json_response(counts)

    async def reset(_: web.Request) -> web.Response:
        for key in counts:
            counts[key] = 0
        return web.json_response(counts)

    app = web.Application(client_max_size=64 * 1024 * 1024)
    app.router.add_post("/v1/chat/completions", completions)
    app.router.add_get("/stats", stats)
    app.router.add_post("/reset", reset)
    return app


async def serve(latency_s: float, port: int) -> None:
    runner = web.AppRunner(make_app(latency_s), access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", port, backlog=1024)
    await site.start()
    actual = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    sys.stdout.write(f"PORT {actual}\n")
    sys.stdout.flush()
    await asyncio.Event().wait()


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
