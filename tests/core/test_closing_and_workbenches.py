"""Leaving a run early frees the agent at once; a custom workbench that fails or hangs stays contained."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from nbagent import (
    AssistantAgent,
    CancellationToken,
    ModelClientStreamingChunkEvent,
    ReplayChatCompletionClient,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallSummaryMessage,
    ToolResult,
    Workbench,
)
from nbagent.tools import ToolSchema

from .helpers import calls


async def test_closing_run_stream_early_frees_the_agent_at_once() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["one two three", "again"]), model_client_stream=True)
    stream = agent.run_stream(task="go")
    async for item in stream:
        if isinstance(item, ModelClientStreamingChunkEvent):
            break
    await stream.aclose()
    assert not agent.is_running
    assert [m.type for m in agent.model_context.messages] == ["UserMessage"]
    result = await agent.run(task="next")
    assert result.messages[-1].content == "again"


async def test_leaving_an_iter_block_closes_the_run() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["first"]))
    async with agent.iter([TextMessage(content="go", source="user")]) as run:
        first = await run.__anext__()  # RunStarted: the model was never called
    assert type(first).__name__ == "RunStarted"
    assert run.status == "cancelled" and not agent.is_running
    assert (await agent.run(task="next")).messages[-1].content == "first"


class RemoteWorkbench(Workbench):
    """A workbench whose calls fail (or whose listing hangs), as a remote one can."""

    def __init__(self, hang_listing: bool = False) -> None:
        self.hang_listing = hang_listing

    async def list_tools(self) -> list[ToolSchema]:
        if self.hang_listing:
            await asyncio.Event().wait()
        return [
            ToolSchema(name="remote", description="A remote tool.", parameters={"type": "object", "properties": {}})
        ]

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any], cancellation_token: CancellationToken | None = None
    ) -> ToolResult:
        raise RuntimeError("remote tool failed")


async def test_a_workbench_that_raises_gives_an_error_result_and_the_run_goes_on() -> None:
    client = ReplayChatCompletionClient([calls(("c1", "remote", "{}"))])
    agent = AssistantAgent("a", client, workbench=RemoteWorkbench())
    result = await agent.run(task="go")
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert [(r.content, r.is_error) for r in execution.content] == [("Error: RuntimeError: remote tool failed", True)]
    assert isinstance(result.messages[-1], ToolCallSummaryMessage)
    assert result.messages[-1].content == "Error: RuntimeError: remote tool failed"


async def test_a_hanging_workbench_listing_is_cancelled_by_the_token() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["never"]), workbench=RemoteWorkbench(hang_listing=True))
    token = CancellationToken()
    run = asyncio.create_task(agent.run(task="go", cancellation_token=token))
    await asyncio.sleep(0.05)
    assert not run.done()
    token.cancel()
    done, _ = await asyncio.wait({run}, timeout=1)
    assert done == {run} and run.cancelled()
    assert not agent.is_running
