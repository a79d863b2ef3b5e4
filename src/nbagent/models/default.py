"""``default_model()``: a real model when one is configured, else an offline one, in one line.

Also the weather demo that the shipped cassette (``nbagent/data/weather_demo.cassette.json``)
recorded: :func:`demo_agent` rebuilds the very agent it was recorded with, so the cassette
replays a real tool loop (streamed text, a thought, two parallel calls) with no network.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .base import ChatCompletionClient
from .cassette import CassetteChatCompletionClient
from .openai import OpenAIChatCompletionClient
from .replay import ReplayChatCompletionClient

if TYPE_CHECKING:
    from ..agent import AssistantAgent

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
DEMO_CASSETTE = Path(__file__).resolve().parent.parent / "data" / "weather_demo.cassette.json"
DEMO_TASK = "What is the weather in Paris and in Tokyo? Answer in one sentence."
OFFLINE_ANSWER = (
    "This is nbagent's offline replay model: no OPENAI_API_KEY or NBAGENT_BASE_URL is set, so every "
    "answer is this scripted text."
)
_OFFLINE_ANSWERS = 1000


def default_model(model: str | None = None, *, cassette: str | Path | None = None, notice: bool = True) -> ChatCompletionClient:
    """The model to use, from the environment.

    * ``NBAGENT_BASE_URL`` set: an OpenAI-compatible server (Ollama, vLLM...), model
      ``NBAGENT_MODEL`` (or ``model``), key ``NBAGENT_API_KEY`` or ``OPENAI_API_KEY`` if any;
    * else ``OPENAI_API_KEY`` set: OpenAI, model ``model`` / ``NBAGENT_MODEL`` / ``gpt-4o-mini``;
    * else offline: ``cassette`` replayed at its recorded pace if given, otherwise a replay model
      that answers every call with a fixed text; a one-line notice says so (``notice=False`` hides it).
    """
    name = model or os.environ.get("NBAGENT_MODEL") or None
    base_url = os.environ.get("NBAGENT_BASE_URL") or None
    if base_url is not None:
        if name is None:
            raise ValueError(
                f"NBAGENT_BASE_URL is set ({base_url}) but no model: set NBAGENT_MODEL (e.g. llama3.1) "
                "or pass default_model('<model>')"
            )
        return OpenAIChatCompletionClient(name, base_url=base_url, api_key=os.environ.get("NBAGENT_API_KEY") or None)
    if os.environ.get("OPENAI_API_KEY"):
        return OpenAIChatCompletionClient(name or DEFAULT_OPENAI_MODEL)
    offline: ChatCompletionClient
    if cassette is not None:
        offline = CassetteChatCompletionClient(cassette, pace=True)
        what = f"replaying the cassette {Path(cassette).name}"
    else:
        offline = ReplayChatCompletionClient([OFFLINE_ANSWER] * _OFFLINE_ANSWERS)
        what = "using the offline replay model (scripted answers)"
    if notice:
        print(f"nbagent: no OPENAI_API_KEY or NBAGENT_BASE_URL set, {what}.", file=sys.stderr)
    return offline


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
    from ..agent import AssistantAgent

    client = model_client or CassetteChatCompletionClient(DEMO_CASSETTE, pace=pace)
    return AssistantAgent(
        "weather_agent",
        client,
        tools=[get_weather],
        system_message="You answer questions about the weather. Use the get_weather tool.",
        model_client_stream=True,
        reflect_on_tool_use=True,
    )
