"""AutoGen's per-transport MCP tool adapters (issue 28.3), against real servers.

``StdioMcpToolAdapter(server_params, tool)``, ``SseMcpToolAdapter`` and
``StreamableHttpMcpToolAdapter`` wrap one tool of a server (the SDK's ``Tool`` or its dict);
``await Adapter.from_server_params(params, tool_name)`` finds it; ``mcp_server_tools`` gives the
adapter of the transport; their configs are AutoGen's ``{server_params, tool}`` and load from
AutoGen's dump (a stdio one only with ``allow_commands=True``, nbagent's rule). AutoGen 0.7.5's MCP
module does not import with the ``mcp`` SDK installed here (a later major version), so its dumps are
written out as its ``_to_config`` makes them (``server_params`` with their ``type``, the SDK's ``Tool``
as JSON).
"""

from __future__ import annotations

import json
import logging

import pytest
from autogen_core import EVENT_LOGGER_NAME
from autogen_core.logging import ToolCallEvent

pytest.importorskip("mcp", reason="the MCP tests need the mcp package (pip install -e '.[test]')")

from mcp import Tool  # noqa: E402

from nbagent import (  # noqa: E402
    AssistantAgent,
    CancellationToken,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    SseMcpToolAdapter,
    SseServerParams,
    StdioMcpToolAdapter,
    StreamableHttpMcpToolAdapter,
    StreamableHttpServerParams,
    ToolCallExecutionEvent,
    load_component,
    mcp_server_tools,
)
from nbagent.components import CommandNotAllowedError  # noqa: E402

from .conftest import time_server_params  # noqa: E402

pytestmark = [pytest.mark.timeout(120), pytest.mark.mcp]

ADD = Tool(
    name="add",
    description="Add two integers.",
    inputSchema={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def autogens_dump(kind: str, server_params: dict[str, object]) -> dict[str, object]:
    """What AutoGen's ``<kind>(server_params, ADD).dump_component()`` gives, as JSON."""
    return {
        "provider": f"autogen_ext.tools.mcp.{kind}",
        "component_type": "tool",
        "version": 1,
        "component_version": 1,
        "config": {"server_params": server_params, "tool": json.loads(ADD.model_dump_json(by_alias=True))},
    }


async def test_streamable_http_adapter_of_an_sdk_tool_runs_in_the_agent(http_server_url: str) -> None:
    params = StreamableHttpServerParams(url=http_server_url, timeout=10)
    adapter = StreamableHttpMcpToolAdapter(params, ADD)
    assert (adapter.name, adapter.description) == ("add", "Add two integers.")
    assert adapter.schema["parameters"]["required"] == ["a", "b"]
    assert await adapter.run_json({"a": 2, "b": 3}, CancellationToken()) == "5"
    script = [
        CreateResult(
            finish_reason="function_calls", content=[FunctionCall(id="c1", name="add", arguments='{"a": 4, "b": 5}')]
        ),
    ]
    result = await AssistantAgent("a", ReplayChatCompletionClient(script), tools=[adapter]).run(task="4 + 5?")
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert (execution.content[0].content, execution.content[0].is_error) == ("9", False)
    await adapter.workbench.stop()


async def test_from_server_params_finds_the_tool_or_names_the_others(
    http_server_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    params = StreamableHttpServerParams(url=http_server_url, timeout=10)
    adapter = await StreamableHttpMcpToolAdapter.from_server_params(params, "add")
    assert adapter.schema["parameters"]["properties"].keys() == {"a", "b"}
    caplog.set_level(logging.INFO, logger=EVENT_LOGGER_NAME)
    assert await adapter.run_json({"a": 1, "b": 1}) == "2"
    logged = [record.msg.kwargs for record in caplog.records if isinstance(record.msg, ToolCallEvent)]
    assert logged == [
        {"type": "ToolCall", "tool_name": "add", "arguments": {"a": 1, "b": 1}, "result": "2", "agent_id": None}
    ]
    await adapter.workbench.stop()
    with pytest.raises(ValueError, match="Tool nope not found, available tools: .*add"):
        await StreamableHttpMcpToolAdapter.from_server_params(params, "nope")


async def test_mcp_server_tools_gives_the_transports_adapter(http_server_url: str) -> None:
    tools = await mcp_server_tools(StreamableHttpServerParams(url=http_server_url, timeout=10))
    assert {type(tool) for tool in tools} == {StreamableHttpMcpToolAdapter}
    assert len({id(tool.workbench) for tool in tools}) == 1
    await tools[0].workbench.stop()


def test_the_adapters_take_only_their_transports_params() -> None:
    with pytest.raises(TypeError, match="server_params must be a StdioServerParams"):
        StdioMcpToolAdapter(SseServerParams(url="http://127.0.0.1:9/sse"), ADD)  # type: ignore[arg-type]
    assert SseMcpToolAdapter(SseServerParams(url="http://127.0.0.1:9/sse"), ADD).name == "add"
    with pytest.raises(TypeError, match="session"):
        StdioMcpToolAdapter(time_server_params(), ADD, session=object())


async def test_an_autogen_http_adapter_config_loads_and_runs(http_server_url: str) -> None:
    config = autogens_dump(
        "StreamableHttpMcpToolAdapter", {"type": "StreamableHttpServerParams", "url": http_server_url}
    )
    adapter = load_component(config)
    assert isinstance(adapter, StreamableHttpMcpToolAdapter)
    assert await adapter.run_json({"a": 20, "b": 22}) == "42"
    ours = adapter.dump_component()
    # loaded from AutoGen's config, it dumps under AutoGen's provider (its round trips hold, issue 40.5)
    assert ours.provider == config["provider"]
    assert ours.config["tool"]["name"] == "add" and ours.config["server_params"]["url"] == http_server_url
    assert list(json.loads(ours.model_dump_json())["config"]) == ["server_params", "tool"]  # AutoGen's JSON order
    again = load_component(ours.model_dump_json())
    assert again.schema == adapter.schema
    await adapter.workbench.stop()


async def test_a_stdio_adapter_config_needs_allow_commands_and_calls_the_time_server() -> None:
    params = time_server_params()
    adapter = await StdioMcpToolAdapter.from_server_params(params, "get_current_time")
    try:
        answer = json.loads(await adapter.run_json({"timezone": "UTC"}))
        assert answer["timezone"] == "UTC"
    finally:
        await adapter.workbench.stop()
    config = autogens_dump(
        "StdioMcpToolAdapter", {"type": "StdioServerParams", "command": params.command, "args": params.args}
    )
    with pytest.raises(CommandNotAllowedError, match="allow_commands=True"):
        load_component(config)
    loaded = load_component(config, allow_commands=True)
    assert isinstance(loaded, StdioMcpToolAdapter) and loaded.server_params.command == params.command
