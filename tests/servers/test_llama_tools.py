"""A real model calls a real tool (issue 32): llama-server with SmolLM2-135M on the Qwen2.5 chat
template llama.cpp's sources vendor (Hermes-style ``<tool_call>`` blocks the server parses into
OpenAI tool calls), and nbagent's ``AssistantAgent`` whose context starts with two example turns (a
user question, then the assistant's tool call for it).

A 135M model does not decide to call a tool from a tool list alone; shown how twice, it calls
``get_weather`` with the city of the question, at temperature 0 and a fixed seed. These tests go
through ``run``, ``run_stream`` and the stepper (the live view in a real kernel: notebook 05 in
test_notebook05.py), and check the model's call, the tool run with the model's arguments, the
summary and the reflection, the trace's rows and a second turn on the same context.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    AssistantMessage,
    FunctionCall,
    ModelClientStreamingChunkEvent,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    UnboundedChatCompletionContext,
    UserMessage,
)
from nbagent.models import OpenAIChatCompletionClient
from nbagent.stepper import Stepper
from tests.models.chat_server import validate_context

from .realservers import MODEL, Running

pytestmark = pytest.mark.timeout(300)

SEED = 7


class Weather:
    """The tool, which keeps the arguments of every call it got."""

    def __init__(self) -> None:
        self.cities: list[str] = []

    async def get_weather(self, city: str) -> str:
        """Today's weather in a city."""
        self.cities.append(city)
        return f"{city}: 18 degrees, light rain"


def example_turn(call_id: str, city: str) -> list[Any]:
    """One example: a question, then the assistant's tool call for it.

    No result follows the call: with the tool's result (and an answer) after each example, SmolLM2
    goes on the pattern it sees after its calls and writes a ``<tool_response>`` block itself, as text,
    instead of calling (every such variant, with or without the system message, one example or two;
    measured at temperature 0). The context is fine for llama-server, which checks no pairing.
    """
    return [
        UserMessage(content=f"What is the weather in {city}?", source="user"),
        AssistantMessage(
            content=[FunctionCall(id=call_id, name="get_weather", arguments=json.dumps({"city": city}))],
            source="weather",
        ),
    ]


FEW_SHOT = [*example_turn("example_1", "Berlin"), *example_turn("example_2", "Madrid")]


def weather_agent(server: Running, tool: Weather, **kwargs: Any) -> tuple[AssistantAgent, OpenAIChatCompletionClient]:
    client = OpenAIChatCompletionClient(
        MODEL,
        base_url=server.base_url,
        api_key=server.api_key,
        max_retries=0,
        timeout=120.0,
        temperature=0,
        seed=SEED,
        model_info={"function_calling": True, "json_output": True, "vision": False, "family": "unknown",
                    "structured_output": True},
    )  # fmt: skip
    agent = AssistantAgent(
        "weather",
        client,
        tools=[tool.get_weather],
        model_context=UnboundedChatCompletionContext(initial_messages=FEW_SHOT),
        system_message="You answer questions about the weather with the get_weather tool.",
        **kwargs,
    )
    return agent, client


@pytest.fixture
async def tool() -> AsyncIterator[Weather]:
    yield Weather()


def assert_one_call_to(items: list[Any], city: str) -> FunctionCall:
    requests = [item for item in items if isinstance(item, ToolCallRequestEvent)]
    assert len(requests) == 1, [type(item).__name__ for item in items]
    (call,) = requests[0].content
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": city}
    # The server's id for the call: llama-server makes 32 random letters and digits (nbagent's own,
    # for a call that came without one, would be "call_..."); not an example's id either.
    assert re.fullmatch(r"[A-Za-z0-9]{32}", call.id), call.id
    (execution,) = [item for item in items if isinstance(item, ToolCallExecutionEvent)]
    (result,) = execution.content
    assert (result.call_id, result.content, result.is_error) == (call.id, f"{city}: 18 degrees, light rain", False)
    return call


def assert_trace(agent: AssistantAgent, call: FunctionCall, purposes: list[str]) -> None:
    llm = agent.trace.llm_calls_df()
    run_id = agent.trace.runs_df()["run_id"].iloc[-1]
    llm = llm[llm["run_id"] == run_id]
    assert llm["purpose"].tolist() == purposes
    first = llm.iloc[0]
    assert first["finish_reason"] == "function_calls" and first["n_tool_calls"] == 1
    assert str(first["response_id"]).startswith("chatcmpl-")  # the server's id of its answer
    assert first["tool_choice"] == "auto" and first["request_params"]["seed"] == SEED
    assert first["prompt_tokens"] > 0 and first["completion_tokens"] > 0
    tools = agent.trace.tool_calls_df()
    (row,) = tools[tools["run_id"] == run_id].to_dict("records")
    assert (row["call_id"], row["tool_name"], row["arguments"]) == (call.id, "get_weather", json.loads(call.arguments))
    assert row["llm_call_id"] == first["llm_call_id"]
    assert (
        not pd_isna(row["is_error"])
        and not row["is_error"]
        and row["result"] == f"{city_of(call)}: 18 degrees, light rain"
    )


async def test_run_calls_the_tool_and_summarizes(llama_tools: Running, tool: Weather) -> None:
    agent, client = weather_agent(llama_tools, tool)
    result = await agent.run(task="What is the weather in Paris?")
    call = assert_one_call_to(result.messages, "Paris")
    assert tool.cities == ["Paris"]
    summary = result.messages[-1]
    assert isinstance(summary, ToolCallSummaryMessage) and summary.content == "Paris: 18 degrees, light rain"
    assert_trace(agent, call, ["initial"])
    # A second turn on the same context: the server takes the history of real calls, the run ends well.
    second = await agent.run(task="What is the weather in Rome?")
    assert isinstance(second.messages[-1], (ToolCallSummaryMessage, TextMessage)) and second.messages[-1].content
    assert tool.cities[0] == "Paris" and set(tool.cities[1:]) <= {"Rome"}
    assert agent.trace.runs_df()["status"].tolist() == ["ok", "ok"]
    # What the runs added is a context the Chat Completions API takes (the examples' calls have no results).
    assert validate_context(agent.model_context.messages[len(FEW_SHOT) :], agent.tools) == []
    await client.close()


async def test_run_stream_calls_the_tool_and_reflects(llama_tools: Running, tool: Weather) -> None:
    agent, client = weather_agent(llama_tools, tool, reflect_on_tool_use=True, model_client_stream=True)
    items = [item async for item in agent.run_stream(task="What is the weather in Paris?")]
    result = items[-1]
    call = assert_one_call_to(result.messages, "Paris")  # type: ignore[union-attr]
    assert tool.cities == ["Paris"]
    answer = result.messages[-1]  # type: ignore[union-attr]
    assert isinstance(answer, TextMessage) and answer.content.strip()
    chunks = [item for item in items if isinstance(item, ModelClientStreamingChunkEvent)]
    assert "".join(chunk.content for chunk in chunks if chunk.full_message_id == answer.id) == answer.content
    assert_trace(agent, call, ["initial", "reflection"])
    reflection = agent.trace.llm_calls_df().iloc[-1]
    assert reflection["finish_reason"] in ("stop", "length") and reflection["ttft_s"] > 0
    assert pd_isna(reflection["tool_choice"])  # the reflection offers no tools: no tool_choice was sent
    second = await agent.run(task="And what is the weather in Rome?")
    assert second.messages[-1].content and agent.trace.runs_df()["status"].tolist() == ["ok", "ok"]
    # What the runs added is a context the Chat Completions API takes (the examples' calls have no results).
    assert validate_context(agent.model_context.messages[len(FEW_SHOT) :], agent.tools) == []
    await client.close()


async def test_the_stepper_walks_the_real_tool_loop(llama_tools: Running, tool: Weather) -> None:
    agent, client = weather_agent(llama_tools, tool, reflect_on_tool_use=True)
    stepper = Stepper(agent, "What is the weather in Paris?")
    at_llm = await stepper.run_until(step=4)
    assert at_llm is not None and at_llm.request is not None and at_llm.result is not None
    assert [schema["name"] for schema in at_llm.request.tools] == ["get_weather"]
    assert len(at_llm.request.messages) == 1 + len(FEW_SHOT) + 1  # system, the examples, the task
    (call,) = at_llm.result.content  # type: ignore[misc]
    assert json.loads(call.arguments) == {"city": "Paris"} and tool.cities == []  # asked, not run yet
    requested = await stepper.run_until(tool="get_weather")  # STEP 5: the request event, nothing run yet
    assert requested is not None and requested.name == "tool_request" and tool.cities == []
    ran = await stepper.run_until(move="tool_execution")
    assert ran is not None and tool.cities == ["Paris"]
    assert "added" in ran.context["change"].tolist()
    rest = await stepper.run_to_end()
    assert rest and stepper.done
    final = agent.model_context.messages[-1]
    assert isinstance(final, AssistantMessage) and isinstance(final.content, str) and final.content.strip()
    assert_trace(agent, call, ["initial", "reflection"])
    await client.close()


def city_of(call: FunctionCall) -> str:
    city: str = json.loads(call.arguments)["city"]
    return city


def pd_isna(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))
