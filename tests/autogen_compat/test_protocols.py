"""Issue 40.3: AutoGen's objects (and anything that quacks as them) inside nbagent's agent, taken by
their protocol rather than their class: a model context, memory, workbench or model info that has the
members AutoGen's agent uses (a ``MagicMock`` with ``spec=`` of AutoGen's or nbagent's class
included) is used; an object missing some of them is refused naming what it lacks."""

from __future__ import annotations

from unittest.mock import AsyncMock, MagicMock

import pytest
from autogen_core.memory import Memory as AgMemory
from autogen_core.memory import MemoryQueryResult, UpdateContextResult
from autogen_core.model_context import ChatCompletionContext as AgContext
from autogen_core.tools import TextResultContent
from autogen_core.tools import ToolResult as AgToolResult
from autogen_core.tools import Workbench as AgWorkbench

import nbagent
from nbagent import (
    AssistantAgent,
    CancellationToken,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    UserMessage,
)
from nbagent.context import ProtocolContext


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def call(name: str, arguments: str) -> CreateResult:
    return CreateResult(finish_reason="function_calls", content=[FunctionCall(id="c1", name=name, arguments=arguments)])


@pytest.mark.parametrize("spec", [None, AgContext, nbagent.ChatCompletionContext], ids=["bare", "autogen", "nbagent"])
async def test_a_mocked_model_context_is_used_by_its_protocol(spec: type | None) -> None:
    context = MagicMock(spec=spec) if spec is not None else MagicMock()
    for name in ("add_message", "clear", "load_state"):
        setattr(context, name, AsyncMock())
    context.get_messages = AsyncMock(return_value=[UserMessage(content="what the mock says", source="user")])
    context.save_state = AsyncMock(return_value={"context": "state"})
    client = ReplayChatCompletionClient(["ok"])
    agent = AssistantAgent("bot", client, model_context=context, system_message=None)
    assert type(agent.model_context) is ProtocolContext and agent.model_context.inner is context

    assert (await agent.run(task="hello")).messages[-1].content == "ok"
    given = [args.args[0] for args in context.add_message.await_args_list]
    assert [(type(m).__name__, m.content) for m in given] == [("UserMessage", "hello"), ("AssistantMessage", "ok")]
    assert client.requests[0].messages == [UserMessage(content="what the mock says", source="user")]
    assert [m.content for m in agent.model_context.messages] == ["hello", "ok"]  # the trace's log of it
    assert agent.trace.runs_df().shape[0] == 1

    # AutoGen's state and reset tests: the context's own state, load_state and clear are the mock's.
    state = await agent.save_state()
    assert state["llm_context"] == {"context": "state"}
    await agent.load_state(state)
    context.load_state.assert_awaited_once_with({"context": "state"})
    await agent.on_reset(CancellationToken())
    context.clear.assert_awaited_once()


async def test_a_context_whose_get_messages_answers_no_list_fails_naming_it() -> None:
    context = MagicMock(spec=AgContext)  # its async methods are AsyncMocks answering a MagicMock
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["ok"]), model_context=context)
    with pytest.raises(TypeError, match=r"MagicMock.get_messages\(\) returned \w+, not a list of LLM messages"):
        await agent.run(task="hello")


def test_a_protocol_context_cannot_be_made_again_for_a_copy() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient([]), model_context=MagicMock(spec=AgContext))
    with pytest.raises(TypeError, match="nbagent cannot make a fresh MagicMock"):
        agent.copy()


@pytest.mark.parametrize("spec", [None, AgMemory, nbagent.Memory], ids=["bare", "autogen", "nbagent"])
async def test_a_mocked_memory_is_used_by_its_protocol(spec: type | None) -> None:
    memory = MagicMock(spec=spec) if spec is not None else MagicMock()
    memory.update_context = AsyncMock(return_value=UpdateContextResult(memories=MemoryQueryResult(results=[])))
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["ok"]), memory=[memory])
    assert (await agent.run(task="hello")).messages[-1].content == "ok"
    memory.update_context.assert_awaited_once()


@pytest.mark.parametrize("spec", [None, AgWorkbench, nbagent.Workbench], ids=["bare", "autogen", "nbagent"])
async def test_a_mocked_workbench_gets_the_tool_call(spec: type | None) -> None:
    workbench = MagicMock(spec=spec) if spec is not None else MagicMock()
    schema = {"name": "add", "description": "Add.", "parameters": {"type": "object", "properties": {}}}
    workbench.list_tools = AsyncMock(return_value=[schema])
    workbench.call_tool = AsyncMock(
        return_value=AgToolResult(name="add", result=[TextResultContent(content="5")], is_error=False)
    )
    agent = AssistantAgent("bot", ReplayChatCompletionClient([call("add", "{}")]), workbench=workbench)
    result = await agent.run(task="2 + 3")
    assert result.messages[-1].to_text() == "5"
    workbench.call_tool.assert_awaited_once()
    assert workbench.call_tool.await_args.args[0] == "add"


def test_a_mocked_model_info_is_read_as_autogen_reads_it() -> None:
    client = MagicMock()
    client.model_info = MagicMock()  # AutoGen reads model_info["function_calling"]: a MagicMock, truthy
    agent = AssistantAgent("bot", client, tools=[add])  # accepted: the model "calls functions"
    assert agent.model_client.model_info is client.model_info


def test_missing_members_of_a_protocol_are_named() -> None:
    class HalfWorkbench:
        async def list_tools(self) -> list[object]:
            return []

    with pytest.raises(TypeError, match=r"got HalfWorkbench: .* \(it has no call_tool\)"):
        AssistantAgent("bot", ReplayChatCompletionClient([]), workbench=HalfWorkbench())  # type: ignore[arg-type]

    class HalfMemory:
        async def query(self, query: object) -> None: ...

    with pytest.raises(TypeError, match=r"\(HalfMemory has no update_context, add, clear, close\)"):
        AssistantAgent("bot", ReplayChatCompletionClient([]), memory=HalfMemory())  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"memory\[0\] must be a Memory .* \(it has no update_context, add, clear, close\)"
    ):
        AssistantAgent("bot", ReplayChatCompletionClient([]), memory=[HalfMemory()])  # type: ignore[list-item]


async def test_a_workbench_taking_keywords_and_answering_a_result_with_to_text() -> None:
    """AutoGen's tests' workbench: ``call_tool(name, **kwargs)`` (called with AutoGen's keywords), its
    result any object with ``to_text()`` and ``is_error`` (read as AutoGen's agent reads it)."""
    workbench = MagicMock()
    workbench.list_tools = AsyncMock(return_value=[{"name": "t1", "description": "A tool."}])
    calls: list[tuple[str, dict[str, object]]] = []

    async def call_tool(name: str, **kwargs: object) -> object:
        calls.append((name, kwargs))
        result = MagicMock()
        result.to_text.return_value = f"Result from {name}"
        result.is_error = False
        return result

    workbench.call_tool = call_tool
    agent = AssistantAgent("bot", ReplayChatCompletionClient([call("t1", '{"param": "x"}')]), workbench=[workbench])
    result = await agent.run(task="go")
    assert result.messages[-1].to_text() == "Result from t1"
    ((name, kwargs),) = calls
    assert name == "t1" and kwargs["arguments"] == {"param": "x"} and set(kwargs) >= {"cancellation_token", "call_id"}
