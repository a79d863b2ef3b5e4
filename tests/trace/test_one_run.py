"""Reading one run of a big trace costs what that run costs (issue 42, point 6).

``trace.run(run_id)`` of a live trace takes the run's rows and its recorder's snapshots alone, and its
frames, context, replay and timeline equal those read from the whole trace; a Batch's per-task
recorders each read their own snapshots only (``RowStore.snapshots_of``), so replaying a run no longer
scans every task's snapshots once per task.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

import nbagent
from nbagent import AssistantAgent, LoadedTrace, ReplayChatCompletionClient
from nbagent.trace.replay import replay_of

from ..replay.helpers import assert_same_run
from .helpers import calls, text, tool_agent


def _same_replay(trace: nbagent.Trace, run: str) -> None:
    """The replay of ``run`` read alone equals the one read from every frame of ``trace``."""
    alone = trace.replay(run)
    whole = replay_of(trace, run)
    assert [(m.source, m.content) for m in alone.task] == [(m.source, m.content) for m in whole.task]
    assert replace(alone, task=()) == replace(whole, task=())  # the task's messages are new ones (ids, times)


async def test_a_run_of_a_live_trace_alone_equals_the_run_in_the_whole_trace() -> None:
    agent = tool_agent(
        "calc",
        calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "fail", '{"reason": "no"}')),
        text("first"),
        calls(("c1", "add", '{"a": 3, "b": 4}')),
        text("second"),
        text("third"),
    )
    for task in ("one", "two", "three"):
        await agent.run(task=task)
    trace = agent.trace
    runs = [str(run) for run in trace.runs_df()["run_id"]]
    for run in runs:
        alone = trace.run(run)
        assert isinstance(alone, LoadedTrace)
        assert list(alone.runs_df()["run_id"].astype("object")) == [run]
        assert_same_run((alone, run), (trace, run))
        _same_replay(trace, run)
        assert trace.timeline(run).to_html() == LoadedTrace.timeline(alone, run).to_html()
    # the second run (an answer, no tool) starts from a context holding the first's tool results, among
    # them an error: those calls come along (the third's, made with a reused id "c1", do not)
    held = trace.run(runs[1]).tool_calls_df()
    assert list(held["run_id"].astype("object")) == [runs[0], runs[0]]
    assert held["is_error"].tolist() == [False, True]
    assert trace.last_run() == runs[-1] and trace.replay().run_id == runs[-1]


async def test_a_run_of_a_live_batch_reads_its_own_snapshots_only() -> None:
    def make(task: object) -> AssistantAgent:
        client = ReplayChatCompletionClient([calls(("c1", "add", '{"a": 1, "b": 2}')), text(f"answer {task}")])
        return tool_agent("calc", client=client)

    batch = await nbagent.Batch(make, [f"task {i}" for i in range(30)], progress=None, concurrency=8).run()
    trace = batch.trace
    assert isinstance(trace, nbagent.Trace)
    store = trace.store
    keys = {snapshot[3] for snapshot in store.snapshots}
    assert len(keys) == 30  # one recorder a task, all in one store
    for key in keys:
        assert {store.snapshots[at][3] for at in store.snapshots_of(key)} == {key}
    assert sum(len(store.snapshots_of(key)) for key in keys) == len(store.snapshots)
    for run in [str(r) for r in trace.runs_df()["run_id"]][::7]:
        assert_same_run((trace.run(run), run), (trace, run))
        _same_replay(trace, run)


async def test_one_run_read_names_a_run_it_does_not_hold() -> None:
    agent = tool_agent("calc", text("hi"))
    await agent.run(task="x")
    for trace in (agent.trace, LoadedTrace(nbagent.trace.schema.tables_of(agent.trace), "t")):
        with pytest.raises(ValueError, match="trace.run: run_id .*no-such-run"):
            trace.run("no-such-run")


async def test_a_run_is_read_alone_after_rows_were_forgotten() -> None:
    """The store's indexes are made again once rows are forgotten (``max_runs``, ``clear()``)."""
    agent = tool_agent("calc", *[text(f"answer {i}") for i in range(8)])
    agent.trace = nbagent.Trace(owner=agent, max_runs=2)
    agent.recorders = [agent.trace]
    for i in range(6):
        await agent.run(task=f"task {i}")
        run = agent.trace.last_run()
        assert_same_run((agent.trace.run(run), run), (agent.trace, run))
    agent.trace.clear()
    await agent.run(task="after the clear")
    run = agent.trace.last_run()
    assert list(agent.trace.run(run).runs_df()["run_id"].astype(str)) == [run]
    _same_replay(agent.trace, run)
