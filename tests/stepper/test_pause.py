"""Pausing a walk of several moves (issue 33.2): ``pause()`` (the widget's Pause button) and a kernel
interrupt (the task of ``run_to_end`` / ``run_until`` cancelled) leave the walk paused at a move
boundary, not cancelled; ``next()`` goes on from there. The tests assert that behaviour; how soon the walk
pauses (the 1 s target) is a benchmark figure (bench/), their time bounds are hang guards only."""

from __future__ import annotations

import asyncio
import time

import pytest

from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient
from nbagent.stepper import PAUSE_GRACE_S, MoveUndone, Stepper, WalkInterrupted

HANG_GUARD_S = 60.0
"""How long a test waits for a paused walk before it fails: a hang guard, far above a loaded machine's figure
(well under 1 s idle). A pause that fails shows as the walk finishing, not as time."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


DELAYS: list[float] = []
"""How long each call of ``sleepy`` sleeps: the last value (a test sets it)."""


async def sleepy(seconds: float) -> str:
    """Sleep, then answer."""
    await asyncio.sleep(DELAYS[-1] if DELAYS else seconds)
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
    seen = len(stepper.history)
    stepper.pause()
    made = await asyncio.wait_for(walk, HANG_GUARD_S)
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
    assert await asyncio.wait_for(walk, HANG_GUARD_S) is None
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
    walk.cancel()  # what a kernel interrupt does to the cell's task
    with pytest.raises(WalkInterrupted) as raised:
        await asyncio.wait_for(walk, HANG_GUARD_S)
    assert stepper.status == "paused" and not stepper.moving and stepper.upcoming is not None
    assert "paused after move" in str(raised.value) and raised.value._render_traceback_() == [
        f"WalkInterrupted: {raised.value}"
    ]
    await stepper.run_to_end()
    assert stepper.status == "finished" and stepper.response is not None


def sleeper(tool_seconds: float = 30, latency: float = 0.0) -> AssistantAgent:
    """One call of ``sleepy`` (``tool_seconds``), then the answer; model calls take ``latency``."""
    call = FunctionCall(id="s", name="sleepy", arguments=f'{{"seconds": {tool_seconds}}}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
    return AssistantAgent("sleeper", ReplayChatCompletionClient(script, latency=latency), tools=[sleepy])


async def until_moving(stepper: Stepper, after: str) -> None:
    """Wait until the move after ``after`` is being made (and has started its slow part)."""
    while not (stepper.current is not None and stepper.current.name == after and stepper.moving):
        await asyncio.sleep(0.005)
    await asyncio.sleep(0.05)


def ends_like_a_whole_walk(stepper: Stepper) -> None:
    """The walk, after the undone move was made again, is one walk of the run: every move once, the
    tool's result and the answer in the context, a valid run in the trace."""
    assert stepper.status == "finished" and stepper.response is not None
    assert stepper.response.chat_message.to_text() in ("done", "slept")
    names = [r.name for r in stepper.history]
    assert [r.index for r in stepper.history] == list(range(1, len(names) + 1))
    assert names.count("tool_execution") == 1 and names.count("call_llm") == 1, names
    kinds = [m.type for m in stepper.agent.model_context.messages]
    assert kinds.count("FunctionExecutionResultMessage") == 1 and kinds.count("AssistantMessage") == 1, kinds


@pytest.mark.parametrize("how", ["pause", "interrupt"])
async def test_pause_during_a_slow_tool_undoes_the_move_and_next_makes_it_again(how: str) -> None:
    """A 30 s tool: Pause (or a kernel interrupt) pauses the walk after the grace period, without waiting for
    the tool, at the boundary before the tool's move (undone, not cancelled); Next makes that move again, and
    the walk ends well."""
    DELAYS[:] = [30]
    stepper = Stepper(sleeper(), "go")
    walk = asyncio.ensure_future(stepper.run_to_end())
    await until_moving(stepper, "tool_request")
    asked = time.perf_counter()
    if how == "pause":
        stepper.pause()
        assert await asyncio.wait_for(walk, HANG_GUARD_S) == stepper.history
    else:
        walk.cancel()
        with pytest.raises(WalkInterrupted, match="paused after move 4"):
            await asyncio.wait_for(walk, HANG_GUARD_S)
    took = time.perf_counter() - asked
    assert took >= PAUSE_GRACE_S, took  # the move in progress had its grace period
    assert stepper.status == "paused" and not stepper.moving
    assert [r.name for r in stepper.history][-1] == "tool_request" and len(stepper.history) == 4
    assert stepper.upcoming is not None and stepper.upcoming.name == "tool_execution"
    runs = stepper.agent.trace.runs_df()
    assert list(runs["status"])[:1] == ["cancelled"] and len(runs) == 2  # the interrupted run, then the walk's
    assert runs["forked_from"].iloc[-1] == runs["run_id"].iloc[0]
    print(f"{how}: paused {took:.2f} s after it was asked, at move {len(stepper.history)}")
    # Made again: the tool runs again (quick this time) and the walk goes on from the boundary.
    DELAYS.append(0)
    again = await stepper.next()
    assert again.name == "tool_execution" and [r.content for r in again.tool_results] == ["slept"]
    await stepper.run_to_end()
    ends_like_a_whole_walk(stepper)
    assert list(stepper.agent.trace.runs_df()["status"]) == ["cancelled", "ok"]


async def test_pause_during_a_slow_model_call_of_a_single_next() -> None:
    """A single Next whose model call takes 30 s: Pause undoes it after the grace period, without waiting for
    the call (``MoveUndone``), the client put back before that call; Next asks the model again and gets the
    same answer."""
    DELAYS[:] = [0]
    stepper = Stepper(sleeper(latency=30), "go")
    await stepper.run_until(move="message_id")
    move = asyncio.ensure_future(stepper.next())  # call_llm: 30 s
    await asyncio.sleep(0.1)
    asked = time.perf_counter()
    stepper.pause()
    with pytest.raises(MoveUndone, match=r"move 3 \(STEP 4 call_llm\).*next\(\) makes it again"):
        await asyncio.wait_for(move, HANG_GUARD_S)
    took = time.perf_counter() - asked
    assert took >= PAUSE_GRACE_S, took  # the move in progress had its grace period
    assert stepper.status == "paused" and [r.name for r in stepper.history] == ["add_messages", "message_id"]
    client = stepper.agent.model_client
    assert isinstance(client, ReplayChatCompletionClient) and client.position == 0  # as before the call
    client.latency = 0
    await stepper.run_to_end()
    ends_like_a_whole_walk(stepper)
