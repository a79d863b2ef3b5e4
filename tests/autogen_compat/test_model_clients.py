"""AutoGen's model clients as nbagent's model_client, passed as they are (issue 27, point 1).

Written from AutoGen 0.7.5's public API: ``autogen_core.models.ChatCompletionClient`` (its abstract
members: ``create``, ``create_stream``, ``close``, ``actual_usage``, ``total_usage``,
``count_tokens``, ``remaining_tokens``, ``capabilities``, ``model_info``), autogen-ext's
``OpenAIChatCompletionClient`` (against the tests' own Chat Completions server on 127.0.0.1) and
``ReplayChatCompletionClient``, and the ``MagicMock`` clients AutoGen's own tests build. Each runs
nbagent's agent through ``run``, ``run_stream``, the live view and the stepper, and keeps what
nbagent adds: the trace's LLM calls, cancellation, secrets masked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncGenerator, Mapping, Sequence
from pathlib import Path
from typing import Any
from unittest.mock import AsyncMock, MagicMock

import pytest
from autogen_core import CancellationToken as AgCancellationToken
from autogen_core import FunctionCall as AgFunctionCall
from autogen_core import models as agm
from autogen_core.models import ChatCompletionClient as AgChatCompletionClient
from autogen_ext.models.openai import OpenAIChatCompletionClient as AgOpenAIClient
from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplayClient

import nbagent
from nbagent import (
    AssistantAgent,
    CancellationToken,
    ChatCompletionClient,
    CreateResult,
    RequestUsage,
    dump_message,
)
from nbagent.messages import UserMessage
from nbagent.models.bridge import BridgedClient
from nbagent.notebook.view import AgentRunView
from nbagent.stepper import Stepper

from ..models.chat_server import ChatServer, Reply
from ..waits import within

KEY = "sk-" + "autogen-bridge-7c1e5a9f30d24b88"
INFO: agm.ModelInfo = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def ag_result(content: str | list[AgFunctionCall], prompt: int = 7, completion: int = 3) -> agm.CreateResult:
    reason = "stop" if isinstance(content, str) else "function_calls"
    return agm.CreateResult(
        finish_reason=reason,
        content=content,
        usage=agm.RequestUsage(prompt_tokens=prompt, completion_tokens=completion),
        cached=False,
    )


def add_call(call_id: str = "call_1") -> list[AgFunctionCall]:
    return [AgFunctionCall(id=call_id, name="add", arguments='{"a": 2, "b": 3}')]


# ---------------------------------------------------------------------- a client written for AutoGen


class EchoClient(AgChatCompletionClient):
    """A user's subclass of AutoGen's base class, as AutoGen's documentation shows one: every
    abstract member implemented. It answers from a script and keeps what it was sent."""

    def __init__(self, script: Sequence[str | list[AgFunctionCall]]) -> None:
        self.script = list(script)
        self.received: list[tuple[list[Any], dict[str, Any]]] = []
        self._usage = agm.RequestUsage(prompt_tokens=0, completion_tokens=0)

    def _next(self, messages: Sequence[agm.LLMMessage], kwargs: dict[str, Any]) -> agm.CreateResult:
        self.received.append((list(messages), kwargs))
        result = ag_result(self.script.pop(0))
        self._usage = agm.RequestUsage(
            prompt_tokens=self._usage.prompt_tokens + result.usage.prompt_tokens,
            completion_tokens=self._usage.completion_tokens + result.usage.completion_tokens,
        )
        return result

    async def create(
        self,
        messages: Sequence[agm.LLMMessage],
        *,
        tools: Sequence[Any] = [],  # noqa: B006 (AutoGen's signature)
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006
        cancellation_token: AgCancellationToken | None = None,
    ) -> agm.CreateResult:
        return self._next(messages, {"tools": tools, "tool_choice": tool_choice, "token": cancellation_token})

    async def create_stream(
        self,
        messages: Sequence[agm.LLMMessage],
        *,
        tools: Sequence[Any] = [],  # noqa: B006
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006
        cancellation_token: AgCancellationToken | None = None,
    ) -> AsyncGenerator[str | agm.CreateResult, None]:
        result = self._next(messages, {"tools": tools, "tool_choice": tool_choice, "token": cancellation_token})
        if isinstance(result.content, str):
            for word in result.content.split(" "):
                yield word + " "
        yield result

    async def close(self) -> None:
        pass

    def actual_usage(self) -> agm.RequestUsage:
        return self._usage

    def total_usage(self) -> agm.RequestUsage:
        return self._usage

    def count_tokens(self, messages: Sequence[agm.LLMMessage], *, tools: Sequence[Any] = []) -> int:  # noqa: B006
        return 10 * len(messages)

    def remaining_tokens(self, messages: Sequence[agm.LLMMessage], *, tools: Sequence[Any] = []) -> int:  # noqa: B006
        return 1000 - self.count_tokens(messages)

    @property
    def capabilities(self) -> Any:
        return INFO

    @property
    def model_info(self) -> agm.ModelInfo:
        return INFO


async def test_a_subclass_of_autogens_base_class_is_sent_autogens_types_and_answers_nbagent() -> None:
    client = EchoClient([add_call(), "It is 5."])
    agent = AssistantAgent("bot", client, tools=[add], reflect_on_tool_use=True)
    result = await agent.run(task="2 + 3?")
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "TextMessage",
    ]
    assert result.messages[-1].content == "It is 5."
    first, second = client.received
    assert [type(m) for m in first[0]] == [agm.SystemMessage, agm.UserMessage]
    assert [type(m) for m in second[0]] == [
        agm.SystemMessage,
        agm.UserMessage,
        agm.AssistantMessage,
        agm.FunctionExecutionResultMessage,
    ]
    assert second[0][3].content[0] == agm.FunctionExecutionResult(
        content="5", name="add", call_id="call_1", is_error=False
    )
    assert [tool["name"] for tool in first[1]["tools"]] == ["add"]
    assert isinstance(first[1]["token"], AgCancellationToken)  # AutoGen's own token, linked to the run's
    assert second[1]["tool_choice"] == "none" and "tools" in second[1]  # the reflection call, as AutoGen's agent
    calls = agent.trace.llm_calls_df()
    assert list(calls["purpose"]) == ["initial", "reflection"]
    assert list(calls["prompt_tokens"]) == [7, 7] and list(calls["status"]) == ["ok", "ok"]
    assert agent.model_client.total_usage() == RequestUsage(prompt_tokens=14, completion_tokens=6)
    assert agent.model_client.remaining_tokens([UserMessage(content="x", source="u")]) == 990
    assert isinstance(agent.model_client, BridgedClient) and agent.model_client.inner is client


async def test_the_bridge_converts_each_message_once_and_sends_what_the_context_holds() -> None:
    client = EchoClient(["one", "two", "three", "four"])
    agent = AssistantAgent("bot", client, model_context=nbagent.BufferedChatCompletionContext(buffer_size=3))
    for task in ("a", "b", "c", "d"):
        await agent.run(task=task)
    sent = [messages for messages, _ in client.received]
    texts = [[str(m.content) for m in messages[1:]] for messages in sent]  # after the system message
    assert texts == [["a"], ["a", "one", "b"], ["b", "two", "c"], ["c", "three", "d"]]  # the buffer drops its head
    assert sent[2][1] is sent[1][3]  # "b" converted once, reused where it moved
    assert sent[3][0] is sent[0][0]  # the system message too
    client = EchoClient(["one", "two"])
    agent = AssistantAgent("bot", client)  # a growing context: its start reused as it is
    await agent.run(task="a")
    await agent.run(task="b")
    first, second = (messages for messages, _ in client.received)
    assert second[:2] == first and all(x is y for x, y in zip(second, first, strict=False))
    assert first is not second and len(first) == 2  # each call gets its own list


async def test_a_subclass_streams_into_the_trace() -> None:
    client = EchoClient(["one two three"])
    agent = AssistantAgent("bot", client, model_client_stream=True)
    items = [item async for item in agent.run_stream(task="count")]
    chunks = [item.content for item in items if type(item).__name__ == "ModelClientStreamingChunkEvent"]
    assert chunks == ["one ", "two ", "three "]
    assert items[-1].messages[-1].content == "one two three"
    (call,) = agent.trace.llm_calls_df().itertuples()
    assert call.streaming and call.ttft_s is not None and call.ttft_s >= 0 and call.response_text == "one two three"
    events = agent.trace.events_df()
    assert list(events[events["kind"] == "ModelClientStreamingChunkEvent"]["text"]) == chunks


# ---------------------------------------------------------------------- autogen-ext's OpenAI client


async def test_autogen_ext_openai_client_runs_the_tool_loop_against_a_real_server(tmp_path: Path) -> None:
    with ChatServer(api_key=KEY) as server:
        # AutoGen's documented way to have a streamed call's usage: stream_options={"include_usage": True}
        client = AgOpenAIClient(
            model="gpt-4o",
            base_url=server.base_url,
            api_key=KEY,
            max_retries=0,
            stream_options={"include_usage": True},
        )
        agent = AssistantAgent("bot", client, tools=[add], reflect_on_tool_use=True, model_client_stream=True)
        server.script(
            Reply.call(("add", {"a": 2, "b": 3}), usage=(20, 6)),
            Reply.text("The sum is 5.", usage=(31, 5), pieces=4),
        )
        items = [item async for item in agent.run_stream(task="2 + 3?")]
        server.script(Reply.error(400, f"Invalid key {KEY} given"))
        with pytest.raises(Exception, match="Invalid key") as failed:
            await agent.run(task="again")
        await client.close()

    result = items[-1]
    assert result.messages[-1].content == "The sum is 5."
    assert result.messages[-1].models_usage == RequestUsage(prompt_tokens=31, completion_tokens=5)
    first, second = (request.body for request in server.requests[:2])
    assert [tool["function"]["name"] for tool in first["tools"]] == ["add"]
    assert [message["role"] for message in second["messages"]] == ["system", "user", "assistant", "tool"]
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"

    calls = agent.trace.llm_calls_df()
    assert list(calls["model"]) == ["gpt-4o"] * 3 and list(calls["provider"]) == ["openai"] * 3
    assert list(calls["prompt_tokens"][:2]) == [20, 31] and list(calls["completion_tokens"][:2]) == [6, 5]
    assert list(calls["status"]) == ["ok", "ok", "error"]
    assert calls["ttft_s"].iloc[1] >= 0 and calls["response_text"].iloc[1] == "The sum is 5."
    chunks = [item.content for item in items if type(item).__name__ == "ModelClientStreamingChunkEvent"]
    assert "".join(chunks) == "The sum is 5." and len(chunks) == 4

    # The key reaches the server and no artefact: trace, export, state, dumped config, the error in the trace.
    agent.trace.to_jsonl(tmp_path / "trace.jsonl")
    outputs = {
        "events": json.dumps([dump_message(item) for item in items[:-1]]),
        "frames": "".join(
            frame.to_json(default_handler=str, date_format="iso")
            for frame in (agent.trace.events_df(), calls, agent.trace.runs_df())
        ),
        "export": "".join(path.read_text() for path in sorted((tmp_path / "trace.jsonl").iterdir())),
        "state": json.dumps(await agent.save_state()),
        "config": agent.dump_component().model_dump_json(),
        "records": repr(agent.trace.items),
        "repr": repr(agent),
    }
    assert "[REDACTED]" in calls["error"].iloc[2] and KEY not in str(failed.value)
    assert [name for name, text in outputs.items() if KEY in text] == []


async def test_autogen_ext_openai_client_is_cancelled_by_the_run() -> None:
    with ChatServer() as server:
        client = AgOpenAIClient(model="gpt-4o", base_url=server.base_url, api_key=KEY, max_retries=0)
        agent = AssistantAgent("bot", client)
        server.script(Reply.text("too late", delay=3600))  # only the cancel ends the call
        token = CancellationToken()
        run = asyncio.ensure_future(agent.run(task="wait", cancellation_token=token))
        while not server.requests:
            await asyncio.sleep(0.01)
        token.cancel()
        with pytest.raises(asyncio.CancelledError):
            await within(run, "the cancelled run to end")
        await client.close()
    (call,) = agent.trace.llm_calls_df().itertuples()
    assert call.status == "error" and call.error.startswith("CancelledError")
    assert agent.failed_run is not None
    assert agent.trace.runs_df()["status"].tolist() == ["cancelled"]


# ---------------------------------------------------------------------- autogen-ext's replay client


async def test_autogen_replay_client_in_run_stream_view_and_stepper() -> None:
    client = AgReplayClient(["Hello world", "Second answer", "Third answer", "Fourth"])
    agent = AssistantAgent("bot", client, model_client_stream=True)
    items = [item async for item in agent.run_stream(task="hi")]
    assert items[-1].messages[-1].content == "Hello world"
    assert [item.content for item in items if type(item).__name__ == "ModelClientStreamingChunkEvent"] == [
        "Hello ",
        "world",
    ]
    assert (await agent.run(task="again")).messages[-1].content == "Second answer"

    view = AgentRunView(interval=3600)
    response = await view.run(agent, "view it")
    assert response is not None and response.chat_message.to_text() == "Third answer"
    assert view.status == "ok" and "Third answer" in view._repr_mimebundle_()["text/plain"]

    stepper = Stepper(agent, "step it")
    results = await stepper.run_to_end()
    assert [result.name for result in results] == ["add_messages", "message_id", "call_llm", "text_exit"]
    assert stepper.response is not None and stepper.response.chat_message.to_text() == "Fourth"
    with pytest.warns(UserWarning, match="cannot rewind"):
        await stepper.reset()  # AutoGen's replay client has no checkpoint(): Reset says so
    again = await stepper.run_to_end()  # the script is used up: AutoGen's replay error, at the model call
    assert isinstance(again[-1].error, ValueError) and str(again[-1].error) == "No more mock responses available"


async def test_autogen_replay_client_function_calls_and_its_default_model_info() -> None:
    # AutoGen's replay client says function_calling=False unless given a model_info: AutoGen's agent
    # then refuses tools, and so does nbagent's, with AutoGen's message.
    with pytest.raises(ValueError, match="The model does not support function calling"):
        AssistantAgent("bot", AgReplayClient(["x"]), tools=[add])
    client = AgReplayClient([ag_result(add_call()), "5"], model_info=INFO)
    agent = AssistantAgent("bot", client, tools=[add])
    result = await agent.run(task="2+3")
    assert result.messages[-1].content == "5"  # the tool's summary
    # AutoGen's replay client kept what it was sent: AutoGen's own types, the tools' schemas.
    assert client.create_calls[0]["tools"][0]["name"] == "add"
    assert [type(m) for m in client.create_calls[0]["messages"]] == [agm.SystemMessage, agm.UserMessage]


# ---------------------------------------------------------------------- MagicMock clients


def mock_client(*answers: agm.CreateResult) -> MagicMock:
    """A client as AutoGen's tests build one: a MagicMock with an AsyncMock create and a model_info."""
    client = MagicMock()
    client.create = AsyncMock(side_effect=list(answers))
    client.model_info = INFO
    return client


async def test_a_magicmock_client_runs_and_is_called_as_autogens_agent_calls_it() -> None:
    client = mock_client(ag_result(add_call()), ag_result("5 it is"))
    agent = AssistantAgent("bot", client, tools=[add], reflect_on_tool_use=True)
    result = await agent.run(task="2+3")
    assert result.messages[-1].content == "5 it is"
    first, second = client.create.call_args_list
    assert set(first.kwargs) == {"tools", "json_output", "cancellation_token"}
    assert second.kwargs["tool_choice"] == "none"
    assert len(agent.trace.llm_calls_df()) == 2
    # A mock's total_usage() answers a mock, not counts: the bridge counts what the answers reported.
    assert agent.model_client.total_usage() == RequestUsage(prompt_tokens=14, completion_tokens=6)
    client.close = AsyncMock()
    await agent.close()
    client.close.assert_awaited_once()


async def test_a_magicmock_client_streams_in_the_view_and_steps() -> None:
    def stream(*args: Any, **kwargs: Any) -> AsyncGenerator[str | agm.CreateResult, None]:
        async def items() -> AsyncGenerator[str | agm.CreateResult, None]:
            yield "mock "
            yield "stream"
            yield ag_result("mock stream")

        return items()

    client = mock_client()
    client.create_stream = MagicMock(side_effect=stream)
    agent = AssistantAgent("bot", client, model_client_stream=True)
    items = [item async for item in agent.run_stream(task="go")]
    assert items[-1].messages[-1].content == "mock stream"
    view = AgentRunView(interval=3600)
    assert (await view.run(agent, "again")) is not None and view.status == "ok"
    stepper = Stepper(agent, "step")
    await stepper.run_to_end()
    assert stepper.response is not None and stepper.response.chat_message.to_text() == "mock stream"
    assert len(agent.trace.llm_calls_df()) == 3
    with pytest.warns(UserWarning, match="cannot rewind"):  # a mock's made-up checkpoint() is not one
        await stepper.reset()


def test_a_client_missing_a_member_gets_an_error_naming_it() -> None:
    class NoInfo:
        async def create(self, *args: Any, **kwargs: Any) -> None: ...

    class NoCreate:
        model_info = INFO

    with pytest.raises(TypeError, match="model_client .* It has no model_info"):
        AssistantAgent("bot", NoInfo())
    with pytest.raises(TypeError, match="It has model_info but no create"):
        AssistantAgent("bot", NoCreate())
    client = mock_client()
    client.model_info = "gpt-4o"
    with pytest.raises(TypeError, match="model_client.model_info must be a ModelInfo dict"):
        AssistantAgent("bot", client)

    class NoStream:
        model_info = INFO

        async def create(self, *args: Any, **kwargs: Any) -> None: ...

    with pytest.raises(ValueError, match="model_client_stream .* has no create_stream"):
        AssistantAgent("bot", NoStream(), model_client_stream=True)
    AssistantAgent("bot", NoStream())  # without streaming it is enough


async def test_a_magicmock_answering_no_createresult_is_a_clear_model_error() -> None:
    client = mock_client()
    client.create = AsyncMock(return_value="plain text")
    agent = AssistantAgent("bot", client)
    with pytest.raises(nbagent.ModelResponseError, match="answered str, not a CreateResult"):
        await agent.run(task="x")


# ---------------------------------------------------------------------- nbagent's base class, AutoGen's way


class AutoGenStyle(ChatCompletionClient):
    """A class written for AutoGen's interface, only its imports changed to nbagent's."""

    def __init__(self, words: list[str]) -> None:  # no super().__init__(): AutoGen's base has none to call
        self.words = words

    async def create(
        self,
        messages: Sequence[Any],
        *,
        tools: Sequence[Any] = [],  # noqa: B006
        tool_choice: Any = "auto",
        json_output: Any = None,
        extra_create_args: Mapping[str, Any] = {},  # noqa: B006
        cancellation_token: Any = None,
    ) -> CreateResult:
        return CreateResult(
            finish_reason="stop", content=self.words.pop(0), usage=RequestUsage(prompt_tokens=2, completion_tokens=1)
        )

    @property
    def model_info(self) -> Any:
        return INFO


async def test_nbagents_base_class_takes_a_create_only_subclass() -> None:
    client = AutoGenStyle(["first", "second", "third"])
    agent = AssistantAgent("bot", client, model_client_stream=True)
    assert agent.model_client is client  # nbagent's own: not bridged
    assert (await agent.run(task="a")).messages[-1].content == "first"
    items = [item async for item in agent.run_stream(task="b")]
    assert items[-1].messages[-1].content == "second"
    stepper = Stepper(agent, "c")
    await stepper.run_to_end()
    assert stepper.response is not None and stepper.response.chat_message.to_text() == "third"
    assert client.total_usage() == RequestUsage()  # its own create counted nothing: AutoGen's way
    assert client.capabilities == INFO
    with pytest.raises(TypeError, match="implements complete"):
        ChatCompletionClient()  # type: ignore[abstract]


async def test_a_hanging_autogen_client_is_cancelled_by_its_token() -> None:
    started = asyncio.Event()
    seen: list[AgCancellationToken] = []

    class Hanging(EchoClient):
        async def create(self, messages: Sequence[agm.LLMMessage], **kwargs: Any) -> agm.CreateResult:
            seen.append(kwargs["cancellation_token"])
            started.set()
            await asyncio.sleep(3600)
            raise AssertionError("not cancelled")

    agent = AssistantAgent("bot", Hanging([]))
    token = CancellationToken()
    run = asyncio.ensure_future(agent.run(task="x", cancellation_token=token))
    await started.wait()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(run, "the cancelled run to end")
    assert seen[0].is_cancelled()  # AutoGen's token handed to the client fired too
    assert agent.trace.llm_calls_df()["error"].str.startswith("CancelledError").tolist() == [True]
    assert agent.trace.runs_df()["status"].tolist() == ["cancelled"]


async def test_autogen_ext_openai_client_in_the_live_view_and_the_stepper() -> None:
    with ChatServer() as server:
        client = AgOpenAIClient(model="gpt-4o", base_url=server.base_url, api_key=KEY, max_retries=0)
        agent = AssistantAgent("bot", client, tools=[add], model_client_stream=True)
        server.script(Reply.call(("add", {"a": 2, "b": 3})), Reply.text("Shown live.", pieces=3))
        view = AgentRunView(interval=3600)
        response = await view.run(agent, "2 + 3?")
        assert response is not None and response.chat_message.to_text() == "5"  # the tool summary
        assert view.status == "ok" and 'data-metric="llm_calls" data-value="1"' in view.to_html()

        stepper = Stepper(agent, "again")
        first = await stepper.run_until(move="message_id")
        assert first.name == "message_id" and stepper.upcoming is not None and stepper.upcoming.name == "call_llm"
        assert len(server.requests) == 1  # paused before STEP 4: the call is not sent
        results = await stepper.run_to_end()
        assert [result.name for result in results][0] == "call_llm" and len(server.requests) == 2
        assert stepper.response is not None and stepper.response.chat_message.to_text() == "Shown live."
        with pytest.warns(UserWarning, match="cannot rewind"):
            await stepper.reset()  # a real model's calls cannot be taken back: Reset says so
        await client.close()


async def test_a_subclass_of_autogens_base_class_in_the_live_view_and_the_stepper() -> None:
    client = EchoClient(["Seen live.", add_call(), "Stepped to 5."])
    agent = AssistantAgent("bot", client, tools=[add], reflect_on_tool_use=True, model_client_stream=True)
    view = AgentRunView(interval=3600)
    response = await view.run(agent, "hello")
    assert response is not None and response.chat_message.to_text() == "Seen live." and view.status == "ok"
    stepper = Stepper(agent, "2 + 3?")
    results = await stepper.run_to_end()
    assert [result.name for result in results] == [
        "add_messages", "message_id", "call_llm", "tool_request", "tool_execution", "reflect",
    ]  # fmt: skip
    assert results[2].request is not None and results[2].result is not None  # what was sent, what came back
    assert stepper.response is not None and stepper.response.chat_message.to_text() == "Stepped to 5."


async def test_nbagents_base_class_takes_a_create_stream_only_subclass() -> None:
    class StreamOnly(ChatCompletionClient):
        model_info = INFO  # type: ignore[assignment]

        async def create_stream(self, messages: Sequence[Any], **kwargs: Any) -> AsyncGenerator[Any, None]:  # type: ignore[override]
            yield "streamed "
            yield CreateResult(finish_reason="stop", content="streamed answer")

    agent = AssistantAgent("bot", StreamOnly())
    assert (await agent.run(task="a")).messages[-1].content == "streamed answer"  # create() reads the stream
    streaming = AssistantAgent("bot2", StreamOnly(), model_client_stream=True)
    items = [item async for item in streaming.run_stream(task="b")]
    assert [type(item).__name__ for item in items][1:] == [
        "ModelClientStreamingChunkEvent",
        "TextMessage",
        "TaskResult",
    ]


async def test_a_duck_typed_client_with_checkpoint_and_restore_is_rewound_by_reset() -> None:
    class Scripted:
        model_info = INFO

        def __init__(self) -> None:
            self.position = 0

        async def create(self, messages: Sequence[Any], **kwargs: Any) -> agm.CreateResult:
            self.position += 1
            return ag_result(f"answer {self.position}")

        def checkpoint(self) -> int:
            return self.position

        def restore(self, checkpoint: object) -> None:
            assert isinstance(checkpoint, int)
            self.position = checkpoint

    client = Scripted()
    agent = AssistantAgent("bot", client)
    stepper = Stepper(agent, "go")
    await stepper.run_to_end()
    assert stepper.response is not None and stepper.response.chat_message.to_text() == "answer 1"
    await stepper.reset()  # no warning: the client rewinds itself
    assert client.position == 0
    await stepper.run_to_end()
    assert stepper.response is not None and stepper.response.chat_message.to_text() == "answer 1"


async def test_a_duck_typed_clients_key_is_read_at_its_first_call_not_at_construction() -> None:
    """Issue 40.5 (key-read-at-construction): constructing the agent calls no ``dump_component`` of the
    client (AutoGen's agent calls none, and AutoGen's test counts the calls); the key its config holds is
    masked from its first call on, in the error it raises and the trace."""
    secret = "sk-duck-" + "7f3a9c1e5b2d4680"
    client = MagicMock()
    client.model_info = {"function_calling": False, "vision": False, "family": "unknown"}
    client.dump_component = MagicMock(
        return_value=nbagent.ComponentModel(provider="test", config={"model": "duck-1", "api_key": secret})
    )
    client.create = AsyncMock(side_effect=RuntimeError(f"HTTP 401: invalid key {secret}"))
    agent = AssistantAgent("duck", model_client=client)
    assert client.dump_component.call_count == 0
    with pytest.raises(RuntimeError) as failed:
        await agent.run(task="hi")
    assert secret not in str(failed.value) and "[REDACTED]" in str(failed.value)
    assert secret not in agent.trace.llm_calls_df().to_json()
    assert agent.trace.llm_calls_df()["model"].tolist() == ["duck-1"]
    assert client.dump_component.call_count == 1  # read once, at the first call

    second = MagicMock(model_info=client.model_info, dump_component=client.dump_component)
    client.dump_component.reset_mock()
    AssistantAgent("duck2", model_client=second).dump_component()
    assert client.dump_component.call_count == 1  # the agent's dump is the one call: its config read from it
