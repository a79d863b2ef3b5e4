"""The run explorer's frame logic (nbagent.trace.explore): filters, sort, paging, the query round trip."""

from __future__ import annotations

import itertools
import time

import pandas as pd
import pytest

from nbagent.trace.explore import SORT_KEYS, TABLE_COLUMNS, Filters, RunTable

from ..frames import assert_frame_equal
from .explore_data import synthetic


@pytest.fixture(scope="module")
def data() -> tuple[pd.DataFrame, pd.DataFrame]:
    return synthetic(1500)


@pytest.fixture(scope="module")
def table(data: tuple[pd.DataFrame, pd.DataFrame]) -> RunTable:
    return RunTable(*data)


def evaluated(query: str, data: tuple[pd.DataFrame, pd.DataFrame]) -> pd.DataFrame:
    runs, tool_calls = data
    result = eval(query, {"runs": runs, "tool_calls": tool_calls, "pd": pd})  # noqa: S307 the query under test
    assert isinstance(result, pd.DataFrame)
    return result


FILTERS = [
    Filters(),
    Filters.of(status="error"),
    Filters.of(status=["ok", "cancelled"], agent="calc"),
    Filters.of(tool="add"),
    Filters.of(tool=["search", "fail"], status="ok"),
    Filters.of(error="RATE limit 3"),
    Filters.of(search="paris"),
    Filters.of(search="SUNNY 12"),
    Filters.of(since="2026-11-30 08:30", until=pd.Timestamp("2026-11-30T09:00:00+01:00")),
    Filters.of(agent=["writer", "planner"], tool="get_weather", search="tokyo", since="2026-11-30T08:10:00Z"),
    Filters.of(status="running", error="x"),  # nothing
    Filters.of(status="tool_error"),  # the runs some tool call of which gave an error
    Filters.of(status=["cancelled", "tool_error"], error="fail"),  # run errors and tool errors alike
]


@pytest.mark.parametrize("filters", FILTERS, ids=[str(i) for i in range(len(FILTERS))])
def test_the_query_gives_the_selection_for_every_sort(
    filters: Filters, table: RunTable, data: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    for sort, ascending in itertools.product([None, *SORT_KEYS], [True, False]):
        selection = table.select(filters, sort, ascending)
        got = evaluated(selection.query(), data)
        assert_frame_equal(got, selection.frame)
        assert selection.run_ids == [str(run) for run in got["run_id"]]


def test_each_filter_keeps_what_it_says(table: RunTable, data: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    runs, calls = data
    errors = table.select(Filters.of(status="error")).frame
    assert len(errors) and set(errors["status"]) == {"error"}
    assert len(errors) == (runs["status"] == "error").sum()
    adds = set(table.select(Filters.of(tool="add")).run_ids)
    assert adds == set(calls.loc[calls["tool_name"] == "add", "run_id"].astype(str))
    found = table.select(Filters.of(search="PARIS")).frame
    assert len(found) and all("paris" in task.lower() for task in found["task"])
    answers = table.select(Filters.of(search="rainy")).frame
    assert len(answers) and all("rainy" in text for text in answers["final_text"])
    window = table.select(Filters.of(since="2026-11-30 08:30:00", until="2026-11-30 08:40:00")).frame
    assert window["started_at"].min() >= pd.Timestamp("2026-11-30 08:30:00", tz="UTC")
    assert window["started_at"].max() <= pd.Timestamp("2026-11-30 08:40:00", tz="UTC")
    assert len(window) == 200  # a run every 3 s, at a fraction of a second past it
    assert len(table.select(Filters.of(status="running", error="x"))) == 0


def test_sorts_are_stable_with_nulls_last(table: RunTable) -> None:
    by_latency = table.select(None, "latency_s", False).frame
    latencies = by_latency["duration_s"]
    known = latencies.dropna()
    assert list(known) == sorted(known, reverse=True)
    assert latencies.isna().sum() and latencies.iloc[len(known) :].isna().all()
    by_tokens = table.select(None, "tokens", True).frame
    sums = (by_tokens["prompt_tokens"].fillna(0) + by_tokens["completion_tokens"].fillna(0)).tolist()
    assert sums == sorted(sums)
    by_agent = table.select(None, "agent", True).frame
    for _, group in by_agent.groupby("agent", observed=True):  # stable: trace order within an agent
        assert list(group.index) == sorted(group.index)


def test_pages_slice_the_selection(table: RunTable) -> None:
    selection = table.select(Filters.of(status="ok"), "started_at", False)
    pages = selection.pages(100)
    assert pages == -(-len(selection) // 100)
    seen = pd.concat([selection.page(number, 100) for number in range(pages)])
    assert list(seen["run_id"]) == selection.run_ids
    assert list(seen.columns) == list(TABLE_COLUMNS)
    assert list(selection.page(pages + 5, 100)["run_id"]) == list(selection.page(pages - 1, 100)["run_id"])
    empty = table.select(Filters.of(agent="nobody"))
    assert empty.pages(50) == 1 and len(empty.page(0, 50)) == 0


def test_the_display_table(table: RunTable, data: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    runs, _ = data
    shown = table.display
    assert shown["task"].iloc[3] == runs["task"].iloc[3].split("\n")[0]
    assert shown["tokens"].iloc[0] == runs["completion_tokens"].iloc[0]  # run 0 has no prompt tokens
    assert shown["parent"].iloc[5] == "r000004"  # a team turn
    assert shown["parent"].iloc[7] == "fork of r000005"
    assert pd.isna(shown["parent"].iloc[1])
    batch_runs = runs.assign(task_index=pd.Series(range(len(runs)), dtype="Int64"))
    assert RunTable(batch_runs, data[1]).display["parent"].iloc[1] == "task 1"
    assert table.choices("status") == ["cancelled", "error", "ok", "running"]
    assert table.choices("tool") == ["add", "fail", "get_weather", "search"]


def test_bad_filters_name_their_parameter(table: RunTable) -> None:
    with pytest.raises(ValueError, match="explore: colour must be one of status"):
        Filters.of(colour="red")
    with pytest.raises(TypeError, match="explore: status must be"):
        Filters.of(status=3)
    expected = r"explore: status must be a run status \(ok, error, cancelled, running, tool_error\), got 'eror'"
    with pytest.raises(ValueError, match=expected):
        table.select(Filters.of(status=["ok", "eror"]))
    assert len(table.select(Filters.of(status=["cancelled", "running"])))
    with pytest.raises(ValueError, match="explore: since must be an ISO date"):
        Filters.of(since="yesterday-ish")
    with pytest.raises(TypeError, match="explore: until must be a datetime"):
        Filters.of(until=12)
    with pytest.raises(ValueError, match="explore: sort must be one of"):
        table.select(None, "colour")
    with pytest.raises(ValueError, match="explore: page must be"):
        table.select().page(-1, 10)


def test_100k_runs_build_and_page() -> None:
    runs, calls = synthetic(100_000)
    started = time.perf_counter()
    table = RunTable(runs, calls)
    built = time.perf_counter() - started
    selection = table.select(Filters.of(status="error", search="tokyo"), "tokens", False)
    assert 0 < len(selection) < 100_000
    page = selection.page(3, 50)
    assert len(page) == 50
    assert built < 60  # a bound against a hang only: the figures are bench/bench_explorer.py's


def test_an_update_with_new_and_changed_runs_equals_a_table_made_anew(
    data: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    runs, calls = data
    first = runs.iloc[:1000].reset_index(drop=True)
    # runs 990-999 were still running when the table was made: no status, error, answer or tool call yet
    first.loc[990:, ["status", "error", "final_text"]] = ["running", None, None]
    first["status"] = first["status"].astype("object").astype("category")
    early = calls[calls["run_id"].astype("object").isin(set(first["run_id"].astype("object")[:990]))]
    table = RunTable(first, early)
    for filters in (Filters.of(tool="add"), Filters.of(status="ok"), Filters.of(search="tokyo")):
        table.select(filters)  # masks cached before the update: grown and recomputed where rows changed
    changed = runs.iloc[990:].reset_index(drop=True)  # 10 finished, 500 new
    table.update(changed, calls[calls["run_id"].astype("object").isin(set(changed["run_id"].astype("object")))])
    fresh = RunTable(runs, calls)
    assert_frame_equal(table.runs, fresh.runs)
    assert_frame_equal(table.display, fresh.display)
    assert list(table.run_ids) == list(fresh.run_ids) and "r001499" in table and "r009999" not in table
    for column in ("status", "agent", "tool"):
        assert table.choices(column) == fresh.choices(column)
    for filters, sort in itertools.product(FILTERS, [None, "tokens", "status", "parent"]):
        assert_frame_equal(table.select(filters, sort).frame, fresh.select(filters, sort).frame)
    table.update(runs.iloc[:0], calls.iloc[:0])  # nothing new: nothing changes
    assert_frame_equal(table.runs, fresh.runs)


async def test_the_follower_gives_the_runs_with_new_rows_alone() -> None:
    from nbagent import Trace
    from nbagent.trace.explore import RunFollower, run_table

    from .explore_data import record_runs

    trace = Trace()
    await record_runs(trace, 0, 4)
    follower = RunFollower(trace)
    table = run_table(trace)
    assert follower.changes() is not None and len(follower.changes()[0]) == 0  # type: ignore[index]
    await record_runs(trace, 1, 4)  # 5 runs: one agent runs twice
    changes = follower.changes()
    assert changes is not None
    runs, tool_calls = changes
    assert len(runs) == 5 and set(runs["run_id"].astype(str)).isdisjoint(table.run_ids)
    table.update(runs, tool_calls)
    fresh = run_table(trace)
    assert_frame_equal(table.runs, fresh.runs)
    assert_frame_equal(table.display, fresh.display)
    assert table.choices("tool") == fresh.choices("tool") == ["add", "fail"]
    trace.clear()
    assert follower.changes() is None  # rows forgotten: read the whole trace again
