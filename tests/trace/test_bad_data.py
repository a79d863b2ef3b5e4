"""Reads survive bad data and say where it is (issue 42.3): each case failed before.

A truncated or empty part is skipped with a warning naming the file (``strict=True`` refuses it); a
garbled part's error names the file; a run with a null time, an out-of-range duration, arguments nested
100,000 deep or a lone surrogate loads, shows, explores, replays (paced too, bounded) and exports to
OTLP and the timeline with those values shown as missing; a JSON lines folder whose ``trace.json``
repeats a row position is refused naming the file.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import warnings
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from nbagent import AssistantAgent, LoadedTrace, ReplayChatCompletionClient, load_jsonl, load_parquet
from nbagent.agent import replayed
from nbagent.notebook.explorer import RunExplorer
from nbagent.render import format_duration
from nbagent.trace.schema import tables_of

from .helpers import calls, text
from .test_atomic_writes import two_runs

PART = "session=s1/part-1.parquet"


@pytest.mark.parametrize("damage", ["truncated", "empty"])
async def test_a_truncated_or_empty_part_is_skipped_naming_the_file(tmp_path: Path, damage: str) -> None:
    root = tmp_path / "data"
    first = await two_runs("s1")
    first.to_parquet(root)
    second = await two_runs("s1")
    second.to_parquet(tmp_path / "other")
    for table in ("events", "llm_calls", "tool_calls", "runs", "context_logs", "snapshots"):
        got = (tmp_path / "other" / table / "session=s1" / "part-0.parquet").read_bytes()
        (root / table / PART).write_bytes(got)
    assert len(load_parquet(root).runs_df()) == 4
    bad = root / "tool_calls" / PART
    data = bad.read_bytes()
    bad.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"")
    for lazy in (False, True):
        with pytest.warns(UserWarning, match=r"part 1 of session 's1' skipped .*tool_calls/session=s1/part-1"):
            trace = load_parquet(root, lazy=lazy)
        assert list(trace.runs_df()["run_id"].astype(str)) == list(first.runs_df()["run_id"].astype(str))
    with pytest.warns(UserWarning, match="part-1.parquet"):
        explorer = RunExplorer(str(root))
    assert len(explorer.table) == 2
    with pytest.raises(ValueError, match=r"tool_calls/session=s1/part-1\.parquet: not a readable Parquet file"):
        load_parquet(root, strict=True)
    with pytest.raises(ValueError, match=r"tool_calls/session=s1/part-1\.parquet"):
        load_parquet(root, lazy=True, strict=True)


async def test_a_garbled_events_part_is_named_and_the_explorer_says_why_it_cannot_open_the_run(
    tmp_path: Path,
) -> None:
    (await two_runs("s1")).to_parquet(tmp_path)
    path = tmp_path / "events" / "session=s1" / "part-0.parquet"
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    for at in range(4, len(data) - footer):  # the pages garbled, the footer whole
        data[at] = 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"events/session=s1/part-0\.parquet: not a readable Parquet file"):
        load_parquet(tmp_path, strict=True)
    with pytest.warns(UserWarning, match=r"part 0 of session 's1' skipped .*events/session=s1/part-0\.parquet"):
        assert len(load_parquet(tmp_path).runs_df()) == 0  # its one part skipped
    explorer = RunExplorer(str(tmp_path))  # the runs table is whole: the table shows
    run = explorer.table.run_ids[0]
    html = await asyncio.wait_for(explorer.open(str(run)), 60)
    assert "cannot be replayed" in html and "part-0.parquet" in html and "opening run" not in html


def _garble(path: Path) -> None:
    """``path``'s pages garbled, its footer whole: found when read, not when the dataset is opened."""
    data = bytearray(path.read_bytes())
    footer = int.from_bytes(data[-8:-4], "little") + 8
    for at in range(4, len(data) - footer):
        data[at] = 0xFF
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("table", ["tool_calls", "runs", "llm_calls"])
async def test_a_part_found_garbled_when_read_is_skipped_naming_the_file_and_the_rest_explores(
    tmp_path: Path, table: str
) -> None:
    """Issue 42.3 ("a corrupt part is skipped with a warning naming the file"): a part whose pages are
    garbled (its footer whole, so only a read finds it) made load_parquet, the lazy frames and
    ``nbagent.explore(folder)`` raise for the whole dataset."""
    first, second = await two_runs("s1"), await two_runs("s2")
    first.to_parquet(tmp_path)
    second.to_parquet(tmp_path)
    _garble(tmp_path / table / "session=s1" / "part-0.parquet")
    kept = sorted(second.runs_df()["run_id"].astype(str))
    skipped = rf"part 0 of session 's1' skipped .*{table}/session=s1/part-0\.parquet: not a readable Parquet file"
    with pytest.warns(UserWarning, match=skipped):
        assert sorted(load_parquet(tmp_path).runs_df()["run_id"].astype(str)) == kept
    lazy = load_parquet(tmp_path, lazy=True)
    with pytest.warns(UserWarning, match=skipped):
        lazy.load()
    assert lazy.parts == [("s2", 0)] and sorted(lazy.runs_df()["run_id"].astype(str)) == kept
    # the explorer reads the runs table and two tool_calls columns: it shows the rest, and a run of the part
    # skipped (its runs read before the part was found garbled) says why it cannot be opened
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        explorer = RunExplorer(str(tmp_path))
    warned = [str(w.message) for w in seen if "skipped" in str(w.message)]
    assert len(warned) == (0 if table == "llm_calls" else 1) and all(re.search(skipped, text) for text in warned)
    shown = set(explorer.table.run_ids)
    assert set(kept) <= shown and "cannot be replayed" not in await explorer.open(kept[0])
    for run in sorted(shown - set(kept)):
        assert "cannot be replayed" in await explorer.open(run)
    with pytest.raises(ValueError, match=rf"{table}/session=s1/part-0\.parquet: not a readable Parquet file"):
        load_parquet(tmp_path, strict=True)
    with pytest.raises(ValueError, match=rf"{table}/session=s1/part-0\.parquet: not a readable Parquet file"):
        load_parquet(tmp_path, lazy=True, strict=True).load()


def _with(frames: dict[str, pd.DataFrame], table: str, **values: object) -> dict[str, pd.DataFrame]:
    out = {name: df.copy() for name, df in frames.items()}
    for column, value in values.items():
        out[table][column] = pd.Series([value] * len(out[table]), dtype=out[table][column].dtype)
    return out


@pytest.mark.parametrize("value", [math.inf, 1e300, 1e12, math.nan, -5.0])
async def test_an_out_of_range_duration_shows_as_missing_everywhere(value: float) -> None:
    frames = tables_of(await two_runs("s1"))
    for table in ("llm_calls", "tool_calls", "runs"):
        frames = _with(frames, table, duration_s=value)
    trace = LoadedTrace(frames, "s1")
    run = str(trace.runs_df()["run_id"].iloc[-1])
    spans = trace.to_otlp_json()["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert {span["name"].split()[0] for span in spans} >= {"invoke_agent"}  # the calls' spans left out
    assert "<svg" in trace.timeline(run).to_html()
    assert trace._repr_html_()
    agent, task = replayed("test", trace.replay(run, pace=True), None)
    result = await asyncio.wait_for(agent.run(task=task), 30)  # a duration out of range is not waited for
    assert result.messages[-1].content == "warm"
    # the explorer's table and the run's view show it as missing (they showed "inf s", "-5000 ms", 300 digits)
    explorer = RunExplorer(trace)
    assert explorer.table.display["latency_s"].isna().all()
    shown = str(explorer.static_bundle()["text/html"]) + await explorer.open(run)
    assert "cannot be replayed" not in shown
    if not math.isnan(value):
        assert format_duration(value) not in shown
        assert f'data-value="{value:.3f}"' not in shown
    # and the summary's percentiles leave it out (one inf made every percentile NaN, with a RuntimeWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary = trace.summary()
    assert all(math.isnan(summary[f"{kind}_{q}_s"]) for kind in ("run", "llm", "tool") for q in ("p50", "p95"))


async def test_an_out_of_range_duration_leaves_the_others_percentiles_as_they_are() -> None:
    frames = tables_of(await two_runs("s1"))
    durations = frames["runs"]["duration_s"].astype("float64").tolist()
    frames["runs"]["duration_s"] = pd.Series([math.inf, durations[1]], dtype=frames["runs"]["duration_s"].dtype)
    summary = LoadedTrace(frames, "s1").summary()
    assert summary["run_p50_s"] == summary["run_p95_s"] == pytest.approx(durations[1])


async def test_a_null_start_time_shows_as_missing_in_views_and_explorer(tmp_path: Path) -> None:
    trace = await two_runs("s1")
    frames = tables_of(trace)
    frames = _with(frames, "runs", started_at=pd.NaT)
    frames = _with(frames, "llm_calls", started_at=pd.NaT)
    loaded = LoadedTrace(frames, "s1")
    loaded.to_parquet(tmp_path)
    for each in (loaded, load_parquet(tmp_path, lazy=True)):
        assert "<table" in each._repr_html_() or each._repr_html_()
        assert "<svg" in each.timeline(str(frames["runs"]["run_id"].iloc[0])).to_html()
        explorer = RunExplorer(each)
        html = str(explorer.static_bundle()["text/html"])
        assert html.count('class="nba-x-row') == 2
    assert load_jsonl(loaded.to_jsonl(tmp_path / "j")).runs_df()["started_at"].isna().all()


async def test_arguments_nested_100000_deep_load_as_their_text(tmp_path: Path) -> None:
    deep = '{"a": ' * 100_000 + "1" + "}" * 100_000

    async def nest(a: object) -> str:
        """Takes anything."""
        return "done"

    agent = AssistantAgent("d", ReplayChatCompletionClient([calls(("c1", "nest", deep)), text("ok")]), tools=[nest])
    await agent.run(task="deep")
    assert agent.trace.tool_calls_df()["arguments"].iloc[0] == deep  # not JSON Python can read: the text
    for loaded in (
        load_parquet(agent.trace.to_parquet(tmp_path / "p")),
        load_parquet(tmp_path / "p", lazy=True),
        load_jsonl(agent.trace.to_jsonl(tmp_path / "j")),
    ):
        assert loaded.tool_calls_df()["arguments"].iloc[0] == deep
    # a JSON lines row nested that deep by hand: the error names the file and the line
    rows = tmp_path / "j" / "tool_calls.jsonl"
    lines = rows.read_text(encoding="utf-8").splitlines()
    lines[0] = lines[0].replace(json.dumps(json.dumps(deep)), deep)  # the cell as JSON, not JSON text
    assert len(lines[0]) < 2 * len(deep)
    rows.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"tool_calls\.jsonl: line 1 is not a row of JSON \(nested deeper"):
        load_jsonl(tmp_path / "j")


async def test_repeated_row_positions_in_trace_json_are_refused_naming_the_file(tmp_path: Path) -> None:
    folder = (await two_runs("s1")).to_jsonl(tmp_path)
    meta_path = folder / "trace.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8"))
    table = next(name for name, first in meta["first"].items() if len(first) >= 2)
    meta["first"][table] = [meta["first"][table][0]] * len(meta["first"][table])
    meta_path.write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(ValueError, match=rf"{table}\.jsonl: trace\.json's first rows"):
        load_jsonl(folder)


async def test_a_lone_surrogate_is_shown_and_written_as_the_replacement_character(tmp_path: Path) -> None:
    async def echo(x: str) -> str:
        """Echo."""
        return f"bad \ud800 {x}"

    agent = AssistantAgent(
        "s", ReplayChatCompletionClient([calls(("c1", "echo", '{"x": "\\udc00"}')), text("ok \udfff")]), tools=[echo]
    )
    await agent.run(task="go \ud800")
    trace = agent.trace
    assert "\ufffd" in trace.runs_df()["task"].iloc[0]
    assert "\ufffd" in trace.tool_calls_df()["result"].iloc[0]
    assert "\ufffd" in trace.timeline().to_html() and trace._repr_html_()
    assert trace.to_otlp_json(content=True)["resourceSpans"]
    assert "\ufffd" in load_parquet(trace.to_parquet(tmp_path / "p")).runs_df()["task"].iloc[0]
    assert "\ufffd" in load_jsonl(trace.to_jsonl(tmp_path / "j")).runs_df()["task"].iloc[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RunExplorer(trace).static_bundle()
    assert pq.read_table(tmp_path / "p" / "runs").num_rows == 1


def _edit_row(path: Path, line: int, **values: object) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[line - 1])
    row.update(values)
    lines[line - 1] = json.dumps(row)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.mark.parametrize(
    ("table", "column", "value"),
    [
        ("runs", "duration_s", "slow"),
        ("runs", "started_at", "yesterday"),
        ("llm_calls", "prompt_tokens", "many"),
        ("tool_calls", "is_error", "perhaps"),
    ],
)
async def test_a_json_lines_value_of_another_type_is_refused_naming_file_line_and_column(
    tmp_path: Path, table: str, column: str, value: object
) -> None:
    """Issue 42.3: each raised pandas' or numpy's own error, naming no file, line or column."""
    folder = (await two_runs("s1")).to_jsonl(tmp_path)
    _edit_row(folder / f"{table}.jsonl", 2, **{column: value})
    with pytest.raises(
        ValueError, match=rf"{table}\.jsonl: line 2, column '{column}' of '{table}' holds a value"
    ) as got:
        load_jsonl(folder)
    assert "\n" not in str(got.value)  # pandas' hints after its first line are left out


async def test_a_broken_trace_json_or_a_line_not_utf8_is_refused_naming_the_file(tmp_path: Path) -> None:
    folder = (await two_runs("s1")).to_jsonl(tmp_path)
    runs = folder / "runs.jsonl"
    runs.write_bytes(runs.read_bytes() + b'{"run_id": "\xff"}\n')
    with pytest.raises(ValueError, match=r"runs\.jsonl: line 3 is not UTF-8 text"):
        load_jsonl(folder)
    (folder / "trace.json").write_text("{nope", encoding="utf-8")
    with pytest.raises(ValueError, match=r"trace\.json: not the JSON trace\.json nbagent writes"):
        load_jsonl(folder)
    (folder / "trace.json").write_text("[1, 2]", encoding="utf-8")
    with pytest.raises(ValueError, match=r"trace\.json: not the JSON object trace\.json nbagent writes"):
        load_jsonl(folder)
