"""Issue 32, point 4: JSON lines every table of which polars and DuckDB read whole with their defaults,
a schema sidecar for types that do not depend on the rows, sessions loaded apart combined with their
categories kept (``nbagent.concat``), and OTLP memory spans named by the installed conventions."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path
from types import ModuleType

import duckdb
import pandas as pd
import pytest

import nbagent
from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    LoadedTrace,
    ReplayChatCompletionClient,
    RequestUsage,
    Trace,
    load_jsonl,
    load_parquet,
)
from nbagent.models import ReplayExhaustedError
from nbagent.trace import COLUMNS, jsonl_schema
from nbagent.trace.jsonl import ORDER_KEYS, first_rows
from nbagent.trace.schema import empty, frame

from ..frames import assert_frame_equal
from .test_export import assert_same

ALL = ("events", "llm_calls", "tool_calls", "runs", "context_logs", "snapshots")


async def lookup(city: str) -> str:
    """The weather of a city."""
    if city == "Atlantis":
        raise LookupError("no station")
    return "sunny"


def asks(*cities: str) -> CreateResult:
    content = [FunctionCall(id=f"c{i}", name="lookup", arguments=json.dumps({"city": c})) for i, c in enumerate(cities)]
    return CreateResult(
        finish_reason="function_calls", content=content, usage=RequestUsage(prompt_tokens=9, completion_tokens=3)
    )


async def late_values_trace(quiet_runs: int) -> Trace:
    """``quiet_runs`` plain runs (no tool, no error, not streamed: many columns null in every row),
    then runs that fill those columns: streamed (ttft_s), tools with an error (is_error, tool rows),
    a thought, a handoff (handoff_target), a model failure (error columns)."""
    trace = Trace()
    quiet = AssistantAgent("quiet", ReplayChatCompletionClient(["fine"] * quiet_runs))
    usage = RequestUsage(prompt_tokens=4, completion_tokens=1)
    script = [
        asks("Paris", "Atlantis"),
        CreateResult(finish_reason="stop", content="done", thought="hmm", usage=usage),
        CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id="h1", name="transfer_to_quiet", arguments="{}")],
            usage=usage,
        ),
    ]
    late = AssistantAgent(
        "late",
        ReplayChatCompletionClient(script),
        tools=[lookup],
        reflect_on_tool_use=True,
        model_client_stream=True,
        handoffs=["quiet"],
    )
    with trace.recording(quiet, late):
        for i in range(quiet_runs):
            await quiet.run(task=f"task {i}")
            if i % 20 == 19:
                await quiet.model_context.clear()  # a context of every run would make each call longer
        await late.run(task="weather?")
        await late.run(task="over to quiet")
        with pytest.raises(ReplayExhaustedError):
            await late.run(task="again?")
    return trace


def non_null(frame: pd.DataFrame) -> dict[str, int]:
    return {name: int(frame[name].notna().sum()) for name in frame.columns}


@pytest.fixture(scope="module")
def pl() -> ModuleType:
    """polars, imported by the tests that read with it: 0.4 s that every worker collecting this file paid."""
    import polars

    return polars


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[Trace, Path]:
    trace = asyncio.run(late_values_trace(150))  # once for the module's tests (a loop of its own)
    return trace, trace.to_jsonl(tmp_path_factory.mktemp("jsonl") / "big")


async def test_polars_reads_every_table_whole_with_its_defaults(big: tuple[Trace, Path], pl: ModuleType) -> None:
    _, folder = big
    loaded = load_jsonl(folder)
    expected = {"events": loaded.events_df(), "llm_calls": loaded.llm_calls_df(), "tool_calls": loaded.tool_calls_df(),
                "runs": loaded.runs_df(), **loaded.context_tables()}  # fmt: skip
    assert len(expected["llm_calls"]) > 150 and expected["llm_calls"]["error"].iloc[:150].isna().all()
    for table in ALL:
        read = pl.read_ndjson(folder / f"{table}.jsonl")  # defaults: types from the first 100 lines
        assert read.columns == list(COLUMNS[table]), table
        assert read.height == len(expected[table]), table
        counts = {name: read.height - read[name].null_count() for name in read.columns}
        assert counts == non_null(expected[table]), table  # nothing lost


async def test_duckdb_reads_every_table_whole_with_its_defaults(big: tuple[Trace, Path]) -> None:
    _, folder = big
    loaded = load_jsonl(folder)
    expected = {"events": loaded.events_df(), "llm_calls": loaded.llm_calls_df(), "tool_calls": loaded.tool_calls_df(),
                "runs": loaded.runs_df(), **loaded.context_tables()}  # fmt: skip
    for table in ALL:
        relation = duckdb.sql(f"SELECT * FROM read_json_auto('{folder / f'{table}.jsonl'}')")
        assert relation.columns == list(COLUMNS[table]), table
        counts = ", ".join(f'count("{name}")' for name in relation.columns)
        (row,) = duckdb.sql(f"SELECT count(*), {counts} FROM read_json_auto('{folder / f'{table}.jsonl'}')").fetchall()
        assert row[0] == len(expected[table]), table
        assert dict(zip(relation.columns, row[1:])) == non_null(expected[table]), table


async def test_past_duckdbs_sample_a_late_value_is_still_read(tmp_path: Path, pl: ModuleType) -> None:
    """DuckDB infers types from 20,480 lines: a column null in all of them used to read as NULL (its
    values lost, no error). The failing run's events come after line 21,000 of events.jsonl."""
    trace = await late_values_trace(2700)
    folder = trace.to_jsonl(tmp_path / "jsonl")
    events = folder / "events.jsonl"
    frame = trace.events_df()
    n_events = len(frame)
    assert n_events > 20_480
    ((count, with_tokens),) = duckdb.sql(
        f"SELECT count(*), count(prompt_tokens) FROM read_json_auto('{events}')"
    ).fetchall()
    assert count == n_events and with_tokens == int(frame["prompt_tokens"].notna().sum())
    errors = duckdb.sql(f"SELECT count(error) FROM read_json_auto('{folder / 'runs.jsonl'}')").fetchall()
    assert errors == [(1,)]
    read = pl.read_ndjson(events)
    assert read.height == n_events


async def test_the_rows_come_back_in_their_order(big: tuple[Trace, Path]) -> None:
    trace, folder = big
    moved = json.loads((folder / "trace.json").read_text())["first"]
    assert moved["llm_calls"] and max(moved["llm_calls"]) >= 150  # rows from the end open the file
    assert all(len(moved[table]) <= 2 * len(COLUMNS[table]) for table in ALL)  # at most two per column
    assert_same(trace, load_jsonl(folder))
    assert (
        load_jsonl(folder)
        .context_df(trace.runs_df()["run_id"].iloc[-1])
        .equals(trace.context_df(trace.runs_df()["run_id"].iloc[-1]))
    )


async def test_a_changed_file_is_refused_with_its_name(tmp_path: Path) -> None:
    trace = await late_values_trace(3)
    folder = trace.to_jsonl(tmp_path / "jsonl")
    written = (folder / "llm_calls.jsonl").read_text()
    n = len(written.splitlines())
    (folder / "llm_calls.jsonl").write_text("")
    with pytest.raises(ValueError, match=rf"llm_calls\.jsonl: 0 lines where trace\.json says {n} were written"):
        load_jsonl(folder)
    # Lines added (another export's rows appended with cat): where they go is not known, refused too.
    (folder / "llm_calls.jsonl").write_text(written + written.splitlines(keepends=True)[-1])
    with pytest.raises(ValueError, match=rf"llm_calls\.jsonl: {n + 1} lines where trace\.json says {n}"):
        load_jsonl(folder)
    # A folder written before trace.json kept the counts still loads (only the first rows' fit is checked).
    (folder / "llm_calls.jsonl").write_text(written)
    meta = json.loads((folder / "trace.json").read_text())
    del meta["rows"]
    (folder / "trace.json").write_text(json.dumps(meta))
    assert_same(trace, load_jsonl(folder))
    (folder / "llm_calls.jsonl").write_text("")
    with pytest.raises(ValueError, match=r"llm_calls\.jsonl: trace\.json's first rows"):
        load_jsonl(folder)


async def test_readers_of_a_file_alone_put_its_rows_in_order_by_its_order_keys(tmp_path: Path, pl: ModuleType) -> None:
    """Concurrent runs (a batch) interleave their events: ordering events by seq alone is wrong, by
    ORDER_KEYS (timestamp, then seq) gives the trace's order back, in every table."""
    trace = await late_values_trace(30)
    batch = await nbagent.run_many(
        lambda task: AssistantAgent("b", ReplayChatCompletionClient([asks("Rome"), f"ans {task}"]), tools=[lookup]),
        [f"t{i}" for i in range(6)],
        concurrency=3,
        progress=None,
    )
    both = nbagent.concat([trace, batch.trace])
    folder = both.to_jsonl(tmp_path / "jsonl")
    expected = {"events": both.events_df(), "llm_calls": both.llm_calls_df(), "tool_calls": both.tool_calls_df(),
                "runs": both.runs_df(), **both.context_tables()}  # fmt: skip
    identity = {
        "events": ["run_id", "seq"],
        "llm_calls": ["llm_call_id"],
        "tool_calls": ["run_id", "call_id"],
        "runs": ["run_id"],
        "context_logs": ["log", "position"],
        "snapshots": ["event_row", "log", "length"],
    }
    unsorted = pl.read_ndjson(folder / "events.jsonl")
    assert (
        unsorted.sort("seq", maintain_order=True)["run_id"].to_list()[:2] != expected["events"]["run_id"].tolist()[:2]
    )
    for table, keys in ORDER_KEYS.items():
        read = pl.read_ndjson(folder / f"{table}.jsonl").sort(list(keys), maintain_order=True)
        frame = expected[table][identity[table]].astype(object)
        assert read.select(identity[table]).rows() == list(frame.itertuples(index=False, name=None)), table


async def test_the_schema_sidecar_gives_the_same_types_whatever_the_rows(tmp_path: Path, pl: ModuleType) -> None:
    trace = await late_values_trace(2)
    quiet = Trace()  # no rows at all: every column null
    for source, name in ((trace, "busy"), (quiet, "empty")):
        folder = source.to_jsonl(tmp_path / name)
        sidecar = json.loads((folder / "schema.json").read_text())
        for table in ALL:
            assert {column: spec["duckdb"] for column, spec in sidecar[table].items()} == jsonl_schema(table)
            assert {column: spec["pandas"] for column, spec in sidecar[table].items()} == {
                column: dtype for column, (dtype, _) in COLUMNS[table].items()
            }
            path = folder / f"{table}.jsonl"
            typed = pl.read_ndjson(path, schema=jsonl_schema(table, "polars"))
            assert dict(typed.schema) == jsonl_schema(table, "polars"), (name, table)
            relation = duckdb.read_json(str(path), columns=jsonl_schema(table)) if path.stat().st_size else None
            if relation is not None:
                assert [str(t) for t in relation.types] == [
                    "TIMESTAMP WITH TIME ZONE" if t == "TIMESTAMPTZ" else t for t in jsonl_schema(table).values()
                ]
    # A table with no row is an empty file: polars needs the schema for it (documented), DuckDB does not.
    empty_file = tmp_path / "empty" / "tool_calls.jsonl"
    assert empty_file.stat().st_size == 0
    with pytest.raises(pl.exceptions.ComputeError, match="empty"):
        pl.read_ndjson(empty_file)
    assert pl.read_ndjson(empty_file, schema=jsonl_schema("tool_calls", "polars")).columns == list(
        COLUMNS["tool_calls"]
    )
    assert duckdb.sql(f"SELECT count(*) FROM read_json_auto('{empty_file}')").fetchall() == [(0,)]
    assert str(pl.read_ndjson(tmp_path / "busy" / "runs.jsonl", schema=jsonl_schema("runs", "polars"))
               .schema["started_at"]) == "Datetime(time_unit='us', time_zone='UTC')"  # fmt: skip
    with pytest.raises(ValueError, match="jsonl_schema: table 'nope'"):
        jsonl_schema("nope")
    with pytest.raises(ValueError, match="jsonl_schema: engine 'spark'"):
        jsonl_schema("runs", "spark")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- combining sessions


async def two_sessions() -> tuple[Trace, Trace]:
    first = AssistantAgent("alpha", ReplayChatCompletionClient([asks("Paris"), "sunny in Paris"]), tools=[lookup])
    await first.run(task="Paris?")
    second = AssistantAgent("beta", ReplayChatCompletionClient(["hello", "again"]), model_client_stream=True)
    await second.run(task="hi")
    await second.run(task="hi again")
    return first.trace, second.trace


async def test_pd_concat_loses_the_categories_and_concat_keeps_them(tmp_path: Path) -> None:
    first, second = await two_sessions()
    loaded = [load_jsonl(first.to_jsonl(tmp_path / "a")), load_jsonl(second.to_jsonl(tmp_path / "b"))]
    plain = pd.concat([trace.runs_df() for trace in loaded], ignore_index=True)
    assert str(plain["agent"].dtype) != "category"  # what the issue saw (object, or str on pandas 3)
    both = nbagent.concat(loaded)
    for name in ("events_df", "llm_calls_df", "tool_calls_df", "runs_df"):
        frame = getattr(both, name)()
        assert {c: str(t) for c, t in frame.dtypes.items()} == {c: d for c, (d, _) in COLUMNS[name[:-3]].items()}
    assert list(both.runs_df()["agent"].cat.categories) == ["alpha", "beta"]
    assert both.sessions == [first.trace_id, second.trace_id] and both.trace_id == first.trace_id
    # The same as the Parquet dataset holding both sessions, loaded at once.
    first.to_parquet(tmp_path / "dataset")
    second.to_parquet(tmp_path / "dataset")
    assert_same(load_parquet(tmp_path / "dataset"), both)
    # Every run's context is still found (snapshots shifted past the first session's rows and logs).
    for trace in (first, second):
        for run_id in trace.runs_df()["run_id"]:
            assert_frame_equal(both.context_df(run_id), trace.context_df(run_id))


async def test_concat_of_live_traces_and_bad_input() -> None:
    first, second = await two_sessions()
    both = nbagent.concat([first, second])
    assert len(both.runs_df()) == 3 and both.summary()["runs"] == 3
    assert nbagent.concat([both]).sessions == [first.trace_id, second.trace_id]
    overlap = first.runs_df()["run_id"].iloc[0]
    with pytest.raises(ValueError, match=rf"concat: run {overlap} is in traces\[0\] and traces\[1\]"):
        nbagent.concat([both, first])  # the first session's runs would be counted twice
    for not_a_list, named in ((first, "Trace"), ("folder", "str"), (Path("folder"), "PosixPath"), (None, "NoneType")):
        with pytest.raises(TypeError, match=rf"concat: traces is {named}, not a list of traces"):
            nbagent.concat(not_a_list)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="load_jsonl"):
        nbagent.concat("folder")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="concat: traces is empty"):
        nbagent.concat([])
    with pytest.raises(TypeError, match=r"concat: traces\[1\] is DataFrame, not a trace"):
        nbagent.concat([first, first.runs_df()])  # type: ignore[list-item]


def test_texts_that_look_typed_early_do_not_break_duckdb_later(tmp_path: Path, pl: ModuleType) -> None:
    """DuckDB reads a text column as UUID (DATE, TIMESTAMP...) when every text of its 20,480-line
    sample looks so, then fails on a later text that does not ("Could not convert string 'Error: ...'
    to UUID"): measured with a tool returning new record ids for 20,600 calls, the last one failing.
    The first text that does not look typed opens the file too."""
    n = 20_600
    results = [str(uuid.UUID(int=i)) for i in range(n - 1)] + ["Error: ValueError: quota reached"]
    days = [f"2026-01-{1 + i % 28:02d}" for i in range(n - 1)] + ["no day"]
    calls = frame(
        "tool_calls",
        {
            **{name: [None] * n for name in COLUMNS["tool_calls"]},
            "trace_id": ["t"] * n,
            "run_id": [str(uuid.UUID(int=1))] * n,
            "call_id": days,
            "tool_name": ["new_record"] * n,
            "result": results,
            "is_error": [False] * (n - 1) + [True],
        },
    )
    tables = {table: empty(table) for table in ALL}
    folder = LoadedTrace({**tables, "tool_calls": calls}, "t").to_jsonl(tmp_path / "jsonl")
    path = folder / "tool_calls.jsonl"
    ((rows, results_read, errors),) = duckdb.sql(
        f"SELECT count(*), count(result), count(*) FILTER (WHERE result LIKE 'Error:%') FROM read_json_auto('{path}')"
    ).fetchall()
    assert (rows, results_read, errors) == (n, n, 1)
    assert duckdb.sql(f"SELECT typeof(result), typeof(call_id) FROM read_json_auto('{path}') LIMIT 1").fetchall() == [
        ("VARCHAR", "VARCHAR")
    ]
    assert json.loads((folder / "trace.json").read_text())["first"]["tool_calls"] == [0, n - 1]
    assert_same(LoadedTrace({**tables, "tool_calls": calls}, "t"), load_jsonl(folder))
    assert pl.read_ndjson(path).height == n


def test_first_rows() -> None:
    uid = str(uuid.UUID(int=5))
    assert first_rows([[None, "a", "b"], [1, None, 2]]) == [0, 1]
    assert first_rows([[uid, uid, "plain", uid]]) == [0, 2]  # a UUID first: the first text that is not
    assert first_rows([[uid, uid]]) == [0]  # only ids: nothing more
    assert first_rows([["2026-01-02T03:04:05.000001+00:00", "x"]], [True]) == [0]  # times are skipped
    assert first_rows([["12:30", "13:00", "lunch"], ["2026-1-2", None, "soon"]]) == [0, 2]
