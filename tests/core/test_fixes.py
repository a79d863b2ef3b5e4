"""The eight places where nbagent deliberately differs from AutoGen 0.7.5 (SPEC.md, "nbagent fixes")."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from nbagent import (
    AgentBusyError,
    AssistantAgent,
    CancellationToken,
    FunctionTool,
    Handoff,
    ListMemory,
    Memory,
    MemoryContent,
    MemoryQueryResult,
    ReplayChatCompletionClient,
    StructuredMessage,
    TextMessage,
)

from ..waits import within
from .helpers import U_GO, a_calls, add, calls, context, every_call_answered, ferm, kinds, other_tasks, text

ADD_12 = ("c1", "add", '{"a": 1, "b": 2}')


async def test_fix1_concurrent_run_raises_at_once_and_leaves_context() -> None:
    started = asyncio.Event()

    async def slow(x: str) -> str:
        started.set()
        await asyncio.sleep(0.05)
        return x

    agent = AssistantAgent(
        "agent", ReplayChatCompletionClient([calls(("c1", "slow", '{"x": "A"}')), "B"]), tools=[slow]
    )
    first = asyncio.create_task(agent.run(task="t1"))
    await started.wait()
    snapshot = context(agent)
    with pytest.raises(AgentBusyError, match="agent 'agent' is running") as info:
        await agent.run(task="t2")
    assert isinstance(info.value, RuntimeError)
    assert context(agent) == snapshot
    result = await first
    assert result.messages[-1].content == "A"
    assert context(agent) == [
        {"content": "t1", "source": "user", "type": "UserMessage"},
        a_calls(("c1", "slow", '{"x": "A"}')),
        ferm(("A", "slow", "c1", False)),
    ]


async def test_fix2_cancel_during_tool_returns_and_leaves_valid_context() -> None:
    async def sleepy(x: str) -> str:
        await asyncio.sleep(3600)  # far past the test's hang guard: only the cancel ends it
        return x

    token = CancellationToken()
    agent = AssistantAgent(
        "agent", ReplayChatCompletionClient([calls(("c1", "sleepy", '{"x": "A"}')), "next turn"]), tools=[sleepy]
    )
    before = asyncio.all_tasks()
    run = asyncio.create_task(agent.run(task="go", cancellation_token=token))
    await asyncio.sleep(0.01)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(run, "the cancelled run to end")
    assert other_tasks(before) == set()
    assert context(agent) == [
        U_GO,
        a_calls(("c1", "sleepy", '{"x": "A"}')),
        ferm(("Error: the run was cancelled before this tool call finished", "sleepy", "c1", True)),
    ]
    assert (await agent.run(task="again")).messages[-1].content == "next turn"
    assert every_call_answered(agent)


async def test_fix3_tool_schemas_built_once(monkeypatch: pytest.MonkeyPatch) -> None:
    tool = FunctionTool(add)
    builds = 0
    original = BaseModel.model_json_schema.__func__

    def counting(cls, *args, **kwargs):
        nonlocal builds
        builds += 1
        return original(cls, *args, **kwargs)

    script = [calls((f"c{i}", "add", '{"a": 1, "b": 2}')) for i in range(3)] + ["done"]
    client = ReplayChatCompletionClient(script)
    agent = AssistantAgent("agent", client, tools=[tool], max_tool_iterations=4)  # reads (builds) it once
    # Any schema built during the run counts (the tool's arguments model's included).
    monkeypatch.setattr(BaseModel, "model_json_schema", classmethod(counting))
    await agent.run(task="go")
    assert builds == 0
    assert len(client.requests) == 4
    assert all(request.tools[0] is tool.schema for request in client.requests)


async def test_fix4_memory_does_not_pile_up_and_receives_the_token() -> None:
    seen: list[CancellationToken | None] = []

    class Recording(ListMemory):
        async def query(self, query="", cancellation_token=None) -> MemoryQueryResult:
            seen.append(cancellation_token)
            return await super().query(query, cancellation_token)

    memory = Recording(memory_contents=[MemoryContent(content="user likes tea")])
    agent = AssistantAgent("agent", ReplayChatCompletionClient(["one", "two", "three", "four"]), memory=memory)
    token = CancellationToken()
    run_tokens = []
    for task in ("a", "b", "c"):
        run = agent.iter([TextMessage(content=task, source="user")], token)
        items = [item async for item in run]
        assert [type(i).__name__ for i in items if hasattr(i, "type")] == ["MemoryQueryEvent"]
        run_tokens.append(run.token)
    system = [m for m in agent.model_context.messages if m.type == "SystemMessage"]
    assert [m.content for m in system] == ["\nRelevant memory content (in chronological order):\n1. user likes tea\n"]
    assert seen == run_tokens  # each run's token, which the caller's token cancels
    await memory.add(MemoryContent(content="and cake"))
    await agent.run(task="d")
    system = [m.content for m in agent.model_context.messages if m.type == "SystemMessage"]
    assert system[1] == "\nRelevant memory content (in chronological order):\n1. and cake\n"
    assert isinstance(memory, Memory)


async def test_fix5_handoffs_matched_by_name_and_target_made_a_tool_name() -> None:
    async def bob(x: str) -> str:
        """A tool that happens to share the handoff's target name."""
        return x

    handoff = Handoff(target="bob", name="ask_bob")
    odd = Handoff(target="my-agent")
    assert odd.name == "transfer_to_my_agent"
    client = ReplayChatCompletionClient([calls(("h1", "ask_bob", "{}"))])
    agent = AssistantAgent("agent", client, tools=[bob], handoffs=[handoff, odd])
    assert [t["name"] for t in agent.tools] == ["bob", "ask_bob", "transfer_to_my_agent"]
    result = await agent.run(task="go")
    assert result.messages[-1].type == "HandoffMessage"
    assert result.messages[-1].target == "bob"


async def test_fix5_calling_a_tool_named_like_a_target_is_no_handoff() -> None:
    async def bob(x: str) -> str:
        return f"bob:{x}"

    client = ReplayChatCompletionClient([calls(("c1", "bob", '{"x": "1"}'))])
    agent = AssistantAgent("agent", client, tools=[bob], handoffs=[Handoff(target="bob", name="ask_bob")])
    result = await agent.run(task="go")
    assert result.messages[-1].type == "ToolCallSummaryMessage"
    assert result.messages[-1].content == "bob:1"


class Out(BaseModel):
    answer: str
    score: int


async def test_fix6_reflected_structured_answer_keeps_format_string() -> None:
    client = ReplayChatCompletionClient([calls(ADD_12), '{"answer": "y", "score": 4}'])
    agent = AssistantAgent(
        "agent", client, tools=[add], output_content_type=Out, output_content_type_format="{answer}={score}"
    )
    result = await agent.run(task="go")
    final = result.messages[-1]
    assert isinstance(final, StructuredMessage)
    assert final.format_string == "{answer}={score}"
    assert final.to_text() == "y=4"


async def test_fix7_replay_calls_functions_by_default_and_is_bounded() -> None:
    client = ReplayChatCompletionClient(["a", "b", "c", "d", "e"], keep_requests=2)
    assert client.model_info["function_calling"] is True
    agent = AssistantAgent("agent", client, tools=[add])
    for task in "vwxyz":
        await agent.run(task=task)
    assert len(client.requests) == 2
    assert [r.messages[-1].content for r in client.requests] == ["y", "z"]


async def test_fix8_streamed_chunks_name_the_message_also_after_a_thought() -> None:
    script = [calls(ADD_12, thought="T1"), text("gamma delta", thought="T2")]
    client = ReplayChatCompletionClient(script, stream_results=True)  # a scripted result's text streamed too
    agent = AssistantAgent("agent", client, tools=[add], model_client_stream=True, max_tool_iterations=2)
    events = [e async for e in agent.run_stream(task="go")]
    assert kinds(events) == [
        "TextMessage",
        "ThoughtEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ModelClientStreamingChunkEvent",
        "ModelClientStreamingChunkEvent",
        "ThoughtEvent",
        "TextMessage",
        "TaskResult",
    ]
    final = events[7]
    assert [e.full_message_id for e in events[4:6]] == [final.id, final.id]
    assert events[6].id != final.id and events[6].content == "T2"
    assert every_call_answered(agent)
