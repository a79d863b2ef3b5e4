"""Code written against AutoGen 0.7.5's public API, run twice: with AutoGen's ``AssistantAgent`` and
with nbagent's, only the import changed (issue 27, "Done when"). Each scenario brings AutoGen's own
model clients (its ``ReplayChatCompletionClient``, a ``MagicMock`` built as AutoGen's tests build one,
autogen-ext's OpenAI client against the tests' server) and AutoGen's teams, and the two runs must be
seen alike: the same message types, sources and texts, and the same requests reaching the model.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from unittest.mock import AsyncMock, MagicMock

import pytest
from autogen_agentchat.agents import AssistantAgent as AutoGenAssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.messages import TextMessage
from autogen_agentchat.teams import RoundRobinGroupChat, Swarm
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import CreateResult, ModelInfo, RequestUsage
from autogen_core.tools import FunctionTool
from autogen_ext.models.openai import OpenAIChatCompletionClient
from autogen_ext.models.replay import ReplayChatCompletionClient

from nbagent import AssistantAgent as NbAssistantAgent

from ..models.chat_server import ChatServer, Reply

AGENTS = pytest.mark.parametrize("Agent", [AutoGenAssistantAgent, NbAssistantAgent], ids=["autogen", "nbagent"])
INFO = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)


def seen(messages: list[Any]) -> list[tuple[str, str, Any]]:
    """What a reader sees of a run's messages: type name, source, and the text of a chat message or
    the fields of a tool event's calls and results (their ``to_text()`` differs: see contract.md)."""
    return [
        (type(m).__name__, m.source, m.to_text() if isinstance(m.content, str) else [vars_of(c) for c in m.content])
        for m in messages
    ]


def vars_of(item: Any) -> dict[str, Any]:
    """The fields of a FunctionCall or FunctionExecutionResult (AutoGen's dataclass or pydantic model)."""
    dump = getattr(item, "model_dump", None)
    return dict(dump()) if callable(dump) else dict(vars(item))


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def calls(*names: str) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"c{i}", name=name, arguments='{"city": "Paris"}') for i, name in enumerate(names)],
        usage=RequestUsage(prompt_tokens=5, completion_tokens=2),
        cached=False,
    )


async def both(scenario: Callable[[Any], Any]) -> None:
    """Run ``scenario`` with each library's AssistantAgent and check both see the same."""
    autogen = await scenario(AutoGenAssistantAgent)
    nbagent = await scenario(NbAssistantAgent)
    assert nbagent == autogen


async def test_replay_client_with_a_function_tool_and_reflection() -> None:
    async def scenario(Agent: Any) -> Any:  # noqa: N803 (the class under test)
        client = ReplayChatCompletionClient([calls("get_weather"), "It is sunny in Paris."], model_info=INFO)
        agent = Agent(
            "weather_agent",
            model_client=client,
            tools=[FunctionTool(get_weather, description="The weather in a city.")],
            reflect_on_tool_use=True,
            system_message="You tell the weather.",
        )
        result = await agent.run(task="Weather in Paris?")
        sent = [[type(m).__name__ for m in call["messages"]] for call in client.create_calls]
        return seen(result.messages), sent, [t["name"] for t in client.create_calls[0]["tools"]]

    await both(scenario)


async def test_a_magicmock_client_as_autogens_tests_build_one() -> None:
    async def scenario(Agent: Any) -> Any:  # noqa: N803
        client = MagicMock()
        client.model_info = INFO
        client.create = AsyncMock(
            return_value=CreateResult(
                finish_reason="stop",
                content="Mocked.",
                usage=RequestUsage(prompt_tokens=3, completion_tokens=1),
                cached=False,
            )
        )
        agent = Agent("mocked", model_client=client)
        response = await agent.on_messages([TextMessage(content="hi", source="user")], CancellationToken())
        (args, kwargs) = client.create.call_args
        return (
            type(response.chat_message).__name__,
            response.chat_message.content,
            response.chat_message.models_usage.prompt_tokens,
            [type(m).__name__ for m in args[0]],
            sorted(kwargs),
        )

    await both(scenario)


async def test_round_robin_team_of_two_agents() -> None:
    async def scenario(Agent: Any) -> Any:  # noqa: N803
        writer = Agent("writer", model_client=ReplayChatCompletionClient(["A draft."]), system_message="You write.")
        critic = Agent("critic", model_client=ReplayChatCompletionClient(["Shorter."]), system_message="You criticise.")
        team = RoundRobinGroupChat([writer, critic], termination_condition=MaxMessageTermination(3))
        result = await team.run(task="Write a poem.")
        state = await team.save_state()
        return seen(result.messages), result.stop_reason, sorted(state["agent_states"])

    await both(scenario)


async def test_swarm_handoff() -> None:
    async def scenario(Agent: Any) -> Any:  # noqa: N803
        triage = Agent(
            "triage",
            model_client=ReplayChatCompletionClient([calls("transfer_to_expert")], model_info=INFO),
            handoffs=["expert"],
        )
        expert = Agent("expert", model_client=ReplayChatCompletionClient(["Solved. TERMINATE"]))
        team = Swarm([triage, expert], termination_condition=TextMentionTermination("TERMINATE"))
        result = await team.run(task="Help me.")
        return seen(result.messages)

    await both(scenario)


async def test_autogen_ext_openai_client_against_a_real_server() -> None:
    async def scenario(Agent: Any) -> Any:  # noqa: N803
        with ChatServer() as server:
            server.script(Reply.call(("get_weather", {"city": "Paris"})), Reply.text("Sunny in Paris."))
            client = OpenAIChatCompletionClient(
                model="gpt-4o", base_url=server.base_url, api_key="sk-test", max_retries=0
            )
            agent = Agent("weather_agent", model_client=client, tools=[get_weather], reflect_on_tool_use=True)
            result = await agent.run(task="Weather in Paris?")
            await client.close()
        bodies = [request.body for request in server.requests]
        return (
            seen(result.messages),
            [[message["role"] for message in body["messages"]] for body in bodies],
            [body.get("tools", [{}])[0].get("function", {}).get("name") for body in bodies],
        )

    await both(scenario)
