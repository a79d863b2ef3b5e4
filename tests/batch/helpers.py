"""Agents for the batch tests: a weather tool, scripted replay agents, and what they record."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from nbagent import AssistantAgent, CreateResult, FunctionCall, FunctionTool, ReplayChatCompletionClient
from nbagent.batch import task_text
from tests.models.chat_server import validate_context


def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


LOOKUP = FunctionTool(lookup)


def tool_script(city: str, answer: str | None = None) -> list[str | CreateResult]:
    """One tool call (lookup of ``city``), then a text answer."""
    call = FunctionCall(id="c1", name="lookup", arguments=f'{{"city": "{city}"}}')
    return [CreateResult(finish_reason="function_calls", content=[call]), answer or f"It is sunny in {city}."]


@dataclass
class Factory:
    """``make_agent`` for the tests: a replay agent per task (tool call then answer); keeps every agent."""

    latency: float = 0.0
    tool: Any = LOOKUP
    agents: list[AssistantAgent] = field(default_factory=list)
    calls: list[object] = field(default_factory=list)

    def __call__(self, task: object) -> AssistantAgent:
        self.calls.append(task)
        city = str(task["task"]) if isinstance(task, pd.Series) else task_text(task)
        client = ReplayChatCompletionClient(tool_script(city), latency=self.latency)
        agent = AssistantAgent("weather", client, tools=[self.tool], reflect_on_tool_use=True)
        self.agents.append(agent)
        return agent


def contexts_valid(agents: list[AssistantAgent]) -> list[str]:
    """The problems of every agent's context (empty: each could be sent to the API as it is)."""
    problems = []
    for agent in agents:
        assert not agent.is_running
        problems += validate_context(agent.model_context.messages)
    return problems


class Gauge:
    """A slow weather tool (``tool``) that counts how many of its calls run at once."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.now = 0
        self.most = 0
        self.started = 0

        async def lookup(city: str) -> str:
            """The weather of a city, slowly."""
            self.started += 1
            self.now += 1
            self.most = max(self.most, self.now)
            try:
                await asyncio.sleep(self.delay)
            finally:
                self.now -= 1
            return f"sunny in {city}"

        self.tool = FunctionTool(lookup)
