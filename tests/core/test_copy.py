"""``AssistantAgent.copy()``: the same configuration, a fresh context of the same kind, runs of its own."""

from __future__ import annotations

import asyncio

import pytest

from nbagent import (
    AssistantAgent,
    BufferedChatCompletionContext,
    FunctionExecutionResultMessage,
    HeadAndTailChatCompletionContext,
    ListMemory,
    MemoryContent,
    ReplayChatCompletionClient,
    ReplayExhaustedError,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
    UserMessage,
)

from .helpers import add, calls, context


def make_agent(**kwargs: object) -> AssistantAgent:
    script = [calls(("c1", "add", '{"a": 1, "b": 2}')), "three", "again"]
    return AssistantAgent(
        "helper",
        ReplayChatCompletionClient(script),
        tools=[add],
        handoffs=["boss"],
        system_message="Be brief.",
        description="adds",
        model_client_stream=True,
        max_tool_iterations=2,
        tool_call_summary_format="{tool_name}: {result}",
        metadata={"team": "maths"},
        **kwargs,  # type: ignore[arg-type]
    )


async def test_copy_has_the_same_configuration() -> None:
    memory = ListMemory(memory_contents=[MemoryContent(content="likes sums", mime_type="text/plain")])
    agent = make_agent(memory=memory)
    copy = agent.copy()
    assert type(copy) is AssistantAgent and copy is not agent
    assert copy.dump_component() == agent.dump_component()
    assert copy.model_client is agent.model_client
    assert copy.tools == agent.tools and [t["name"] for t in copy.tools] == ["add", "transfer_to_boss"]
    assert copy.memory == [memory]
    assert copy.handoffs == agent.handoffs
    assert copy.loop_settings == agent.loop_settings
    assert copy.produced_message_types == agent.produced_message_types
    assert (copy.name, copy.description, copy.metadata) == ("helper", "adds", {"team": "maths"})
    copy.metadata["team"] = "other"  # the copy's containers are its own
    assert agent.metadata == {"team": "maths"}


async def test_copy_starts_with_an_empty_context_and_runs_on_its_own() -> None:
    agent = make_agent()
    assert (await agent.run(task="1 + 2?")).messages[-1].content == "three"
    template_context = context(agent)
    copy = agent.copy()
    assert copy.model_context is not agent.model_context
    assert type(copy.model_context) is UnboundedChatCompletionContext
    assert len(copy.model_context) == 0
    assert agent.trace.items and copy.trace.items == [] and copy.trace.owner is copy
    result = await copy.run(task="again?")
    assert result.messages[-1].content == "again"  # the shared client's script goes on
    assert [m.content for m in copy.model_context.messages] == ["again?", "again"]
    assert context(agent) == template_context
    assert {item.run_id for item in copy.trace.items if hasattr(item, "run_id")}.isdisjoint(
        {item.run_id for item in agent.trace.items if hasattr(item, "run_id")}
    )


async def test_copy_runs_while_the_template_runs_and_keeps_no_failed_run() -> None:
    gate = asyncio.Event()

    async def wait() -> str:
        await gate.wait()
        return "released"

    client = ReplayChatCompletionClient([calls(("c1", "wait", "{}")), "copy's answer"])
    agent = AssistantAgent("a", client, tools=[wait])
    first = asyncio.create_task(agent.run(task="first"))
    while not agent.is_running or len(agent.model_context) < 2:
        await asyncio.sleep(0)
    copy = agent.copy()
    assert not copy.is_running
    assert (await copy.run(task="second")).messages[-1].content == "copy's answer"
    assert agent.is_running
    gate.set()
    assert (await first).messages[-1].content == "released"
    assert [m.content for m in copy.model_context.messages] == ["second", "copy's answer"]
    assert isinstance(agent.model_context.messages[-1], FunctionExecutionResultMessage)

    failing = AssistantAgent("b", ReplayChatCompletionClient([]))
    with pytest.raises(ReplayExhaustedError):
        await failing.run(task="x")
    assert failing.failed_run is not None
    assert failing.copy().failed_run is None


async def test_copy_keeps_the_context_kind_and_settings() -> None:
    first = UserMessage(content="hello", source="user")
    contexts = [
        BufferedChatCompletionContext(3, initial_messages=[first]),
        HeadAndTailChatCompletionContext(2, 4),
        TokenLimitedChatCompletionContext(token_limit=50, count_tokens=lambda message: 1),
    ]
    for model_context in contexts:
        agent = AssistantAgent("a", ReplayChatCompletionClient(["ok"]), model_context=model_context)
        await agent.run(task="go")
        copy = agent.copy()
        fresh = copy.model_context
        assert type(fresh) is type(model_context) and fresh is not model_context
        assert vars(fresh) == vars(model_context)  # the same settings
        expected = [first] if isinstance(model_context, BufferedChatCompletionContext) else []
        assert fresh.messages == expected  # its initial messages, none of the template's run
        assert len(model_context) == len(expected) + 2
        await fresh.add_message(UserMessage(content="more", source="user"))
        assert len(model_context) == len(expected) + 2


async def test_copy_with_another_model_client() -> None:
    agent = make_agent()
    client = ReplayChatCompletionClient(["from the other client"])
    copy = agent.copy(model_client=client)
    assert copy.model_client is client and agent.model_client is not client
    assert copy.workbench == agent.workbench and copy.tools == agent.tools
    assert (await copy.run(task="hi")).messages[-1].content == "from the other client"
    with pytest.raises(TypeError, match="model_client must be a ChatCompletionClient"):
        agent.copy(model_client="gpt-4o")  # type: ignore[arg-type]


def test_workbench_is_a_copy_of_the_agents_workbenches() -> None:
    agent = make_agent()
    [workbench] = agent.workbench
    assert [tool.name for tool in workbench.tools] == ["add"]  # type: ignore[attr-defined]
    agent.workbench.clear()
    assert len(agent.workbench) == 1
    assert AssistantAgent("b", ReplayChatCompletionClient(["x"])).workbench == []
