"""output=folder: finished runs stream into a Hive-style dataset and leave memory; resume; shards."""

from __future__ import annotations

import asyncio
import gc
import time
import tracemalloc
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

import nbagent.batch
import nbagent.trace.dataset
import nbagent.trace.parquet
from nbagent import Batch, LoadedTrace

from ..frames import assert_frame_equal
from .helpers import Factory, Gauge


def parts(folder: Path, table: str) -> list[str]:
    return sorted(str(path.relative_to(folder / table)) for path in (folder / table).rglob("*.parquet"))


async def test_runs_are_written_in_parts_by_table_and_read_back(tmp_path: Path) -> None:
    tasks = [f"city {i}" for i in range(25)]
    batch = await Batch(Factory(), tasks, concurrency=4, part_size=10, output=tmp_path, progress=None).run()
    session = batch.session
    for table in ("results", "attempts", "events", "llm_calls", "tool_calls", "runs", "context_logs", "snapshots"):
        assert parts(tmp_path, table) == [f"session={session}/part-{n}.parquet" for n in range(3)], table
    assert not list(tmp_path.glob(".writing-*"))
    results = batch.results
    assert list(results["task"]) == tasks and set(results["status"]) == {"ok"}
    assert str(results["started_at"].dtype) == "datetime64[ns, UTC]" and str(results["attempts"].dtype) == "Int64"
    trace = batch.trace
    assert isinstance(trace, LoadedTrace) and len(trace.runs_df()) == 25
    assert set(trace.runs_df()["run_id"].astype(str)) == set(results["run_id"])
    # The context of a run of the last part (snapshots shifted past the parts before it).
    context = trace.context_df(results["run_id"].iloc[-1])
    assert list(context["kind"]) == ["user", "assistant", "tool_result", "assistant"]
    assert list(context["text"])[0] == "city 24"
    tools = batch.tool_calls_df()
    assert sorted(tools["task_index"]) == list(range(25))
    # Engines read one table across sessions with no glob tricks.
    counted = duckdb.sql(
        f"SELECT session, count(*) FROM read_parquet('{tmp_path}/results/**/*.parquet', hive_partitioning=true) "
        "GROUP BY session"
    ).fetchall()
    assert counted == [(session, 25)]
    events = duckdb.sql(f"SELECT count(*) FROM read_parquet('{tmp_path}/events/**/*.parquet')").fetchall()
    assert events == [(len(trace.events_df()),)]


async def test_batch_trace_reads_each_written_part_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads: list[int] = []
    real = nbagent.trace.parquet.read_part

    def counted(part: Any, table: str, *args: Any) -> pd.DataFrame:
        reads.append(part.number)
        return real(part, table, *args)

    for module in (nbagent.trace.parquet, nbagent.trace.dataset):
        monkeypatch.setattr(module, "read_part", counted, raising=False)
    tasks = [f"city {i}" for i in range(9)]
    batch = await Batch(Factory(), tasks, concurrency=3, part_size=3, output=tmp_path, progress=None).run()
    first = batch.trace.runs_df()
    read_once = len(reads)
    assert sorted(set(reads)) == [0, 1, 2]
    again = batch.trace.runs_df()
    assert len(reads) == read_once  # the parts on disk were kept, not read again
    assert_frame_equal(first, again)
    assert sorted(again["run_id"].astype(str)) == sorted(batch.results["run_id"])


async def test_a_rerun_on_the_same_folder_skips_the_tasks_done(tmp_path: Path) -> None:
    broken = {"city 3", "city 7"}

    def make(task: str) -> object:
        if task in broken:
            raise RuntimeError("not today")
        return factory(task)

    factory = Factory()
    tasks = [f"city {i}" for i in range(10)]
    first = await Batch(make, tasks, output=tmp_path, progress=None).run()
    assert first.progress().failed == 2
    broken.clear()
    factory.calls.clear()
    second = await Batch(make, tasks, output=tmp_path, progress=None).run()
    assert factory.calls == ["city 3", "city 7"]  # only the tasks that did not end ok ran again
    assert second.progress().skipped == 8 and second.session != first.session
    results = second.results
    assert set(results["status"]) == {"ok"} and list(results["task"]) == tasks
    assert list(results["session"].astype(str)).count(second.session) == 2  # the others are from the first session
    assert len(second.trace.runs_df()) == 2  # this session's runs
    third = await Batch(make, tasks, output=tmp_path, progress=None).run()
    assert third.progress().skipped == 10 and third.progress().finished == 0


async def test_a_rerun_after_stop_runs_the_rest(tmp_path: Path) -> None:
    gauge = Gauge(30.0)
    slow = Factory(tool=gauge.tool)
    tasks = [f"c{i}" for i in range(6)]
    make = lambda t: slow(t) if t == "c2" else Factory()(t)  # noqa: E731
    batch = Batch(make, tasks, concurrency=2, output=tmp_path, progress=None)
    running = asyncio.ensure_future(batch.run())
    while gauge.now < 1 or batch.progress().ok < 1:
        await asyncio.sleep(0.01)
    batch.stop()
    await running
    stopped = batch.results
    assert "cancelled" in set(stopped["status"]) and stopped["status"].iloc[0] == "ok"
    again = await Batch(Factory(), tasks, output=tmp_path, progress=None).run()
    assert set(again.results["status"]) == {"ok"} and again.progress().skipped == (stopped["status"] == "ok").sum()


async def test_shards_make_one_dataset(tmp_path: Path) -> None:
    tasks = pd.DataFrame({"task": [f"city {i}" for i in range(9)], "id": [f"q{i}" for i in range(9)]})
    batches = [
        await Batch(Factory(), tasks, output=tmp_path, shard=(i, 3), key="id", progress=None).run() for i in range(3)
    ]
    assert [b.total for b in batches] == [3, 3, 3]
    assert [list(b.results.index) for b in batches] == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    assert list(batches[1].results["task_key"]) == ["q1", "q4", "q7"]
    assert list(batches[1].results["id"]) == ["q1", "q4", "q7"]
    rows = duckdb.sql(
        f"SELECT count(DISTINCT session), count(*), count(DISTINCT task_key) FROM "
        f"read_parquet('{tmp_path}/results/**/*.parquet', hive_partitioning=true)"
    ).fetchall()
    assert rows == [(3, 9, 9)]
    # A shard run again skips its own tasks only.
    again = await Batch(Factory(), tasks, output=tmp_path, shard=(0, 3), key="id", progress=None).run()
    assert again.progress().skipped == 3 and list(again.results.index) == [0, 3, 6]
    merged = pd.concat([b.results for b in batches]).sort_index()
    assert list(merged["task"]) == list(tasks["task"])


@pytest.mark.slow  # 2,500 tasks under tracemalloc: the fast tier's longest test by far (63 s at a load of 10)
async def test_memory_stays_flat_with_output(tmp_path: Path) -> None:
    """What a batch keeps once it has run (tracemalloc, after a collection, the batch still referenced)
    does not grow with its tasks: 2,000 tasks keep about what 500 do, in all and in what nbagent's
    batch module itself allocated (its rows and parts: none stays once written)."""
    batch_module = tracemalloc.Filter(True, str(Path(nbagent.batch.__file__)))

    async def kept(count: int, folder: Path) -> tuple[int, int]:
        gc.collect()
        before = tracemalloc.get_traced_memory()[0]
        own_before = sum(s.size for s in tracemalloc.take_snapshot().filter_traces([batch_module]).statistics("lineno"))
        batch = Batch(_Forgetful(), (f"c{i}" for i in range(count)), concurrency=16, part_size=100, output=folder)
        await batch.run()
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
        own = sum(s.size for s in tracemalloc.take_snapshot().filter_traces([batch_module]).statistics("lineno"))
        assert batch.progress().ok == count
        return held, own - own_before

    await Batch(Factory(), ["warm"] * 150, part_size=100, output=tmp_path / "warm", progress=None).run()
    tracemalloc.start()
    try:
        small, own_small = await kept(500, tmp_path / "small")
        large, own_large = await kept(2000, tmp_path / "large")
    finally:
        tracemalloc.stop()
    # A run kept in memory is ~12 kB: 1,500 more would be ~18 MB. With output= a task leaves a few
    # bytes (its duration, for the final p50/p95); the bound is 1 kB a task (a twelfth of a kept run),
    # since what interpreter caches hold after a run varies with the machine's load (measured
    # 39 B a task on a quiet machine, up to ~300 B loaded).
    assert large - small < 1000 * 1500, (small, large)
    # What the batch module allocated and still holds: the durations (an array, and the last 2,048 in a
    # deque: about 40 bytes a task here), nothing that load varies. A finished row kept shows here
    # (measured with that leak made on purpose: 383 bytes a task).
    assert own_large - own_small < 64 * 1500, (own_small, own_large)


class _Forgetful(Factory):
    """A factory that keeps no agent and no task."""

    def __call__(self, task: object) -> object:
        agent = super().__call__(task)
        self.agents.clear()
        self.calls.clear()
        return agent


def test_without_pyarrow_output_names_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import builtins

    real = builtins.__import__

    def fake(name: str, *args: object, **kwargs: object) -> object:
        if name == "pyarrow":
            raise ImportError("no pyarrow")
        return real(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(builtins, "__import__", fake)
    with pytest.raises(ImportError, match=r"pip install 'nbagent-loop\[parquet\]'"):
        Batch(Factory(), ["x"], output=tmp_path)


async def test_a_full_disk_fails_the_batch_without_unretrieved_task_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    def full(self: object, *part: object) -> None:
        time.sleep(0.05)  # a disk slower than the tasks: parts pile up, and several workers wait on them
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(nbagent.trace.dataset.Dataset, "commit", full)  # the disk under the dataset
    seen: list[str] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _, context: seen.append(str(context["message"])))
    try:
        batch = Batch(
            Factory(), [f"city {i}" for i in range(80)], concurrency=8, part_size=1, output=tmp_path, progress=None
        )
        with pytest.raises(OSError, match="No space left on device"):
            await batch.run()
        del batch
        for _ in range(3):
            gc.collect()
            await asyncio.sleep(0.05)
    finally:
        loop.set_exception_handler(None)
    assert seen == []


async def test_a_named_session_is_the_batch_s_folders_and_a_bad_one_is_refused(tmp_path: Path) -> None:
    batch = await Batch(Factory(), ["city 1"], output=tmp_path, session="job-7.p0", progress=None).run()
    assert batch.session == "job-7.p0" and batch.trace.trace_id == "job-7.p0"
    assert parts(tmp_path, "results") == ["session=job-7.p0/part-0.parquet"]
    for bad in ("a b", "../up", "x" * 201):
        with pytest.raises(ValueError, match=r"Batch: session must be an id that can name a folder"):
            Batch(Factory(), ["city 1"], output=tmp_path, session=bad)
    with pytest.raises(TypeError, match=r"Batch: session must be a str"):
        Batch(Factory(), ["city 1"], session=7)  # type: ignore[arg-type]
