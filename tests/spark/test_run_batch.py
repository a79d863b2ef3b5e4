"""nbagent.spark.run_batch in local mode: each partition a Batch into one dataset, read back by every
reader; resumed exactly; a killed executor's retried partition commits each task once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

import nbagent
from nbagent import Batch
from nbagent.spark import RESULT_SCHEMA, run_batch

from .agents import dies_once, local_weather, raises_once, weather

pytestmark = [pytest.mark.slow, pytest.mark.spark]

TABLES = ("results", "attempts", "events", "llm_calls", "tool_calls", "runs", "context_logs", "snapshots")


def cities(count: int, **columns: list[Any]) -> pd.DataFrame:
    return pd.DataFrame({"task_id": list(range(count)), "task": [f"city {i}" for i in range(count)], **columns})


def run_ids(folder: Path, table: str) -> list[str]:
    """Every run id of ``table``'s files (duplicates kept)."""
    import pyarrow.dataset as ds

    return [str(run) for run in ds.dataset(folder / table, partitioning="hive").to_table(["run_id"]).column(0).to_pylist()]


def test_200_tasks_over_4_partitions_equal_a_local_batch_and_every_reader_reads_them(
    spark: Any, tmp_path: Path
) -> None:
    tasks = cities(200)
    frame = spark.createDataFrame(tasks).repartition(4)
    got = run_batch(frame, weather, tmp_path, concurrency=4, part_size=16, timeout=60)
    assert [f"{f.name} {f.dataType.simpleString()}" for f in got.schema.fields] == [
        "task_id bigint",
        *(field.replace(" long", " bigint") for field in RESULT_SCHEMA.split(", ")),
    ]
    rows = got.toPandas().sort_values("task_id").reset_index(drop=True)
    assert list(rows["task_id"]) == list(range(200)) and set(rows["status"]) == {"ok"}
    sessions = set(rows["session"])
    assert len(sessions) == 4 and all(s.startswith("spark-") and "-a0-" in s for s in sessions)
    # The same tasks in a local Batch: the same answers, calls and tokens per task.
    local = Batch(local_weather, tasks, key="task_id", concurrency=4, progress=None).run_sync().results
    columns = ["status", "stop_reason", "prompt_tokens", "completion_tokens", "llm_calls", "tool_calls", "attempts"]
    expected = local[columns].reset_index(drop=True).astype(object)
    pd.testing.assert_frame_equal(rows[columns].astype(object), expected, check_dtype=False)
    assert list(rows["output"]) == list(local["answer"])
    # Each run once in every table; nbagent, Spark, DuckDB and polars read the dataset as written.
    runs = set(rows["run_id"])
    for table in ("runs", "attempts", "results"):
        assert sorted(run_ids(tmp_path, table)) == sorted(runs), table
    loaded = nbagent.load_parquet(tmp_path)
    assert set(loaded.runs_df()["run_id"].astype(str)) == runs and len(loaded.tool_calls_df()) == 200
    lazy = nbagent.load_parquet(tmp_path, lazy=True)  # what nbagent.explore(folder) reads
    one = rows["run_id"].iloc[7]
    calls = lazy.run(one).tool_calls_df()
    assert list(calls.loc[calls["run_id"].astype(str) == one, "arguments"]) == [{"city": "city 7"}]
    assert spark.read.parquet(str(tmp_path / "runs")).count() == 200
    assert spark.read.parquet(str(tmp_path / "tool_calls")).select("session").distinct().count() == 4
    assert duckdb.sql(
        f"SELECT count(*), count(DISTINCT run_id) FROM read_parquet('{tmp_path}/llm_calls/**/*.parquet', "
        "hive_partitioning=true)"
    ).fetchall() == [(400, 200)]
    polars = pytest.importorskip("polars")
    events = polars.scan_parquet(f"{tmp_path}/events/**/*.parquet", hive_partitioning=True)
    assert events.select(polars.col("session").n_unique()).collect().item() == 4
    # Run again: nothing left to run; the rows are the committed ones.
    again = run_batch(frame, weather, tmp_path, concurrency=4).toPandas().sort_values("task_id")
    assert list(again["run_id"]) == list(rows["run_id"]) and set(again["session"]) == sessions
    assert sorted(run_ids(tmp_path, "runs")) == sorted(runs)


def test_a_second_call_runs_only_the_task_that_failed_the_first_time(spark: Any, tmp_path: Path) -> None:
    marker = tmp_path / "fail-once"
    tasks = cities(12, fail=["" if i != 5 else str(marker) for i in range(12)])
    frame = spark.createDataFrame(tasks).repartition(2)
    output = tmp_path / "out"
    first = run_batch(frame, raises_once, output, concurrency=2).toPandas().set_index("task_id").sort_index()
    assert first.loc[5, "status"] == "error" and "the factory failed on 5" in first.loc[5, "error"]
    assert set(first.drop(index=5)["status"]) == {"ok"}
    second = run_batch(frame, raises_once, output, concurrency=2).toPandas().set_index("task_id").sort_index()
    assert set(second["status"]) == {"ok"} and len(second) == 12
    assert second.loc[5, "session"] not in set(first["session"])  # run by the second job...
    assert (second.drop(index=5)["run_id"] == first.drop(index=5)["run_id"]).all()  # ...and only it
    stored = pd.read_parquet(output / "results")
    assert sorted(stored["task_key"].value_counts().items())[:1] == [("0", 1)]
    assert stored["task_key"].value_counts()["5"] == 2  # its failed row stays, as a Batch's resume keeps it


@pytest.mark.parametrize("die_at", ["factory", "rename"])
def test_an_executor_killed_mid_part_is_retried_and_each_task_is_committed_once(
    spark: Any, tmp_path: Path, die_at: str
) -> None:
    marker = tmp_path / "die-once"
    tasks = cities(24, die=["" if i != 13 else str(marker) for i in range(24)], die_at=[die_at] * 24)
    frame = spark.createDataFrame(tasks).repartition(2)
    output = tmp_path / "out"
    got = run_batch(frame, dies_once, output, concurrency=1, part_size=3).toPandas()
    assert marker.exists() and sorted(got["task_id"]) == list(range(24)) and set(got["status"]) == {"ok"}
    sessions = got["session"].unique()
    retried = [s for s in sessions if "-a1-" in s]
    assert len(retried) == 1, sessions  # the partition of task 13 ran again
    runs = sorted(got["run_id"])
    for table in ("results", "attempts", "runs"):
        assert sorted(run_ids(output, table)) == runs, table  # each task's one run, once in every table
    for table in ("events", "llm_calls", "tool_calls"):
        assert set(run_ids(output, table)) == set(runs), table
    stored = pd.read_parquet(output / "results")
    assert stored["task_key"].value_counts().max() == 1
    dead = [str(path.name) for path in (output / "results").glob("session=*-a0-*")]
    assert len(dead) == 2  # the killed attempt's committed parts count: its tasks were not run again
    assert not list(output.glob(".pending-*")) and not list(output.glob(".lock-*"))
    loaded = nbagent.load_parquet(output)
    assert sorted(loaded.runs_df()["run_id"].astype(str)) == runs


def test_clear_errors_before_anything_runs(spark: Any, tmp_path: Path) -> None:
    frame = spark.createDataFrame(cities(3))
    with pytest.raises(ValueError, match=r"run_batch: tasks has no 'task_id' column \(its columns: id, task\)"):
        run_batch(frame.withColumnRenamed("task_id", "id"), weather, tmp_path)
    with pytest.raises(ValueError, match=r"tasks has no 'task' column"):
        run_batch(frame.drop("task"), weather, tmp_path)
    with pytest.raises(TypeError, match=r"task_id column must be of type string or an integer, not double"):
        run_batch(frame.withColumn("task_id", frame["task_id"].cast("double")), weather, tmp_path)
    with pytest.raises(TypeError, match=r"run_batch: tasks must be a Spark DataFrame"):
        run_batch(cities(3), weather, tmp_path)
    lock = threading.Lock()
    with pytest.raises(TypeError, match=r"run_batch: agent_factory cannot be pickled, so Spark cannot send it"):
        run_batch(frame, lambda row: weather(row) if lock else None, tmp_path)
    twice = spark.createDataFrame(pd.DataFrame({"task_id": ["a", "b", "a"], "task": ["x", "y", "z"]}))
    with pytest.raises(ValueError, match=r"task_id must be unique and not null .*'a' \(2 rows\)"):
        run_batch(twice, weather, tmp_path)
    with pytest.raises(ValueError, match=r"concurrency must be an int greater than or equal to 1, got 0"):
        run_batch(frame, weather, tmp_path, concurrency=0)
    with pytest.raises(ValueError, match=r"run_batch: requests_per_second must be"):
        run_batch(frame, weather, tmp_path, requests_per_second=0)
    assert not list(tmp_path.iterdir())  # nothing was written
