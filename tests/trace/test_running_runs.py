"""A run is in a Parquet dataset once, ended: ``to_parquet`` while a run is still going leaves it out
(with a warning) and writes it once it has ended, so no reader (``load_parquet``, a lazy trace, DuckDB
over a glob) ever sees a run twice or a run cut short."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path

import duckdb
import pytest

import nbagent.autogen as na
from nbagent import AssistantAgent, Trace, load_jsonl, load_parquet
from nbagent.trace import CONTEXT_TABLES, TABLES

from ..autogen.helpers import SlowReplay, round_robin
from ..frames import assert_frame_equal
from .helpers import calls
from .test_export import assert_same

KEYS = {"runs": "run_id", "llm_calls": "run_id, call_index", "tool_calls": "run_id, call_id", "events": "run_id, seq"}


def assert_each_row_once(folder: Path, runs: int) -> None:
    """A glob over each table (what DuckDB, Spark or pandas read) sees each row once and ``runs`` runs."""
    for table, key in KEYS.items():
        rows = duckdb.sql(
            f"SELECT {key}, count(*) FROM read_parquet('{folder}/{table}/**/*.parquet') GROUP BY ALL"
        ).fetchall()
        assert {row[-1] for row in rows} <= {1}, table  # a table may have no rows (runs with no tool call)
    counted = duckdb.sql(f"SELECT count(*), count(DISTINCT run_id) FROM read_parquet('{folder}/runs/**/*.parquet')")
    assert counted.fetchall() == [(runs, runs)]


async def test_a_run_exported_while_it_runs_is_written_once_after_it_ends(tmp_path: Path) -> None:
    """Issue: a run exported running, then again ended, was in the dataset twice (every table)."""
    gate = asyncio.Event()

    async def slow(x: int) -> int:
        """Waits for the test."""
        await gate.wait()
        return x

    client_answers = [calls(("c1", "slow", '{"x": 1}')), "slow done", "quick done", "third done"]
    from nbagent import ReplayChatCompletionClient

    slow_agent = AssistantAgent("slow", ReplayChatCompletionClient(client_answers[:2]), tools=[slow])
    quick = AssistantAgent("quick", ReplayChatCompletionClient(client_answers[2:]))
    trace = Trace()
    trace.attach(slow_agent)
    trace.attach(quick)
    folder = tmp_path / "traces"

    going = asyncio.create_task(slow_agent.run(task="wait"))
    while trace.tool_calls_df().empty:  # the slow run is in its tool call
        await asyncio.sleep(0.01)
    await quick.run(task="first")  # ended, while the slow one is still going
    assert sorted(trace.runs_df()["status"]) == ["ok", "running"]
    with pytest.warns(
        RuntimeWarning,
        match=r"to_parquet: 1 run\(s\) still going left out of .*traces.*once it has ended.*clear\(\) keeps them whole",
    ):
        trace.to_parquet(folder)
    assert load_parquet(folder).runs_df()["task"].tolist() == ["first"]  # the ended run alone
    assert_each_row_once(folder, 1)
    lazy = load_parquet(folder, lazy=True)

    gate.set()
    await going
    await quick.run(task="second")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        trace.to_parquet(folder)  # the slow run, now ended, and the new one: no warning
    trace.to_parquet(folder)  # nothing new: no part
    session = f"session={trace.trace_id}"
    for table in TABLES + CONTEXT_TABLES:
        names = sorted(p.name for p in (folder / table / session).iterdir())
        assert names == ["part-0.parquet", "part-1.parquet"], table
    assert_each_row_once(folder, 3)
    loaded = load_parquet(folder)
    assert sorted(loaded.runs_df()["status"]) == ["ok", "ok", "ok"]
    # in the dataset's order (its parts in order): the runs as the live trace has them, rows and context
    order = loaded.runs_df()["run_id"].astype(str).tolist()
    assert sorted(order) == sorted(trace.runs_df()["run_id"].astype(str))
    for run in order:
        live_run = trace.runs_df().query("run_id == @run").reset_index(drop=True)
        mine = loaded.runs_df().query("run_id == @run").reset_index(drop=True)
        assert_frame_equal(mine, live_run, check_categorical=False)
        for seq in range(len(trace.events_df().query("run_id == @run"))):
            assert_frame_equal(loaded.context_df(run, seq), trace.context_df(run, seq))
    # a lazy trace opened before the second export picks up its part (one new part read)
    new = lazy.refresh()
    assert new.parts == [(trace.trace_id, 1)] and lazy.parts == [(trace.trace_id, 0), (trace.trace_id, 1)]
    assert sorted(new.runs_df()["task"]) == ["second", "wait"]
    assert_frame_equal(lazy.runs_df(), loaded.runs_df())
    assert lazy.refresh().parts == [] and lazy.refresh().runs_df().empty


async def test_a_run_paused_in_the_stepper_is_written_once_it_is_walked_to_its_end(tmp_path: Path) -> None:
    """A run walked move by move (the stepper) and exported while paused is left out; walked to its
    end, the next export writes it, each row once."""
    from nbagent import ReplayChatCompletionClient, Stepper

    from .helpers import add

    agent = AssistantAgent(
        "stepped", ReplayChatCompletionClient([calls(("c1", "add", '{"a": 2, "b": 3}')), "5"]), tools=[add]
    )
    stepper = Stepper(agent, "add 2 and 3")
    await stepper.run_until(move="tool_request")
    folder = tmp_path / "traces"
    with pytest.warns(RuntimeWarning, match=r"1 run\(s\) still going"):
        agent.trace.to_parquet(folder)
    assert not (folder / "runs").exists()
    await stepper.run_to_end()
    agent.trace.to_parquet(folder)
    agent.trace.to_parquet(folder)
    assert_each_row_once(folder, 1)
    assert_same(agent.trace, load_parquet(folder))


async def test_export_then_clear_while_a_run_goes_writes_that_run_whole_once_it_ends(tmp_path: Path) -> None:
    """The README's bounded service (export, then ``trace.clear()``) with a run paused across it: the run
    keeps all it recorded, so the export after it ends writes it whole (the same rows as with no clear),
    while the run ended before the clear is forgotten by the trace and in the folder once."""
    from nbagent import ReplayChatCompletionClient, Stepper

    from .helpers import add

    def make() -> AssistantAgent:
        script = [calls(("c1", "add", '{"a": 2, "b": 3}'))] * 2  # two runs (each ends with a tool-call summary)
        return AssistantAgent("stepped", ReplayChatCompletionClient(script), tools=[add])

    reference = make()  # the same run, recorded with no clear
    await reference.run(task="add 2 and 3")
    agent = make()
    await agent.run(task="add 2 and 3")  # ended before the clear
    stepper = Stepper(agent, "add 2 and 3")
    await stepper.run_until(move="tool_request")
    folder = tmp_path / "traces"
    with pytest.warns(RuntimeWarning, match=r"1 run\(s\) still going"):
        agent.trace.to_parquet(folder)
    agent.trace.clear()
    assert len(agent.trace.runs_df()) == 1  # the run going stays, whole
    await stepper.run_to_end()
    agent.trace.to_parquet(folder)
    assert_each_row_once(folder, 2)
    loaded = load_parquet(folder)
    walked = loaded.runs_df()["run_id"].iloc[-1]
    for table in ("events_df", "llm_calls_df", "tool_calls_df"):
        ours = getattr(loaded, table)()
        assert (ours["run_id"] == walked).sum() == len(getattr(reference.trace, table)()), table
    events = loaded.events_df()
    assert list(events[events["run_id"] == walked]["kind"]) == list(reference.trace.events_df()["kind"])


async def test_a_team_run_still_going_is_written_with_all_its_turns_once_it_ends(tmp_path: Path) -> None:
    """A team run's turns are written with it: none of them, ended or not, while the team still goes."""
    team, writer, critic = round_robin()
    slow = SlowReplay(["Make it shorter."])
    critic._model_client = slow  # noqa: SLF001 AutoGen's agent has no public setter of its client
    trace = Trace()
    going = asyncio.create_task(na.run(team, "Write a haiku.", trace=trace))
    try:
        await asyncio.wait_for(slow.started.wait(), 30)  # the writer's turn ended, the critic's waits
        statuses = trace.runs_df()[["agent", "status"]].astype(str).values.tolist()
        assert ["writer", "ok"] in statuses and ["RoundRobinGroupChat", "running"] in statuses
        folder = tmp_path / "traces"
        with pytest.warns(RuntimeWarning, match=rf"{len(statuses)} run\(s\) still going"):  # the team and its turns
            trace.to_parquet(folder)
        assert not (folder / "runs").exists()  # nothing written: no empty part either
    finally:
        slow.release.set()
        await asyncio.wait_for(going, 30)
    trace.to_parquet(folder)
    assert_each_row_once(folder, 4)
    loaded = load_parquet(folder)
    assert_same(trace, loaded)
    team_run = str(trace.runs_df()["run_id"].iloc[0])
    turns = load_parquet(folder, lazy=True).run(team_run).runs_df()  # the team's part holds its turns
    assert turns["agent"].astype(str).tolist() == ["RoundRobinGroupChat", "writer", "critic", "writer"]


async def test_a_loaded_trace_is_written_as_recorded_once(tmp_path: Path) -> None:
    """A loaded trace's run recorded running (its writer was interrupted) never ends: written as it is,
    once however often it is exported."""
    gate = asyncio.Event()

    async def slow(x: int) -> int:
        """Waits for the test."""
        await gate.wait()
        return x

    from nbagent import ReplayChatCompletionClient

    agent = AssistantAgent(
        "slow", ReplayChatCompletionClient([calls(("c1", "slow", '{"x": 1}')), "done"]), tools=[slow]
    )
    going = asyncio.create_task(agent.run(task="wait"))
    while agent.trace.tool_calls_df().empty:
        await asyncio.sleep(0.01)
    agent.trace.to_jsonl(tmp_path / "jsonl")  # a record of a run interrupted mid-way
    gate.set()
    await going
    loaded = load_jsonl(tmp_path / "jsonl")
    assert loaded.runs_df()["status"].tolist() == ["running"]
    folder = tmp_path / "traces"
    run = str(loaded.runs_df()["run_id"].iloc[0])
    # a JSONL copy made mid-run would keep the run cut short in the folder for good: the user is told
    with pytest.warns(
        RuntimeWarning, match=rf"1 run\(s\) recorded as running written as recorded .*\({run}\).*cut short"
    ):
        loaded.to_parquet(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded.to_parquet(folder)  # nothing written: no warning
    assert_each_row_once(folder, 1)
    assert load_parquet(folder).runs_df()["status"].tolist() == ["running"]


def test_to_parquet_names_its_folder_parameter(tmp_path: Path) -> None:
    trace = Trace()
    for bad in (123, None):
        with pytest.raises(TypeError, match=r"to_parquet: folder must be a str or pathlib.Path, got"):
            trace.to_parquet(bad)  # type: ignore[arg-type]
    (tmp_path / "file").write_text("x")
    with pytest.raises(NotADirectoryError, match=r"to_parquet: folder '.*file' is a file, not a folder"):
        trace.to_parquet(tmp_path / "file")


async def test_a_batch_output_session_is_refused(tmp_path: Path) -> None:
    """A Batch writes its own runs into its output's session: exporting its trace there is refused,
    naming the folder and the session, and nothing is written."""
    import nbagent

    from .helpers import tool_agent

    batch = nbagent.Batch(tool_agent("calc", "a", "b"), ["x", "y"], progress=None, output=tmp_path / "out")
    await batch.run()
    before = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "out").rglob("*"))
    with pytest.raises(ValueError, match=rf"to_parquet: folder .*out.*: session {batch.session} is a Batch's output"):
        batch.trace.to_parquet(tmp_path / "out")
    assert sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "out").rglob("*")) == before
    batch.trace.to_parquet(tmp_path / "copy")  # elsewhere: fine, each run once
    assert_each_row_once(tmp_path / "copy", 2)


async def test_a_running_batch_s_trace_exported_leaves_its_runs_going_out(tmp_path: Path) -> None:
    """``batch.trace`` of a batch writing to ``output=`` read while it runs (a loaded trace of its parts
    written and in memory) is exported as a live trace is: its runs still going left out, then written
    once they have ended."""
    import nbagent
    from nbagent import ReplayChatCompletionClient

    gate = asyncio.Event()

    async def slow(x: int) -> int:
        """Waits for the test."""
        await gate.wait()
        return x

    def make_agent(task: object) -> AssistantAgent:
        answers = [calls(("c1", "slow", '{"x": 1}')), f"done {task}"] if task == "slow" else [f"done {task}"]
        return AssistantAgent("worker", ReplayChatCompletionClient(answers), tools=[slow])

    tasks = ["slow", "a", "b", "c"]
    batch = nbagent.Batch(make_agent, tasks, progress=None, output=tmp_path / "out", part_size=2, concurrency=4)
    running = asyncio.ensure_future(batch.run())
    try:
        while sorted(batch.trace.runs_df()["status"].astype(str)) != ["ok", "ok", "ok", "running"]:
            await asyncio.sleep(0.02)
        with pytest.warns(RuntimeWarning, match=r"1 run\(s\) still going"):
            batch.trace.to_parquet(tmp_path / "copy")
        assert_each_row_once(tmp_path / "copy", 3)
    finally:
        gate.set()
        await running
    assert batch.trace.records_runs is False
    batch.trace.to_parquet(tmp_path / "copy")
    assert_each_row_once(tmp_path / "copy", 4)
    statuses = load_parquet(tmp_path / "copy").runs_df()["status"].astype(str).tolist()
    assert statuses.count("ok") == 4


async def test_each_file_s_category_dictionaries_hold_its_own_rows_values(tmp_path: Path) -> None:
    """A part of a trace exported again and again, and a session of a trace of several, store in each
    category column's dictionary the values of their own rows (they stored every run of the whole
    trace: a tenth export's runs file held ten times its runs' ids); loading back is unchanged."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from nbagent import concat

    from .explore_data import record_runs

    trace = Trace(trace_id="long")
    folder = tmp_path / "traces"
    counts = []
    for export in range(3):
        await record_runs(trace, export, 6)
        trace.to_parquet(folder)
        counts.append(len(trace.runs_df()))
    other = Trace(trace_id="other")
    await record_runs(other, 7, 4)
    concat([other, Trace(trace_id="third")]).to_parquet(tmp_path / "two")
    checked = 0
    for path in [*folder.rglob("*.parquet"), *(tmp_path / "two").rglob("*.parquet")]:
        for column in pq.read_table(path).columns:
            for chunk in column.chunks:
                if isinstance(chunk, pa.DictionaryArray):
                    used = set(chunk.dictionary.take(chunk.indices.drop_null()).to_pylist())
                    assert set(chunk.dictionary.to_pylist()) == used, path
                    checked += 1
    assert checked > 50
    runs = pq.read_table(folder / "runs" / "session=long" / "part-2.parquet").column("run_id").chunk(0)
    assert len(runs.dictionary) == len(runs) == counts[2] - counts[1]  # the third export's runs alone
    assert_same(trace, load_parquet(folder))
