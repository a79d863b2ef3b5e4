"""``agent.context_df()`` and context snapshots: each message with the run and STEP that added it."""

from __future__ import annotations

import pandas as pd
import pytest

from nbagent import (
    TRACE_COLUMNS,
    AssistantAgent,
    Image,
    ListMemory,
    MemoryContent,
    Move,
    ReplayChatCompletionClient,
    TextMessage,
    Trace,
    UserMessage,
)
from nbagent.context import estimate_tokens

from .helpers import calls, tool_agent


def nullable(series: pd.Series) -> list[object]:
    return [None if pd.isna(value) else value for value in series]


async def test_context_after_a_tool_run_names_run_and_step_of_each_message() -> None:
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "three", reflect_on_tool_use=True)
    await agent.run(task="add 1 and 2")
    df = agent.context_df()
    run_id = agent.trace.runs_df()["run_id"].iloc[0]
    assert list(df.columns) == list(TRACE_COLUMNS["context"])
    assert [str(t) for t in df.dtypes] == [d for d, _ in TRACE_COLUMNS["context"].values()]
    assert list(df["position"]) == [0, 1, 2, 3]
    assert list(df["kind"]) == ["user", "assistant", "tool_result", "assistant"]
    assert list(df["source"]) == ["user", "calc", "add", "calc"]
    assert list(df["text"]) == ["add 1 and 2", 'add({"a": 1, "b": 2})', "3", "three"]
    assert df["tool_calls"].iloc[1] == [{"id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'}]
    assert nullable(df["tool_calls"]) == [None, df["tool_calls"].iloc[1], None, None]
    assert list(df["tokens"]) == [estimate_tokens(m) for m in agent.model_context.messages]
    assert set(df["run_id"]) == {run_id}
    assert list(df["step"]) == [1, 5, 5, 5]
    assert list(df["move"]) == ["add_messages", "tool_request", "tool_execution", "reflect"]


async def test_second_run_messages_carry_the_second_run_and_loaded_ones_none() -> None:
    agent = tool_agent("calc", "first", "second")
    await agent.load_state(
        {"llm_context": {"messages": [{"type": "UserMessage", "content": "earlier", "source": "user"}]}}
    )
    await agent.run(task="one")
    await agent.run(task="two")
    df = agent.context_df()
    runs = list(agent.trace.runs_df()["run_id"])
    assert list(df["text"]) == ["earlier", "one", "first", "two", "second"]
    assert nullable(df["run_id"]) == [None, runs[0], runs[0], runs[1], runs[1]]
    assert nullable(df["step"]) == [None, 1, 5, 1, 5]
    assert nullable(df["move"]) == [None, "add_messages", "text_exit", "add_messages", "text_exit"]


async def test_memory_hit_is_a_system_row_added_by_step_2() -> None:
    memory = ListMemory()
    await memory.add(MemoryContent(content="The user likes tea", mime_type="text/plain"))
    agent = AssistantAgent("barista", ReplayChatCompletionClient(["Tea it is"]), memory=[memory])
    await agent.run(task="drink?")
    df = agent.context_df()
    assert list(df["kind"]) == ["user", "system", "assistant"]
    assert list(df["step"]) == [1, 2, 5]
    assert list(df["move"]) == ["add_messages", "memory", "text_exit"]
    assert "The user likes tea" in df["text"].iloc[1]


async def test_context_while_paused_at_a_move() -> None:
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 2, "b": 2}')), "four")
    seen: dict[str, list[str]] = {}
    run = agent.iter([TextMessage(content="2+2", source="user")])
    async for item in run:
        if isinstance(item, Move):
            seen[item.name] = [
                f"{kind}@{step}" for kind, step in zip(agent.context_df()["kind"], nullable(agent.context_df()["step"]))
            ]
    assert seen == {
        "add_messages": [],
        "message_id": ["user@1"],
        "call_llm": ["user@1"],
        "tool_request": ["user@1"],
        "tool_execution": ["user@1", "assistant@5"],
        "summarize": ["user@1", "assistant@5", "tool_result@5"],
    }


async def test_trace_snapshots_at_any_point_of_a_run() -> None:
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "three", "again", reflect_on_tool_use=True)
    await agent.run(task="first")
    await agent.run(task="second")
    trace = agent.trace
    events = trace.events_df()
    first, second = list(trace.runs_df()["run_id"])
    run1 = events[events["run_id"] == first]
    at_execution = int(run1[(run1["kind"] == "Move") & (run1["move"] == "tool_execution")]["seq"].iloc[0])
    assert list(trace.context_df(first, at_execution)["kind"]) == ["user", "assistant"]
    assert len(trace.context_df(first, 0)) == 0
    assert list(trace.context_df(first)["kind"]) == ["user", "assistant", "tool_result", "assistant"]
    assert list(trace.context_df(second, 0)["text"]) == ["first", 'add({"a": 1, "b": 2})', "3", "three"]
    assert list(trace.context_df()["text"])[-2:] == ["second", "again"]
    assert list(trace.context_df(second)["move"])[-2:] == ["add_messages", "text_exit"]
    with pytest.raises(KeyError):
        trace.context_df("no-such-run")
    with pytest.raises(IndexError):
        trace.context_df(first, 10_000)


async def test_agent_without_recorder_and_trace_without_agent() -> None:
    agent = AssistantAgent("plain", ReplayChatCompletionClient(["ok"]))
    agent.recorders = []
    await agent.run(task="hello")
    df = agent.context_df()
    assert list(df["text"]) == ["hello", "ok"]
    assert nullable(df["run_id"]) == [None, None] and nullable(df["step"]) == [None, None]
    trace = Trace()
    trace.record(Move("r", "add_messages"))
    with pytest.raises(LookupError):
        trace.context_df()


async def test_user_message_with_an_image_is_one_text_row() -> None:
    agent = AssistantAgent("viewer", ReplayChatCompletionClient(["seen"]))
    await agent.model_context.add_message(UserMessage(content=["look", Image.from_bytes(b"png")], source="user"))
    df = agent.context_df()
    assert (list(df["kind"]), list(df["text"])) == (["user"], ["look\n[image image/png]"])


async def test_request_df_shows_what_each_llm_call_sent() -> None:
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "three", reflect_on_tool_use=True)
    await agent.run(task="add 1 and 2")
    run_id = str(agent.trace.runs_df()["run_id"].iloc[0])
    first = agent.trace.request_df(run_id, 0)
    assert list(first["kind"]) == ["system", "user"]
    assert nullable(first["move"]) == [None, "add_messages"]
    second = agent.trace.request_df(run_id, 1)
    assert list(second["kind"]) == ["system", "user", "assistant", "tool_result"]
    assert nullable(second["step"]) == [None, 1, 5, 5]
    assert list(agent.trace.llm_calls_df()["n_messages"]) == [2, 4]
    with pytest.raises(IndexError):
        agent.trace.request_df(run_id, 2)


async def test_context_at_every_item_is_the_context_when_it_was_recorded() -> None:
    """At an event (MemoryQueryEvent, tool events, Response) the context already holds what its move added."""
    memory = ListMemory()
    await memory.add(MemoryContent(content="likes tea", mime_type="text/plain"))
    agent = tool_agent(
        "calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "three", reflect_on_tool_use=True, memory=[memory]
    )
    live: list[tuple[str, list[str]]] = []
    async for item in agent.iter([TextMessage(content="add", source="user")]):
        live.append((type(item).__name__, [type(m).__name__ for m in agent.model_context.messages]))
    run_id = str(agent.trace.runs_df()["run_id"].iloc[0])
    names = {"user": "UserMessage", "system": "SystemMessage", "assistant": "AssistantMessage",
             "tool_result": "FunctionExecutionResultMessage"}  # fmt: skip
    seen = [
        (kind, [names[k] for k in agent.trace.context_df(run_id, seq)["kind"]]) for seq, (kind, _) in enumerate(live)
    ]
    assert seen == live
    assert [kind for kind, _ in live] == [
        "RunStarted", "Move", "Move", "MemoryQueryEvent", "Move", "Move", "LLMCall", "Move", "ToolCallRequestEvent",
        "Move", "ToolExecution", "ToolCallExecutionEvent", "Move", "LLMCall", "Response", "RunFinished",
    ]  # fmt: skip
    assert list(agent.trace.context_df(run_id, 14)["move"]) == [
        "add_messages",
        "memory",
        "tool_request",
        "tool_execution",
        "reflect",
    ]


async def test_request_df_of_a_shared_trace_keeps_origins_after_the_agent_is_detached() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["x"]))
    shared = Trace()
    with shared.recording(agent):
        await agent.run(task="hi")
    run_id = str(shared.runs_df()["run_id"].iloc[0])
    request = shared.request_df(run_id)
    assert list(request["kind"]) == ["system", "user"]
    assert nullable(request["move"]) == [None, "add_messages"]
    assert nullable(request["run_id"]) == [None, run_id]
