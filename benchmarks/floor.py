"""The floor for workload W: the same model calls made by the plainest client, as a whole process.

Plain asyncio + aiohttp: CONVERSATIONS conversations at once, each sending TURNS turns in order
(the growing history each time) and, when `--judge`, one judge call per turn (structured output
asked, as convoeval's rubric judge does), with at most MAX requests in flight in total. No
grading, no results written: what remains of convoeval's time above this is its own overhead.

    python benchmarks/floor.py URL --conversations 100 --turns 5 --max 20 --judge
"""

from __future__ import annotations

import argparse
import asyncio

import aiohttp

SCHEMA = {"type": "object", "properties": {"score": {"type": "number"}}, "required": ["score"]}


async def main(url: str, conversations: int, turns: int, most: int, judge: bool) -> None:
    limit = asyncio.Semaphore(most)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=most)) as session:

        async def call(payload: dict) -> dict:
            async with limit, session.post(url, json=payload) as response:
                return await response.json()

        async def conversation(i: int) -> None:
            messages: list[dict] = []
            for t in range(1, turns + 1):
                messages.append({"role": "user", "content": f"Question {t} of conversation {i}: what should I pack?"})
                data = await call({"model": "floor-target", "messages": messages})
                messages.append(data["choices"][0]["message"])
                if judge:
                    prompt = f"Does the reply answer question {t}? {messages[-1]['content']}"
                    await call(
                        {
                            "model": "floor-judge",
                            "messages": [{"role": "user", "content": prompt}],
                            "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": SCHEMA}},
                        }
                    )

        await asyncio.gather(*(conversation(i) for i in range(conversations)))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="the chat-completions URL")
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=5)
    parser.add_argument("--max", type=int, default=20, help="requests in flight at most")
    parser.add_argument("--judge", action="store_true", help="one judge call after each turn")
    args = parser.parse_args()
    asyncio.run(main(args.url, args.conversations, args.turns, args.max, args.judge))
