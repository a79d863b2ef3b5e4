"""FunctionTool schemas, sync and streaming tools, and tool faults (raise, hang, odd values, 10 MB)."""

from __future__ import annotations

import asyncio
import json
import threading
from typing import Annotated, Literal

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    CancellationToken,
    FunctionTool,
    ReplayChatCompletionClient,
    StaticWorkbench,
    TextMessage,
    ThoughtEvent,
    ToolArgumentsError,
)

from ..waits import within
from .helpers import calls, context, every_call_answered, kinds


class Point(BaseModel):
    x: int


def weather(
    city: str,
    days: Annotated[int, "how many days ahead"] = 3,
    unit: Literal["c", "f"] = "c",
    tags: list[str] | None = None,
    point: Point | None = None,
) -> str:
    """Get the weather.

    Second paragraph.

    Args:
        city: the city name
        days (int): overridden by the Annotated text
    Returns:
        the forecast
    """
    return f"{city}:{days}:{unit}:{tags}:{point}"


def test_schema_from_hints_and_docstring() -> None:
    tool = FunctionTool(weather)
    params = tool.schema["parameters"]
    assert tool.schema["name"] == "weather"
    assert tool.schema["description"] == "Get the weather.\n\nSecond paragraph."
    assert params["required"] == ["city"]
    # AutoGen's shape: each property's title; a description from Annotated, the docstring, else the name
    assert params["properties"]["city"] == {"type": "string", "description": "the city name", "title": "City"}
    assert params["properties"]["days"] == {
        "type": "integer",
        "default": 3,
        "description": "how many days ahead",
        "title": "Days",
    }
    assert params["properties"]["unit"] == {
        "type": "string",
        "enum": ["c", "f"],
        "default": "c",
        "description": "unit",
        "title": "Unit",
    }
    assert params["properties"]["tags"] == {
        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
        "default": None,
        "description": "tags",
        "title": "Tags",
    }
    assert "$defs" not in params  # inlined, as AutoGen's are
    assert params["properties"]["point"]["anyOf"][0]["properties"]["x"]["type"] == "integer"
    assert params["additionalProperties"] is False
    assert tool.schema["strict"] is False


def test_schema_strict_name_and_description_overrides() -> None:
    def city_only(city: str) -> str:
        return city

    tool = FunctionTool(city_only, description="d", name="wx", strict=True)
    assert (tool.schema["name"], tool.schema["description"], tool.schema["strict"]) == ("wx", "d", True)
    assert tool.schema["parameters"]["additionalProperties"] is False
    with pytest.raises(ValueError, match="Default arguments are not allowed in strict mode"):
        _ = FunctionTool(weather, strict=True).schema
    with pytest.raises(ValueError, match="must match"):
        FunctionTool(weather, name="bad name")
    with pytest.raises(TypeError):
        FunctionTool(3)  # type: ignore[arg-type]


async def test_arguments_validated_and_coerced() -> None:
    tool = FunctionTool(weather)
    assert await tool.run_json({"city": "Oslo", "days": "2", "point": {"x": 1}}) == "Oslo:2:c:None:x=1"
    with pytest.raises(ToolArgumentsError, match="unit: Input should be 'c' or 'f'"):
        await tool.run_json({"city": "Oslo", "unit": "k"})

    def city_only(city: str) -> str:
        return city

    strict = FunctionTool(city_only, strict=True)
    with pytest.raises(ToolArgumentsError, match="extra: Extra inputs are not permitted"):
        await strict.run_json({"city": "Oslo", "extra": 1})
    assert await tool.run_json({"city": "Oslo", "extra": 1}) == "Oslo:3:c:None:None"


async def test_tool_receives_cancellation_token() -> None:
    seen: list[CancellationToken] = []

    async def probe(cancellation_token: CancellationToken) -> str:
        seen.append(cancellation_token)
        return "ok"

    tool = FunctionTool(probe)
    assert tool.schema["parameters"]["properties"] == {}
    token = CancellationToken()
    agent = AssistantAgent("a", ReplayChatCompletionClient([calls(("c1", "probe", "{}"))]), tools=[tool])
    run = agent.iter([TextMessage(content="go", source="user")], token)
    assert [type(item).__name__ async for item in run][-1] == "RunFinished"
    assert seen == [run.token]  # the run's token: cancelled by the caller's token or by aclose()


async def test_sync_tools_run_in_a_thread() -> None:
    threads: list[threading.Thread] = []

    def where() -> str:
        threads.append(threading.current_thread())
        return "done"

    agent = AssistantAgent("a", ReplayChatCompletionClient([calls(("c1", "where", "{}"))]), tools=[where])
    result = await agent.run(task="go")
    assert result.messages[-1].content == "done"
    assert threads and threads[0] is not threading.main_thread()


async def test_streaming_tool_events_are_forwarded_while_the_batch_runs() -> None:
    other_done = asyncio.Event()
    seen_before_other_done: list[bool] = []

    async def progress(steps: int):
        """Report progress while working."""
        for i in range(steps):
            yield ThoughtEvent(content=f"step {i}", source="progress")
            await asyncio.sleep(0)
        yield f"did {steps}"

    async def slow() -> str:
        await asyncio.sleep(0.05)
        other_done.set()
        return "slow done"

    assert FunctionTool(progress).streams
    script = [calls(("c1", "progress", '{"steps": 2}'), ("c2", "slow", "{}"))]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[progress, slow])
    events = []
    async for event in agent.run_stream(task="go"):
        if isinstance(event, ThoughtEvent):
            seen_before_other_done.append(not other_done.is_set())
        events.append(event)
    assert kinds(events) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ThoughtEvent",
        "ThoughtEvent",
        "ToolCallExecutionEvent",
        "ToolCallSummaryMessage",
        "TaskResult",
    ]
    assert [e.content for e in events[2:4]] == ["step 0", "step 1"]
    assert seen_before_other_done == [True, True]
    assert [r.content for r in events[4].content] == ["did 2", "slow done"]
    assert [type(e).__name__ for e in events[-1].messages] == kinds(events[:-1])


async def test_streaming_tool_alone_and_via_workbench() -> None:
    async def ticker():
        yield ThoughtEvent(content="tick", source="t")
        yield 42

    wb = StaticWorkbench([ticker])
    items = [i async for i in wb.call_tool_stream("ticker", {})]
    assert [type(i).__name__ for i in items] == ["ThoughtEvent", "ToolResult"]
    assert (await wb.call_tool("ticker", {})).content == "42"
    assert (await wb.call_tool("missing", {})).is_error


async def fault_agent(tool, arguments: str = "{}"):
    name = tool.name if isinstance(tool, FunctionTool) else tool.__name__
    agent = AssistantAgent("a", ReplayChatCompletionClient([calls(("c1", name, arguments)), "next"]), tools=[tool])
    result = await within(agent.run(task="go"), f"the run whose tool {name} fails")
    assert every_call_answered(agent)
    assert (await agent.run(task="again")).messages[-1].content == "next"
    (execution,) = [m for m in result.messages if m.type == "ToolCallExecutionEvent"]
    return execution.content[0]


async def test_fault_raising_tool() -> None:
    def broken(x: int) -> int:
        return 1 // x

    result = await fault_agent(broken, '{"x": 0}')
    assert (result.content, result.is_error) == ("Error: ZeroDivisionError: integer division or modulo by zero", True)


async def test_fault_hanging_async_tool_times_out() -> None:
    async def hang() -> str:
        await asyncio.sleep(60)
        return "never"

    result = await fault_agent(FunctionTool(hang, timeout=0.05))
    assert (result.content, result.is_error) == ("Error: TimeoutError: tool 'hang' timed out after 0.05 s", True)


async def test_fault_hanging_sync_tool_times_out() -> None:
    release = threading.Event()

    def block() -> str:
        release.wait(5)
        return "late"

    try:
        result = await fault_agent(FunctionTool(block, timeout=0.05))
    finally:
        release.set()
    assert (result.content, result.is_error) == ("Error: TimeoutError: tool 'block' timed out after 0.05 s", True)


async def test_fault_hanging_streaming_tool_times_out() -> None:
    async def drip():
        yield ThoughtEvent(content="start", source="d")
        await asyncio.sleep(60)
        yield "never"

    result = await fault_agent(FunctionTool(drip, timeout=0.05))
    assert (result.content, result.is_error) == ("Error: TimeoutError: tool 'drip' timed out after 0.05 s", True)


class Opaque:
    def __repr__(self) -> str:
        return "<Opaque>"


class Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("cannot print me")


@pytest.mark.parametrize(
    ("value", "expected", "is_error"),
    [
        (Opaque(), "<Opaque>", False),
        ({1, 2}, "{1, 2}", False),
        ({(1, 2): "tuple key"}, "{(1, 2): 'tuple key'}", False),
        (b"\x00bytes", "b'\\x00bytes'", False),
        (Point(x=1), '{"x": 1}', False),  # AutoGen's json.dumps(model_dump())
        ({"nested": [1, {"a": None}]}, '{"nested": [1, {"a": null}]}', False),
        (None, "null", False),
        (Unprintable(), "Error: RuntimeError: cannot print me", True),
    ],
)
async def test_fault_non_serialisable_values(value: object, expected: str, is_error: bool) -> None:
    async def odd() -> object:
        return value

    result = await fault_agent(odd)
    assert (result.content, result.is_error) == (expected, is_error)


async def test_fault_circular_value() -> None:
    loop: list[object] = []
    loop.append(loop)

    async def circular() -> object:
        return loop

    result = await fault_agent(circular)
    assert (result.content, result.is_error) == ("[[...]]", False)


async def test_fault_ten_megabytes_kept_whole() -> None:
    big = "x" * (10 * 1024 * 1024 - 3) + "end"

    async def huge() -> str:
        return big

    agent = AssistantAgent("a", ReplayChatCompletionClient([calls(("c1", "huge", "{}"))]), tools=[huge])
    result = await agent.run(task="go")
    assert result.messages[2].content[0].content == big
    assert result.messages[-1].content == big
    assert context(agent)[2]["content"][0]["content"] == big
    state = json.loads(json.dumps(await agent.save_state()))
    assert len(state["llm_context"]["messages"][2]["content"][0]["content"]) == 10 * 1024 * 1024
