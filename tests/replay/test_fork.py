"""``Stepper.fork()`` and the interventions: a second walk at the same move, changed through the loop's seam.

A fork with no change makes its parent's run again (equal frames, ids and times aside), at every move
of every contract scenario, and leaves its parent untouched. Each kind of change is tested for what
the model and tools then get, and for its record; bad changes raise errors naming the parameter; a
property test makes random changes at random moves and checks the context stays valid.
"""

from __future__ import annotations

import asyncio
import time
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from nbagent import (
    AssistantAgent,
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResultMessage,
    FunctionTool,
    Intervention,
    ReplayChatCompletionClient,
    Stepper,
    StepperFinished,
    SystemMessage,
    ToolResult,
    UserMessage,
    Workbench,
    load_parquet,
)
from nbagent import stepper as stepper_module
from nbagent.interventions import TIMEOUT_RESULT
from nbagent.models.base import ModelError
from nbagent.tools import ToolSchema
from nbagent.trace.otlp import span_hex, trace_hex

from ..stepper.scenarios import SCENARIOS, Scenario, add, calls, mul
from .helpers import assert_same_run, run_frames

pytestmark = pytest.mark.filterwarnings("ignore:Multiple handoffs detected")
TASK = "What is 2 + 3?"


def context_is_valid(messages: list[Any], *, open_calls: bool = False) -> bool:
    """Every tool call has its results right after it, and every result follows its calls (but, with
    ``open_calls``, the last calls, whose results the next move gives)."""
    pending: list[str] | None = None
    for message in messages:
        if pending is not None:
            if not isinstance(message, FunctionExecutionResultMessage):
                return False
            if sorted(r.call_id for r in message.content) != sorted(pending):
                return False
            pending = None
        elif isinstance(message, FunctionExecutionResultMessage):
            return False
        if isinstance(message, AssistantMessage) and not isinstance(message.content, str):
            pending = [call.id for call in message.content]
    return pending is None or open_calls


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.name)
async def test_a_fork_at_any_move_without_changes_makes_the_same_run(scenario: Scenario) -> None:
    plain = scenario.agent()
    await Stepper(plain, TASK).run_to_end()
    expected = run_frames(plain.trace)  # made once, compared with every walk
    for moves in range(1, len(scenario.moves)):
        parent = Stepper(scenario.agent(), TASK)
        for _ in range(moves):
            await parent.next()
        fork = await parent.fork()
        assert fork.parent is parent and fork.agent is not parent.agent
        assert fork.status == "paused" and fork.upcoming is not None and parent.upcoming is not None
        assert fork.upcoming.name == parent.upcoming.name
        assert [r.name for r in fork.history] == [r.name for r in parent.history]
        assert fork.agent.model_context.messages == parent.agent.model_context.messages
        await fork.run_to_end()
        await parent.run_to_end()
        forked, unforked = run_frames(fork.agent.trace), run_frames(parent.agent.trace)
        for walk in (forked, unforked):  # the fork makes the run again; its parent is as if never forked
            assert_same_run(expected, walk, forks=False)
        assert forked["runs"]["forked_from"].tolist() == [parent.agent.trace.last_run()]
        assert forked["runs"]["fork_move"].tolist() == [moves]
        assert unforked["runs"]["forked_from"].isna().all()


def tool_agent(script: list[Any], **options: Any) -> AssistantAgent:
    return AssistantAgent("assistant", ReplayChatCompletionClient(script), tools=[add, mul], **options)


async def paused_at(agent: AssistantAgent, move: str, iteration: int | None = None) -> Stepper:
    stepper = Stepper(agent, TASK)
    while (
        stepper.upcoming is None
        or stepper.upcoming.name != move
        or (iteration is not None and stepper.upcoming.iteration != iteration)
    ):
        await stepper.next()
    return stepper


def interventions(stepper: Stepper) -> list[Intervention]:
    return [item for result in stepper.history for item in result.items if isinstance(item, Intervention)]


ADD_2_3 = ("c1", "add", '{"a": 2, "b": 3}')


async def test_edit_the_system_message_context_tools_and_tool_choice() -> None:
    parent = await paused_at(tool_agent([calls(ADD_2_3), "5"], reflect_on_tool_use=True), "call_llm")
    fork = await parent.fork()
    new_context = [UserMessage(content="What is 4 * 5?", source="user")]
    fork.edit_request(system_message="Be brief.", messages=new_context, tools=["mul"], tool_choice="required")
    step = await fork.next()
    request = step.request
    assert request is not None
    assert request.messages[0] == SystemMessage(content="Be brief.")
    assert [m.content for m in request.messages[1:]] == ["What is 4 * 5?"]
    assert [t["name"] for t in request.tools] == ["mul"] and request.tool_choice == "required"
    [record] = interventions(fork)
    assert record.kind == "request" and record.move == step.index
    assert "system message 'Be brief.'" in record.change and "tools offered: mul" in record.change
    await fork.run_to_end()
    reflection = fork.history[-1].request
    assert reflection is not None and reflection.messages[0].content == "Be brief."  # the system message holds
    await parent.run_to_end()  # the parent kept its own request
    request = parent.history[2].request
    assert request is not None and request.messages[0].content != "Be brief."
    events = fork.agent.trace.events_df()
    assert events.loc[events["kind"] == "Intervention", "text"].str.contains("system message").all()


async def test_replace_the_model_client() -> None:
    parent = await paused_at(tool_agent(["from the replay"]), "call_llm")
    fork = await parent.fork()
    other = ReplayChatCompletionClient(["from another model"])
    fork.edit_request(model_client=other)
    await fork.run_to_end()
    assert fork.response is not None and fork.response.chat_message.to_text() == "from another model"
    assert len(other.requests) == 1
    await parent.run_to_end()
    assert parent.response is not None and parent.response.chat_message.to_text() == "from the replay"


@pytest.mark.parametrize("stream", [False, True])
async def test_give_the_answer_text(stream: bool) -> None:
    parent = await paused_at(tool_agent([calls(ADD_2_3)], model_client_stream=stream), "call_llm")
    fork = await parent.fork()
    fork.give_answer("I will not use tools.")
    await fork.run_to_end()
    assert fork.response is not None and fork.response.chat_message.to_text() == "I will not use tools."
    assert [r.name for r in fork.history][-1] == "text_exit"
    [record] = interventions(fork)
    assert (record.kind, record.change) == ("answer", "text 'I will not use tools.'")
    client = fork.agent.model_client
    assert isinstance(client, ReplayChatCompletionClient) and client.remaining == 1  # the model was not called
    if stream:
        events = fork.agent.trace.events_df()
        assert (events["kind"] == "ModelClientStreamingChunkEvent").sum() == 1


async def test_give_the_answer_tool_calls_then_their_results() -> None:
    parent = await paused_at(tool_agent(["no tools"]), "call_llm")
    fork = await parent.fork()
    fork.give_answer(
        [
            FunctionCall(id="x1", name="mul", arguments='{"a": 3, "b": 4}'),
            FunctionCall(id="x2", name="add", arguments='{"a": 1, "b": 1}'),
        ]
    )
    await fork.next()  # call_llm
    await fork.next()  # tool_request
    fork.give_tool_result("x2", "41")
    await fork.run_to_end()
    assert fork.response is not None and fork.response.chat_message.to_text() == "12\n41"
    assert context_is_valid(fork.agent.model_context.messages)
    assert [r.kind for r in interventions(fork)] == ["answer", "tool_result"]


async def test_give_the_answer_error() -> None:
    agent = tool_agent([calls(ADD_2_3), "5"], max_tool_iterations=2)
    parent = await paused_at(agent, "next_llm_call")
    fork = await parent.fork()
    fork.give_answer(ModelError("rate limited", status=429))
    last = (await fork.run_to_end())[-1]
    assert fork.status == "error" and isinstance(last.error, ModelError)
    assert context_is_valid(fork.agent.model_context.messages)
    assert fork.agent.trace.runs_df()["error"].iloc[0] == "ModelError: rate limited"
    await parent.run_to_end()
    assert parent.status == "finished"


@pytest.mark.parametrize(
    ("how", "content", "is_error"),
    [
        ({"content": "6"}, "6", False),
        ({"error": "Error: disk full"}, "Error: disk full", True),
        ({"timeout": True}, TIMEOUT_RESULT, True),
    ],
)
async def test_give_a_tool_result(how: dict[str, Any], content: str, is_error: bool) -> None:
    called: list[int] = []

    def counted(a: int, b: int) -> int:
        """Add."""
        called.append(1)
        return a + b

    client = ReplayChatCompletionClient([calls(("c1", "counted", '{"a": 2, "b": 3}'))])
    parent = await paused_at(AssistantAgent("assistant", client, tools=[counted]), "tool_execution")
    fork = await parent.fork()
    fork.give_tool_result("c1", **how)
    await fork.run_to_end()
    [result] = fork.history[-2].tool_results
    assert (result.content, result.is_error) == (content, is_error)
    assert called == []  # the tool was not called
    assert context_is_valid(fork.agent.model_context.messages)
    [record] = interventions(fork)
    assert record.kind == "tool_result" and repr(content) in record.change
    await parent.run_to_end()
    assert called == [1] and parent.history[-2].tool_results[0].content == "5"


async def test_a_fork_of_a_fork_keeps_the_changes_made_before_it() -> None:
    script = [calls(ADD_2_3), calls(("c2", "add", '{"a": 5, "b": 1}')), "6"]
    parent = await paused_at(tool_agent(script, max_tool_iterations=3), "tool_execution")
    first = await parent.fork()
    first.give_tool_result("c1", "50")
    await first.run_until(move="tool_request", iteration=1)  # paused before the second tool_execution
    second = await first.fork()
    assert second.agent.model_context.messages == first.agent.model_context.messages
    assert [r.kind for r in interventions(second)] == ["tool_result"]
    await second.run_to_end()
    await first.run_to_end()
    assert_same_run(first.agent.trace, second.agent.trace, forks=False)


async def test_fork_a_replay_and_ask_another_model() -> None:
    agent = tool_agent([calls(ADD_2_3), "5"], reflect_on_tool_use=True)
    await agent.run(task=TASK)
    replayed = Stepper(agent.trace.replay())
    await replayed.run_until(move="tool_request")  # paused before tool_execution
    fork = await replayed.fork()
    fork.give_tool_result("c1", error="Error: the service is down")
    await fork.next()
    fork.edit_request(model_client=ReplayChatCompletionClient(["The tool failed; I cannot tell."]))
    await fork.run_to_end()
    await replayed.run_to_end()
    assert fork.response is not None and fork.response.chat_message.to_text() == "The tool failed; I cannot tell."
    assert replayed.response is not None and replayed.response.chat_message.to_text() == "5"


async def test_a_tool_less_agent_is_offered_a_tool_by_schema_never_by_an_unknown_name() -> None:
    """The case Hypothesis found (plain text run, fork at move 1, a tools change): naming a tool the
    agent lacks is refused and changes nothing; its schema offers it, and the context stays valid."""
    parent = Stepper(SCENARIO["plain_text"].agent(), TASK)
    await parent.next()  # paused before message_id (move 2)
    fork = await parent.fork()
    await fork.next()  # paused before call_llm
    with pytest.raises(ValueError, match=r"tools\[0\] must be the name of a tool of the agent \(\[\]\), got 'add'"):
        fork.edit_request(tools=["add"])
    with pytest.raises(ValueError, match="tool_choice"):
        fork.edit_request(tool_choice="add")
    fork.edit_request(tools=[ADD_SCHEMA], tool_choice="add")
    step = await fork.next()
    assert step.request is not None and step.request.tools == [ADD_SCHEMA] and step.request.tool_choice == "add"
    assert [(r.kind, r.change) for r in interventions(fork)] == [("request", "tools offered: add; tool_choice 'add'")]
    await fork.run_to_end()
    assert fork.status == "finished" and context_is_valid(fork.agent.model_context.messages)
    await parent.run_to_end()
    assert parent.response is not None and parent.response.chat_message.to_text() == "Hello there."
    assert interventions(parent) == []


async def test_a_walk_on_a_replay_names_the_tools_its_recording_offers() -> None:
    """A replay's tools come from its recorded workbench (listed, not static): a walk and its fork
    paused before a model call take their names for ``tools`` and ``tool_choice``."""
    agent = tool_agent([calls(ADD_2_3), "5"], reflect_on_tool_use=True)
    await agent.run(task=TASK)
    replayed = Stepper(agent.trace.replay())
    await replayed.run_until(move="message_id")  # paused before call_llm
    fork = await replayed.fork()
    for walk in (replayed, fork):
        with pytest.raises(
            ValueError, match=r"tools\[0\] must be the name of a tool of the agent \(\['add', 'mul'\]\), got 'divide'"
        ):
            walk.edit_request(tools=["divide"])
    fork.edit_request(tools=["mul"], tool_choice="mul")
    step = await fork.next()
    assert step.request is not None and [t["name"] for t in step.request.tools] == ["mul"]
    assert step.request.tool_choice == "mul"
    await fork.run_to_end()
    await replayed.run_to_end()
    assert fork.status == "finished" and context_is_valid(fork.agent.model_context.messages)
    assert replayed.response is not None and replayed.response.chat_message.to_text() == "5"


class ListedWorkbench(Workbench):
    """Tools listed on each call, as an MCP server's (not a static workbench); the listing may hang."""

    def __init__(self, *, hang: bool = False) -> None:
        self.hang = hang

    async def list_tools(self) -> list[ToolSchema]:
        if self.hang:
            await asyncio.Event().wait()
        return [FunctionTool(add).schema, FunctionTool(mul).schema]

    async def call_tool(
        self, name: str, arguments: Mapping[str, Any] | None = None, *args: Any, **kwargs: Any
    ) -> ToolResult:
        return ToolResult(name, str({"add": add, "mul": mul}[name](**(arguments or {}))))


async def test_a_walk_names_a_listed_workbench_s_tools_and_a_hanging_listing_is_bounded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    client = ReplayChatCompletionClient([calls(("c1", "mul", '{"a": 2, "b": 3}'))])
    walk = await paused_at(AssistantAgent("assistant", client, workbench=ListedWorkbench()), "call_llm")
    assert walk.agent.tools == []  # only static workbenches' tools are known without listing
    walk.edit_request(tools=["mul"], tool_choice="mul")
    await walk.run_to_end()
    assert walk.status == "finished" and walk.response is not None
    assert walk.response.chat_message.to_text() == "6"

    monkeypatch.setattr(stepper_module, "LIST_TOOLS_TIMEOUT_S", 0.2)
    hanging = Stepper(
        AssistantAgent("assistant", ReplayChatCompletionClient(["6"]), workbench=ListedWorkbench(hang=True))
    )
    await hanging.next()
    started = time.monotonic()
    await hanging.next()  # paused before call_llm: the listing gives up after LIST_TOOLS_TIMEOUT_S
    assert time.monotonic() - started < 60 and hanging.upcoming is not None  # a hang guard: it hung for ever
    assert hanging.upcoming.name == "call_llm"
    with pytest.raises(ValueError, match=r"tools\[0\] must be the name of a tool of the agent \(\[\]\)"):
        hanging.edit_request(tools=["mul"])
    await hanging.aclose()
    assert hanging.status == "cancelled"


async def test_cancelling_a_forked_walk_leaves_both_walks_valid() -> None:
    client = ReplayChatCompletionClient([calls(ADD_2_3), "5"], latency=0.5)
    agent = AssistantAgent("assistant", client, tools=[add], reflect_on_tool_use=True)
    parent = await paused_at(agent, "tool_execution")
    fork = await parent.fork()
    await fork.next()  # the tool
    task = asyncio.ensure_future(fork.next())  # the reflection waits for the slow model
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert fork.status == "cancelled" and context_is_valid(fork.agent.model_context.messages)
    assert fork.agent.trace.runs_df()["status"].tolist() == ["cancelled"]
    await parent.run_to_end()
    assert parent.status == "finished" and parent.response is not None


async def test_stop_a_forked_walk_with_aclose() -> None:
    parent = await paused_at(tool_agent([calls(ADD_2_3)]), "tool_execution")
    fork = await parent.fork()
    await fork.aclose()
    assert fork.status == "cancelled" and context_is_valid(fork.agent.model_context.messages)
    await parent.run_to_end()
    assert parent.status == "finished"


async def test_bad_changes_raise_errors_naming_the_parameter() -> None:
    client = ReplayChatCompletionClient([calls(ADD_2_3), "5"], latency=0.2)  # the reflection takes a while
    parent = await paused_at(
        AssistantAgent("assistant", client, tools=[add, mul], reflect_on_tool_use=True), "call_llm"
    )
    with pytest.raises(TypeError, match=r"give_answer.*answer"):
        parent.give_answer(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"answer\[0\]"):
        parent.give_answer(["add(2, 3)"])  # type: ignore[list-item]
    with pytest.raises(RuntimeError, match="next move is 'call_llm'"):
        parent.give_tool_result("c1", "5")
    with pytest.raises(ValueError, match=r"messages\[1\]"):
        parent.edit_request(
            messages=[UserMessage(content="hi", source="user"), FunctionExecutionResultMessage(content=[])]
        )
    with pytest.raises(ValueError, match=r"messages\[2\]"):
        parent.edit_request(
            messages=[
                UserMessage(content="hi", source="user"),
                AssistantMessage(content=[FunctionCall(id="z", name="add", arguments="{}")], source="assistant"),
                UserMessage(content="no result", source="user"),
            ]
        )
    with pytest.raises(ValueError, match=r"tools\[0\]"):
        parent.edit_request(tools=["divide"])
    with pytest.raises(ValueError, match="tool_choice"):
        parent.edit_request(tool_choice="divide")
    with pytest.raises(TypeError, match="model_client"):
        parent.edit_request(model_client="gpt-4o")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="nothing to change"):
        parent.edit_request()
    await parent.next()
    await parent.next()  # paused before tool_execution
    with pytest.raises(ValueError, match=r"call_id.*\['c1'\]"):
        parent.give_tool_result("c9", "5")
    with pytest.raises(ValueError, match="exactly one of"):
        parent.give_tool_result("c1", "5", timeout=True)
    await parent.next()  # paused before reflect
    with pytest.raises(ValueError, match="answer"):
        parent.give_answer([FunctionCall(id="x", name="add", arguments="{}")])
    with pytest.raises(ValueError, match="tools"):
        parent.edit_request(tools=["add"])
    moving = asyncio.ensure_future(parent.next())
    await asyncio.sleep(0.05)
    with pytest.raises(RuntimeError, match="a move is being made"):
        await parent.fork()
    await moving
    with pytest.raises(StepperFinished, match="the walk is over"):
        await parent.fork()
    with pytest.raises(RuntimeError, match="finished"):
        parent.give_answer("late")


async def test_the_fork_columns_survive_parquet_and_otlp_links_the_fork(tmp_path: Path) -> None:
    parent = await paused_at(tool_agent([calls(ADD_2_3)]), "tool_execution")
    fork = await parent.fork()
    fork.give_tool_result("c1", "6")
    await fork.run_to_end()
    loaded = load_parquet(fork.agent.trace.to_parquet(tmp_path))
    runs = loaded.runs_df()
    parent_run = parent.agent.trace.last_run()
    assert runs["forked_from"].tolist() == [parent_run] and runs["fork_move"].tolist() == [4]
    events = loaded.events_df()
    texts = events.loc[events["kind"] == "Intervention", "text"].tolist()
    assert texts == ["tool_result before move 5: c1 (add): content '6'"]
    document = loaded.to_otlp_json()
    spans = [span for scope in document["resourceSpans"][0]["scopeSpans"] for span in scope["spans"]]
    [run_span] = [span for span in spans if span["name"].startswith("invoke_agent")]
    [link] = run_span["links"]
    assert (link["traceId"], link["spanId"]) == (trace_hex(parent_run), span_hex("run", parent_run))
    attributes = {a["key"]: a["value"] for a in link["attributes"]}
    assert attributes["nbagent.link"] == {"stringValue": "fork"}


# ---------------------------------------------------------------------- the property test

EDITS = st.sampled_from(
    ["none", "system", "drop_context", "keep_context", "tools", "choice", "text", "calls", "error"]
    + ["result", "tool_error", "timeout"]
)


ADD_SCHEMA = FunctionTool(add).schema
SCENARIO = {scenario.name: scenario for scenario in SCENARIOS}


def apply(stepper: Stepper, edit: str, index: int) -> None:
    """Make change ``edit`` if it applies before the upcoming move (else nothing)."""
    move = stepper.upcoming.name if stepper.upcoming else None
    if move in ("call_llm", "next_llm_call", "reflect"):
        tools = move != "reflect"
        if edit == "system":
            stepper.edit_request(system_message=f"system {index}")
        elif edit == "drop_context":
            stepper.edit_request(messages=[UserMessage(content=f"fresh {index}", source="user")])
        elif edit == "keep_context":
            stepper.edit_request(messages=list(stepper.agent.model_context.messages))
        elif edit == "tools" and tools:  # by name where the agent has the tool, else by its schema
            offered = [schema["name"] for schema in stepper.agent.tools]
            stepper.edit_request(tools=["add"] if "add" in offered else [ADD_SCHEMA])
        elif edit == "choice" and tools:
            stepper.edit_request(tool_choice="required")
        elif edit == "text":
            stepper.give_answer(f"given {index}")
        elif edit == "calls" and tools:
            stepper.give_answer([FunctionCall(id=f"g{index}", name="mul", arguments='{"a": 2, "b": 2}')])
        elif edit == "error":
            stepper.give_answer(RuntimeError(f"boom {index}"))
    elif move == "tool_execution" and stepper.current is not None:
        ids = [call.id for call in stepper.current.tool_calls]
        if ids and edit == "result":
            stepper.give_tool_result(ids[index % len(ids)], f"result {index}")
        elif ids and edit == "tool_error":
            stepper.give_tool_result(ids[index % len(ids)], error=f"Error {index}")
        elif ids and edit == "timeout":
            stepper.give_tool_result(ids[index % len(ids)], timeout=True)


@settings(max_examples=60, deadline=None)
@example(scenario=SCENARIO["plain_text"], fork_at=1, edits=["tools"])  # a tool-less agent gets tools by schema
@example(scenario=SCENARIO["two_handoffs"], fork_at=2, edits=["tools"])  # handoffs only: add by schema
@given(
    scenario=st.sampled_from(SCENARIOS),
    fork_at=st.integers(min_value=1, max_value=8),
    edits=st.lists(EDITS, min_size=1, max_size=12),
)
def test_random_changes_at_random_moves_keep_the_context_valid(
    scenario: Scenario, fork_at: int, edits: list[str]
) -> None:
    async def walk() -> None:
        parent = Stepper(scenario.agent(), TASK)
        for _ in range(min(fork_at, len(scenario.moves) - 1)):
            await parent.next()
        fork = await parent.fork()
        for index, edit in enumerate(edits * 3):
            if fork.done:
                break
            apply(fork, edit, index)
            await fork.next()
            running_tools = fork.upcoming is not None and fork.upcoming.name == "tool_execution"
            assert context_is_valid(fork.agent.model_context.messages, open_calls=running_tools)
        await fork.aclose()
        assert context_is_valid(fork.agent.model_context.messages)
        await parent.run_to_end()
        assert parent.status == "finished" and context_is_valid(parent.agent.model_context.messages)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        asyncio.run(walk())
