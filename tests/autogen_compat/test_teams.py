"""nbagent's AssistantAgent as a participant of AutoGen's teams (issue 27, point 2).

Written from AutoGen 0.7.5's documentation of its teams: participants share one thread (each
agent's answer reaches the others as a user message from its source), ``RoundRobinGroupChat`` takes
turns in order, ``SelectorGroupChat`` lets a model (or ``selector_func``) pick the next speaker,
``Swarm`` follows ``HandoffMessage`` targets, a team's ``save_state()``/``load_state()`` carries
every participant's state (JSON), and a participant answers ``on_messages(messages,
cancellation_token)`` with a ``Response`` whose ``chat_message`` is AutoGen's. The team runs are also
recorded, shown and stepped through ``nbagent.autogen``, with the nbagent agents' moves in them.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from autogen_agentchat import messages as ag
from autogen_agentchat.agents import AssistantAgent as AgAssistantAgent
from autogen_agentchat.base import ChatAgent
from autogen_agentchat.base import Response as AgResponse
from autogen_agentchat.conditions import MaxMessageTermination, TextMentionTermination
from autogen_agentchat.teams import RoundRobinGroupChat, SelectorGroupChat, Swarm
from autogen_core import CancellationToken as AgCancellationToken
from autogen_core import FunctionCall as AgFunctionCall
from autogen_core import models as agm
from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplayClient
from pydantic import BaseModel

import nbagent
import nbagent.autogen as na
from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    Trace,
    UserMessage,
)
from nbagent.autogen.stepper import AutoGenStepper
from nbagent.notebook.view import AgentRunView

from ..waits import within

INFO: agm.ModelInfo = {
    "vision": False,
    "function_calling": True,
    "json_output": False,
    "family": "unknown",
    "structured_output": False,
}


def replay(*answers: str | CreateResult) -> ReplayChatCompletionClient:
    return ReplayChatCompletionClient(list(answers))


def transfer(target: str, call_id: str = "h1") -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=call_id, name=f"transfer_to_{target}", arguments="{}")],
    )


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def add_call() -> CreateResult:
    return CreateResult(
        finish_reason="function_calls", content=[FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')]
    )


def texts(messages: list[Any]) -> list[tuple[str, str, str]]:
    return [(type(m).__name__, m.source, m.to_text()) for m in messages]


# ---------------------------------------------------------------------- the ChatAgent protocol


async def test_an_nbagent_agent_is_a_chat_agent_answering_autogen_with_autogens_types() -> None:
    agent = AssistantAgent("bot", replay(add_call(), "It is 3."), tools=[add], reflect_on_tool_use=True)
    assert isinstance(agent, ChatAgent)
    assert not na.is_autogen(agent)  # nbagent's own: nbagent's entry points run it as theirs
    response = await agent.on_messages([ag.TextMessage(content="1 + 2?", source="user")], AgCancellationToken())
    assert isinstance(response, AgResponse) and isinstance(response.chat_message, ag.TextMessage)
    assert response.chat_message.content == "It is 3." and response.chat_message.source == "bot"
    assert [type(m) for m in response.inner_messages] == [ag.ToolCallRequestEvent, ag.ToolCallExecutionEvent]
    assert response.inner_messages[1].content[0] == agm.FunctionExecutionResult(
        content="3", name="add", call_id="c1", is_error=False
    )
    # The run is nbagent's: its trace holds the moves and calls, with the message ids AutoGen's items carry.
    events = agent.trace.events_df()
    assert "Move" in set(events["kind"]) and len(agent.trace.llm_calls_df()) == 2
    assert response.chat_message.id in set(events["event_id"])
    # Called with nbagent's messages it answers with nbagent's, as before.
    again = await nbagent.AssistantAgent("b2", replay("fine")).on_messages(
        [nbagent.TextMessage(content="x", source="u")]
    )
    assert type(again) is nbagent.Response


async def test_on_messages_stream_with_autogens_token_and_no_message_speaks_autogen() -> None:
    agent = AssistantAgent("bot", replay("hello", "again"), model_client_stream=True)
    await agent.run(task="first")
    items = [item async for item in agent.on_messages_stream([], AgCancellationToken())]
    assert [type(item) for item in items] == [ag.ModelClientStreamingChunkEvent, AgResponse]
    assert items[-1].chat_message.content == "again"
    assert items[0].full_message_id == items[-1].chat_message.id


async def test_autogen_messages_as_a_task_are_converted_exactly() -> None:
    agent = AssistantAgent("bot", replay("one", "two"))
    task = ag.TextMessage(content="hi", source="alice", metadata={"k": "v"})
    result = await agent.run(task=task)
    first = result.messages[0]
    assert type(first) is nbagent.TextMessage
    assert (first.id, first.source, first.content, first.metadata, first.created_at) == (
        task.id, "alice", "hi", {"k": "v"}, task.created_at,
    )  # fmt: skip
    # A list mixing AutoGen's messages, with a MultiModalMessage: it enters the context as AutoGen's
    # to_model_message() makes it (its image kept).
    from autogen_core import Image as AgImage

    pixel = AgImage.from_base64(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    await agent.run(
        task=[ag.TextMessage(content="look", source="u"), ag.MultiModalMessage(content=["see", pixel], source="u")]
    )
    last = agent.model_context.messages[-2]
    assert isinstance(last, UserMessage) and isinstance(last.content, list)
    assert last.content[0] == "see" and isinstance(last.content[1], nbagent.Image)


AGENTS_FIRST = """
import asyncio, sys
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient

assert not [name for name in sys.modules if name.startswith("autogen")]  # nbagent imports no AutoGen
handoff = CreateResult(
    finish_reason="function_calls", content=[FunctionCall(id="h1", name="transfer_to_bob", arguments="{}")]
)
alice = AssistantAgent("alice", ReplayChatCompletionClient([handoff]), handoffs=["bob"])

class Mine(AssistantAgent):
    pass

bob = Mine("bob", ReplayChatCompletionClient(["done TERMINATE"]), handoffs=["alice"])

from autogen_agentchat.base import ChatAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import Swarm

assert isinstance(alice, ChatAgent) and isinstance(bob, ChatAgent)
team = Swarm([alice, bob], termination_condition=TextMentionTermination("TERMINATE"))
result = asyncio.run(team.run(task="hi"))
print([(type(m).__name__, m.source) for m in result.messages])
"""


@pytest.mark.subprocess
def test_agents_made_before_autogen_is_imported_join_its_teams(tmp_path: Path) -> None:
    script = tmp_path / "agents_first.py"
    script.write_text(AGENTS_FIRST)
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        "[('TextMessage', 'user'), ('ToolCallRequestEvent', 'alice'), ('ToolCallExecutionEvent', 'alice'), "
        "('HandoffMessage', 'alice'), ('TextMessage', 'bob')]"
    )


@pytest.mark.subprocess
def test_agents_join_when_another_finder_loaded_autogen() -> None:
    script = (
        "import sys, nbagent\n"
        "sys.meta_path[:] = [f for f in sys.meta_path if type(f).__module__ != 'nbagent._imports']\n"
        "from autogen_agentchat.base import ChatAgent\n"
        "early = issubclass(nbagent.AssistantAgent, ChatAgent)\n"
        "agent = nbagent.AssistantAgent('a', nbagent.ReplayChatCompletionClient(['x']))\n"
        "print(early, isinstance(agent, ChatAgent))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.split() == ["False", "True"], done.stderr  # registered when an agent is made


# ---------------------------------------------------------------------- RoundRobinGroupChat


async def test_round_robin_of_two_nbagent_agents() -> None:
    a1 = AssistantAgent("a1", replay("one", "three", "five"))
    a2 = AssistantAgent("a2", replay("two", "four"))
    team = RoundRobinGroupChat([a1, a2], termination_condition=MaxMessageTermination(3))
    result = await team.run(task="count")
    assert texts(result.messages) == [
        ("TextMessage", "user", "count"),
        ("TextMessage", "a1", "one"),
        ("TextMessage", "a2", "two"),
    ]
    assert all(isinstance(m, ag.TextMessage) for m in result.messages)
    assert result.stop_reason == "Maximum number of messages 3 reached, current message count: 3"
    # Participants share the thread: a2 got the task and a1's answer as user messages from their sources.
    assert [(type(m).__name__, getattr(m, "source", None)) for m in a2.model_context.messages] == [
        ("UserMessage", "user"), ("UserMessage", "a1"), ("AssistantMessage", "a2"),
    ]  # fmt: skip
    # Run again without a task: the team goes on where it stopped.
    more = await team.run()
    assert texts(more.messages)[:1] == [("TextMessage", "a1", "three")]


async def test_round_robin_mixing_nbagent_and_autogen_agents_with_tools() -> None:
    nb_agent = AssistantAgent("calc", replay(add_call(), "It is 3."), tools=[add], reflect_on_tool_use=True)
    ag_agent = AgAssistantAgent("checker", AgReplayClient(["Checked: 3 is right."], model_info=INFO))
    # MaxMessageTermination counts chat messages (AutoGen's include_agent_event=False): task and two answers.
    team = RoundRobinGroupChat([nb_agent, ag_agent], termination_condition=MaxMessageTermination(3))
    result = await team.run(task="1 + 2?")
    assert [type(m) for m in result.messages] == [
        ag.TextMessage, ag.ToolCallRequestEvent, ag.ToolCallExecutionEvent, ag.TextMessage, ag.TextMessage,
    ]  # fmt: skip
    assert texts(result.messages)[-2:] == [
        ("TextMessage", "calc", "It is 3."),
        ("TextMessage", "checker", "Checked: 3 is right."),
    ]
    held = await ag_agent.model_context.get_messages()
    assert [(type(m).__name__, getattr(m, "source", None)) for m in held][:2] == [
        ("UserMessage", "user"), ("UserMessage", "calc"),
    ]  # fmt: skip


async def test_team_state_saved_and_loaded_with_nbagent_participants() -> None:
    team = RoundRobinGroupChat(
        [AssistantAgent("a1", replay("one")), AssistantAgent("a2", replay("two"))],
        termination_condition=MaxMessageTermination(3),
    )
    await team.run(task="count")
    state = json.loads(json.dumps(await team.save_state()))  # JSON through and through
    b1, b2 = AssistantAgent("a1", replay("three")), AssistantAgent("a2", replay("four"))
    again = RoundRobinGroupChat([b1, b2], termination_condition=MaxMessageTermination(2))
    await again.load_state(state)
    assert [getattr(m, "content", None) for m in b2.model_context.messages] == ["count", "one", "two"]
    result = await again.run()
    assert texts(result.messages) == [("TextMessage", "a1", "three"), ("TextMessage", "a2", "four")]
    await again.reset()  # AutoGen's reset resets every participant (on_reset)
    assert b1.model_context.messages == [] and b2.model_context.messages == []


# ---------------------------------------------------------------------- Swarm and SelectorGroupChat


async def test_swarm_hands_off_between_nbagent_agents() -> None:
    triage = AssistantAgent("triage", replay(transfer("expert")), handoffs=["expert"])
    expert = AssistantAgent("expert", replay("The answer. TERMINATE"))
    team = Swarm([triage, expert], termination_condition=TextMentionTermination("TERMINATE"))
    result = await team.run(task="help")
    assert [type(m) for m in result.messages] == [
        ag.TextMessage, ag.ToolCallRequestEvent, ag.ToolCallExecutionEvent, ag.HandoffMessage, ag.TextMessage,
    ]  # fmt: skip
    handoff = result.messages[3]
    assert (handoff.source, handoff.target) == ("triage", "expert")
    assert texts(result.messages)[-1] == ("TextMessage", "expert", "The answer. TERMINATE")
    # The expert's context: the task, then the handoff (AutoGen's agents get the same).
    assert [getattr(m, "source", None) for m in expert.model_context.messages] == ["user", "triage", "expert"]


async def test_swarm_hands_off_between_nbagent_and_autogen_agents() -> None:
    nb_triage = AssistantAgent("triage", replay(transfer("ag_expert"), "Back to me. TERMINATE"), handoffs=["ag_expert"])
    ag_expert = AgAssistantAgent(
        "ag_expert",
        AgReplayClient(
            [
                agm.CreateResult(
                    finish_reason="function_calls",
                    content=[AgFunctionCall(id="h2", name="transfer_to_triage", arguments="{}")],
                    usage=agm.RequestUsage(prompt_tokens=1, completion_tokens=1),
                    cached=False,
                )
            ],
            model_info=INFO,
        ),
        handoffs=["triage"],
    )
    team = Swarm([nb_triage, ag_expert], termination_condition=TextMentionTermination("TERMINATE"))
    result = await team.run(task="help")
    handoffs = [(m.source, m.target) for m in result.messages if isinstance(m, ag.HandoffMessage)]
    assert handoffs == [("triage", "ag_expert"), ("ag_expert", "triage")]
    assert texts(result.messages)[-1] == ("TextMessage", "triage", "Back to me. TERMINATE")


async def test_selector_group_chat_picks_nbagent_agents_by_model_and_by_function() -> None:
    planner = AssistantAgent("planner", replay("Plan: code it."), description="Plans.")
    coder = AssistantAgent("coder", replay("print('hi')"), description="Codes.")
    team = SelectorGroupChat(
        [planner, coder],
        model_client=AgReplayClient(["planner", "coder"]),
        termination_condition=MaxMessageTermination(3),
    )
    result = await team.run(task="write hello")
    assert [m.source for m in result.messages] == ["user", "planner", "coder"]

    chosen: list[str] = []

    def selector(thread: Any) -> str:
        chosen.append(thread[-1].source)
        return "coder"

    coder2 = AssistantAgent("coder", replay("done"), description="Codes.")
    team2 = SelectorGroupChat(
        [AssistantAgent("planner", replay("x"), description="Plans."), coder2],
        model_client=AgReplayClient([]),
        selector_func=selector,
        termination_condition=MaxMessageTermination(2),
    )
    result2 = await team2.run(task="go")
    assert [m.source for m in result2.messages] == ["user", "coder"] and chosen == ["user"]


async def test_structured_answers_in_a_team_with_autogens_custom_message_types() -> None:
    class Verdict(BaseModel):
        ok: bool

    judge = AssistantAgent(
        "judge",
        ReplayChatCompletionClient(['{"ok": true}'], model_info={**INFO, "structured_output": True}),
        output_content_type=Verdict,
    )
    team = RoundRobinGroupChat(
        [judge],
        termination_condition=MaxMessageTermination(2),
        custom_message_types=[ag.StructuredMessage[Verdict]],  # AutoGen's way to name such a type
    )
    result = await team.run(task="judge")
    answer = result.messages[-1]
    assert isinstance(answer, ag.StructuredMessage) and answer.content == Verdict(ok=True)


# ---------------------------------------------------------------------- recorded, shown, stepped


async def test_a_team_run_records_the_nbagent_agents_moves_and_calls() -> None:
    calc = AssistantAgent("calc", replay(add_call(), "It is 3."), tools=[add], reflect_on_tool_use=True)
    checker = AgAssistantAgent("checker", AgReplayClient(["Checked."], model_info=INFO))
    team = RoundRobinGroupChat([calc, checker], termination_condition=MaxMessageTermination(3))
    trace = Trace()
    result = await na.run(team, "1 + 2?", trace=trace)
    assert texts(result.messages)[-1] == ("TextMessage", "checker", "Checked.")
    runs = trace.runs_df()
    assert list(runs["agent"]) == ["RoundRobinGroupChat", "calc", "checker"]
    team_run = runs["run_id"].iloc[0]
    assert list(runs["parent_run_id"].iloc[1:]) == [team_run, team_run]
    assert list(runs["n_llm_calls"].iloc[1:]) == [2, 1] and list(runs["n_tool_calls"].iloc[1:]) == [1, 0]
    calc_events = trace.events_df().query("agent == 'calc'")
    assert [m for m in calc_events["move"].dropna().unique()] == [
        "add_messages", "message_id", "call_llm", "tool_request", "tool_execution", "reflect",
    ]  # fmt: skip
    assert list(trace.llm_calls_df()["purpose"]) == ["initial", "reflection", "initial"]
    # The agent's own trace has its run too, as for any run of it.
    assert list(calc.trace.runs_df()["status"]) == ["ok"]


async def test_a_team_with_nbagent_agents_in_the_live_view_and_the_stepper() -> None:
    def team() -> Swarm:
        triage = AssistantAgent("triage", replay(transfer("expert")), handoffs=["expert"])
        expert = AssistantAgent("expert", replay("Solved. TERMINATE"), model_client_stream=True)
        return Swarm([triage, expert], termination_condition=TextMentionTermination("TERMINATE"))

    view = AgentRunView("Swarm")
    response = await view.run(team(), "help")
    assert view.status == "ok" and response is not None and response.chat_message.source == "expert"
    html = view.to_html()
    assert 'data-from="triage"' in html and 'data-agent="expert"' in html  # the handoff, turn by turn
    assert 'data-metric="llm_calls" data-value="2"' in html

    stepper = AutoGenStepper(team(), "help", trace=Trace())
    steps = await stepper.run_to_end()
    kinds = [step.kind for step in steps]
    assert kinds.count("LLMCall") == 2 and "HandoffMessage" in kinds and kinds[-1] == "RunFinished"
    assert "Move" in kinds  # the nbagent agents' moves are in the walk


async def test_a_team_run_with_nbagent_agents_is_cancelled() -> None:
    started = asyncio.Event()

    async def slow(x: int) -> int:
        """Wait."""
        started.set()
        await asyncio.sleep(3600)  # far past the test's hang guard: only the cancel ends it
        return x

    worker = AssistantAgent(
        "worker",
        replay(
            CreateResult(
                finish_reason="function_calls", content=[FunctionCall(id="s1", name="slow", arguments='{"x": 1}')]
            )
        ),
        tools=[slow],
    )
    other = AssistantAgent("other", replay("never"))
    team = RoundRobinGroupChat([worker, other], termination_condition=MaxMessageTermination(4))
    token = nbagent.CancellationToken()
    trace = Trace()
    run = asyncio.ensure_future(na.run(team, "go", trace=trace, cancellation_token=token))
    await within(started.wait(), "the team's tool to start")
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(run, "the cancelled team run to end")
    # The nbagent agent's context is left valid: its tool call has a (cancelled) result.
    from ..models.chat_server import validate_context

    assert validate_context(worker.model_context.messages) == []
    assert "cancelled" in set(trace.runs_df()["status"])


async def test_step_mode_holds_an_nbagent_agent_before_its_model_call() -> None:
    client = replay(add_call(), "It is 3.")
    calc = AssistantAgent("calc", client, tools=[add], reflect_on_tool_use=True)
    checker = AgAssistantAgent("checker", AgReplayClient(["Checked."], model_info=INFO))
    team = RoundRobinGroupChat([calc, checker], termination_condition=MaxMessageTermination(3))
    stepper = AutoGenStepper(team, "1 + 2?", trace=Trace())
    paused = 0
    while not stepper.done:
        step = await stepper.next()
        if isinstance(step.item, nbagent.LLMCall) and step.item.run_id in {
            run for agent, run in stepper.run.turns if agent == "calc"
        }:
            # Held before the call is sent: not answered, the client not called for it yet.
            assert step.item.duration_s is None and len(client.create_calls) == paused
            paused += 1
    assert paused == 2
    assert stepper.status == "finished"
    durations = stepper.trace.llm_calls_df()["duration_s"]
    assert durations.notna().all()


async def test_step_mode_records_a_held_call_with_its_start_once_sent() -> None:
    """A call held at a pause (an nbagent agent's and an AutoGen agent's) is recorded when its wait ends,
    with the time it starts then: no recorder holds a call whose start is rewritten afterwards (as
    before, the start being made at the pause and changed once the call was sent)."""
    calc = AssistantAgent("calc", replay(add_call(), "It is 3."), tools=[add], reflect_on_tool_use=True)
    checker = AgAssistantAgent("checker", AgReplayClient(["Checked."], model_info=INFO))
    seen: list[tuple[nbagent.LLMCall, datetime, float]] = []

    class Spy:
        def record(self, item: Any) -> None:
            if type(item) is nbagent.LLMCall:
                seen.append((item, item.started_at, item.start_perf))

    calc.recorders.append(Spy())  # type: ignore[arg-type]  # a recorder: record(item)
    team = RoundRobinGroupChat([calc, checker], termination_condition=MaxMessageTermination(3))
    stepper = AutoGenStepper(team, "1 + 2?", trace=Trace())
    taken: list[tuple[nbagent.LLMCall, float]] = []
    while not stepper.done:
        step = await stepper.next()
        if isinstance(step.item, nbagent.LLMCall):
            # shown at the pause, not yet recorded: the trace has the calls before it only
            assert len(stepper.trace.llm_calls_df()) == len(taken)
            assert not any(call is step.item for call, _, _ in seen)
            taken.append((step.item, time.perf_counter()))
    assert len(seen) == 2 and len(taken) == 3
    for call, started_at, start_perf in seen:
        assert (call.started_at, call.start_perf) == (started_at, start_perf)  # as recorded, never rewritten
    calls = stepper.trace.llm_calls_df()
    assert list(calls["agent"]) == ["calc", "calc", "checker"]
    assert list(calls["started_at"].iloc[:2]) == [started_at for _, started_at, _ in seen]
    for call, at in taken:
        assert call.start_perf > at  # it started after the walker took it, when it was sent


async def test_nbagent_autogen_run_refuses_nbagents_own_agent_naming_the_entry_point() -> None:
    with pytest.raises(TypeError, match=r"nbagent's own AssistantAgent: run it with nbagent.run\(agent, task\)"):
        await na.run(AssistantAgent("solo", replay("x")), "task")
