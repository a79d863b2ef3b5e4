"""Issue 40.2: nbagent's objects inside AutoGen's own code, as AutoGen's types where AutoGen checks them.

Everything here is real AutoGen 0.7.5 (its ``AssistantAgent``, teams, ``AgentTool``/``TeamTool``,
``SocietyOfMindAgent``, ``Console`` and component loader) with nbagent's agent or model client in it.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat import messages as ag
from autogen_agentchat.agents import AssistantAgent as AgAssistantAgent
from autogen_agentchat.agents import SocietyOfMindAgent
from autogen_agentchat.base import ChatAgent, Team
from autogen_agentchat.base import TaskResult as AgTaskResult
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat, Swarm
from autogen_agentchat.tools import AgentTool, TeamTool
from autogen_agentchat.ui import Console as AgConsole
from autogen_core import CancellationToken as AgCancellationToken
from autogen_core import ComponentModel as AgComponentModel
from autogen_core import FunctionCall as AgFunctionCall
from autogen_core import _component_config as ag_config
from autogen_core.models import CreateResult as AgCreateResult
from autogen_core.models import RequestUsage as AgRequestUsage
from autogen_core.models import UserMessage as AgUserMessage
from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplay

import nbagent
import nbagent.autogen as na
from nbagent import (
    AssistantAgent,
    ComponentModel,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    StaticWorkbench,
    Trace,
    load_component,
)

from ..models.chat_server import ChatServer, Reply

INFO: Any = {
    "function_calling": True,
    "vision": False,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


def tool_call(name: str, task: str) -> AgCreateResult:
    return AgCreateResult(
        finish_reason="function_calls",
        content=[AgFunctionCall(id="c1", name=name, arguments=json.dumps({"task": task}))],
        usage=AgRequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
async def test_nbagents_client_inside_autogens_assistant_agent(stream: bool) -> None:
    client = ReplayChatCompletionClient(["Hello from nbagent's client.", "And again."])
    agent = AgAssistantAgent("ag", model_client=client, model_client_stream=stream)
    result = await agent.run(task="hi")
    assert isinstance(result, AgTaskResult)
    assert result.messages[-1].content == "Hello from nbagent's client."
    # nbagent's client was sent nbagent's messages (converted from AutoGen's), and answered AutoGen's type
    assert [m.content for m in client.requests[0].messages][-1] == "hi"
    answer = await client.create([AgUserMessage(content="again?", source="user")])
    assert type(answer) is AgCreateResult


async def weather_over_http(client_class: Any, model: str, stream: bool, **options: Any) -> tuple[Any, ChatServer]:
    """AutoGen's ``AssistantAgent`` with a ``get_weather`` tool, reflecting on its result, on a
    ``client_class`` OpenAI client of a scripted server on 127.0.0.1: its result and the server."""
    with ChatServer() as server:
        server.script(Reply.call(("get_weather", {"city": "Paris"})), Reply.text("Sunny in Paris."))
        client = client_class(model=model, base_url=server.base_url, api_key="sk-test", max_retries=0)

        def get_weather(city: str) -> str:
            """The weather in a city."""
            return f"Sunny in {city}."

        agent = AgAssistantAgent(
            "ag",
            model_client=client,
            tools=[get_weather],
            reflect_on_tool_use=True,
            model_client_stream=stream,
            **options,
        )
        result = await agent.run(task="Weather in Paris?")
        await client.close()
    return result, server


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
async def test_nbagents_openai_client_inside_autogens_assistant_agent_over_http(stream: bool) -> None:
    """AutoGen's agent gives the client its own CancellationToken: nbagent's OpenAI client guards its
    HTTP call with it (was "unusable response: AttributeError: 'CancellationToken' object has no
    attribute 'guard'" on every call)."""
    result, server = await weather_over_http(OpenAIChatCompletionClient, "gpt-4o", stream)
    assert isinstance(result, AgTaskResult)
    assert [type(m).__name__ for m in result.messages] == (
        ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent"]
        + ["ModelClientStreamingChunkEvent"] * stream * (len(result.messages) - 4)
        + ["TextMessage"]
    )
    assert result.messages[-1].content == "Sunny in Paris."
    assert [[m["role"] for m in request.body["messages"]] for request in server.requests] == [
        ["system", "user"],
        ["system", "user", "assistant", "tool"],
    ]


async def test_autogens_agent_with_nbagents_client_run_by_nbagent_records_its_model_calls() -> None:
    """``nbagent.autogen.run`` records AutoGen's agent's model calls through its client: nbagent's client
    is an AutoGen ``ChatCompletionClient`` too (before: a warning, and no LLM call in the trace)."""
    agent = AgAssistantAgent("ag", model_client=ReplayChatCompletionClient(["Recorded."]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        result = await na.run(agent, "hello")
    assert result.messages[-1].content == "Recorded."
    calls = na.trace_of(agent).llm_calls_df()
    assert list(calls["purpose"]) == ["initial"] and list(calls["model"]) == ["ReplayChatCompletionClient"]


async def test_nbagents_memory_inside_autogens_assistant_agent() -> None:
    """AutoGen's agent gives nbagent's memory its own model context and reads AutoGen's result (before:
    AttributeError, AutoGen's context has no ``messages``)."""
    store = nbagent.ListMemory()
    await store.add(nbagent.MemoryContent(content="The user likes tea.", mime_type="text/plain"))
    client = AgReplay(["Tea it is.", "Tea again."])
    agent = AgAssistantAgent("ag", model_client=client, memory=[store])
    first = await agent.run(task="What do I like?")
    assert [type(m).__name__ for m in first.messages] == ["TextMessage", "MemoryQueryEvent", "TextMessage"]
    assert isinstance(first.messages[1], ag.MemoryQueryEvent)
    assert first.messages[1].content[0].content == "The user likes tea."
    await agent.run(task="And now?")
    state = await agent.save_state()  # AutoGen's context holds AutoGen's messages only
    held = [message["type"] for message in state["llm_context"]["messages"]]
    assert held == ["UserMessage", "SystemMessage", "AssistantMessage", "UserMessage", "AssistantMessage"]
    assert "1. The user likes tea." in state["llm_context"]["messages"][1]["content"]  # added once (nbagent fix)


async def test_autogens_token_cancels_nbagents_model_call() -> None:
    client = ReplayChatCompletionClient(["late"], latency=30)
    token = AgCancellationToken()
    call = asyncio.ensure_future(client.create([AgUserMessage(content="hi", source="user")], cancellation_token=token))
    await asyncio.sleep(0.05)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(call, 10)  # a hang guard: the 30 s call is cancelled at once
    cancelled_first = AgCancellationToken()
    cancelled_first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await client.create([AgUserMessage(content="hi", source="user")], cancellation_token=cancelled_first)


async def test_nbagents_client_called_with_nbagents_messages_answers_nbagents_result() -> None:
    client = ReplayChatCompletionClient(["ok"])
    answer = await client.create([nbagent.UserMessage(content="hi", source="user")])
    assert type(answer) is nbagent.CreateResult


async def test_agent_tool_of_an_nbagent_agent_in_autogens_agent_streams_its_inner_messages() -> None:
    inner = AssistantAgent("inner", ReplayChatCompletionClient(["The inner answer."]), description="Answers.")
    outer = AgAssistantAgent(
        "outer", model_client=AgReplay([tool_call("inner", "do it")], model_info=INFO), tools=[AgentTool(inner)]
    )
    items = [item async for item in outer.run_stream(task="go")]
    result = items[-1]
    assert isinstance(result, AgTaskResult)  # was: "Expected return value of type TaskResult, but got TaskResult"
    execution = next(item for item in result.messages if isinstance(item, ag.ToolCallExecutionEvent))
    assert execution.content[0].content == "inner: The inner answer." and not execution.content[0].is_error
    streamed = [(type(item).__name__, item.source) for item in items[:-1]]
    assert ("TextMessage", "inner") in streamed  # the inner agent's answer, streamed through the tool
    assert all(isinstance(item, (ag.BaseChatMessage, ag.BaseAgentEvent)) for item in items[:-1])
    assert len(inner.trace.runs_df()) == 1  # and recorded as nbagent's run


async def test_team_tool_of_a_team_of_nbagent_agents() -> None:
    member = AssistantAgent("member", ReplayChatCompletionClient(["From the team."]))
    team = RoundRobinGroupChat([member], termination_condition=MaxMessageTermination(2))
    tool = TeamTool(team, name="team", description="A team.", return_value_as_last_message=True)
    outer = AgAssistantAgent("outer", model_client=AgReplay([tool_call("team", "work")], model_info=INFO), tools=[tool])
    result = await outer.run(task="go")
    execution = next(item for item in result.messages if isinstance(item, ag.ToolCallExecutionEvent))
    assert execution.content[0].content == "From the team."


async def test_run_and_run_stream_with_autogens_token_answer_autogens_types() -> None:
    agent = AssistantAgent("nb", ReplayChatCompletionClient(["one", "two", "three"]))
    result = await agent.run(task="hi", cancellation_token=AgCancellationToken())
    assert type(result) is AgTaskResult and [type(m) for m in result.messages] == [ag.TextMessage, ag.TextMessage]
    shown = await AgConsole(agent.run_stream(task="again", cancellation_token=AgCancellationToken()))
    assert type(shown) is AgTaskResult and shown.messages[-1].content == "two"
    mine = await agent.run(task="nbagent's")  # nbagent's callers: nbagent's result of nbagent's messages
    assert isinstance(mine, nbagent.TaskResult) and type(mine.messages[-1]) is nbagent.TextMessage


def roundtrip(team: Any, kind: Any) -> Any:
    """AutoGen's dump of ``team`` through JSON and back with AutoGen's loader."""
    dumped = team.dump_component()
    assert isinstance(dumped, AgComponentModel)
    return kind.load_component(json.loads(dumped.model_dump_json()))


def test_autogens_teams_holding_nbagent_agents_dump_and_load_back() -> None:
    def agent(name: str) -> AssistantAgent:
        return AssistantAgent(name, ReplayChatCompletionClient(["x"]), system_message=f"You are {name}.")

    team = RoundRobinGroupChat([agent("a"), agent("b")], termination_condition=MaxMessageTermination(3))
    loaded = roundtrip(team, Team)
    participants = loaded._participants  # noqa: SLF001 AutoGen's team keeps them there
    assert [type(p) for p in participants] == [AssistantAgent, AssistantAgent]
    assert participants[1].dump_component().config == agent("b").dump_component().config

    nested = RoundRobinGroupChat([agent("c"), team], termination_condition=MaxMessageTermination(3))
    assert type(roundtrip(nested, Team)) is RoundRobinGroupChat

    society = SocietyOfMindAgent("society", team=team, model_client=AgReplay(["s"], model_info=INFO))
    assert type(roundtrip(society, ChatAgent)) is SocietyOfMindAgent

    tool = AgentTool(agent("helper"))
    tool_config = tool.dump_component()
    assert tool_config.config["agent"]["provider"] == "nbagent.AssistantAgent"  # the JSON names nbagent's class
    assert type(AgentTool.load_component(tool_config)._agent) is AssistantAgent  # noqa: SLF001


async def test_autogens_components_holding_nbagents_model_client_dump_and_load_back() -> None:
    """AutoGen's loader checks the model client it builds is its ``ChatCompletionClient``: an AutoGen
    agent, selector or society of mind given nbagent's client loads back with it (refused before)."""
    agent = AgAssistantAgent("ag", model_client=ReplayChatCompletionClient(["loaded answer"]))
    loaded = roundtrip(agent, AgAssistantAgent)
    assert type(loaded._model_client) is ReplayChatCompletionClient  # noqa: SLF001 AutoGen's agent keeps it there
    assert (await loaded.run(task="hi")).messages[-1].content == "loaded answer"

    def member(name: str) -> AssistantAgent:
        return AssistantAgent(name, ReplayChatCompletionClient([f"{name} TERMINATE"]), description=name)

    selector = SelectorGroupChat(
        [member("a"), member("b")],
        model_client=ReplayChatCompletionClient(["b"]),
        termination_condition=TextMentionTermination("TERMINATE"),
    )
    loaded_selector = roundtrip(selector, Team)
    assert type(loaded_selector) is SelectorGroupChat
    assert [m.source for m in (await loaded_selector.run(task="pick")).messages] == ["user", "b"]

    society = SocietyOfMindAgent(
        "society",
        team=RoundRobinGroupChat([member("c")], max_turns=1),
        model_client=ReplayChatCompletionClient(["summary"]),
    )
    assert type(roundtrip(society, ChatAgent)) is SocietyOfMindAgent


async def test_autogens_agent_holding_nbagents_memory_context_tools_and_workbench_loads_back_and_runs() -> None:
    """AutoGen's ``AssistantAgent`` takes nbagent's ``FunctionTool`` (it checks its ``BaseTool``: "Unsupported
    tool type" before), and its loader checks what it builds is its ``Memory``, ``ChatCompletionContext``,
    ``Workbench`` or ``BaseTool``: nbagent's load back ("Expected type does not match" before)."""
    from autogen_core.memory import Memory as AgMemory
    from autogen_core.model_context import ChatCompletionContext as AgContext
    from autogen_core.tools import BaseTool as AgBaseTool
    from autogen_core.tools import Workbench as AgWorkbench

    def weather(city: str) -> str:
        """The weather in a city."""
        return f"sunny in {city}"

    store = nbagent.ListMemory(name="notes")
    await store.add(nbagent.MemoryContent(content="The user is in Paris.", mime_type="text/plain"))
    call = AgCreateResult(
        finish_reason="function_calls",
        content=[AgFunctionCall(id="c1", name="weather", arguments='{"city": "Paris"}')],
        usage=AgRequestUsage(prompt_tokens=0, completion_tokens=0),
        cached=False,
    )
    agent = AgAssistantAgent(
        "ag",
        model_client=AgReplay([call, "Sunny."], model_info=INFO),
        tools=[nbagent.FunctionTool(weather)],
        memory=[store],
        model_context=nbagent.BufferedChatCompletionContext(buffer_size=6),
        reflect_on_tool_use=True,
    )
    result = await agent.run(task="Weather?")
    executed = [m for m in result.messages if isinstance(m, ag.ToolCallExecutionEvent)]
    assert executed[0].content[0].content == "sunny in Paris" and not executed[0].content[0].is_error
    assert result.messages[-1].content == "Sunny."
    config = json.loads(agent.dump_component().model_dump_json())
    memory_config, context_config = config["config"]["memory"][0], config["config"]["model_context"]
    assert memory_config["provider"] == "nbagent.ListMemory"  # nbagent fix 17: the name of the object's library
    assert type(AgMemory.load_component(memory_config)) is nbagent.ListMemory
    assert type(AgContext.load_component(context_config)) is nbagent.BufferedChatCompletionContext
    assert type(AgWorkbench.load_component(StaticWorkbench([]).dump_component())) is StaticWorkbench
    assert isinstance(nbagent.FunctionTool(weather), AgBaseTool)
    loaded = load_component(config, functions=[weather])  # nbagent loads AutoGen's agent config as its agent
    assert type(loaded) is AssistantAgent
    again = await loaded.run(task="Weather?")
    assert again.messages[-1].content == "Sunny."  # the replay client's script, dumped with it
    loaded_run = await AgAssistantAgent(
        "again", model_client=AgReplay(["Still sunny."]), memory=[AgMemory.load_component(store.dump_component())]
    ).run(task="And now?")
    assert isinstance(loaded_run.messages[1], ag.MemoryQueryEvent)
    assert loaded_run.messages[1].content[0].content == "The user is in Paris."


async def test_nbagents_agent_holding_autogens_agent_and_team_tools_loads_back_and_runs() -> None:
    """AutoGen's AgentTool and TeamTool (nbagent has no class of them) in nbagent's agent and
    StaticWorkbench: the dump loads back with nbagent's loader (refused before: "not a BaseTool")."""

    def helper(name: str, answer: str) -> AssistantAgent:
        return AssistantAgent(name, ReplayChatCompletionClient([answer]), description=f"{name} helps.")

    team = RoundRobinGroupChat([helper("member", "From the team.")], max_turns=1)
    tools = [AgentTool(helper("inner", "From the agent.")), TeamTool(team, name="team", description="A team.")]
    script = [tool_call("inner", "a"), tool_call("team", "b"), "done"]
    agent = AssistantAgent("outer", ReplayChatCompletionClient(script), tools=tools, max_tool_iterations=3)
    loaded = load_component(agent.dump_component().model_dump_json())
    assert [tool["name"] for tool in loaded.tools] == ["inner", "team"]
    result = await loaded.run(task="go")
    executions = [item for item in result.messages if isinstance(item, nbagent.ToolCallExecutionEvent)]
    assert [call.content for event in executions for call in event.content] == [
        "inner: From the agent.",
        "member: From the team.",
    ]

    bench = StaticWorkbench(tools)
    reloaded = load_component(bench.dump_component())
    assert [tool["name"] for tool in await reloaded.list_tools()] == ["inner", "team"]
    not_a_tool = {**agent.dump_component().config, "tools": [ReplayChatCompletionClient(["x"]).dump_component()]}
    with pytest.raises(
        TypeError, match=r"builds a ReplayChatCompletionClient \(nbagent.ReplayChatCompletionClient\), not a BaseTool"
    ):
        load_component({**agent.dump_component().model_dump(), "config": not_a_tool})


def test_an_nbagent_dump_is_nbagents_and_autogens_and_loads_in_both() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["x"]))
    dumped = agent.dump_component()
    assert isinstance(dumped, ComponentModel) and isinstance(dumped, AgComponentModel)
    assert dumped.provider == "nbagent.AssistantAgent"
    assert type(load_component(dumped)) is AssistantAgent
    assert type(ChatAgent.load_component(dumped)) is AssistantAgent
    # AutoGen's registry of provider names gets nbagent's, pointing at the seam's loaders
    assert ag_config.WELL_KNOWN_PROVIDERS["nbagent.AssistantAgent"] == "nbagent.autogen.loaders.AssistantAgent"


async def test_nbagents_agent_streams_an_agent_tools_inner_messages() -> None:
    """nbagent's agent with AutoGen's AgentTool (a BaseStreamTool) in tools=: the inner agent's messages
    come through in the outer run's stream, between the tool request and its result, as AutoGen's
    agent streams them (AutoGen's test_task_runner_tool order)."""
    inner = AssistantAgent("tool_agent", ReplayChatCompletionClient(["Summary from tool agent"]))
    script = [
        nbagent.CreateResult(
            finish_reason="function_calls",
            content=[nbagent.FunctionCall(id="1", name="tool_agent", arguments='{"task": "Input task"}')],
        ),
        "Summary from main agent",
    ]
    main = AssistantAgent(
        "main", ReplayChatCompletionClient(script), tools=[AgentTool(inner)], reflect_on_tool_use=True
    )
    result = await main.run(task="Input task from user")
    kinds = [(type(m).__name__, m.source) for m in result.messages]
    assert kinds == [
        ("TextMessage", "user"),
        ("ToolCallRequestEvent", "main"),
        ("TextMessage", "user"),  # the inner run's task, streamed through the tool
        ("TextMessage", "tool_agent"),  # the inner agent's answer
        ("ToolCallExecutionEvent", "main"),
        ("TextMessage", "main"),
    ]
    assert result.messages[4].content[0].content == "tool_agent: Summary from tool agent"


async def test_a_text_only_multimodal_message_reaches_a_model_without_vision_as_one_text() -> None:
    """Issue 40.4: as AutoGen's remove_images, a user message of text parts is joined for a model
    without vision (its usage then counts as AutoGen's does), not sent as a list."""
    client = ReplayChatCompletionClient(["ok"], model_info={"vision": False})
    agent = AssistantAgent("bot", client, system_message=None)
    await agent.run(task=ag.MultiModalMessage(content=["first part", "second part"], source="user"))
    (sent,) = client.requests[0].messages
    assert sent.content == "first part\nsecond part"


def test_the_handoff_tool_schema_is_autogens() -> None:
    from autogen_agentchat.base import Handoff as AgHandoff

    assert nbagent.Handoff(target="planner").schema == AgHandoff(target="planner").handoff_tool.schema


async def test_an_unknown_message_type_is_autogens_value_error_too() -> None:
    class WrongMessage:
        content = "?"

    client = nbagent.OpenAIChatCompletionClient(
        model="gpt-4o", api_key="sk-" + "unused", base_url="http://127.0.0.1:9/v1"
    )
    with pytest.raises(ValueError, match="Unknown message type"):
        await client.create([WrongMessage()])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="not an LLM message: WrongMessage"):
        await client.create([WrongMessage()])  # type: ignore[list-item]


async def test_swarm_takes_an_nbagent_agent_without_handoffs_as_its_first_participant() -> None:
    from autogen_agentchat.teams import Swarm

    first = AssistantAgent("first", ReplayChatCompletionClient(["Done."]))
    team = Swarm([first], termination_condition=MaxMessageTermination(2))  # refused on ce8e2c5
    result = await team.run(task="go")
    assert result.messages[-1].content == "Done."


# ---------------------------------------------------------------------- AutoGen's team configs loaded by nbagent


def ag_agent(name: str, *answers: str, **kwargs: Any) -> AgAssistantAgent:
    return AgAssistantAgent(name, AgReplay(list(answers), model_info=INFO), **kwargs)


async def test_nbagent_loads_autogens_round_robin_config_and_traces_its_run() -> None:
    team = RoundRobinGroupChat(
        [ag_agent("writer", "A draft."), ag_agent("editor", "Edited. TERMINATE")],
        termination_condition=MaxMessageTermination(3) | TextMentionTermination("TERMINATE"),
    )
    config = json.loads(team.dump_component().model_dump_json())  # AutoGen's JSON, as saved to a file
    loaded = load_component(config)
    assert type(loaded) is RoundRobinGroupChat
    participants = loaded._participants  # noqa: SLF001 AutoGen's team keeps them there
    assert [(type(p), p.name) for p in participants] == [(AssistantAgent, "writer"), (AssistantAgent, "editor")]

    trace = Trace()
    result = await na.run(loaded, "Write.", trace=trace)
    assert [m.content for m in result.messages] == ["Write.", "A draft.", "Edited. TERMINATE"]
    runs = trace.runs_df()
    assert list(runs["agent"]) == ["RoundRobinGroupChat", "writer", "editor"]
    assert list(runs["parent_run_id"].iloc[1:]) == [runs["run_id"].iloc[0]] * 2
    assert list(trace.llm_calls_df()["response_text"]) == ["A draft.", "Edited. TERMINATE"]


async def test_nbagent_loads_autogens_selector_and_swarm_configs() -> None:
    selector = SelectorGroupChat(
        [ag_agent("a", "from a"), ag_agent("b", "from b")],
        model_client=AgReplay(["b"], model_info=INFO),
        termination_condition=MaxMessageTermination(2),
    )
    loaded = load_component(selector.dump_component().model_dump())
    assert type(loaded) is SelectorGroupChat
    assert type(loaded._model_client) is AgReplay  # noqa: SLF001 AutoGen checks its own client type there
    assert all(type(p) is AssistantAgent for p in loaded._participants)  # noqa: SLF001
    result = await loaded.run(task="go")
    assert [m.source for m in result.messages] == ["user", "b"]

    swarm = Swarm(
        [ag_agent("triage", "", handoffs=["expert"]), ag_agent("expert", "Solved. TERMINATE")],
        termination_condition=TextMentionTermination("TERMINATE"),
    )
    loaded_swarm = load_component(swarm.dump_component().model_dump(), Team)
    assert type(loaded_swarm) is Swarm
    triage = loaded_swarm._participants[0]  # noqa: SLF001
    assert type(triage) is AssistantAgent and [h.target for h in triage.handoffs.values()] == ["expert"]


async def test_a_team_configs_tool_source_code_needs_allow_source_code() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    def given_add(a: int, b: int) -> int:
        return 100 * (a + b)

    team = RoundRobinGroupChat([ag_agent("calc", "3", tools=[add])], termination_condition=MaxMessageTermination(2))
    config = team.dump_component().model_dump()
    with pytest.raises(nbagent.SourceCodeNotAllowedError):
        load_component(config)
    for loaded, answer in (
        (load_component(config, allow_source_code=True), "3"),
        (load_component(config, functions={"add": given_add}), "300"),
    ):
        calc = loaded._participants[0]  # noqa: SLF001 AutoGen's team keeps them there
        assert [t["name"] for t in calc.tools] == ["add"]
        result = await calc.workbench[0].call_tool("add", {"a": 1, "b": 2})
        assert result.to_text() == answer


def test_a_team_config_naming_no_autogen_component_is_refused_and_loads_nothing() -> None:
    team = RoundRobinGroupChat([ag_agent("a", "x")], termination_condition=MaxMessageTermination(2))
    config = team.dump_component().model_dump()
    bad = {**config, "config": {**config["config"], "termination_condition": {"provider": "os.system", "config": {}}}}
    with pytest.raises(TypeError, match="'os.system' is not one of AutoGen's component classes"):
        load_component(bad)
    unknown = {**config, "provider": "autogen_agentchat.nowhere.Team"}
    with pytest.raises(ValueError, match="'autogen_agentchat.nowhere' is not"):
        load_component(unknown)
    with pytest.raises(TypeError, match="builds a RoundRobinGroupChat .* not a AssistantAgent"):
        AssistantAgent.load_component(config)


@pytest.mark.slow
def test_a_team_json_loads_with_only_nbagent_imported(tmp_path: Path) -> None:
    team = RoundRobinGroupChat([ag_agent("a", "x")], termination_condition=MaxMessageTermination(2))
    path = tmp_path / "team.json"
    path.write_text(team.dump_component().model_dump_json())
    code = (
        "import sys, nbagent\n"
        f"team = nbagent.load_component(open({str(path)!r}).read())\n"
        "print(type(team).__name__, [type(p).__name__ for p in team._participants])\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "RoundRobinGroupChat ['AssistantAgent']"
    assert "Warning" not in done.stderr


def test_a_component_loaded_from_autogens_config_dumps_under_autogens_provider() -> None:
    """Issue 40.5 (provider-alias): AutoGen's dump-load-dump round trips hold with nbagent's classes loading
    AutoGen's configs; nbagent's own objects and configs still dump as nbagent's."""
    from autogen_core.memory import ListMemory as AgListMemory

    for theirs in (AgReplay(["x"], model_info=INFO), AgListMemory(name="notes")):
        dumped = theirs.dump_component()
        ours = load_component(dumped)
        assert type(ours).__module__.startswith("nbagent.")
        again = ours.dump_component()
        assert (again.provider, again.description, again.label) == (dumped.provider, dumped.description, dumped.label)
        assert again.config == dumped.config
        assert type(load_component(again)) is type(ours)

    # AutoGen's team holding nbagent's agents whose clients are AutoGen's: AutoGen's loader, then a dump alike
    team = RoundRobinGroupChat(
        [AssistantAgent("a", AgReplay(["x"], model_info=INFO)), AssistantAgent("b", AgReplay(["y"], model_info=INFO))],
        termination_condition=MaxMessageTermination(3),
    )
    dumped_team = team.dump_component()
    assert RoundRobinGroupChat.load_component(dumped_team).dump_component() == dumped_team

    own = ReplayChatCompletionClient(["x"])
    assert own.dump_component().provider == "nbagent.ReplayChatCompletionClient"
    assert load_component(own.dump_component()).dump_component().provider == "nbagent.ReplayChatCompletionClient"
