"""Issue 18, point 1: what real OpenAI-compatible servers do that broke nbagent, reproduced in the
project's scripted server (their exact error bodies, their refusal of null content, their
usage-less streams, their in-stream errors), each with the fix it needs."""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from nbagent import AssistantAgent, CreateResult, RequestUsage, UserMessage
from nbagent.models import (
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelServerError,
    ModelStream,
    OpenAIChatCompletionClient,
    UnreportedUsage,
    default_model,
)
from nbagent.models.openai import KeyFromEnvironmentWarning, server_words

from .chat_server import (
    EXPRESS_ERROR,
    FASTAPI_DETAIL,
    FASTAPI_VALIDATION,
    LITELLM_NO_KEY,
    LITELLM_UNKNOWN_KEY,
    LLAMA_CPP_PYTHON_NULL_CONTENT,
    LLAMA_CPP_PYTHON_WRONG_KEY,
    LLAMA_SERVER_WRONG_KEY,
    ChatServer,
    ErrorAnswer,
    Reply,
)
from .conftest import TEST_KEY

USER = UserMessage(content="What is 2+3?", source="user")
ADD = {
    "name": "add",
    "description": "Add two numbers.",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
}


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def call(client: OpenAIChatCompletionClient, stream: bool, **kwargs: Any) -> CreateResult:
    if not stream:
        return await client.create([USER], **kwargs)
    items = [item async for item in client.create_stream([USER], **kwargs)]
    assert isinstance(items[-1], CreateResult)
    return items[-1]


def litellm() -> ChatServer:
    """LiteLLM's proxy with a master key and no database, as it answers about keys."""
    return ChatServer(api_key="sk-master-0123456789", wrong_key=LITELLM_UNKNOWN_KEY, missing_key=LITELLM_NO_KEY)


@pytest.fixture
def no_env_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in ("OPENAI_API_KEY", "NBAGENT_API_KEY", "NBAGENT_BASE_URL", "NBAGENT_MODEL"):
        monkeypatch.delenv(name, raising=False)
    yield


# --------------------------------------------------------------------------- the server's words


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("answer", "kind", "words"),
    [
        (FASTAPI_DETAIL, ModelAuthenticationError, "HTTP 401: Invalid API key"),
        (FASTAPI_VALIDATION, ModelBadRequestError, "HTTP 422: body.messages: Field required"),
        (EXPRESS_ERROR, ModelServerError, "HTTP 500: TypeError: Cannot read properties of undefined (reading 'map')"),
        ((503, "upstream unavailable\n"), ModelServerError, "HTTP 503: upstream unavailable"),
        (LLAMA_SERVER_WRONG_KEY, ModelAuthenticationError, "HTTP 401: Invalid API Key"),
    ],
)
async def test_error_bodies_of_any_shape_keep_the_servers_words(
    server: ChatServer,
    client: OpenAIChatCompletionClient,
    stream: bool,
    answer: ErrorAnswer,
    kind: type[ModelError],
    words: str,
) -> None:
    """Was ``HTTP 401: Error code: 401`` for a body not shaped like OpenAI's."""
    status, body = answer
    server.script(Reply.error(status, "unused", error_body=body))
    with pytest.raises(kind) as caught:
        await call(client, stream)
    assert str(caught.value).endswith(words)
    assert caught.value.status == status


@pytest.mark.parametrize("stream", [False, True])
async def test_llama_cpp_python_wrong_key_names_the_reason(stream: bool, no_env_key: None) -> None:
    with ChatServer(api_key=TEST_KEY, wrong_key=LLAMA_CPP_PYTHON_WRONG_KEY) as server:
        client = OpenAIChatCompletionClient("m", base_url=server.base_url, api_key="sk-wrong-00000000", max_retries=0)
        with pytest.raises(ModelAuthenticationError, match=r"HTTP 401: Invalid API key$"):
            await call(client, stream)
        await client.close()


def test_server_words_reads_nested_and_plain_shapes() -> None:
    class Fake:
        def __init__(self, body: Any) -> None:
            self.body = body

    assert server_words(Fake({"message": "m", "code": 3})) == "m"
    assert server_words(Fake({"error": {"detail": "d"}})) == "d"
    assert server_words(Fake({"error": "NotFound"})) == "NotFound"
    assert server_words(Fake({"unrelated": 1})) is None
    assert server_words(Fake("x" * 600)) == "x" * 500 + "..."


# --------------------------------------------------------------------------- null content


async def test_tool_call_messages_carry_empty_content_for_llama_cpp_python(no_env_key: None) -> None:
    """llama-cpp-python 0.3.x's server answers 500 to ``"content": null`` (after two retries): every
    reflect_on_tool_use run and every turn after a tool call failed there."""
    with ChatServer(null_content=LLAMA_CPP_PYTHON_NULL_CONTENT) as server:
        client = OpenAIChatCompletionClient("m", base_url=server.base_url, max_retries=0)
        agent = AssistantAgent("agent", client, tools=[add], reflect_on_tool_use=True)
        server.script(Reply.call(("add", {"a": 2, "b": 3})), Reply.text("It is 5."), Reply.text("Bye."))
        assert (await agent.run(task="2+3?")).messages[-1].content == "It is 5."
        assert (await agent.run(task="thanks")).messages[-1].content == "Bye."
        assistant = server.requests[1].body["messages"][2]
        assert assistant["role"] == "assistant" and assistant["content"] == "" and assistant["tool_calls"]
        assert [r.status for r in server.requests] == [200, 200, 200]
        await client.close()


async def test_the_scripted_server_refuses_null_content_like_llama_cpp_python(no_env_key: None) -> None:
    """The reproduction itself: null content gets llama-cpp-python's 500 and its words."""
    import openai

    with ChatServer(null_content=LLAMA_CPP_PYTHON_NULL_CONTENT) as server:
        raw = openai.AsyncOpenAI(api_key="x", base_url=server.base_url, max_retries=0)
        call_json = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": "{}"}}
        messages: list[Any] = [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call_json]},
            {"role": "tool", "tool_call_id": "c1", "content": "5"},
        ]
        with pytest.raises(openai.InternalServerError, match="can only concatenate str"):
            await raw.chat.completions.create(model="m", messages=messages)
        await raw.close()


# --------------------------------------------------------------------------- usage-less streams


async def test_a_stream_without_usage_is_unreported_not_zero(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(Reply.text("Hi there", stream_usage=False), Reply.text("Hi there", usage=(0, 0)))
    unreported = await call(client, True)
    assert isinstance(unreported.usage, UnreportedUsage)
    assert unreported.usage.prompt_tokens == 0 and unreported.usage.completion_tokens == 0
    measured = await call(client, True)
    assert not isinstance(measured.usage, UnreportedUsage) and measured.usage == RequestUsage()
    assert client.total_usage() == RequestUsage()  # counted as 0 in sums


async def test_trace_shows_unreported_usage_as_missing(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient("m", base_url=server.base_url, api_key=TEST_KEY, max_retries=0)
    agent = AssistantAgent("agent", client, model_client_stream=True)
    server.script(Reply.text("Hi", stream_usage=False), Reply.text("Hi", usage=(7, 2)))
    await agent.run(task="a")
    await agent.run(task="b")
    calls = agent.trace.llm_calls_df()
    assert calls["prompt_tokens"].isna().tolist() == [True, False]
    assert calls["completion_tokens"].tolist()[1] == 2
    await client.close()


# --------------------------------------------------------------------------- TTFT of tool-call streams


async def test_time_to_first_chunk_of_a_tool_call_stream(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(Reply.call(("add", {"a": 2, "b": 3}), chunk_delay=0.01))
    stream = client.create_stream([USER], tools=[ADD])
    assert isinstance(stream, ModelStream)
    items = [item async for item in stream]
    assert len(items) == 1 and isinstance(items[0], CreateResult)
    assert stream.first_chunk_perf is not None
    assert client.last_time_to_first_token is not None and client.last_time_to_first_token > 0


async def test_trace_ttft_of_a_tool_call_stream(server: ChatServer) -> None:
    """Was NaN in llm_calls_df (so no gen_ai.response.time_to_first_chunk) for calls streaming only tool calls."""
    client = OpenAIChatCompletionClient("m", base_url=server.base_url, api_key=TEST_KEY, max_retries=0)
    agent = AssistantAgent("agent", client, tools=[add], model_client_stream=True)
    server.script(Reply.call(("add", {"a": 2, "b": 3}), chunk_delay=0.005))
    await agent.run(task="2+3?")
    ttft = agent.trace.llm_calls_df()["ttft_s"].tolist()
    assert len(ttft) == 1 and not math.isnan(ttft[0]) and ttft[0] > 0
    await client.close()


# --------------------------------------------------------------------------- errors inside a 200 stream


@pytest.mark.parametrize(
    ("error", "kind", "status"),
    [
        ({"message": "Incorrect API key provided", "code": "invalid_api_key"}, ModelAuthenticationError, None),
        ({"message": "The model `x` does not exist", "code": "model_not_found"}, ModelNotFoundError, None),
        ({"message": "Rate limit reached", "code": "rate_limit_exceeded"}, ModelRateLimitError, None),
        ({"message": "Too long", "code": "context_length_exceeded"}, ModelBadRequestError, None),
        # llama.cpp's server: a numeric code and a type
        ({"code": 500, "message": "failed to decode", "type": "server_error"}, ModelServerError, 500),
        # LiteLLM: the HTTP status as a string code
        ({"message": "litellm.RateLimitError", "type": None, "param": None, "code": "429"}, ModelRateLimitError, 429),
        ({"message": "overloaded", "type": "overloaded_error"}, ModelServerError, None),
        ({"message": "something odd", "code": "weird_code"}, ModelError, None),
    ],
)
async def test_errors_inside_a_stream_keep_their_code(
    server: ChatServer,
    client: OpenAIChatCompletionClient,
    error: dict[str, Any],
    kind: type[ModelError],
    status: int | None,
) -> None:
    server.script(Reply.text("partial answer", error_event_at=2, error_event=error))
    with pytest.raises(ModelError) as caught:
        await call(client, True)
    assert type(caught.value) is kind
    assert caught.value.status == status
    assert error["message"] in str(caught.value)
    label = error.get("code") or error.get("type")
    assert f"({label})" in str(caught.value)


# --------------------------------------------------------------------------- keys


async def test_no_key_sends_no_authorization_header(no_env_key: None) -> None:
    """Was ``Bearer no-key``: LiteLLM then answered 400 "No connected db." instead of its 401."""
    with ChatServer(
        api_key="sk-master-0123456789", wrong_key=LITELLM_UNKNOWN_KEY, missing_key=LITELLM_NO_KEY
    ) as server:
        client = OpenAIChatCompletionClient("m", base_url=server.base_url, max_retries=0)
        for stream in (False, True):
            with pytest.raises(ModelAuthenticationError, match="HTTP 401: Authentication Error, No api key passed in"):
                await call(client, stream)
        assert [request.headers.get("authorization") for request in server.requests] == [None, None]
        assert client.secrets == ()
        await client.close()


async def test_a_wrong_key_on_litellm_reads_as_its_answer(no_env_key: None) -> None:
    with ChatServer(
        api_key="sk-master-0123456789", wrong_key=LITELLM_UNKNOWN_KEY, missing_key=LITELLM_NO_KEY
    ) as server:
        client = OpenAIChatCompletionClient("m", base_url=server.base_url, api_key="sk-other-000000", max_retries=0)
        with pytest.raises(ModelBadRequestError, match="HTTP 400: Authentication Error, No connected db."):
            await call(client, False)
        await client.close()


async def test_custom_authorization_header_is_kept_without_a_key(server: ChatServer, no_env_key: None) -> None:
    client = OpenAIChatCompletionClient(
        "m", base_url=server.base_url, default_headers={"Authorization": "Basic dXNlcjpwYXNzd29yZDE="}, max_retries=0
    )
    server.script(Reply.text("ok"))
    await call(client, False)
    assert server.requests[0].headers["authorization"] == "Basic dXNlcjpwYXNzd29yZDE="
    await client.close()


async def test_environment_key_to_another_server_is_said(server: ChatServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """``OPENAI_API_KEY`` went to a base_url of another provider without a word."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-1234567890")
    with pytest.warns(KeyFromEnvironmentWarning, match=r"OPENAI_API_KEY from the environment is sent to http://127"):
        loud = OpenAIChatCompletionClient("m", base_url=server.base_url, max_retries=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        quiet = OpenAIChatCompletionClient("m", base_url=server.base_url, api_key="", max_retries=0)
        OpenAIChatCompletionClient("gpt-4o", base_url="https://api.openai.com/v1")
        OpenAIChatCompletionClient("gpt-4o")
    server.script(Reply.text("a"), Reply.text("b"))
    await call(loud, False)
    await call(quiet, False)
    assert [r.headers.get("authorization") for r in server.requests] == ["Bearer sk-from-env-1234567890", None]
    await loud.close()
    await quiet.close()


async def test_default_model_never_sends_openais_key_to_the_configured_server(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch, no_env_key: None
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-1234567890")
    monkeypatch.setenv("NBAGENT_BASE_URL", server.base_url)
    monkeypatch.setenv("NBAGENT_MODEL", "local")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        local = default_model()
    server.script(Reply.text("a"), Reply.text("b"))
    await local.create([USER])
    monkeypatch.setenv("NBAGENT_API_KEY", "sk-local-0000000000")
    keyed = default_model()
    await keyed.create([USER])
    assert [r.headers.get("authorization") for r in server.requests] == [None, "Bearer sk-local-0000000000"]
    await local.close()
    await keyed.close()
