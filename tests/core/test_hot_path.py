"""The hot path's shortcuts give what the general path gives: the request a client gets, a tool's
result without its stream's generators, a return value's text without an encoder per call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    BaseTool,
    CancellationToken,
    FunctionTool,
    ReplayChatCompletionClient,
    StaticWorkbench,
    ToolSchema,
)
from nbagent.models.base import ModelRequest
from nbagent.tools import tool_output_text

from .helpers import add, calls


class StreamedOnly(BaseTool):
    """A tool whose stream, not ``run_json``, gives its value (it does not say it streams)."""

    name = "streamed_only"
    description = "d"
    schema = ToolSchema(name="streamed_only", description="d", parameters={"type": "object", "properties": {}})

    async def run_json(self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None) -> Any:
        return "from run_json"

    async def run_json_stream(
        self, args: Mapping[str, Any], cancellation_token: CancellationToken | None = None
    ) -> AsyncIterator[Any]:
        yield "from the stream"


async def test_the_client_gets_the_request_of_the_record_with_the_tools_copied() -> None:
    client = ReplayChatCompletionClient([calls(("c1", "add", '{"a": 1, "b": 2}')), "3"])
    agent = AssistantAgent("a", client, tools=[add], max_tool_iterations=2)
    await agent.run(task="1 + 2?")
    records = [row for row in agent.trace.store.rows if type(row).__name__ == "LLMCall"]
    assert [record.request for record in records] == list(client.requests)
    assert all(isinstance(request, ModelRequest) for request in client.requests)
    first, second = client.requests
    assert first.tools == agent.tools and first.tools is not second.tools  # a snapshot per call
    first.tools.clear()  # a client that changes what it was given changes nothing of the agent's
    assert [tool["name"] for tool in agent.tools] == ["add"]


async def test_a_tool_that_does_not_stream_gives_the_result_of_its_stream() -> None:
    async def fails() -> str:
        raise ValueError("broken")

    workbench = StaticWorkbench([add, fails, StreamedOnly()])
    results = [
        await workbench.call_tool("add", {"a": 1, "b": 2}),
        await workbench.call_tool("fails", {}),
        await workbench.call_tool("streamed_only", {}),
        await workbench.call_tool("missing", {}),
    ]
    streamed = []
    for name, arguments in [("add", {"a": 1, "b": 2}), ("fails", {}), ("streamed_only", {}), ("missing", {})]:
        async for item in workbench.call_tool_stream(name, arguments):
            streamed.append(item)
    seen = [(result.name, result.content, result.is_error) for result in results]
    assert seen == [(result.name, result.content, result.is_error) for result in streamed]
    assert seen == [
        ("add", "3", False),
        ("fails", "Error: ValueError: broken", True),
        ("streamed_only", "from the stream", False),
        ("missing", "Error: tool 'missing' not found in any workbench", True),
    ]


async def test_a_cancelled_tool_call_raises_out_of_call_tool() -> None:
    async def waits() -> str:
        await asyncio.sleep(10)
        return "never"

    workbench = StaticWorkbench([FunctionTool(waits)])
    task = asyncio.ensure_future(workbench.call_tool("waits", {}))
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.mark.parametrize(
    "value", [3, -7, 10**30, True, None, 2.5, float("inf"), {"é": [1, "ü"]}, [1, 2], (1, "x"), "text"]
)
def test_tool_output_text_is_what_json_dumps_writes(value: object) -> None:
    expected = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    assert tool_output_text(value) == expected
