"""An agent, its trace and everything a run recorded are freed by reference counting alone.

A cycle among them (agent -> trace -> recorder -> agent) would keep every run's items alive until the
cyclic garbage collector runs, and the collections those items trigger scan them over and over.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable, Iterator

import pytest

from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    Trace,
)


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def plain() -> AssistantAgent:
    return AssistantAgent("plain", ReplayChatCompletionClient(["the answer"]))


def streamed() -> AssistantAgent:
    return AssistantAgent("streamed", ReplayChatCompletionClient(["one two three"]), model_client_stream=True)


def tools() -> AssistantAgent:
    call = CreateResult(
        finish_reason="function_calls", content=[FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')]
    )
    return AssistantAgent("tools", ReplayChatCompletionClient([call, "3"]), tools=[add], max_tool_iterations=2)


@pytest.fixture
def no_cyclic_gc() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


@pytest.mark.parametrize("make", [plain, streamed, tools])
async def test_a_run_agent_and_its_trace_are_freed_without_the_cyclic_gc(
    make: Callable[[], AssistantAgent], no_cyclic_gc: None
) -> None:
    agent = make()
    result = await agent.run(task="go")
    assert len(agent.trace) > 0 and result.messages[-1].to_text() in ("the answer", "one two three", "3")
    agent_ref, trace_ref = weakref.ref(agent), weakref.ref(agent.trace)
    response_ref = weakref.ref(result.messages[-1])
    del agent, result
    assert (agent_ref(), trace_ref(), response_ref()) == (None, None, None)


async def test_a_shared_trace_outlives_the_agents_it_recorded(no_cyclic_gc: None) -> None:
    trace = Trace()
    agent = plain()
    with trace.recording(agent):
        await agent.run(task="go")
    agent_ref = weakref.ref(agent)
    del agent
    assert agent_ref() is None
    assert list(trace.runs_df()["final_text"]) == ["the answer"]
    assert list(trace.context_df(agent="plain")["text"]) == ["go", "the answer"]
