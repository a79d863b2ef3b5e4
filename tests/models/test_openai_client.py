"""OpenAIChatCompletionClient through the real openai SDK, over HTTP, against the scripted server."""

from __future__ import annotations

import asyncio
import pickle
import platform
import shutil
import ssl
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantMessage,
    CancellationToken,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    Handoff,
    Image,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from nbagent.models import (
    ModelAuthenticationError,
    ModelBadRequestError,
    ModelConnectionError,
    ModelError,
    ModelNotFoundError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    OpenAIChatCompletionClient,
)
from nbagent.models.openai import UNKNOWN_MODEL_INFO, KeyFromEnvironmentWarning, model_info_for, split_think

from .chat_server import ChatServer, Reply, validate_context, validate_request
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
MUL = {"name": "mul", "parameters": {"type": "object", "properties": {}}}


async def collect(client: OpenAIChatCompletionClient, messages: list, **kwargs: object) -> list[str | CreateResult]:
    return [item async for item in client.create_stream(messages, **kwargs)]


def final(items: list[str | CreateResult]) -> CreateResult:
    """The last streamed item, which must be the result."""
    assert isinstance(items[-1], CreateResult)
    return items[-1]


# --------------------------------------------------------------------------- requests


async def test_messages_are_converted_role_by_role(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    server.script(Reply.text("5"))
    calls = [
        FunctionCall(id="c1", name="add", arguments='{"a": 2, "b": 3}'),
        FunctionCall(id="c2", name="mul", arguments="{}"),
    ]
    history = [
        SystemMessage(content="Be brief."),
        USER,
        AssistantMessage(content=calls, source="agent", thought="I will add"),
        FunctionExecutionResultMessage(
            content=[
                FunctionExecutionResult(content="5", name="add", call_id="c1"),
                FunctionExecutionResult(content="boom", name="mul", call_id="c2", is_error=True),
            ]
        ),
        AssistantMessage(content="It is 5.", source="agent"),
        UserMessage(content=["line one", "line two"], source="user"),
    ]
    result = await client.create(history, tools=[ADD, MUL])
    assert result == CreateResult(
        finish_reason="stop",
        content="5",
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
        response_model="gpt-4o",  # what the server says answered, and its id for the answer
        response_id="chatcmpl-test",
    )
    body = server.requests[0].body
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "What is 2+3?"},
        {
            "role": "assistant",
            "content": "",  # not null: llama-cpp-python's server refuses null (issue 18)
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
                {"id": "c2", "type": "function", "function": {"name": "mul", "arguments": "{}"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "5"},
        {"role": "tool", "tool_call_id": "c2", "content": "boom"},
        {"role": "assistant", "content": "It is 5."},
        {"role": "user", "content": "line one\nline two"},
    ]
    assert body["model"] == "gpt-4o" and "stream" not in body
    assert client.total_usage() == RequestUsage(prompt_tokens=10, completion_tokens=5)
    assert client.actual_usage() == RequestUsage(prompt_tokens=10, completion_tokens=5)


async def test_tools_handoffs_tool_choice_and_parallel_flag_are_passed(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, parallel_tool_calls=False)
    handoff = Handoff(target="planner")
    server.script(Reply.text("a"), Reply.text("b"), Reply.text("c"))
    await client.create([USER], tools=[ADD, handoff.schema])
    await client.create([USER], tools=[ADD], tool_choice="add")
    await client.create([USER], tools=[], tool_choice="none")
    first, second, third = (request.body for request in server.requests)
    assert first["tools"] == [
        {"type": "function", "function": ADD},
        {
            "type": "function",
            "function": {
                "name": "transfer_to_planner",
                "description": "Handoff to planner.",
                # AutoGen's handoff tool, on the wire as AutoGen's client sends it (issue 40.4)
                "parameters": {"type": "object", "properties": {}, "required": [], "additionalProperties": False},
                "strict": True,
            },
        },
    ]
    assert first["tool_choice"] == "auto" and first["parallel_tool_calls"] is False
    assert second["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert "tools" not in third and "tool_choice" not in third and "parallel_tool_calls" not in third
    with pytest.raises(ValueError, match="tool_choice 'sub' is neither"):
        await client.create([USER], tools=[ADD], tool_choice="sub")
    await client.close()


async def test_images_are_sent_to_vision_models_and_refused_otherwise(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    image = Image.from_bytes(b"\x89PNG fake", "image/png")
    server.script(Reply.text("a cat"))
    await client.create([UserMessage(content=["What is this?", image], source="user")])
    assert server.requests[0].body["messages"][0]["content"] == [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": image.data_uri}},
    ]
    blind = OpenAIChatCompletionClient("llama3.1", base_url=server.base_url)
    with pytest.raises(ValueError, match="no vision"):
        await blind.create([UserMessage(content=["What is this?", image], source="user")])
    assert len(server.requests) == 1
    await blind.close()


async def test_extra_create_args_are_sent(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, temperature=0.0, seed=7)
    server.script(Reply.text("ok"))
    await client.create([USER], extra_create_args={"max_tokens": 12})
    body = server.requests[0].body
    assert (body["temperature"], body["seed"], body["max_tokens"]) == (0.0, 7, 12)
    await client.close()


# --------------------------------------------------------------------------- answers


async def test_tool_calls_without_stream(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    server.script(Reply.call(("add", {"a": 2, "b": 3}), ("mul", "not json"), call_ids=("id-a", "id-m")))
    result = await client.create([USER], tools=[ADD, MUL])
    assert result.finish_reason == "function_calls"
    assert result.content == [
        FunctionCall(id="id-a", name="add", arguments='{"a": 2, "b": 3}'),
        FunctionCall(id="id-m", name="mul", arguments="not json"),
    ]


async def test_stream_yields_text_pieces_then_the_result_with_usage(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(Reply.text("Hello there, world", pieces=5, usage=(21, 4)))
    items = await collect(client, [USER])
    assert items[:-1] == ["Hello", " ther", "e, wo", "rld"]
    assert items[-1] == CreateResult(
        finish_reason="stop",
        content="Hello there, world",
        usage=RequestUsage(prompt_tokens=21, completion_tokens=4),
        response_model="gpt-4o",
        response_id="chatcmpl-test",
    )
    assert server.requests[0].body["stream"] is True
    assert server.requests[0].body["stream_options"] == {"include_usage": True}
    assert client.last_time_to_first_token is not None and client.last_time_to_first_token > 0
    assert client.total_usage() == RequestUsage(prompt_tokens=21, completion_tokens=4)


async def test_stream_assembles_interleaved_split_tool_calls(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(Reply.call(("add", {"a": 20, "b": 30}), ("mul", {"x": "long argument"}), pieces=3, interleave=True))
    items = await collect(client, [USER], tools=[ADD, MUL])
    assert items == [
        CreateResult(
            finish_reason="function_calls",
            content=[
                FunctionCall(id="call_0", name="add", arguments='{"a": 20, "b": 30}'),
                FunctionCall(id="call_1", name="mul", arguments='{"x": "long argument"}'),
            ],
            usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
            response_model="gpt-4o",
            response_id="chatcmpl-test",
        )
    ]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
@pytest.mark.parametrize("stream", [False, True])
async def test_reasoning_fields_become_the_thought(
    server: ChatServer, client: OpenAIChatCompletionClient, field: str, stream: bool
) -> None:
    server.script(Reply.text("5", reasoning="2 plus 3 is 5", reasoning_field=field))
    if stream:
        items = await collect(client, [USER])
        assert "".join(items[:-1]) == "<think>2 plus 3 is 5</think>5"  # AutoGen's client streams it so
        result = items[-1]
    else:
        result = await client.create([USER])
    assert isinstance(result, CreateResult)
    assert (result.content, result.thought) == ("5", "2 plus 3 is 5")


@pytest.mark.parametrize("pieces", [1, 3, 100])
async def test_think_block_at_the_start_becomes_the_thought_when_streamed(
    server: ChatServer, client: OpenAIChatCompletionClient, pieces: int
) -> None:
    server.script(Reply.text("<think>add them</think>\nThe answer is 5.", pieces=pieces))
    items = await collect(client, [USER])
    # streamed as it comes (AutoGen's client), the block taken out of the result's text
    assert "".join(item for item in items if isinstance(item, str)) == "<think>add them</think>\nThe answer is 5."
    assert (final(items).content, final(items).thought) == ("The answer is 5.", "add them")


async def test_think_block_without_stream_and_text_that_only_looks_like_one(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(Reply.text("<think>hmm</think>Five."), Reply.text("<thin ice> is not a tag", pieces=2))
    result = await client.create([USER])
    assert (result.content, result.thought) == ("Five.", "hmm")
    items = await collect(client, [USER])
    assert "".join(i for i in items if isinstance(i, str)) == "<thin ice> is not a tag"
    assert final(items).thought is None
    assert split_think("<think>cut short") == ("cut short", "")


async def test_text_next_to_tool_calls_becomes_the_thought(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(Reply.call(("add", {"a": 1, "b": 1}), content="Let me add."))
    items = await collect(client, [USER], tools=[ADD])
    assert items[:-1] == ["Let ", "me a", "dd."]
    assert final(items).thought == "Let me add." and final(items).finish_reason == "function_calls"


class Answer(BaseModel):
    value: int
    unit: str = "none"


async def test_structured_output_sends_a_strict_json_schema_and_returns_its_json(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(Reply.text('{"value": 5, "unit": "apples"}'))
    result = await client.create([USER], json_output=Answer)
    assert Answer.model_validate_json(result.content) == Answer(value=5, unit="apples")
    fmt = server.requests[0].body["response_format"]
    assert (
        fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "Answer" and fmt["json_schema"]["strict"] is True
    )
    assert fmt["json_schema"]["schema"]["required"] == ["value", "unit"]
    assert fmt["json_schema"]["schema"]["additionalProperties"] is False
    server.script(Reply.text("{}"))
    await client.create([USER], json_output=True)
    assert server.requests[1].body["response_format"] == {"type": "json_object"}
    legacy = OpenAIChatCompletionClient("gpt-3.5-turbo", base_url=server.base_url, api_key=TEST_KEY)
    with pytest.raises(ValueError, match="no structured output"):
        await legacy.create([USER], json_output=Answer)
    await legacy.close()


def test_model_info_table_prefixes_and_overrides() -> None:
    assert model_info_for("gpt-4o-2024-08-06")["family"] == "gpt-4o"
    assert model_info_for("gpt-4o-mini")["vision"] is True
    assert model_info_for("gpt-3.5-turbo-0125")["structured_output"] is False
    assert model_info_for("qwen2.5:7b") == UNKNOWN_MODEL_INFO
    client = OpenAIChatCompletionClient(
        "qwen2.5:7b", base_url="http://127.0.0.1:9/v1", model_info={"vision": True, "family": "qwen"}
    )
    assert client.model_info == {
        "vision": True,
        "function_calling": True,
        "json_output": True,
        "structured_output": True,
        "family": "qwen",
    }
    assert client.model_name == "qwen2.5:7b"


# --------------------------------------------------------------------------- errors


async def test_wrong_key_is_401_naming_the_server_message_without_the_key() -> None:
    with ChatServer(api_key="sk-right-key-000000000") as server:
        client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY)
        with pytest.raises(ModelAuthenticationError) as caught:
            await client.create([USER])
        assert caught.value.status == 401 and caught.value.model == "gpt-4o"
        assert str(caught.value) == f"gpt-4o at {server.base_url}/: HTTP 401: Incorrect API key provided."
        assert server.requests[0].headers["authorization"] == f"Bearer {TEST_KEY}"
        await client.close()


async def test_key_never_in_repr_pickle_or_echoed_errors(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    assert repr(client) == f"OpenAIChatCompletionClient(model='gpt-4o', base_url='{server.base_url}/')"
    with pytest.raises(TypeError, match="not picklable"):
        pickle.dumps(client)
    server.script(
        Reply.error(
            400, f"bad key {TEST_KEY}; header was Bearer " + "abcdef123456; other sk-" + "proj-ABCDEFGHIJKLMNOP"
        )
    )
    with pytest.raises(ModelBadRequestError) as caught:
        await client.create([USER])
    assert str(caught.value).endswith("HTTP 400: bad key [REDACTED]; header was [REDACTED]; other [REDACTED]")


async def test_404_model_not_found(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    server.script(Reply.error(404, "The model `gpt-9` does not exist or you do not have access to it."))
    with pytest.raises(ModelNotFoundError, match=r"HTTP 404: The model `gpt-9` does not exist") as caught:
        await client.create([USER])
    assert caught.value.status == 404


async def test_429_is_retried_then_succeeds_or_raises_after_the_retries(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=2)
    slow_down = Reply.error(429, "Rate limit reached for gpt-4o.", headers={"retry-after-ms": "1"})
    server.script(slow_down, Reply.text("finally"))
    assert (await client.create([USER])).content == "finally"
    assert [r.status for r in server.requests] == [429, 200]
    server.script(slow_down, slow_down, slow_down)
    with pytest.raises(ModelRateLimitError, match=r"HTTP 429: Rate limit reached for gpt-4o\.") as caught:
        await client.create([USER])
    assert caught.value.status == 429
    assert [r.status for r in server.requests] == [429, 200, 429, 429, 429]
    await client.close()


@pytest.mark.parametrize("stream", [False, True])
async def test_500_is_a_server_error(server: ChatServer, client: OpenAIChatCompletionClient, stream: bool) -> None:
    server.script(Reply.error(500, "The server had an error while processing your request."))
    with pytest.raises(ModelServerError, match=r"HTTP 500: The server had an error") as caught:
        await (collect(client, [USER]) if stream else client.create([USER]))
    assert caught.value.status == 500


async def test_invalid_context_is_rejected_by_the_validator_with_its_message(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    dangling = AssistantMessage(content=[FunctionCall(id="c9", name="add", arguments="{}")], source="agent")
    with pytest.raises(
        ModelBadRequestError, match=r"HTTP 400: .*responding to each 'tool_call_id'; not answered: \['c9'\]"
    ):
        await client.create([USER, dangling])


@pytest.mark.parametrize("stream", [False, True])
async def test_timeout(server: ChatServer, stream: bool) -> None:
    client = OpenAIChatCompletionClient(
        "gpt-4o", base_url=server.base_url, api_key=TEST_KEY, timeout=0.2, max_retries=0
    )
    server.script(Reply.text("late", delay=1.0))
    with pytest.raises(ModelTimeoutError, match=r"no answer within the timeout \(0.2 s\)"):
        await (collect(client, [USER]) if stream else client.create([USER]))
    await client.close()


async def test_timeout_between_chunks(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient(
        "gpt-4o", base_url=server.base_url, api_key=TEST_KEY, timeout=0.2, max_retries=0
    )
    server.script(Reply.text("slow stream", chunk_delay=1.0))
    with pytest.raises(ModelTimeoutError):
        await collect(client, [USER])
    await client.close()


async def test_connection_reset_mid_stream(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    server.script(Reply.text("Hello there, world", cut_after=3, cut="reset"))
    seen: list[str | CreateResult] = []
    with pytest.raises(ModelConnectionError, match="connection failed or broke"):
        async for item in client.create_stream([USER]):
            seen.append(item)
    assert seen == ["Hell", "o th"]


async def test_stream_ending_without_finish_reason(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    server.script(Reply.text("Hello there", cut_after=2, cut="close"))
    with pytest.raises(ModelResponseError, match=r"the stream ended before the model finished \(no finish_reason\)"):
        await collect(client, [USER])


async def test_malformed_sse_line(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    server.script(Reply.text("Hello", malformed_at=2))
    with pytest.raises(ModelResponseError, match=r"malformed JSON in the response: .*'\{\"choices\"") as caught:
        await collect(client, [USER])
    assert caught.value.status is None


@pytest.mark.parametrize("stream", [False, True])
async def test_empty_choices(server: ChatServer, client: OpenAIChatCompletionClient, stream: bool) -> None:
    server.script(Reply.text("x", empty_choices=True))
    message = "the stream ended without any choice" if stream else "the response has no choices"
    with pytest.raises(ModelResponseError, match=message):
        await (collect(client, [USER]) if stream else client.create([USER]))


async def test_server_error_event_inside_the_stream(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    server.script(Reply.text("Hi", error_event_at=1, error_message="overloaded, try later"))
    with pytest.raises(ModelError) as caught:
        await collect(client, [USER])
    assert type(caught.value) is ModelError
    assert str(caught.value) == f"gpt-4o at {server.base_url}/: the server reported an error: overloaded, try later"


# --------------------------------------------------------------------------- cancellation and keys


@pytest.mark.parametrize("stream", [False, True])
async def test_cancellation_token_interrupts_the_wait(
    server: ChatServer, client: OpenAIChatCompletionClient, stream: bool
) -> None:
    server.script(Reply.text("late", delay=30.0) if not stream else Reply.text("slow stream", chunk_delay=30.0))
    token = CancellationToken()
    asyncio.get_running_loop().call_later(0.2, token.cancel)
    with pytest.raises(asyncio.CancelledError):
        await (
            collect(client, [USER], cancellation_token=token)
            if stream
            else client.create([USER], cancellation_token=token)
        )


async def test_key_from_environment_and_keyless_local_server(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-1234567890")
    server.script(Reply.text("a"), Reply.text("b"))
    # The warning is this test's own (the key goes to a server that is not OpenAI's): caught, not reported.
    with pytest.warns(KeyFromEnvironmentWarning, match="OPENAI_API_KEY from the environment is sent to http://127"):
        env_client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url)
    await env_client.create([USER])
    assert server.requests[0].headers["authorization"] == "Bearer sk-from-env-1234567890"
    monkeypatch.delenv("OPENAI_API_KEY")
    local = OpenAIChatCompletionClient("llama3.1", base_url=server.base_url)
    assert (await local.create([USER])).content == "b"
    with pytest.raises(ValueError, match="no API key"):
        OpenAIChatCompletionClient("gpt-4o")
    await env_client.close()
    await local.close()


def test_validator_rules() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}
    ok = {
        "model": "m",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "r"},
        ],
    }
    assert validate_request(ok) == []
    assert validate_request({"model": "m", "messages": [{"role": "robot", "content": "x"}]}) == [
        "messages[0]: invalid role 'robot'"
    ]
    assert validate_request({"model": "m", "messages": [{"role": "tool", "tool_call_id": "zz", "content": "r"}]}) == [
        "messages[0]: messages with role 'tool' must be a response to a preceding message with 'tool_calls' "
        "(tool_call_id 'zz')"
    ]
    interrupted = {"model": "m", "messages": [*ok["messages"][:2], {"role": "user", "content": "more"}]}
    assert validate_request(interrupted)[0].startswith(
        "messages[2]: an assistant message with 'tool_calls' must be followed"
    )
    assert validate_request({**ok, "tool_choice": "auto"}) == [
        "'tool_choice' is only allowed when 'tools' are specified"
    ]
    assert validate_request({**ok, "tools": [{"type": "function", "function": {"name": "bad name"}}]}) == [
        "tools[0]: invalid function name 'bad name'"
    ]
    assert validate_request({**ok, "stream_options": {"include_usage": True}}) == [
        "'stream_options' is only allowed when 'stream' is enabled"
    ]
    loose = {
        "type": "json_schema",
        "json_schema": {"name": "A", "strict": True, "schema": {"type": "object", "properties": {"a": {}}}},
    }
    assert validate_request({**ok, "response_format": loose}) == [
        "strict schema: 'additionalProperties' must be false at schema",
        "strict schema: every property must be required at schema",
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_call_without_a_name_is_a_response_error(
    server: ChatServer, client: OpenAIChatCompletionClient, stream: bool
) -> None:
    server.script(Reply.call(("", {"a": 1})))
    with pytest.raises(ModelResponseError, match="a tool call has no function name"):
        await (collect(client, [USER], tools=[ADD]) if stream else client.create([USER], tools=[ADD]))


def test_validate_context_checks_nbagent_messages() -> None:
    call = FunctionCall(id="c1", name="add", arguments="{}")
    dangling = [USER, AssistantMessage(content=[call], source="agent")]
    answered = [
        *dangling,
        FunctionExecutionResultMessage(content=[FunctionExecutionResult(content="1", name="add", call_id="c1")]),
    ]
    assert validate_context(answered, [ADD]) == []
    assert validate_context(dangling) == [
        "an assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'; "
        "not answered: ['c1']"
    ]


@pytest.mark.skipif(platform.system() in ("Darwin", "Windows"), reason="there each client makes its own context")
async def test_clients_share_one_tls_context_per_certificate_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, server: ChatServer
) -> None:
    """Loading the certificates was nearly all the cost of a client (51 ms of 52): each certificate file the
    environment names is loaded once a process, and a client made after the environment changed loads its file."""
    import certifi

    made: list[str | None] = []
    create_default_context = ssl.create_default_context

    def counting(*args: Any, **kwargs: Any) -> ssl.SSLContext:
        made.append(kwargs.get("cafile"))
        return create_default_context(*args, **kwargs)

    monkeypatch.setattr(ssl, "create_default_context", counting)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    monkeypatch.delenv("SSLKEYLOGFILE", raising=False)
    first, second = tmp_path / "first.pem", tmp_path / "second.pem"
    for bundle in (first, second):
        shutil.copyfile(certifi.where(), bundle)
    monkeypatch.setenv("SSL_CERT_FILE", str(first))
    for _ in range(3):
        OpenAIChatCompletionClient("gpt-4o", api_key=TEST_KEY)
    assert made == [str(first)]
    monkeypatch.setenv("SSL_CERT_FILE", str(second))
    OpenAIChatCompletionClient("gpt-4o", api_key=TEST_KEY)
    monkeypatch.setenv("SSL_CERT_FILE", str(first))
    served = OpenAIChatCompletionClient("gpt-4o", api_key=TEST_KEY, base_url=server.base_url)
    assert made == [str(first), str(second)]
    server.script(Reply.text("hi"))
    assert (await served.create([USER])).content == "hi"  # made with the shared context, it sends (HTTP here)
    await served.close()
