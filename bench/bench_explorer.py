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

    python bench/bench_explorer.py [--runs 100000] [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.trace.explore_data import synthetic  # noqa: E402

from nbagent.notebook.explorer import RunExplorer  # noqa: E402
from nbagent.trace import LoadedTrace  # noqa: E402
from nbagent.trace.explore import Filters, RunTable  # noqa: E402
from nbagent.trace.schema import CONTEXT_TABLES, TABLES, empty  # noqa: E402


def median_ms(action: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append((time.perf_counter() - started) * 1000)
    return round(statistics.median(times), 2)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
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
    figures["load_average_1min"] = round(os.getloadavg()[0], 2)
    figures["python"] = platform.python_version()
    print(json.dumps(figures, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")


if __name__ == "__main__":
    main()
