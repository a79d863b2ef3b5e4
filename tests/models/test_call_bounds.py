"""The client's timeout bounds a whole call, streamed or not: a stream that trickles SSE comments or
"." chunks for ever, or an answer whose body trickles a byte at a time, ends with ModelTimeoutError
soon after the timeout (the SDK's own timeout bounds each read only, so these ran until the caller
gave up). And streamed tool arguments sent as a JSON object are taken as when not streamed."""

from __future__ import annotations

import time

import pytest

from nbagent import CreateResult, ModelTimeoutError, UserMessage
from nbagent.models.openai import OpenAIChatCompletionClient

from .chat_server import ChatServer, Reply
from .conftest import TEST_KEY

USER = UserMessage(content="Hi", source="user")


def bounded(server: ChatServer, timeout: float) -> OpenAIChatCompletionClient:
    return OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, timeout=timeout)


@pytest.mark.parametrize("trickle", ["comment", "chunk"])
async def test_a_stream_that_never_ends_raises_model_timeout_error(server: ChatServer, trickle: str) -> None:
    server.script(Reply.text("never", trickle=trickle, trickle_every=0.2))  # type: ignore[arg-type]
    client = bounded(server, 1.0)
    start = time.monotonic()
    shown = []
    with pytest.raises(ModelTimeoutError, match=r"gpt-4o at .*: the stream did not end within the timeout \(1.0 s\)"):
        async for item in client.create_stream([USER]):
            shown.append(item)
    assert time.monotonic() - start < 60  # a hang guard (the 1 s timeout, loaded): it used to run for ever
    assert (shown.count(".") > 0) == (trickle == "chunk")
    await client.close()


async def test_an_answer_that_trickles_raises_model_timeout_error(server: ChatServer) -> None:
    server.script(Reply.text("slowly", trickle="body", trickle_every=0.2))
    client = bounded(server, 1.0)
    start = time.monotonic()
    with pytest.raises(ModelTimeoutError, match=r"no answer within the timeout \(1.0 s\)"):
        await client.create([USER])
    assert time.monotonic() - start < 60  # a hang guard
    await client.close()


async def test_a_call_within_its_timeout_is_not_cut(server: ChatServer) -> None:
    server.script(Reply.text("in time", chunk_delay=0.05), Reply.text("in time too", delay=0.1))
    client = bounded(server, 5.0)
    items = [item async for item in client.create_stream([USER])]
    assert isinstance(items[-1], CreateResult) and items[-1].content == "in time"
    assert (await client.create([USER])).content == "in time too"
    await client.close()


async def test_streamed_arguments_as_a_json_object_are_taken_as_when_not_streamed(server: ChatServer) -> None:
    server.script(
        Reply.call(("add", {"a": 1, "b": 2}), object_arguments=True),
        Reply(body={"choices": [{"index": 0, "finish_reason": "tool_calls", "message": {"role": "assistant",
              "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add",
              "arguments": {"a": 1, "b": 2}}}]}}]}),
    )  # fmt: skip
    client = bounded(server, 5.0)
    streamed = [item async for item in client.create_stream([USER])][-1]
    plain = await client.create([USER])
    assert isinstance(streamed, CreateResult) and isinstance(plain, CreateResult)
    assert [(c.name, c.arguments) for c in streamed.content] == [("add", '{"a": 1, "b": 2}')]  # type: ignore[union-attr]
    assert [(c.name, c.arguments) for c in plain.content] == [("add", '{"a": 1, "b": 2}')]  # type: ignore[union-attr]
    await client.close()
