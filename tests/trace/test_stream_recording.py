"""Streamed chunks in the trace: read from the LLM call's stream, with or without chunk events."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd

from nbagent import (
    AssistantAgent,
    LLMCall,
    ModelClientStreamingChunkEvent,
    ReplayChatCompletionClient,
    TextMessage,
    Trace,
)

UUID4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
CHUNK = "ModelClientStreamingChunkEvent"
ANSWER = "one two three four five"
PIECES = ["one ", "two ", "three ", "four ", "five"]


def streaming_agent(chunk_delay: float = 0.0) -> AssistantAgent:
    client = ReplayChatCompletionClient([ANSWER, "again"], chunk_delay=chunk_delay)
    return AssistantAgent("bot", client, model_client_stream=True)


def chunk_rows(trace: Trace) -> pd.DataFrame:
    events = trace.events_df()
    return events[events["kind"] == CHUNK]


class Seen:
    """A recorder that keeps the type name of every item it is given."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def record(self, item: Any) -> None:
        self.kinds.append(type(item).__name__)


async def test_run_builds_no_chunk_events_and_the_trace_has_every_chunk() -> None:
    agent = streaming_agent()
    result = await agent.run(task="count")
    final = result.messages[-1]
    assert final.content == ANSWER
    rows = chunk_rows(agent.trace)
    assert list(rows["text"]) == PIECES
    assert set(rows["message_id"]) == {final.id}
    assert all(UUID4.match(chunk_id) for chunk_id in rows["event_id"])
    assert rows["event_id"].is_unique
    assert rows["timestamp"].is_monotonic_increasing and rows["elapsed_s"].is_monotonic_increasing
    assert set(rows["run_id"]) == {agent.trace.runs_df()["run_id"].iloc[0]}
    # ids are drawn once, when the rows are first read: reading again gives the same ones
    assert list(chunk_rows(agent.trace)["event_id"]) == list(rows["event_id"])
    assert [(c.id, c.content) for c in agent.trace.items if type(c) is ModelClientStreamingChunkEvent] == list(
        zip(rows["event_id"], PIECES)
    )


async def test_the_llm_call_keeps_its_stream() -> None:
    agent = streaming_agent()
    await agent.run(task="count")
    (call,) = [item for item in agent.trace.items if type(item) is LLMCall]
    assert call.chunks == PIECES
    assert len(call.chunk_perf) == 5 and list(call.chunk_perf) == sorted(call.chunk_perf)
    assert call.first_token_s == call.chunk_perf[0] - call.start_perf
    assert call.chunk_ids == list(chunk_rows(agent.trace)["event_id"])


async def test_iter_without_chunk_events_yields_the_text() -> None:
    agent = streaming_agent()
    items = [item async for item in agent.iter([TextMessage(content="count", source="user")], chunk_events=False)]
    kinds = [type(item).__name__ for item in items]
    first = kinds.index("str")
    assert kinds[first - 1] == "LLMCall" and kinds[first : first + 5] == ["str"] * 5
    assert kinds[first + 5 :] == ["Move", "Response", "RunFinished"]
    assert "".join(item for item in items if type(item) is str) == ANSWER
    assert CHUNK not in kinds


async def test_run_stream_events_and_trace_rows_have_the_same_ids() -> None:
    agent = streaming_agent()
    events = [item async for item in agent.run_stream(task="count") if type(item) is ModelClientStreamingChunkEvent]
    rows = chunk_rows(agent.trace)
    assert list(rows["event_id"]) == [event.id for event in events]
    assert list(rows["text"]) == [event.content for event in events] == PIECES


async def test_recorders_get_no_chunks_in_either_mode() -> None:
    agent = streaming_agent()
    seen = Seen()
    agent.recorders.append(seen)
    await agent.run(task="count")
    assert seen.kinds == ["RunStarted", "Move", "Move", "Move", "LLMCall", "Move", "Response", "RunFinished"]
    seen.kinds.clear()
    async for _ in agent.run_stream(task="again"):
        pass
    assert seen.kinds == ["RunStarted", "Move", "Move", "Move", "LLMCall", "Move", "Response", "RunFinished"]


async def run_with(agent: AssistantAgent, after_text: int, action: Callable[[], Any]) -> Any:
    """Run ``count`` without chunk events; call ``action`` after that many text items; its result."""
    run = agent.iter([TextMessage(content="count", source="user")], chunk_events=False)
    texts, got = 0, None
    async with run:
        async for item in run:
            if type(item) is str:
                texts += 1
                if texts == after_text:
                    got = action()
    return got


async def test_a_trace_read_mid_stream_has_the_chunks_so_far_then_the_rest() -> None:
    agent = streaming_agent(chunk_delay=0.001)
    early = await run_with(agent, 3, lambda: chunk_rows(agent.trace))
    assert list(early["text"]) == PIECES[:3]
    rows = chunk_rows(agent.trace)
    assert list(rows["text"]) == PIECES
    assert list(rows["event_id"])[:3] == list(early["event_id"])
    assert list(agent.trace.events_df()["seq"]) == list(range(len(agent.trace)))


async def test_two_traces_of_one_run_give_its_chunks_the_same_ids() -> None:
    agent = streaming_agent()
    shared = Trace()
    with shared.recording(agent):
        await agent.run(task="count")
    mine, theirs = chunk_rows(agent.trace), chunk_rows(shared)
    assert list(mine["text"]) == list(theirs["text"]) == PIECES
    assert list(mine["event_id"]) == list(theirs["event_id"])


async def test_clear_mid_stream_keeps_the_run_in_progress_whole() -> None:
    agent = streaming_agent(chunk_delay=0.001)
    await run_with(agent, 2, agent.trace.clear)
    assert list(chunk_rows(agent.trace)["text"]) == PIECES
    # The run in progress keeps all it recorded: its rows are those of the same run with no clear.
    reference = streaming_agent(chunk_delay=0.001)
    await reference.run(task="hi")
    events, expected = agent.trace.events_df(), reference.trace.events_df()
    assert list(events["kind"]) == list(expected["kind"]) and list(events["move"]) == list(expected["move"])
    assert list(events["seq"]) == list(range(len(expected)))
    (call,) = agent.trace.llm_calls_df().itertuples()
    assert call.status == "ok" and call.duration_s > 0 and call.response_text == "".join(PIECES)
