"""Datasets are written whole or not at all: a writer SIGKILLed at each file operation of a write (each
open, write, rename, unlink and mkdir under the dataset, see ``kill_writer``) leaves a dataset DuckDB,
pandas and ``load_parquet`` read (an unfinished part skipped and reported), and the next write (a
Batch's resume) finishes or removes the part: no run is lost whole, none is counted twice.

Each test kills the writer at the boundaries (the first and last operation, the first and last rename and
the operation after each) and at ``SAMPLE`` more points drawn with a fixed seed; ``NBAGENT_SOAK=1`` (``make
soak``) kills it at every operation."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from nbagent import AssistantAgent, Batch, ReplayChatCompletionClient, Trace, load_parquet
from nbagent.trace import committed_files, duckdb_source
from tests.batch.helpers import Factory

from .helpers import calls, text

REPO = Path(__file__).resolve().parents[2]
TRACE_TABLES = ("events", "llm_calls", "tool_calls", "runs", "context_logs", "snapshots")
BATCH_TABLES = (*TRACE_TABLES, "attempts", "results")
SOAK = os.environ.get("NBAGENT_SOAK", "") not in ("", "0")
SAMPLE = 6
"""The kill points drawn besides the boundaries (every point under ``NBAGENT_SOAK=1``)."""


def kill_points(ops: list[str]) -> list[int]:
    """The operations (numbered from 1) to kill the writer at: every one under ``NBAGENT_SOAK=1``; else the
    boundaries and ``SAMPLE`` others drawn with a fixed seed (the same points in every run)."""
    every = set(range(1, len(ops) + 1))
    if SOAK:
        return sorted(every)
    renames = [number for number, op in enumerate(ops, 1) if op.startswith("replace")]
    boundaries = {1, len(ops), renames[0], renames[0] + 1, renames[-1], renames[-1] + 1} & every
    rest = sorted(every - boundaries)
    return sorted(boundaries | set(random.Random(45).sample(rest, min(SAMPLE, len(rest)))))


def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


async def two_runs(trace_id: str) -> Trace:
    """A trace (id ``trace_id``) of two runs, each a tool call then an answer."""
    script = [calls(("c1", "lookup", '{"city": "Oslo"}')), text("sunny"), calls(("c2", "lookup", '{"city": "Rome"}'))]
    agent = AssistantAgent(
        "w", ReplayChatCompletionClient([*script, text("warm")]), tools=[lookup], reflect_on_tool_use=True
    )
    agent.trace.trace_id = trace_id
    await agent.run(task="Oslo?")
    await agent.run(task="Rome?")
    return agent.trace


class Writer:
    """``kill_writer`` in a process of its own: ``write(root, kill_at)`` forks one writer there."""

    def __init__(self, mode: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), str(REPO)])}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.trace.kill_writer", mode],
            cwd=REPO, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )  # fmt: skip

    def write(self, root: Path, kill_at: int) -> tuple[int, list[str]]:
        """The writer's exit code (-9: killed) and what it printed."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(f"{kill_at} {root}\n")
        self.process.stdin.flush()
        lines = []
        for line in self.process.stdout:
            if line.startswith("STATUS "):
                return int(line.split()[1]), lines
            lines.append(line.rstrip("\n"))
        raise AssertionError(f"the writer process ended: {lines}")

    def operations(self, root: Path) -> list[str]:
        code, lines = self.write(root, 0)
        assert code == 0, lines
        return [line.split(" ", 2)[2] for line in lines if line.startswith("OPS ")]

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


@pytest.fixture
def trace_writer() -> Iterator[Writer]:
    writer = Writer("trace")
    yield writer
    writer.close()


@pytest.fixture
def batch_writer() -> Iterator[Writer]:
    writer = Writer("batch")
    yield writer
    writer.close()


def duck_runs(root: Path, table: str) -> list[str]:
    if not (root / table).is_dir():
        return []
    rows = duckdb.sql(f"SELECT run_id FROM read_parquet('{root}/{table}/**/*.parquet', hive_partitioning=true)")
    return [str(run) for (run,) in rows.fetchall()]


def read_everywhere(root: Path, tables: tuple[str, ...]) -> tuple[pd.DataFrame, list[str]]:
    """Read the dataset with DuckDB, pandas and load_parquet (none may fail); check that a run counted
    in runs/ has its rows in the other tables (DuckDB) and that load_parquet has each run once, whole;
    and that the committed files (``committed_files``, read by pandas and by DuckDB through
    ``duckdb_source``) hold those runs, whole, and no row of another run. load_parquet's runs and its
    warnings."""
    committed: dict[str, list[str]] = {}
    for table in tables:
        if (root / table).is_dir():
            duckdb.sql(f"SELECT count(*) FROM read_parquet('{root}/{table}/**/*.parquet', hive_partitioning=true)")
            pd.read_parquet(root / table)
            files = committed_files(root, table)
            if files and table in ("runs", "events", "llm_calls", "tool_calls"):
                from_pandas = pd.read_parquet(files)["run_id"].astype(str).tolist()
                rows = duckdb.sql(f"SELECT run_id FROM {duckdb_source(root, table)}").fetchall()
                assert sorted(from_pandas) == sorted(str(run) for (run,) in rows), table
                committed[table] = from_pandas
    whole = committed.get("runs", [])
    assert len(whole) == len(set(whole))
    for table in ("events", "llm_calls"):  # every committed run has its rows; none of another run
        assert set(committed.get(table, [])) == set(whole), table
    assert set(committed.get("tool_calls", [])) <= set(whole)
    ducked = duck_runs(root, "runs")
    assert len(ducked) == len(set(ducked))
    assert set(ducked) <= set(duck_runs(root, "events")) and set(ducked) <= set(duck_runs(root, "llm_calls"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        loaded = load_parquet(root) if (root / "runs").is_dir() else None
    if loaded is None:
        return pd.DataFrame({"run_id": []}), []
    runs = loaded.runs_df()
    ids = runs["run_id"].astype(str).tolist()
    assert len(ids) == len(set(ids))
    for frame in (loaded.events_df(), loaded.llm_calls_df(), loaded.tool_calls_df()):
        assert set(frame["run_id"].astype(str)) == set(ids)
    assert sorted(ids) == sorted(whole)  # the committed parts are the parts load_parquet reads
    # What load_parquet said; not a ResourceWarning of another test's object collected meanwhile (under
    # xdist a worker also runs kernel tests whose zmq sockets may be garbage-collected here).
    return runs, [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)]


def pending(root: Path) -> list[Path]:
    return list(root.glob(".pending-*"))


@pytest.mark.killpoints
@pytest.mark.timeout(1200)  # some 30 kills under NBAGENT_SOAK, each read by three readers: minutes when loaded
async def test_a_trace_part_killed_at_file_operations(tmp_path: Path, trace_writer: Writer) -> None:
    first = await two_runs("s1")
    first.to_parquet(tmp_path / "count")  # the operations of a second part of a session
    shutil.copytree(tmp_path / "count", tmp_path / "first")  # the session's first part, copied before each kill
    ops = trace_writer.operations(tmp_path / "count")
    assert sum(op.startswith("replace") for op in ops) == 6 and len(ops) >= 18  # 6 tables: open, write, replace
    for kill_at in kill_points(ops):
        root = tmp_path / f"k{kill_at}"
        shutil.copytree(tmp_path / "first", root)
        code, said = trace_writer.write(root, kill_at)
        assert code == -9, (kill_at, ops[kill_at - 1], said)
        runs, said = read_everywhere(root, TRACE_TABLES)
        renamed = sum(op.startswith("replace") for op in ops[: kill_at - 1])
        # Before the first rename: the part is not there; among the renames: skipped and reported.
        assert len(runs) == (4 if renamed == 6 else 2), (kill_at, ops[kill_at - 1])
        assert bool(said) == (0 < renamed < 6), (kill_at, said)
        if said:
            assert "unfinished" in said[0] and "'s1'" in said[0]
        # The next write to the session finishes a part all of whose files were written, or removes it.
        Trace(trace_id="s1").to_parquet(root)
        runs, said = read_everywhere(root, TRACE_TABLES)
        assert not said and not pending(root)
        assert len(runs) == (4 if renamed else 2), (kill_at, ops[kill_at - 1])


@pytest.mark.killpoints
@pytest.mark.timeout(1800)  # some 50 kills under NBAGENT_SOAK, each read, resumed and read again
async def test_a_batch_killed_at_file_operations_resumes_with_each_task_once(
    tmp_path: Path, batch_writer: Writer
) -> None:
    ops = batch_writer.operations(tmp_path / "count")
    assert sum(op.startswith("replace") for op in ops) == 8
    tasks = ["Oslo", "Lima", "Pune"]
    for kill_at in kill_points(ops):
        root = tmp_path / f"k{kill_at}"
        code, said = batch_writer.write(root, kill_at)
        assert code == -9, (kill_at, ops[kill_at - 1], said)
        read_everywhere(root, BATCH_TABLES)
        # The resume: a part every file of which was written is finished (its tasks not run again).
        renamed = sum(op.startswith("replace") for op in ops[: kill_at - 1])
        factory = Factory()
        batch = await Batch(factory, tasks, output=root, progress=None).run()
        assert len(factory.calls) == (0 if renamed else 3), (kill_at, ops[kill_at - 1])
        assert list(batch.results["status"]) == ["ok"] * 3
        runs, said = read_everywhere(root, BATCH_TABLES)
        assert not said and not pending(root) and not list(root.glob(".writing-*"))
        assert len(runs) == 3
        results = duckdb.sql(f"SELECT task, status FROM read_parquet('{root}/results/**/*.parquet') ORDER BY task")
        assert results.fetchall() == [(task, "ok") for task in sorted(tasks)]
        assert len(duck_runs(root, "runs")) == 3 and len(duck_runs(root, "attempts")) == 3


async def test_scratch_folders_of_earlier_versions_are_removed_on_resume(tmp_path: Path) -> None:
    scratch = tmp_path / ".writing-abc" / "trace" / "events" / "session=x"
    scratch.mkdir(parents=True)
    (scratch / "part-0.parquet").write_bytes(b"PAR1")
    await Batch(Factory(), ["Oslo"], output=tmp_path, progress=None).run()
    assert not list(tmp_path.glob(".writing-*"))


@pytest.mark.parametrize("bad", ["a b", "x" * 300])
async def test_a_stray_session_folder_is_skipped_with_a_warning(tmp_path: Path, bad: str) -> None:
    (await two_runs("s1")).to_parquet(tmp_path)
    try:
        (tmp_path / "runs" / f"session={bad}").mkdir()
    except OSError:  # a name too long for the file system: nothing to skip
        return
    with pytest.warns(UserWarning, match="skipped"):
        loaded = load_parquet(tmp_path)
    assert len(loaded.runs_df()) == 2 and loaded.sessions == ["s1"]


async def test_committed_files_in_a_folder_whose_name_has_a_quote(tmp_path: Path) -> None:
    root = tmp_path / "it's"
    with pytest.raises(FileNotFoundError, match="no committed part of table 'runs'"):
        duckdb_source(root, "runs")
    (await two_runs("s1")).to_parquet(root)
    (await two_runs("s2")).to_parquet(root)
    assert [path.relative_to(root).as_posix() for path in committed_files(root, "tool_calls")] == [
        "tool_calls/session=s1/part-0.parquet",
        "tool_calls/session=s2/part-0.parquet",
    ]
    rows = duckdb.sql(f"SELECT session, count(*) FROM {duckdb_source(root, 'runs')} GROUP BY ALL ORDER BY 1")
    assert rows.fetchall() == [("s1", 2), ("s2", 2)]
    assert committed_files(root, "runs", session="s2") == [root / "runs" / "session=s2" / "part-0.parquet"]


def test_kill_points_are_the_boundaries_and_a_fixed_sample() -> None:
    ops = ["mkdir a", *[f"{kind} t{i}" for i in range(6) for kind in ("open", "write", "replace")], "unlink a"]
    points = kill_points(ops)
    if SOAK:
        assert points == list(range(1, len(ops) + 1))
        return
    assert points == kill_points(ops) and len(points) == 5 + SAMPLE  # the same points in every run
    assert {1, 4, 5, 19, 20} <= set(points)  # the first and last operation, each side of the first and last rename
