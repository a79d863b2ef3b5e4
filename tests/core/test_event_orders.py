"""One test per row of SPEC.md's event-order table, checked against the AutoGen 0.7.5 dumps."""

from __future__ import annotations

import asyncio

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    Handoff,
    HandoffMessage,
    ListMemory,
    MemoryContent,
    ReplayChatCompletionClient,
    StructuredOutputError,
    TextMessage,
)

from .helpers import U_GO, a_calls, a_text, add, calls, context, ferm, kinds, text

ADD_12 = ("c1", "add", '{"a": 1, "b": 2}')


def agent(script: list, **kwargs) -> tuple[AssistantAgent, ReplayChatCompletionClient]:
    client = ReplayChatCompletionClient(script)
    kwargs.setdefault("tools", [add])
    return AssistantAgent("agent", client, **kwargs), client


async def test_plain_text() -> None:
    a, client = agent(["hello world"], tools=None)
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "TextMessage"]
    assert [m.content for m in result.messages] == ["go", "hello world"]
    assert context(a) == [U_GO, a_text("hello world")]
    assert len(client.requests) == 1


async def test_one_tool_reflect_off() -> None:
    a, client = agent([calls(ADD_12)])
    result = await a.run(task="go")
    assert kinds(result.messages) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallSummaryMessage",
    ]
    assert result.messages[-1].content == "3"
    assert context(a) == [U_GO, a_calls(ADD_12), ferm(("3", "add", "c1", False))]
    assert len(client.requests) == 1


async def test_one_tool_reflect_on() -> None:
    a, client = agent([calls(ADD_12), "sum is 3"], reflect_on_tool_use=True)
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "TextMessage"]
    assert result.messages[-1].content == "sum is 3"
    assert context(a) == [U_GO, a_calls(ADD_12), ferm(("3", "add", "c1", False)), a_text("sum is 3")]
    assert len(client.requests) == 2
    assert client.requests[1].tools == [] and client.requests[1].tool_choice == "none"


async def test_two_tool_rounds_then_text() -> None:
    c2 = ("c2", "add", '{"a": 3, "b": 4}')
    a, client = agent([calls(ADD_12), calls(c2), "done"], max_tool_iterations=3)
    result = await a.run(task="go")
    assert kinds(result.messages) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "TextMessage",
    ]
    assert result.messages[-1].content == "done"
    assert context(a) == [
        U_GO,
        a_calls(ADD_12),
        ferm(("3", "add", "c1", False)),
        a_calls(c2),
        ferm(("7", "add", "c2", False)),
        a_text("done"),
    ]
    assert len(client.requests) == 3


def three_rounds() -> list:
    return [calls((f"c{i}", "add", f'{{"a": {i}, "b": {i}}}')) for i in (1, 2, 3)]


def three_rounds_context() -> list:
    out = [U_GO]
    for i in (1, 2, 3):
        out += [a_calls((f"c{i}", "add", f'{{"a": {i}, "b": {i}}}')), ferm((str(2 * i), "add", f"c{i}", False))]
    return out


async def test_keeps_calling_tools_limit_3_summary() -> None:
    a, client = agent([*three_rounds(), "never sent"], max_tool_iterations=3)
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage"] + ["ToolCallRequestEvent", "ToolCallExecutionEvent"] * 3 + [
        "ToolCallSummaryMessage"
    ]
    assert result.messages[-1].content == "6"
    assert context(a) == three_rounds_context()
    assert len(client.requests) == 3 and client.remaining == 1


async def test_keeps_calling_tools_limit_3_reflection() -> None:
    a, client = agent([*three_rounds(), "reflected"], max_tool_iterations=3, reflect_on_tool_use=True)
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage"] + ["ToolCallRequestEvent", "ToolCallExecutionEvent"] * 3 + [
        "TextMessage"
    ]
    assert context(a) == three_rounds_context() + [a_text("reflected")]
    assert len(client.requests) == 4 and client.requests[3].tool_choice == "none"


async def test_parallel_calls_results_in_call_order() -> None:
    order: list[str] = []

    async def slow(x: str) -> str:
        await asyncio.sleep({"A": 0.03, "B": 0.0}[x])
        order.append(x)
        return f"slow:{x}"

    script = [calls(("c1", "slow", '{"x": "A"}'), ("c2", "add", '{"a": 5, "b": 6}'), ("c3", "slow", '{"x": "B"}'))]
    a, _ = agent(
        script, tools=[slow, add], tool_call_summary_format="{tool_name}({arguments}) -> {result} err={is_error}"
    )
    result = await a.run(task="go")
    assert order == ["B", "A"]  # finished out of order, reported in call order
    assert kinds(result.messages) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallSummaryMessage",
    ]
    assert result.messages[-1].content == (
        'slow({"x": "A"}) -> slow:A err=False\n'
        'add({"a": 5, "b": 6}) -> 11 err=False\n'
        'slow({"x": "B"}) -> slow:B err=False'
    )
    assert context(a) == [
        U_GO,
        a_calls(("c1", "slow", '{"x": "A"}'), ("c2", "add", '{"a": 5, "b": 6}'), ("c3", "slow", '{"x": "B"}')),
        ferm(("slow:A", "slow", "c1", False), ("11", "add", "c2", False), ("slow:B", "slow", "c3", False)),
    ]


BOB = "Transferred to bob, adopting the role of bob immediately."


async def test_handoff_and_tool_in_one_response() -> None:
    script = [calls(ADD_12, ("h1", "transfer_to_bob", "{}"))]
    a, _ = agent(script, handoffs=["bob"])
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "HandoffMessage"]
    handoff = result.messages[-1]
    assert isinstance(handoff, HandoffMessage)
    assert (handoff.content, handoff.target) == (BOB, "bob")
    assert [m.model_dump(mode="json") for m in handoff.context] == [a_calls(ADD_12), ferm(("3", "add", "c1", False))]
    assert context(a) == [
        U_GO,
        a_calls(ADD_12, ("h1", "transfer_to_bob", "{}")),
        ferm(("3", "add", "c1", False), (BOB, "transfer_to_bob", "h1", False)),
    ]


async def test_handoff_alone_has_empty_context_and_custom_message() -> None:
    a, _ = agent([calls(("h1", "transfer_to_bob", "{}"))], handoffs=[Handoff(target="bob", message="custom msg")])
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "HandoffMessage"]
    assert result.messages[-1].content == "custom msg" and result.messages[-1].context == []
    assert context(a) == [
        U_GO,
        a_calls(("h1", "transfer_to_bob", "{}")),
        ferm(("custom msg", "transfer_to_bob", "h1", False)),
    ]


async def test_handoff_with_thought_keeps_thought_in_context() -> None:
    a, _ = agent([calls(("h1", "transfer_to_bob", "{}"), thought="why")], handoffs=["bob"])
    result = await a.run(task="go")
    assert kinds(result.messages) == [
        "TextMessage",
        "ThoughtEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "HandoffMessage",
    ]
    assert [m.model_dump(mode="json") for m in result.messages[-1].context] == [a_text("why")]


async def test_two_handoffs_first_wins_with_warning() -> None:
    script = [calls(("h1", "transfer_to_bob", "{}"), ("h2", "transfer_to_carol", "{}"))]
    a, _ = agent(script, handoffs=["bob", "carol"])
    with pytest.warns(UserWarning, match=r"Multiple handoffs detected.*\['transfer_to_bob', 'transfer_to_carol'\]"):
        result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "HandoffMessage"]
    assert result.messages[-1].target == "bob"
    carol = "Transferred to carol, adopting the role of carol immediately."
    assert context(a)[2] == ferm((BOB, "transfer_to_bob", "h1", False), (carol, "transfer_to_carol", "h2", False))


async def test_streaming_plain_text() -> None:
    a, client = agent(["one two three"], tools=None, model_client_stream=True)
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "TextMessage"]  # chunks are not collected
    a2, _ = agent(["one two three"], tools=None, model_client_stream=True)
    events = [e async for e in a2.run_stream(task="go")]
    assert kinds(events) == ["TextMessage"] + ["ModelClientStreamingChunkEvent"] * 3 + ["TextMessage", "TaskResult"]
    assert [e.content for e in events[1:4]] == ["one ", "two ", "three"]
    assert {e.full_message_id for e in events[1:4]} == {events[4].id}
    assert context(a2) == [U_GO, a_text("one two three")]


async def test_streamed_tool_run_same_result_through_run_and_run_stream() -> None:
    """run() builds no chunk events; what it returns and leaves in the context is run_stream's."""
    script = [calls(("c1", "add", '{"a": 1, "b": 2}')), "it is three"]
    a, _ = agent(list(script), model_client_stream=True, reflect_on_tool_use=True)
    a2, _ = agent(list(script), model_client_stream=True, reflect_on_tool_use=True)
    result = await a.run(task="go")
    streamed = [e async for e in a2.run_stream(task="go")]
    assert kinds(result.messages) == ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "TextMessage"]
    assert kinds(streamed) == [
        "TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent",
        *["ModelClientStreamingChunkEvent"] * 3, "TextMessage", "TaskResult",
    ]  # fmt: skip
    assert [m.to_text() for m in result.messages] == [m.to_text() for m in streamed[-1].messages]
    assert context(a) == context(a2)


async def test_streaming_chunks_not_in_inner_messages() -> None:
    a, _ = agent(["one two"], tools=None, model_client_stream=True)
    items = [e async for e in a.on_messages_stream([TextMessage(content="go", source="user")])]
    assert kinds(items) == ["ModelClientStreamingChunkEvent", "ModelClientStreamingChunkEvent", "Response"]
    assert items[-1].inner_messages == []


async def test_streaming_tool_then_reflection() -> None:
    a, _ = agent([calls(ADD_12), "reflect text here"], model_client_stream=True, reflect_on_tool_use=True)
    events = [e async for e in a.run_stream(task="go")]
    assert kinds(events) == ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent"] + [
        "ModelClientStreamingChunkEvent"
    ] * 3 + ["TextMessage", "TaskResult"]
    assert "".join(e.content for e in events[3:6]) == "reflect text here"
    assert {e.full_message_id for e in events[3:6]} == {events[6].id}
    assert context(a) == [U_GO, a_calls(ADD_12), ferm(("3", "add", "c1", False)), a_text("reflect text here")]


async def test_streaming_tool_loop_then_text() -> None:
    a, _ = agent([calls(ADD_12), "final words"], model_client_stream=True, max_tool_iterations=2)
    events = [e async for e in a.run_stream(task="go")]
    assert kinds(events) == ["TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent"] + [
        "ModelClientStreamingChunkEvent"
    ] * 2 + ["TextMessage", "TaskResult"]
    assert {e.full_message_id for e in events[3:5]} == {events[5].id}
    assert context(a) == [U_GO, a_calls(ADD_12), ferm(("3", "add", "c1", False)), a_text("final words")]


async def test_thought_then_text() -> None:
    a, _ = agent([text("answer", thought="I think")], tools=None)
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "ThoughtEvent", "TextMessage"]
    assert [m.content for m in result.messages[1:]] == ["I think", "answer"]
    assert context(a) == [U_GO, a_text("answer", thought="I think")]


async def test_thought_on_tool_call_and_final() -> None:
    a, _ = agent([calls(ADD_12, thought="t1"), text("final", thought="t2")], max_tool_iterations=2)
    result = await a.run(task="go")
    assert kinds(result.messages) == [
        "TextMessage",
        "ThoughtEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ThoughtEvent",
        "TextMessage",
    ]
    assert [result.messages[1].content, result.messages[4].content] == ["t1", "t2"]
    assert context(a) == [
        U_GO,
        a_calls(ADD_12, thought="t1"),
        ferm(("3", "add", "c1", False)),
        a_text("final", thought="t2"),
    ]


async def test_memory_hits_come_first_one_event_per_store() -> None:
    tea = ListMemory("tea", [MemoryContent(content="user likes tea")])
    empty = ListMemory("empty")
    second = ListMemory("second", [MemoryContent(content="second store")])
    a, client = agent(["ok"], tools=None, memory=[tea, empty, second])
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "MemoryQueryEvent", "MemoryQueryEvent", "TextMessage"]
    assert [m.content[0].content for m in result.messages[1:3]] == ["user likes tea", "second store"]
    header = "\nRelevant memory content (in chronological order):\n"
    assert context(a) == [
        U_GO,
        {"content": header + "1. user likes tea\n", "type": "SystemMessage"},
        {"content": header + "1. second store\n", "type": "SystemMessage"},
        a_text("ok"),
    ]
    assert [m.type for m in client.requests[0].messages] == [
        "SystemMessage",
        "UserMessage",
        "SystemMessage",
        "SystemMessage",
    ]


class Out(BaseModel):
    answer: str
    score: int


async def test_structured_output() -> None:
    a, client = agent(['{"answer": "x", "score": 3}'], tools=None, output_content_type=Out)
    result = await a.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "StructuredMessage[Out]"]
    assert result.messages[-1].content == Out(answer="x", score=3)
    assert context(a) == [U_GO, a_text('{"answer": "x", "score": 3}')]
    assert client.requests[0].json_output is Out


async def test_structured_output_after_tool_reflects_by_default() -> None:
    a, client = agent([calls(ADD_12), '{"answer": "y", "score": 4}'], output_content_type=Out)
    assert a.reflect_on_tool_use is True
    result = await a.run(task="go")
    assert kinds(result.messages) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "StructuredMessage[Out]",
    ]
    assert result.messages[-1].content == Out(answer="y", score=4)
    assert len(client.requests) == 2


async def test_structured_output_invalid_raises_clear_error() -> None:
    a, _ = agent(['{"answer": "x"}'], tools=None, output_content_type=Out)
    with pytest.raises(StructuredOutputError, match="not a valid Out"):
        await a.run(task="go")
    assert context(a) == [U_GO, a_text('{"answer": "x"}')]
    assert not a.is_running


async def test_empty_function_call_list() -> None:
    a, _ = agent([calls()])
    result = await a.run(task="go")
    assert kinds(result.messages) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallSummaryMessage",
    ]
    assert [result.messages[1].content, result.messages[2].content, result.messages[3].content] == [[], [], ""]


async def test_handoff_message_input_puts_its_context_first() -> None:
    a, _ = agent(["ok"], tools=None)
    incoming = HandoffMessage(
        content="over to you",
        target="agent",
        source="other",
        context=[
            AssistantMessage(content=[FunctionCall(id="x", name="add", arguments="{}")], source="other"),
            FunctionExecutionResultMessage(content=[FunctionExecutionResult(content="1", name="add", call_id="x")]),
        ],
    )
    await a.on_messages([incoming])
    assert context(a) == [
        a_calls(("x", "add", "{}"), source="other"),
        ferm(("1", "add", "x", False)),
        {"content": "over to you", "source": "other", "type": "UserMessage"},
        a_text("ok"),
    ]


async def test_system_message_and_tools_sent_to_model() -> None:
    a, client = agent(["ok"], handoffs=["bob"])
    await a.run(task="go")
    request = client.requests[0]
    assert [m.type for m in request.messages] == ["SystemMessage", "UserMessage"]
    assert [t["name"] for t in request.tools] == ["add", "transfer_to_bob"]
    assert request.tool_choice == "auto"


async def test_usage_placement() -> None:
    a, _ = agent([calls(ADD_12), text("done")], max_tool_iterations=2)
    result = await a.run(task="go")
    usage = [m.models_usage for m in result.messages]
    assert usage[0] is None and usage[2] is None
    assert (usage[1].prompt_tokens, usage[1].completion_tokens) == (7, 3)
    assert (usage[3].prompt_tokens, usage[3].completion_tokens) == (7, 3)


async def test_response_is_last_and_inner_messages_hold_events() -> None:
    a, _ = agent([calls(ADD_12)])
    items = [i async for i in a.on_messages_stream([TextMessage(content="go", source="user")])]
    assert kinds(items) == ["ToolCallRequestEvent", "ToolCallExecutionEvent", "Response"]
    assert items[-1].inner_messages == items[:2]
    assert items[-1].chat_message.content == "3"
