"""Runs of AutoGen agents and teams that fail or are cancelled, as the trace records them."""

from __future__ import annotations

import asyncio

import pandas as pd
import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.teams import RoundRobinGroupChat
from autogen_core import CancellationToken

import nbagent.autogen as na
from nbagent import Trace
from nbagent.records import LLMCall, ToolExecution

from ..waits import within
from .helpers import SlowReplay, calls, model_client, replay, round_robin


async def test_an_agent_whose_model_call_fails() -> None:
    agent = AssistantAgent("broken", replay())  # no answer to give
    client = model_client(agent)
    trace = Trace()
    with pytest.raises(ValueError, match="No more mock responses"):
        await na.run(agent, "Hello?", trace=trace)
    runs = trace.runs_df()
    assert (runs["status"].iloc[0], runs["error"].iloc[0]) == ("error", "ValueError: No more mock responses available")
    llm = trace.llm_calls_df()
    assert (llm["status"].iloc[0], llm["error"].iloc[0]) == ("error", "ValueError: No more mock responses available")
    assert not pd.isna(llm["duration_s"].iloc[0])
    assert model_client(agent) is client  # put back however the run ends


async def test_a_team_whose_agent_fails_at_its_second_turn() -> None:
    team, writer, critic = round_robin()
    model_client(writer).chat_completions.pop()  # type: ignore[attr-defined]  # its second turn has no answer
    trace = Trace()
    with pytest.raises(RuntimeError, match="No more mock responses"):
        await na.run(team, "Write a haiku.", trace=trace)
    runs = trace.runs_df()
    assert list(runs["agent"]) == ["RoundRobinGroupChat", "writer", "critic", "writer"]
    assert list(runs["status"]) == ["error", "ok", "ok", "error"]
    # The failing turn ends with its call's error; the team with AutoGen's RuntimeError around it.
    assert runs["error"].iloc[3] == "ValueError: No more mock responses available"
    assert runs["error"].iloc[0].startswith("RuntimeError: ValueError: No more mock responses available")
    assert list(trace.llm_calls_df()["status"]) == ["ok", "ok", "error"]
    # AutoGen's team can run again (it has no public reader of this flag).
    assert not team._is_running  # type: ignore[attr-defined]  # noqa: SLF001 AutoGen's team internals


async def test_a_tool_that_raises_gives_an_error_result() -> None:
    def broken(city: str) -> str:
        """Fails."""
        raise RuntimeError("no forecast today")

    agent = AssistantAgent("forecaster", replay(calls(("c1", "broken", '{"city": "Oslo"}'))), tools=[broken])
    trace = Trace()
    result = await na.run(agent, "Weather?", trace=trace)
    assert type(result.messages[-1]).__name__ == "ToolCallSummaryMessage"
    tools = trace.tool_calls_df()
    assert bool(tools["is_error"].iloc[0]) and "no forecast today" in tools["result"].iloc[0]
    runs = trace.runs_df()
    assert (runs["n_tool_errors"].iloc[0], runs["final_type"].iloc[0]) == (1, "ToolCallSummaryMessage")


async def test_an_agent_cancelled_with_autogens_token_during_a_tool() -> None:
    started = asyncio.Event()

    async def slow(city: str) -> str:
        """Takes its time."""
        started.set()
        await asyncio.sleep(3600)  # far past the test's hang guard: only the cancel ends it
        return city

    agent = AssistantAgent("slowpoke", replay(calls(("c1", "slow", '{"city": "Oslo"}'))), tools=[slow])
    client, context = model_client(agent), agent.model_context
    token = CancellationToken()
    trace = Trace()
    task = asyncio.ensure_future(na.run(agent, "Weather?", trace=trace, cancellation_token=token))
    await within(started.wait(), "the tool to start")
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(task, "the cancelled run to end")
    runs = trace.runs_df()
    assert list(runs["status"]) == ["cancelled"]
    tools = trace.tool_calls_df()
    assert tools["tool_name"].iloc[0] == "slow" and pd.isna(tools["is_error"].iloc[0])  # it never ended
    assert list(trace.llm_calls_df()["status"]) == ["ok"]
    assert model_client(agent) is client and agent.model_context is context


async def test_a_team_cancelled_with_autogens_token_during_a_model_call() -> None:
    slow = SlowReplay(["never sent"])
    first = AssistantAgent("first", replay("Hello."))
    second = AssistantAgent("second", slow)
    team = RoundRobinGroupChat([first, second], termination_condition=MaxMessageTermination(5))
    token = CancellationToken()
    trace = Trace()
    task = asyncio.ensure_future(na.run(team, "Go.", trace=trace, cancellation_token=token))
    await within(slow.started.wait(), "the slow model call to start")
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(task, "the cancelled run to end")
    runs = trace.runs_df()
    assert list(zip(runs["agent"], runs["status"])) == [
        ("RoundRobinGroupChat", "cancelled"), ("first", "ok"), ("second", "cancelled"),
    ]  # fmt: skip
    llm = trace.llm_calls_df()
    assert list(llm["status"]) == ["ok", "error"] and llm["error"].iloc[1].startswith("CancelledError")


async def test_stop_from_another_task_cancels_the_run_and_waits_for_its_end() -> None:
    slow = SlowReplay(["never sent"])
    agent = AssistantAgent("waiting", slow)
    trace = Trace()
    run = na.iter(agent, "Hello?", trace=trace)
    seen: list[object] = []

    async def consume() -> None:
        async for item in run:
            seen.append(item)

    consumer = asyncio.ensure_future(consume())
    await within(slow.started.wait(), "the slow model call to start")
    await asyncio.wait_for(run.aclose(), 10)  # the Stop button
    with pytest.raises(asyncio.CancelledError):
        await consumer
    assert run.status == "cancelled" and run.token.is_cancelled()
    assert any(isinstance(item, LLMCall) for item in seen)
    assert list(trace.runs_df()["status"]) == ["cancelled"]
    assert model_client(agent) is slow


async def test_a_consumer_that_stops_reading_ends_the_run_cancelled() -> None:
    from .helpers import tool_agent

    agent = tool_agent()
    trace = Trace()
    run = na.iter(agent, "Weather?", trace=trace)
    async for item in run:
        if isinstance(item, ToolExecution):
            break
    await run.aclose()
    assert run.status == "cancelled"
    assert list(trace.runs_df()["status"]) == ["cancelled"]
    assert not isinstance(model_client(agent), na.RecordingClient)


def slow_tool_team(seconds: float) -> tuple[RoundRobinGroupChat, AssistantAgent, asyncio.Event]:
    """A team of one agent whose tool sleeps ``seconds`` (AutoGen 0.7.5 hangs when cancelled in it)."""
    started = asyncio.Event()

    async def lookup(order: str) -> str:
        """Look an order up (a slow backend)."""
        started.set()
        await asyncio.sleep(seconds)
        return "shipped"

    agent = AssistantAgent("billing", replay(calls(("c1", "lookup", '{"order": "42"}')), "Shipped."), tools=[lookup])
    return RoundRobinGroupChat([agent], termination_condition=MaxMessageTermination(3)), agent, started


async def test_a_team_cancelled_during_a_tool_call_ends_within_the_teardown() -> None:
    team, agent, started = slow_tool_team(8)
    client, context = model_client(agent), agent.model_context
    token = CancellationToken()
    trace = Trace()
    run = na.iter(team, "Where is order 42?", trace=trace, cancellation_token=token)
    run.teardown = 1.5

    async def consume() -> None:
        async for _ in run:
            pass

    task = asyncio.ensure_future(consume())
    await within(started.wait(), "the tool to start")
    await asyncio.sleep(0.5)
    token.cancel()
    began = asyncio.get_running_loop().time()
    with pytest.raises(asyncio.CancelledError):
        await asyncio.wait_for(task, 20)
    assert asyncio.get_running_loop().time() - began < run.teardown + 1
    assert run.status == "cancelled"
    assert list(zip(trace.runs_df()["agent"], trace.runs_df()["status"])) == [
        ("RoundRobinGroupChat", "cancelled"), ("billing", "cancelled"),
    ]  # fmt: skip
    assert model_client(agent) is client and agent.model_context is context  # restored
    # The context the OpenAI API accepts: the cancelled tool call has an error result.
    held = await context.get_messages()
    assert [type(message).__name__ for message in held] == [
        "UserMessage",
        "AssistantMessage",
        "FunctionExecutionResultMessage",
    ]
    result = held[-1].content[0]
    assert result.call_id == "c1" and result.is_error  # type: ignore[union-attr]


async def test_stop_of_a_team_in_a_tool_call_ends_the_view() -> None:
    import nbagent

    team, agent, started = slow_tool_team(8)
    client = model_client(agent)
    view = nbagent.start(team, "Where is order 42?")
    await within(started.wait(), "the tool to start")
    await asyncio.sleep(0.5)  # the tool well under way (AutoGen's own __anext__ then never returns)
    began = asyncio.get_running_loop().time()
    view.stop()  # the Stop button
    for _ in range(200):
        if view.status not in ("idle", "running", "stopping"):
            break
        await asyncio.sleep(0.05)
    assert view.status == "cancelled"
    assert asyncio.get_running_loop().time() - began < 5.0 + 1  # AutoGenRun's default teardown
    assert model_client(agent) is client


async def test_breaking_out_of_a_run_puts_the_agent_back() -> None:
    import gc

    client = replay("a", "b")
    agent = AssistantAgent("x", client)
    context = agent.model_context
    async for item in na.iter(agent, "hi", trace=Trace()):
        if isinstance(item, LLMCall):
            break  # no aclose(): the run is left to the garbage collector
    for _ in range(5):
        gc.collect()
        await asyncio.sleep(0.05)
    assert model_client(agent) is client and agent.model_context is context
    result = await agent.run(task="again")  # a plain AutoGen run after it
    assert result.messages[-1].to_text() == "b"


async def test_a_second_run_of_a_running_agent_is_refused() -> None:
    from nbagent import AgentBusyError

    slow = SlowReplay(["one", "two"])
    agent = AssistantAgent("shared", slow)
    context = agent.model_context
    first = asyncio.ensure_future(na.run(agent, "one", trace=Trace()))
    await within(slow.started.wait(), "the slow model call to start")
    with pytest.raises(AgentBusyError, match="'shared' is running"):
        await na.run(agent, "two", trace=Trace())
    team = RoundRobinGroupChat([agent], termination_condition=MaxMessageTermination(2))
    with pytest.raises(AgentBusyError, match="'shared' is running"):  # nor a team it is in
        await na.run(team, "three", trace=Trace())
    assert isinstance(model_client(agent), na.RecordingClient)  # the first run's, still running
    slow.release.set()
    result = await within(first, "the first run, released")
    assert result.messages[-1].to_text() == "one"
    assert model_client(agent) is slow and agent.model_context is context
    await na.run(agent, "four", trace=Trace())  # free again
    assert model_client(agent) is slow and agent.model_context is context


async def test_an_agent_without_a_model_client_is_warned_of() -> None:
    from autogen_agentchat.agents import BaseChatAgent
    from autogen_agentchat.base import Response
    from autogen_agentchat.messages import TextMessage

    class Echo(BaseChatAgent):
        @property
        def produced_message_types(self) -> tuple[type[TextMessage]]:
            return (TextMessage,)

        async def on_messages(self, messages: object, cancellation_token: object) -> Response:
            return Response(chat_message=TextMessage(content="echo", source=self.name))

        async def on_reset(self, cancellation_token: object) -> None:
            pass

    with pytest.warns(UserWarning, match=r"'echo' .* no _model_client .*RecordingClient\(client\)"):
        await na.run(Echo("echo", "Echoes."), "hi", trace=Trace())
