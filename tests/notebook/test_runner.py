"""The runner alone (notebook/runner.py, issue 43.2): it drives a run into what shows it, with no widget.

A :class:`Runner` is given a plain object that speaks :class:`Shown` (here, one that writes down what it is
told) and how to make the run (:func:`run_of`): every item of the run reaches it, and how the run ended is
told apart (ok, error, cancelled by Stop or the token, interrupted by a cancelled task), as the view shows it.
"""

from __future__ import annotations

import asyncio
from functools import partial

import pytest

from nbagent import AssistantAgent, CancellationToken, CreateResult, FunctionCall, ReplayChatCompletionClient
from nbagent.messages import Response
from nbagent.notebook.runner import RunInterrupted, Runner, run_of
from nbagent.records import RunFinished, RunItem, ToolExecution


class Shown:
    """What a view would do, written down."""

    def __init__(self) -> None:
        self.agent_name = ""
        self.status = "idle"
        self.response: Response | None = None
        self.items: list[RunItem] = []
        self.ends: list[tuple[str, str | None]] = []
        self.ticks = 0
        self.refreshed = 0

    def begin(self, agent_name: str) -> None:
        self.agent_name = agent_name
        self.status = "running"

    def handle(self, item: RunItem) -> None:
        self.items.append(item)
        if isinstance(item, Response):
            self.response = item
        if isinstance(item, RunFinished):
            self.status = item.status

    def tick(self) -> None:
        self.ticks += 1

    def end(self, status: str, error: str | None = None) -> None:
        self.status = status
        self.ends.append((status, error))

    def refresh(self) -> None:
        self.refreshed += 1


async def slow(text: str) -> str:
    """A tool that takes its time."""
    await asyncio.sleep(30)
    return text


def waiting_agent() -> AssistantAgent:
    request = CreateResult(
        finish_reason="function_calls", content=[FunctionCall(id="c0", name="slow", arguments='{"text": "x"}')]
    )
    return AssistantAgent("waiter", ReplayChatCompletionClient([request, "done"]), tools=[slow])


async def started(shown: Shown) -> None:
    """Wait until the run is in its tool (a hang guard of 30 s)."""
    for _ in range(3000):
        if any(isinstance(item, ToolExecution) for item in shown.items):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("the run never reached its tool")


async def test_every_item_reaches_what_shows_the_run() -> None:
    shown = Shown()
    response = await Runner(shown).run(
        partial(run_of, AssistantAgent("bot", ReplayChatCompletionClient(["hi there"])), "hello")
    )
    assert response is not None and response is shown.response and response.chat_message.to_text() == "hi there"
    assert shown.agent_name == "bot" and shown.status == "ok" and shown.ends == []  # RunFinished told it
    assert type(shown.items[0]).__name__ == "RunStarted" and isinstance(shown.items[-1], RunFinished)


async def test_stop_ends_the_run_as_cancelled_and_returns_none() -> None:
    shown = Shown()
    runner = Runner(shown)
    task = runner.start(partial(run_of, waiting_agent(), "go"))
    await started(shown)
    runner.stop()
    assert await runner.wait() is None
    assert shown.ends == [("cancelled", "stopped with the Stop button")] and shown.refreshed == 1
    assert task.done() and not task.cancelled()


async def test_a_cancelled_token_ends_the_run_as_cancelled_and_propagates() -> None:
    shown = Shown()
    token = CancellationToken()
    runner = Runner(shown)
    task = asyncio.ensure_future(runner.run(partial(run_of, waiting_agent(), "go", token)))
    await started(shown)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert shown.ends == [("cancelled", "token cancelled")]


async def test_a_task_cancelled_from_outside_is_interrupted() -> None:
    shown = Shown()
    runner = Runner(shown)
    task = asyncio.ensure_future(runner.run(partial(run_of, waiting_agent(), "go")))
    await started(shown)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert shown.ends == [("interrupted", "task cancelled")]


async def test_an_interrupted_wait_stops_the_background_run() -> None:
    shown = Shown()
    runner = Runner(shown)
    runner.start(partial(run_of, waiting_agent(), "go"))
    await started(shown)
    waiting = asyncio.ensure_future(runner.wait())
    await asyncio.sleep(0.05)
    waiting.cancel()  # what a kernel interrupt of the waiting cell does
    with pytest.raises(RunInterrupted) as raised:
        await waiting
    assert raised.value.view is shown and "the run of 'waiter' was interrupted" in str(raised.value)
    # Told as what interrupted it: outside a kernel, Ctrl-C ("kernel interrupt" in a notebook).
    assert runner.interrupted and shown.ends == [("interrupted", "Ctrl-C")]
    assert runner.task is not None and runner.task.done()


async def test_a_failing_run_is_shown_then_raises() -> None:
    shown = Shown()
    with pytest.raises(Exception, match="no answer left"):
        await Runner(shown).run(partial(run_of, AssistantAgent("bot", ReplayChatCompletionClient([])), "hello"))
    ((status, error),) = shown.ends
    assert status == "error" and error is not None and error.startswith("ReplayExhaustedError")


async def test_wait_without_a_background_run_says_so() -> None:
    with pytest.raises(RuntimeError, match="no background run: use start"):
        await Runner(Shown()).wait()
