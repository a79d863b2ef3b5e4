"""A run costs the same whatever its agent kept before (issue 42.5): the Python work of a run does not
grow with the context (the 10,000 tool-run kept measure did not end in 67 min: the check for images
before each model call and the replay model's token estimate went over the whole context), and what
those shortcuts give is what the whole pass gave."""

from __future__ import annotations

import asyncio
import sys
from types import FrameType
from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    BufferedChatCompletionContext,
    CreateResult,
    FunctionCall,
    Image,
    ReplayChatCompletionClient,
    UserMessage,
)
from nbagent.context import UnboundedChatCompletionContext, estimate_tokens, holds_parts


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def tool_agent(runs: int) -> AssistantAgent:
    call = CreateResult(
        finish_reason="function_calls",
        content=[
            FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'),
            FunctionCall(id="c2", name="add", arguments='{"a": 3, "b": 4}'),
        ],
    )
    client = ReplayChatCompletionClient([call, "3 and 7"] * runs)
    return AssistantAgent("tools", client, tools=[add], reflect_on_tool_use=True)


def lines_run(agent: AssistantAgent, task: str) -> int:
    """The Python lines one run executes (sys.settrace's line events: a count, not a time)."""
    lines = 0

    def local(frame: FrameType, event: str, arg: Any) -> Any:
        nonlocal lines
        lines += event == "line"
        return local

    def tracer(frame: FrameType, event: str, arg: Any) -> Any:
        return local

    async def run() -> None:
        previous = sys.gettrace()
        sys.settrace(tracer)
        try:
            await agent.run(task=task)
        finally:
            sys.settrace(previous)

    asyncio.run(run())
    return lines


@pytest.mark.parametrize("kind", ["plain", "tools"])
def test_a_run_executes_the_same_lines_whatever_was_kept(kind: str) -> None:
    """A run after 300 kept runs executes the lines a run after 30 does (before: 3,973 against 1,093
    for a plain run, 15,044 against 3,524 for a tool run, at 200 and 20 kept)."""
    found = {}
    for kept in (30, 300):
        if kind == "tools":
            agent = tool_agent(kept + 3)
        else:
            agent = AssistantAgent("plain", ReplayChatCompletionClient(["the answer"] * (kept + 3)))

        async def runs(agent: AssistantAgent = agent, kept: int = kept) -> None:
            for i in range(kept):
                await agent.run(task=f"task {i}")

        asyncio.run(runs())
        # the fewest of three runs: one may refill the id pool (a few lines every so many ids)
        found[kept] = min(lines_run(agent, f"one more {i}") for i in range(3))
    assert found[300] <= found[30] * 1.02, found


async def test_a_user_message_of_parts_added_late_is_joined_for_a_model_without_vision() -> None:
    client = ReplayChatCompletionClient(["a", "b", "c", "d"])
    agent = AssistantAgent("a", client)
    await agent.run(task="first")
    await agent.run(task="second")
    assert holds_parts(agent.model_context) is False
    await agent.model_context.add_message(UserMessage(content=["look", Image.from_bytes(b"\x89PNG")], source="u"))
    assert holds_parts(agent.model_context) is True
    await agent.run(task="third")
    sent = list(client.requests[-1].messages)
    assert [m.content for m in sent if isinstance(m, UserMessage)] == ["first", "second", "look\n<image>", "third"]
    await agent.model_context.clear()  # a new log: read again from its start
    assert holds_parts(agent.model_context) is False
    await agent.run(task="fourth")
    assert [m.content for m in client.requests[-1].messages if isinstance(m, UserMessage)] == ["fourth"]


async def test_a_model_with_vision_gets_the_parts() -> None:
    client = ReplayChatCompletionClient(["a"], model_info={"vision": True})
    agent = AssistantAgent("a", client)
    await agent.model_context.add_message(UserMessage(content=["look", Image.from_bytes(b"\x89PNG")], source="u"))
    await agent.run(task="what is it?")
    assert isinstance(client.requests[-1].messages[1].content, list)


def test_holds_parts_says_nothing_of_a_context_of_another_kind() -> None:
    class Mine(UnboundedChatCompletionContext):
        """A subclass: its view may hold messages it does not."""

    assert holds_parts(Mine()) is None
    assert holds_parts(UnboundedChatCompletionContext()) is False


@pytest.mark.parametrize("context", [None, BufferedChatCompletionContext(buffer_size=3)])
async def test_the_replay_prompt_tokens_are_the_whole_estimate(context: Any) -> None:
    """Counted from the new messages alone (a growing context) or looked up (a window that moved), the
    prompt tokens are the estimate of every message sent."""
    client = ReplayChatCompletionClient([f"answer number {i}" for i in range(8)])
    agent = AssistantAgent("a", client, model_context=context)
    for i in range(8):
        result = await agent.run(task="x" * (10 * i))
        usage = result.messages[-1].models_usage
        assert usage is not None
        assert usage.prompt_tokens == sum(estimate_tokens(m) for m in client.requests[-1].messages)
