"""nbagent.spark.run_batch in local mode: each partition a Batch into one dataset, read back by every
reader; resumed exactly; a killed executor's retried partition commits each task once."""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest

import nbagent
from nbagent import Batch
from nbagent.spark import RESULT_SCHEMA, run_batch
from tests.models.chat_server import ChatServer, Reply

from ..frames import assert_frame_equal
from .agents import dies_once, local_weather, raises_once, served, weather

pytestmark = [pytest.mark.slow, pytest.mark.spark]

TABLES = ("results", "attempts", "events", "llm_calls", "tool_calls", "runs", "context_logs", "snapshots")


def cities(count: int, **columns: list[Any]) -> pd.DataFrame:
    return pd.DataFrame({"task_id": list(range(count)), "task": [f"city {i}" for i in range(count)], **columns})


def run_ids(folder: Path, table: str) -> list[str]:
    """Every run id of ``table``'s files (duplicates kept)."""
    import pyarrow.dataset as ds

    return [
        str(run) for run in ds.dataset(folder / table, partitioning="hive").to_table(["run_id"]).column(0).to_pylist()
    ]


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
    assert_frame_equal(rows[columns].astype(object), expected, check_dtype=False)
    assert list(rows["output"]) == list(local["answer"])
    # Each run once in every table; nbagent, Spark, DuckDB and polars read the dataset as written.
    runs = set(rows["run_id"])
    for table in ("runs", "attempts", "results"):
        assert sorted(run_ids(tmp_path, table)) == sorted(runs), table
    loaded = nbagent.load_parquet(tmp_path)
    assert set(loaded.runs_df()["run_id"].astype(str)) == runs and len(loaded.tool_calls_df()) == 200
    assert len(nbagent.explore(tmp_path).table) == 200  # the explorer over the folder: every run once
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
    # the partition of task 13 ran again: a part lost in memory (factory) runs again in the second attempt;
    # killed at the rename of its partition's last part, the second attempt finishes that part and runs
    # nothing (where task 13 falls in its partition is Spark's shuffle order, which varies under load)
    assert len(retried) == 1 if die_at == "factory" else len(retried) <= 1, sessions
    runs = sorted(got["run_id"])
    for table in ("results", "attempts", "runs"):
        assert sorted(run_ids(output, table)) == runs, table  # each task's one run, once in every table
    for table in ("events", "llm_calls", "tool_calls"):
        assert set(run_ids(output, table)) == set(runs), table
    stored = pd.read_parquet(output / "results")
    assert stored["task_key"].value_counts().max() == 1
    dead = [str(path.name) for path in (output / "results").glob("session=*-a0-*")]
    # both first attempts committed parts (the killed one those it finished before task 13, none if it came
    # first in its partition: the order within a partition is Spark's), and none of their tasks ran again
    assert 1 <= len(dead) <= 2
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
    with pytest.raises(ValueError, match=r"output must be a folder path every executor reaches .*not a URL"):
        run_batch(frame, weather, "s3://bucket/evals")
    assert not list(tmp_path.iterdir())  # nothing was written
    empty = run_batch(frame.limit(0), weather, tmp_path / "empty")
    assert empty.count() == 0 and empty.schema.fields[0].dataType.simpleString() == "bigint"


class Arrivals:
    """The test server's responder: when each request came (its task's text) and how many were answered at once.

    With ``partition_of`` (each task's partition), a request is answered only once both partitions have sent
    one, or after ``hold`` seconds: the two executors' requests overlap in time however late one starts.
    """

    def __init__(self, delay: float, partition_of: dict[str, int], hold: float) -> None:
        self.delay = delay
        self.partition_of = partition_of
        self.hold = hold
        self.times: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        self.partitions: set[int] = set()
        self.both: asyncio.Event | None = None  # made in the server's loop, where the responder runs

    def __call__(self, body: Any) -> Reply:
        task = str(body["messages"][-1]["content"])
        with self.lock:
            self.times.append((time.monotonic(), task))
        if self.both is None:
            self.both = asyncio.Event()
        self.partitions.add(self.partition_of[task])
        if len(self.partitions) == 2:
            self.both.set()
        return Reply.text("done", delay=self.delay, usage=(5, 1), hold=self.both_sent)

    async def both_sent(self) -> None:
        """Wait until both partitions have sent a request, at most ``hold`` seconds."""
        assert self.both is not None
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.both.wait(), self.hold)

    def most_within(self, seconds: float) -> int:
        times = sorted(t for t, _ in self.times)
        return max(sum(1 for t in times if start <= t < start + seconds) for start in times)

    def span(self) -> float:
        times = [t for t, _ in self.times]
        return max(times) - min(times)

    def most_at_once(self) -> int:
        """Requests whose [arrival, arrival + delay) overlap (a request is answered no sooner than that)."""
        return self.most_within(self.delay)


@pytest.mark.parametrize("limit", ["rate", "in_flight"])
def test_the_job_wide_limit_holds_across_two_executors(spark: Any, tmp_path: Path, limit: str) -> None:
    """Two partitions run at once (local[2]), each a Batch of concurrency 6: the driver's limit bounds the
    requests the server sees, whichever executor sends them."""
    from pyspark.sql.functions import spark_partition_id

    # The rate limit lets any number wait: hold the first requests until the other executor's first comes (a
    # loaded machine can start one executor seconds after the other). Two in flight at most: holding both
    # slots would stop the other executor from sending, so hold them a few seconds only.
    hold = 60.0 if limit == "rate" else 3.0
    partition_of: dict[str, int] = {}
    arrivals = Arrivals(0.4 if limit == "in_flight" else 0.0, partition_of, hold)
    with ChatServer(responder=arrivals) as server:
        # By a hash of task_id: the same partitions at every read, whatever columns run_batch adds.
        frame = spark.createDataFrame(cities(16, base_url=[server.base_url] * 16)).repartition(2, "task_id")
        partition_of.update(
            (row["task"], row["p"]) for row in frame.select("task", spark_partition_id().alias("p")).collect()
        )
        assert set(partition_of.values()) == {0, 1}
        options: dict[str, Any] = {"requests_per_second": 4.0} if limit == "rate" else {"max_in_flight": 2}
        got = run_batch(frame, served, tmp_path, concurrency=6, timeout=120, **options).toPandas()
    assert set(got["status"]) == {"ok"} and len(arrivals.times) == 16
    assert set(got["prompt_tokens"]) == {5}
    partitions = got.set_index("task_id")["session"].str.extract(r"-p(\d+)-")[0].astype(int)
    assert {f"city {i}": p for i, p in partitions.items()} == partition_of  # the partitions the responder knew
    order = [partition_of[task] for _, task in sorted(arrivals.times)]
    if sum(a != b for a, b in zip(order, order[1:])) < 2:  # one executor's requests, then the other's
        pytest.skip(f"the two executors' requests did not overlap in time, held {hold} s: the limit was not exercised")
    if limit == "rate":
        # The driver grants one request every 0.25 s; they reach the server a little later, each by its own
        # delay (a loaded machine can hold some back and let them arrive together): 16 requests span 3.75 s
        # less that jitter (unlimited: all 16 within 0.6 s), so no 2 s window holds them all.
        assert arrivals.span() >= 15 / 4 - 1.0
        assert arrivals.most_within(2.0) < 16
    else:
        unlimited = 2 * 6
        assert arrivals.most_at_once() <= 2 < unlimited


def test_an_experiment_on_spark_has_the_results_and_comparisons_of_a_local_run(spark: Any, tmp_path: Path) -> None:
    from nbagent import Experiment, exact_match, load_experiment
    from nbagent.spark import run_experiment
    from tests.experiment.helpers import arithmetic, constant, right, tool_variant

    def build(output: Path) -> Experiment:
        variants = {"right": right, "tools": tool_variant}
        return Experiment(arithmetic(6), variants, [exact_match()], repeats=2, output=output, progress=None)

    local = build(tmp_path / "local").run_sync()
    on_spark = run_experiment(build(tmp_path / "spark"), spark, partitions=3)
    columns = ["variant", "task_id", "repeat", "status", "exact_match", "tokens", "tool_calls", "tool_errors", "error"]
    expected = local.results[columns].reset_index(drop=True)
    assert_frame_equal(on_spark.results[columns].reset_index(drop=True), expected)
    loaded = load_experiment(tmp_path / "spark")
    assert_frame_equal(loaded.results[columns].reset_index(drop=True), expected)
    figures = [c for c in local.summary().columns if "latency" not in c]
    assert_frame_equal(loaded.summary()[figures], local.summary()[figures])
    timed = ["latency_s"]  # wall time: the one figure of a run that differs from machine to machine
    compared = on_spark.compare("right", "tools").stats
    assert "exact_match" in compared.index
    assert_frame_equal(compared.drop(index=timed), local.compare("right", "tools").stats.drop(index=timed))
    sessions = {s for s in pd.read_parquet(tmp_path / "spark" / "results")["session"]}
    assert len(sessions) == 3 and all(s.startswith("spark-") for s in sessions)
    assert sorted(run_ids(tmp_path / "spark", "runs")) == sorted(on_spark.results["run_id"].astype(str))
    # Run again: every run is committed, none runs again.
    again = run_experiment(build(tmp_path / "spark"), spark, partitions=3)
    assert sorted(run_ids(tmp_path / "spark", "runs")) == sorted(again.results["run_id"].astype(str))
    agent = Experiment(arithmetic(2), {"zero": constant("0")}, output=tmp_path / "agent", progress=None)
    with pytest.raises(TypeError, match=r"run_experiment: variants\['zero'\] cannot be pickled"):
        run_experiment(agent, spark)
    with pytest.raises(ValueError, match=r"run_experiment: experiment must be an Experiment built with output="):
        run_experiment(Experiment(arithmetic(2), {"right": right}, progress=None), spark)
