"""Component configs, as AutoGen documents them: ``dump_component()`` gives a ``ComponentModel``
(provider, component_type, version, component_version, description, label, config) that
``load_component()`` builds again, through JSON too; a config AutoGen itself exported (dumped live
here by the installed AutoGen 0.7.5) loads into nbagent's classes and runs.

What nbagent does differently on purpose is asserted too (docs/contract.md, "AutoGen compatibility"):
no API key in a dump unless asked, a FunctionTool's source code run only when allowed, no module
imported because a config names it.
"""

from __future__ import annotations

import json
import math
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import nbagent
from nbagent import (
    AssistantAgent,
    BufferedChatCompletionContext,
    CassetteChatCompletionClient,
    ChatCompletionClient,
    ChatCompletionContext,
    ComponentModel,
    CreateResult,
    FunctionCall,
    FunctionTool,
    Handoff,
    HandoffMessage,
    HeadAndTailChatCompletionContext,
    ListMemory,
    McpWorkbench,
    Memory,
    MemoryContent,
    ModelFamily,
    OpenAIChatCompletionClient,
    RecordingChatCompletionClient,
    ReplayChatCompletionClient,
    RequestUsage,
    SourceCodeNotAllowedError,
    StaticWorkbench,
    StdioServerParams,
    StreamableHttpServerParams,
    StructuredMessage,
    TextMessage,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
    UserMessage,
    load_component,
)

from .conftest import time_server_params

SECRET = "sk-" + "test-abcdefghijklmnop0123456789"  # fake keys, made at run time
QUERY_KEY = "sk-" + "proj-abcdefABCDEF1234567890"


# --------------------------------------------------------------------------- tools of these tests (module level:
# a FunctionTool's config holds its function's source, read from this file)


def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


def circle_area(radius: float) -> float:
    """The area of a circle."""
    return math.pi * radius**2


class Verdict(BaseModel):
    answer: str
    confidence: float


def calls(*names: str) -> CreateResult:
    """A model answer calling the named tools (no arguments but for add)."""
    return CreateResult(
        finish_reason="function_calls",
        content=[
            FunctionCall(id=f"call_{i}", name=name, arguments='{"a": 1}' if name == "add" else "{}")
            for i, name in enumerate(names)
        ],
        usage=RequestUsage(prompt_tokens=5, completion_tokens=3),
        cached=False,
    )


def json_round_trip(component: Any, **load: Any) -> Any:
    """``component`` dumped, written as JSON, read back and loaded: what a config file goes through."""
    text = component.dump_component().model_dump_json()
    return load_component(json.loads(text), **load)


def same_config(a: Any, b: Any) -> None:
    assert a.dump_component().model_dump() == b.dump_component().model_dump()


# --------------------------------------------------------------------------- the ComponentModel


def test_component_model_has_autogens_fields() -> None:
    dumped = BufferedChatCompletionContext(buffer_size=4).dump_component()
    assert isinstance(dumped, ComponentModel)
    assert set(ComponentModel.model_fields) == {
        "provider",
        "component_type",
        "version",
        "component_version",
        "description",
        "label",
        "config",
    }
    assert dumped.provider == "nbagent.BufferedChatCompletionContext"
    assert dumped.component_type == "chat_completion_context"
    assert dumped.version == dumped.component_version == 1
    assert dumped.label == "BufferedChatCompletionContext"
    assert dumped.description == "The model sees the last ``buffer_size`` messages."
    assert dumped.config == {"buffer_size": 4}
    assert nbagent.ComponentModel is ComponentModel


def test_component_types_are_autogens() -> None:
    client = ReplayChatCompletionClient(["x"])
    kinds = {
        "agent": AssistantAgent("a", client),
        "model": OpenAIChatCompletionClient("gpt-4o", api_key=SECRET),
        "replay_chat_completion_client": client,
        "chat_completion_context": UnboundedChatCompletionContext(),
        "tool": FunctionTool(add),
        "workbench": StaticWorkbench([add]),
        "memory": ListMemory(),
    }
    for kind, component in kinds.items():
        assert component.dump_component().component_type == kind
    assert AssistantAgent("a", client).dump_component().component_version == 2  # AutoGen's agent version


# --------------------------------------------------------------------------- round trips, class by class


@pytest.mark.parametrize(
    "context",
    [
        UnboundedChatCompletionContext(),
        UnboundedChatCompletionContext(initial_messages=[UserMessage(content="hello", source="user")]),
        BufferedChatCompletionContext(buffer_size=5),
        HeadAndTailChatCompletionContext(head_size=1, tail_size=3),
        TokenLimitedChatCompletionContext(ReplayChatCompletionClient(["x"]), token_limit=100),
        TokenLimitedChatCompletionContext(token_limit=50, tool_schema=[FunctionTool(add).schema]),
    ],
    ids=["unbounded", "unbounded-initial", "buffered", "head-and-tail", "token-limited", "token-limited-tools"],
)
async def test_context_round_trip(context: ChatCompletionContext) -> None:
    loaded = json_round_trip(context)
    assert type(loaded) is type(context)
    same_config(loaded, context)
    assert await loaded.get_messages() == await context.get_messages()
    assert ChatCompletionContext.load_component(context.dump_component()).dump_component() == context.dump_component()


def test_replay_client_round_trip() -> None:
    client = ReplayChatCompletionClient(
        ["hello", calls("add")], model_info={"vision": True, "family": ModelFamily.GPT_4O}, latency=0.01
    )
    loaded = json_round_trip(client)
    assert isinstance(loaded, ReplayChatCompletionClient)
    assert loaded.chat_completions == client.chat_completions
    assert loaded.model_info == client.model_info and loaded.model_info["family"] == "gpt-4o"
    assert loaded.latency == 0.01
    assert ChatCompletionClient.load_component(client.dump_component()).chat_completions == client.chat_completions


def test_openai_client_round_trip_without_its_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = OpenAIChatCompletionClient(
        "llama3.2",
        base_url="http://127.0.0.1:11434/v1",
        api_key=SECRET,
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": ModelFamily.UNKNOWN,
            "structured_output": False,
            "multiple_system_messages": False,
        },
        temperature=0.2,
        seed=7,
        default_headers={"Authorization": f"Bearer {SECRET}", "X-Team": "docs"},
    )
    dumped = client.dump_component()
    text = dumped.model_dump_json()
    assert SECRET not in text and SECRET not in repr(dumped.model_dump())
    assert "api_key" not in dumped.config
    assert dumped.config["default_headers"] == {"X-Team": "docs"}  # the secret header left out
    assert dumped.config["temperature"] == 0.2 and dumped.config["seed"] == 7
    loaded = load_component(json.loads(text))
    assert isinstance(loaded, OpenAIChatCompletionClient)
    assert loaded.model_name == "llama3.2" and loaded.base_url.startswith("http://127.0.0.1:11434/v1")
    assert loaded.model_info["multiple_system_messages"] is False
    assert loaded.create_args == {"temperature": 0.2, "seed": 7}
    assert loaded.secrets == ()  # no key: a local server that needs none


def test_openai_key_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = OpenAIChatCompletionClient("gpt-4o", api_key=SECRET)
    with_key = client.dump_component(include_secrets=True)
    assert with_key.config["api_key"] == SECRET  # written out, also in JSON
    assert json.loads(with_key.model_dump_json())["config"]["api_key"] == SECRET
    loaded = load_component(with_key.model_dump_json())
    assert SECRET in loaded.secrets
    # The agent passes include_secrets to the components it holds.
    agent = AssistantAgent("a", client)
    assert SECRET not in agent.dump_component().model_dump_json()
    assert SECRET in agent.dump_component(include_secrets=True).model_dump_json()


def test_openai_key_from_the_environment_is_never_dumped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    client = OpenAIChatCompletionClient("gpt-4o")
    assert SECRET not in client.dump_component(include_secrets=True).model_dump_json()
    keyless = OpenAIChatCompletionClient("m", base_url="http://127.0.0.1:1/v1", api_key="")
    assert keyless.dump_component().config["api_key"] == ""  # "send no key" is kept: it is no secret
    assert load_component(keyless.dump_component()).dump_component().config["api_key"] == ""


def test_cassette_client_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "calls.json"
    recording = RecordingChatCompletionClient(ReplayChatCompletionClient(["hi"]), path)
    with pytest.raises(TypeError, match="start a new recording"):
        recording.dump_component()  # loading one would record over the cassette
    cassette = CassetteChatCompletionClient(path, pace=True)
    loaded = json_round_trip(cassette)
    assert isinstance(loaded, CassetteChatCompletionClient)
    assert (loaded.path, loaded.pace, loaded.check_requests) == (path, True, True)


def test_function_tool_round_trip_needs_permission_to_run_source() -> None:
    tool = FunctionTool(add, description="Add two numbers.")
    dumped = tool.dump_component()
    assert dumped.config["source_code"].startswith("def add(a: int, b: int = 2) -> int:")
    assert dumped.config["has_cancellation_support"] is False
    with pytest.raises(SourceCodeNotAllowedError, match="allow_source_code=True") as refused:
        load_component(dumped)
    assert "functions=[add]" in str(refused.value)
    given = load_component(dumped, functions=[add])  # nothing from the config runs
    assert isinstance(given, FunctionTool) and given.schema == tool.schema
    ran = load_component(dumped.model_dump_json(), allow_source_code=True)
    assert ran.schema == tool.schema
    assert FunctionTool.load_component(dumped, functions={"add": add}).name == "add"


async def test_function_tool_source_runs_with_its_global_imports() -> None:
    tool = FunctionTool(circle_area, global_imports=["math"])
    loaded = json_round_trip(tool, allow_source_code=True)
    assert await loaded.run_json({"radius": 1.0}) == pytest.approx(math.pi)
    aliased = FunctionTool(circle_area, global_imports=[{"module": "math", "imports": ["pi"]}, "math"])
    assert aliased.dump_component().config["global_imports"] == [{"module": "math", "imports": ["pi"]}, "math"]


def test_function_tool_without_source_cannot_be_dumped() -> None:
    with pytest.raises(TypeError, match="lambda"):
        FunctionTool(lambda x: x, name="identity").dump_component()


async def test_static_workbench_round_trip_with_overrides() -> None:
    workbench = StaticWorkbench([add, circle_area], tool_overrides={"add": {"name": "plus", "description": "Sum."}})
    assert [schema["name"] for schema in await workbench.list_tools()] == ["plus", "circle_area"]
    loaded = json_round_trip(workbench, functions=[add, circle_area])
    assert isinstance(loaded, StaticWorkbench)
    assert await loaded.list_tools() == await workbench.list_tools()
    result = await loaded.call_tool("plus", {"a": 2, "b": 3})
    assert (result.content, result.is_error) == ("5", False)


def test_list_memory_round_trip() -> None:
    memory = ListMemory(
        name="prefs",
        memory_contents=[MemoryContent(content="likes tea", mime_type="text/plain", metadata={"k": 1})],
    )
    loaded = json_round_trip(memory)
    assert isinstance(loaded, ListMemory) and loaded.name == "prefs"
    assert loaded.content == memory.content
    assert Memory.load_component(memory.dump_component()).content == memory.content


def test_handoff_round_trip() -> None:
    handoff = Handoff(target="billing", description="Money questions.", message="Over to billing.")
    loaded = json_round_trip(handoff)
    assert loaded == handoff and loaded.name == "transfer_to_billing"
    assert Handoff.load_component(handoff.dump_component()).schema == handoff.schema


def test_mcp_workbench_round_trip_without_secrets() -> None:
    stdio = McpWorkbench(
        StdioServerParams(command="uvx", args=["mcp-server-time"], env={"TZ": "UTC", "GITHUB_TOKEN": "ghp_x"}),
        tool_overrides={"get_current_time": {"name": "now"}},
    )
    config = stdio.dump_component().config
    assert config["server_params"]["env"] == {"TZ": "UTC"}
    loaded = json_round_trip(stdio, allow_commands=True)
    assert isinstance(loaded, McpWorkbench)
    assert loaded.server_params.command == "uvx" and loaded.tool_overrides["get_current_time"].name == "now"
    http = McpWorkbench(
        StreamableHttpServerParams(url="http://127.0.0.1:9/mcp", headers={"Authorization": f"Bearer {SECRET}"})
    )
    assert SECRET not in http.dump_component().model_dump_json()
    assert http.dump_component(include_secrets=True).config["server_params"]["headers"]["Authorization"]
    assert json_round_trip(http).server_params.url == "http://127.0.0.1:9/mcp"


def test_no_key_reaches_a_dumped_config_by_any_way_in() -> None:
    # Headers of real gateways (Portkey, Google, Azure API Management), a proxy URL with userinfo.
    headers = {
        "X-Portkey-Api-Key": "pk-portkey-0123456789",
        "X-Goog-Api-Key": "goog-0123456789abcdef",
        "Ocp-Apim-Subscription-Key": "apim-0123456789abcdef",
        "Authorization": "Bearer " + "abc123XYZ",
        "X-Team": "docs",
    }
    client = OpenAIChatCompletionClient(
        "gpt-4o-mini", api_key="sk-a", default_headers=headers, base_url="https://proxy.example.com/v1?v=1"
    )
    # A URL's user:password@ is the client's Basic auth (with no key: api_key="")
    proxied = OpenAIChatCompletionClient(
        "gpt-4o-mini", api_key="", base_url="https://user:pw-0123@proxy.example.com/v1"
    )
    text = client.dump_component().model_dump_json() + proxied.dump_component().model_dump_json()
    config = json.loads(client.dump_component().model_dump_json())["config"]
    assert config["default_headers"] == {"X-Team": "docs"}
    assert proxied.dump_component().config["base_url"] == "https://proxy.example.com/v1"
    for secret in ("pk-portkey", "goog-0123", "apim-0123", "abc123XYZ", "pw-0123", "user:"):
        assert secret not in text
    assert "pk-portkey" in client.dump_component(include_secrets=True).model_dump_json()  # when asked

    # An MCP server's command line, environment and URL.
    stdio = McpWorkbench(
        StdioServerParams(
            command="npx",
            args=["-y", "@modelcontextprotocol/server-github", "--api-key", "opaque0123456789", "--token=tok-0123456"],
            env={
                "DATABASE_URL": "postgres://admin:hunter2@db/prod",
                "GH_PAT": "ghp_ABCDEFabcdef1234567890abcd",
                "UPSTREAM": "ghp_ABCDEFabcdef1234567890wxyz",
                "OPENAI_API_KEY": "sk-x",
                "TZ": "UTC",
            },
        )
    )
    text = stdio.dump_component().model_dump_json()
    params = json.loads(text)["config"]["server_params"]
    assert params["args"] == [
        "-y",
        "@modelcontextprotocol/server-github",
        "--api-key",
        "[REDACTED]",
        "--token=[REDACTED]",
    ]
    assert params["env"] == {"DATABASE_URL": "postgres://db/prod", "UPSTREAM": "[REDACTED]", "TZ": "UTC"}
    for secret in ("opaque0123", "tok-0123", "hunter2", "ghp_", "sk-x"):
        assert secret not in text
    http = McpWorkbench(StreamableHttpServerParams(url=f"https://mcp.example.com/mcp?api_key={QUERY_KEY}&v=2"))
    url = json.loads(http.dump_component().model_dump_json())["config"]["server_params"]["url"]
    assert url == "https://mcp.example.com/mcp?api_key=[REDACTED]&v=2"
    kept = http.dump_component(include_secrets=True).config["server_params"]["url"]
    assert QUERY_KEY in kept


def test_one_secret_name_rule() -> None:
    from nbagent.redact import is_secret_name

    secret = ["X-Portkey-Api-Key", "X-Goog-Api-Key", "Ocp-Apim-Subscription-Key", "Authorization", "api-key"]
    secret += ["GITHUB_TOKEN", "GH_PAT", "DB_PASSWORD", "apiKey", "client_secret", "Cookie", "token"]
    plain = ["X-Team", "Content-Type", "DATABASE_URL", "max_tokens", "prompt_tokens", "token_limit", "key", "TZ"]
    assert [name for name in secret if not is_secret_name(name)] == []
    assert [name for name in plain if is_secret_name(name)] == []
    import nbagent.mcp

    assert not hasattr(nbagent.mcp, "_secret_name")  # the MCP workbench uses the same rule


async def test_agent_round_trip() -> None:
    client = ReplayChatCompletionClient([calls("add"), "3 it is"])
    agent = AssistantAgent(
        "helper",
        client,
        tools=[add],
        handoffs=[Handoff(target="billing"), "support"],
        model_context=BufferedChatCompletionContext(buffer_size=8),
        memory=[ListMemory(name="m", memory_contents=[MemoryContent(content="be brief", mime_type="text/plain")])],
        description="Adds numbers.",
        system_message="You add.",
        model_client_stream=True,
        reflect_on_tool_use=True,
        max_tool_iterations=2,
        tool_call_summary_format="{tool_name}: {result}",
        metadata={"team": "docs"},
    )
    dumped = agent.dump_component()
    assert dumped.provider == "nbagent.AssistantAgent"
    assert "tools" not in dumped.config  # tools go in the workbench, as AutoGen dumps them
    assert dumped.config["workbench"][0]["provider"] == "nbagent.StaticWorkbench"
    loaded = json_round_trip(agent, functions=[add])
    assert isinstance(loaded, AssistantAgent)
    same_config(loaded, agent)
    assert loaded.tools == agent.tools and list(loaded.handoffs) == ["transfer_to_billing", "transfer_to_support"]
    assert (loaded.max_tool_iterations, loaded.reflect_on_tool_use, loaded.metadata) == (2, True, {"team": "docs"})
    result = await loaded.run(task="1 + 2?")
    assert isinstance(result.messages[-1], TextMessage) and result.messages[-1].content == "3 it is"


async def test_structured_agent_round_trip() -> None:
    agent = AssistantAgent(
        "judge",
        ReplayChatCompletionClient(['{"answer": "yes", "confidence": 0.9}']),
        output_content_type=Verdict,
        output_content_type_format="{answer} ({confidence})",
    )
    loaded = json_round_trip(agent)
    message = (await loaded.run(task="ok?")).messages[-1]
    assert isinstance(message, StructuredMessage)
    assert message.content.model_dump() == {"answer": "yes", "confidence": 0.9}
    assert message.to_model_text() == "yes (0.9)"
    assert type(message.content).__name__ == "Verdict"  # rebuilt from the JSON schema, as AutoGen does


def test_agent_without_system_message_round_trip() -> None:
    agent = AssistantAgent("quiet", ReplayChatCompletionClient(["x"]), system_message=None)
    assert "system_message" not in agent.dump_component().config
    assert json_round_trip(agent).dump_component().model_dump() == agent.dump_component().model_dump()


# --------------------------------------------------------------------------- loading: kinds, providers, errors


def test_load_component_checks_the_kind() -> None:
    context = BufferedChatCompletionContext(buffer_size=2).dump_component()
    with pytest.raises(TypeError, match="not a ChatCompletionClient"):
        ChatCompletionClient.load_component(context)
    with pytest.raises(TypeError, match="not a Memory"):
        load_component(context, Memory)
    assert isinstance(load_component(context, ChatCompletionContext), BufferedChatCompletionContext)


def test_unknown_providers_are_named() -> None:
    with pytest.raises(ValueError, match="nbagent has no counterpart of .autogen_ext.models.anthropic") as error:
        load_component({"provider": "autogen_ext.models.anthropic.AnthropicChatCompletionClient", "config": {}})
    assert "autogen_ext.models.openai.OpenAIChatCompletionClient" in str(error.value)
    with pytest.raises(ValueError, match="not imported"):
        load_component({"provider": "some_package_nobody_imported.Thing", "config": {}})
    assert "some_package_nobody_imported" not in sys.modules  # a config never makes nbagent import a module
    with pytest.raises(TypeError, match="not a component class"):
        load_component({"provider": "json.JSONDecoder", "config": {}})


def test_invalid_config_raises_pydantics_error_naming_the_provider() -> None:
    with pytest.raises(ValidationError) as error:
        load_component({"provider": "nbagent.BufferedChatCompletionContext", "config": {}})
    assert "nbagent.BufferedChatCompletionContext" in "".join(getattr(error.value, "__notes__", []))


def test_well_known_provider_names() -> None:
    """AutoGen's short provider names for its OpenAI client load too."""
    for provider in ("OpenAIChatCompletionClient", "openai_chat_completion_client"):
        client = load_component({"provider": provider, "config": {"model": "gpt-4o", "api_key": SECRET}})
        assert isinstance(client, OpenAIChatCompletionClient)


# --------------------------------------------------------------------------- configs exported by AutoGen itself


autogen_agents = pytest.importorskip("autogen_agentchat.agents")


def _autogen_agent_config(**overrides: Any) -> str:
    """An AutoGen AssistantAgent with AutoGen's own replay client, FunctionTool, buffered context,
    ListMemory and handoffs, exported as AutoGen exports it: ``dump_component().model_dump_json()``."""
    from autogen_agentchat.base import Handoff as AutoGenHandoff
    from autogen_core import FunctionCall as AutoGenFunctionCall
    from autogen_core.memory import ListMemory as AutoGenListMemory
    from autogen_core.memory import MemoryContent as AutoGenMemoryContent
    from autogen_core.model_context import BufferedChatCompletionContext as AutoGenBuffered
    from autogen_core.models import CreateResult as AutoGenCreateResult
    from autogen_core.models import ModelFamily as AutoGenModelFamily
    from autogen_core.models import RequestUsage as AutoGenUsage
    from autogen_core.tools import FunctionTool as AutoGenFunctionTool
    from autogen_ext.models.replay import ReplayChatCompletionClient as AutoGenReplay

    script: list[Any] = [
        AutoGenCreateResult(
            finish_reason="function_calls",
            content=[AutoGenFunctionCall(id="call_1", name="add", arguments='{"a": 40, "b": 2}')],
            usage=AutoGenUsage(prompt_tokens=10, completion_tokens=5),
            cached=False,
        ),
        "The answer is 42.",
    ]
    model_client = AutoGenReplay(
        script,
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": False,
            "family": AutoGenModelFamily.UNKNOWN,
            "structured_output": False,
        },
    )
    arguments: dict[str, Any] = {
        "tools": [AutoGenFunctionTool(add, description="Add two numbers.")],
        "handoffs": [AutoGenHandoff(target="billing"), "support"],
        "model_context": AutoGenBuffered(buffer_size=10),
        "memory": [
            AutoGenListMemory(
                name="prefs", memory_contents=[AutoGenMemoryContent(content="Be brief.", mime_type="text/plain")]
            )
        ],
        "system_message": "You are a calculator.",
        "reflect_on_tool_use": True,
        "max_tool_iterations": 2,
        "metadata": {"owner": "docs"},
        **overrides,
    }
    agent = autogen_agents.AssistantAgent("calculator", model_client, **arguments)
    return str(agent.dump_component().model_dump_json())


async def test_autogen_exported_agent_config_loads_and_runs() -> None:
    exported = _autogen_agent_config()
    data = json.loads(exported)
    assert data["provider"] == "autogen_agentchat.agents.AssistantAgent"
    assert data["config"]["model_client"]["provider"] == "autogen_ext.models.replay.ReplayChatCompletionClient"
    assert data["config"]["workbench"][0]["provider"] == "autogen_core.tools.StaticStreamWorkbench"
    with pytest.raises(SourceCodeNotAllowedError):
        AssistantAgent.load_component(exported)  # the config holds add's source code
    agent = AssistantAgent.load_component(exported, allow_source_code=True)
    assert isinstance(agent, AssistantAgent) and agent.name == "calculator"
    assert isinstance(agent.model_client, ReplayChatCompletionClient)
    assert agent.model_client.model_info["family"] == ModelFamily.UNKNOWN
    assert isinstance(agent.model_context, BufferedChatCompletionContext) and agent.model_context.buffer_size == 10
    assert isinstance(agent.memory[0], ListMemory) and agent.memory[0].content[0].content == "Be brief."
    assert [tool["name"] for tool in agent.tools] == ["add", "transfer_to_billing", "transfer_to_support"]
    assert agent.handoffs["transfer_to_billing"].target == "billing"
    assert (agent.max_tool_iterations, agent.reflect_on_tool_use, agent.metadata) == (2, True, {"owner": "docs"})
    result = await agent.run(task="What is 40 + 2?")
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "MemoryQueryEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "TextMessage",
    ]
    assert result.messages[3].content[0].content == "42"
    assert result.messages[-1].content == "The answer is 42."
    sent = agent.model_client.create_calls[0]["messages"]
    assert sent[0].content == "You are a calculator."


async def test_autogen_exported_agent_loads_with_given_functions() -> None:
    agent = load_component(_autogen_agent_config(), functions=[add])
    result = await agent.run(task="40 + 2?")
    assert result.messages[-1].content == "The answer is 42."


async def test_autogen_exported_agent_without_tools_loads_for_a_model_without_function_calling() -> None:
    """AutoGen dumps an agent without tools with an empty workbench: it loads for such a model."""
    from autogen_ext.models.replay import ReplayChatCompletionClient as AutoGenReplay

    client = AutoGenReplay(
        ["plain"],
        model_info={
            "vision": False,
            "function_calling": False,
            "json_output": False,
            "family": "r1",
            "structured_output": False,
        },
    )
    exported = autogen_agents.AssistantAgent("plain", client).dump_component().model_dump_json()
    agent = load_component(exported)
    assert agent.tools == [] and (await agent.run(task="hi")).messages[-1].content == "plain"


async def test_autogen_exported_structured_agent_loads() -> None:
    from autogen_ext.models.replay import ReplayChatCompletionClient as AutoGenReplay

    client = AutoGenReplay(['{"answer": "no", "confidence": 0.25}'])
    exported = (
        autogen_agents.AssistantAgent(
            "judge", client, output_content_type=Verdict, output_content_type_format="{answer}!"
        )
        .dump_component()
        .model_dump_json()
    )
    agent = load_component(exported)
    message = (await agent.run(task="?")).messages[-1]
    assert isinstance(message, StructuredMessage) and message.to_model_text() == "no!"
    assert message.content.confidence == 0.25


async def test_autogen_exported_handoff_agent_hands_off() -> None:
    from autogen_core.models import ModelFamily as AutoGenModelFamily
    from autogen_ext.models.replay import ReplayChatCompletionClient as AutoGenReplay

    model_info = {
        "vision": False,
        "function_calling": True,  # AutoGen's replay model has none by default
        "json_output": False,
        "family": AutoGenModelFamily.UNKNOWN,
        "structured_output": False,
    }
    from autogen_core import FunctionCall as AutoGenFunctionCall
    from autogen_core.models import CreateResult as AutoGenCreateResult
    from autogen_core.models import RequestUsage as AutoGenUsage

    handoff_call = AutoGenCreateResult(
        finish_reason="function_calls",
        content=[AutoGenFunctionCall(id="call_1", name="transfer_to_billing", arguments="{}")],
        usage=AutoGenUsage(prompt_tokens=3, completion_tokens=2),
        cached=False,
    )
    client = AutoGenReplay([handoff_call], model_info=model_info)
    exported = autogen_agents.AssistantAgent("triage", client, handoffs=["billing"]).dump_component()
    agent = load_component(exported.model_dump())  # the dict form, not JSON
    message = (await agent.run(task="refund?")).messages[-1]
    assert isinstance(message, HandoffMessage) and message.target == "billing"


def test_autogen_exported_contexts_and_memory_load() -> None:
    from autogen_core.memory import ListMemory as AutoGenListMemory
    from autogen_core.model_context import HeadAndTailChatCompletionContext as AutoGenHeadAndTail
    from autogen_core.model_context import TokenLimitedChatCompletionContext as AutoGenTokenLimited
    from autogen_core.model_context import UnboundedChatCompletionContext as AutoGenUnbounded
    from autogen_core.models import UserMessage as AutoGenUserMessage
    from autogen_ext.models.replay import ReplayChatCompletionClient as AutoGenReplay

    unbounded = load_component(
        AutoGenUnbounded(initial_messages=[AutoGenUserMessage(content="hi", source="user")])
        .dump_component()
        .model_dump_json()
    )
    assert isinstance(unbounded, UnboundedChatCompletionContext)
    assert unbounded.messages == [UserMessage(content="hi", source="user")]
    head_tail = load_component(AutoGenHeadAndTail(head_size=2, tail_size=3).dump_component().model_dump_json())
    assert isinstance(head_tail, HeadAndTailChatCompletionContext) and (head_tail.head_size, head_tail.tail_size) == (
        2,
        3,
    )
    limited = load_component(
        AutoGenTokenLimited(model_client=AutoGenReplay(["x"]), token_limit=200).dump_component().model_dump_json()
    )
    assert isinstance(limited, TokenLimitedChatCompletionContext) and limited.token_limit == 200
    assert isinstance(limited.model_client, ReplayChatCompletionClient)
    memory = load_component(AutoGenListMemory(name="empty").dump_component().model_dump_json())
    assert isinstance(memory, ListMemory) and memory.name == "empty" and memory.content == []


def test_autogen_exported_function_tool_and_workbench_load() -> None:
    from autogen_core.tools import FunctionTool as AutoGenFunctionTool
    from autogen_core.tools import StaticWorkbench as AutoGenStaticWorkbench
    from autogen_core.tools import ToolOverride as AutoGenToolOverride

    tool_json = AutoGenFunctionTool(circle_area, description="Area.", global_imports=["math"]).dump_component()
    tool = load_component(tool_json.model_dump_json(), allow_source_code=True)
    assert isinstance(tool, FunctionTool) and tool.description == "Area."
    workbench = AutoGenStaticWorkbench(
        [AutoGenFunctionTool(add, description="Add.")], tool_overrides={"add": AutoGenToolOverride(name="plus")}
    )
    loaded = load_component(workbench.dump_component().model_dump_json(), functions=[add])
    assert isinstance(loaded, StaticWorkbench) and [s["name"] for s in loaded.schemas] == ["plus"]


@pytest.mark.filterwarnings("ignore::nbagent.models.openai.KeyFromEnvironmentWarning")
def test_autogen_exported_openai_client_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    """AutoGen writes the key it was given as '**********' in JSON: the loaded client reads the environment,
    only when the environment's key is for the config's host (OPENAI_BASE_URL's; issue 31, point 3)."""
    from autogen_ext.models.openai import OpenAIChatCompletionClient as AutoGenOpenAI

    exported = AutoGenOpenAI(
        model="qwen2.5",
        api_key=SECRET,
        base_url="http://127.0.0.1:8000/v1",
        temperature=0.1,
        max_retries=5,
        model_info={
            "vision": False,
            "function_calling": True,
            "json_output": True,
            "family": ModelFamily.UNKNOWN,
            "structured_output": True,
        },
    ).dump_component()
    text = exported.model_dump_json()
    assert SECRET not in text and json.loads(text)["config"]["api_key"] == "**********"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment-0123456789")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ValueError, match=r"masked api_key .* that key is for api\.openai\.com"):
        load_component(text)  # OpenAI's key is not sent to 127.0.0.1
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1")  # the key is that server's
    with pytest.warns(UserWarning, match="masked"):
        client = load_component(text)
    assert isinstance(client, OpenAIChatCompletionClient)
    assert client.model_name == "qwen2.5" and client.create_args == {"temperature": 0.1}
    assert client.secrets == ("sk-from-the-environment-0123456789",)
    assert client.model_info["structured_output"] is True
    # Not from JSON: AutoGen's python-mode dump keeps the SecretStr, whose value is used.
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        direct = load_component(exported)
    assert SECRET in direct.secrets


@pytest.mark.mcp
async def test_autogen_style_mcp_workbench_config_loads_and_connects() -> None:
    """AutoGen's McpWorkbench cannot be imported with the mcp SDK 2 this project uses, so its config is
    written by hand to AutoGen's McpWorkbenchConfig (server_params with its type, tool_overrides)."""
    params = time_server_params()
    config = {
        "provider": "autogen_ext.tools.mcp.McpWorkbench",
        "component_type": "workbench",
        "version": 1,
        "component_version": 1,
        "config": {
            "server_params": params.model_dump(mode="json"),
            "tool_overrides": {"get_current_time": {"name": "now", "description": "The time now."}},
        },
    }
    async with load_component(config, allow_commands=True) as workbench:
        assert isinstance(workbench, McpWorkbench)
        names = [tool["name"] for tool in await workbench.list_tools()]
        assert "now" in names and "convert_time" in names
        result = await workbench.call_tool("now", {"timezone": "UTC"})
        assert not result.is_error and "UTC" in result.to_text()
