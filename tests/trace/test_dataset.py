"""trace/dataset.py: a Parquet dataset folder a writer adds parts to: commit a part whole, list the
committed parts, read a part (once), read lazily, follow new parts only, say which task keys are
committed; the writer's own tables carry per-run columns (a task key, a variant, a repeat)."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

import nbagent.trace.dataset
from nbagent import AssistantAgent, Batch, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from nbagent.trace import LoadedTrace, Trace, load_parquet
from nbagent.trace.dataset import Dataset, DatasetFollower
from nbagent.trace.parquet import pending_folder
from nbagent.trace.writer import DatasetWriter

from ..frames import assert_frame_equal
from ..waits import joined, waited
from .explore_data import record_runs

ASK = CreateResult(
    finish_reason="function_calls",
    content=[FunctionCall(id="call_0", name="double", arguments='{"n": 21}')],
    usage=RequestUsage(prompt_tokens=12, completion_tokens=4),
)


async def double(n: int) -> int:
    """Double a number."""
    return 2 * n


SCHEMA = pa.schema([("run_id", pa.string()), ("task_key", pa.string()), ("variant", pa.string()),
                    ("repeat", pa.int64()), ("status", pa.string())])  # fmt: skip


def own(trace: Trace, variant: str = "base", repeat: int = 0, failed: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The writer's ``results`` table of ``trace``: a row per run with its task key, variant and repeat."""
    runs = [str(run) for run in trace.runs_df()["run_id"]]
    rows = [
        {
            "run_id": run,
            "task_key": f"{variant}/{run}",
            "variant": variant,
            "repeat": repeat,
            "status": "error" if run in failed else "ok",
        }  # fmt: skip
        for run in runs
    ]
    return {"results": pa.Table.from_pylist(rows, schema=SCHEMA)}


async def new_part(dataset: Dataset, count: int, seed: int) -> Trace:
    trace = Trace(trace_id=dataset.session)
    await record_runs(trace, seed, count)
    return trace


async def test_a_committed_part_is_listed_read_and_equal_to_its_trace(tmp_path: Path) -> None:
    dataset = Dataset(tmp_path, "s1", ("results",))
    assert dataset.committed() == []
    first, second = await new_part(dataset, 3, 1), await new_part(dataset, 4, 2)
    for trace in (first, second):
        number = dataset.new_number()
        dataset.commit(number, trace, own(trace))
    assert dataset.committed() == [0, 1]
    assert_frame_equal(dataset.part(1)["runs"], second.runs_df())
    whole = dataset.trace("s1")
    assert isinstance(whole, LoadedTrace)
    assert list(whole.runs_df()["run_id"].astype(str)) == [
        *first.runs_df()["run_id"].astype(str),
        *second.runs_df()["run_id"].astype(str),
    ]
    # What load_parquet reads of the folder is the same trace.
    assert_frame_equal(load_parquet(tmp_path, "s1").events_df(), whole.events_df())
    # A new Dataset on the folder numbers on after the committed parts.
    assert Dataset(tmp_path, "s1", ("results",)).new_number() == 2


async def test_the_writers_table_carries_per_run_columns_and_committed_tasks_is_one_call(tmp_path: Path) -> None:
    dataset = Dataset(tmp_path, "s1", ("results",))
    trace = await new_part(dataset, 3, 1)
    failed = frozenset({str(trace.runs_df()["run_id"].iloc[0])})
    dataset.commit(dataset.new_number(), trace, own(trace, "v2", 3, failed))
    stored = dataset.read_extra("results", SCHEMA)
    assert stored is not None
    assert set(stored["variant"]) == {"v2"} and set(stored["repeat"]) == {3} and set(stored["session"]) == {"s1"}
    runs = [str(run) for run in trace.runs_df()["run_id"]]
    assert dataset.committed_tasks() == {f"v2/{run}" for run in runs if run not in failed}
    # Another session of the same folder: its committed keys count too (a rerun skips them).
    other = Dataset(tmp_path, "s2", ("results",))
    assert other.committed_tasks() == dataset.committed_tasks()
    assert other.read_extra("results", SCHEMA, session="s2") is None
    assert dataset.part_rows(0, "results", ["variant", "repeat"]) == [("v2", 3)] * len(runs)


async def test_commit_refuses_a_part_without_the_writers_tables(tmp_path: Path) -> None:
    dataset = Dataset(tmp_path, "s1", ("attempts", "results"))
    trace = await new_part(dataset, 1, 1)
    with pytest.raises(ValueError, match=r"extra must hold the tables \('attempts', 'results'\)"):
        dataset.commit(dataset.new_number(), trace, own(trace))
    assert dataset.committed() == [] and not list(tmp_path.rglob("*.parquet"))


async def test_a_part_is_read_once_whatever_the_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dataset = Dataset(tmp_path, "s1", ("results",))
    for seed in (1, 2):
        trace = await new_part(dataset, 2, seed)
        dataset.commit(dataset.new_number(), trace, own(trace))
    reads: list[tuple[int, str]] = []
    real = nbagent.trace.dataset.read_part

    def counted(part: Any, table: str, *args: Any) -> pd.DataFrame:
        reads.append((part.number, table))
        return real(part, table, *args)

    monkeypatch.setattr(nbagent.trace.dataset, "read_part", counted)
    first = dataset.trace("s1").runs_df()
    once = len(reads)
    assert {number for number, _ in reads} == {0, 1}
    live = await new_part(dataset, 2, 3)  # a part in memory, not written yet
    again = dataset.trace("s1", {2: live}).runs_df()
    assert len(reads) == once  # the written parts were not read again
    assert len(again) == len(first) + len(live.runs_df())
    dataset.commit(2, live, own(live))
    assert len(dataset.trace("s1").runs_df()) == len(again)
    assert {number for number, _ in reads[once:]} == {2}  # only the new part


async def test_lazy_follows_the_new_parts_alone(tmp_path: Path) -> None:
    dataset = Dataset(tmp_path, "s1", ("results",))
    trace = await new_part(dataset, 2, 1)
    dataset.commit(dataset.new_number(), trace, own(trace))
    lazy = dataset.lazy()
    assert lazy.parts == [("s1", 0)] and len(lazy.runs_df()) == len(trace.runs_df())
    later = await new_part(dataset, 3, 2)
    dataset.commit(dataset.new_number(), later, own(later))
    assert dataset.lazy() is lazy and lazy.parts == [("s1", 0), ("s1", 1)]
    assert lazy.refresh().parts == []  # nothing new since: no part listed twice
    run = str(later.runs_df()["run_id"].iloc[-1])
    assert_frame_equal(
        lazy.run(run).runs_df().reset_index(drop=True),
        later.runs_df()[later.runs_df()["run_id"].astype(str) == run].reset_index(drop=True),
        check_categorical=False,
    )


async def test_a_part_a_killed_writer_left_is_never_listed_and_is_removed_on_open(tmp_path: Path) -> None:
    dataset = Dataset(tmp_path, "s1", ("results",))
    trace = await new_part(dataset, 2, 1)
    dataset.commit(dataset.new_number(), trace, own(trace))
    pending = pending_folder(tmp_path, "s1", 1)  # killed before its first rename: only the pending folder
    (pending / "runs" / "session=s1").mkdir(parents=True)
    (pending / "runs" / "session=s1" / "part-1.parquet").write_bytes(b"PAR1")
    assert dataset.committed() == [0]
    reopened = Dataset(tmp_path, "s1", ("results",))
    assert reopened.repaired == ["part 1 of session s1: removed"] and not pending.exists()
    assert reopened.new_number() == 1


@dataclasses.dataclass
class InMemory:
    """A writer's part in memory (:class:`~nbagent.trace.dataset.MemoryPart`)."""

    number: int
    trace: Trace
    run_rows: list[tuple[Any, ...]] = dataclasses.field(default_factory=list)


COLUMNS = ["run_id", "task_key", "variant", "repeat", "status", "session"]


def rows_of(trace: Trace, variant: str) -> list[tuple[Any, ...]]:
    return [(str(run), f"{variant}/{run}", variant, 0, "ok", "s1") for run in trace.runs_df()["run_id"]]


def with_rows(runs: pd.DataFrame, rows: list[tuple[Any, ...]]) -> pd.DataFrame:
    variants = {row[0]: row[2] for row in rows}
    return runs.assign(variant=[variants.get(str(run)) for run in runs["run_id"]])


async def test_a_follower_gives_the_new_parts_alone_and_reads_a_committed_part_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    dataset = Dataset(tmp_path, "s1", ("results",))
    before = await new_part(dataset, 2, 1)
    dataset.commit(dataset.new_number(), before, own(before))
    memory: list[InMemory] = []
    follower = DatasetFollower(dataset, lambda: memory, "results", COLUMNS, with_rows)
    reads: list[int] = []
    real = Dataset.part_tables

    def counted(self: Dataset, number: int, columns: Any) -> dict[str, pd.DataFrame]:
        reads.append(number)
        return real(self, number, columns)

    monkeypatch.setattr(Dataset, "part_tables", counted)
    got = follower.changes()
    assert got is not None and len(got[0]) == 0 and reads == []  # what was there is the whole read before
    # A part in memory: its runs, with the writer's rows beside them.
    live = InMemory(dataset.new_number(), await new_part(dataset, 3, 2))
    live.run_rows += rows_of(live.trace, "v1")
    memory.append(live)
    got = follower.changes()
    assert got is not None
    assert sorted(got[0]["run_id"].astype(str)) == sorted(live.trace.runs_df()["run_id"].astype(str))
    assert set(got[0]["variant"]) == {"v1"} and reads == []
    # Committed: taken from memory, never read from the folder.
    dataset.commit(live.number, live.trace, own(live.trace, "v1"))
    memory.clear()
    follower.changes()
    assert reads == []
    # A part committed before it was seen in memory: read once, its writer's rows from its file.
    unseen = await new_part(dataset, 2, 3)
    dataset.commit(dataset.new_number(), unseen, own(unseen, "v2"))
    got = follower.changes()
    assert got is not None and reads == [2]
    assert sorted(got[0]["run_id"].astype(str)) == sorted(unseen.runs_df()["run_id"].astype(str))
    assert set(got[0]["variant"]) == {"v2"}
    got = follower.changes()
    assert got is not None and len(got[0]) == 0 and reads == [2]  # nothing new: nothing read


def test_a_session_that_cannot_name_a_folder_is_refused_before_anything_is_made(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"Dataset: session: a session \(trace\) id must be letters"):
        Dataset(tmp_path / "out", "../up", ("results",))
    assert not (tmp_path / "out").exists()


async def test_each_trace_kind_gives_its_follower_and_reading_code(tmp_path: Path) -> None:
    """What the explorer asks instead of a trace's kind: a live trace's rows followed on the loop, a
    dataset's parts off it, a loaded trace not followed; a dataset's code reads it again lazily."""
    trace = Trace(trace_id="s1")
    await record_runs(trace, 1, 2)
    trace.to_parquet(tmp_path)
    live, lazy = trace.follower(), load_parquet(tmp_path, lazy=True)
    assert live is not None and not live.reads_files
    assert load_parquet(tmp_path).follower() is None
    parts = lazy.follower()
    assert parts is not None and parts.reads_files
    seen = parts.state()
    await record_runs(trace, 2, 2)
    assert live.state() != (trace.store.epoch, 0)
    got = live.changes()
    assert got is not None and len(got[0]) == 2  # the two new runs alone
    trace.to_parquet(tmp_path)
    assert parts.state() != seen
    got = parts.changes()
    assert got is not None and len(got[0]) == 2 and len(lazy.runs_df()) == 4
    opening, tools = lazy.reading_code("trace")
    assert opening == f"import nbagent\ntrace = nbagent.load_parquet({str(tmp_path)!r}, lazy=True)\n"
    assert tools.startswith('trace.table("tool_calls", [')
    assert trace.reading_code("t") == ("", "t.tool_calls_df()")


async def test_a_part_another_writer_is_writing_is_left_alone_by_a_dataset_opened_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two writers of one folder (two processes, machines or Spark executors): opening the dataset repairs
    what killed writers left, never a part a live writer holds (it would remove or finish it under it)."""
    import threading

    import nbagent.trace.parquet as parquet

    writer = Dataset(tmp_path, "s1", ("results",))
    trace = await new_part(writer, 2, 1)
    placed, go_on = threading.Event(), threading.Event()
    move = parquet._move_into_place  # noqa: SLF001 (the writer held between two of its renames)

    def held(pending: Path, root: Path, table: str, session: str, number: int) -> None:
        move(pending, root, table, session, number)
        if table == "events":
            placed.set()
            go_on.wait(300)  # the test lets it go on (a hang guard: the test fails first)

    monkeypatch.setattr(parquet, "_move_into_place", held)
    number = writer.new_number()
    writing = threading.Thread(target=writer.commit, args=(number, trace, own(trace)))
    writing.start()
    try:
        waited(placed, "the writer to put its events file in place")
        other = Dataset(tmp_path, "s2", ("results",))  # a second writer opens the folder meanwhile
        assert other.repaired == [] and pending_folder(tmp_path, "s1", number).exists()
        assert writer.committed() == []
    finally:
        go_on.set()
        joined(writing, "the writer's commit")
    assert writer.committed() == [number] and not pending_folder(tmp_path, "s1", number).exists()
    assert writer.committed_tasks() == {f"base/{run}" for run in trace.runs_df()["run_id"]}
    assert not list(tmp_path.glob(".lock-*"))  # the writer's lock file goes with its part


async def test_a_part_whose_writer_died_among_its_renames_is_finished_on_open(tmp_path: Path) -> None:
    """A writer killed between two renames holds no lock any more: the next open finishes its part."""
    import pyarrow.parquet as pq

    writer = Dataset(tmp_path, "s1", ("results",))
    trace = await new_part(writer, 2, 1)
    writer.commit(writer.new_number(), trace, own(trace))
    # part 1 as a killed writer leaves it: every file written, events alone moved into place
    pending = pending_folder(tmp_path, "s1", 1)
    for table in ("events", "runs", "results"):
        source = tmp_path / table / "session=s1" / "part-0.parquet"
        target = (tmp_path if table == "events" else pending) / table / "session=s1" / "part-1.parquet"
        target.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(pq.read_table(source).replace_schema_metadata(pq.read_schema(source).metadata), target)
    for table in ("llm_calls", "tool_calls", "context_logs", "snapshots"):
        source = tmp_path / table / "session=s1" / "part-0.parquet"
        target = pending / table / "session=s1" / "part-1.parquet"
        target.parent.mkdir(parents=True)
        target.write_bytes(source.read_bytes())
    assert writer.committed() == [0]
    reopened = Dataset(tmp_path, "s2", ("results",))
    assert reopened.repaired == ["part 1 of session s1: finished"] and not pending.exists()
    assert writer.committed() == [0, 1]


async def test_a_lock_file_left_by_a_writer_killed_after_its_part_was_done_is_removed_on_open(tmp_path: Path) -> None:
    """A writer killed between removing its pending folder and its lock file (another of its process's
    threads died mid-part: CI saw one from Spark) left a lock file nobody holds: the next open removes
    it. A lock file a live writer holds (it has locked it, its pending folder not made yet) stays."""
    import fcntl

    writer = Dataset(tmp_path, "s1", ("results",))
    trace = await new_part(writer, 2, 1)
    writer.commit(writer.new_number(), trace, own(trace))
    (tmp_path / ".lock-s1-part-0").touch()  # as the killed writer left it: its part committed
    with open(tmp_path / ".lock-s1-part-1", "a+b") as held:  # a live writer's, about to make its folder
        fcntl.flock(held.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        reopened = Dataset(tmp_path, "s2", ("results",))
        assert reopened.repaired == ["part 0 of session s1: its writer's lock file removed"]
        assert [path.name for path in tmp_path.glob(".lock-*")] == [".lock-s1-part-1"]
    assert writer.committed() == [0]


def test_a_lock_whose_file_was_removed_between_open_and_lock_is_taken_on_the_file_made_anew(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Locking opens the lock file, then locks it: a holder finishing meanwhile removes the file, and a
    lock on the removed file would exclude nobody. The lock is taken on the file the path names."""
    import fcntl

    import nbagent.trace.parquet as parquet

    path = tmp_path / ".lock-s1-part-0"
    flock = fcntl.flock
    locked: list[int] = []  # the link counts of the files locked

    def late(fd: int, operation: int) -> None:
        if not locked:  # the first lock: the holder removes the file just before it
            path.unlink()
        flock(fd, operation)
        locked.append(os.fstat(fd).st_nlink)

    monkeypatch.setattr(fcntl, "flock", late)
    with parquet._locked(path) as taken:  # noqa: SLF001 (the lock itself)
        assert taken and path.exists() and locked == [0, 1]  # the removed file, then the one made anew
    assert not path.exists()


async def test_keys_of_the_sessions_a_prefix_names_are_their_committed_keys_whatever_the_status(
    tmp_path: Path,
) -> None:
    first = Dataset(tmp_path, "job-p1-a0", ("results",))
    trace = await new_part(first, 3, 1)
    runs = [str(run) for run in trace.runs_df()["run_id"]]
    first.commit(first.new_number(), trace, own(trace, failed=frozenset(runs[:1])))
    other = Dataset(tmp_path, "job-p10-a0", ("results",))  # another partition: not p1's
    other_trace = await new_part(other, 2, 2)
    other.commit(other.new_number(), other_trace, own(other_trace))
    pending = pending_folder(tmp_path, "job-p1-a0", 1)  # a part not committed: not counted
    (pending / "results" / "session=job-p1-a0").mkdir(parents=True)
    assert first.keys_of("job-p1-") == {f"base/{run}" for run in runs}
    assert first.committed_tasks() >= {f"base/{run}" for run in runs[1:]}
    assert f"base/{runs[0]}" not in first.committed_tasks()  # failed: a rerun runs it; keys_of counts it
    assert first.keys_of("job-p2-") == set()


async def test_to_parquet_and_a_batch_output_write_one_way(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``trace.to_parquet`` writes through the Batch's ``output=`` writer (DatasetWriter.commit_tables):
    the same runs written both ways are read by the same readers, eager and lazy, with the same frames."""
    written: list[tuple[str, int]] = []
    real = DatasetWriter.commit_tables

    def counted(self: DatasetWriter, number: int, frames: Any, extra: Any) -> None:
        written.append((type(self).__name__, number))
        real(self, number, frames, extra)

    monkeypatch.setattr(DatasetWriter, "commit_tables", counted)

    def make_agent(task: object) -> AssistantAgent:
        return AssistantAgent("doubler", ReplayChatCompletionClient([ASK, f"{task}: 42"]), tools=[double])

    tasks = [f"task {i}" for i in range(5)]
    batch = await Batch(make_agent, tasks, progress=None, output=tmp_path / "batch", part_size=2).run()
    assert [kind for kind, _ in written] == ["Dataset"] * 3  # 5 tasks in parts of 2
    batch.trace.to_parquet(tmp_path / "export")
    assert written[-1] == ("DatasetWriter", 0)
    for lazy in (False, True):
        from_batch = load_parquet(tmp_path / "batch", lazy=lazy)
        exported = load_parquet(tmp_path / "export", lazy=lazy)
        assert len(from_batch.runs_df()) == 5
        for name in ("runs_df", "events_df", "llm_calls_df", "tool_calls_df"):
            assert_frame_equal(getattr(exported, name)(), getattr(from_batch, name)(), obj=name)
        last = str(from_batch.runs_df()["run_id"].iloc[-1])
        assert_frame_equal(exported.context_df(last), from_batch.context_df(last))
