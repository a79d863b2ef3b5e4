"""The OpenAI client posts through the SDK's ``post()``, without ``create()``'s transform of the
arguments: the request on the wire (its JSON, headers, path and query) is the one
``chat.completions.create(**client.build_request(...))`` sends, streamed or not, with the
client's arguments, SDK request options among them, and without a key."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from pydantic import BaseModel

from nbagent import FunctionCall, SystemMessage, UserMessage
from nbagent.messages import AssistantMessage, FunctionExecutionResult, FunctionExecutionResultMessage
from nbagent.models import ModelError, ModelRequest, OpenAIChatCompletionClient

from .chat_server import ChatServer, Reply
from .conftest import TEST_KEY

TOOL = {
    "name": "lookup",
    "description": "The weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}
MESSAGES = [
    SystemMessage(content='Be brief. «ünïcode» and "quotes"'),
    UserMessage(content="weather in Paris?", source="user"),
    AssistantMessage(content=[FunctionCall(id="c1", name="lookup", arguments='{"city": "Paris"}')], source="a"),
    FunctionExecutionResultMessage(content=[FunctionExecutionResult(content="sunny", name="lookup", call_id="c1")]),
]
# Headers that differ between any two requests (or say which SDK method sent one).
VOLATILE = {"x-stainless-raw-response", "x-stainless-retry-count", "x-stainless-read-timeout"}


def _wire(received: Any) -> tuple[Any, str, dict[str, str]]:
    """What a server reads of a request: its JSON (create() orders the keys by its parameters, which
    no server reads), its target and its headers (the body's length among them)."""
    headers = {name: value for name, value in received.headers.items() if name not in VOLATILE}
    return json.loads(received.raw), received.path, headers


async def _both(server: ChatServer, client: OpenAIChatCompletionClient, stream: bool, **create: Any) -> None:
    """The same call through nbagent and through the SDK's create(): the same request on the wire."""
    reply = Reply.text("It is sunny.")
    server.script(reply, reply)
    request = ModelRequest(MESSAGES, [TOOL], "auto", None, {})
    if stream:
        pieces = [item async for item in client.complete_stream(request)]
        assert pieces[-1].content == "It is sunny."
    else:
        assert (await client.complete(request)).content == "It is sunny."
    sdk = openai.AsyncOpenAI(**create.pop("sdk"))
    answer = await sdk.chat.completions.create(**client.build_request(request, stream=stream), **create)
    if stream:
        async for _ in answer:  # type: ignore[union-attr]
            pass
    await sdk.close()
    ours, theirs = server.requests[-2:]
    assert _wire(ours) == _wire(theirs)


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_the_request_is_the_one_create_sends(server: ChatServer, stream: bool) -> None:
    args = {"temperature": 0.2, "seed": 7, "top_p": openai.NOT_GIVEN, "max_tokens": openai.omit}
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=0, **args)
    await _both(server, client, stream, sdk={"base_url": server.base_url, "api_key": TEST_KEY, "max_retries": 0})
    assert "top_p" not in server.requests[-1].body and "max_tokens" not in server.requests[-1].body
    await client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_sdk_request_options_among_the_arguments_are_options(server: ChatServer, stream: bool) -> None:
    args = {
        "extra_headers": {"X-Trace": "abc"},
        "extra_query": {"api-version": "2024-10-21"},
        "extra_body": {"custom_field": {"k": [1, 2]}},
        "timeout": 30.0,
    }
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=0, **args)
    await _both(server, client, stream, sdk={"base_url": server.base_url, "api_key": TEST_KEY, "max_retries": 0})
    ours = server.requests[-2]
    assert ours.headers["x-trace"] == "abc" and ours.path.endswith("?api-version=2024-10-21")
    assert ours.body["custom_field"] == {"k": [1, 2]} and "extra_body" not in ours.body and "timeout" not in ours.body
    await client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_a_keyless_client_sends_no_authorization(server: ChatServer, stream: bool) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key="", max_retries=0)
    sdk = {"base_url": server.base_url, "api_key": "no-key", "max_retries": 0}
    await _both(server, client, stream, sdk=sdk, extra_headers={"Authorization": openai.Omit()})
    assert "authorization" not in server.requests[-2].headers
    await client.close()


async def test_status_errors_and_retries_are_the_sdks(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=1)
    server.script(Reply.error(503, "busy"), Reply.text("back"))
    request = ModelRequest(MESSAGES[:2], [], "auto", None, {})
    assert (await client.complete(request)).content == "back"  # the SDK retried the 503
    assert [received.status for received in server.requests] == [503, 200]
    server.script(Reply.error(400, "bad things"), Reply.error(400, "bad things"))
    with pytest.raises(ModelError, match="HTTP 400: bad things") as raised:
        await client.complete(request)
    assert raised.value.status == 400
    await client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("name", ["Authorization", "authorization"])
async def test_a_keyless_client_sends_the_authorization_its_extra_headers_give(
    server: ChatServer, stream: bool, name: str
) -> None:
    """No key, but an Authorization header of the caller's own (a proxy's scheme): it is sent, with
    the other extra headers, as create() sends extra_headers."""
    headers = {name: "Basic dXNlcjpwdw==", "X-Trace": "abc"}
    client = OpenAIChatCompletionClient(
        "gpt-4o", base_url=server.base_url, api_key="", max_retries=0, extra_headers=headers
    )
    sdk = {"base_url": server.base_url, "api_key": "no-key", "max_retries": 0}
    await _both(server, client, stream, sdk=sdk)
    ours = server.requests[-2]
    assert ours.headers["authorization"] == "Basic dXNlcjpwdw==" and ours.headers["x-trace"] == "abc"
    await client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
async def test_an_sdk_that_exports_no_omit_works(
    server: ChatServer, stream: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """openai 1.40 (the oldest the package allows) has ``Omit`` in ``openai._types`` only: requests,
    keyless ones too, work without ``openai.Omit``."""
    monkeypatch.delattr(openai, "Omit")
    for key in (TEST_KEY, ""):
        client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=key, max_retries=0, seed=7)
        server.script(Reply.text("It is sunny."))
        request = ModelRequest(MESSAGES[:2], [], "auto", None, {})
        if stream:
            answer = [piece async for piece in client.complete_stream(request)][-1]
        else:
            answer = await client.complete(request)
        assert answer.content == "It is sunny."  # type: ignore[union-attr]
        assert server.requests[-1].body["seed"] == 7
        assert ("authorization" in server.requests[-1].headers) is bool(key)
        await client.close()


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
@pytest.mark.parametrize("where", ["client", "call"])
async def test_a_pydantic_class_as_response_format_asks_for_its_schema_with_autogens_warning(
    server: ChatServer, stream: bool, where: str
) -> None:
    """AutoGen 0.7.5's older spelling of a structured output: the class as ``response_format`` in the create
    args (the client's or the call's) is the call's ``json_output``, with its ``DeprecationWarning``."""

    class Answer(BaseModel):
        text: str

    at_client = {"response_format": Answer} if where == "client" else {}
    client = OpenAIChatCompletionClient(
        "gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=0, **at_client
    )
    server.script(Reply.text('{"text": "sunny"}'))
    request = ModelRequest(MESSAGES[:2], [], "auto", None, {} if at_client else {"response_format": Answer})
    with pytest.warns(DeprecationWarning, match="Using response_format to specify the BaseModel"):
        if stream:
            answer = [item async for item in client.complete_stream(request)][-1]
        else:
            answer = await client.complete(request)
    assert answer.content == '{"text": "sunny"}'  # type: ignore[union-attr]
    sent = server.requests[-1].body["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["name"] == "Answer"
    assert client.request_parameters(request)["response_format"] == sent
    with pytest.raises(ValueError, match="response_format and json_output cannot be set to a Pydantic model"):
        await client.complete(ModelRequest(MESSAGES[:2], [], "auto", Answer, request.extra_create_args))
    assert len(server.requests) == 1
    await client.close()


async def test_another_class_as_response_format_is_refused_before_anything_is_sent(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=0)
    request = ModelRequest(MESSAGES[:2], [], "auto", None, {"response_format": dict})
    with pytest.raises(TypeError, match="response_format is the class dict, neither a response_format dict nor"):
        await client.complete(request)
    assert server.requests == []
    await client.close()
