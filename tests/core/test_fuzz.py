"""Fuzzing with hypothesis: tool arguments against schemas, load_state input, message JSON.

Only clear nbagent errors are allowed (an error result, ValueError/TypeError), never a crash deep
inside, and never a silent wrong state.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from typing import Any, Literal

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    dump_message,
    load_message,
)
from nbagent.messages import llm_messages_adapter

FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

json_scalars = (
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)

received: list[dict[str, Any]] = []


async def typed(
    count: int, name: str, ratio: float = 0.5, mode: Literal["a", "b"] = "a", tags: list[str] | None = None
) -> str:
    """A tool with several typed parameters."""
    received.append({"count": count, "name": name, "ratio": ratio, "mode": mode, "tags": tags})
    return "ok"


def run_call(arguments: str) -> tuple[str, bool]:
    received.clear()
    script = [
        CreateResult(finish_reason="function_calls", content=[FunctionCall(id="c1", name="typed", arguments=arguments)])
    ]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[typed])
    result = asyncio.run(agent.run(task="go"))
    execution = result.messages[2].content[0]
    assert agent.model_context.messages[2].content == [execution]
    return execution.content, execution.is_error


def check_call(arguments: str) -> None:
    content, is_error = run_call(arguments)
    if is_error:
        assert content.startswith("Error: arguments for tool 'typed' "), content
        assert received == []
    else:
        assert content == "ok"
        (got,) = received
        assert isinstance(got["count"], int) and isinstance(got["name"], str) and isinstance(got["ratio"], float)
        assert got["mode"] in ("a", "b")
        assert got["tags"] is None or all(isinstance(t, str) for t in got["tags"])


@FUZZ
@given(st.dictionaries(st.sampled_from(["count", "name", "ratio", "mode", "tags", "extra"]), json_values, max_size=6))
def test_fuzz_tool_arguments_objects(arguments: dict[str, Any]) -> None:
    check_call(json.dumps(arguments))


@FUZZ
@given(json_values.map(json.dumps) | st.text(max_size=40))
def test_fuzz_tool_arguments_any_text(arguments: str) -> None:
    check_call(arguments)


def test_fuzz_valid_arguments_reach_the_tool() -> None:
    assert run_call('{"count": "3", "name": "x", "tags": ["t"]}') == ("ok", False)
    assert received == [{"count": 3, "name": "x", "ratio": 0.5, "mode": "a", "tags": ["t"]}]


VALID_MESSAGES = [
    {"type": "SystemMessage", "content": "s"},
    {"type": "UserMessage", "content": "u", "source": "user"},
    {"type": "UserMessage", "content": ["u", {"data": "AA==", "mime_type": "image/png"}], "source": "user"},
    {
        "type": "AssistantMessage",
        "content": [{"id": "c1", "name": "f", "arguments": "{}"}],
        "source": "a",
        "thought": None,
    },
    {
        "type": "FunctionExecutionResultMessage",
        "content": [{"content": "r", "name": "f", "call_id": "c1", "is_error": False}],
    },
    {"type": "AssistantMessage", "content": "done", "source": "a", "thought": "t"},
]


def mutate(message: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    changed = dict(message)
    changed[key] = value
    return changed


messages_strategy = st.lists(
    st.sampled_from(VALID_MESSAGES)
    | st.builds(
        mutate,
        st.sampled_from(VALID_MESSAGES),
        st.sampled_from(["type", "content", "source", "thought", "x"]),
        json_values,
    ),
    max_size=6,
)
states = (
    st.builds(lambda m: {"llm_context": {"messages": m}}, messages_strategy)
    | st.builds(lambda v: {"llm_context": v}, json_values)
    | json_values
)


@FUZZ
@given(states)
def test_fuzz_load_state(state: Any) -> None:
    async def go() -> None:
        agent = AssistantAgent("a", ReplayChatCompletionClient(["x"]))
        await agent.run(task="before")
        before = await agent.save_state()
        try:
            await agent.load_state(state)
        except (ValueError, TypeError):
            assert await agent.save_state() == before
            return
        expected = llm_messages_adapter.dump_python(
            llm_messages_adapter.validate_python(state["llm_context"]["messages"]), mode="json"
        )
        after = await agent.save_state()
        assert after["llm_context"]["messages"] == expected
        assert json.loads(json.dumps(after)) == after

    asyncio.run(go())


EVENT_TYPES = [
    "TextMessage",
    "ToolCallSummaryMessage",
    "HandoffMessage",
    "ToolCallRequestEvent",
    "ToolCallExecutionEvent",
    "ThoughtEvent",
    "MemoryQueryEvent",
    "ModelClientStreamingChunkEvent",
    "StructuredMessage",
    "Unknown",
]
message_dicts = st.fixed_dictionaries(
    {"type": st.sampled_from(EVENT_TYPES), "source": st.text(max_size=5) | json_values},
    optional={
        "content": json_values,
        "id": st.text(max_size=5) | json_values,
        "created_at": st.sampled_from(
            ["2026-01-01T00:00:00Z", "2026-01-01T00:00:00+02:00", "2026-01-01T00:00:00", "yesterday", 3]
        )
        | json_values,
        "metadata": st.dictionaries(st.text(max_size=3), st.text(max_size=3)) | json_values,
        "target": json_values,
        "models_usage": st.none() | st.fixed_dictionaries({"prompt_tokens": st.integers(0, 9)}) | json_values,
    },
)


@FUZZ
@given(message_dicts | json_values)
def test_fuzz_load_message(data: Any) -> None:
    for form in (data, json.dumps(data)):
        try:
            message = load_message(form)  # type: ignore[arg-type]
        except (ValueError, TypeError):
            continue
        dumped = dump_message(message)
        assert load_message(json.dumps(dumped)) == message
        assert message.created_at.utcoffset() == timedelta(0)  # kept in UTC whatever the input said
        assert isinstance(message.id, str) and isinstance(message.source, str)


@FUZZ
@given(st.text(max_size=60))
def test_fuzz_load_message_text(text: str) -> None:
    try:
        load_message(text)
    except (ValueError, TypeError):
        pass
