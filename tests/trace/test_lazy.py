"""A Parquet dataset read lazily (``load_parquet(folder, lazy=True)``, ``LazyTrace``) gives what the
eager ``load_parquet`` gives: every frame, the explorer's selections and pages, and each run's replay,
timeline and context read from that run's rows alone; bad input names its parameter."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from pydantic import BaseModel

from nbagent.trace import LazyTrace, LoadedTrace, load_parquet
from nbagent.trace.explore import SORT_KEYS, Filters, run_table

from ..frames import assert_frame_equal
from .explore_data import write_sessions


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("lazy") / "traces"
    asyncio.run(write_sessions(folder))
    return folder


def _same_frames(lazy: LazyTrace, eager: LoadedTrace) -> None:
    assert_frame_equal(lazy.runs_df(), eager.runs_df())
    assert_frame_equal(lazy.llm_calls_df(), eager.llm_calls_df())
    assert_frame_equal(lazy.tool_calls_df(), eager.tool_calls_df())
    assert_frame_equal(lazy.events_df(), eager.events_df())
    assert_frame_equal(lazy.events_df(include_chunks=False), eager.events_df(include_chunks=False))
    for name, frame in eager.context_tables().items():
        assert_frame_equal(lazy.context_tables()[name], frame)
    assert lazy.sessions == eager.sessions and lazy.trace_id == eager.trace_id


@pytest.mark.parametrize("session", [None, "session-a", "session-b"])
def test_every_frame_equals_the_eager_load(dataset: Path, session: str | None) -> None:
    lazy = load_parquet(dataset, session, lazy=True)
    eager = load_parquet(dataset, session)
    assert isinstance(lazy, LazyTrace) and isinstance(eager, LoadedTrace)
    _same_frames(lazy, eager)
    assert len(lazy.runs_df()) == {None: 21, "session-a": 15, "session-b": 6}[session]
    assert_frame_equal(lazy.load().runs_df(), eager.runs_df())
    assert_frame_equal(  # the same values; the categories those of the rows read
        lazy.table("tool_calls", ["run_id", "tool_name"]),
        eager.tool_calls_df()[["run_id", "tool_name"]],
        check_categorical=False,
    )
    some = [str(run) for run in eager.runs_df()["run_id"][::3]]
    want = eager.llm_calls_df()
    want = want[want["run_id"].astype("object").isin(some)].reset_index(drop=True)
    got = lazy.table("llm_calls", run_ids=some)
    assert_frame_equal(got, want, check_categorical=False)
    assert list(got["run_id"].cat.categories) == sorted(set(got["run_id"].astype(str)))


FILTERS = [
    Filters(),
    Filters.of(status="error"),
    Filters.of(agent=["calc", "planner"]),
    Filters.of(tool="add"),
    Filters.of(tool=["fail"], agent="writer"),
    Filters.of(error="failed"),
    Filters.of(search="SESSION 2"),
    Filters.of(search="again"),
]


@pytest.mark.parametrize("session", [None, "session-a"])
def test_the_explorer_table_of_a_lazy_dataset_equals_the_eager_one(dataset: Path, session: str | None) -> None:
    lazy, eager = load_parquet(dataset, session, lazy=True), load_parquet(dataset, session)
    mine, theirs = run_table(lazy), run_table(eager)
    assert_frame_equal(mine.display, theirs.display)
    for column in ("status", "agent", "tool"):
        assert mine.choices(column) == theirs.choices(column)
    runs, tool_calls = eager.runs_df(), eager.tool_calls_df()
    sorts = [None, "task", "status", "tokens", "latency_s", "parent"]
    assert set(sorts[1:]) <= set(SORT_KEYS)
    # every filter with every sort, each sort both ways (the direction alternates): the tables differ only
    # in how their frames were read, the selection is the same code
    for (i, filters), (j, sort) in itertools.product(enumerate(FILTERS), enumerate(sorts)):
        ascending = (i + j) % 2 == 0
        got, want = mine.select(filters, sort, ascending), theirs.select(filters, sort, ascending)
        assert_frame_equal(got.frame, want.frame)
        assert_frame_equal(got.page(1, 4), want.page(1, 4))
        found = eval(got.query(), {"runs": runs, "tool_calls": tool_calls, "pd": pd})  # noqa: S307 the query
        assert_frame_equal(found, got.frame)


def _plain(value: Any) -> Any:
    """A replay's fields as plain values, messages without the id and time a replay gives each anew."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(exclude={"id", "created_at"}))
    if isinstance(value, list | tuple):
        return [_plain(item) for item in value]
    if isinstance(value, dict):
        return {key: _plain(item) for key, item in value.items()}
    return value


def test_a_run_read_alone_replays_and_draws_as_in_the_whole_dataset(dataset: Path) -> None:
    lazy, eager = load_parquet(dataset, lazy=True), load_parquet(dataset)
    runs = eager.runs_df().set_index("run_id")
    run_ids = [str(run) for run in runs.index]
    for run, replay in zip(run_ids, eager.replays(run_ids), strict=True):
        alone = lazy.run(run)
        assert set(alone.events_df()["run_id"].astype(str)) == {run}
        assert set(alone.llm_calls_df()["run_id"].astype(str)) <= {run}
        assert _plain(alone.replay(run)) == _plain(replay)
        assert alone.timeline(run).to_html() == eager.timeline(run).to_html()
        last = int(runs.loc[run, "n_events"]) - 1
        for seq in sorted({0, 1, last // 2, last - 1, last}):
            try:
                want = eager.context_df(run_id=run, seq=seq)
            except LookupError:
                with pytest.raises(LookupError):
                    alone.context_df(run_id=run, seq=seq)
                continue
            assert_frame_equal(alone.context_df(run_id=run, seq=seq), want)
    for run in run_ids[3::7]:  # the lazy trace's own replay, timeline and context read the run alone
        assert _plain(lazy.replay(run)) == _plain(eager.replay(run))
        assert lazy.timeline(run).to_html() == eager.timeline(run).to_html()
        assert_frame_equal(lazy.context_df(run_id=run), eager.context_df(run_id=run))
    assert _plain(lazy.replay()) == _plain(eager.replay())
    assert lazy.timeline().to_html() == eager.timeline().to_html()


def test_bad_input_names_its_parameter(dataset: Path, tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="load_parquet: folder '.*nowhere' is not a folder"):
        load_parquet(tmp_path / "nowhere", lazy=True)
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="load_parquet: folder: no trace in .*empty"):
        load_parquet(tmp_path / "empty", lazy=True)
    with pytest.raises(FileNotFoundError, match="load_parquet: session: no session 'nobody'"):
        load_parquet(dataset, "nobody", lazy=True)
    with pytest.raises(ValueError, match="load_parquet: session: a session .* id must be letters"):
        load_parquet(dataset, "../x", lazy=True)
    with pytest.raises(TypeError, match="load_parquet: lazy must be"):
        load_parquet(dataset, lazy="yes")  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="load_parquet: folder must be"):
        LazyTrace(3)  # type: ignore[arg-type]
    lazy = load_parquet(dataset, lazy=True)
    with pytest.raises(ValueError, match="trace.table: name must be one of"):
        lazy.table("nope")
    with pytest.raises(ValueError, match=r"trace.table: columns\[1\] must be one of"):
        lazy.table("runs", ["run_id", "colour"])
    with pytest.raises(ValueError, match="trace.run: run_id must be a run of the dataset"):
        lazy.run("no-such-run")


def test_a_run_of_a_concurrent_batch_holds_its_own_tool_calls_and_context(tmp_path: Path) -> None:
    """The agents of a Batch's concurrent tasks share a name and their tool call ids ("c1"): one run read
    alone holds its own tool calls and context, not its neighbours' (on dd2e8ac each run read lazily held
    all six runs' tool calls)."""
    import nbagent
    from tests.batch.helpers import Factory

    cities = ["Paris", "Oslo", "Rome", "Lima", "Kyiv", "Doha"]
    nbagent.Batch(Factory(latency=0.01), cities, concurrency=6, output=tmp_path, progress=None).run_sync()
    whole = load_parquet(tmp_path)
    lazy = load_parquet(tmp_path, lazy=True)
    calls = whole.tool_calls_df()
    for run in whole.runs_df()["run_id"].astype("object"):
        alone = lazy.run(run)
        assert alone.tool_calls_df()["run_id"].astype("object").tolist() == [run]
        mine = calls[calls["run_id"].astype("object") == run]
        assert alone.tool_calls_df()["arguments"].tolist() == mine["arguments"].tolist()
        city = calls.loc[calls["run_id"].astype("object") == run, "arguments"].iloc[0]["city"]
        texts = alone.context_df(run_id=run)["text"].tolist()
        assert texts == whole.context_df(run_id=run)["text"].tolist()
        assert texts[0] == city and texts[-1] == f"It is sunny in {city}."


async def test_one_run_reads_the_tool_calls_file_once_with_the_earlier_calls_its_context_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42.1 ("read_run reads each runs and tool_calls file twice"): a run whose context holds an
    earlier run's tool call read its part's tool_calls file twice (its own rows, then the earlier ones)."""
    import pyarrow.parquet as pq

    from .helpers import calls, text, tool_agent

    agent = tool_agent("calc", calls(("c1", "add", '{"a": 1, "b": 2}')), text("3"), text("still 3"))
    await agent.run(task="add")
    await agent.run(task="again")  # its context holds the first run's call and result
    first, second = (str(run) for run in agent.trace.runs_df()["run_id"])
    lazy = load_parquet(agent.trace.to_parquet(tmp_path), lazy=True)
    read: list[str] = []
    real = pq.read_table

    def recorded(source: Any, *args: Any, **kwargs: Any) -> Any:
        read.append(Path(source).parent.parent.name)
        return real(source, *args, **kwargs)

    monkeypatch.setattr(pq, "read_table", recorded)
    one = lazy.run(second)
    assert read.count("tool_calls") == 1
    tools = one.tool_calls_df()
    assert list(tools["run_id"].astype(str)) == [first] and list(tools["call_id"]) == ["c1"]
    assert one.replay(second).task is not None
    eager = load_parquet(tmp_path)
    assert list(one.context_df(second)["text"]) == list(eager.context_df(second)["text"])
