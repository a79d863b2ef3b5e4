"""What the trace records: every item of every run, with run, sequence, STEP and iteration."""

from __future__ import annotations

import ast
import asyncio
import gc
import weakref
from collections import Counter
from pathlib import Path
from typing import Any

import pandas as pd

from nbagent import (
    TRACE_COLUMNS,
    AssistantAgent,
    AssistantMessage,
    CancellationToken,
    CreateResult,
    FunctionTool,
    Move,
    ReplayChatCompletionClient,
    Response,
    TextMessage,
    ToolCallRequestEvent,
    ToolExecution,
    Trace,
    UnboundedChatCompletionContext,
    UserMessage,
)
from nbagent.records import Recorder, RunFinished, RunStarted
from nbagent.trace.rows import kind_of, split

from .helpers import add, calls, sources_taking_freed_ids, tool_agent

CHUNK = "ModelClientStreamingChunkEvent"


async def test_one_streamed_tool_run_rows_in_order() -> None:
    agent = tool_agent(
        "calc",
        calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "add", '{"a": 3, "b": 4}')),
        "It is 3 and 7",
        reflect_on_tool_use=True,
        model_client_stream=True,
    )
    await agent.run(task="add please")
    df = agent.trace.events_df()
    assert list(df["kind"]) == [
        "RunStarted", "Move", "Move", "Move", "LLMCall", "Move", "ToolCallRequestEvent", "Move",
        "ToolExecution", "ToolExecution", "ToolCallExecutionEvent", "Move", "LLMCall",
        CHUNK, CHUNK, CHUNK, CHUNK, CHUNK, "Response", "RunFinished",
    ]  # fmt: skip
    assert list(df["seq"]) == list(range(20))
    assert list(df["step"].astype("object").where(df["step"].notna(), None)) == [
        None,
        1,
        3,
        4,
        4,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
        5,
    ]
    assert list(df["move"].astype("object").where(df["move"].notna(), None)) == [
        None, "add_messages", "message_id", "call_llm", "call_llm", "tool_request", "tool_request",
        "tool_execution", "tool_execution", "tool_execution", "tool_execution", "reflect", "reflect",
        "reflect", "reflect", "reflect", "reflect", "reflect", "reflect", "reflect",
    ]  # fmt: skip
    # The reflection follows the last iteration (0 here): its move and its LLM call say the same.
    assert list(df["iteration"].astype("object").where(df["iteration"].notna(), None)) == [
        None,
        None,
        None,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
    ]
    assert list(agent.trace.llm_calls_df()["iteration"]) == [0, 0]
    assert df["run_id"].nunique() == 1 and set(df["agent"]) == {"calc"}
    chunks = df[df["kind"] == CHUNK]
    response = df[df["kind"] == "Response"].iloc[0]
    assert list(chunks["text"]) == ["It ", "is ", "3 ", "and ", "7"]
    assert set(chunks["message_id"]) == {response["message_id"]}
    assert chunks["event_id"].nunique() == 5
    assert df["elapsed_s"].iloc[0] == 0.0 and df["elapsed_s"].is_monotonic_increasing
    assert df["timestamp"].is_monotonic_increasing
    assert str(df["timestamp"].dtype) == "datetime64[ns, UTC]"
    assert response["text"] == "It is 3 and 7"
    assert df.iloc[-1]["text"] == "ok"


async def test_dtypes_follow_columns_for_every_table_and_the_empty_trace() -> None:
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "done")
    await agent.run(task="go")
    for trace in (agent.trace, Trace()):
        frames = {
            "events": trace.events_df(),
            "llm_calls": trace.llm_calls_df(),
            "tool_calls": trace.tool_calls_df(),
            "runs": trace.runs_df(),
        }
        for table, df in frames.items():
            assert list(df.columns) == list(TRACE_COLUMNS[table])
            assert [str(t) for t in df.dtypes] == [d for d, _ in TRACE_COLUMNS[table].values()], table
    empty = Trace()
    assert len(empty.events_df()) == 0 and len(empty.runs_df()) == 0 and len(empty) == 0


async def test_include_chunks_false_leaves_only_chunks_out() -> None:
    agent = tool_agent("calc", "one two three", model_client_stream=True)
    await agent.run(task="count")
    full, lean = agent.trace.events_df(), agent.trace.events_df(include_chunks=False)
    assert (full["kind"] == "ModelClientStreamingChunkEvent").sum() == 3
    assert list(lean["kind"]) == ["RunStarted", "Move", "Move", "Move", "LLMCall", "Move", "Response", "RunFinished"]
    assert list(lean["seq"]) == [0, 1, 2, 3, 4, 8, 9, 10]


async def test_multi_run_trace_restarts_seq_and_counts_runs() -> None:
    agent = tool_agent("calc", "first", calls(("c1", "add", '{"a": 2, "b": 2}')), "third")
    for task in ("a", "b", "c"):
        await agent.run(task=task)
    runs = agent.trace.runs_df()
    assert list(runs["task"]) == ["a", "b", "c"]
    assert list(runs["status"]) == ["ok", "ok", "ok"]
    assert list(runs["final_type"]) == ["TextMessage", "ToolCallSummaryMessage", "TextMessage"]
    assert list(runs["final_text"]) == ["first", "4", "third"]
    assert list(runs["n_llm_calls"]) == [1, 1, 1]
    assert list(runs["n_tool_calls"]) == [0, 1, 0]
    events = agent.trace.events_df()
    assert list(events.groupby("run_id", observed=True, sort=False)["seq"].min()) == [0, 0, 0]
    assert list(events[events["kind"] == "RunStarted"]["text"]) == ["a", "b", "c"]


async def test_run_that_fails_says_so() -> None:
    agent = tool_agent("calc", "only answer")
    await agent.run(task="one")
    try:
        await agent.run(task="two")
    except Exception as error:
        failure = f"{type(error).__name__}: {error}"
    else:
        raise AssertionError("the second run should fail: the script is used up")
    runs = agent.trace.runs_df()
    assert list(runs["status"]) == ["ok", "error"]
    assert runs["error"].iloc[1] == failure
    assert pd.isna(runs["final_type"].iloc[1])
    llm = agent.trace.llm_calls_df()
    assert list(llm["status"]) == ["ok", "error"]
    assert llm["error"].iloc[1] == failure
    assert pd.isna(llm["prompt_tokens"].iloc[1]) and pd.isna(llm["finish_reason"].iloc[1])
    events = agent.trace.events_df()
    last = events.iloc[-1]
    assert (last["kind"], last["text"], last["step"], last["move"]) == (
        "RunFinished",
        f"error: {failure}",
        4,
        "call_llm",
    )


async def test_cancelled_run_says_so_and_its_tool_rows_hold_the_cancel_result() -> None:
    started = asyncio.Event()

    async def slow(seconds: float) -> str:
        """Sleeps."""
        started.set()
        await asyncio.sleep(seconds)
        return "woke"

    from nbagent import AssistantAgent, ReplayChatCompletionClient

    agent = AssistantAgent(
        "sleeper", ReplayChatCompletionClient([calls(("s1", "slow", '{"seconds": 30}'))]), tools=[slow]
    )
    token = CancellationToken()
    task = asyncio.ensure_future(agent.run(task="sleep", cancellation_token=token))
    await started.wait()
    token.cancel()
    try:
        await task
    except asyncio.CancelledError:
        pass
    runs = agent.trace.runs_df()
    assert list(runs["status"]) == ["cancelled"]
    tools = agent.trace.tool_calls_df()
    assert list(tools["is_error"]) == [True]
    assert tools["result"].iloc[0] == "Error: the run was cancelled before this tool call finished"
    events = agent.trace.events_df()
    assert list(events["kind"])[-4:] == ["ToolCallRequestEvent", "Move", "ToolExecution", "RunFinished"]
    assert (events["kind"].iloc[-1], events["text"].iloc[-1], events["move"].iloc[-1]) == (
        "RunFinished",
        "cancelled",
        "tool_execution",
    )


async def test_two_agents_running_at_once_into_one_trace() -> None:
    a = tool_agent(
        "alpha", calls(("a1", "add", '{"a": 1, "b": 1}')), "alpha done", latency=0.005, reflect_on_tool_use=True
    )
    b = tool_agent("beta", "beta done", latency=0.005, model_client_stream=True)
    trace = Trace()
    with trace.recording(a, b):
        await asyncio.gather(a.run(task="for alpha"), b.run(task="for beta"))
    events = trace.events_df()
    runs = trace.runs_df()
    assert sorted(runs["agent"]) == ["alpha", "beta"]
    switches = (events["run_id"].astype("object") != events["run_id"].astype("object").shift()).sum()
    assert switches > 2  # the two runs really interleave in the trace
    by_agent = {agent: group for agent, group in events.groupby("agent", observed=True)}
    assert list(by_agent["alpha"]["kind"]) == [
        "RunStarted", "Move", "Move", "Move", "LLMCall", "Move", "ToolCallRequestEvent", "Move", "ToolExecution",
        "ToolCallExecutionEvent", "Move", "LLMCall", "Response", "RunFinished",
    ]  # fmt: skip
    assert list(by_agent["beta"]["kind"]) == [
        "RunStarted", "Move", "Move", "Move", "LLMCall", "ModelClientStreamingChunkEvent",
        "ModelClientStreamingChunkEvent", "Move", "Response", "RunFinished",
    ]  # fmt: skip
    for agent, group in by_agent.items():
        assert group["run_id"].nunique() == 1
        assert list(group["seq"]) == list(range(len(group)))
        assert set(group["source"].dropna()) == {agent}
    llm = trace.llm_calls_df()
    assert sorted(zip(llm["agent"], llm["purpose"])) == [
        ("alpha", "initial"),
        ("alpha", "reflection"),
        ("beta", "initial"),
    ]
    # the agents' own traces recorded their runs too, and detaching stops the shared one
    assert len(a.trace.runs_df()) == 1 and len(b.trace.runs_df()) == 1
    assert trace.attach(a) is trace.attach(a)
    trace.detach(a)
    assert a.recorders == [a.trace]


def test_trace_modules_import_pandas_only_inside_functions() -> None:
    import pkgutil

    import nbagent.trace

    for info in pkgutil.iter_modules(nbagent.trace.__path__):
        path = Path(nbagent.trace.__path__[0]) / f"{info.name}.py"
        tree = ast.parse(path.read_text())
        top_level = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))]
        names = {alias.name.split(".")[0] for node in top_level for alias in node.names}
        names |= {node.module.split(".")[0] for node in top_level if isinstance(node, ast.ImportFrom) and node.module}
        assert not names & {"pandas", "numpy", "pyarrow"}, info.name


async def test_items_give_back_the_streamed_chunks_and_clear_forgets_them() -> None:
    agent = tool_agent("calc", "alpha beta", model_client_stream=True)
    streamed = [
        item async for item in agent.run_stream(task="go") if type(item).__name__ == "ModelClientStreamingChunkEvent"
    ]
    items = agent.trace.items
    kept = [item for item in items if type(item).__name__ == "ModelClientStreamingChunkEvent"]
    assert [(c.id, c.content, c.full_message_id, c.source) for c in kept] == [
        (c.id, c.content, c.full_message_id, c.source) for c in streamed
    ]
    assert [type(item).__name__ for item in items][:2] == ["RunStarted", "Move"]
    assert len(items) == len(agent.trace) == 10
    agent.trace.clear()
    assert len(agent.trace) == 0 and len(agent.trace.events_df()) == 0
    await agent.model_client.close()


async def test_shared_trace_keeps_each_agents_context() -> None:
    a = tool_agent("alpha", "from alpha")
    b = tool_agent("beta", "from beta")
    trace = Trace()
    with trace.recording(a, b):
        await asyncio.gather(a.run(task="to alpha"), b.run(task="to beta"))
    assert list(trace.context_df(agent="alpha")["text"]) == ["to alpha", "from alpha"]
    assert list(trace.context_df(agent="beta")["text"]) == ["to beta", "from beta"]
    beta_run = str(trace.runs_df().set_index("agent").loc["beta", "run_id"])
    assert list(trace.context_df(beta_run)["move"]) == ["add_messages", "text_exit"]


class ItemList:
    """A recorder keeping every item it is given, as given."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.record = self.items.append


async def test_items_give_back_every_recorded_item_and_only_event_rows_are_tracked() -> None:
    agent = tool_agent(
        "calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "It is 3", "plain answer", reflect_on_tool_use=True
    )
    given = ItemList()
    agent.recorders.append(given)
    await agent.run(task="add please")
    await agent.on_reset()
    await agent.run(task="talk")
    items = agent.trace.items
    assert items == given.items  # the moves rebuilt equal, every other item the object recorded
    assert [type(item).__name__ for item in items].count("Move") == 10
    assert all(mine is theirs for mine, theirs in zip(items, given.items) if type(mine) is not Move)
    trace = agent.trace
    gc.collect()
    rows = trace.store.rows
    moves = [(name, iteration, run) for run, _, name, iteration in split(rows).moves]
    first, second = (str(run) for run in trace.runs_df()["run_id"])
    assert moves[:3] == [("add_messages", None, first), ("message_id", None, first), ("call_llm", 0, first)]
    # A snapshot where the context grew: at the move after STEP 1, else at the event the move yields
    # once it added its message (rows 6, 9, 12 and 20: ToolCallRequestEvent, ToolCallExecutionEvent, Response).
    assert trace.store.snapshots == [
        (0, "calc", 0, 0, None, None), (2, "calc", 1, 0, first, "add_messages"),
        (6, "calc", 2, 0, first, "tool_request"), (9, "calc", 3, 0, first, "tool_execution"),
        (12, "calc", 4, 0, first, "reflect"), (14, "calc", 0, 0, None, None),
        (16, "calc", 1, 0, second, "add_messages"), (20, "calc", 2, 0, second, "text_exit"),
    ]  # fmt: skip
    # The rows the trace makes hold no object the collector tracks, but one per event.
    tracked = [kind_of(row).__name__ for row in rows if isinstance(row, tuple) and gc.is_tracked(row)]
    assert tracked == ["ToolCallRequestEvent", "ToolCallExecutionEvent", "Response", "Response"]
    # nor one per snapshot: the snapshots are columns (arrays of numbers, lists of shared names)
    columns = [column for column in gc.get_referents(trace.store.snapshots) if isinstance(column, list)]
    assert not any(type(value) is tuple for column in columns for value in column)
    context = trace.context_df(first)
    assert list(context["text"]) == ["add please", 'add({"a": 1, "b": 2})', "3", "It is 3"]
    assert list(context["move"]) == ["add_messages", "tool_request", "tool_execution", "reflect"]
    assert list(trace.context_df()["move"]) == ["add_messages", "text_exit"]
    await agent.model_client.close()


async def test_attaching_an_agent_to_its_own_trace_records_each_item_once() -> None:
    agent = tool_agent("calc", "one")
    assert agent.trace.attach(agent) is agent.trace.recorder
    with agent.trace.recording(agent):
        await agent.run(task="go")
    assert agent.recorders == [agent.trace]
    events = agent.trace.events_df()
    assert list(events["kind"]) == ["RunStarted", "Move", "Move", "Move", "LLMCall", "Move", "Response", "RunFinished"]
    assert list(events["seq"]) == list(range(8))


async def test_clear_while_another_agent_runs_keeps_its_run_whole() -> None:
    """The README's bounded service: export and clear() from time to time, while runs go on: a run going
    at the clear keeps all it recorded; the runs ended before it are forgotten."""
    release = asyncio.Event()

    async def wait(note: str) -> str:
        """Waits until released."""
        await release.wait()
        return f"done {note}"

    busy = AssistantAgent(
        "busy",
        ReplayChatCompletionClient([calls(("w1", "wait", '{"note": "x"}')), "all done"]),
        tools=[wait],
        reflect_on_tool_use=True,
    )
    quick = tool_agent("quick", "hello", "again")
    trace = Trace()
    with trace.recording(busy, quick):
        task = asyncio.ensure_future(busy.run(task="slow"))
        while not any(type(item) is ToolExecution for item in trace.items):
            await asyncio.sleep(0.001)
        await quick.run(task="hi")
        trace.clear()
        release.set()
        await task
        await quick.run(task="hi again")
    runs = trace.runs_df()
    assert [(r.agent, r.task, r.status, r.final_text) for r in runs.itertuples()] == [
        ("busy", "slow", "ok", "all done"),
        ("quick", "hi again", "ok", "again"),
    ]
    assert runs["started_at"].notna().all() and runs["duration_s"].gt(0).all()
    # The busy run, going at the clear, keeps all it recorded: its rows are those of the same run recorded
    # with no clear (what to_parquet writes once it ends), its tool call ended after the clear.
    alone = Trace()
    release = asyncio.Event()
    release.set()
    again = AssistantAgent(
        "busy",
        ReplayChatCompletionClient([calls(("w1", "wait", '{"note": "x"}')), "all done"]),
        tools=[wait],
        reflect_on_tool_use=True,
    )
    with alone.recording(again):
        await again.run(task="slow")
    busy_events = trace.events_df().query("agent == 'busy'")
    assert list(busy_events["kind"]) == list(alone.events_df()["kind"])
    assert list(busy_events["move"]) == list(alone.events_df()["move"])
    (tool,) = trace.tool_calls_df().itertuples()
    assert (tool.tool_name, tool.result, tool.is_error) == ("wait", "done x", False)
    assert list(trace.llm_calls_df()["purpose"]) == ["initial", "reflection", "initial"]
    assert list(trace.llm_calls_df()["agent"]) == ["busy", "busy", "quick"]
    # The quick run that ended before the clear is gone, with its snapshots.
    assert set(trace.runs_df()["task"]) == {"slow", "hi again"}


class ScriptedSource:
    """A run source that is no AssistantAgent: what ``records.RunSource`` asks of another library's agent."""

    def __init__(self, name: str, key: str) -> None:
        self.name = name
        self.model_context = UnboundedChatCompletionContext()
        self.recorders: list[Recorder] = []
        self.key = key

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.key,)

    async def run(self, task: str) -> None:
        run_id = f"run-{task}"
        message = TextMessage(content=task, source="user")
        answer = TextMessage(content=f"done with {task}, key {self.key}", source=self.name)
        items: list[Any] = [RunStarted(run_id, self.name, [message]), Move(run_id, "add_messages")]
        for item in items:
            for recorder in self.recorders:
                recorder.record(item)
        await self.model_context.add_message(UserMessage(content=task, source="user"))
        await self.model_context.add_message(AssistantMessage(content=answer.content, source=self.name))
        for item in (Move(run_id, "text_exit", 0), Response(chat_message=answer), RunFinished(run_id, self.name, "ok")):
            for recorder in self.recorders:
                recorder.record(item)


async def test_a_trace_records_any_run_source_not_only_an_assistant_agent() -> None:
    source = ScriptedSource("other", "zq" + "9f8e7d6c5b4a39281706")
    trace = Trace(owner=source)
    source.recorders.append(trace)
    await source.run("first")
    runs = trace.runs_df()
    assert list(runs["agent"]) == ["other"] and list(runs["status"]) == ["ok"]
    assert list(runs["final_text"]) == ["done with first, key [REDACTED]"]
    assert list(trace.events_df()["kind"]) == ["RunStarted", "Move", "Move", "Response", "RunFinished"]
    context = trace.context_df("run-first")
    assert list(context["text"]) == ["first", "done with first, key [REDACTED]"]
    assert list(context["move"]) == ["add_messages", "add_messages"]
    assert trace.owner is source and trace.recorder_of(source) is trace.recorder
    shared = Trace()
    with shared.recording(source):
        await source.run("second")
    assert list(shared.runs_df()["run_id"]) == ["run-second"]
    assert source.recorders == [trace]


async def test_a_finished_run_in_a_shared_trace_keeps_few_objects_for_the_garbage_collector() -> None:
    """A batch keeps every run in one trace: what a finished run leaves there (and nothing else: not
    its agent, its context object or a recorder's bound methods) is what the cyclic garbage
    collector scans again and again. 61 GC-tracked objects a run at 443cc87, 44 now."""

    def answers() -> list[str | CreateResult]:
        return [calls(("c1", "add", '{"a": 1, "b": 2}')), "3"]

    scripts = [answers() for _ in range(31)]
    shared = Trace()
    tool = FunctionTool(add)  # one tool for every agent, as a batch's factory has (its schema is the tool's)

    async def one(script: list[str | CreateResult]) -> weakref.ref[Any]:
        agent = AssistantAgent("a", ReplayChatCompletionClient(script), tools=[tool], reflect_on_tool_use=True)
        with shared.recording(agent):
            await agent.run(task="add")
        return weakref.ref(agent.model_context)

    await one(scripts[0])
    gc.collect()
    before = {id(item) for item in gc.get_objects()}
    contexts = [await one(script) for script in scripts[1:]]
    gc.collect()
    before |= {id(contexts), *map(id, contexts)}
    kept = [item for item in gc.get_objects() if id(item) not in before]
    assert all(context() is None for context in contexts)  # the trace keeps the messages, not the context
    assert len(kept) / 30 <= 48, Counter(type(item).__qualname__ for item in kept).most_common(12)
    last = str(shared.runs_df()["run_id"].iloc[-1])
    assert len(shared.runs_df()) == 31
    assert list(shared.context_df(last)["kind"]) == ["user", "assistant", "tool_result", "assistant"]


async def test_an_agent_detached_during_its_run_is_recorded_to_the_runs_end() -> None:
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "3", reflect_on_tool_use=True)
    shared = Trace()
    shared.attach(agent)
    seen = 0
    async for _ in agent.run_stream(task="add"):
        seen += 1
        if seen == 3:
            shared.detach(agent)  # the run keeps its recorders to its end
    run_id = str(shared.runs_df()["run_id"].iloc[0])
    assert shared.runs_df()["status"].tolist() == ["ok"]
    assert list(shared.context_df(run_id)["kind"]) == ["user", "assistant", "tool_result", "assistant"]
    assert agent.recorders == [agent.trace]


async def test_an_agent_detached_during_its_run_leaves_its_context_at_the_runs_end() -> None:
    """Detached mid-run, the recorder keeps the context to the run's end only: the trace then keeps
    the messages, not the context object (as for an agent detached between runs)."""
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "3", reflect_on_tool_use=True)
    shared = Trace()
    shared.attach(agent)
    async for item in agent.run_stream(task="add"):
        if isinstance(item, ToolCallRequestEvent):
            shared.detach(agent)
    context = weakref.ref(agent.model_context)
    del agent, item
    gc.collect()
    assert context() is None
    assert list(shared.context_df(str(shared.runs_df()["run_id"].iloc[0]))["kind"]) == [
        "user", "assistant", "tool_result", "assistant",
    ]  # fmt: skip


def test_a_new_source_with_a_collected_sources_id_is_attached_and_recorded() -> None:
    """A trace keys its attached sources by ``id()``: a source collected while attached must not make a
    new one that gets its id look attached already (it was then never recorded)."""
    trace = Trace()
    reused = 0
    for new in sources_taking_freed_ids(trace.attach):
        reused += 1
        assert trace.recorder_of(new) is None
        recorder = trace.attach(new)
        assert recorder.source is new and new.recorders == [recorder]
        trace.detach(new)
        assert new.recorders == []
    assert reused
