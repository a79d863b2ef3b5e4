"""State round trips through json.dumps/json.loads, and message/event JSON round trips."""

from __future__ import annotations

import json
from datetime import timedelta

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    HandoffMessage,
    MemoryContent,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    ReplayChatCompletionClient,
    RequestUsage,
    StructuredMessage,
    TextMessage,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
    dump_message,
    load_message,
)
from nbagent.messages import streaming_chunk

from .helpers import U_GO, a_calls, a_text, add, calls, context, ferm

ADD_12 = ("c1", "add", '{"a": 1, "b": 2}')


async def test_save_state_format_and_json_round_trip() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient([calls(ADD_12), "done"]), tools=[add], max_tool_iterations=2)
    await agent.run(task="go")
    state = await agent.save_state()
    expected_messages = [U_GO, a_calls(ADD_12, source="a"), ferm(("3", "add", "c1", False)), a_text("done", source="a")]
    assert state == {"type": "AssistantAgentState", "version": "1.0.0", "llm_context": {"messages": expected_messages}}
    restored = json.loads(json.dumps(state))
    other = AssistantAgent("a", ReplayChatCompletionClient(["next"]), tools=[add])
    await other.load_state(restored)
    assert context(other) == expected_messages
    assert other.model_context.messages == agent.model_context.messages
    assert await other.save_state() == state
    await other.run(task="more")
    assert context(other)[-2:] == [
        {"content": "more", "source": "user", "type": "UserMessage"},
        a_text("next", source="a"),
    ]


async def test_state_with_thought_images_and_system_messages_round_trips() -> None:
    from nbagent import Image, ListMemory, SystemMessage, UserMessage

    agent = AssistantAgent(
        "a",
        ReplayChatCompletionClient([calls(ADD_12, thought="hmm"), "x"]),
        tools=[add],
        memory=ListMemory(memory_contents=[MemoryContent(content={"k": 1})]),
        reflect_on_tool_use=True,
    )
    await agent.model_context.add_message(UserMessage(content=["look", Image.from_bytes(b"\x89PNG")], source="u"))
    await agent.run(task="go")
    state = json.loads(json.dumps(await agent.save_state()))
    other = AssistantAgent("a", ReplayChatCompletionClient([]))
    await other.load_state(state)
    assert other.model_context.messages == agent.model_context.messages
    assert [type(m) for m in other.model_context.messages] == [
        UserMessage,
        UserMessage,
        SystemMessage,
        AssistantMessage,
        FunctionExecutionResultMessage,
        AssistantMessage,
    ]


async def test_on_reset_clears_context() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["x"]))
    await agent.run(task="go")
    assert len(agent.model_context) == 2
    await agent.on_reset()
    assert len(agent.model_context) == 0


@pytest.mark.parametrize(
    "bad",
    [
        None,
        [],
        {},
        {"llm_context": []},
        {"llm_context": {}},
        {"llm_context": {"messages": "x"}},
        {"llm_context": {"messages": [{"type": "Nope"}]}},
        {"llm_context": {"messages": [{"type": "UserMessage", "content": 3, "source": "u"}]}},
        {"llm_context": {"messages": [{"type": "AssistantMessage", "content": [{"id": 1}], "source": "a"}]}},
    ],
)
async def test_load_state_rejects_malformed_input_and_changes_nothing(bad: object) -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["x"]))
    await agent.run(task="go")
    before = context(agent)
    with pytest.raises(ValueError):
        await agent.load_state(bad)  # type: ignore[arg-type]
    assert context(agent) == before


class Out(BaseModel):
    answer: str
    score: int


CALL = FunctionCall(id="c1", name="add", arguments='{"a": 1}')
RESULT = FunctionExecutionResult(content="3", name="add", call_id="c1", is_error=False)
USAGE = RequestUsage(prompt_tokens=5, completion_tokens=2)
EVERY_TYPE = [
    TextMessage(content="hi", source="user", models_usage=USAGE, metadata={"k": "v"}),
    StructuredMessage[Out](content=Out(answer="x", score=3), source="a", format_string="{answer}"),
    ToolCallSummaryMessage(content="3", source="a", tool_calls=[CALL], results=[RESULT]),
    HandoffMessage(
        content="go",
        target="bob",
        source="a",
        context=[
            AssistantMessage(content=[CALL], source="a", thought="t"),
            FunctionExecutionResultMessage(content=[RESULT]),
        ],
    ),
    ToolCallRequestEvent(content=[CALL], source="a", models_usage=USAGE),
    ToolCallExecutionEvent(content=[RESULT], source="a"),
    ThoughtEvent(content="because", source="a"),
    MemoryQueryEvent(
        content=[MemoryContent(content="tea", metadata={"n": 1}), MemoryContent(content={"k": [1]})], source="a"
    ),
    ModelClientStreamingChunkEvent(content="wor", source="a", full_message_id="m1"),
    streaming_chunk("fast ", "a", "m2"),
]


@pytest.mark.parametrize(
    "message", EVERY_TYPE, ids=lambda m: type(m).__name__ + ("_fast" if m.content == "fast " else "")
)
def test_message_json_round_trip(message) -> None:
    data = dump_message(message)
    text = json.dumps(data)
    loaded = load_message(text, structured_type=Out)
    assert type(loaded).__name__ == type(message).__name__
    assert loaded.model_dump() == message.model_dump()
    assert loaded == message
    assert dump_message(loaded) == data
    assert loaded.created_at.utcoffset() == timedelta(0)
    assert data["created_at"].endswith("Z")
    assert {"id", "source", "models_usage", "metadata", "created_at", "type"} <= set(data)


def test_structured_message_needs_its_type() -> None:
    data = dump_message(EVERY_TYPE[1])
    with pytest.raises(ValueError, match="structured_type"):
        load_message(data)


@pytest.mark.parametrize("bad", ["[1]", "3", '{"type": "Nope"}', "{}", '{"type": "TextMessage", "source": "u"}'])
def test_load_message_clear_errors(bad: str) -> None:
    with pytest.raises((ValueError, TypeError)):
        load_message(bad)
