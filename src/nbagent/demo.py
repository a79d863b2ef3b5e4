"""The demo agents: the weather demo the shipped cassette recorded, and the terminal demo's scripted agent.

:func:`demo_agent` rebuilds the very agent the cassette ``nbagent/data/weather_demo.cassette.json`` was
recorded with, so the cassette replays a real tool loop (streamed text, a thought, two parallel calls)
with no network. :func:`scripted_agent` runs two tool rounds on the replay model, for
``python -m nbagent demo``.
"""

from __future__ import annotations

from pathlib import Path

from .agent import AssistantAgent
from .messages import CreateResult, FunctionCall, RequestUsage
from .models.base import ChatCompletionClient
from .models.cassette import CassetteChatCompletionClient
from .models.replay import ReplayChatCompletionClient
from .tools import FunctionTool

DEMO_CASSETTE = Path(__file__).resolve().parent / "data" / "weather_demo.cassette.json"
DEMO_TASK = "What is the weather in Paris and in Tokyo? Answer in one sentence."


async def get_weather(city: str) -> str:
    """Today's weather in a city.

    Args:
        city: the city's name.
    """
    known = {"paris": "18 °C, light rain", "tokyo": "24 °C, sunny"}
    return known.get(city.strip().lower(), f"no weather data for {city}")


def demo_agent(model_client: ChatCompletionClient | None = None, *, pace: bool = True) -> AssistantAgent:
    """The weather demo agent (streaming, one tool, reflection); run it on :data:`DEMO_TASK`.

    Without ``model_client`` it replays the shipped cassette, which was recorded with this agent.
    """
    client = model_client or CassetteChatCompletionClient(DEMO_CASSETTE, pace=pace)
    return AssistantAgent(
        "weather_agent",
        client,
        tools=[get_weather],
        system_message="You answer questions about the weather. Use the get_weather tool.",
        model_client_stream=True,
        reflect_on_tool_use=True,
    )


SCRIPTED_TASK = "What is the weather in Paris and in Tokyo, and what is the difference in degrees?"


def scripted_weather(city: str) -> str:
    """Current weather of a city (scripted: no network)."""
    return {"Paris": "12 C, cloudy", "Tokyo": "18 C, sunny"}.get(city, "unknown city")


def subtract(a: float, b: float) -> float:
    """a minus b."""
    return a - b


def scripted_agent() -> AssistantAgent:
    """The terminal demo's agent (``python -m nbagent demo``): two tools, a replay model scripted for two
    tool rounds then an answer.

    The scripted tool-call answers carry the prompt tokens the replay model estimates for the
    messages those calls are sent (it estimates them itself only for text answers).
    """
    script: list[str | CreateResult] = [
        CreateResult(
            finish_reason="function_calls",
            content=[
                FunctionCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}'),
                FunctionCall(id="call_2", name="get_weather", arguments='{"city": "Tokyo"}'),
            ],
            usage=RequestUsage(prompt_tokens=58, completion_tokens=30),
        ),
        CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id="call_3", name="subtract", arguments='{"a": 18, "b": 12}')],
            usage=RequestUsage(prompt_tokens=88, completion_tokens=20),
        ),
        "Paris has 12 C and clouds, Tokyo 18 C and sun: Tokyo is 6 degrees warmer.",
    ]
    return AssistantAgent(
        "assistant",
        ReplayChatCompletionClient(script),
        tools=[FunctionTool(scripted_weather, name="get_weather"), subtract],
        max_tool_iterations=3,
    )
