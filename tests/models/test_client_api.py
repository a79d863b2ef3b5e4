"""Issue 14, point 4: one request shape (create/create_stream written once, complete/complete_stream
implemented by each client) and a public checkpoint/restore for the stepper's Reset."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from pathlib import Path

import pytest

from nbagent import CreateResult, RequestUsage, UserMessage
from nbagent.cancellation import CancellationToken
from nbagent.models import (
    CassetteChatCompletionClient,
    ChatCompletionClient,
    ModelRequest,
    ModelStream,
    OpenAIChatCompletionClient,
    RecordingChatCompletionClient,
    ReplayChatCompletionClient,
)

USER = UserMessage(content="hi", source="user")


class Echo(ChatCompletionClient):
    """The smallest client: only complete()."""

    model_info = {"function_calling": True}

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[ModelRequest] = []

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        self.seen.append(request)
        return CreateResult(finish_reason="stop", content=f"echo {request.messages[-1].content}")


async def test_create_builds_one_request_for_complete() -> None:
    client = Echo()
    tool = {"name": "t", "description": "", "parameters": {"type": "object", "properties": {}}}
    result = await client.create([USER], tools=[tool], tool_choice="required", extra_create_args={"seed": 1})
    assert result.content == "echo hi"
    assert client.seen == [ModelRequest([USER], [tool], "required", None, {"seed": 1})]


async def test_create_stream_defaults_to_complete_as_one_piece() -> None:
    stream = Echo().create_stream([USER])
    assert isinstance(stream, ModelStream)
    items = [item async for item in stream]
    assert items[0] == "echo hi" and isinstance(items[1], CreateResult)
    assert stream.first_chunk_perf is None  # Echo measures nothing


async def test_replay_checkpoint_restore() -> None:
    client = ReplayChatCompletionClient(["a", "b", "c"])
    await client.create([USER])
    mark = client.checkpoint()
    usage = client.total_usage()
    assert (await client.create([USER])).content == "b"
    assert client.position == 2 and len(client.requests) == 2
    client.restore(mark)
    assert client.position == 1 and len(client.requests) == 1 and client.total_usage() == usage
    assert (await client.create([USER])).content == "b"
    with pytest.raises(TypeError):
        ReplayChatCompletionClient(["x"]).restore(mark)
    client.position = 0
    assert (await client.create([USER])).content == "a"
    with pytest.raises(ValueError):
        client.position = 4


async def test_cassette_checkpoint_restore(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    recorder = RecordingChatCompletionClient(ReplayChatCompletionClient(["one", "two"]), path)
    await recorder.create([USER])
    await recorder.create([USER])
    assert RecordingChatCompletionClient(Echo(), tmp_path / "e.json").checkpoint() is None  # a real model's
    cassette = CassetteChatCompletionClient(path)
    mark = cassette.checkpoint()
    assert (await cassette.create([USER])).content == "one"
    cassette.restore(mark)
    assert cassette.remaining == 2 and cassette.total_usage() == RequestUsage()
    assert (await cassette.create([USER])).content == "one"


async def test_recording_checkpoint_restore_rewinds_the_client_it_wraps(tmp_path: Path) -> None:
    replay = ReplayChatCompletionClient(["one", "two"])
    recorder = RecordingChatCompletionClient(replay, tmp_path / "r.json")
    mark = recorder.checkpoint()
    assert mark is not None
    assert (await recorder.create([USER])).content == "one"
    usage = recorder.total_usage()
    recorder.restore(mark)
    assert replay.position == 0 and recorder.total_usage() == RequestUsage()
    assert (await recorder.create([USER])).content == "one"  # the same answer again
    assert recorder.total_usage() == usage and len(recorder.interactions) == 2  # both calls recorded
    with pytest.raises(TypeError):
        recorder.restore(replay.checkpoint())  # the inner client's checkpoint is not the recording's


async def test_the_steppers_reset_rewinds_a_recorded_replay(tmp_path: Path) -> None:
    from nbagent import AssistantAgent
    from nbagent.stepper import Stepper

    recorder = RecordingChatCompletionClient(ReplayChatCompletionClient(["first", "second"]), tmp_path / "s.json")
    stepper = Stepper(AssistantAgent("bot", recorder), "hi")
    await stepper.run_to_end()
    await stepper.reset()
    await stepper.run_to_end()
    answers = [i.result.content for i in recorder.interactions if i.result is not None]
    assert answers == ["first", "first"]


def test_stateless_clients_restore_nothing() -> None:
    client = OpenAIChatCompletionClient("m", base_url="http://127.0.0.1:9/v1", api_key="sk-x-0000000000")
    assert client.checkpoint() is None
    client.restore(None)
    with pytest.raises(TypeError):
        client.restore(object())


def test_a_model_request_is_a_frozen_dataclass_whose_fields_its_init_sets() -> None:
    """``ModelRequest``'s own ``__init__`` (its slots set directly) makes what the dataclass's made: each
    field, a new empty ``extra_create_args`` unless given, frozen, and ``replace``, copies and pickles work."""
    request = ModelRequest([UserMessage(content="hi", source="user")], [], "auto", None)
    assert request.extra_create_args == {}
    assert (
        ModelRequest([], [], "auto", None).extra_create_args is not ModelRequest([], [], "auto", None).extra_create_args
    )
    assert ModelRequest([], [], "auto", None, None).extra_create_args is None  # given: kept as it is
    named = ModelRequest(messages=[], tools=[], tool_choice="none", json_output=True, extra_create_args={"seed": 1})
    assert (named.tool_choice, named.json_output, dict(named.extra_create_args)) == ("none", True, {"seed": 1})
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.tools = []  # type: ignore[misc]
    changed = dataclasses.replace(request, tool_choice="required")
    assert changed.tool_choice == "required" and changed.messages is request.messages
    assert pickle.loads(pickle.dumps(request)) == request == copy.deepcopy(request)
    assert [f.name for f in dataclasses.fields(ModelRequest)] == [
        "messages", "tools", "tool_choice", "json_output", "extra_create_args",
    ]  # fmt: skip
