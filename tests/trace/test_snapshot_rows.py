"""The context snapshots kept as columns (issue 42.5) read as the list of tuples they were."""

from __future__ import annotations

import asyncio
import gc

import pytest

from nbagent import AssistantAgent, ReplayChatCompletionClient, Trace
from nbagent.trace.store import SETTLE_FROM, Logs, RowStore, SnapshotRows

ROWS = [(0, "a", 0, 0, None, None), (2, "a", 1, 0, "r1", "add_messages"), (700, "b", 300, 1, "r2", "text_exit")]


def test_snapshot_rows_read_as_a_list_of_tuples() -> None:
    snapshots = SnapshotRows()
    for row in ROWS:
        snapshots.append(row)  # type: ignore[arg-type]
    assert len(snapshots) == 3
    assert snapshots[2] == ROWS[2] and snapshots[-1] == ROWS[2]
    assert snapshots[1:] == ROWS[1:]
    assert list(snapshots) == ROWS and snapshots == ROWS
    assert [key for _, _, _, key, _, _ in snapshots] == [0, 0, 1]
    assert (snapshots.row_at(2), snapshots.recorder_at(2), snapshots.run_at(2)) == (700, 1, "r2")
    snapshots[:] = [row for row in snapshots if row[1] == "a"]
    assert snapshots == ROWS[:2]
    with pytest.raises(IndexError, match="replaced whole"):
        snapshots[1:] = []
    with pytest.raises(IndexError):
        snapshots[5]
    snapshots.clear()
    assert len(snapshots) == 0 and list(snapshots) == []


def test_logs_read_as_the_list_of_the_very_logs_given() -> None:
    """A snapshot's log is coded by identity: equal logs stay apart, every read gives the log itself."""
    first, same, other = [], [], ["m"]  # first == same, another list
    logs = Logs()
    for log in (first, first, same, other, first):
        logs.append(log)
    assert len(logs) == 5 and list(logs) == [first, first, same, other, first]
    found = list(logs)
    assert [id(log) for log in found] == [id(first), id(first), id(same), id(other), id(first)]
    assert logs[2] is same and logs[-2] is other and [id(log) for log in logs[3:]] == [id(other), id(first)]
    logs.append(same)
    assert logs[5] is same and len(logs) == 6
    logs[:] = [log for log in logs if log is not first]
    assert [id(log) for log in logs] == [id(same), id(other), id(same)]
    with pytest.raises(IndexError, match="replaced whole"):
        logs[1:] = []
    logs.clear()
    assert len(logs) == 0 and list(logs) == []


def test_forgotten_runs_keep_the_others_snapshots() -> None:
    """``max_runs`` forgets the oldest runs' rows and snapshots (the columns rebuilt): a kept run's context
    is as before."""

    async def runs(trace: Trace, agent: AssistantAgent) -> None:
        trace.attach(agent)
        for i in range(12):
            await agent.run(task=f"task {i}")

    kept, whole = Trace(max_runs=4), Trace()
    asyncio.run(runs(kept, AssistantAgent("a", ReplayChatCompletionClient([f"answer {i}" for i in range(12)]))))
    asyncio.run(runs(whole, AssistantAgent("a", ReplayChatCompletionClient([f"answer {i}" for i in range(12)]))))
    last_kept, last_whole = kept.last_run(), whole.last_run()
    mine, theirs = kept.context_df(last_kept), whole.context_df(last_whole)
    assert list(mine["text"]) == list(theirs["text"]) and len(mine) == 24
    # the messages of the runs kept say which run and move added them (the forgotten runs' cannot)
    for frame, run in ((mine, last_kept), (theirs, last_whole)):
        assert list(frame["run_id"].iloc[-2:]) == [run, run]
        assert list(frame["move"].iloc[-2:]) == ["add_messages", "text_exit"]
    assert len(kept.store.snapshots) < len(whole.store.snapshots)


def test_snapshot_rows_wait_as_tuples_a_bounded_while() -> None:
    """The recorders' appends are a list's: the rows go into the columns at a run's end once
    SETTLE_FROM wait (so that a long session keeps no tuple per snapshot), or when read."""
    store = RowStore()
    for at in range(SETTLE_FROM - 1):
        store.append_snapshot((at, "a", at, 0, "r", "add_messages"))
    store.run_ended("r")
    waiting = [column for column in gc.get_referents(store.snapshots) if isinstance(column, list) and column]
    assert any(type(column[0]) is tuple for column in waiting)  # fewer than SETTLE_FROM: they wait
    store.append_snapshot((999, "a", 999, 0, "r", "text_exit"))
    store.run_ended("r")
    columns = [column for column in gc.get_referents(store.snapshots) if isinstance(column, list)]
    assert not any(type(value) is tuple for column in columns for value in column)
    assert len(store.snapshots) == SETTLE_FROM and store.snapshots[-1] == (999, "a", 999, 0, "r", "text_exit")
