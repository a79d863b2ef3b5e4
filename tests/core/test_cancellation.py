"""The cancellation matrix: every await point of a run x task.cancel(), CancellationToken, AgentRun.aclose().

Each case asserts that the run ends once cancelled, not when its blocking point would end (the point
blocks an hour; the test gives up after a hang guard of a minute, far above a loaded machine's figure;
``bench/bench_stop_pause.py`` measures how soon), that no task is left running, that every tool call in
the context has a result and the local Chat Completions server's validator accepts the context, and that
the next run succeeds.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from nbagent import (
    AgentRun,
    AssistantAgent,
    CancellationToken,
    ListMemory,
    LLMCall,
    MemoryContent,
    MemoryQueryResult,
    Move,
    ReplayChatCompletionClient,
    TextMessage,
    UserMessage,
)
from tests.models.chat_server import validate_context

from ..waits import HANG_GUARD_S, within
from .helpers import calls, every_call_answered, other_tasks

LONG = 3600.0  # every blocking point would block this long if cancellation did not work: far past HANG_GUARD_S
CANCELLED = "Error: the run was cancelled before this tool call finished"
NEXT = UserMessage(content="next", source="user")  # what the next run adds before calling the model


@dataclass
class Case:
    """An agent whose run blocks at one point; ``reached`` is set when the run is blocked there."""

    agent: AssistantAgent
    client: ReplayChatCompletionClient
    reached: asyncio.Event
    trigger: Callable[[Any], bool] = lambda item: False
    finished_tools: list[str] = field(default_factory=list)


class SlowMemory(ListMemory):
    def __init__(self, reached: asyncio.Event) -> None:
        super().__init__(memory_contents=[MemoryContent(content="fact")])
        self.reached = reached
        self.slow = True

    async def query(self, query: Any = "", cancellation_token: CancellationToken | None = None) -> MemoryQueryResult:
        if self.slow:
            self.reached.set()
            await asyncio.sleep(LONG)
        return await super().query(query, cancellation_token)


def case_memory() -> Case:
    reached = asyncio.Event()
    memory = SlowMemory(reached)
    agent = AssistantAgent("a", ReplayChatCompletionClient(["after"]), memory=memory)
    case = Case(agent, agent.model_client, reached)  # type: ignore[arg-type]
    case.after_stop = lambda: setattr(memory, "slow", False)  # type: ignore[attr-defined]
    return case


def case_llm() -> Case:
    client = ReplayChatCompletionClient(["never", "after"], latency=LONG)
    agent = AssistantAgent("a", client)
    return Case(agent, client, asyncio.Event(), lambda item: isinstance(item, LLMCall))


class StreamingClient(ReplayChatCompletionClient):
    """Sets ``reached`` once its first streamed piece has been taken (recorders see no chunks)."""

    def __init__(self, script: list[str], reached: asyncio.Event) -> None:
        super().__init__(script, chunk_delay=2 * HANG_GUARD_S / 200)  # the 200 pieces would outlast the guard
        self.reached = reached

    async def create_stream(self, messages: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        async for item in super().create_stream(messages, **kwargs):
            yield item
            self.reached.set()


def case_stream() -> Case:
    reached = asyncio.Event()
    client = StreamingClient([" ".join(f"w{i}" for i in range(200)), "after"], reached)
    return Case(AssistantAgent("a", client, model_client_stream=True), client, reached)


def case_between() -> Case:
    client = ReplayChatCompletionClient([calls(("c1", "fast", "{}")), "never", "after"])
    reached = asyncio.Event()

    async def fast() -> str:
        return "ok"

    agent = AssistantAgent("a", client, tools=[fast], max_tool_iterations=2)
    client.latency = 0.0
    case = Case(agent, client, reached, lambda item: isinstance(item, Move) and item.name == "next_llm_call")
    case.slow_second_call = True  # type: ignore[attr-defined]
    return case


def case_tools(running: int) -> Case:
    """Three parallel tools finishing one after the other; cancelled while tool ``running`` runs."""
    reached = asyncio.Event()
    finished: list[str] = []
    events = {name: asyncio.Event() for name in ("t0", "t1", "t2")}

    def make(index: int):
        async def tool() -> str:
            if index > 0:
                await events[f"t{index - 1}"].wait()
            if index == running:
                reached.set()
                await asyncio.sleep(LONG)
            finished.append(f"t{index}")
            events[f"t{index}"].set()
            return f"done {index}"

        tool.__name__ = f"t{index}"
        return tool

    script = [calls(("c0", "t0", "{}"), ("c1", "t1", "{}"), ("c2", "t2", "{}")), "after"]
    client = ReplayChatCompletionClient(script)
    agent = AssistantAgent("a", client, tools=[make(0), make(1), make(2)])
    return Case(agent, client, reached, finished_tools=finished)


def case_single_tool() -> Case:
    reached = asyncio.Event()

    async def sleepy() -> str:
        reached.set()
        await asyncio.sleep(LONG)
        return "never"

    client = ReplayChatCompletionClient([calls(("c0", "sleepy", "{}")), "after"])
    return Case(AssistantAgent("a", client, tools=[sleepy]), client, reached)


def case_reflection() -> Case:
    async def fast() -> str:
        return "ok"

    client = ReplayChatCompletionClient([calls(("c1", "fast", "{}")), "never", "after"])
    agent = AssistantAgent("a", client, tools=[fast], reflect_on_tool_use=True)

    def at_reflection(item: Any) -> bool:
        if isinstance(item, LLMCall) and item.purpose == "reflection":
            client.latency = LONG
            return True
        return False

    return Case(agent, client, asyncio.Event(), at_reflection)


CASES: dict[str, Callable[[], Case]] = {
    "memory": case_memory,
    "llm": case_llm,
    "stream": case_stream,
    "between": case_between,
    "single_tool": case_single_tool,
    "tool0": lambda: case_tools(0),
    "tool1": lambda: case_tools(1),
    "tool2": lambda: case_tools(2),
    "reflection": case_reflection,
}


class Trigger:
    """A recorder that sets ``reached`` at the item the case waits for."""

    def __init__(self, case: Case) -> None:
        self.case = case

    def record(self, item: Any) -> None:
        if self.case.trigger(item):
            self.case.reached.set()


async def consume(run: AgentRun, case: Case) -> None:
    """Drive the run like on_messages_stream does (aclose in finally); pause between iterations."""
    try:
        async for item in run:
            if getattr(case, "slow_second_call", False) and isinstance(item, Move) and item.name == "next_llm_call":
                case.client.latency = LONG
    finally:
        await run.aclose()


async def check_after(
    case: Case, before: set[asyncio.Task[Any]], expected_tool_results: list[tuple[str, bool]] | None
) -> None:
    await asyncio.sleep(0)
    assert other_tasks(before) == set()
    assert not case.agent.is_running
    assert every_call_answered(case.agent)
    assert validate_context([*case.agent.model_context.messages, NEXT], case.agent.tools) == []
    if expected_tool_results is not None:
        results = case.agent.model_context.messages[2].content
        assert [(r.content, r.is_error) for r in results] == expected_tool_results
    if hasattr(case, "after_stop"):
        case.after_stop()
    case.client.latency = 0.0
    case.client.chunk_delay = 0.0
    case.client.position = len(case.client.chat_completions) - 1
    result = await within(case.agent.run(task="next"), "the next run on the same agent")
    assert result.messages[-1].content == "after"
    assert every_call_answered(case.agent)


def expected_results(point: str) -> list[tuple[str, bool]] | None:
    if point == "single_tool":
        return [(CANCELLED, True)]
    if point.startswith("tool"):
        running = int(point[-1])
        return [(f"done {i}", False) if i < running else (CANCELLED, True) for i in range(3)]
    if point in ("between", "reflection"):
        return [("ok", False)]
    return None


@pytest.mark.parametrize("point", list(CASES))
@pytest.mark.parametrize("how", ["task", "token", "aclose"])
async def test_cancel_at_every_await_point(point: str, how: str) -> None:
    case = CASES[point]()
    case.agent.recorders.append(Trigger(case))
    before = asyncio.all_tasks()
    token = CancellationToken()
    run = case.agent.iter([TextMessage(content="go", source="user")], token)
    consumer = asyncio.create_task(consume(run, case))
    await within(case.reached.wait(), f"the run to block at {point}")
    await asyncio.sleep(0.01)  # let the run settle into the blocking await
    assert not consumer.done()
    if how == "task":
        consumer.cancel()
    elif how == "token":
        token.cancel()
    else:
        await within(run.aclose(), f"aclose() at {point}")
    await asyncio.wait({consumer}, timeout=HANG_GUARD_S)
    assert consumer.done(), (
        f"gave up after {HANG_GUARD_S:g} s waiting for the run to end on the {how} cancel at {point}"
    )
    assert consumer.cancelled()  # the consumer's await raised CancelledError
    assert run.status == "cancelled"
    await check_after(case, before, expected_results(point))


@pytest.mark.parametrize("point", ["memory", "llm", "stream", "single_tool", "tool1", "reflection"])
async def test_cancel_run_task_from_outside(point: str) -> None:
    case = CASES[point]()
    case.agent.recorders.append(Trigger(case))
    before = asyncio.all_tasks()
    task = asyncio.create_task(case.agent.run(task="go"))
    await within(case.reached.wait(), f"the run to block at {point}")
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(task, f"the cancelled run to end at {point}")
    await check_after(case, before, expected_results(point))


@pytest.mark.parametrize(
    "stop_at",
    ["RunStarted", "add_messages", "LLMCall", "tool_request", "ToolExecution", "tool_execution", "next_llm_call"],
)
async def test_consumer_stops_iterating_and_closes(stop_at: str) -> None:
    """A stepper or view that stops at a yield and calls aclose(): the run ends, the context is valid."""

    async def fast() -> str:
        return "ok"

    client = ReplayChatCompletionClient([calls(("c1", "fast", "{}"), ("c2", "fast", "{}")), "after"])
    agent = AssistantAgent("a", client, tools=[fast], max_tool_iterations=2)
    before = asyncio.all_tasks()
    run = agent.iter([TextMessage(content="go", source="user")])
    async for item in run:
        if type(item).__name__ == stop_at or (isinstance(item, Move) and item.name == stop_at):
            break
    await within(run.aclose(), f"aclose() at {stop_at}")
    assert run.status == "cancelled" and not agent.is_running
    await asyncio.sleep(0)
    assert other_tasks(before) == set()
    assert every_call_answered(agent)
    assert validate_context([*agent.model_context.messages, NEXT], agent.tools) == []
    client.position = 1
    assert (await agent.run(task="next")).messages[-1].content == "after"


async def test_token_cancelled_before_the_run() -> None:
    token = CancellationToken()
    token.cancel()
    agent = AssistantAgent("a", ReplayChatCompletionClient(["x"]))
    with pytest.raises(asyncio.CancelledError):
        await agent.run(task="go", cancellation_token=token)
    assert len(agent.model_context) == 0 and not agent.is_running
    assert (await agent.run(task="go")).messages[-1].content == "x"


async def test_streaming_tool_cancelled_while_forwarding_events() -> None:
    from nbagent import ThoughtEvent

    async def ticker():
        for i in range(10**6):  # hours of ticks: only the cancel ends it
            yield ThoughtEvent(content=f"tick {i}", source="t")
            await asyncio.sleep(0.01)
        yield "never"

    client = ReplayChatCompletionClient([calls(("c1", "ticker", "{}")), "after"])
    agent = AssistantAgent("a", client, tools=[ticker])
    before = asyncio.all_tasks()
    run = agent.iter([TextMessage(content="go", source="user")])
    async for item in run:
        if isinstance(item, ThoughtEvent) and item.content == "tick 2":
            break
    await within(run.aclose(), "aclose() while the tool streams")
    await asyncio.sleep(0)
    assert other_tasks(before) == set()
    assert [(r.content, r.is_error) for r in agent.model_context.messages[2].content] == [(CANCELLED, True)]
    assert (await agent.run(task="next")).messages[-1].content == "after"


@pytest.mark.parametrize("how", ["task", "token"])
async def test_cancel_during_sync_tool_in_thread(how: str) -> None:
    """A thread cannot be stopped; the run still ends at once and the late result is dropped."""
    import threading

    started = threading.Event()
    release = threading.Event()

    def blocking() -> str:
        started.set()
        release.wait(600)  # released when the test ends: the run must not wait for it
        return "late"

    client = ReplayChatCompletionClient([calls(("c1", "blocking", "{}")), "after"])
    agent = AssistantAgent("a", client, tools=[blocking])
    token = CancellationToken()
    task = asyncio.create_task(agent.run(task="go", cancellation_token=token))
    while not started.is_set():
        await asyncio.sleep(0.005)
    try:
        if how == "task":
            task.cancel()
        else:
            token.cancel()
        with pytest.raises(asyncio.CancelledError):
            await within(task, "the cancelled run to end while its thread still runs")
    finally:
        release.set()
    assert [(r.content, r.is_error) for r in agent.model_context.messages[2].content] == [(CANCELLED, True)]
    assert (await agent.run(task="next")).messages[-1].content == "after"
