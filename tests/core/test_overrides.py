"""A subclass's override of a public or loop method is called: the hot path's shortcuts are taken only
when the method they stand for is nbagent's own."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any

from nbagent import (
    AgentRun,
    AssistantAgent,
    BaseAgentEvent,
    BaseChatMessage,
    CancellationToken,
    ReplayChatCompletionClient,
    Response,
    StaticWorkbench,
    TextMessage,
    ToolCallExecutionEvent,
    ToolSchema,
    Workbench,
)
from nbagent.records import RunItem, ToolExecution
from nbagent.tools import ToolResult

from .helpers import add, calls, kinds


async def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


class Logging(StaticWorkbench):
    """A workbench that rewrites each result its stream gives."""

    async def call_tool_stream(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> AsyncIterator[BaseAgentEvent | BaseChatMessage | ToolResult]:
        async for item in super().call_tool_stream(name, arguments, cancellation_token, call_id):
            if isinstance(item, ToolResult):
                item = ToolResult(item.name, "logged " + item.content, item.is_error)
            yield item


async def test_call_tool_goes_through_an_overridden_call_tool_stream() -> None:
    workbench = Logging([add])
    assert (await workbench.call_tool("add", {"a": 1, "b": 2})).content == "logged 3"
    assert (await StaticWorkbench([add]).call_tool("add", {"a": 1, "b": 2})).content == "3"
    client = ReplayChatCompletionClient([calls(("c1", "add", '{"a": 1, "b": 2}')), "done"])
    result = await AssistantAgent("a", client, workbench=workbench).run(task="1 + 2?")
    [execution] = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert [r.content for r in execution.content] == ["logged 3"]


class Iterating(AssistantAgent):
    """Counts the runs made through ``iter``."""

    iterated = 0

    def iter(
        self,
        messages: Sequence[BaseChatMessage],
        cancellation_token: CancellationToken | None = None,
        *,
        chunk_events: bool = True,
    ) -> AgentRun:
        type(self).iterated += 1
        return super().iter(messages, cancellation_token, chunk_events=chunk_events)


async def test_every_entry_point_runs_through_an_overridden_iter() -> None:
    agent = Iterating("a", ReplayChatCompletionClient(["one", "two", "three", "four"]))
    await agent.run(task="t")
    assert Iterating.iterated == 1
    assert kinds([item async for item in agent.run_stream(task="t")])[-1] == "TaskResult"
    assert Iterating.iterated == 2
    await agent.on_messages([TextMessage(content="t", source="user")])
    assert Iterating.iterated == 3
    assert [type(item) async for item in agent.on_messages_stream([])][-1] is Response
    assert Iterating.iterated == 4


class OnlyAdd(AssistantAgent):
    """Offers the model the tool ``add`` alone, of its static tools."""

    async def _list_tools(
        self, token: CancellationToken | None = None
    ) -> tuple[list[ToolSchema], dict[str, Workbench]]:
        schemas, owners = await super()._list_tools(token)
        return [s for s in schemas if s["name"] == "add"], {k: v for k, v in owners.items() if k == "add"}


async def test_the_loop_lists_tools_through_an_overridden_list_tools() -> None:
    client = ReplayChatCompletionClient([calls(("c1", "mul", '{"a": 2, "b": 3}')), "done"])
    agent = OnlyAdd("a", client, tools=[add, mul])
    result = await agent.run(task="2 * 3?")
    assert [tool["name"] for tool in client.requests[0].tools] == ["add"]
    [execution] = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert execution.content[0].is_error  # mul is not offered: not run
    assert "mul" in execution.content[0].content


class MyResponse(Response):
    pass


class MyExecution(ToolExecution):
    pass


class Subclassing(AssistantAgent):
    """Its steps yield subclasses of a Response and of a record type."""

    async def _process_model_result(self, *args: Any, **kwargs: Any) -> AsyncGenerator[RunItem, None]:
        async for item in super()._process_model_result(*args, **kwargs):
            if type(item) is Response:
                item = MyResponse(chat_message=item.chat_message, inner_messages=item.inner_messages)
            yield item

    async def _execute_tool_calls(self, *args: Any, **kwargs: Any) -> AsyncGenerator[Any, None]:
        async for item in super()._execute_tool_calls(*args, **kwargs):
            if type(item) is ToolExecution:
                item = MyExecution(item.run_id, item.iteration, item.call, item.batch_size)
            yield item


async def test_subclasses_of_a_response_and_a_record_are_read_as_their_base() -> None:
    script = [calls(("c1", "add", '{"a": 1, "b": 2}')), "three"] * 3
    agent = Subclassing("a", ReplayChatCompletionClient(script), tools=[add], reflect_on_tool_use=True)
    events = ["ToolCallRequestEvent", "ToolCallExecutionEvent"]
    result = await agent.run(task="1 + 2?")
    assert kinds(result.messages) == ["TextMessage", *events, "TextMessage"]
    assert result.messages[-1].content == "three"
    streamed = [item async for item in agent.run_stream(task="again")]
    assert kinds(streamed) == ["TextMessage", *events, "TextMessage", "TaskResult"]
    response = await agent.on_messages([TextMessage(content="once more", source="user")])
    assert type(response) is MyResponse and kinds(response.inner_messages) == events
