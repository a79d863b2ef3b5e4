"""Parquet (a dataset by table) and JSON lines (a file per table) exports; loading back one session or a
whole dataset, and the earlier layouts; DuckDB over the dataset. OTLP: tests/trace/test_otlp.py."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path
from typing import Any

import duckdb
import pandas.testing as pdt
import pytest

from nbagent import TRACE_COLUMNS, CancellationToken, LoadedTrace, Trace, load_jsonl, load_parquet
from nbagent.models import ReplayExhaustedError
from nbagent.trace import CONTEXT_TABLES, DUCKDB_EXAMPLE, JSON_COLUMNS, TABLES

from ..frames import assert_frame_equal
from .helpers import calls, tool_agent

FRAMES = ("events_df", "llm_calls_df", "tool_calls_df", "runs_df")


async def mixed_trace() -> Trace:
    """Three runs: tools in parallel with an error and streaming, a failure, a cancellation."""
    agent = tool_agent(
        "calc",
        calls(("c1", "add", '{"a": 1, "b": 2}'), ("c2", "fail", '{"reason": "no"}'), ("c3", "add", "not json")),
        "sum is 3",
        reflect_on_tool_use=True,
        model_client_stream=True,
    )
    await agent.run(task="first")
    with pytest.raises(ReplayExhaustedError):
        await agent.run(task="second")
    token = CancellationToken()
    token.cancel()
    agent.model_client.chat_completions.append("never")  # type: ignore[attr-defined]
    with pytest.raises(asyncio.CancelledError):
        await agent.run(task="third", cancellation_token=token)
    return agent.trace


def assert_same(a: Trace | LoadedTrace, b: Trace | LoadedTrace) -> None:
    for name in FRAMES:
        assert_frame_equal(getattr(a, name)(), getattr(b, name)())
    assert_frame_equal(a.events_df(include_chunks=False), b.events_df(include_chunks=False))


async def test_parquet_round_trip_gives_equal_frames(tmp_path: Path) -> None:
    trace = await mixed_trace()
    assert list(trace.runs_df()["status"]) == ["ok", "error"]
    folder = trace.to_parquet(tmp_path / "traces")
    assert sorted(str(p.relative_to(folder)) for p in folder.rglob("*.parquet")) == [
        f"{table}/session={trace.trace_id}/part-0.parquet"
        for table in ("context_logs", "events", "llm_calls", "runs", "snapshots", "tool_calls")
    ]
    loaded = load_parquet(folder)
    assert loaded.trace_id == trace.trace_id
    assert_same(trace, loaded)
    assert loaded.tool_calls_df()["arguments"].tolist() == [{"a": 1, "b": 2}, {"reason": "no"}, "not json"]
    pdt.assert_series_equal(loaded.summary(), trace.summary())
    assert loaded.timeline().to_html() == trace.timeline().to_html()


async def test_cancelled_before_start_records_nothing_and_empty_trace_round_trips(tmp_path: Path) -> None:
    trace = await mixed_trace()
    assert len(trace.runs_df()) == 2  # a token cancelled before the start: the run never starts
    empty = Trace()
    for loaded in (
        load_parquet(empty.to_parquet(tmp_path / "empty")),
        load_jsonl(empty.to_jsonl(tmp_path / "empty-jsonl")),
    ):
        assert_same(empty, loaded)
        assert loaded.trace_id == empty.trace_id  # kept apart from the rows, of which there are none


async def test_jsonl_round_trip_gives_equal_frames(tmp_path: Path) -> None:
    trace = await mixed_trace()
    folder = trace.to_jsonl(tmp_path / "jsonl")
    assert sorted(p.name for p in folder.iterdir()) == [
        "context_logs.jsonl", "events.jsonl", "llm_calls.jsonl", "runs.jsonl", "schema.json", "snapshots.jsonl",
        "tool_calls.jsonl", "trace.json",
    ]  # fmt: skip
    counts = {table: len((folder / f"{table}.jsonl").read_text().splitlines()) for table in TABLES}
    assert counts == {"events": len(trace.events_df()), "llm_calls": 3, "tool_calls": 3, "runs": 2}
    first = json.loads((folder / "tool_calls.jsonl").read_text().splitlines()[0])
    assert list(first) == list(TRACE_COLUMNS["tool_calls"])  # every column, in every row
    assert first["arguments"] == '{"a": 1, "b": 2}'  # JSON-valued columns as JSON text: one type per column
    assert_same(trace, load_jsonl(folder))


async def test_the_earlier_layouts_still_load(tmp_path: Path) -> None:
    """A session folder of <table>.parquet files and a one-file JSON lines trace (before the dataset
    by table) load as before."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = await mixed_trace()
    dataset = trace.to_parquet(tmp_path / "traces")
    old = tmp_path / "old-session"
    old.mkdir()
    for table in (*TABLES, *CONTEXT_TABLES):
        (path,) = (dataset / table).rglob("*.parquet")
        pq.write_table(pq.read_table(path, partitioning=None), old / f"{table}.parquet")
        assert pa.types.is_dictionary(pq.read_schema(old / f"{table}.parquet").field("trace_id").type)
    assert_same(trace, load_parquet(old))
    assert load_parquet(old).trace_id == trace.trace_id
    lines = [json.dumps({"table": "trace", "trace_id": trace.trace_id})]
    folder = trace.to_jsonl(tmp_path / "jsonl")
    moved = json.loads((folder / "trace.json").read_text())["first"]  # the rows each file opens with
    for table in (*TABLES, *CONTEXT_TABLES):
        written = (folder / f"{table}.jsonl").read_text().splitlines()
        first = moved[table]
        positions = [*first, *(i for i in range(len(written)) if i not in first)]
        for _, line in sorted(zip(positions, written)):  # in the rows' order, as the one-file format was
            row = json.loads(line)
            for column in JSON_COLUMNS.get(table, ()):  # the one-file format held JSON values as they are
                row[column] = None if row[column] is None else json.loads(row[column])
            lines.append(json.dumps({"table": table, **row}))
    (tmp_path / "old.jsonl").write_text("\n".join(lines) + "\n")
    assert_same(trace, load_jsonl(tmp_path / "old.jsonl"))


async def test_duckdb_reads_a_dataset_of_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = await mixed_trace()
    second = await mixed_trace()
    first.to_parquet(tmp_path / "traces")
    second.to_parquet(tmp_path / "traces")
    monkeypatch.chdir(tmp_path)
    rows = duckdb.sql(DUCKDB_EXAMPLE).fetchall()
    assert [(name, calls, sessions, error_rate) for name, calls, sessions, error_rate, _ in rows] == [
        ("add", 4, 2, 0.5),
        ("fail", 2, 2, 1.0),
    ]
    status = duckdb.sql(
        "SELECT status, count(*) FROM read_parquet('traces/runs/**/*.parquet', hive_partitioning = true) "
        "GROUP BY status ORDER BY status"
    ).fetchall()
    assert status == [("error", 2), ("ok", 2)]
    chunks = duckdb.sql(
        "SELECT count(*) FROM read_parquet('traces/events/**/*.parquet', hive_partitioning = true) "
        "WHERE kind = 'ModelClientStreamingChunkEvent'"
    ).fetchall()
    assert chunks == [(6,)]
    sessions = duckdb.sql(
        "SELECT session = trace_id, count(*) FROM read_parquet('traces/runs/**/*.parquet', hive_partitioning = true) "
        "GROUP BY ALL"
    ).fetchall()
    assert sessions == [(True, 4)]  # the partition column is the trace's id


async def test_a_whole_dataset_loads_as_one_trace_keeping_dtypes(tmp_path: Path) -> None:
    import pandas as pd

    first, second = await mixed_trace(), await mixed_trace()
    first.to_parquet(tmp_path / "traces")
    second.to_parquet(tmp_path / "traces")
    both = load_parquet(tmp_path / "traces")
    assert both.sessions == [first.trace_id, second.trace_id]  # in time order
    for name in FRAMES:
        table = name[: -len("_df")]
        expected = pd.concat([getattr(first, name)(), getattr(second, name)()], ignore_index=True)
        expected = expected.astype({column: dtype for column, (dtype, _) in TRACE_COLUMNS[table].items()})
        got = getattr(both, name)()
        assert [str(t) for t in got.dtypes] == [d for d, _ in TRACE_COLUMNS[table].values()], table
        assert_frame_equal(got, expected, check_categorical=False)
    for trace in (first, second):
        one = load_parquet(tmp_path / "traces", session=trace.trace_id)
        assert one.trace_id == trace.trace_id and one.sessions == [trace.trace_id]
        assert_same(trace, one)
        for run_id in trace.runs_df()["run_id"].astype(str):  # the context of either session, from the whole
            assert_frame_equal(both.context_df(run_id, 1), trace.context_df(run_id, 1))
    with pytest.raises(FileNotFoundError):
        load_parquet(tmp_path / "traces", session="no-such-session")
    with pytest.raises(FileNotFoundError):
        load_parquet(tmp_path / "nothing-here")


async def test_parquet_timestamps_are_microseconds_that_spark_reads(tmp_path: Path) -> None:
    """Spark rejects Parquet TIMESTAMP(NANOS) columns ("Illegal Parquet type"); micros it reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = await mixed_trace()
    folder = trace.to_parquet(tmp_path / "traces")
    columns = {
        table: [name for name, (dtype, _) in TRACE_COLUMNS[table].items() if dtype.startswith("datetime64")]
        for table in ("events", "llm_calls", "tool_calls", "runs")
    }
    assert columns == {"events": ["timestamp"], "llm_calls": ["started_at"], "tool_calls": ["started_at"],
                       "runs": ["started_at", "ended_at"]}  # fmt: skip
    for table, names in columns.items():
        schema = pq.read_schema(folder / table / f"session={trace.trace_id}" / "part-0.parquet")
        assert [schema.field(name).type for name in names] == [pa.timestamp("us", tz="UTC")] * len(names)
    assert_same(trace, load_parquet(folder))


async def test_dtypes_follow_columns_for_failed_and_cancelled_runs_and_their_loaded_copies(tmp_path: Path) -> None:
    from nbagent import AssistantAgent, ReplayChatCompletionClient

    trace = await mixed_trace()  # ok (streamed, tool errors), error
    agent = AssistantAgent("slow", ReplayChatCompletionClient(["late"], latency=5))
    with trace.recording(agent):
        task = asyncio.ensure_future(agent.run(task="wait"))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
    assert list(trace.runs_df()["status"]) == ["ok", "error", "cancelled"]
    assert list(trace.llm_calls_df()["status"]) == ["ok", "ok", "error", "error"]
    for copy in (
        trace,
        load_parquet(trace.to_parquet(tmp_path / "pq")),
        load_jsonl(trace.to_jsonl(tmp_path / "jsonl")),
    ):
        for name in FRAMES:
            df = getattr(copy, name)()
            table = name[: -len("_df")]
            assert list(df.columns) == list(TRACE_COLUMNS[table])
            assert [str(t) for t in df.dtypes] == [d for d, _ in TRACE_COLUMNS[table].values()], (copy, table)


async def test_the_context_at_any_point_loads_back_equal_from_parquet_and_jsonl(tmp_path: Path) -> None:
    alpha = tool_agent("alpha", calls(("c1", "add", '{"a": 1, "b": 2}')), "three", "again", reflect_on_tool_use=True)
    beta = tool_agent("beta", "hello", model_client_stream=True)
    trace = Trace()
    with trace.recording(alpha, beta):
        await asyncio.gather(alpha.run(task="first"), beta.run(task="hi"))
        await alpha.run(task="second")
    copies = [load_parquet(trace.to_parquet(tmp_path / "pq")), load_jsonl(trace.to_jsonl(tmp_path / "jsonl"))]
    events = trace.events_df()
    first = str(events[(events["agent"] == "alpha") & (events["kind"] == "RunStarted")]["run_id"].iloc[0])
    assert list(trace.context_df(first)["text"]) == ["first", 'add({"a": 1, "b": 2})', "3", "three"]
    assert trace.context_df(first)["tool_calls"].iloc[1] == [
        {"id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'}
    ]
    for copy in copies:
        for run_id, seqs in events.groupby("run_id", observed=True)["seq"]:
            for seq in [*seqs, None]:
                expected = trace.context_df(str(run_id), None if seq is None else int(seq))
                assert_frame_equal(copy.context_df(str(run_id), None if seq is None else int(seq)), expected)
        for agent in ("alpha", "beta", None):
            assert_frame_equal(copy.context_df(agent=agent), trace.context_df(agent=agent))
        with pytest.raises(KeyError):
            copy.context_df("no-such-run")
        with pytest.raises(IndexError):
            copy.context_df(first, 10_000)
    with pytest.raises(LookupError):
        load_parquet(Trace().to_parquet(tmp_path / "empty")).context_df()


async def test_every_session_writes_one_schema_so_duckdb_reads_sessions_without_tool_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session with no tool call (or no run) has all-null columns: they keep their type in the file."""
    import pyarrow.parquet as pq

    plain = tool_agent("calc", "no tools today")
    await plain.run(task="chat")
    traces = [plain.trace, Trace(), await mixed_trace()]
    for trace in traces:
        trace.to_parquet(tmp_path / "traces")
    for table in ("events", "llm_calls", "tool_calls", "runs", "context_logs", "snapshots"):
        schemas = [
            pq.read_schema(tmp_path / "traces" / table / f"session={t.trace_id}" / "part-0.parquet") for t in traces
        ]
        assert schemas[0].equals(schemas[1]) and schemas[0].equals(schemas[2]), table
    monkeypatch.chdir(tmp_path)
    rows = duckdb.sql(DUCKDB_EXAMPLE).fetchall()
    assert [(name, calls, sessions, error_rate) for name, calls, sessions, error_rate, _ in rows] == [
        ("add", 2, 1, 0.5),
        ("fail", 1, 1, 1.0),
    ]
    finals = duckdb.sql(
        "SELECT final_type, count(*) FROM read_parquet('traces/runs/**/*.parquet') GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert finals == [("TextMessage", 2), (None, 1)]


async def test_jsonl_round_trip_with_a_timestamp_on_a_whole_second(tmp_path: Path) -> None:
    """ISO text of a time on a whole second has no fraction: the file must still load (and equal)."""
    import pandas as pd

    trace = await mixed_trace()
    frames = {name[: -len("_df")]: getattr(trace, name)() for name in FRAMES} | trace.context_tables()
    frames["events"].loc[0, "timestamp"] = pd.Timestamp("2026-11-30 01:02:03", tz="UTC")
    frames["runs"].loc[0, "started_at"] = pd.Timestamp("2026-11-30 01:02:03", tz="UTC")
    edited = LoadedTrace(frames, trace.trace_id)
    path = edited.to_jsonl(tmp_path / "jsonl")
    stamps = re.findall(r'"timestamp": "([^"]+)"', (path / "events.jsonl").read_text())
    assert stamps[0] == "2026-11-30T01:02:03.000000+00:00"
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", stamp) for stamp in stamps)
    assert_same(edited, load_jsonl(path))


async def test_files_written_before_a_column_existed_load_with_it_null(tmp_path: Path) -> None:
    """Columns came after the first traces were saved (``provider``, the join keys, the request's
    parameters...): their Parquet and JSONL files still load, the columns null."""
    import pyarrow.parquet as pq

    trace = await mixed_trace()
    assert trace.llm_calls_df()["provider"].tolist() == ["nbagent.replay"] * 3
    later = ["provider", "llm_call_id", "response_model", "request_params", "tool_definitions"]
    folder = trace.to_parquet(tmp_path / "session")
    (path,) = (folder / "llm_calls").rglob("*.parquet")
    pq.write_table(pq.read_table(path, partitioning=None).drop_columns(later), path)
    jsonl = trace.to_jsonl(tmp_path / "jsonl")
    lines = [json.loads(line) for line in (jsonl / "llm_calls.jsonl").read_text().splitlines()]
    (jsonl / "llm_calls.jsonl").write_text(
        "".join(json.dumps({k: v for k, v in line.items() if k not in later}) + "\n" for line in lines)
    )
    expected = trace.llm_calls_df().assign(**{name: None for name in later})
    expected = expected.astype({name: TRACE_COLUMNS["llm_calls"][name][0] for name in later})
    for loaded in (load_parquet(folder), load_jsonl(jsonl)):
        assert_frame_equal(loaded.llm_calls_df(), expected)
        assert_frame_equal(loaded.tool_calls_df(), trace.tool_calls_df())
        spans = loaded.to_otlp_json()["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert all(a["key"] != "gen_ai.provider.name" for span in spans for a in span["attributes"])


async def test_export_then_clear_keeps_every_run_in_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's way to keep a service's trace bounded: parts written one after another, each
    holding only the runs since the last clear(), read back together."""
    agent = tool_agent("calc", *[f"answer {i}" for i in range(6)])
    for part in range(3):
        for _ in range(2):
            await agent.run(task=f"part {part}")
        agent.trace.to_parquet(tmp_path / "traces")
        agent.trace.clear()
        assert len(agent.trace) == 0
    session = tmp_path / "traces" / "runs" / f"session={agent.trace.trace_id}"
    assert sorted(p.name for p in session.iterdir()) == ["part-0.parquet", "part-1.parquet", "part-2.parquet"]
    monkeypatch.chdir(tmp_path)
    rows = duckdb.sql(
        "SELECT task, count(*), count(DISTINCT run_id), count(DISTINCT trace_id) "
        "FROM read_parquet('traces/runs/**/*.parquet', hive_partitioning = true) GROUP BY task ORDER BY task"
    ).fetchall()
    assert rows == [("part 0", 2, 2, 1), ("part 1", 2, 2, 1), ("part 2", 2, 2, 1)]
    texts = duckdb.sql("SELECT final_text FROM read_parquet('traces/runs/**/*.parquet') ORDER BY started_at").fetchall()
    assert texts == [(f"answer {i}",) for i in range(6)]
    loaded = load_parquet(tmp_path / "traces")
    assert loaded.runs_df()["final_text"].tolist() == [f"answer {i}" for i in range(6)]
    third = str(loaded.runs_df()["run_id"].iloc[2])  # the first run of part 1: its context from its own part
    assert list(loaded.context_df(third, 0)["text"]) == ["part 0", "answer 0", "part 0", "answer 1"]


async def test_exporting_again_without_clear_writes_only_the_new_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 31: ``to_parquet`` twice into one folder, no clear() between, counted the first runs twice."""
    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), "three", "four", "five")
    await agent.run(task="first")  # a tool call: its context has a tool result
    await agent.run(task="second")
    agent.trace.to_parquet(tmp_path / "traces")
    await agent.run(task="third")
    agent.trace.to_parquet(tmp_path / "traces")  # part-1: the third run only
    agent.trace.to_parquet(tmp_path / "traces")  # nothing new: no part
    session = f"session={agent.trace.trace_id}"
    for table in TABLES + CONTEXT_TABLES:
        assert sorted(p.name for p in (tmp_path / "traces" / table / session).iterdir()) == [
            "part-0.parquet",
            "part-1.parquet",
        ], table
    monkeypatch.chdir(tmp_path)
    keys = {
        "runs": "run_id",
        "llm_calls": "run_id, call_index",
        "tool_calls": "run_id, call_id",
        "events": "run_id, seq",
    }
    for table, key in keys.items():
        rows = duckdb.sql(f"SELECT {key}, count(*) FROM read_parquet('traces/{table}/**/*.parquet') GROUP BY ALL")
        assert {row[-1] for row in rows.fetchall()} == {1}, table  # each row once
    loaded = load_parquet(tmp_path / "traces")
    assert loaded.runs_df()["task"].tolist() == ["first", "second", "third"]
    assert_same(agent.trace, loaded)
    for run in agent.trace.runs_df()["run_id"].astype(str):  # the context at every item, as live
        for seq in range(len(agent.trace.events_df().query("run_id == @run"))):
            assert_frame_equal(loaded.context_df(run, seq), agent.trace.context_df(run, seq))


async def test_each_export_reads_only_the_runs_files_it_has_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A session exported again and again (every minute, say) reads the new runs file of each export,
    not every part's: the ended runs of a file read before, unchanged since, are remembered."""
    import pyarrow.parquet as pq

    real = pq.read_table
    read: list[str] = []

    def counted(source: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(Path(source).name)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pq, "read_table", counted)
    agent = tool_agent("calc", *[f"answer {i}" for i in range(6)])
    for export in range(6):
        await agent.run(task=f"task {export}")
        read.clear()
        agent.trace.to_parquet(tmp_path / "traces")
        assert read == ([f"part-{export - 1}.parquet"] if export else []), export
    assert load_parquet(tmp_path / "traces").runs_df()["task"].tolist() == [f"task {i}" for i in range(6)]


async def test_parquet_without_pyarrow_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tool_agent("calc", "one")
    await agent.run(task="go")
    folder = agent.trace.to_parquet(tmp_path / "pq")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what an environment without pyarrow gives
    with pytest.raises(ImportError, match=r"pip install 'nbagent-loop\[parquet\]'"):
        agent.trace.to_parquet(tmp_path / "again")
    with pytest.raises(ImportError, match=r"pip install 'nbagent-loop\[parquet\]'"):
        load_parquet(folder)
    assert not (tmp_path / "again").exists()


async def test_response_model_id_and_request_parameters_reach_the_trace() -> None:
    """The server's model and answer id, and the client's own request parameters, are recorded per call."""
    from nbagent import AssistantAgent, OpenAIChatCompletionClient
    from tests.models.chat_server import ChatServer, Reply

    with ChatServer() as server:
        server.script(Reply.text("hi"), Reply.text("again", pieces=2))
        for stream in (False, True):
            client = OpenAIChatCompletionClient(
                "gpt-4o", base_url=server.base_url, api_key="test-key", temperature=0.25, seed=7
            )
            agent = AssistantAgent("a", client, model_client_stream=stream)
            await agent.run(task="hello")
            row = agent.trace.llm_calls_df().iloc[0]
            assert (row["response_model"], row["response_id"]) == ("gpt-4o", "chatcmpl-test")
            assert row["request_params"] == {key: v for key, v in server.requests[-1].body.items() if key != "messages"}
            assert (row["request_params"]["temperature"], row["request_params"]["seed"]) == (0.25, 7)
            await client.close()
