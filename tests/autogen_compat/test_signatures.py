"""AutoGen 0.7.5's signatures and results around the agent, as its documentation gives them:
``ModelFamily`` and the full ``ModelInfo``, ``TokenLimitedChatCompletionContext(model_client,
token_limit=...)``, ``run``/``run_stream(output_task_messages=...)``,
``ReplayChatCompletionClient.create_calls``, ``StructuredMessage.to_model_text()``, a
``ValidationError`` for an invalid structured answer, the messages for a model without function
calling, ``Invalid chunk type``, images for a model without vision, and the top-level names.

Where nbagent keeps one of its documented fixes instead (the run's own token for the model client,
a handoff target equal to a tool name), the test asserts nbagent's documented behaviour.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from collections.abc import AsyncGenerator
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

import nbagent
from nbagent import (
    AssistantAgent,
    CancellationToken,
    CreateResult,
    FunctionCall,
    FunctionTool,
    Handoff,
    HandoffMessage,
    Image,
    ModelFamily,
    ModelInfo,
    OpenAIChatCompletionClient,
    ReplayChatCompletionClient,
    RequestUsage,
    StructuredMessage,
    StructuredOutputError,
    SystemMessage,
    TaskResult,
    TextMessage,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
    UserMessage,
)
from nbagent.models import ModelRequest, ModelStream

from ..waits import within

FAKE_KEY = "sk-" + "test-0123456789"  # a fake key, made at run time
PIXEL = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="


def add(a: int, b: int = 2) -> int:
    """Add two numbers."""
    return a + b


class Answer(BaseModel):
    city: str
    population: int


def tool_calls(*names: str) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"call_{i}", name=name, arguments="{}") for i, name in enumerate(names)],
        usage=RequestUsage(prompt_tokens=3, completion_tokens=2),
    )


# --------------------------------------------------------------------------- ModelFamily, ModelInfo


def test_model_family_constants_are_autogens() -> None:
    assert ModelFamily.UNKNOWN == "unknown"
    assert (ModelFamily.GPT_4O, ModelFamily.GPT_41, ModelFamily.GPT_5, ModelFamily.O3) == (
        "gpt-4o",
        "gpt-41",
        "gpt-5",
        "o3",
    )
    assert ModelFamily.R1 == "r1" and ModelFamily.GEMINI_2_5_FLASH == "gemini-2.5-flash"
    assert ModelFamily.CLAUDE_3_5_SONNET == "claude-3-5-sonnet" and ModelFamily.LLAMA_4_SCOUT == "llama-4-scout"
    assert ModelFamily.MISTRAL == "mistral" and ModelFamily.CODESRAL == "codestral"
    with pytest.raises(TypeError, match="namespace"):
        ModelFamily()


def test_model_family_matches_the_installed_autogen() -> None:
    autogen_models = pytest.importorskip("autogen_core.models")
    theirs = autogen_models.ModelFamily
    constants = {name: value for name, value in vars(theirs).items() if name.isupper() and isinstance(value, str)}
    assert constants == {name: getattr(ModelFamily, name) for name in constants}
    for name in ("is_openai", "is_gemini", "is_claude", "is_llama", "is_mistral"):
        for family in [*constants.values(), "replay", "qwen"]:
            assert getattr(ModelFamily, name)(family) == getattr(theirs, name)(family), (name, family)


def test_full_model_info_is_accepted() -> None:
    info: ModelInfo = {
        "vision": False,
        "function_calling": True,
        "json_output": True,
        "family": ModelFamily.UNKNOWN,
        "structured_output": True,
        "multiple_system_messages": True,
    }
    replay = ReplayChatCompletionClient(["hi"], model_info=info)
    assert replay.model_info == info
    openai = OpenAIChatCompletionClient("llama3.2", base_url="http://127.0.0.1:11434/v1", api_key="", model_info=info)
    assert openai.model_info == info
    agent = AssistantAgent("a", replay, tools=[add])
    assert agent.model_client.model_info["multiple_system_messages"] is True
    assert set(ModelInfo.__annotations__) == {
        "vision",
        "function_calling",
        "json_output",
        "family",
        "structured_output",
        "multiple_system_messages",
    }


# --------------------------------------------------------------------------- TokenLimitedChatCompletionContext


async def test_token_limited_context_takes_autogens_signature() -> None:
    client = ReplayChatCompletionClient(["x"])
    context = TokenLimitedChatCompletionContext(model_client=client, token_limit=30)
    positional = TokenLimitedChatCompletionContext(client, token_limit=30, tool_schema=[], initial_messages=[])
    for ctx in (context, positional):
        for i in range(10):
            await ctx.add_message(UserMessage(content=f"message number {i} " * 3, source="user"))
        kept = await ctx.get_messages()
        assert 0 < len(kept) < 10
        assert kept[-1].content.startswith("message number 9")
        assert client.count_tokens(kept) <= 30


async def test_token_limited_context_counts_the_tools() -> None:
    tools = [FunctionTool(add).schema]
    # A client whose count_tokens counts the tools (AutoGen's replay client, and so nbagent's, does not)
    client = OpenAIChatCompletionClient("gpt-4o", api_key=FAKE_KEY)
    plain = TokenLimitedChatCompletionContext(client, token_limit=60)
    with_tools = TokenLimitedChatCompletionContext(client, token_limit=60, tool_schema=tools)
    for ctx in (plain, with_tools):
        for i in range(10):
            await ctx.add_message(UserMessage(content=f"message number {i}", source="user"))
    assert len(await with_tools.get_messages()) < len(await plain.get_messages())


async def test_token_limited_context_without_limit_needs_a_client_that_knows_one() -> None:
    # nbagent's OpenAI client knows the window of the models AutoGen's does (issue 40.5, token-limit-required)
    known = OpenAIChatCompletionClient("gpt-4.1-nano", api_key=FAKE_KEY)
    assert known.context_window == 1_047_576
    assert known.remaining_tokens([UserMessage(content="hello", source="user")]) == 1_047_576 - known.count_tokens(
        [UserMessage(content="hello", source="user")]
    )
    windowed = TokenLimitedChatCompletionContext(known)
    for text in ("Hello!", "What can I do for you?", "Tell what are some fun things to do in seattle."):
        await windowed.add_message(UserMessage(content=text, source="user"))
    assert len(await windowed.get_messages()) == 3
    # a model whose window is not known (another server's): refused, naming token_limit
    local = OpenAIChatCompletionClient("my-local-model", base_url="http://127.0.0.1:9/v1", api_key="")
    assert local.context_window is None
    with pytest.raises(ValueError, match="token_limit must be a number of tokens.*context window is not known"):
        TokenLimitedChatCompletionContext(local)
    with pytest.raises(ValueError, match="context window of 'my-local-model' is not known"):
        local.remaining_tokens([])
    context = TokenLimitedChatCompletionContext(ReplayChatCompletionClient(["x"]))  # AutoGen's replay budget
    await context.add_message(UserMessage(content="hello", source="user"))
    assert [m.content for m in await context.get_messages()] == ["hello"]


async def test_token_limited_context_with_autogens_client_and_no_limit() -> None:
    replay = pytest.importorskip("autogen_ext.models.replay")
    context = TokenLimitedChatCompletionContext(model_client=replay.ReplayChatCompletionClient(["x"]))
    await context.add_message(UserMessage(content="hello", source="user"))
    assert [m.content for m in await context.get_messages()] == ["hello"]


# --------------------------------------------------------------------------- run / run_stream


async def test_run_output_task_messages() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["one", "two"]))
    with_task = await agent.run(task="first")
    assert [m.content for m in with_task.messages] == ["first", "one"]
    without = await agent.run(task="second", output_task_messages=False)
    assert [m.content for m in without.messages] == ["two"]
    assert len(agent.model_context.messages) == 4  # the task still went into the context


async def test_run_stream_output_task_messages() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["one"]), model_client_stream=True)
    items = [item async for item in agent.run_stream(task="hi", output_task_messages=False)]
    result = items[-1]
    assert isinstance(result, TaskResult)
    assert not any(isinstance(item, TextMessage) and item.content == "hi" for item in items)
    assert [m.content for m in result.messages] == ["one"]


def test_run_sync_output_task_messages() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["one"]))
    assert [m.content for m in agent.run_sync("hi", output_task_messages=False).messages] == ["one"]


# --------------------------------------------------------------------------- ReplayChatCompletionClient.create_calls


async def test_replay_create_calls() -> None:
    client = ReplayChatCompletionClient(["a", "b"])
    token = CancellationToken()
    messages = [UserMessage(content="hello", source="user")]
    await client.create(messages, json_output=True, extra_create_args={"temperature": 0}, cancellation_token=token)
    await client.create(messages)
    first, second = client.create_calls
    assert set(first) == {"messages", "tools", "json_output", "extra_create_args", "cancellation_token"}
    assert first["messages"] == messages and first["json_output"] is True
    assert first["extra_create_args"] == {"temperature": 0} and first["cancellation_token"] is token
    assert second["cancellation_token"] is None and second["tools"] == []
    client.reset()
    assert client.create_calls == []


async def test_replay_create_calls_of_an_agent_run() -> None:
    client = ReplayChatCompletionClient([tool_calls("add"), "done"])
    agent = AssistantAgent("a", client, tools=[add], system_message="sys", reflect_on_tool_use=True)
    await agent.run(task="go")
    assert len(client.create_calls) == 2
    assert [tool["name"] for tool in client.create_calls[0]["tools"]] == ["add"]
    assert client.create_calls[0]["messages"][0].content == "sys"


async def test_replay_exhausted_is_a_value_error() -> None:
    # AutoGen's replay client raises ValueError("No more mock responses available").
    client = ReplayChatCompletionClient(["only"])
    await client.create([UserMessage(content="hello", source="user")])
    with pytest.raises(ValueError, match="^No more mock responses available: .* no answer left") as raised:
        await client.create([UserMessage(content="again", source="user")])
    assert isinstance(raised.value, nbagent.ReplayExhaustedError) and isinstance(raised.value, nbagent.ModelError)


async def test_one_system_message_for_a_model_without_multiple_system_messages() -> None:
    # AutoGen's OpenAI client merges contiguous system messages for such a model and refuses others.
    from tests.models.chat_server import ChatServer, Reply

    info: ModelInfo = {
        "vision": False, "function_calling": True, "json_output": False, "family": ModelFamily.UNKNOWN,
        "structured_output": False, "multiple_system_messages": False,
    }  # fmt: skip
    with ChatServer() as server:
        server.script(Reply.text("Hi."), Reply.text("Hi again."))
        client = OpenAIChatCompletionClient(
            "qwen2.5:7b", base_url=server.base_url, api_key=FAKE_KEY, model_info=info, max_retries=0
        )
        try:
            memory = SystemMessage(content="Relevant memory: likes tea")
            await client.create(
                [SystemMessage(content="You are helpful."), memory, UserMessage(content="hi", source="u")]
            )
            sent = server.requests[0].body["messages"]
            assert sent == [
                {"role": "system", "content": "You are helpful.\nRelevant memory: likes tea"},
                {"role": "user", "content": "hi"},
            ]
            with pytest.raises(ValueError, match="Multiple and Not continuous system messages are not supported"):
                await client.create([SystemMessage(content="a"), UserMessage(content="hi", source="u"), memory])
            assert len(server.requests) == 1  # refused before sending
            # A model that takes several keeps them.
            several = OpenAIChatCompletionClient(
                "qwen2.5:7b", base_url=server.base_url, api_key=FAKE_KEY,
                model_info={**info, "multiple_system_messages": True}, max_retries=0,
            )  # fmt: skip
            await several.create([SystemMessage(content="a"), memory, UserMessage(content="hi", source="u")])
            assert [m["role"] for m in server.requests[1].body["messages"]] == ["system", "system", "user"]
            await several.close()
        finally:
            await client.close()


# --------------------------------------------------------------------------- structured answers


def test_structured_message_to_model_text() -> None:
    content = Answer(city="Paris", population=2_100_000)
    plain = StructuredMessage[Answer](content=content, source="a")
    assert plain.to_model_text() == content.model_dump_json()
    formatted = StructuredMessage[Answer](content=content, source="a", format_string="{city}: {population}")
    assert formatted.to_model_text() == "Paris: 2100000" == formatted.to_text()
    assert formatted.to_model_message() == UserMessage(content=content.model_dump_json(), source="a")
    assert TextMessage(content="hi", source="u").to_model_text() == "hi"


async def test_invalid_structured_answer_raises_a_validation_error() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(['{"city": "Paris"}']), output_content_type=Answer)
    with pytest.raises(ValidationError) as raised:
        await agent.run(task="Paris?")
    error = raised.value
    assert isinstance(error, StructuredOutputError) and isinstance(error, ValueError)
    assert [item["loc"] for item in error.errors()] == [("population",)]
    assert isinstance(error.__cause__, ValidationError)  # pydantic's own error, chained
    assert "not a valid Answer" in str(error)


async def test_answer_that_is_not_json_raises_a_validation_error() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["Paris, of course"]), output_content_type=Answer)
    with pytest.raises(ValidationError, match="json_invalid|Invalid JSON"):
        await agent.run(task="Paris?")


# --------------------------------------------------------------------------- a model without function calling

NO_TOOLS: ModelInfo = {
    "vision": False,
    "function_calling": False,
    "json_output": False,
    "family": ModelFamily.R1,
    "structured_output": False,
}


def test_messages_for_a_model_without_function_calling() -> None:
    client = ReplayChatCompletionClient(["x"], model_info=NO_TOOLS)
    with pytest.raises(ValueError, match=r"^The model does not support function calling\.$"):
        AssistantAgent("a", client, tools=[add])
    with pytest.raises(
        ValueError, match=r"^The model does not support function calling, which is needed for handoffs\.$"
    ):
        AssistantAgent("a", client, handoffs=["billing"])
    AssistantAgent("a", client)  # no tools, no handoffs: fine


# --------------------------------------------------------------------------- streams


class OddStream(ReplayChatCompletionClient):
    """A client whose stream yields something that is neither text nor a CreateResult."""

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[Any, None]:
        yield "fine "
        yield 42
        yield CreateResult(
            finish_reason="stop", content="fine", usage=RequestUsage(prompt_tokens=1, completion_tokens=1)
        )


async def test_a_streamed_chunk_of_an_invalid_type_raises() -> None:
    agent = AssistantAgent("a", OddStream(["unused"]), model_client_stream=True)
    with pytest.raises(RuntimeError, match=r"Invalid chunk type: <class 'int'>"):
        await agent.run(task="hi")
    assert agent.failed_run is not None


# --------------------------------------------------------------------------- images for a model without vision


async def test_images_become_text_for_a_model_without_vision() -> None:
    picture = UserMessage(content=["What is this?", Image(data=PIXEL), "Be brief."], source="user")
    client = ReplayChatCompletionClient(["A pixel."])  # vision False
    context = UnboundedChatCompletionContext(initial_messages=[picture])
    agent = AssistantAgent("a", client, model_context=context, system_message=None)
    result = await agent.run(task="Please.")
    assert result.messages[-1].content == "A pixel."
    sent = client.create_calls[0]["messages"]
    assert sent[0] == UserMessage(content="What is this?\n<image>\nBe brief.", source="user")
    assert agent.model_context.messages[0] == picture  # the context keeps the image


async def test_images_are_sent_to_a_model_with_vision() -> None:
    picture = UserMessage(content=["What is this?", Image(data=PIXEL)], source="user")
    client = ReplayChatCompletionClient(["A pixel."], model_info={"vision": True})
    agent = AssistantAgent(
        "a", client, model_context=UnboundedChatCompletionContext(initial_messages=[picture]), system_message=None
    )
    await agent.run(task="Please.")
    assert client.create_calls[0]["messages"][0] == picture


# --------------------------------------------------------------------------- kept fixes (docs/contract.md)


class WaitingClient(ReplayChatCompletionClient):
    """Keeps the token each call gets, and waits until it is cancelled."""

    tokens: list[Any]

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        self.tokens.append(cancellation_token)
        assert cancellation_token is not None
        fired = asyncio.Event()
        cancellation_token.add_callback(fired.set)
        await fired.wait()
        raise asyncio.CancelledError()


async def test_the_client_gets_the_runs_token_linked_to_the_callers() -> None:
    """Fix 2: the model client gets the run's own token, which the caller's token cancels."""
    client = WaitingClient(["unused"])
    client.tokens = []
    agent = AssistantAgent("a", client)
    caller = CancellationToken()
    task = asyncio.ensure_future(agent.run(task="hi", cancellation_token=caller))
    while not client.tokens:
        await asyncio.sleep(0.01)
    given = client.tokens[0]
    assert given is not caller and not given.is_cancelled()
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(task, "the cancelled run to end")
    assert given.is_cancelled()


async def test_a_handoff_target_may_equal_a_tool_name() -> None:
    """Fix 5: calls are matched by handoff name, so a target named like a tool is unambiguous."""

    def billing() -> str:
        """Look up the bill."""
        return "42 EUR"

    client = ReplayChatCompletionClient([tool_calls("billing"), tool_calls("transfer_to_billing")])
    agent = AssistantAgent("a", client, tools=[billing], handoffs=[Handoff(target="billing")], max_tool_iterations=2)
    result = await agent.run(task="bill?")
    message = result.messages[-1]
    assert isinstance(message, HandoffMessage) and message.target == "billing"
    executions = [m for m in result.messages if type(m).__name__ == "ToolCallExecutionEvent"]
    assert executions[0].content[0].content == "42 EUR"  # the tool ran as a tool
    with pytest.raises(ValueError, match="unique from tool names"):  # a handoff *name* equal to a tool's still fails
        AssistantAgent(
            "b", ReplayChatCompletionClient(["x"]), tools=[billing], handoffs=[Handoff(target="x", name="billing")]
        )


# --------------------------------------------------------------------------- top-level names


def test_autogen_names_are_importable_from_nbagent() -> None:
    for name in (
        "ModelFamily",
        "ModelInfo",
        "ComponentModel",
        "Component",
        "load_component",
        "McpWorkbench",
        "StdioServerParams",
        "SseServerParams",
        "StreamableHttpServerParams",
        "StructuredMessageFactory",
        "TokenLimitedChatCompletionContext",
        "MemoryMimeType",
        "ToolSchema",
        "ParametersSchema",
        "StaticStreamWorkbench",
        "mcp_server_tools",
    ):
        assert name in nbagent.__all__ and getattr(nbagent, name) is not None


async def test_memory_mime_type_and_static_stream_workbench_as_autogen_uses_them() -> None:
    from nbagent import MemoryContent, MemoryMimeType, ParametersSchema, StaticStreamWorkbench, ToolSchema

    assert [m.value for m in MemoryMimeType] == [
        "text/plain", "application/json", "text/markdown", "image/*", "application/octet-stream",
    ]  # fmt: skip
    item = MemoryContent(content="metric units", mime_type=MemoryMimeType.TEXT)
    assert item.mime_type == "text/plain" and item.mime_type == MemoryMimeType.TEXT
    assert MemoryContent.model_validate_json(item.model_dump_json()).mime_type == MemoryMimeType.TEXT
    parameters: ParametersSchema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    schema = ToolSchema(name="add", description="Add", parameters=dict(parameters))
    assert schema["parameters"]["required"] == ["a"]
    workbench = StaticStreamWorkbench([add])
    streamed = [item async for item in workbench.call_tool_stream("add", {"a": 1, "b": 2})]
    assert streamed[-1].to_text() == "3"  # type: ignore[union-attr]


@pytest.mark.subprocess
def test_import_nbagent_stays_light() -> None:
    code = textwrap.dedent(
        """
        import sys
        import nbagent
        nbagent.load_component, nbagent.ModelFamily, nbagent.ComponentModel, nbagent.mcp_server_tools
        heavy = {"pandas", "pyarrow", "ipywidgets", "mcp", "autogen_core", "autogen_agentchat", "autogen_ext", "openai"}
        print(",".join(sorted({m.split(".")[0] for m in sys.modules} & heavy)))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""
