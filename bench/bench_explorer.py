"""Benchmark of the run explorer over 100,000 runs (issue 30).

The runs and tool calls are synthetic frames with the trace's exact columns and dtypes
(``tests/trace/explore_data.py``: statuses, agents, tools, errors, two-line tasks, answers, forks,
team turns, nulls), as ``runs_df()`` / ``tool_calls_df()`` of a loaded dataset give them. Timed, as
medians of ``--repeats``:

* **build**: ``RunTable`` (the display table, the tool index) and the explorer with its widget.
* **filter** (a new filter value: its mask computed) and **sort** (a new sort of 100,000 runs).
* **page**: what the kernel does on a page turn: the page's rows sliced and drawn as the escaped
  HTML table, the widget's state set (``ExplorerWidget.refresh``). Goal: under 50 ms.
* **static copy**: the first page, the query and the run shown, as the saved notebook keeps them.

Then **live updates**: a live trace of ``--live-runs`` runs followed by an explorer (filtered and
sorted); the time of an update after 10 more runs (``explorer.refresh()``: the new runs' rows alone
built into frames, put into the table, the selection made again) against reading the whole trace
again (``runs_df()`` and the tool calls of every run: what each update did before).

Then a Parquet dataset of ``--dataset-runs`` real runs (scripted agents' runs, with tool calls, a
failing tool, failed runs, streamed answers and context snapshots, copied with new run ids and times
into 4 sessions: every table filled as a real trace fills it; made once, kept in ``--cache``), explored
three ways, each in a fresh process of its own (so that its memory is its own), in one run:

* **lazy** (what ``nbagent.explore(folder)`` does): ``load_parquet(folder, lazy=True)``, the runs
  table and ``tool_calls``' ``run_id`` and ``tool_name`` read with pyarrow's dataset reader; opening a
  run reads its rows alone (``trace.run``), and ``explorer.open`` replays it into its view.
* **eager**: ``load_parquet(folder)`` (every table read), the same explorer over it.
* **duckdb**: the same reads with DuckDB (``read_parquet`` of the files, ``.df()``, cast to nbagent's
  dtypes): the runs table, the tool names, one run's rows of each table (``file_row_number`` for the
  events' positions); and a filter + sort + page pushed down to SQL (``ORDER BY ... LIMIT 50 OFFSET``)
  for when the table is not kept in memory at all.

And the two engines alternating in one process (so that the machine's load falls on both alike): the
explorer's table and one run's rows, read with pyarrow (the lazy trace) and with DuckDB.

For each: the time to the first page (open, build the table, the explorer and its widget), a filter,
a sort, a page turn, opening a run (its rows read; ``explorer.open``'s replay into the view), and the
kernel's memory after the explorer is built: RSS over the process's after its imports, pyarrow's
allocated bytes, and (in another fresh process, since tracing slows everything) tracemalloc's peak
and current over the build. The ratios eager/lazy are of figures of this one run.

    python bench/bench_explorer.py [--runs 100000] [--repeats 5] [--live-runs 10000] [--dataset-runs 100000]
        [--cache DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.trace.explore_data import record_runs, synthetic, tiled  # noqa: E402

from nbagent import Trace  # noqa: E402
from nbagent.notebook.explorer import RunExplorer  # noqa: E402
from nbagent.trace import LoadedTrace, load_parquet  # noqa: E402
from nbagent.trace.combine import cast  # noqa: E402
from nbagent.trace.explore import Filters, RunTable, run_table  # noqa: E402
from nbagent.trace.schema import COLUMNS, CONTEXT_TABLES, JSON_COLUMNS, TABLES, empty, tables_of  # noqa: E402

SESSIONS = 4


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def rss_mb() -> float:
    """This process's resident memory now, in MB (Linux)."""
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def make_dataset(folder: Path, runs: int) -> dict[str, Any]:
    """A dataset of ``runs`` real runs in ``folder`` (kept if there already): one trace's 60 runs of
    scripted agents, copied (:func:`tiled`) into :data:`SESSIONS` sessions."""
    done = folder / "made.json"
    if done.exists():
        made: dict[str, Any] = json.loads(done.read_text())
        if made.get("runs_asked") == runs:
            return made
        shutil.rmtree(folder)
    trace = Trace(trace_id="base")
    asyncio.run(record_runs(trace, 1, 50))
    base = tables_of(trace)
    copies = -(-runs // len(base["runs"]))
    started = time.perf_counter()
    LoadedTrace(tiled(base, copies, SESSIONS), "s0").to_parquet(folder)
    size = sum(path.stat().st_size for path in folder.rglob("*.parquet"))
    made = {
        "runs_asked": runs,
        "runs": copies * len(base["runs"]),
        "rows": {name: copies * len(df) for name, df in base.items()},
        "parquet_mb": round(size / 2**20, 1),
        "made_s": round(time.perf_counter() - started, 1),
    }
    done.write_text(json.dumps(made))
    return made


def duckdb_frame(con: Any, sql: str, table: str, params: list[Any] | None = None) -> Any:
    """A DuckDB query's rows as a frame of ``table`` with nbagent's dtypes (JSON columns decoded)."""
    df = con.execute(sql, params or []).df()
    columns = [c for c in df.columns if c in COLUMNS[table]]
    for column in JSON_COLUMNS.get(table, ()):
        if column in df.columns:
            df[column] = [json.loads(v) if isinstance(v, str) else None for v in df[column]]
    return cast(df[columns], table, columns)


def files(folder: Path, table: str) -> list[str]:
    return sorted(str(path) for path in folder.glob(f"{table}/session=*/part-*.parquet"))


def child(mode: str, folder: Path, repeats: int, memory_only: bool) -> dict[str, Any]:
    """One way of exploring the dataset, in this fresh process: its figures."""
    import pyarrow as pa

    if mode == "duckdb":
        import duckdb
    figures: dict[str, Any] = {}
    gc.collect()
    base_rss = rss_mb()
    base_arrow = pa.total_allocated_bytes()
    if memory_only:
        tracemalloc.start()
    started = time.perf_counter()
    if mode == "duckdb":
        con = duckdb.connect()
        con.execute("SET threads = 2")

        def duckdb_table() -> RunTable:
            runs = duckdb_frame(con, f"SELECT * FROM read_parquet({files(folder, 'runs')!r})", "runs")
            uses = duckdb_frame(
                con, f"SELECT run_id, tool_name FROM read_parquet({files(folder, 'tool_calls')!r})", "tool_calls"
            )
            return RunTable(runs, uses)

        table = duckdb_table()
        trace: Any = None
        explorer: Any = None
    else:
        trace = load_parquet(folder, lazy=True) if mode == "lazy" else load_parquet(folder)
        figures["open_ms"] = round((time.perf_counter() - started) * 1000, 1)
        explorer = RunExplorer(trace)
        widget = explorer.widget()
        table = explorer.table
    figures["first_page_ms"] = round((time.perf_counter() - started) * 1000, 1)
    gc.collect()
    figures["rss_mb"] = round(rss_mb() - base_rss, 1)
    figures["arrow_mb"] = round((pa.total_allocated_bytes() - base_arrow) / 2**20, 1)
    if memory_only:
        current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        return {"tracemalloc_current_mb": round(current / 2**20, 1), "tracemalloc_peak_mb": round(peak / 2**20, 1)}
    figures["runs"] = len(table)
    # the table alone (the runs, the tool names, RunTable), made again: lazy and DuckDB read the files
    if mode == "duckdb":
        figures["table_ms"] = median_ms(duckdb_table, max(1, repeats // 2))
    elif mode == "lazy":
        figures["table_ms"] = median_ms(lambda: run_table(trace), max(1, repeats // 2))
    figures["filter_status_ms"] = median_ms(lambda: anew(table, Filters.of(status="ok")), repeats)
    figures["filter_tool_ms"] = median_ms(lambda: anew(table, Filters.of(tool="add")), repeats)
    figures["sort_tokens_ms"] = median_ms(lambda: anew(table, Filters(), "tokens"), repeats)
    positions = table.select(Filters.of(tool="add")).positions
    run = str(table.run_ids[positions[len(positions) // 2]])
    if explorer is not None:
        explorer.filter(status="ok").sort_by("tokens", ascending=False)
        pages = explorer.current.pages(explorer.page_size)

        def turn() -> None:
            explorer.page((explorer.page_number + 1) % pages)
            widget.refresh()

        figures["page_turn_ms"] = median_ms(turn, repeats * 4)
        if mode == "lazy":  # one run's rows of every table, read from the dataset
            figures["run_rows_ms"] = median_ms(lambda: trace.run(run), repeats)
        # the run read back for its replay (eager: the replay index of the frames in memory)
        figures["replay_ms"] = median_ms(lambda: trace.replay(run), max(1, repeats // 2))
        # what picking a row does: the run replayed offline into its live view, the view's HTML
        figures["open_run_view_ms"] = median_ms(lambda: asyncio.run(explorer.open(run)), max(1, repeats // 2))
    else:
        figures["run_rows_ms"] = median_ms(lambda: duckdb_run(con, folder, run), repeats)
        runs_sql = f"read_parquet({files(folder, 'runs')!r}) WHERE status = 'ok'"
        page_sql = (
            f"SELECT {', '.join(PAGE_COLUMNS)} FROM {runs_sql} "
            "ORDER BY coalesce(prompt_tokens, 0) + coalesce(completion_tokens, 0) DESC LIMIT 50 OFFSET ?"
        )
        offsets = iter(range(0, 10**9, 50))
        figures["sql_page_ms"] = median_ms(lambda: con.execute(page_sql, [next(offsets)]).df(), repeats * 2)
        figures["sql_count_ms"] = median_ms(lambda: con.execute(f"SELECT count(*) FROM {runs_sql}").fetchone(), repeats)
    return figures


PAGE_COLUMNS = (
    "run_id, agent, task, status, error, n_llm_calls, n_tool_calls, prompt_tokens, completion_tokens, "
    "duration_s, started_at, parent_run_id, forked_from"
).split(", ")


def anew(table: RunTable, filters: Filters, sort: str | None = None) -> None:
    """A selection computed anew: no mask or sort cached."""
    table._masks.clear()  # noqa: SLF001 a new filter value each time: its mask computed
    table._sorted = None  # noqa: SLF001
    table.select(filters, sort, False)


def duckdb_run(con: Any, folder: Path, run: str) -> None:
    """One run's rows read with DuckDB as :func:`nbagent.trace.lazy.read_run` reads them: its rows of
    each table (the events with their positions in their file), its agent's snapshots, their logs."""
    rows = "SELECT * FROM read_parquet({}, file_row_number = true) WHERE run_id = ?"
    found = {name: duckdb_frame(con, rows.format(files(folder, name)), name, [run]) for name in TABLES}
    agent = str(found["runs"]["agent"].iloc[0])
    snaps = duckdb_frame(
        con, f"SELECT * FROM read_parquet({files(folder, 'snapshots')!r}) WHERE agent = ?", "snapshots", [agent]
    )
    logs = ", ".join(str(int(log)) for log in snaps["log"].dropna().unique()[-3:]) or "-1"
    duckdb_frame(
        con, f"SELECT * FROM read_parquet({files(folder, 'context_logs')!r}) WHERE log IN ({logs})", "context_logs"
    )


def live_figures(runs: int, repeats: int) -> dict[str, Any]:
    """A live trace of ``runs`` runs followed by an explorer: an update after 10 more runs (the new
    runs read alone) against reading the whole trace again (what each update did before)."""
    from nbagent.trace.explore import tool_uses

    trace = Trace()

    async def record(count: int, session: int) -> None:
        await record_runs(trace, session, count)

    asyncio.run(record(runs, 0))
    explorer = RunExplorer(trace, live=True)
    explorer.filter(status="ok").sort_by("tokens", ascending=False)
    figures: dict[str, Any] = {"runs": len(explorer.table)}
    figures["full_read_ms"] = median_ms(lambda: RunTable(trace.runs_df(), tool_uses(trace)), repeats)
    times = []
    for session in range(1, repeats + 1):
        asyncio.run(record(8, session))  # 8 tasks: 10 runs (two agents run twice)
        started = time.perf_counter()
        explorer.refresh()
        times.append((time.perf_counter() - started) * 1000)
    figures["update_10_runs_ms"] = round(statistics.median(times), 2)
    figures["runs_after"] = len(explorer.table)
    figures["full_over_update"] = round(figures["full_read_ms"] / figures["update_10_runs_ms"], 1)
    return figures


def engines(folder: Path, repeats: int) -> dict[str, Any]:
    """pyarrow (the lazy trace) and DuckDB on the same reads, alternating in this one process, so that
    the machine's load falls on both alike: the explorer's table (runs, tool names, RunTable) and one
    run's rows (the same run)."""
    import duckdb

    con = duckdb.connect()
    con.execute("SET threads = 2")
    trace = load_parquet(folder, lazy=True)
    ids = trace.table("runs", ["run_id", "n_tool_calls"])
    run = str(ids.loc[ids["n_tool_calls"] > 0, "run_id"].iloc[len(ids) // 4])

    def duckdb_table() -> RunTable:
        runs = duckdb_frame(con, f"SELECT * FROM read_parquet({files(folder, 'runs')!r})", "runs")
        uses = duckdb_frame(
            con, f"SELECT run_id, tool_name FROM read_parquet({files(folder, 'tool_calls')!r})", "tool_calls"
        )
        return RunTable(runs, uses)

    timed: dict[str, list[float]] = {}
    actions: dict[str, Callable[[], object]] = {
        "pyarrow_table_ms": lambda: run_table(trace),
        "duckdb_table_ms": duckdb_table,
        "pyarrow_run_rows_ms": lambda: trace.run(run),
        "duckdb_run_rows_ms": lambda: duckdb_run(con, folder, run),
    }
    for _ in range(repeats):
        for name, action in actions.items():
            started = time.perf_counter()
            action()
            timed.setdefault(name, []).append((time.perf_counter() - started) * 1000)
    figures: dict[str, Any] = {name: round(statistics.median(times), 1) for name, times in timed.items()}
    figures["duckdb_over_pyarrow_table"] = round(figures["duckdb_table_ms"] / figures["pyarrow_table_ms"], 2)
    figures["duckdb_over_pyarrow_run_rows"] = round(figures["duckdb_run_rows_ms"] / figures["pyarrow_run_rows_ms"], 2)
    return figures


def in_child(mode: str, folder: Path, repeats: int, memory_only: bool) -> dict[str, Any]:
    """:func:`child` in a fresh interpreter (its figures, or why it failed)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "child.json"
        command = [
            sys.executable,
            __file__,
            "--child",
            mode,
            "--folder",
            str(folder),
            "--repeats",
            str(repeats),
            "--json",
            str(out),
        ]
        if memory_only:
            command.append("--memory-only")
        done = subprocess.run(command, capture_output=True, text=True, timeout=1200)
        if done.returncode != 0 or not out.exists():
            return {"failed": (done.stderr.strip().splitlines() or ["no output"])[-1]}
        figures: dict[str, Any] = json.loads(out.read_text())
        return figures


def dataset_figures(runs: int, repeats: int, cache: Path) -> dict[str, Any]:
    """The dataset explored lazily, eagerly and with DuckDB, each in its own process; the ratios."""
    folder = cache / f"explorer-{runs}"
    made = make_dataset(folder, runs)
    figures: dict[str, Any] = {"dataset": made}
    for mode in ("lazy", "eager", "duckdb"):
        figures[mode] = in_child(mode, folder, repeats, memory_only=False)
        if mode != "duckdb":
            figures[mode].update(in_child(mode, folder, repeats, memory_only=True))
    figures["engines"] = in_child("engines", folder, max(5, repeats), memory_only=False)
    lazy, eager = figures["lazy"], figures["eager"]
    figures["eager_over_lazy"] = {
        key: round(eager[key] / lazy[key], 1)
        for key in ("first_page_ms", "rss_mb", "arrow_mb", "tracemalloc_peak_mb", "tracemalloc_current_mb")
        if isinstance(lazy.get(key), float | int) and isinstance(eager.get(key), float | int) and lazy[key] > 0
    }
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--live-runs", type=int, default=10_000, help="runs of the live trace followed (0: none)")
    parser.add_argument("--dataset-runs", type=int, default=100_000, help="runs of the Parquet dataset (0: none)")
    parser.add_argument(
        "--cache", type=Path, default=Path(tempfile.gettempdir()) / "nbagent-bench", help="where the dataset is kept"
    )
    parser.add_argument("--child", choices=("lazy", "eager", "duckdb", "engines"), help=argparse.SUPPRESS)
    parser.add_argument("--folder", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--memory-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        if args.child == "engines":
            result = engines(args.folder, args.repeats)
        else:
            result = child(args.child, args.folder, args.repeats, args.memory_only)
        args.json.write_text(json.dumps(result))
        return
    runs, calls = synthetic(args.runs)
    figures: dict[str, Any] = {"runs": args.runs, "tool_calls": len(calls)}
    figures["table_build_ms"] = median_ms(lambda: RunTable(runs, calls), max(1, args.repeats // 2))
    table = RunTable(runs, calls)
    filters = [
        ("status", Filters.of(status="error")),
        ("agent", Filters.of(agent=["calc", "writer"])),
        ("tool", Filters.of(tool="search")),
        ("error_text", Filters.of(error="limit 3")),
        ("search", Filters.of(search="tokyo")),
        ("time_range", Filters.of(since="2026-11-30 09:00", until="2026-11-30 20:00")),
    ]
    for name, chosen in filters:

        def fresh(chosen: Filters = chosen) -> None:
            table._masks.clear()  # noqa: SLF001 a new filter value each time: its mask computed
            table._sorted = None  # noqa: SLF001
            table.select(chosen)

        figures[f"filter_{name}_ms"] = median_ms(fresh, args.repeats)
    for sort in ("latency_s", "tokens", "started_at", "agent", "task"):

        def sorted_anew(sort: str = sort) -> None:
            table._sorted = None  # noqa: SLF001
            table.select(None, sort, False)

        figures[f"sort_{sort}_ms"] = median_ms(sorted_anew, args.repeats)
    tables = {name: empty(name) for name in (*TABLES, *CONTEXT_TABLES)}
    tables["runs"], tables["tool_calls"] = runs, calls
    trace = LoadedTrace(tables, "t1")
    started = time.perf_counter()
    explorer = RunExplorer(trace)
    widget = explorer.widget()
    figures["explorer_and_widget_build_ms"] = round((time.perf_counter() - started) * 1000, 1)
    explorer.filter(status="ok").sort_by("tokens", ascending=False)
    pages = explorer.current.pages(explorer.page_size)

    def turn() -> None:
        explorer.page((explorer.page_number + 1) % pages)
        widget.refresh()

    figures["page_turn_ms"] = median_ms(turn, args.repeats * 4)
    figures["page_rows"] = explorer.page_size
    figures["static_copy_ms"] = median_ms(explorer._static_html, args.repeats)  # noqa: SLF001
    figures["static_copy_kb"] = round(len(explorer._static_html()) / 1024, 1)  # noqa: SLF001
    if args.live_runs:
        figures["live"] = live_figures(args.live_runs, args.repeats)
    if args.dataset_runs:
        figures["parquet"] = dataset_figures(args.dataset_runs, args.repeats, args.cache)
    figures["load_average_1min"] = round(os.getloadavg()[0], 2)
    figures["python"] = platform.python_version()
    print(json.dumps(figures, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
