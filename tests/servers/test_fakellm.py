"""nbagent against fakellm (PyPI): a scripted server nobody here wrote, which streams tool calls with
their arguments split over several chunks and sends no usage in its streams."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    ModelClientStreamingChunkEvent,
    TextMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    UserMessage,
)
from nbagent.models import ModelNotFoundError, ModelServerError, OpenAIChatCompletionClient, UnreportedUsage
from tests.models.chat_server import validate_context

from .realservers import Running

pytestmark = pytest.mark.timeout(120)

REFLECTION = "2 plus 3 is 5, as the add tool says."
GREETING = "Hello from fakellm, one word per chunk."


async def add(a: int, b: int) -> str:
    """Add two integers."""
    return f"the sum is {a + b}"


@pytest.fixture
async def client(fakellm: Running) -> AsyncIterator[OpenAIChatCompletionClient]:
    model_client = OpenAIChatCompletionClient("fake-model", base_url=fakellm.base_url, api_key="", max_retries=0)
    yield model_client
    await model_client.close()


async def test_plain_text_with_usage(client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client)
    result = await agent.run(task="hello there")
    assert result.messages[-1].content == GREETING
    call = agent.trace.llm_calls_df().iloc[0]
    assert call["completion_tokens"] > 0  # a non-streamed answer carries usage


async def test_streamed_text_without_usage_is_unreported(client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, model_client_stream=True)
    items = [item async for item in agent.run_stream(task="hello there")]
    chunks = [item.content for item in items if isinstance(item, ModelClientStreamingChunkEvent)]
    assert chunks == ["Hello", " from", " fakellm,", " one", " word", " per", " chunk."]
    answer = items[-1].messages[-1]  # type: ignore[union-attr]
    assert isinstance(answer, TextMessage) and isinstance(answer.models_usage, UnreportedUsage)
    calls = agent.trace.llm_calls_df()
    assert calls["prompt_tokens"].isna().all() and calls["completion_tokens"].isna().all()
    assert calls["ttft_s"].iloc[0] > 0


@pytest.mark.parametrize("stream", [True, False])
async def test_tool_loop_with_reflection(client: OpenAIChatCompletionClient, stream: bool) -> None:
    """fakellm streams the call's arguments in four pieces: the client assembles them."""
    agent = AssistantAgent("agent", client, tools=[add], reflect_on_tool_use=True, model_client_stream=stream)
    result = await agent.run(task="What is 2 plus 3?")
    requests = [m for m in result.messages if isinstance(m, ToolCallRequestEvent)]
    executions = [m for m in result.messages if isinstance(m, ToolCallExecutionEvent)]
    assert [json.loads(c.arguments) for c in requests[0].content] == [{"a": 2, "b": 3}]
    assert [r.content for r in executions[0].content] == ["the sum is 5"]
    assert result.messages[-1].content == REFLECTION
    calls = agent.trace.llm_calls_df()
    assert calls["purpose"].tolist() == ["initial", "reflection"]
    if stream:
        # The first call streamed only tool calls: its time to first chunk is the client's (was NaN).
        assert not math.isnan(calls["ttft_s"].iloc[0]) and calls["ttft_s"].iloc[0] > 0
    assert validate_context(agent.model_context.messages, agent.tools) == []


async def test_streamed_tool_call_arguments_arrive_split(client: OpenAIChatCompletionClient) -> None:
    tool = {"name": "add", "parameters": {"type": "object", "properties": {}}}
    stream = client.create_stream([UserMessage(content="2+3", source="user")], tools=[tool])  # type: ignore[list-item]
    items = [item async for item in stream]
    assert len(items) == 1  # no text: tool calls only
    result = items[0]
    assert not isinstance(result, str) and result.finish_reason == "function_calls"
    assert json.loads(result.content[0].arguments) == {"a": 2, "b": 3}  # type: ignore[union-attr]
    assert isinstance(result.usage, UnreportedUsage)
    assert getattr(stream, "first_chunk_perf", None) is not None


async def test_a_server_error_keeps_its_words(client: OpenAIChatCompletionClient) -> None:
    with pytest.raises(ModelServerError, match="HTTP 500: mock failure for the realserver tier"):
        await client.create([UserMessage(content="please fail", source="user")])


@pytest.mark.parametrize("stream", [False, True])
async def test_unknown_path_reads_fastapis_detail(fakellm: Running, stream: bool) -> None:
    """FastAPI's ``{"detail": "Not Found"}``: was ``HTTP 404: Error code: 404``."""
    client = OpenAIChatCompletionClient(
        "m", base_url=f"http://127.0.0.1:{fakellm.port}/no/v1", api_key="", max_retries=0
    )
    agent = AssistantAgent("agent", client, model_client_stream=stream)
    with pytest.raises(ModelNotFoundError, match=r"HTTP 404: Not Found$"):
        await agent.run(task="hello")
    await client.close()


class Capital(BaseModel):
    city: str


async def test_json_schema_is_not_followed(client: OpenAIChatCompletionClient) -> None:
    """fakellm ignores response_format: what the servers table says."""
    result = await client.create([UserMessage(content="hello", source="user")], json_output=Capital)
    assert result.content == GREETING
    with pytest.raises(ValueError):
        Capital.model_validate_json(str(result.content))
