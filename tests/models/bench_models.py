"""Figures for the model clients, against the local server on loopback.

``python -m tests.models.bench_models`` prints: a non-streamed call through the raw SDK and through
``OpenAIChatCompletionClient`` (the difference is the client's conversion cost), time to first token
and streamed pieces per second through the client, and a replay of the shipped demo cassette
through the demo agent. Medians over repeated runs; not a test (no speed is asserted anywhere).
"""

from __future__ import annotations

import asyncio
import statistics
import time

import openai

from nbagent import UserMessage
from nbagent.demo import DEMO_TASK, demo_agent
from nbagent.models import ModelRequest
from nbagent.models.openai import OpenAIChatCompletionClient

from .chat_server import ChatServer, Reply

CALLS = 200
STREAM_PIECES = 2000


async def main() -> None:
    with ChatServer() as server:
        client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key="sk-bench", max_retries=0)
        # The raw SDK, built as the client builds its own (same arguments, a plain HTTP client).
        sdk = openai.AsyncOpenAI(
            api_key="sk-bench",
            base_url=server.base_url,
            timeout=60.0,
            max_retries=0,
            http_client=openai.DefaultAsyncHttpxClient(),
        )
        messages = [UserMessage(content="hello", source="user")]
        raw_request = client.build_request(ModelRequest(messages, [], "auto", None))

        server.script(*[Reply.text("hi")] * (2 * CALLS + 20))
        for _ in range(10):  # warm the connection pool
            await client.create(messages)
            await sdk.chat.completions.create(**raw_request)
        raw, wrapped = [], []
        for _ in range(CALLS):
            start = time.perf_counter()
            await sdk.chat.completions.create(**raw_request)
            raw.append(time.perf_counter() - start)
            start = time.perf_counter()
            await client.create(messages)
            wrapped.append(time.perf_counter() - start)
        print(f"non-streamed call, raw SDK:        median {statistics.median(raw) * 1e3:.2f} ms ({CALLS} calls)")
        print(f"non-streamed call, nbagent client: median {statistics.median(wrapped) * 1e3:.2f} ms ({CALLS} calls)")

        raw_stream = client.build_request(ModelRequest(messages, [], "auto", None), stream=True)
        figures: dict[str, list[float]] = {"raw rate": [], "rate": [], "raw ttft": [], "ttft": []}
        for _ in range(10):
            # Time to first token on a short stream (the server builds a whole stream before sending it).
            server.script(Reply.text("hello", pieces=1), Reply.text("hello", pieces=1))
            start = time.perf_counter()
            first = 0.0
            async for chunk in await sdk.chat.completions.create(**raw_stream):
                if not first and chunk.choices and chunk.choices[0].delta.content:
                    first = time.perf_counter() - start
            figures["raw ttft"].append(first)
            async for _ in client.create_stream(messages):
                pass
            assert client.last_time_to_first_token is not None
            figures["ttft"].append(client.last_time_to_first_token)

            server.script(Reply.text("x" * STREAM_PIECES, pieces=1), Reply.text("x" * STREAM_PIECES, pieces=1))
            start = time.perf_counter()
            async for _chunk in await sdk.chat.completions.create(**raw_stream):
                pass
            figures["raw rate"].append(STREAM_PIECES / (time.perf_counter() - start))
            start = time.perf_counter()
            async for _ in client.create_stream(messages):
                pass
            figures["rate"].append(STREAM_PIECES / (time.perf_counter() - start))
        med = {name: statistics.median(values) for name, values in figures.items()}
        print(f"streamed, raw SDK:        first token {med['raw ttft'] * 1e3:.2f} ms, {med['raw rate']:,.0f} pieces/s")
        print(
            f"streamed, nbagent client: first token {med['ttft'] * 1e3:.2f} ms, {med['rate']:,.0f} pieces/s "
            f"(medians of 10: 5-piece streams for the first token, {STREAM_PIECES} one-character pieces for the rate)"
        )
        await client.close()
        await sdk.close()

    runs = []
    for _ in range(50):
        agent = demo_agent(pace=False)
        start = time.perf_counter()
        await agent.run(task=DEMO_TASK)
        runs.append(time.perf_counter() - start)
    print(
        "demo cassette replay (2 LLM calls, 2 tool calls): "
        f"median {statistics.median(runs) * 1e3:.2f} ms per run (50 runs)"
    )


if __name__ == "__main__":
    asyncio.run(main())
