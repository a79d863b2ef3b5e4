"""The trace records each LLM call's request parameters as they were sent (issue 32, point 3).

``llm_calls_df``'s ``tool_choice`` and ``request_params`` are compared with the JSON body the real
``openai`` SDK posted to the scripted server over HTTP (tests/models/chat_server.py), overrides
through ``extra_body`` and create args included; clients that do not say what they sent keep what
they were asked for.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel

from nbagent import AssistantAgent, ReplayChatCompletionClient, StructuredMessage
from nbagent.models import ModelBadRequestError, OpenAIChatCompletionClient
from nbagent.models.base import ModelRequest
from tests.models.chat_server import ChatServer, Reply

from .test_otlp import attrs, spans_in

KEY = "sk-" + "request-params-test-5e1f0c2b9a"


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def on_the_wire(body: dict[str, Any]) -> dict[str, Any]:
    """A request body without what other columns hold (the messages, the tools' definitions)."""
    return {key: value for key, value in body.items() if key not in ("messages", "tools")}


def client_for(server: ChatServer, **create_args: Any) -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=KEY, max_retries=0, **create_args)


@pytest.mark.parametrize("stream", [False, True])
async def test_tool_choice_overridden_through_extra_body_is_recorded_as_sent(stream: bool) -> None:
    with ChatServer() as server:
        server.script(Reply.call(("add", {"a": 2, "b": 3})))
        client = client_for(
            server, temperature=0, seed=7, parallel_tool_calls=False, extra_body={"tool_choice": "required", "top_k": 5}
        )
        agent = AssistantAgent("calc", client, tools=[add], model_client_stream=stream)
        await agent.run(task="2+3?")
        sent = server.requests[0].body
        await client.close()
    assert sent["tool_choice"] == "required" and sent["top_k"] == 5  # the SDK merged extra_body in
    row = agent.trace.llm_calls_df().iloc[0]
    assert row["tool_choice"] == "required"  # the agent asked for "auto": the wire says otherwise
    assert row["request_params"] == on_the_wire(sent)
    assert row["request_params"].get("stream", False) is stream
    assert (row["request_params"]["temperature"], row["request_params"]["seed"]) == (0, 7)
    assert row["request_params"]["parallel_tool_calls"] is False


async def test_a_tool_forced_by_name_and_a_call_without_tools() -> None:
    with ChatServer() as server:
        server.script(Reply.call(("add", {"a": 1, "b": 2})), Reply.text("It is 3."))
        forced = {"type": "function", "function": {"name": "add"}}
        client = client_for(server, extra_body={"tool_choice": forced})
        agent = AssistantAgent("calc", client, tools=[add], reflect_on_tool_use=True)
        # The reflection offers no tools, so the extra_body's tool_choice is sent alone: the server refuses
        # that (tool_choice without tools); the first call is what matters here.
        with pytest.raises(ModelBadRequestError, match="tool_choice"):
            await agent.run(task="1+2?")
        bodies = [received.body for received in server.requests]
        await client.close()
    calls = agent.trace.llm_calls_df()
    assert calls["tool_choice"].tolist() == ["add", "add"]
    assert calls["request_params"].tolist() == [on_the_wire(body) for body in bodies]
    assert "tools" in bodies[0] and "tools" not in bodies[1]


async def test_create_args_tool_choice_gives_way_to_the_calls_and_the_trace_says_so() -> None:
    """As in AutoGen's client, a tool_choice among the create args is replaced by the call's when tools
    are offered (sent "auto"), and sent as it is when none are (the reflection: the server refuses it)."""
    with ChatServer() as server:
        server.script(Reply.call(("add", {"a": 2, "b": 2})), Reply.text("4"))
        client = client_for(server, tool_choice="required")
        agent = AssistantAgent("calc", client, tools=[add], reflect_on_tool_use=True)
        with pytest.raises(ModelBadRequestError, match="'tool_choice' is only allowed when 'tools' are specified"):
            await agent.run(task="2+2?")
        bodies = [received.body for received in server.requests]
        await client.close()
    calls = agent.trace.llm_calls_df()
    assert [body.get("tool_choice") for body in bodies] == ["auto", "required"]
    assert calls["tool_choice"].astype("object").tolist() == ["auto", "required"]
    assert calls["request_params"].tolist() == [on_the_wire(body) for body in bodies]


class Sum(BaseModel):
    total: int


async def test_structured_output_parameters_and_their_otlp_attributes() -> None:
    with ChatServer() as server:
        server.script(Reply.text('{"total": 5}'))
        client = client_for(server, temperature=0.5, max_completion_tokens=64, stop="END", n=1, seed=3)
        agent = AssistantAgent("calc", client, output_content_type=Sum)
        result = await agent.run(task="2+3?")
        sent = server.requests[0].body
        await client.close()
    assert isinstance(result.messages[-1], StructuredMessage)
    row = agent.trace.llm_calls_df().iloc[0]
    assert row["request_params"] == on_the_wire(sent)
    assert row["request_params"]["response_format"]["type"] == "json_schema"
    assert pd_isna(row["tool_choice"])  # no tools: none was sent
    chat = attrs(spans_in(agent.trace.to_otlp_json())[1])
    assert chat["gen_ai.request.temperature"] in (0.5, {"doubleValue": 0.5})
    assert (chat["gen_ai.request.max_tokens"], chat["gen_ai.request.seed"]) == (64, 3)
    assert chat["gen_ai.request.stop_sequences"] == ["END"] and chat["gen_ai.output.type"] == "json"
    assert "gen_ai.request.choice.count" not in chat  # set only when it is not 1


async def test_secrets_in_the_parameters_do_not_reach_the_trace() -> None:
    with ChatServer() as server:
        server.script(Reply.text("ok"))
        client = client_for(
            server,
            extra_headers={"X-Api-Key": KEY},
            extra_body={"metadata": {"note": f"key {KEY}", "service_token": "tok-123456789"}},
        )
        agent = AssistantAgent("a", client)
        await agent.run(task="hi")
        sent = server.requests[0].body
        await client.close()
    assert sent["metadata"]["service_token"] == "tok-123456789"
    params = agent.trace.llm_calls_df().iloc[0]["request_params"]
    assert params["metadata"] == {"note": "key [REDACTED]", "service_token": "[REDACTED]"}
    assert "extra_headers" not in params and "X-Api-Key" not in json.dumps(params)
    assert KEY not in agent.trace.to_otlp_json(content=True)


async def test_a_client_that_does_not_say_keeps_what_it_was_asked() -> None:
    agent = AssistantAgent("calc", ReplayChatCompletionClient(["4"]), tools=[add], reflect_on_tool_use=True)
    await agent.run(task="2+2?")
    row = agent.trace.llm_calls_df().iloc[0]
    assert row["tool_choice"] == "auto" and row["request_params"] == {"tool_choice": "auto"}


def test_request_parameters_is_the_body_without_messages_and_tools() -> None:
    client = OpenAIChatCompletionClient("gpt-4o", api_key=KEY, temperature=0.1, extra_body={"top_k": 2})
    request = ModelRequest([], [{"name": "add", "parameters": {"type": "object"}}], "required", None)
    params = client.request_parameters(request, stream=True)
    assert params == {
        "model": "gpt-4o",
        "temperature": 0.1,
        "tool_choice": "required",
        "stream": True,
        "stream_options": {"include_usage": True},
        "top_k": 2,
    }
    with pytest.raises(ValueError, match="tool_choice 'nope'"):
        client.request_parameters(ModelRequest([], request.tools, "nope", None))  # type: ignore[arg-type]


def pd_isna(value: Any) -> bool:
    import pandas as pd

    return bool(pd.isna(value))
