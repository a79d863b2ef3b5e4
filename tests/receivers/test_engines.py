"""The trace dataset in real engines: Spark (local mode), DuckDB, polars and pyarrow.dataset read a table
of every session from its directory, with no glob tricks, and agree on counts, groups, joins and UTC
timestamps; the JSON lines files (one per table) are read whole by DuckDB and polars."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage, Trace
from nbagent.trace import COLUMNS

pytestmark = pytest.mark.receivers


async def lookup(city: str) -> str:
    """The weather of a city."""
    if city == "Atlantis":
        raise LookupError("no station")
    return "sunny"


def _asks(*cities: str) -> CreateResult:
    calls = [FunctionCall(id="same", name="lookup", arguments=json.dumps({"city": c})) for c in cities]
    return CreateResult(
        finish_reason="function_calls", content=calls, usage=RequestUsage(prompt_tokens=30, completion_tokens=6)
    )


async def session(n_runs: int, cities: tuple[str, ...]) -> Trace:
    script: list[str | CreateResult] = []
    for i in range(n_runs):
        script += [_asks(*cities), f"answer {i}"]
    agent = AssistantAgent("weather", ReplayChatCompletionClient(script), tools=[lookup], reflect_on_tool_use=True)
    for i in range(n_runs):
        await agent.run(task=f"task {i}")
    return agent.trace


@pytest.fixture
async def dataset(tmp_path: Path) -> tuple[Path, list[Trace]]:
    traces = [await session(2, ("Paris", "Atlantis")), await session(3, ("Oslo",)), Trace()]
    root = tmp_path / "traces"
    for trace in traces:
        trace.to_parquet(root)
    return root, traces


def _duck(sql: str) -> list[tuple[Any, ...]]:
    return duckdb.sql(sql).fetchall()


TOOLS_SQL = (
    "SELECT tool_name, count(*) AS calls, sum(CAST(is_error AS INTEGER)) AS errors, count(DISTINCT session) "
    "FROM read_parquet('{root}/tool_calls/**/*.parquet', hive_partitioning = true) GROUP BY ALL ORDER BY ALL"
)


async def test_duckdb_polars_and_pyarrow_read_each_table_from_its_directory(
    dataset: tuple[Path, list[Trace]], polars: Any
) -> None:
    import pyarrow.dataset as ds

    root, traces = dataset
    expected = [("lookup", 7, 2, 2)]  # 2 runs x 2 calls (one fails) + 3 runs x 1 call, in two sessions
    assert _duck(TOOLS_SQL.format(root=root)) == expected
    pl = polars
    tools = pl.scan_parquet(str(root / "tool_calls" / "**" / "*.parquet"), hive_partitioning=True).collect()
    grouped = tools.group_by("tool_name").agg(
        pl.len().alias("calls"), pl.col("is_error").cast(pl.Int64).sum().alias("errors"), pl.col("session").n_unique()
    )
    assert grouped.rows() == expected
    table = ds.dataset(root / "tool_calls", partitioning="hive").to_table()
    assert table.num_rows == 7 and "session" in table.column_names
    first = str(traces[0].trace_id)
    pruned = _duck(
        f"SELECT DISTINCT session, count(*) FROM read_parquet('{root}/runs/**/*.parquet', hive_partitioning = true) "
        f"WHERE session = '{first}' GROUP BY ALL"
    )
    assert pruned == [(first, 2)]  # a filter on the partition column reads that session's files only


async def test_tool_calls_join_the_llm_call_that_requested_them(dataset: tuple[Path, list[Trace]]) -> None:
    root, _ = dataset
    rows = _duck(
        f"""
        SELECT l.purpose, count(*) AS tools, min(l.n_tool_calls), max(l.n_tool_calls)
        FROM read_parquet('{root}/tool_calls/**/*.parquet', hive_partitioning = true) t
        JOIN read_parquet('{root}/llm_calls/**/*.parquet', hive_partitioning = true) l USING (llm_call_id)
        GROUP BY ALL
        """
    )
    assert rows == [("initial", 7, 1, 2)]  # never the reflection that follows in the same iteration
    ids = _duck(f"SELECT count(*), count(DISTINCT llm_call_id) FROM read_parquet('{root}/llm_calls/**/*.parquet')")
    assert ids == [(10, 10)]
    assert "llm_call_id" in COLUMNS["llm_calls"] and "llm_call_id" in COLUMNS["tool_calls"]


@pytest.mark.spark
async def test_spark_reads_the_dataset_and_agrees_with_duckdb_and_polars(
    dataset: tuple[Path, list[Trace]], spark: Any, polars: Any
) -> None:
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    root, traces = dataset
    tools = spark.read.parquet(str(root / "tool_calls"))
    runs = spark.read.parquet(str(root / "runs"))
    assert tools.count() == 7 and runs.count() == 5
    by_tool = [
        (r["tool_name"], r["calls"], r["errors"], r["sessions"])
        for r in tools.groupBy("tool_name")
        .agg(F.count("*").alias("calls"), F.sum(F.col("is_error").cast("int")).alias("errors"),
             F.countDistinct("session").alias("sessions"))
        .collect()
    ]  # fmt: skip
    assert by_tool == _duck(TOOLS_SQL.format(root=root))
    per_session = sorted((r["session"], r["count"]) for r in runs.groupBy("session").count().collect())
    duck = _duck(f"SELECT session, count(*) FROM read_parquet('{root}/runs/**/*.parquet', hive_partitioning = true) "
                 "GROUP BY ALL ORDER BY ALL")  # fmt: skip
    pl = polars
    frame = pl.scan_parquet(str(root / "runs" / "**" / "*.parquet"), hive_partitioning=True).collect()
    assert per_session == duck == sorted(frame.group_by("session").len().rows())
    assert isinstance(runs.schema["started_at"].dataType, TimestampType)
    first = runs.orderBy("started_at").first()
    live = min(t.runs_df()["started_at"].min() for t in traces if len(t.runs_df()))
    # Spark's session time zone is UTC (the fixture): its naive datetime is the instant in UTC.
    assert first["started_at"].replace(tzinfo=dt.UTC) == live.to_pydatetime()
    assert str(frame.schema["started_at"]) == "Datetime(time_unit='us', time_zone='UTC')"


async def test_jsonl_tables_are_read_whole_by_duckdb_and_polars(tmp_path: Path, polars: Any) -> None:
    trace = await session(2, ("Paris", "Atlantis"))
    folder = trace.to_jsonl(tmp_path / "jsonl")
    for table, columns in COLUMNS.items():
        if table == "context":
            continue
        path = folder / f"{table}.jsonl"
        frame = polars.read_ndjson(path)
        assert frame.columns == list(columns), table
        duck = duckdb.sql(f"SELECT * FROM read_json('{path}')")
        assert duck.columns == list(columns), table
        expected = {"events": len(trace), "runs": 2, "llm_calls": 4, "tool_calls": 4}.get(table)
        if expected is not None:
            assert frame.height == expected == len(duck.fetchall()), table


@pytest.mark.timeout(1200)  # five kills, each read by Spark table by table: minutes on a loaded machine
@pytest.mark.spark
async def test_spark_reads_a_dataset_whose_writer_was_killed(tmp_path: Path, spark: Any) -> None:
    """A Batch SIGKILLed before its first rename, among its renames and after them (tests/trace/
    test_atomic_writes.py kills it at every file operation, read by DuckDB, pandas and load_parquet):
    Spark reads every table, and a run it counts in runs/ has its rows in events/. Spark reading only
    the committed files (``committed_files``, ``basePath`` keeping the ``session`` partition column)
    has the runs load_parquet has, each once, and in each table the same rows by run and session."""
    from nbagent import load_parquet
    from nbagent.trace import committed_files
    from tests.trace.test_atomic_writes import BATCH_TABLES, Writer

    def committed(root: Path, table: str) -> Any:
        files = [str(path) for path in committed_files(root, table)]
        return spark.read.option("basePath", str(root / table)).parquet(*files) if files else None

    writer = Writer("batch")
    try:
        ops = writer.operations(tmp_path / "count")
        replaces = [n for n, op in enumerate(ops, 1) if op.startswith("replace")]
        for kill_at in (replaces[0] - 1, replaces[0], replaces[3], replaces[-1], len(ops)):
            root = tmp_path / f"k{kill_at}"
            code, said = writer.write(root, kill_at)
            assert code == -9, said
            tables = [t for t in BATCH_TABLES if (root / t).is_dir()]
            counts = {t: spark.read.parquet(str(root / t)).count() for t in tables}
            if "runs" in tables:
                runs = {r.run_id for r in spark.read.parquet(str(root / "runs")).select("run_id").collect()}
                events = {r.run_id for r in spark.read.parquet(str(root / "events")).select("run_id").collect()}
                assert runs <= events and counts["runs"] == 3
            loaded = load_parquet(root) if (root / "runs").is_dir() else None
            frames = {} if loaded is None else {
                "runs": loaded.runs_df(), "events": loaded.events_df(), "llm_calls": loaded.llm_calls_df(),
                "tool_calls": loaded.tool_calls_df(),
            }  # fmt: skip
            for table in ("runs", "events", "llm_calls", "tool_calls"):
                read = committed(root, table) if (root / table).is_dir() else None
                rows = [] if read is None else read.select("run_id", "session").collect()
                expected = frames[table] if table in frames else None
                want = (
                    []
                    if expected is None
                    else list(zip(expected["run_id"].astype(str), expected["trace_id"].astype(str)))
                )
                assert sorted((str(r.run_id), str(r.session)) for r in rows) == sorted(want), (kill_at, table)
                if table == "runs":  # each committed run once
                    assert len({r.run_id for r in rows}) == len(rows), kill_at
    finally:
        writer.close()
