"""Pausing a walk of several moves (issue 33.2): ``pause()`` (the widget's Pause button) and a kernel
interrupt (the task of ``run_to_end`` / ``run_until`` cancelled) leave the walk paused at a move
boundary, not cancelled, within a second; ``next()`` goes on from there."""

from __future__ import annotations

import asyncio
import time

import pytest

from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient
from nbagent.stepper import PAUSE_GRACE_S, Stepper, WalkInterrupted


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def sleepy(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(seconds)
    return "slept"


def looping_agent(latency: float = 0.05, iterations: int = 6) -> AssistantAgent:
    """A tool loop of ``iterations`` rounds, each model call taking ``latency`` seconds."""
    script: list[str | CreateResult] = [
        CreateResult(
            finish_reason="function_calls", content=[FunctionCall(id=f"c{i}", name="add", arguments='{"a": 1, "b": 2}')]
        )
        for i in range(iterations)
    ]
    script.append("done")
    client = ReplayChatCompletionClient(script, latency=latency)
    return AssistantAgent("looper", client, tools=[add], max_tool_iterations=iterations + 1)


async def test_pause_stops_run_to_end_after_the_move_in_progress() -> None:
    stepper = Stepper(looping_agent(), "go")
    walk = asyncio.ensure_future(stepper.run_to_end())
    while len(stepper.history) < 4:
        await asyncio.sleep(0.005)
    asked, seen = time.perf_counter(), len(stepper.history)
    stepper.pause()
    made = await asyncio.wait_for(walk, 1.0)
    assert time.perf_counter() - asked < 1.0
    assert stepper.status == "paused" and not stepper.done and stepper.upcoming is not None
    assert made == stepper.history and seen <= len(made) <= seen + 1  # the move in progress, no other
    rest = await stepper.run_to_end()  # goes on from the boundary: the walk is whole
    assert stepper.status == "finished" and stepper.response is not None
    assert [r.index for r in made + rest] == list(range(1, len(made) + len(rest) + 1))


async def test_pause_stops_run_until_which_returns_none() -> None:
    stepper = Stepper(looping_agent(), "go")
    walk = asyncio.ensure_future(stepper.run_until(move="text_exit"))
    while len(stepper.history) < 3:
        await asyncio.sleep(0.005)
    stepper.pause()
    assert await asyncio.wait_for(walk, 1.0) is None
    assert stepper.status == "paused"
    found = await stepper.run_until(move="text_exit")  # a new call is not paused
    assert found is not None and found.name == "text_exit"


@pytest.mark.parametrize("method", ["run_to_end", "run_until"])
async def test_an_interrupt_pauses_the_walk_at_a_move_boundary(method: str) -> None:
    stepper = Stepper(looping_agent(latency=0.3), "go")
    walk = asyncio.ensure_future(
        stepper.run_to_end() if method == "run_to_end" else stepper.run_until(move="text_exit")
    )
    while len(stepper.history) < 3:
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)  # inside a model call of 0.3 s
    asked = time.perf_counter()
    walk.cancel()  # what a kernel interrupt does to the cell's task
    with pytest.raises(WalkInterrupted) as raised:
        await walk
    took = time.perf_counter() - asked
    assert took < 1.0, took
    assert stepper.status == "paused" and not stepper.moving and stepper.upcoming is not None
    assert "paused after move" in str(raised.value) and raised.value._render_traceback_() == [
        f"WalkInterrupted: {raised.value}"
    ]
    await stepper.run_to_end()
    assert stepper.status == "finished" and stepper.response is not None


async def test_an_interrupt_during_a_move_longer_than_the_grace_cancels_the_walk() -> None:
    call = FunctionCall(id="s", name="sleepy", arguments='{"seconds": 30}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
    agent = AssistantAgent("sleeper", ReplayChatCompletionClient(script), tools=[sleepy])
    stepper = Stepper(agent, "go")
    walk = asyncio.ensure_future(stepper.run_to_end())
    while not (stepper.current is not None and stepper.current.name == "tool_request" and stepper.moving):
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)
    asked = time.perf_counter()
    walk.cancel()
    with pytest.raises(WalkInterrupted, match="did not end in time"):
        await walk
    assert PAUSE_GRACE_S <= time.perf_counter() - asked < PAUSE_GRACE_S + 1.0
    assert stepper.status == "cancelled"
    await stepper.reset()  # the context is valid: walked again from the start
    assert stepper.status == "ready"
