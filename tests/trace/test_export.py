"""Parquet, JSON lines and OTLP-JSON exports; loading back; DuckDB over a folder of traces."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from pathlib import Path

import duckdb
import pandas.testing as pdt
import pytest

from nbagent import TRACE_COLUMNS, CancellationToken, LoadedTrace, Trace, load_jsonl, load_parquet
from nbagent.models import ReplayExhaustedError
from nbagent.trace import DUCKDB_EXAMPLE

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
        pdt.assert_frame_equal(getattr(a, name)(), getattr(b, name)())
    pdt.assert_frame_equal(a.events_df(include_chunks=False), b.events_df(include_chunks=False))


async def test_parquet_round_trip_gives_equal_frames(tmp_path: Path) -> None:
    trace = await mixed_trace()
    assert list(trace.runs_df()["status"]) == ["ok", "error"]
    folder = trace.to_parquet(tmp_path / "session")
    assert sorted(p.name for p in folder.iterdir()) == [
        "context_logs.parquet", "events.parquet", "llm_calls.parquet", "runs.parquet", "snapshots.parquet",
        "tool_calls.parquet",
    ]  # fmt: skip
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
        load_jsonl(empty.to_jsonl(tmp_path / "empty.jsonl")),
    ):
        assert_same(empty, loaded)
        assert loaded.trace_id == empty.trace_id  # kept apart from the rows, of which there are none


async def test_jsonl_round_trip_gives_equal_frames(tmp_path: Path) -> None:
    trace = await mixed_trace()
    path = trace.to_jsonl(tmp_path / "trace.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    counts = {
        table: sum(1 for line in lines if line["table"] == table)
        for table in ("events", "llm_calls", "tool_calls", "runs")
    }
    assert counts == {"events": len(trace.events_df()), "llm_calls": 3, "tool_calls": 3, "runs": 2}
    assert_same(trace, load_jsonl(path))


async def test_duckdb_reads_a_folder_of_sessions(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first = await mixed_trace()
    second = await mixed_trace()
    first.to_parquet(tmp_path / "traces" / "monday")
    second.to_parquet(tmp_path / "traces" / "tuesday")
    monkeypatch.chdir(tmp_path)
    rows = duckdb.sql(DUCKDB_EXAMPLE).fetchall()
    assert [(name, calls, sessions, error_rate) for name, calls, sessions, error_rate, _ in rows] == [
        ("add", 4, 2, 0.5),
        ("fail", 2, 2, 1.0),
    ]
    status = duckdb.sql(
        "SELECT status, count(*) FROM read_parquet('traces/*/runs.parquet') GROUP BY status ORDER BY status"
    ).fetchall()
    assert status == [("error", 2), ("ok", 2)]
    chunks = duckdb.sql(
        "SELECT count(*) FROM read_parquet('traces/*/events.parquet') WHERE kind = 'ModelClientStreamingChunkEvent'"
    ).fetchall()
    assert chunks == [(6,)]


async def test_otlp_spans_use_gen_ai_names(tmp_path: Path) -> None:
    trace = await mixed_trace()
    document = trace.to_otlp_json(tmp_path / "otlp.json")
    assert json.loads((tmp_path / "otlp.json").read_text()) == document
    spans = document["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert [span["name"] for span in spans] == [
        "invoke_agent calc", "invoke_agent calc", "chat replay", "chat replay", "chat replay",
        "execute_tool add", "execute_tool fail", "execute_tool add",
    ]  # fmt: skip
    runs = {span["spanId"]: span for span in spans if span["name"].startswith("invoke_agent")}
    for span in spans:
        assert re.fullmatch(r"[0-9a-f]{32}", span["traceId"]) and re.fullmatch(r"[0-9a-f]{16}", span["spanId"])
        assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"]) > 0
        if span["spanId"] not in runs:
            assert runs[span["parentSpanId"]]["traceId"] == span["traceId"]
    attrs = [{a["key"]: a["value"] for a in span["attributes"]} for span in spans]
    assert attrs[0]["gen_ai.operation.name"] == {"stringValue": "invoke_agent"}
    assert [a["gen_ai.provider.name"] for a in attrs[:5]] == [{"stringValue": "nbagent.replay"}] * 5
    assert all("gen_ai.provider.name" not in a for a in attrs[5:])  # tool spans: no model provider
    assert attrs[2]["gen_ai.operation.name"] == {"stringValue": "chat"}
    assert attrs[2]["gen_ai.request.model"] == {"stringValue": "replay"}
    assert attrs[2]["gen_ai.usage.input_tokens"] == {"intValue": "10"}
    assert attrs[2]["gen_ai.usage.output_tokens"] == {"intValue": "5"}
    assert attrs[2]["gen_ai.response.finish_reasons"] == {"arrayValue": {"values": [{"stringValue": "function_calls"}]}}
    assert attrs[6]["gen_ai.tool.name"] == {"stringValue": "fail"}
    assert attrs[6]["gen_ai.tool.call.id"] == {"stringValue": "c2"}
    assert attrs[6]["gen_ai.tool.call.arguments"] == {"stringValue": '{"reason": "no"}'}
    assert [span["status"]["code"] for span in spans] == [1, 2, 1, 1, 2, 1, 2, 2]
    assert spans[1]["status"]["message"].startswith("ReplayExhaustedError")


async def test_parquet_timestamps_are_microseconds_that_spark_reads(tmp_path: Path) -> None:
    """Spark rejects Parquet TIMESTAMP(NANOS) columns ("Illegal Parquet type"); micros it reads."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    trace = await mixed_trace()
    folder = trace.to_parquet(tmp_path / "session")
    columns = {
        table: [name for name, (dtype, _) in TRACE_COLUMNS[table].items() if dtype.startswith("datetime64")]
        for table in ("events", "llm_calls", "tool_calls", "runs")
    }
    assert columns == {"events": ["timestamp"], "llm_calls": ["started_at"], "tool_calls": ["started_at"],
                       "runs": ["started_at", "ended_at"]}  # fmt: skip
    for table, names in columns.items():
        schema = pq.read_schema(folder / f"{table}.parquet")
        assert [schema.field(name).type for name in names] == [pa.timestamp("us", tz="UTC")] * len(names)
    assert_same(trace, load_parquet(folder))


def span_attributes(trace: Trace) -> list[dict[str, dict[str, object]]]:
    spans = trace.to_otlp_json()["resourceSpans"][0]["scopeSpans"][0]["spans"]
    return [{a["key"]: a["value"] for a in span["attributes"]} for span in spans]


async def test_otlp_uses_the_gen_ai_names_for_stream_first_chunk_errors_and_tool_type() -> None:
    trace = await mixed_trace()
    attrs = span_attributes(trace)
    ttft = trace.llm_calls_df()["ttft_s"]
    # chat spans: run 1 initial (streamed, tool calls: no chunk), run 1 reflection (streamed text), run 2 (failed)
    assert [a["gen_ai.request.stream"] for a in attrs[2:5]] == [{"boolValue": True}] * 3
    assert "gen_ai.response.time_to_first_chunk" not in attrs[2]
    assert attrs[3]["gen_ai.response.time_to_first_chunk"] == {"doubleValue": float(ttft.iloc[1])}
    assert not any(key.startswith("nbagent.ttft") for a in attrs for key in a)
    assert [a.get("error.type") for a in attrs[:5]] == [
        None,
        {"stringValue": "ReplayExhaustedError"},
        None,
        None,
        {"stringValue": "ReplayExhaustedError"},
    ]
    # tool spans: add ok, fail (tool error), add with arguments that are not JSON (error)
    assert [a["gen_ai.tool.type"] for a in attrs[5:]] == [{"stringValue": "function"}] * 3
    assert [a.get("error.type") for a in attrs[5:]] == [None, {"stringValue": "_OTHER"}, {"stringValue": "_OTHER"}]
    assert [a.get("gen_ai.tool.call.result") for a in attrs[5:]] == [{"stringValue": "3"}, None, None]


async def test_otlp_cancelled_run_and_call_have_an_error_type() -> None:
    from nbagent import AssistantAgent, ReplayChatCompletionClient

    agent = AssistantAgent("slow", ReplayChatCompletionClient(["late"], latency=5))
    task = asyncio.ensure_future(agent.run(task="wait"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    attrs = span_attributes(agent.trace)
    assert [a["gen_ai.operation.name"] for a in attrs] == [{"stringValue": "invoke_agent"}, {"stringValue": "chat"}]
    assert [a["error.type"] for a in attrs] == [{"stringValue": "CancelledError"}] * 2
    assert "gen_ai.request.stream" not in attrs[1]


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
        load_jsonl(trace.to_jsonl(tmp_path / "t.jsonl")),
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
    copies = [load_parquet(trace.to_parquet(tmp_path / "pq")), load_jsonl(trace.to_jsonl(tmp_path / "t.jsonl"))]
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
                pdt.assert_frame_equal(copy.context_df(str(run_id), None if seq is None else int(seq)), expected)
        for agent in ("alpha", "beta", None):
            pdt.assert_frame_equal(copy.context_df(agent=agent), trace.context_df(agent=agent))
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
    plain.trace.to_parquet(tmp_path / "traces" / "a_plain")
    Trace().to_parquet(tmp_path / "traces" / "b_empty")
    (await mixed_trace()).to_parquet(tmp_path / "traces" / "c_tools")
    for table in ("events", "llm_calls", "tool_calls", "runs", "context_logs", "snapshots"):
        schemas = [
            pq.read_schema(tmp_path / "traces" / s / f"{table}.parquet") for s in ("a_plain", "b_empty", "c_tools")
        ]
        assert schemas[0].equals(schemas[1]) and schemas[0].equals(schemas[2]), table
    monkeypatch.chdir(tmp_path)
    rows = duckdb.sql(DUCKDB_EXAMPLE).fetchall()
    assert [(name, calls, sessions, error_rate) for name, calls, sessions, error_rate, _ in rows] == [
        ("add", 2, 1, 0.5),
        ("fail", 1, 1, 1.0),
    ]
    finals = duckdb.sql(
        "SELECT final_type, count(*) FROM read_parquet('traces/*/runs.parquet') GROUP BY ALL ORDER BY ALL"
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
    path = edited.to_jsonl(tmp_path / "t.jsonl")
    stamps = re.findall(r'"timestamp": "([^"]+)"', path.read_text())
    assert stamps[0] == "2026-11-30T01:02:03.000000+00:00"
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}\+00:00", stamp) for stamp in stamps)
    assert_same(edited, load_jsonl(path))


async def test_files_written_before_a_column_existed_load_with_it_null(tmp_path: Path) -> None:
    """``provider`` came after the first traces were saved: their Parquet and JSONL files still load."""
    import pyarrow.parquet as pq

    trace = await mixed_trace()
    assert trace.llm_calls_df()["provider"].tolist() == ["nbagent.replay"] * 3
    folder = trace.to_parquet(tmp_path / "session")
    pq.write_table(pq.read_table(folder / "llm_calls.parquet").drop_columns(["provider"]), folder / "llm_calls.parquet")
    path = trace.to_jsonl(tmp_path / "trace.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        line.pop("provider", None)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    expected = trace.llm_calls_df().assign(provider=None).astype({"provider": "category"})
    for loaded in (load_parquet(folder), load_jsonl(path)):
        pdt.assert_frame_equal(loaded.llm_calls_df(), expected)
        pdt.assert_frame_equal(loaded.tool_calls_df(), trace.tool_calls_df())
        spans = loaded.to_otlp_json()["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert all(a["key"] != "gen_ai.provider.name" for span in spans for a in span["attributes"])


async def test_export_then_clear_keeps_every_run_in_the_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's way to keep a service's trace bounded: parts written one after another, each
    holding only the runs since the last clear(), read back together."""
    agent = tool_agent("calc", *[f"answer {i}" for i in range(6)])
    for part in range(3):
        for _ in range(2):
            await agent.run(task=f"part {part}")
        agent.trace.to_parquet(tmp_path / "traces" / f"part-{part}")
        agent.trace.clear()
        assert len(agent.trace) == 0
    monkeypatch.chdir(tmp_path)
    rows = duckdb.sql(
        "SELECT task, count(*), count(DISTINCT run_id), count(DISTINCT trace_id) "
        "FROM read_parquet('traces/*/runs.parquet') GROUP BY task ORDER BY task"
    ).fetchall()
    assert rows == [("part 0", 2, 2, 1), ("part 1", 2, 2, 1), ("part 2", 2, 2, 1)]
    texts = duckdb.sql("SELECT final_text FROM read_parquet('traces/*/runs.parquet') ORDER BY started_at").fetchall()
    assert texts == [(f"answer {i}",) for i in range(6)]
    second = load_parquet(tmp_path / "traces" / "part-1")
    assert list(second.context_df(str(second.runs_df()["run_id"].iloc[0]), 0)["text"]) == [
        "part 0",
        "answer 0",
        "part 0",
        "answer 1",
    ]


async def test_parquet_without_pyarrow_names_the_extra_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tool_agent("calc", "one")
    await agent.run(task="go")
    folder = agent.trace.to_parquet(tmp_path / "pq")
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # what an environment without pyarrow gives
    with pytest.raises(ImportError, match=r"pip install 'nbagent\[parquet\]'"):
        agent.trace.to_parquet(tmp_path / "again")
    with pytest.raises(ImportError, match=r"pip install 'nbagent\[parquet\]'"):
        load_parquet(folder)
    assert not (tmp_path / "again").exists()
