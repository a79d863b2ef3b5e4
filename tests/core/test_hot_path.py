"""The hot path's shortcuts give what the general path gives: the request a client gets, a tool's
result without its stream's generators, a return value's text without an encoder per call."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    BaseTool,
    CancellationToken,
    FunctionTool,
    ReplayChatCompletionClient,
    StaticWorkbench,
    SystemMessage,
    TextMessage,
    ToolSchema,
    UnboundedChatCompletionContext,
    UserMessage,
)
from nbagent.messages import LLMMessage
from nbagent.models.base import ModelRequest
from nbagent.records import LLMCall
from nbagent.tools import ToolResult, tool_output_text

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


class Prompting(ReplayChatCompletionClient):
    """A client that puts a prompt of its own before the messages it is given, in place."""

    async def complete(self, request: ModelRequest, cancellation_token: CancellationToken | None = None) -> Any:
        assert isinstance(request.messages, list)
        request.messages.insert(0, SystemMessage(content="injected"))
        request.tools.clear()
        return await super().complete(request, cancellation_token)


async def test_a_client_that_edits_its_request_leaves_the_record_as_it_was() -> None:
    client = Prompting([calls(("c1", "add", '{"a": 1, "b": 2}')), "3"])
    agent = AssistantAgent("a", client, tools=[add], system_message=None)
    await agent.run(task="1 + 2?")
    records = [row for row in agent.trace.store.rows if type(row).__name__ == "LLMCall"]
    assert [type(m).__name__ for m in records[0].request.messages] == ["UserMessage"]
    assert [type(m).__name__ for m in client.requests[0].messages] == ["SystemMessage", "UserMessage"]
    assert [tool["name"] for tool in records[0].request.tools] == ["add"] and client.requests[0].tools == []
    assert [tool["name"] for tool in agent.tools] == ["add"]
    assert "injected" not in [m.content for m in agent.model_context.messages]


def gives_message() -> TextMessage:
    return TextMessage(content="hi", source="tool")


class Point(BaseModel):
    x: int


def gives_model() -> Point:
    return Point(x=1)


async def test_a_returned_message_or_model_is_the_tools_result_as_json() -> None:
    """As AutoGen's workbenches: a tool's return value is its result (a pydantic model as JSON), never an
    event, also when it is a chat message (AutoGen's json.dumps of model_dump() fails on its datetime:
    nbagent writes the model's own JSON)."""
    workbench = StaticWorkbench([gives_message, gives_model])
    for name, expected in [("gives_message", "hi"), ("gives_model", 1)]:
        result = await workbench.call_tool(name, {})
        streamed = [item async for item in workbench.call_tool_stream(name, {})]
        assert [type(item) for item in streamed] == [ToolResult] and not result.is_error
        value = json.loads(result.content)
        assert value.get("content", value.get("x")) == expected
        assert json.loads(streamed[0].content).keys() == value.keys()
    client = ReplayChatCompletionClient([calls(("c1", "gives_message", "{}")), "done"])
    result = await AssistantAgent("a", client, tools=[gives_message]).run(task="go")
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallSummaryMessage",
    ]
    assert json.loads(result.messages[2].content[0].content)["content"] == "hi"


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


class Logged(UnboundedChatCompletionContext):
    """A context whose add_message, get_messages and clear are its own: each call is logged."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[str] = []

    async def add_message(self, message: LLMMessage) -> None:
        self.log.append(f"add {type(message).__name__}")
        await super().add_message(message)

    async def get_messages(self) -> list[LLMMessage]:
        self.log.append("get")
        return [*await super().get_messages(), UserMessage(content="a note of the view", source="context")]

    async def clear(self) -> None:
        self.log.append("clear")
        await super().clear()


async def test_a_context_that_overrides_add_get_and_clear_is_called_by_the_loop() -> None:
    client = ReplayChatCompletionClient([calls(("c1", "add", '{"a": 1, "b": 2}')), "3"])
    context = Logged()
    agent = AssistantAgent("a", client, tools=[add], model_context=context, max_tool_iterations=2)
    await agent.run(task="1 + 2?")
    assert context.log == [
        "add UserMessage", "get", "add AssistantMessage", "add FunctionExecutionResultMessage", "get",
        "add AssistantMessage",
    ]  # fmt: skip
    assert all(request.messages[-1].content == "a note of the view" for request in client.requests)
    await agent.on_reset()
    assert context.log[-1] == "clear" and context.messages == []


async def test_an_add_message_or_clear_set_on_the_context_itself_is_called() -> None:
    context = UnboundedChatCompletionContext()
    added: list[LLMMessage] = []
    cleared: list[bool] = []
    own_add = context.add_message

    async def add_message(message: LLMMessage) -> None:
        added.append(message)
        await own_add(message)

    async def clear() -> None:
        cleared.append(True)

    context.add_message = add_message  # type: ignore[method-assign]
    context.clear = clear  # type: ignore[method-assign]
    agent = AssistantAgent("a", ReplayChatCompletionClient(["hi"]), model_context=context)
    await agent.run(task="hello")
    assert [type(m).__name__ for m in added] == ["UserMessage", "AssistantMessage"] and len(context) == 2
    await agent.on_reset()
    assert cleared == [True] and len(context) == 2  # its own clear ran, not nbagent's


async def test_a_streamed_call_is_recorded_with_the_lists_its_stream_fills() -> None:
    seen: list[tuple[list[str], list[str]]] = []

    class Recorder:
        def record(self, item: object) -> None:
            if isinstance(item, LLMCall):
                seen.append((item.chunks, item.chunk_ids))  # type: ignore[arg-type]

    client = ReplayChatCompletionClient(["one two three"])
    agent = AssistantAgent("a", client, model_client_stream=True)
    agent.recorders.append(Recorder())
    streamed = [item async for item in agent.run_stream(task="count")]
    [(chunks, ids)] = seen
    assert "".join(chunks) == "one two three" and len(ids) == len(chunks) > 1  # filled after it was recorded
    assert ids == [item.id for item in streamed if type(item).__name__ == "ModelClientStreamingChunkEvent"]
