"""The shortcuts that took back issue 45's CPU regression (bench/against.py against e22d83f) give what
the general path gives: a replay client's script is not repr'd, agents share one LoopSettings, a
FunctionTool's call and a StaticWorkbench's skip frames only when nothing is overridden, a scripted
text answer is the CreateResult validation makes, and a thought still comes before its answer."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    CancellationToken,
    CreateResult,
    FunctionTool,
    ReplayChatCompletionClient,
    StaticWorkbench,
    TextMessage,
    ToolResult,
)
from nbagent.messages import share_fields_set, text_result, usage
from nbagent.records import Move

from ..waits import within
from .helpers import add, calls, every_call_answered, kinds, text


class CountedRepr(str):
    """A scripted answer that counts how often its repr is taken."""

    reprs = 0

    def __repr__(self) -> str:
        CountedRepr.reprs += 1
        return super().__repr__()


def test_a_replay_client_does_not_repr_its_script() -> None:
    CountedRepr.reprs = 0
    client = ReplayChatCompletionClient([CountedRepr("hello"), CountedRepr("again")])
    assert CountedRepr.reprs == 0
    assert client.remaining == 2


def test_a_lone_string_script_still_gets_its_hint() -> None:
    with pytest.raises(TypeError, match=r"A script of one answer is \['hello'\]"):
        ReplayChatCompletionClient("hello")  # type: ignore[arg-type]


def test_agents_with_the_same_settings_share_one_loop_settings() -> None:
    client = ReplayChatCompletionClient(["a"])
    first, second = AssistantAgent("a", client), AssistantAgent("b", client)
    looping = AssistantAgent("c", client, tools=[add], max_tool_iterations=3)
    assert first.loop_settings is second.loop_settings
    assert looping.loop_settings is not first.loop_settings
    assert looping.loop_settings.max_tool_iterations == 3 and first.loop_settings.max_tool_iterations == 1


def test_a_scripted_text_is_the_create_result_validation_makes() -> None:
    built = text_result("hi", usage(3, 1))
    validated = share_fields_set(CreateResult(finish_reason="stop", content="hi", usage=usage(3, 1)))
    assert built == validated
    assert list(built.__dict__) == list(validated.__dict__)
    assert built.model_fields_set == validated.model_fields_set
    assert built.model_dump_json() == validated.model_dump_json()


class Doubling(FunctionTool):
    """A FunctionTool whose own ``run`` the shortcut must not skip."""

    async def run(self, args: Any, cancellation_token: CancellationToken) -> Any:
        return 2 * await super().run(args, cancellation_token)


async def takes_token(a: int, cancellation_token: CancellationToken) -> str:
    """Say whether a token came."""
    return f"{a} {type(cancellation_token).__name__}"


async def test_a_function_tools_shortcut_gives_what_run_gives() -> None:
    assert await FunctionTool(add).run_json({"a": 1, "b": 2}) == 3
    assert await Doubling(add).run_json({"a": 1, "b": 2}) == 6  # an overridden run() is called
    assert await FunctionTool(takes_token).run_json({"a": 1}) == "1 CancellationToken"
    with pytest.raises(Exception, match="do not match its schema"):
        await FunctionTool(add).run_json({"a": "x", "b": 2})


async def test_a_workbench_subclass_own_call_tool_is_called_by_the_loop() -> None:
    seen: list[str] = []

    class Watching(StaticWorkbench):
        async def call_tool(self, name: str, *args: Any, **kwargs: Any) -> ToolResult:
            seen.append(f"{name} {kwargs.get('call_id')}")
            return await super().call_tool(name, *args, **kwargs)

    client = ReplayChatCompletionClient([calls(("c1", "add", '{"a": 1, "b": 2}')), "3"])
    agent = AssistantAgent("a", client, workbench=Watching([FunctionTool(add)]))
    result = await agent.run(task="1 + 2?")
    assert seen == ["add c1"]
    assert result.messages[-1].content == "3"


async def test_a_thought_comes_before_its_answer_in_both_exits() -> None:
    client = ReplayChatCompletionClient([text("42", thought="thinking")])
    result = await AssistantAgent("a", client).run(task="?")
    assert kinds(result.messages) == ["TextMessage", "ThoughtEvent", "TextMessage"]
    reflecting = ReplayChatCompletionClient([calls(("c1", "add", '{"a": 1, "b": 2}')), text("3", thought="so")])
    agent = AssistantAgent("b", reflecting, tools=[add], reflect_on_tool_use=True)
    result = await agent.run(task="1 + 2?")
    assert kinds(result.messages)[-2:] == ["ThoughtEvent", "TextMessage"]
    assert result.messages[-2].content == "so" and result.messages[-1].content == "3"


async def generators_started(agent: AssistantAgent, task: str) -> tuple[list[str], list[str]]:
    """The items of a run of ``agent`` (their kinds, and a Move's name) and the names of the async
    generators it started, in order (asyncio's first-iteration hook sees each)."""
    with started_generators() as started:
        items = [item async for item in agent.iter([TextMessage(content=task, source="user")])]
    return [item.name if isinstance(item, Move) else type(item).__name__ for item in items], started


@contextmanager
def started_generators() -> Iterator[list[str]]:
    """The names of the async generators started in the block, in order (asyncio's first-iteration hook
    sees each)."""
    firstiter, finalizer = sys.get_asyncgen_hooks()
    started: list[str] = []

    def seen(agen: Any) -> None:
        started.append(agen.ag_code.co_name)
        if firstiter is not None:
            firstiter(agen)

    sys.set_asyncgen_hooks(seen, finalizer)
    try:
        yield started
    finally:
        sys.set_asyncgen_hooks(firstiter, finalizer)


async def test_a_tool_call_runs_without_a_nested_generator_and_yields_what_the_generator_yields() -> None:
    script = [calls(("c1", "add", '{"a": 1, "b": 2}')), "3"]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[add])
    items, started = await generators_started(agent, "1 + 2?")
    assert started == ["_iterate", "_run_steps", "_process_model_result"]  # STEP 5 runs the call itself
    assert items[items.index("tool_execution") :][:2] == ["tool_execution", "ToolExecution"]
    # The same run through the generator: patched on the agent, as a user may, it is what runs.
    patched = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[add])
    patched._execute_tool_calls = partial(AssistantAgent._execute_tool_calls, patched)  # type: ignore[method-assign]  # noqa: SLF001
    patched_items, patched_started = await generators_started(patched, "1 + 2?")
    assert patched_items == items
    assert "_execute_tool_calls" in patched_started
    assert context_of(patched) == context_of(agent)


async def test_a_batch_of_calls_runs_in_its_generator() -> None:
    script = [calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "add", '{"a": 3, "b": 4}')), "3 and 7"]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[add])
    items, started = await generators_started(agent, "1 + 2, 3 + 4?")
    assert "_tool_batch" in started and "_execute_tool_calls" not in started
    assert items.count("ToolExecution") == 2
    [results] = [
        m.content for m in agent.model_context.messages if type(m).__name__ == "FunctionExecutionResultMessage"
    ]
    assert [(r.call_id, r.content) for r in results] == [("c1", "3"), ("c2", "7")]


def context_of(agent: AssistantAgent) -> list[Any]:
    """The agent's context as plain data, without the ids that differ from run to run."""
    return [message.model_dump(exclude={"id"}) for message in agent.model_context.messages]


async def test_a_text_answer_exits_without_a_nested_generator_and_yields_what_the_tool_loop_yields() -> None:
    """STEP 5's text exit of a first answer runs in ``_run_steps`` (no ``_process_model_result`` generator)
    while STEP 5 is nbagent's own; patched on the agent, the patch runs, and both give the same items,
    thought first, and the same context."""
    script = [text("42", thought="thinking")]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script))
    items, started = await generators_started(agent, "?")
    assert started == ["_iterate", "_run_steps"]
    assert items[-4:] == ["text_exit", "ThoughtEvent", "Response", "RunFinished"]
    patched = AssistantAgent("a", ReplayChatCompletionClient(script))
    patched._process_model_result = partial(AssistantAgent._process_model_result, patched)  # type: ignore[method-assign]  # noqa: SLF001
    patched_items, patched_started = await generators_started(patched, "?")
    assert patched_started == ["_iterate", "_run_steps", "_process_model_result"]
    assert patched_items == items
    assert context_of(patched) == context_of(agent)


async def test_a_text_answer_cancelled_while_its_thought_is_held_does_not_enter_the_context() -> None:
    """The answer enters the context after its thought's event is taken (as the tool loop's text exit):
    the token fired while the consumer holds that event ends the run cancelled, the answer left out."""
    agent = AssistantAgent("a", ReplayChatCompletionClient([text("42", thought="thinking")]))
    run = agent.iter([TextMessage(content="?", source="user")])
    with pytest.raises(asyncio.CancelledError):
        async for item in run:
            if type(item).__name__ == "ThoughtEvent":
                run.token.cancel()
    assert run.status == "cancelled"
    assert [type(m).__name__ for m in agent.model_context.messages] == ["UserMessage"]


class Kinds:
    """A recorder keeping the kind of every item it is given."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def record(self, item: Any) -> None:
        self.seen.append(item.name if isinstance(item, Move) else type(item).__name__)


@pytest.mark.parametrize("stream", [False, True])
async def test_an_entry_points_run_yields_only_events_and_records_everything(stream: bool) -> None:
    """``run``, ``run_stream`` and ``on_messages`` take only a run's events, messages and Response: their run
    yields nothing else (no record, no streamed text), and the recorders get every item as ``iter`` has it."""
    script = [calls(("c1", "add", '{"a": 1, "b": 2}'), thought="hm"), "three"]  # a scripted text streams
    task = [TextMessage(content="1 + 2?", source="user")]
    full = AssistantAgent(
        "a", ReplayChatCompletionClient(script), tools=[add], model_client_stream=stream, max_tool_iterations=2
    )
    full_kinds = Kinds()
    full.recorders.append(full_kinds)
    every = [type(item).__name__ async for item in full.iter(task, chunk_events=False)]
    assert "RunStarted" in every and "LLMCall" in every and "RunFinished" in every
    assert ("str" in every) is stream
    for chunk_events in (False, True):
        agent = AssistantAgent(
            "a", ReplayChatCompletionClient(script), tools=[add], model_client_stream=stream, max_tool_iterations=2
        )
        recorded = Kinds()
        agent.recorders.append(recorded)
        run = agent._new_run(task, None, chunk_events)  # noqa: SLF001 (the run an entry point makes)
        items = [type(item).__name__ async for item in run]
        events = ["ThoughtEvent", "ToolCallRequestEvent", "ToolCallExecutionEvent", "Response"]
        chunks = ["ModelClientStreamingChunkEvent"] if stream and chunk_events else []
        assert [kind for kind in items if kind not in chunks] == events
        assert (chunks[0] in items) if chunks else True
        assert run.status == "ok" and run.response is not None
        assert recorded.seen == full_kinds.seen


async def test_run_drives_its_run_without_iterating_it() -> None:
    """``run`` takes its events from ``AgentRun.drive`` (no ``_iterate`` generator): the same result, and
    the recorders get every item; a subclass's ``iter`` is iterated as before."""
    script = [calls(("c1", "add", '{"a": 1, "b": 2}'), thought="hm"), text("three", thought="so")]
    agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[add], max_tool_iterations=2)
    recorded = Kinds()
    agent.recorders.append(recorded)
    with started_generators() as started:
        result = await agent.run(task="1 + 2?")
    assert started == ["_run_steps", "_process_model_result"]
    assert kinds(result.messages) == [
        "TextMessage", "ThoughtEvent", "ToolCallRequestEvent", "ToolCallExecutionEvent", "ThoughtEvent", "TextMessage",
    ]  # fmt: skip
    assert recorded.seen[0] == "RunStarted" and recorded.seen[-2:] == ["Response", "RunFinished"]
    assert "LLMCall" in recorded.seen and "ToolExecution" in recorded.seen

    class Wrapped:
        """Another run type a subclass's ``iter`` gives: iterated."""

        def __init__(self, run: Any) -> None:
            self.run = run
            self.status = "new"

        def __aiter__(self) -> Any:
            return self.run.__aiter__()

        async def aclose(self) -> None:
            await self.run.aclose()

    class Iterated(AssistantAgent):
        def iter(self, *args: Any, **kwargs: Any) -> Any:
            return Wrapped(super().iter(*args, **kwargs))

    other = Iterated("a", ReplayChatCompletionClient(script), tools=[add], max_tool_iterations=2)
    with started_generators() as started:
        again = await other.run(task="1 + 2?")
    assert started[0] == "_iterate"
    assert kinds(again.messages) == kinds(result.messages)


def waiting_tool_agent() -> tuple[AssistantAgent, asyncio.Event]:
    """An agent whose model asks for one call of a tool that waits for good, and the event the call sets."""
    started = asyncio.Event()

    async def slow(a: int) -> int:
        """Wait."""
        started.set()
        await asyncio.sleep(3600)
        return a

    return AssistantAgent("a", ReplayChatCompletionClient([calls(("c1", "slow", '{"a": 1}'))]), tools=[slow]), started


async def test_a_driven_run_closed_from_another_task_ends_cancelled_with_a_valid_context() -> None:
    """``aclose()`` from another task (a Stop button) while ``drive`` runs cancels the run where it waits
    and returns once it has ended; the tool call left gets its error result."""
    agent, started = waiting_tool_agent()
    run = agent.iter([TextMessage(content="go", source="user")])
    taken: list[str] = []
    driving = asyncio.ensure_future(run.drive(lambda item: taken.append(type(item).__name__)))
    await within(started.wait(), "the tool call to start")
    await within(run.aclose(), "aclose() to end the driven run")
    with pytest.raises(asyncio.CancelledError):
        await within(driving, "drive() to end")
    assert run.status == "cancelled" and not agent.is_running
    assert taken == ["ToolCallRequestEvent"]
    assert every_call_answered(agent)


def test_a_driven_run_whose_coroutine_is_closed_ends_cancelled_not_failed() -> None:
    """``run()``'s coroutine closed while its run waits (``close()``: what collecting a dropped loop's pending
    task does) ends the run cancelled, as an iterated run closed the same way: not an error, the agent
    free, the tool call answered."""
    agent, started = waiting_tool_agent()

    async def awaits_the_run() -> None:
        await agent.run(task="go")

    loop = asyncio.new_event_loop()
    try:
        coro = awaits_the_run()
        task = loop.create_task(coro)
        loop.run_until_complete(within(started.wait(), "the tool call to start"))
        coro.close()
        task.cancel()  # (its coroutine closed: the task ends at once, cancelled)
        loop.run_until_complete(asyncio.wait([task]))
        runs = agent.trace.runs_df()
        assert list(runs["status"]) == ["cancelled"] and runs["error"].isna().all()
        assert not agent.is_running and agent.failed_run is not None and agent.failed_run.status == "cancelled"
        assert every_call_answered(agent)
    finally:
        loop.close()
