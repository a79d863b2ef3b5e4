"""The run explorer's data side over real runs: a Parquet dataset explored lazily (``nbagent.explore(folder)``)
and a live trace's table followed incrementally while runs go."""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbagent
from nbagent import Trace
from nbagent.notebook.explorer import RunExplorer
from nbagent.trace import LazyTrace, load_parquet
from nbagent.trace.explore import TOOL_USE_COLUMNS, Filters, RunFollower
from tests.trace.explore_data import record_runs, write_sessions
from tests.trace.helpers import calls, text, tool_agent

from ..frames import assert_frame_equal
from ..waits import HANG_GUARD_S, eventually


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("explore") / "traces"
    asyncio.run(write_sessions(folder))
    return folder


async def test_nbagent_explore_takes_a_dataset_folder(dataset: Path) -> None:
    explorer = nbagent.explore(dataset)
    assert isinstance(explorer.trace, LazyTrace)
    assert len(explorer.table) == 21 and explorer.live  # a folder is followed: runs may be added to it
    one = nbagent.explore(str(dataset), session="session-b", page_size=3)
    assert len(one.table) == 6 and one.current.pages(3) == 2
    one.widget()  # the widget over a lazily read dataset, and its static copy
    assert "page 1 of 2" in one._static_html()  # noqa: SLF001 the saved notebook's copy
    one.filter(tool="fail")
    eager = load_parquet(dataset, "session-b")
    runs, tool_calls = eager.runs_df(), eager.tool_calls_df()
    found = eval(one.query, {"runs": runs, "tool_calls": tool_calls, "pd": pd})  # noqa: S307 the query under test
    assert_frame_equal(found, one.selection)
    assert len(one.selection) and set(one.selection["agent"]) <= {"calc", "writer", "planner"}
    namespace: dict[str, object] = {}
    exec(one.code, namespace)  # noqa: S102 the code the explorer gives to paste: it reads the dataset again
    assert_frame_equal(namespace["selection"], one.selection)  # type: ignore[arg-type]


async def test_a_run_of_a_lazy_dataset_opens_and_compares_as_an_eager_one(dataset: Path) -> None:
    lazy, eager = nbagent.explore(dataset), nbagent.explore(load_parquet(dataset))
    runs = lazy.filter(tool="add").current.run_ids
    eager.filter(tool="add")
    first, second = runs[:2]
    shown, want = await lazy.open(first), await eager.open(first)
    timeless = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|\d")
    assert timeless.sub("", shown) == timeless.sub("", want)  # the same view, times and fresh ids aside
    answer = str(lazy.selection.set_index("run_id").loc[first, "final_text"])
    assert 'nba-tool-card" data-tool-name="add"' in shown and f">{answer}<" in shown
    assert lazy.compare(first, second).html() == eager.compare(first, second).html()


async def test_bad_sources_name_their_parameter(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="explore: source '.*nowhere' is not a folder"):
        nbagent.explore(tmp_path / "nowhere")
    (tmp_path / "plain").mkdir()
    with pytest.raises(FileNotFoundError, match="explore: source: no trace in .*plain"):
        nbagent.explore(tmp_path / "plain")
    with pytest.raises(FileNotFoundError, match="explore: session: no session 'nobody'"):
        nbagent.explore(dataset, session="nobody")
    with pytest.raises(ValueError, match="explore: session must be None unless source is a dataset's folder"):
        nbagent.explore(nbagent.Trace(), session="x")
    with pytest.raises(TypeError, match="explore: source must be a trace"):
        nbagent.explore(42)  # type: ignore[arg-type]


async def test_a_batch_writing_to_a_dataset_fills_the_table_while_it_runs(tmp_path: Path) -> None:
    tasks = [f"task {i}" for i in range(30)]
    answers = [text(f"answer {i}") for i in range(30)]
    agent = tool_agent("calc", *answers, latency=0.01)
    batch = nbagent.Batch(agent, tasks, progress=None, concurrency=3, output=tmp_path / "out", part_size=4)
    explorer = nbagent.explore(batch)
    assert explorer.live and len(explorer.table) == 0
    seen, tasks_seen, written = [], [], []
    running = asyncio.ensure_future(batch.run())
    while not running.done():
        await asyncio.sleep(0.02)
        explorer.refresh()
        seen.append(len(explorer.table))
        attempts = batch.attempts_df()  # the attempts so far: those written and those in memory, once each
        assert not attempts.duplicated(["task_key", "attempt"]).any()
        tasks_seen.append(int(explorer.table.display["parent"].notna().sum()))
        written.append(len(list((tmp_path / "out" / "runs").glob("session=*/part-*.parquet"))))
    await running
    explorer.refresh()
    assert any(0 < count < 30 for count in seen), seen  # filled while the batch went
    assert any(0 < parts for parts, count in zip(written, seen) if count < 30), (written, seen)  # from both
    assert any(0 < count < 30 for count in tasks_seen), tasks_seen  # runs matched to their task as they end
    assert len(explorer.table) == 30 and explorer.table.display["parent"].notna().all()
    assert sorted(explorer.table.display["parent"]) == sorted(tasks)
    assert len(batch.attempts_df()) == 30
    answer = await explorer.open(str(explorer.table.runs["run_id"].iloc[0]))  # read back from the folder
    assert "answer " in answer
    assert_as_rebuilt(explorer)


def assert_as_rebuilt(explorer: RunExplorer) -> None:
    """The explorer's table, updated run by run, is the one read anew from the whole source."""
    from nbagent.trace.explore import RunTable, tool_uses

    table = explorer.table
    source = explorer.source
    trace = source.trace if isinstance(source, nbagent.Batch) else explorer.trace  # a batch's: all its runs now
    fresh = RunTable(source.runs_df(), tool_uses(trace))
    assert_frame_equal(table.runs, fresh.runs)
    assert_frame_equal(table.display, fresh.display)
    for column in ("status", "agent", "tool"):
        assert table.choices(column) == fresh.choices(column)
    for filters in (Filters(), Filters.of(tool="add"), Filters.of(status="error"), Filters.of(search="4")):
        for sort in (None, "tokens", "agent"):
            assert_frame_equal(table.select(filters, sort, False).frame, fresh.select(filters, sort, False).frame)


async def test_a_live_update_reads_only_the_new_runs_and_equals_a_rebuild() -> None:
    trace = Trace()
    explorer = RunExplorer(trace)
    explorer.filter(tool="add")  # a cached mask, grown with the table
    explorer.table.select(Filters.of(search="task 1"))
    follower = RunFollower(trace)
    for i in range(12):
        await record_runs(trace, i, 1 + i % 2)  # 1 or 2 runs of scripted agents
        runs, tool_calls = follower.changes()  # type: ignore[misc]
        assert len(runs) == 1 + i % 2  # the runs with new rows alone, built from their rows alone
        assert set(tool_calls["run_id"].astype(str)) <= set(runs["run_id"].astype(str))
        explorer.refresh()
        assert_as_rebuilt(explorer)
    assert len(explorer.table) == 18 and len(explorer.selection) == 6
    assert follower.changes() is not None and len(follower.changes()[0]) == 0  # type: ignore[index]
    trace.clear()  # rows forgotten: the next update reads the whole trace again
    assert follower.changes() is None
    await record_runs(trace, 20, 2)
    explorer.refresh()
    assert len(explorer.table) == 2
    assert_as_rebuilt(explorer)


async def test_a_run_in_progress_is_updated_in_place() -> None:
    trace = Trace()
    explorer = RunExplorer(trace)
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), text("three"), model_client_stream=True)
    statuses = []
    with trace.recording(agent):
        async for _ in agent.run_stream(task="add them"):
            explorer.refresh()
            statuses.append(str(explorer.table.runs["status"].iloc[0]) if len(explorer.table) else None)
            assert_as_rebuilt(explorer)
    explorer.refresh()
    assert "running" in statuses and explorer.table.choices("status") == ["ok"]
    assert list(explorer.table.display["tool_calls"]) == [1]
    assert_as_rebuilt(explorer)


async def test_a_batch_in_progress_fills_the_table() -> None:
    tasks = [f"task {i}" for i in range(40)]
    answers = [text(f"answer {i}") for i in range(40)]
    agent = tool_agent("calc", *answers, latency=0.01)
    batch = nbagent.Batch(agent, tasks, progress=None, concurrency=4)
    explorer = nbagent.explore(batch)
    assert explorer.live and len(explorer.table) == 0
    seen = []
    running = asyncio.ensure_future(batch.run())
    while not running.done():
        await asyncio.sleep(0.03)
        explorer.refresh()
        seen.append(len(explorer.table))
        assert_as_rebuilt(explorer)
    await running
    explorer.refresh()
    assert any(0 < count < 40 for count in seen), seen  # filled while the batch went
    assert len(explorer.table) == 40 and explorer.table.display["parent"].notna().all()
    assert sorted(explorer.table.display["parent"]) == sorted(f"task {i}" for i in range(40))
    assert_as_rebuilt(explorer)


class FileReads:
    """The Parquet files pyarrow opens (schema, metadata or rows) while ``counting`` is set, by path."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        import pyarrow.parquet as pq

        self.counting = False
        self.paths: list[str] = []
        for name in ("read_table", "read_schema", "ParquetFile"):
            real = getattr(pq, name)
            monkeypatch.setattr(pq, name, self._spy(real))

    def _spy(self, real: Any) -> Any:
        def spied(source: Any, *args: Any, **kwargs: Any) -> Any:
            if self.counting:
                self.paths.append(str(source))
            return real(source, *args, **kwargs)

        return spied

    def during(self, action: Any) -> list[str]:
        """The files read while ``action()`` runs."""
        self.paths, self.counting = [], True
        try:
            action()
        finally:
            self.counting = False
        return self.paths


def poll_when_due(explorer: Any, within: float = 10.0) -> bool:
    """``explorer.poll()`` until it updates (its least interval between updates is four times its last
    read's cost: on a loaded machine more than a fixed sleep), at most ``within`` seconds; whether it did."""
    deadline = time.monotonic() + within
    while not explorer.poll():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


async def test_an_explorer_over_a_folder_shows_the_parts_committed_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``explore(folder)`` follows the folder: a session exporting now and then, and a session that
    started before the others but was exported after the explorer opened; each update reads the new
    parts' files alone (a part that goes first among them: the runs table read again)."""
    folder = tmp_path / "traces"
    early = Trace(trace_id="early")  # its first run before every other: its part goes first once written
    await record_runs(early, 9, 2)
    first = Trace(trace_id="first")
    await record_runs(first, 1, 4)
    first.to_parquet(folder)
    explorer = nbagent.explore(folder)
    explorer.filter(status="ok").sort_by("tokens", ascending=False)
    assert explorer.live and len(explorer.table) == len(first.runs_df())
    reads = FileReads(monkeypatch)
    assert reads.during(lambda: explorer.poll()) == []  # nothing new: the folder's times alone looked at
    for export in range(2):
        await record_runs(first, 2 + export, 3)
        first.to_parquet(folder)
        read = reads.during(lambda: poll_when_due(explorer))
        assert read and {Path(path).name for path in read} == {f"part-{export + 1}.parquet"}, read
        assert len(explorer.table) == len(first.runs_df())
        assert_as_rebuilt(explorer)
    early.to_parquet(folder)  # a session that goes first: the table read again, as it is now
    assert poll_when_due(explorer)
    assert len(explorer.table) == len(first.runs_df()) + len(early.runs_df())
    assert explorer.table.runs["trace_id"].iloc[0] == "early"
    assert_as_rebuilt(explorer)
    assert_frame_equal(explorer.selection, explorer.table.select(explorer.current.filters, "tokens", False).frame)
    before = len(explorer.table)
    first.clear()
    await record_runs(first, 5, 1)
    first.to_parquet(folder)
    assert poll_when_due(explorer) and len(explorer.table) == before + 1
    answer = await explorer.open(str(explorer.table.runs["run_id"].iloc[-1]))  # a run of a part added since
    assert "answer 0 for session 5" in answer


async def test_a_followed_batch_reads_each_written_part_once_at_most(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A live explorer over a batch writing to ``output=``: an update reads no part it has read (the
    parts it followed in memory not at all), and the table equals the batch's read anew."""
    tasks = [f"task {i}" for i in range(24)]
    answers = [text(f"answer {i}") for i in range(24)]
    agent = tool_agent("calc", *answers, latency=0.05)
    batch = nbagent.Batch(agent, tasks, progress=None, concurrency=3, output=tmp_path / "out", part_size=2)
    explorer = nbagent.explore(batch)
    reads = FileReads(monkeypatch)
    read: list[str] = []
    later: RunExplorer | None = None  # one opened while the batch runs, some parts written
    read_later: list[str] = []
    running = asyncio.ensure_future(batch.run())
    updates = 0
    while not running.done():
        await asyncio.sleep(0.02)
        read += reads.during(explorer.refresh)
        if later is not None:
            read_later += reads.during(later.refresh)
        elif len(list((tmp_path / "out" / "runs").glob("session=*/part-*.parquet"))) >= 3:
            later = nbagent.explore(batch)
        updates += 1
    await running
    read += reads.during(explorer.refresh)
    assert later is not None
    read_later += reads.during(later.refresh)
    parts = len(list((tmp_path / "out" / "runs").glob("session=*/part-*.parquet")))
    assert parts == 12 and updates > 3
    for files in (read, read_later):
        assert len(files) == len(set(files)), files  # no file read twice (the whole batch never read again)
        assert len(files) <= 3 * parts  # at most a part's runs, tool_calls and attempts each
    for followed in (explorer, later):
        assert len(followed.table) == 24 and followed.table.display["parent"].notna().all()
        assert_as_rebuilt(followed)
    run = str(explorer.table.runs["run_id"].iloc[5])
    assert "answer " in await explorer.open(run)  # read from the folder


async def test_batch_follow_gives_each_run_with_its_task_with_or_without_output(tmp_path: Path) -> None:
    """``batch.follow().changes()`` gives the runs new or changed since the last call, with their
    task: together, the last row given of each run is the batch's ``runs_df()`` row (task columns too)."""
    for output in (None, tmp_path / "out"):
        tasks = [f"task {i}" for i in range(12)]
        agent = tool_agent("calc", *[text(f"answer {i}") for i in range(12)], latency=0.02)
        batch = nbagent.Batch(agent, tasks, progress=None, concurrency=3, output=output, part_size=2)
        follower = batch.follow()
        last: dict[str, pd.Series] = {}
        running = asyncio.ensure_future(batch.run())
        while True:
            done = running.done()
            got = follower.changes()
            assert got is not None
            runs, tool_calls = got
            assert list(tool_calls.columns) == list(TOOL_USE_COLUMNS)
            for _, row in runs.iterrows():
                last[str(row["run_id"])] = row
            if done:
                break
            await asyncio.sleep(0.02)
        await running
        want = batch.runs_df().set_index("run_id")
        assert sorted(last) == sorted(want.index.astype(str)), output
        for run, row in last.items():
            assert row["status"] == "ok" and row["task_key"] == want.loc[run, "task_key"], (output, run)
            assert row["task_index"] == want.loc[run, "task_index"] and row["attempt"] == 1


async def test_a_followed_batch_takes_in_parts_written_between_two_updates(tmp_path: Path) -> None:
    """A part written before an update saw it in memory is read from the folder, its attempts too (its
    file holds no ``session`` column: the folder names it); was: pyarrow's ArrowInvalid at the update
    after a part came and went between two."""
    tasks = [f"task {i}" for i in range(6)]
    agent = tool_agent("calc", *[text(f"answer {i}") for i in range(6)])
    batch = nbagent.Batch(agent, tasks, progress=None, concurrency=2, output=tmp_path / "out", part_size=2)
    explorer = nbagent.explore(batch)
    follower = batch.follow()
    await batch.run()  # every part written, none seen in memory by either
    got = follower.changes()
    assert got is not None
    assert sorted(got[0]["task_index"].tolist()) == list(range(6)) and got[0]["attempt"].tolist() == [1] * 6
    explorer.refresh()
    assert len(explorer.table) == 6 and not explorer.table.runs["task_key"].isna().any()
    assert_as_rebuilt(explorer)


async def test_a_displayed_explorer_reads_a_followed_folder_off_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A displayed explorer over a folder reads the new parts in a worker thread: the loop runs on
    while their files are read (was: each update read them on the loop, 150-270 ms a part measured);
    closed while reading, nothing more is scheduled and nothing read is lost to a later update."""
    import nbagent.trace.parquet as parquet

    folder = tmp_path / "traces"
    first = Trace(trace_id="first")
    await record_runs(first, 1, 3)
    first.to_parquet(folder)
    explorer = nbagent.explore(folder)
    explorer.widget()  # displayed: it polls by itself
    read = parquet.read_table_file
    loop_thread = threading.get_ident()
    threads: set[bool] = set()

    def slow_read(*args: Any, **kwargs: Any) -> Any:
        threads.add(threading.get_ident() == loop_thread)
        time.sleep(0.3)  # a slow disk
        return read(*args, **kwargs)

    monkeypatch.setattr(parquet, "read_table_file", slow_read)

    async def lag_until(done: Any, what: str) -> float:
        worst = 0.0
        deadline = time.monotonic() + HANG_GUARD_S
        while not done() and time.monotonic() < deadline:
            before = time.perf_counter()
            await asyncio.sleep(0.01)
            worst = max(worst, time.perf_counter() - before - 0.01)
        assert done(), f"gave up after {HANG_GUARD_S:g} s waiting for {what}"
        return worst

    await record_runs(first, 2, 2)
    first.to_parquet(folder)
    updates = explorer.updates
    worst = await lag_until(lambda: explorer.updates > updates, "the explorer to take in the new parts")
    # Read off the loop: no read on its thread. The loop's lag (the update's pandas work on the loop: 0.27 s
    # once with the two cores at a load average of 13) is a figure, not a bound a loaded machine could fail.
    assert threads == {False}, (threads, worst)
    print(f"the loop's longest lag while the explorer read two parts: {worst:.3f} s")
    assert len(explorer.table) == len(first.runs_df())
    assert_as_rebuilt(explorer)

    await record_runs(first, 3, 2)
    first.to_parquet(folder)
    await lag_until(lambda: explorer._fetching is not None, "a read of the new parts")  # noqa: SLF001
    explorer.close()
    await eventually(
        lambda: explorer._timer is None and explorer._fetching is None,  # noqa: SLF001 nothing more scheduled
        "the closed explorer's timer and read to end",
    )
    await asyncio.sleep(1)  # and nothing schedules them again
    assert explorer._timer is None and explorer._fetching is None  # noqa: SLF001
    monkeypatch.setattr(parquet, "read_table_file", read)
    explorer.refresh()  # what the cancelled read took in is shown
    assert len(explorer.table) == len(first.runs_df())
    assert_as_rebuilt(explorer)
