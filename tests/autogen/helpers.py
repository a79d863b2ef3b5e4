"""AutoGen agents and teams for the tests, on AutoGen's own ReplayChatCompletionClient (offline)."""

from __future__ import annotations

import asyncio
from typing import Any

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat, Swarm
from autogen_core import FunctionCall
from autogen_core.models import ChatCompletionClient, CreateResult, ModelInfo, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

INFO = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)


def calls(*specs: tuple[str, str, str], prompt: int = 10, completion: int = 5) -> CreateResult:
    """A model answer asking for tool calls, each (id, name, arguments)."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name=name, arguments=arguments) for call_id, name, arguments in specs],
        usage=RequestUsage(prompt, completion),
        cached=False,
    )


def replay(*answers: str | CreateResult) -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient(list(answers), model_info=INFO)


def model_client(agent: AssistantAgent) -> ChatCompletionClient:
    """The model client ``agent`` calls now: nbagent puts its recording client there for a run and
    puts the agent's own back after it (docs/contract.md), which the tests check."""
    return agent._model_client  # noqa: SLF001 AutoGen's agent has no public accessor of its client


def weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


def tool_agent(stream: bool = True) -> AssistantAgent:
    """A streaming agent with a tool and reflection: tool call, then a streamed answer."""
    client = replay(
        calls(("c1", "weather", '{"city": "Paris"}'), ("c2", "weather", '{"city": "Rome"}')),
        "Sunny in Paris and in Rome.",
    )
    return AssistantAgent("forecaster", client, tools=[weather], reflect_on_tool_use=True, model_client_stream=stream)


def round_robin() -> tuple[RoundRobinGroupChat, AssistantAgent, AssistantAgent]:
    writer = AssistantAgent("writer", replay("A first draft.", "A second draft."), system_message="You write.")
    critic = AssistantAgent("critic", replay("Make it shorter."), system_message="You criticise.")
    team = RoundRobinGroupChat([writer, critic], termination_condition=MaxMessageTermination(4))
    return team, writer, critic


def swarm() -> tuple[Swarm, AssistantAgent, AssistantAgent]:
    """Triage hands off to a specialist, which looks up the weather and answers."""
    triage = AssistantAgent(
        "triage",
        replay(calls(("h1", "transfer_to_specialist", "{}"))),
        handoffs=["specialist"],
        system_message="You route questions.",
    )
    specialist = AssistantAgent(
        "specialist",
        replay(calls(("w1", "weather", '{"city": "Oslo"}')), "Sunny in Oslo. TERMINATE"),
        tools=[weather],
        reflect_on_tool_use=True,
        system_message="You answer weather questions.",
    )
    team = Swarm([triage, specialist], termination_condition=TextMentionTermination("TERMINATE"))
    return team, triage, specialist


class SlowReplay(ReplayChatCompletionClient):
    """A replay client whose calls wait for ``release`` (set ``started`` first): to cancel mid-call."""

    def __init__(self, answers: list[str | CreateResult]) -> None:
        super().__init__(answers, model_info=INFO)
        self.started = asyncio.Event()
        self.release = asyncio.Event()

    async def create(self, *args: Any, **kwargs: Any) -> CreateResult:
        self.started.set()
        await self.release.wait()
        return await super().create(*args, **kwargs)
