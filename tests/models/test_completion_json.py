"""The OpenAI client reads a non-streamed completion from its JSON (the SDK's raw response): every
field it uses, and the shapes that are no completion, over real HTTP against the scripted server."""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import CreateResult, FunctionCall, UserMessage
from nbagent.models import ModelRateLimitError, ModelResponseError, OpenAIChatCompletionClient, UnreportedUsage

from .chat_server import ChatServer, Reply
from .conftest import TEST_KEY

USER = UserMessage(content="What is 2+3?", source="user")


def completion(message: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """A completion's JSON with one choice holding ``message``."""
    choice = {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": fields.pop("finish", "stop")}
    return {
        "id": "chatcmpl-7",
        "object": "chat.completion",
        "model": "gpt-4o-2024-08-06",
        "choices": [choice],
        **fields,
    }


async def test_text_usage_model_and_id_are_read(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    server.script(Reply(body=completion({"content": "5"}, usage=usage, finish="length")))
    result = await client.create([USER])
    assert (result.content, result.finish_reason, result.thought) == ("5", "length", None)
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (12, 3)
    assert not isinstance(result.usage, UnreportedUsage)
    assert (result.response_model, result.response_id) == ("gpt-4o-2024-08-06", "chatcmpl-7")
    assert client.actual_usage().prompt_tokens == 12


async def test_no_usage_is_unreported_and_null_tokens_are_zero(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    nulls = {"prompt_tokens": None, "completion_tokens": None}
    server.script(Reply(body=completion({"content": "a"})), Reply(body=completion({"content": "b"}, usage=nulls)))
    first, second = await client.create([USER]), await client.create([USER])
    assert isinstance(first.usage, UnreportedUsage) and first.usage.prompt_tokens == 0
    assert not isinstance(second.usage, UnreportedUsage) and (
        second.usage.prompt_tokens,
        second.usage.completion_tokens,
    ) == (0, 0)


async def test_a_refusal_is_the_content_and_null_content_is_empty(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(
        Reply(body=completion({"content": None, "refusal": "I cannot help with that."})),
        Reply(body=completion({"content": None})),
    )
    assert (await client.create([USER])).content == "I cannot help with that."
    assert (await client.create([USER])).content == ""


async def test_tool_calls_with_text_and_reasoning(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    calls = [
        {"id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}},
        {"type": "function", "function": {"name": "mul"}},  # no id, no arguments
    ]
    message = {"content": "Let me add.", "reasoning": "add, then multiply", "tool_calls": calls}
    server.script(Reply(body=completion(message, finish="tool_calls")))
    result = await client.create([USER])
    assert result.finish_reason == "function_calls" and result.thought == "add, then multiply\nLet me add."
    assert isinstance(result.content, list) and result.content[0] == FunctionCall(
        id="call_a", name="add", arguments='{"a": 2, "b": 3}'
    )
    assert result.content[1].name == "mul" and result.content[1].arguments == ""
    assert result.content[1].id.startswith("call_")  # an id made up for the call that had none


async def test_an_unknown_finish_reason_is_unknown(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    server.script(Reply(body=completion({"content": "x"}, finish="eos_token")))
    assert (await client.create([USER])).finish_reason == "unknown"


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("<html>Bad gateway</html>", "malformed JSON in the response"),
        ({"object": "chat.completion"}, "the response has no choices"),
        ([1, 2], "the response has no choices"),
        ({"choices": [{"index": 0, "finish_reason": "stop"}]}, "unusable response: KeyError"),
        ({"choices": "x"}, "unusable response: TypeError"),
        ({"choices": [{"message": {"content": ["a", "list"]}}]}, "unusable response: AttributeError"),
    ],
)
async def test_what_is_no_completion_is_a_response_error(
    server: ChatServer, client: OpenAIChatCompletionClient, body: object, said: str
) -> None:
    server.script(Reply(body=body))
    with pytest.raises(ModelResponseError, match=said) as caught:
        await client.create([USER])
    assert caught.value.model == "gpt-4o" and TEST_KEY not in str(caught.value)


def tool_call(call_id: object, arguments: object) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": "add", "arguments": arguments}}
    return completion({"content": None, "tool_calls": [call]}, finish="tool_calls")


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("<html>caf\xe9</html>".encode("latin-1"), r"the response is not UTF-8 text \(invalid continuation byte"),
        ('{"x": "caf\xe9"}'.encode("latin-1"), "the response is not UTF-8 text"),
        (completion({"content": "hi"}, usage=5), "malformed response: its usage is 5, not an object"),
        (
            completion({"content": "hi"}, usage={"prompt_tokens": "x", "completion_tokens": 1}),
            "malformed response: its usage.prompt_tokens is 'x', not a number of tokens",
        ),
        (
            '{"choices": [{"message": {"content": "hi"}}], "usage": {"prompt_tokens": NaN, "completion_tokens": 1}}',
            "its usage.prompt_tokens is nan, not a number of tokens",
        ),
        (
            completion({"content": "hi"}, usage={"prompt_tokens": 1, "completion_tokens": 2.5}),
            "its usage.completion_tokens is 2.5, not a number of tokens",
        ),
        (tool_call("a", 5), "the arguments of tool call 'add' are 5, not a JSON string"),
        (tool_call(["a"], "{}"), r"the id of tool call 'add' is \['a'\], not a string"),
    ],
)
async def test_a_malformed_completion_is_a_response_error_saying_what_is_wrong(
    server: ChatServer, client: OpenAIChatCompletionClient, body: object, said: str
) -> None:
    server.script(Reply(body=body))
    with pytest.raises(ModelResponseError, match=said) as caught:
        await client.create([USER])
    assert caught.value.model == "gpt-4o" and str(caught.value).startswith("gpt-4o at ")
    assert TEST_KEY not in str(caught.value)


async def test_arguments_as_an_object_and_an_int_id_are_accepted(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    """Some compatible servers send a call's arguments as a JSON object, or an int id: read as their text."""
    server.script(
        Reply(body=tool_call(7, {"a": 2, "b": "é"})),
        Reply(body=completion({"content": "hi"}, usage={"prompt_tokens": 3.0, "completion_tokens": 1})),
    )
    [call] = (await client.create([USER])).content
    assert call == FunctionCall(id="7", name="add", arguments='{"a": 2, "b": "é"}')
    assert (await client.create([USER])).usage.prompt_tokens == 3


async def test_the_sdk_still_retries_and_raises_status_errors(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=1)
    limited = Reply.error(429, "slow down", headers={"retry-after-ms": "1"})
    server.script(limited, Reply.text("done"), limited, limited)
    result = await client.create([USER])
    assert isinstance(result, CreateResult) and result.content == "done"
    with pytest.raises(ModelRateLimitError, match="HTTP 429: slow down") as caught:
        await client.create([USER])
    assert caught.value.status == 429 and caught.value.retry_after == 0.001
    assert len(server.requests) == 4
    await client.close()


async def test_a_streamed_usage_that_is_no_count_is_a_response_error(
    server: ChatServer, client: OpenAIChatCompletionClient
) -> None:
    server.script(Reply(content="hi", usage=(2.5, 1)))  # type: ignore[arg-type]
    with pytest.raises(ModelResponseError, match="its usage.prompt_tokens is 2.5, not a number of tokens"):
        [item async for item in client.create_stream([USER])]
