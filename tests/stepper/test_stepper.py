"""The programmatic stepper: one move per ``next()``, equal to an unstepped run, reset, breakpoints."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nbagent import (
    TRACE_COLUMNS,
    AgentBusyError,
    AssistantAgent,
    AssistantMessage,
    BaseAgentEvent,
    BaseChatMessage,
    FunctionExecutionResultMessage,
    LLMCall,
    Move,
    ReplayChatCompletionClient,
    Response,
    RunFinished,
    RunStarted,
    StructuredOutputError,
    SystemMessage,
    TextMessage,
    ToolExecution,
    UserMessage,
    dump_message,
)
from nbagent.agent import CANCELLED_TOOL_RESULT, DEFAULT_SYSTEM_MESSAGE
from nbagent.context import message_text
from nbagent.stepper import Stepper, StepperFinished, StepResult

from .scenarios import SCENARIOS, Scenario, Weather, add, calls, fail, text

pytestmark = pytest.mark.filterwarnings("ignore:Multiple handoffs detected")
TASK = "What is 2 + 3?"
VOLATILE = {"id", "created_at", "full_message_id"}


def norm(item: Any) -> Any:
    """An item without its ids and timestamps, for comparing two runs of the same script."""
    if isinstance(item, Response):
        return ("Response", norm(item.chat_message), [norm(inner) for inner in item.inner_messages])
    if isinstance(item, (BaseAgentEvent, BaseChatMessage)):
        return {key: value for key, value in dump_message(item).items() if key not in VOLATILE}
    if isinstance(item, Move):
        return ("Move", item.name, item.iteration)
    if isinstance(item, LLMCall):
        request = item.request
        return (
            "LLMCall",
            item.iteration,
            item.purpose,
            item.model,
            item.streaming,
            [message.model_dump() for message in request.messages],
            request.tools,
            request.tool_choice,
            request.json_output,
            None if item.result is None else item.result.model_dump(),
            item.error,
        )
    if isinstance(item, ToolExecution):
        assert item.result is not None
        return ("ToolExecution", item.iteration, item.call.model_dump(), item.batch_size, item.result.model_dump())
    if isinstance(item, RunStarted):
        return ("RunStarted", item.agent, [norm(message) for message in item.task])
    if isinstance(item, RunFinished):
        return ("RunFinished", item.agent, item.status, item.error)
    raise AssertionError(f"unexpected item {item!r}")


def context(agent: AssistantAgent) -> list[dict[str, Any]]:
    return [message.model_dump() for message in agent.model_context.messages]


async def unstepped(scenario: Scenario) -> tuple[AssistantAgent, list[Any]]:
    agent = scenario.agent()
    events = [item async for item in agent.on_messages_stream([TextMessage(content=TASK, source="user")])]
    return agent, events


def event_types(results: list[StepResult]) -> list[str]:
    return [
        event.chat_message.type if isinstance(event, Response) else event.type
        for result in results
        for event in result.events
    ]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_one_move_per_next(scenario: Scenario) -> None:
    agent = scenario.agent()
    stepper = Stepper(agent, TASK)
    assert (stepper.status, stepper.upcoming) == ("ready", None)
    results = []
    while not stepper.done:
        result = await stepper.next()
        results.append(result)
        assert agent.is_running is not result.done
    assert [r.name for r in results] == scenario.moves
    assert [r.index for r in results] == list(range(1, len(results) + 1))
    assert [r.upcoming.name if r.upcoming else None for r in results] == [*scenario.moves[1:], None]
    assert [r.done for r in results] == [False] * (len(results) - 1) + [True]
    assert event_types(results) == scenario.events
    for result in results:
        frame = result.context
        assert frame["text"].tolist() == [message_text(m) for m in result.context_after]
        assert frame.loc[frame["change"] == "added", "move"].tolist() == [result.name] * len(result.added)
    assert stepper.status == "finished" and stepper.history == results
    assert stepper.response is results[-1].response is not None
    with pytest.raises(StepperFinished, match="await reset"):
        await stepper.next()
    assert await stepper.run_to_end() == []


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_stepped_run_equals_unstepped_run(scenario: Scenario) -> None:
    plain_agent, plain_events = await unstepped(scenario)
    agent = scenario.agent()
    stepper = Stepper(agent, TASK)
    await stepper.run_to_end()
    assert [norm(e) for e in stepper.events] == [norm(e) for e in plain_events]
    assert context(agent) == context(plain_agent)
    assert [norm(i) for i in agent.trace.items] == [norm(i) for i in plain_agent.trace.items]
    assert type(agent.trace.items[-1]) is RunFinished and agent.trace.items[-1].status == "ok"


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_reset_after_the_end_walks_the_same_run_again(scenario: Scenario) -> None:
    agent = scenario.agent()
    stepper = Stepper(agent, TASK)
    first = [norm(e) for r in await stepper.run_to_end() for e in r.events]
    first_context = context(agent)
    await stepper.reset()
    assert (stepper.status, stepper.history, context(agent)) == ("ready", [], [])
    assert agent.model_client.remaining == len(scenario.script())
    again = [norm(e) for r in await stepper.run_to_end() for e in r.events]
    assert again == first
    assert context(agent) == first_context


async def test_each_move_reports_its_step_method_explanation_and_context_change() -> None:
    scenario = next(s for s in SCENARIOS if s.name == "handoff_and_tool")
    stepper = Stepper(scenario.agent(), TASK)
    results = await stepper.run_to_end()
    assert [(r.step, r.method, r.iteration) for r in results] == [
        (1, "_add_messages_to_context", None),
        (3, "_run_steps", None),
        (4, "_call_llm", 0),
        (5, "_process_model_result", 0),
        (5, "_execute_tool_calls", 0),
        (5, "_check_and_handle_handoff", 0),
    ]
    assert results[0].title == "New messages into model_context"
    assert results[0].explanation.startswith("The new messages of this call are added to the model context")
    assert [(r.added, r.changed) for r in results] == [([0], []), ([], []), ([], []), ([1], []), ([2], []), ([], [])]
    assert [len(r.context_before) for r in results] == [0, 1, 1, 1, 2, 3]
    assert [e.type for e in results[3].events] == ["ToolCallRequestEvent"]
    assert [c.name for c in results[3].tool_calls] == ["add", "transfer_to_billing"]
    assert [(x.call.name, x.result.content) for x in results[4].tool_executions] == [
        ("add", "3"),
        ("transfer_to_billing", "Transferred to billing, adopting the role of billing immediately."),
    ]
    assert [r.content for r in results[4].tool_results] == [
        "3",
        "Transferred to billing, adopting the role of billing immediately.",
    ]
    assert results[5].response is not None and results[5].response.chat_message.type == "HandoffMessage"
    assert type(results[0].items[0]) is RunStarted
    assert type(results[-1].items[-1]) is RunFinished

    frame = results[4].context
    assert list(frame.columns) == [*TRACE_COLUMNS["context"], "change"]
    assert frame["kind"].tolist() == ["user", "assistant", "tool_result"]
    assert frame["change"].tolist() == ["", "", "added"]
    assert frame["move"].tolist() == ["add_messages", "tool_request", "tool_execution"]
    assert frame["step"].tolist() == [1, 5, 5]
    assert [[c["name"] for c in calls] for calls in frame["tool_calls"].dropna()] == [["add", "transfer_to_billing"]]
    assert frame["text"].tolist()[0] == TASK
    assert [r.context["change"].tolist() for r in results[:4]] == [["added"], [""], [""], ["", "added"]]


async def test_llm_moves_show_the_exact_request_and_raw_result() -> None:
    script = [calls(("c1", "add", '{"a": 2, "b": 3}')), calls(("c2", "add", '{"a": 5, "b": 5}')), text("10")]
    agent = AssistantAgent(
        "assistant", ReplayChatCompletionClient(script), tools=[add], handoffs=["billing"],
        max_tool_iterations=2, reflect_on_tool_use=True,
    )  # fmt: skip
    stepper = Stepper(agent, TASK)
    first = await stepper.run_until(move="call_llm")
    assert first is not None and first.request is not None and first.llm_call is not None
    assert first.request.messages == [
        SystemMessage(content=DEFAULT_SYSTEM_MESSAGE),
        UserMessage(content=TASK, source="user"),
    ]
    assert [tool["name"] for tool in first.request.tools] == ["add", "transfer_to_billing"]
    assert first.request.tool_choice == "auto"
    assert first.result == script[0]
    assert first.llm_call.purpose == "initial"
    assert first.request is agent.trace.items[agent.trace.items.index(first.llm_call)].request

    again = await stepper.run_until(move="next_llm_call")
    assert again is not None and again.request is not None and again.iteration == 1
    assert [type(m).__name__ for m in again.request.messages] == [
        "SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage",
    ]  # fmt: skip
    assert again.request.messages[-1].content[0].content == "5"
    assert again.result == script[1]

    reflect = await stepper.run_until(step=5, move="reflect")
    assert reflect is not None and reflect.request is not None and reflect.done
    assert (reflect.request.tools, reflect.request.tool_choice) == ([], "none")
    assert reflect.result == script[2]
    assert reflect.llm_call is not None and reflect.llm_call.purpose == "reflection"
    assert reflect.response is not None and reflect.response.chat_message.content == "10"
    tool_moves = [r for r in stepper.history if r.name in ("tool_request", "tool_execution", "add_messages")]
    assert all(r.request is None and r.result is None for r in tool_moves)


async def test_breakpoints_pause_at_the_first_matching_move() -> None:
    scenario = next(s for s in SCENARIOS if s.name == "two_rounds_then_text")
    stepper = Stepper(scenario.agent(), TASK)
    hit = await stepper.run_until(step=5)
    assert hit is not None and (hit.name, hit.iteration, len(stepper.history)) == ("tool_request", 0, 4)
    hit = await stepper.run_until(tool="mul")
    assert hit is not None and (hit.name, hit.iteration) == ("tool_request", 1)
    hit = await stepper.run_until(tool="mul", move="tool_execution")
    assert hit is not None and [r.content for r in hit.tool_results] == ["20"]
    hit = await stepper.run_until(lambda r: r.response is not None)
    assert hit is not None and hit.name == "text_exit" and stepper.done
    assert await stepper.run_until(step=1) is None

    await stepper.reset()
    hit = await stepper.run_until(iteration=2)
    assert hit is not None and (hit.name, hit.iteration) == ("next_llm_call", 2)
    with pytest.raises(ValueError, match="needs a condition"):
        await stepper.run_until()


async def test_breakpoint_on_an_error_result() -> None:
    script = [calls(("c1", "add", '{"a": 1, "b": 1}')), calls(("c2", "fail", '{"reason": "disk full"}')), text("sorry")]
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(script), tools=[add, fail], max_tool_iterations=3)
    stepper = Stepper(agent, TASK)
    hit = await stepper.run_until(error=True)
    assert hit is not None and (hit.name, hit.iteration) == ("tool_execution", 1)
    assert [(r.name, r.is_error) for r in hit.tool_results] == [("fail", True)]
    assert "disk full" in hit.tool_results[0].content
    assert not any(r.has_error for r in stepper.history[:-1])
    assert await stepper.run_until(error=True) is None and stepper.status == "finished"


async def test_an_exception_in_the_run_ends_the_walk_with_the_error() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["not json"]), output_content_type=Weather)
    stepper = Stepper(agent, TASK)
    results = await stepper.run_to_end()
    assert [r.name for r in results] == ["add_messages", "message_id", "call_llm", "text_exit"]
    assert isinstance(results[-1].error, StructuredOutputError) and results[-1].done and results[-1].has_error
    assert stepper.status == "error" and not agent.is_running
    assert await stepper.run_until(error=True) is None
    finished = agent.trace.items[-1]
    assert type(finished) is RunFinished and finished.status == "error"


async def test_aclose_mid_tool_loop_leaves_a_valid_context_and_frees_the_agent() -> None:
    agent = next(s for s in SCENARIOS if s.name == "parallel_calls").agent()
    stepper = Stepper(agent, TASK)
    hit = await stepper.run_until(move="tool_request")
    assert hit is not None and isinstance(agent.model_context.messages[-1], AssistantMessage)
    with pytest.raises(AgentBusyError):
        await agent.run(task="another task")
    await stepper.aclose()
    assert stepper.status == "cancelled" and stepper.upcoming is None and not agent.is_running
    last = agent.model_context.messages[-1]
    assert isinstance(last, FunctionExecutionResultMessage)
    assert [(r.call_id, r.content, r.is_error) for r in last.content] == [
        (call_id, CANCELLED_TOOL_RESULT, True) for call_id in ("c1", "c2", "c3")
    ]
    with pytest.raises(StepperFinished):
        await stepper.next()


async def test_reset_mid_walk_restores_the_context_and_replay_position() -> None:
    scenario = next(s for s in SCENARIOS if s.name == "two_rounds_then_text")
    agent = scenario.agent()
    client = agent.model_client
    assert isinstance(client, ReplayChatCompletionClient)
    client.chat_completions.insert(0, "Hi, earlier.")
    await agent.run(task="an earlier turn")
    before = context(agent)
    usage = client.total_usage()
    stepper = Stepper(agent, TASK)
    await stepper.run_until(move="tool_request", iteration=1)
    assert client.remaining == 1 and len(client.requests) == 3
    await stepper.reset()
    assert context(agent) == before
    assert (client.remaining, len(client.requests), client.total_usage()) == (3, 1, usage)
    assert not agent.is_running and stepper.upcoming is None
    statuses = [item.status for item in agent.trace.items if isinstance(item, RunFinished)]
    assert statuses == ["ok", "cancelled"]
    results = await stepper.run_to_end()
    assert [r.name for r in results] == scenario.moves
    assert results[-1].response is not None and results[-1].response.chat_message.to_text() == "(2 + 3) * 4 = 20"


async def test_stepping_holds_the_agent_and_one_move_at_a_time() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["slow answer"], latency=0.05))
    stepper = Stepper(agent, TASK)
    await stepper.run_until(move="message_id")
    pending = asyncio.ensure_future(stepper.next())
    await asyncio.sleep(0)
    assert stepper.moving
    with pytest.raises(RuntimeError, match="already being made"):
        await stepper.next()
    with pytest.raises(RuntimeError, match="a move is being made"):
        await stepper.reset()
    result = await pending
    assert result.name == "call_llm" and not stepper.moving


async def test_a_busy_agent_refuses_the_walk_and_the_stepper_stays_ready() -> None:
    agent = AssistantAgent("assistant", ReplayChatCompletionClient(["a", "b"]))
    holder = Stepper(agent, "first")
    await holder.next()
    other = Stepper(agent, "second")
    with pytest.raises(AgentBusyError):
        await other.next()
    assert other.status == "ready" and other.history == []
    await holder.run_to_end()
    assert [r.name for r in await other.run_to_end()][-1] == "text_exit"


async def test_cancelling_a_move_propagates_and_leaves_a_valid_context() -> None:
    agent = AssistantAgent(
        "assistant", ReplayChatCompletionClient([calls(("c1", "add", '{"a": 1, "b": 1}'))], latency=5), tools=[add]
    )
    stepper = Stepper(agent, TASK)
    await stepper.run_until(move="message_id")
    task = asyncio.ensure_future(stepper.next())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert stepper.status == "cancelled" and not agent.is_running
    assert [m.type for m in agent.model_context.messages] == ["UserMessage"]
    await stepper.reset()
    assert context(agent) == [] and stepper.status == "ready"


async def test_two_handoffs_warn_while_stepping() -> None:
    stepper = Stepper(next(s for s in SCENARIOS if s.name == "two_handoffs").agent(), TASK)
    await stepper.run_until(move="tool_execution")
    with pytest.warns(UserWarning, match="Multiple handoffs detected"):
        result = await stepper.next()
    assert result.response is not None and result.response.chat_message.target == "billing"


async def test_repr_names_the_move() -> None:
    stepper = Stepper(next(s for s in SCENARIOS if s.name == "plain_text").agent(), TASK)
    assert repr(stepper) == "<Stepper agent='assistant' status='ready', 0 moves>"
    result = await stepper.next()
    assert repr(result) == "<StepResult #1 STEP 1 add_messages (_add_messages_to_context): 0 events, +1 context rows>"
    await stepper.run_to_end()
    assert (
        repr(stepper.current)
        == "<StepResult #4 STEP 5 text_exit (_text_exit, iteration 0): 1 events, +1 context rows, done>"
    )


async def test_context_without_the_agents_trace_recording_has_no_attribution() -> None:
    agent = next(s for s in SCENARIOS if s.name == "one_tool_reflect_off").agent()
    agent.recorders = []
    results = await Stepper(agent, TASK).run_to_end()
    frame = results[-2].context
    assert frame["kind"].tolist() == ["user", "assistant", "tool_result"]
    assert frame["change"].tolist() == ["", "", "added"]
    assert frame["move"].isna().all() and agent.trace.items == []
