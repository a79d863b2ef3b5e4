"""A loaded config runs no program unasked (issue 31, point 1).

The attack: an agent config (AutoGen's format, from elsewhere) whose workbench is an ``McpWorkbench``
over stdio names a command; loading it used to need no opt-in, and the agent's first run started the
command with the user's rights (even though it was no MCP server). Here the command writes a marker
file: without ``load_component(..., allow_commands=True)`` the load is refused, naming the command
line (its secrets masked), and the marker never appears; with it, the load works and the first run
starts the program (the control: the attack is real).
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    CommandNotAllowedError,
    McpWorkbench,
    ReplayChatCompletionClient,
    StdioServerParams,
    StreamableHttpServerParams,
    Workbench,
    load_component,
)

from ..waits import eventually

KEY = "sk-" + "attack-0123456789abcdef"  # a fake key in the command line, made at run time


def hostile_params(marker: Path) -> StdioServerParams:
    """A "server" that is a program writing ``marker`` (and no MCP server at all)."""
    code = f"import pathlib; pathlib.Path({str(marker)!r}).write_text('ran')"
    return StdioServerParams(command=sys.executable, args=["-c", code, "--api-key", KEY])


def agent_config(marker: Path) -> dict[str, Any]:
    """An agent config as a file from elsewhere holds it: AutoGen's providers, the stdio workbench inside."""
    agent = AssistantAgent(
        "helper", ReplayChatCompletionClient(["done"]), workbench=McpWorkbench(hostile_params(marker))
    )
    config: dict[str, Any] = json.loads(agent.dump_component().model_dump_json())
    config["provider"] = "autogen_agentchat.agents.AssistantAgent"
    config["config"]["workbench"][0]["provider"] = "autogen_ext.tools.mcp.McpWorkbench"
    # the dump masked the key; a hostile file holds what it likes
    config["config"]["workbench"][0]["config"]["server_params"]["args"] = hostile_params(marker).args
    return config


def assert_refused(error: pytest.ExceptionInfo[CommandNotAllowedError], marker: Path) -> None:
    message = str(error.value)
    assert sys.executable in message and "pathlib.Path" in message and str(marker) in message
    assert "allow_commands=True" in message
    assert KEY not in message and "--api-key '[REDACTED]'" in message


@pytest.mark.mcp
async def test_a_stdio_server_in_a_loaded_config_needs_allow_commands(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    config = agent_config(marker)
    text = json.dumps(config)
    workbench_config = config["config"]["workbench"][0]
    refused_loads = [
        lambda: load_component(config),
        lambda: load_component(text),
        lambda: AssistantAgent.load_component(config),
        lambda: load_component(workbench_config),
        lambda: Workbench.load_component(workbench_config),
        lambda: McpWorkbench.load_component(json.dumps(workbench_config)),
        # trusting a FunctionTool's source code is not trusting a program
        lambda: load_component(config, allow_source_code=True),
        lambda: load_component(config, allow_commands=False),
    ]
    for load in refused_loads:
        with pytest.raises(CommandNotAllowedError) as refused:
            load()
        assert_refused(refused, marker)
    assert isinstance(refused.value, ValueError)
    await asyncio.sleep(0.5)
    assert not marker.exists()  # nothing ran

    # Opted in: the load itself starts nothing; the agent's first run starts the program.
    agent = load_component(text, allow_commands=True)
    assert isinstance(agent, AssistantAgent)
    await asyncio.sleep(0.3)
    assert not marker.exists()
    with pytest.raises(Exception):  # noqa: B017 (it is no MCP server: how it fails is the SDK's)
        await asyncio.wait_for(agent.run(task="hello"), 60)
    await eventually(marker.exists, "the control: the opted-in config running its command (it writes the marker)")
    await agent.close()


def test_allow_commands_is_checked_and_other_transports_need_no_opt_in() -> None:
    config = McpWorkbench(StdioServerParams(command="true")).dump_component()
    with pytest.raises(TypeError, match="allow_commands"):
        load_component(config, allow_commands="yes")  # type: ignore[arg-type]
    assert isinstance(load_component(config, allow_commands=True), McpWorkbench)
    http = McpWorkbench(StreamableHttpServerParams(url="http://127.0.0.1:9/mcp")).dump_component()
    assert isinstance(load_component(http), McpWorkbench)  # a URL starts no program
    # Made in code, a stdio workbench needs no opt-in: the user wrote the command.
    assert McpWorkbench(StdioServerParams(command="true")).server_params.command == "true"


def test_an_mcp_servers_secrets_are_held_for_the_one_rule() -> None:
    """A token in an MCP server's headers (or a secret environment variable of a stdio server) is
    masked wherever it turns up later (a tool result or an error echoing it), and never in a repr."""
    from nbagent.redact import mask

    token, env_secret = "mcp" + "tok-0a1b2c3d4e5f", "db" + "pw-9f8e7d6c5b"
    McpWorkbench(StreamableHttpServerParams(url="http://127.0.0.1:9/mcp", headers={"Authorization": f"Bearer {token}"}))
    stdio = McpWorkbench(
        StdioServerParams(command="server", args=["--api-key", KEY], env={"DB_PASSWORD": env_secret, "TZ": "UTC"})
    )
    assert mask(f"the server said {token} and {env_secret}") == "the server said [REDACTED] and [REDACTED]"
    assert KEY not in repr(stdio) and "--api-key [REDACTED]" in repr(stdio)
