"""MCP workbenches as AutoGen documents them (``autogen_ext.tools.mcp``), against real servers.

AutoGen's documentation: ``McpWorkbench(server_params)`` is used as an async context manager (or
``start()``/``stop()``); ``list_tools()`` gives the server's tools as tool schemas; ``call_tool(name,
arguments)`` gives a ``ToolResult`` whose ``result`` holds a text part per text content and an image
part per image content, with ``is_error`` set for a failed tool, and any exception turned into an
error result; ``workbench=`` hands the tools to an ``AssistantAgent``, whose tool results are the
results' ``to_text()``. The params classes carry AutoGen's field names.

The servers are real: ``mcp-server-time`` from PyPI over stdio, and ``mcp_http_server.py`` (written
with the ``mcp`` SDK) over streamable HTTP on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the MCP tests need the mcp package (pip install -e '.[test]')")

import nbagent  # noqa: E402
from nbagent import (  # noqa: E402
    AssistantAgent,
    CancellationToken,
    CreateResult,
    FunctionCall,
    FunctionExecutionResultMessage,
    ImageResultContent,
    McpWorkbench,
    ReplayChatCompletionClient,
    RequestUsage,
    SseServerParams,
    StdioServerParams,
    StreamableHttpServerParams,
    TextResultContent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolOverride,
    ToolResult,
)

from ..waits import eventually  # noqa: E402
from .conftest import time_server_params, time_server_processes  # noqa: E402

pytestmark = [pytest.mark.timeout(120), pytest.mark.mcp]

# The 1x1 red PNG that mcp_http_server.py's pixel tool returns (not imported: that module builds a server).
PIXEL_B64 = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"


def calls(*items: tuple[str, str, dict[str, Any]]) -> CreateResult:
    """A scripted model answer asking for tool calls ``(id, name, arguments)``."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=i, name=n, arguments=json.dumps(a)) for i, n, a in items],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
    )


# --------------------------------------------------------------------------- the params: AutoGen's fields


def test_server_params_have_autogens_fields_and_defaults() -> None:
    stdio = StdioServerParams(command="uvx", args=["mcp-server-fetch"], read_timeout_seconds=60)
    assert stdio.type == "StdioServerParams"
    assert (stdio.command, stdio.args, stdio.env, stdio.cwd) == ("uvx", ["mcp-server-fetch"], None, None)
    assert (stdio.encoding, stdio.encoding_error_handler, stdio.read_timeout_seconds) == ("utf-8", "strict", 60)
    assert StdioServerParams(command="x").read_timeout_seconds == 5

    sse = SseServerParams(url="http://127.0.0.1:1/sse")
    assert (sse.type, sse.headers, sse.timeout, sse.sse_read_timeout) == ("SseServerParams", None, 5, 300)

    http = StreamableHttpServerParams(url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer x"})
    assert http.type == "StreamableHttpServerParams"
    assert (http.timeout, http.sse_read_timeout, http.terminate_on_close) == (30.0, 300.0, True)

    # A dumped config (AutoGen's discriminated union, by "type") builds the same params.
    workbench = McpWorkbench(http.model_dump())  # type: ignore[arg-type]
    assert workbench.server_params == http


def test_import_nbagent_does_not_import_the_mcp_sdk() -> None:
    code = (
        "import sys, nbagent\n"
        "nbagent.McpWorkbench(nbagent.StdioServerParams(command='x'))\n"
        "assert 'mcp' not in sys.modules, sorted(m for m in sys.modules if m.startswith('mcp'))\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_the_names_are_importable_from_nbagent() -> None:
    for name in ("McpWorkbench", "StdioServerParams", "SseServerParams", "StreamableHttpServerParams"):
        assert name in nbagent.__all__ and getattr(nbagent, name).__module__ == "nbagent.mcp"


# --------------------------------------------------------------------------- stdio: mcp-server-time


async def test_time_server_over_stdio_lists_and_calls_its_tools() -> None:
    started = time.perf_counter()
    async with McpWorkbench(time_server_params()) as time_server:
        tools = {tool["name"]: tool for tool in await time_server.list_tools()}
        assert set(tools) == {"get_current_time", "convert_time"}
        convert = tools["convert_time"]
        assert convert["parameters"]["type"] == "object"
        assert set(convert["parameters"]["required"]) == {"source_timezone", "time", "target_timezone"}
        assert "Europe/Paris" in convert["parameters"]["properties"]["source_timezone"]["description"]

        result = await time_server.call_tool(
            "convert_time", {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
        )
        assert isinstance(result, ToolResult) and not result.is_error
        assert [type(part) for part in result.result] == [TextResultContent]
        converted = json.loads(result.to_text())
        assert converted["target"]["timezone"] == "Asia/Tokyo"
        assert converted["target"]["datetime"].endswith("T21:00:00+09:00")
        assert converted["time_difference"] == "+9.0h"

        # A tool that fails (isError) and a tool the server does not have: error results, no exception.
        bad = await time_server.call_tool("get_current_time", {"timezone": "Nowhere/Land"})
        assert bad.is_error and "Nowhere/Land" in bad.to_text()
        unknown = await time_server.call_tool("teleport", {})
        assert unknown.is_error and "teleport" in unknown.to_text()
        assert time_server_processes()
    assert not time_server.is_started
    await eventually(lambda: not time_server_processes(), "the time server's processes to end")
    print(f"stdio: start, 4 requests and stop in {time.perf_counter() - started:.2f} s")


async def test_agent_calls_the_time_server_and_sees_the_result_in_context_and_trace() -> None:
    arguments = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    model = ReplayChatCompletionClient([calls(("call_1", "convert_time", arguments)), "In Tokyo it is 21:00."])
    time_server = McpWorkbench(time_server_params())
    agent = AssistantAgent("clock", model, workbench=time_server, reflect_on_tool_use=True)

    result = await agent.run(task="It is noon in UTC. What time is it in Tokyo?")  # starts the server on first use

    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "TextMessage",
    ]
    assert {tool["name"] for tool in model.requests[0].tools} == {"get_current_time", "convert_time"}
    execution = result.messages[2]
    assert isinstance(execution, ToolCallExecutionEvent)
    [tool_result] = execution.content
    assert (tool_result.call_id, tool_result.name, tool_result.is_error) == ("call_1", "convert_time", False)
    assert json.loads(tool_result.content)["target"]["datetime"].endswith("T21:00:00+09:00")

    # The context holds the result, and the reflection call was sent it.
    results = [m for m in agent.model_context.messages if isinstance(m, FunctionExecutionResultMessage)]
    assert [r.content for r in results] == [[tool_result]]
    assert any(isinstance(m, FunctionExecutionResultMessage) for m in model.requests[1].messages)

    # The trace records the MCP call like any other tool call.
    row = agent.trace.tool_calls_df().iloc[0]
    assert (row["call_id"], row["tool_name"], bool(row["is_error"])) == ("call_1", "convert_time", False)
    assert row["arguments"] == arguments
    assert "Asia/Tokyo" in row["result"] and row["duration_s"] > 0

    # Closing the agent stops the workbench, and the server process with it.
    assert time_server.is_started and time_server_processes()
    await agent.close()
    assert not time_server.is_started
    await eventually(lambda: not time_server_processes(), "the time server's processes to end")


async def test_autogens_agent_calls_the_time_server_through_nbagents_workbench() -> None:
    """AutoGen's AssistantAgent calls a workbench with its own CancellationToken: nbagent's McpWorkbench
    guards the call with it (was AttributeError 'no attribute guard', and AutoGen's run never ended)."""
    from autogen_agentchat.agents import AssistantAgent as AgAssistantAgent
    from autogen_core import CancellationToken as AgCancellationToken

    arguments = {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    model = ReplayChatCompletionClient([calls(("call_1", "convert_time", arguments))])
    async with McpWorkbench(time_server_params()) as time_server:
        direct = await time_server.call_tool("convert_time", arguments, AgCancellationToken())
        assert not direct.is_error and json.loads(direct.to_text())["target"]["datetime"].endswith("T21:00:00+09:00")
        agent = AgAssistantAgent("ag", model_client=model, workbench=time_server)
        result = await asyncio.wait_for(agent.run(task="Noon UTC in Tokyo?"), 60)  # a hang guard
    execution = result.messages[-2]
    assert type(execution).__name__ == "ToolCallExecutionEvent" and not execution.content[0].is_error
    assert "T21:00:00+09:00" in result.messages[-1].to_text()


async def test_a_server_that_died_is_started_again_on_next_use() -> None:
    time_server = McpWorkbench(time_server_params())
    assert not (await time_server.call_tool("get_current_time", {"timezone": "UTC"})).is_error
    [pid] = time_server_processes()
    os.kill(pid, signal.SIGKILL)
    await eventually(lambda: pid not in time_server_processes(), f"the time server {pid} to end")
    lost = await time_server.call_tool("get_current_time", {"timezone": "UTC"})
    assert lost.is_error  # the call that found the connection lost is not repeated: it may have acted
    again = await time_server.call_tool("get_current_time", {"timezone": "UTC"})
    assert not again.is_error and json.loads(again.to_text())["timezone"] == "UTC"
    assert time_server_processes() and pid not in time_server_processes()
    await time_server.stop()
    await eventually(lambda: not time_server_processes(), "the time server's processes to end")


# --------------------------------------------------------------------------- streamable HTTP: the tests' server


async def test_http_server_lists_tools_and_gives_text_image_and_error_results(http_server_url: str) -> None:
    async with McpWorkbench(StreamableHttpServerParams(url=http_server_url, timeout=10)) as server:
        tools = {tool["name"]: tool for tool in await server.list_tools()}
        assert set(tools) == {"add", "pixel", "fail", "wait", "cancelled_calls"}
        assert tools["add"]["description"] == "Add two integers."
        assert tools["add"]["parameters"]["required"] == ["a", "b"]

        added = await server.call_tool("add", {"a": 2, "b": 3})
        assert (added.name, added.to_text(), added.is_error) == ("add", "5", False)

        picture = await server.call_tool(name="pixel", arguments=None, cancellation_token=None, call_id="c-7")
        assert not picture.is_error
        text, image = picture.result
        assert isinstance(text, TextResultContent) and text.content == "a red pixel"
        assert isinstance(image, ImageResultContent)
        assert (image.content.mime_type, image.content.data) == ("image/png", PIXEL_B64)
        assert picture.to_text() == f"a red pixel\n[Image: {PIXEL_B64}]"  # AutoGen's to_text()
        assert picture.to_text(replace_image="<image>") == "a red pixel\n<image>"

        failed = await server.call_tool("fail", {"reason": "testing"})
        assert failed.is_error and "failed on purpose: testing" in failed.to_text()
        unknown = await server.call_tool("nope")
        assert unknown.is_error and "nope" in unknown.to_text()
        wrong = await server.call_tool("add", {"a": "two"})
        assert wrong.is_error


async def test_cancelling_the_token_cancels_the_call_on_the_server(http_server_url: str) -> None:
    async with McpWorkbench(StreamableHttpServerParams(url=http_server_url)) as server:
        token = CancellationToken()
        asyncio.get_running_loop().call_later(0.3, token.cancel)
        started = time.perf_counter()
        with pytest.raises(asyncio.CancelledError):
            await server.call_tool("wait", {"seconds": 60, "label": "direct"}, token)
        assert time.perf_counter() - started < 45  # not the 60 s call: a hang guard far above a loaded figure
        # The server was told (notifications/cancelled) and its handler was cancelled.
        await eventually(lambda: _cancelled(server, "direct"), "the server to see the direct call cancelled")
        # The connection is still good.
        assert (await server.call_tool("add", {"a": 1, "b": 1})).to_text() == "2"


async def test_agent_run_cancelled_during_an_mcp_call(http_server_url: str) -> None:
    model = ReplayChatCompletionClient(
        [calls(("w1", "wait", {"seconds": 60, "label": "agent"})), calls(("a1", "add", {"a": 20, "b": 22}))]
    )
    async with McpWorkbench(StreamableHttpServerParams(url=http_server_url)) as server:
        agent = AssistantAgent("waiter", model, workbench=server)
        token = CancellationToken()
        asyncio.get_running_loop().call_later(0.5, token.cancel)
        started = time.perf_counter()
        with pytest.raises(asyncio.CancelledError):
            await agent.run(task="wait a minute", cancellation_token=token)
        assert time.perf_counter() - started < 45 and not agent.is_running  # not the 60 s call
        last = agent.model_context.messages[-1]
        assert isinstance(last, FunctionExecutionResultMessage)
        assert [(r.call_id, r.is_error) for r in last.content] == [("w1", True)]
        await eventually(lambda: _cancelled(server, "agent"), "the server to see the agent's call cancelled")

        result = await agent.run(task="then add")  # the agent and the workbench go on
        assert result.messages[-1].content == "42"


async def test_agent_runs_parallel_mcp_calls_with_an_image_result(http_server_url: str) -> None:
    model = ReplayChatCompletionClient(
        [calls(("p1", "pixel", {}), ("a1", "add", {"a": 1, "b": 2}), ("f1", "fail", {"reason": "x"}))]
    )
    async with McpWorkbench(StreamableHttpServerParams(url=http_server_url)) as server:
        agent = AssistantAgent("painter", model, workbench=server, tool_call_summary_format="{tool_name}: {result}")
        result = await agent.run(task="draw, add and fail")
    request = next(m for m in result.messages if isinstance(m, ToolCallRequestEvent))
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert [c.id for c in request.content] == [r.call_id for r in execution.content] == ["p1", "a1", "f1"]
    assert [r.is_error for r in execution.content] == [False, False, True]
    assert execution.content[0].content == f"a red pixel\n[Image: {PIXEL_B64}]"
    assert execution.content[1].content == "3"
    assert result.messages[-1].content.splitlines() == [
        "pixel: a red pixel",
        f"[Image: {PIXEL_B64}]",
        "add: 3",
        "fail: Error executing tool fail: failed on purpose: x",
    ]
    frame = agent.trace.tool_calls_df()
    assert list(frame["tool_name"]) == ["pixel", "add", "fail"] and list(frame["batch_size"]) == [3, 3, 3]


async def test_tool_overrides_rename_a_server_tool(http_server_url: str) -> None:
    overrides = {"add": ToolOverride(name="plus", description="Sum of a and b.")}
    model = ReplayChatCompletionClient([calls(("c1", "plus", {"a": 4, "b": 5}))])
    async with McpWorkbench(StreamableHttpServerParams(url=http_server_url), tool_overrides=overrides) as server:
        names = {tool["name"]: tool["description"] for tool in await server.list_tools()}
        assert names["plus"] == "Sum of a and b." and "add" not in names
        agent = AssistantAgent("summer", model, workbench=server)
        result = await agent.run(task="4 + 5")
    assert result.messages[-1].content == "9"
    with pytest.raises(ValueError, match="used by multiple tools"):
        McpWorkbench(
            StreamableHttpServerParams(url=http_server_url),
            tool_overrides={"add": ToolOverride(name="x"), "fail": ToolOverride(name="x")},
        )


async def test_start_and_stop_follow_autogen(http_server_url: str) -> None:
    server = McpWorkbench(StreamableHttpServerParams(url=http_server_url))
    assert not server.is_started
    assert len(await server.list_tools()) == 5  # started on first use, as AutoGen's does
    assert server.is_started and server.initialize_result is not None
    with pytest.warns(UserWarning, match="already started"):
        await server.start()
    await server.stop()
    assert not server.is_started and server.initialize_result is None
    await server.stop()  # stopping twice (the agent's close, then the async with) is fine
    assert (await server.call_tool("add", {"a": 1, "b": 2})).to_text() == "3"  # and it starts again
    await server.stop()
    assert await server.save_state() == {"type": "McpWorkBenchState"}


def test_a_workbench_used_from_two_event_loops_reconnects(http_server_url: str) -> None:
    """``nbagent.run`` outside a notebook runs each task in a new event loop (``asyncio.run``): the
    connection of the first loop ended with it, and the second run opens a new one."""
    model = ReplayChatCompletionClient([calls(("c1", "add", {"a": 1, "b": 1})), calls(("c2", "add", {"a": 2, "b": 2}))])
    server = McpWorkbench(StreamableHttpServerParams(url=http_server_url))
    agent = AssistantAgent("twice", model, workbench=server)
    first = nbagent.run(agent, "1 + 1")
    second = nbagent.run(agent, "2 + 2")
    assert [first.messages[-1].content, second.messages[-1].content] == ["2", "4"]  # type: ignore[union-attr]
    asyncio.run(server.stop())


async def test_a_server_that_cannot_start_raises_at_start_and_errs_as_a_tool_result() -> None:
    missing = McpWorkbench(StdioServerParams(command=sys.executable, args=["-c", "import sys; sys.exit(3)"]))
    with pytest.raises(Exception):  # noqa: B017 - the SDK's error for a server that closed at once
        await missing.start()
    assert not missing.is_started
    model = ReplayChatCompletionClient([calls(("c1", "anything", {}))])
    unreachable = McpWorkbench(StreamableHttpServerParams(url="http://127.0.0.1:9/mcp", timeout=2))
    agent = AssistantAgent("a", model, workbench=unreachable)
    with pytest.raises(Exception):  # noqa: B017 - listing the tools fails: the model cannot be offered them
        await agent.run(task="go")
    assert not agent.is_running


# --------------------------------------------------------------------------- helpers


async def _cancelled_labels(server: McpWorkbench) -> str:
    return (await server.call_tool("cancelled_calls")).to_text()


async def _cancelled(server: McpWorkbench, label: str) -> bool:
    return label in (await _cancelled_labels(server)).split(",")


# --------------------------------------------------------------------------- mcp_server_tools


async def test_mcp_server_tools_gives_one_tool_per_server_tool_on_a_shared_workbench(http_server_url: str) -> None:
    from nbagent import mcp_server_tools

    tools = await mcp_server_tools(StreamableHttpServerParams(url=http_server_url, timeout=10))
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == {"add", "pixel", "fail", "wait", "cancelled_calls"}
    assert len({id(tool.workbench) for tool in tools}) == 1  # one connection for all
    assert by_name["add"].description == "Add two integers." and by_name["add"].schema["parameters"]["required"]
    model = ReplayChatCompletionClient(
        [calls(("c1", "add", {"a": 2, "b": 3}), ("c2", "fail", {"reason": "testing"})), "5, and a failure."]
    )
    agent = AssistantAgent("adder", model, tools=tools, reflect_on_tool_use=True)
    result = await agent.run(task="2 + 3?")
    execution = result.messages[2]
    assert isinstance(execution, ToolCallExecutionEvent)
    added, failed = execution.content
    assert (added.name, added.content, added.is_error) == ("add", "5", False)
    assert failed.is_error and "failed on purpose: testing" in failed.content
    await tools[0].workbench.stop()
    with pytest.raises(TypeError, match="session"):
        await mcp_server_tools(StreamableHttpServerParams(url=http_server_url), session=object())
