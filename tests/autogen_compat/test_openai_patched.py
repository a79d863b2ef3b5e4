"""A patched or mocked ``openai`` SDK method takes effect in nbagent's OpenAI client (issue 40.5, point 1).

AutoGen's tests, and users' own test suites, patch the SDK's public ``AsyncCompletions.create`` (and
``parse``, and the stream manager's ``__aenter__``) to answer without a server. nbagent's client posts
through the SDK's ``post()`` when nothing is patched; once one of them is replaced, it calls it as
AutoGen's client does, with the keyword arguments ``create`` takes, and reads what it answers.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from types import SimpleNamespace
from typing import Any

import pytest
from openai.lib.streaming.chat import AsyncChatCompletionStreamManager
from openai.resources.chat.completions import AsyncCompletions
from openai.types.chat.chat_completion import ChatCompletion, Choice
from openai.types.chat.chat_completion_chunk import ChatCompletionChunk, ChoiceDelta
from openai.types.chat.chat_completion_chunk import Choice as ChunkChoice
from openai.types.chat.chat_completion_message import ChatCompletionMessage
from openai.types.chat.parsed_chat_completion import ParsedChatCompletion, ParsedChatCompletionMessage, ParsedChoice
from openai.types.completion_usage import CompletionUsage
from pydantic import BaseModel

from nbagent import CreateResult, UserMessage
from nbagent.models import OpenAIChatCompletionClient
from tests.models.chat_server import ChatServer, Reply

HELLO = [UserMessage(content="Hello", source="user")]


class Mood(BaseModel):
    mood: str


def completion(text: str, usage: CompletionUsage | None = None) -> ChatCompletion:
    message = ChatCompletionMessage(content=text, role="assistant")
    return ChatCompletion(
        id="id1",
        choices=[Choice(finish_reason="stop", index=0, message=message)],
        created=0,
        model="gpt-4o",
        object="chat.completion",
        usage=usage or CompletionUsage(prompt_tokens=7, completion_tokens=2, total_tokens=9),
    )


def chunk(text: str | None, finish: str | None = None, usage: CompletionUsage | None = None) -> ChatCompletionChunk:
    choice = ChunkChoice(finish_reason=finish, index=0, delta=ChoiceDelta(content=text, role="assistant"))  # type: ignore[arg-type]
    return ChatCompletionChunk(
        id="id1", choices=[choice], created=0, model="gpt-4o", object="chat.completion.chunk", usage=usage
    )


class FakeCreate:
    """A stand-in for ``AsyncCompletions.create``: records each call's keyword arguments, answers a
    completion, or a stream of chunks (an async generator, as AutoGen's tests give) for ``stream=True``."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    async def __call__(self, *args: Any, **kwargs: Any) -> ChatCompletion | AsyncGenerator[ChatCompletionChunk, None]:
        self.calls.append(kwargs)
        if kwargs.get("stream"):
            return self.stream()
        return completion("Hello from the patch")

    async def stream(self) -> AsyncGenerator[ChatCompletionChunk, None]:
        for piece in ("Hello", " from", " the patch"):
            yield chunk(piece)
        yield chunk(None, "stop")
        yield chunk(None, usage=CompletionUsage(prompt_tokens=3, completion_tokens=3, total_tokens=6))


@pytest.fixture
def fake_create(monkeypatch: pytest.MonkeyPatch) -> FakeCreate:
    fake = FakeCreate()
    monkeypatch.setattr(AsyncCompletions, "create", fake)
    return fake


async def test_a_patched_create_answers_a_call(fake_create: FakeCreate) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", api_key="sk-test")
    result = await client.create(HELLO, extra_create_args={"seed": 7})
    assert result.content == "Hello from the patch"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (7, 2)
    assert fake_create.calls == [
        {"model": "gpt-4o", "messages": [{"role": "user", "content": "Hello"}], "seed": 7},
    ]


async def test_a_patched_create_answers_a_stream(fake_create: FakeCreate) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", api_key="sk-test")
    items = [item async for item in client.create_stream(HELLO)]
    assert items[:3] == ["Hello", " from", " the patch"]
    result = items[-1]
    assert isinstance(result, CreateResult)
    assert result.content == "Hello from the patch"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (3, 3)
    assert fake_create.calls[0]["stream"] is True


async def test_json_output_wins_over_the_create_args_response_format(fake_create: FakeCreate) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", api_key="sk-test")
    await client.create(HELLO, json_output=True, extra_create_args={"response_format": {"type": "text"}})
    await client.create(HELLO, json_output=False, extra_create_args={"response_format": {"type": "json_object"}})
    with pytest.warns(UserWarning, match="response_format is found in extra_create_args while json_output"):
        await client.create(HELLO, json_output=Mood, extra_create_args={"response_format": {"type": "json_object"}})
    sent = [call["response_format"] for call in fake_create.calls]
    assert sent[:2] == [{"type": "json_object"}, {"type": "text"}]
    assert sent[2]["json_schema"]["name"] == "Mood"


async def test_a_patched_parse_gets_the_class_for_a_structured_output(monkeypatch: pytest.MonkeyPatch) -> None:
    given: list[dict[str, Any]] = []

    async def parse(*args: Any, **kwargs: Any) -> ParsedChatCompletion[Mood]:
        given.append(kwargs)
        message = ParsedChatCompletionMessage[Mood](content='{"mood": "happy"}', role="assistant")
        return ParsedChatCompletion[Mood](
            id="id1",
            choices=[ParsedChoice[Mood](finish_reason="stop", index=0, message=message)],
            created=0,
            model="gpt-4o",
            object="chat.completion",
        )

    monkeypatch.setattr(AsyncCompletions, "parse", parse)
    client = OpenAIChatCompletionClient("gpt-4o", api_key="sk-test")
    result = await client.create(HELLO, json_output=Mood)
    assert Mood.model_validate_json(str(result.content)) == Mood(mood="happy")
    assert given[0]["response_format"] is Mood


# the SDK's stream() makes its create() coroutine, which the patched __aenter__ never awaits (as in AutoGen's test)
@pytest.mark.filterwarnings("ignore:coroutine 'AsyncCompletions.create' was never awaited:RuntimeWarning")
async def test_a_patched_stream_manager_streams_a_structured_output(monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps({"mood": "happy"})
    pieces = [text[:5], text[5:], None]

    async def enter(self: Any) -> AsyncGenerator[Any, None]:
        async def events() -> AsyncGenerator[Any, None]:
            yield SimpleNamespace(type="content.delta", delta="ignored")  # events other than chunks are skipped
            for index, piece in enumerate(pieces):
                yield SimpleNamespace(type="chunk", chunk=chunk(piece, "stop" if index == 2 else None))

        return events()

    monkeypatch.setattr(AsyncChatCompletionStreamManager, "__aenter__", enter)
    client = OpenAIChatCompletionClient("gpt-4o", api_key="sk-test")
    items = [item async for item in client.create_stream(HELLO, json_output=Mood)]
    assert items[:2] == pieces[:2]
    result = items[-1]
    assert isinstance(result, CreateResult)
    assert Mood.model_validate_json(str(result.content)) == Mood(mood="happy")


async def test_a_spy_that_calls_the_sdks_create_reaches_the_server(monkeypatch: pytest.MonkeyPatch) -> None:
    """A patch that wraps the SDK's own ``create`` (a spy) sees the call, and the SDK sends it as
    nbagent would have: no ``Authorization`` header for a client without a key."""
    original = AsyncCompletions.create
    seen: list[dict[str, Any]] = []

    async def spy(self: AsyncCompletions, **kwargs: Any) -> Any:
        seen.append(kwargs)
        return await original(self, **kwargs)

    monkeypatch.setattr(AsyncCompletions, "create", spy)
    with ChatServer() as server:
        server.script(Reply.text("Hi there"), Reply.text("Hi again"))
        client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key="", max_retries=0)
        assert (await client.create(HELLO)).content == "Hi there"
        streamed = [item async for item in client.create_stream(HELLO)]
        await client.close()
    assert isinstance(streamed[-1], CreateResult)
    assert streamed[-1].content == "Hi again"
    assert [call.get("stream", False) for call in seen] == [False, True]
    assert all("authorization" not in request.headers for request in server.requests)
    assert server.requests[0].body["messages"] == [{"role": "user", "content": "Hello"}]
