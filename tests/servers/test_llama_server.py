"""nbagent against llama.cpp's ``llama-server`` serving the real SmolLM2-135M-Instruct model.

Greedy decoding (temperature 0, a seed) and answers bounded to ``MAX_TOKENS`` by the server keep each
call to a few seconds on 2 cores. A 135M model answers, follows a JSON schema when the server
constrains its grammar, and rarely calls a tool on its own: the tool tests give it a context that
already holds a tool call (what the reflection call sends), or tolerate either path.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    AssistantMessage,
    CancellationToken,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    ModelClientStreamingChunkEvent,
    StructuredMessage,
    SystemMessage,
    TextMessage,
    UserMessage,
)
from nbagent.models import (
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelNotFoundError,
    ModelResponseError,
    OpenAIChatCompletionClient,
    UnreportedUsage,
)
from tests.models.chat_server import validate_context

from .conftest import require_llama
from .realservers import MODEL, Running, llama_server

pytestmark = pytest.mark.timeout(240)

ADD = {
    "name": "add",
    "description": "Add two integers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


async def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"the sum is {a + b}"


def client_for(server: Running, **kwargs: object) -> OpenAIChatCompletionClient:
    settings: dict[str, object] = {"api_key": server.api_key, "max_retries": 0, "timeout": 120.0}
    settings.update(kwargs)
    return OpenAIChatCompletionClient(MODEL, base_url=server.base_url, temperature=0, seed=7, **settings)  # type: ignore[arg-type]


@pytest.fixture
async def client(llama: Running) -> AsyncIterator[OpenAIChatCompletionClient]:
    model_client = client_for(llama)
    yield model_client
    await model_client.close()


# --------------------------------------------------------------------------- text


async def test_plain_text(client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client)
    result = await agent.run(task="What is the capital of France? Answer in one sentence.")
    answer = result.messages[-1]
    assert isinstance(answer, TextMessage) and answer.content.strip()
    call = agent.trace.llm_calls_df().iloc[0]
    assert call["prompt_tokens"] > 0 and call["completion_tokens"] > 0
    assert call["finish_reason"] in ("stop", "length")
    assert answer.models_usage is not None and not isinstance(answer.models_usage, UnreportedUsage)


async def test_streamed_text_and_usage_in_the_stream(client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, model_client_stream=True)
    items = [item async for item in agent.run_stream(task="Name three colours.")]
    chunks = [item.content for item in items if isinstance(item, ModelClientStreamingChunkEvent)]
    answer = items[-1].messages[-1]  # type: ignore[union-attr]
    assert len(chunks) > 3 and "".join(chunks) == answer.content
    call = agent.trace.llm_calls_df().iloc[0]
    assert call["ttft_s"] > 0 and call["prompt_tokens"] > 0  # llama-server sends usage when asked
    assert call["completion_tokens"] == len(chunks) or call["completion_tokens"] > 0


# --------------------------------------------------------------------------- structured output


class Capital(BaseModel):
    city: str
    country: str


@pytest.mark.parametrize("stream", [False, True])
async def test_structured_output_with_a_json_schema(llama: Running, stream: bool) -> None:
    """llama.cpp turns the JSON schema into a grammar: even a 135M model answers valid JSON."""
    client = client_for(llama, max_tokens=96)
    agent = AssistantAgent("agent", client, output_content_type=Capital, model_client_stream=stream)
    result = await agent.run(task="What is the capital of France? Give the city and the country.")
    answer = result.messages[-1]
    assert isinstance(answer, StructuredMessage) and isinstance(answer.content, Capital)
    assert answer.content.city.strip()
    await client.close()


# --------------------------------------------------------------------------- tools


def earlier_tool_turn() -> list[object]:
    return [
        UserMessage(content="What is 2 plus 3?", source="user"),
        AssistantMessage(content=[FunctionCall(id="call_1", name="add", arguments='{"a": 2, "b": 3}')], source="agent"),
        FunctionExecutionResultMessage(
            content=[FunctionExecutionResult(content="the sum is 5", name="add", call_id="call_1")]
        ),
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_the_call_after_a_tool_call(client: OpenAIChatCompletionClient, stream: bool) -> None:
    """What a reflection (and every turn after a tool call) sends: an assistant message with tool
    calls (content "") and the tool's result. llama-cpp-python's server refused null content."""
    messages = [SystemMessage(content="Answer in one sentence."), *earlier_tool_turn()]
    if stream:
        items = [item async for item in client.create_stream(messages, tools=[ADD])]  # type: ignore[arg-type]
        result = items[-1]
    else:
        result = await client.create(messages, tools=[ADD])  # type: ignore[arg-type]
    assert not isinstance(result, str)
    assert result.finish_reason in ("stop", "length", "function_calls")


async def test_a_turn_after_a_tool_call_in_the_agents_context(client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, tools=[add], reflect_on_tool_use=True, model_client_stream=True)
    for message in earlier_tool_turn():
        await agent.model_context.add_message(message)  # type: ignore[arg-type]
    result = await agent.run(task="Thanks. And what was the result?")
    assert result.messages[-1].content
    assert validate_context(agent.model_context.messages, agent.tools) == []


async def test_tool_loop_with_reflection(client: OpenAIChatCompletionClient) -> None:
    """The agent's tool loop on the real model: if it calls ``add`` (it rarely does), the tool runs
    and the reflection call answers from the result; otherwise it answers in text. Both end well."""
    agent = AssistantAgent(
        "agent",
        client,
        tools=[add],
        reflect_on_tool_use=True,
        model_client_stream=True,
        system_message="You can call the add tool to add numbers.",
    )
    result = await agent.run(task="Use the add tool: what is 2 plus 3?")
    assert isinstance(result.messages[-1], TextMessage) and result.messages[-1].content
    purposes = agent.trace.llm_calls_df()["purpose"].tolist()
    assert purposes in (["initial"], ["initial", "reflection"])
    assert validate_context(agent.model_context.messages, agent.tools) == []


# --------------------------------------------------------------------------- cancel and crash


async def test_cancel_mid_stream(client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, model_client_stream=True)
    token = CancellationToken()
    seen = 0
    with pytest.raises(asyncio.CancelledError):
        async for item in agent.run_stream(task="Write a long story about a dragon.", cancellation_token=token):
            if isinstance(item, ModelClientStreamingChunkEvent):
                seen += 1
                if seen == 3:
                    token.cancel()
    assert seen == 3 and not agent.is_running
    assert validate_context(agent.model_context.messages) == []
    # The server freed its slot: the next call is answered at once.
    after = await asyncio.wait_for(agent.run(task="Say hello."), 120)
    assert after.messages[-1].content
    assert agent.trace.runs_df()["status"].tolist() == ["cancelled", "ok"]


async def test_server_killed_mid_stream(server_logs: Path) -> None:
    require_llama()
    with llama_server(server_logs) as own:
        client = client_for(own)
        agent = AssistantAgent("agent", client, model_client_stream=True)
        seen = 0
        with pytest.raises((ModelConnectionError, ModelResponseError)) as caught:
            async for item in agent.run_stream(task="Write a long story about a dragon."):
                if isinstance(item, ModelClientStreamingChunkEvent):
                    seen += 1
                    if seen == 2:
                        own.kill()
        assert seen >= 2 and not agent.is_running
        assert "127.0.0.1" in str(caught.value)
        assert validate_context(agent.model_context.messages) == []
        with pytest.raises(ModelConnectionError):
            await agent.run(task="Anyone there?")
        await client.close()


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize("stream", [False, True])
async def test_wrong_key(llama: Running, stream: bool) -> None:
    client = client_for(llama, api_key="sk-wrong-key-0000000000")
    agent = AssistantAgent("agent", client, model_client_stream=stream)
    with pytest.raises(ModelAuthenticationError, match=r"HTTP 401: Invalid API Key$") as caught:
        await agent.run(task="hi")
    assert caught.value.status == 401 and "sk-wrong-key" not in str(caught.value)
    await client.close()


@pytest.mark.parametrize("stream", [False, True])
async def test_unknown_path(llama: Running, stream: bool) -> None:
    client = OpenAIChatCompletionClient(
        MODEL, base_url=f"http://127.0.0.1:{llama.port}/no/such/v1", api_key=llama.api_key, max_retries=0
    )
    agent = AssistantAgent("agent", client, model_client_stream=stream)
    with pytest.raises(ModelNotFoundError, match=r"HTTP 404: File Not Found$"):
        await agent.run(task="hi")
    await client.close()


@pytest.mark.parametrize("stream", [False, True])
async def test_context_overflow(client: OpenAIChatCompletionClient, stream: bool) -> None:
    agent = AssistantAgent("agent", client, model_client_stream=stream)
    with pytest.raises(ModelBadRequestError, match=r"HTTP 400: request \(\d+ tokens\) exceeds the available context"):
        await agent.run(task="word " * 5000)
    assert not agent.is_running
    # The agent stays usable once the context is cleared.
    await agent.model_context.clear()
    assert (await agent.run(task="Say hi.")).messages[-1].content


async def test_a_keyless_client_reads_the_servers_refusal(llama: Running, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    client = OpenAIChatCompletionClient(MODEL, base_url=llama.base_url, max_retries=0)
    with pytest.raises(ModelAuthenticationError, match="Invalid API Key"):
        await client.create([UserMessage(content="hi", source="user")])
    await client.close()


async def test_models_endpoint_names_the_alias(llama: Running) -> None:
    import urllib.request

    request = urllib.request.Request(f"{llama.base_url}/models", headers={"Authorization": f"Bearer {llama.api_key}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        listed = json.loads(response.read())
    assert [model["id"] for model in listed["data"]] == [MODEL]
