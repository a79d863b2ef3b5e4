"""Records the shipped weather demo cassette against the local Chat Completions server.

``python -m tests.models.demo_recording`` rewrites ``src/nbagent/data/weather_demo.cassette.json``:
:func:`nbagent.demo.demo_agent` runs :data:`~nbagent.demo.DEMO_TASK` through
the real openai SDK over HTTP, the server answering with :data:`DEMO_REPLIES`, and the recording
client writes what went over the wire. ``test_cassette.py`` re-records it and compares, so the
shipped file stays what this script makes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from nbagent.demo import DEMO_CASSETTE, DEMO_TASK, demo_agent
from nbagent.models.cassette import RecordingChatCompletionClient
from nbagent.models.openai import OpenAIChatCompletionClient

from .chat_server import ChatServer, Reply

DEMO_REPLIES = (
    Reply.call(
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Tokyo"}),
        reasoning="Two cities: I will ask the weather tool for both at once.",
        call_ids=("call_paris", "call_tokyo"),
        interleave=True,
        usage=(96, 41),
        chunk_delay=0.03,
    ),
    Reply.text(
        "Paris has light rain at 18 °C, while Tokyo is sunny at 24 °C.",
        pieces=6,
        usage=(171, 19),
        delay=0.25,
        chunk_delay=0.05,
    ),
)


async def record_demo(path: Path, *, paced: bool = True) -> None:
    """Run the demo agent against the scripted server, recording to ``path``.

    ``paced=False`` drops the server's delays (for the test, which compares everything but timing).
    """
    with ChatServer() as server:
        server.script(*(reply if paced else reply.with_(delay=0.0, chunk_delay=0.0) for reply in DEMO_REPLIES))
        # The model name says what answered: the scripted server, not a real model.
        inner = OpenAIChatCompletionClient(
            "scripted-local-server", base_url=server.base_url, api_key="sk-demo-not-a-real-key"
        )
        agent = demo_agent(RecordingChatCompletionClient(inner, path))
        await agent.run(task=DEMO_TASK)
        await inner.close()


if __name__ == "__main__":
    asyncio.run(record_demo(DEMO_CASSETTE))
    print(f"wrote {DEMO_CASSETTE}")
