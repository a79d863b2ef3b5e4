"""The explorer tells failures apart (issue 42.4) and leads with what a reader scans (issue 43.5).

A 40-task Batch whose tool raised in 8 tasks: before, every row said ``ok`` with an empty error and the
error filter for the tool's message found 0 of 40.
"""

from __future__ import annotations

import pandas as pd

import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient
from nbagent.notebook.explorer import RunExplorer, table_html
from nbagent.trace.explore import TABLE_COLUMNS

from ..trace.helpers import calls, text


async def lookup(city: str) -> str:
    """Look a city up."""
    if city.startswith("bad"):
        raise RuntimeError(f"no such city: {city}")
    return f"{city}: sunny"


def make(task: object) -> AssistantAgent:
    city = str(task)
    client = ReplayChatCompletionClient([calls(("c1", "lookup", f'{{"city": "{city}"}}')), text(f"about {city}")])
    return AssistantAgent("weather", client, tools=[lookup], reflect_on_tool_use=True)


async def test_runs_whose_tools_failed_are_marked_filtered_and_found_by_their_error() -> None:
    tasks = [f"bad city {i}" if i % 5 == 0 else f"city {i}" for i in range(40)]
    batch = await nbagent.Batch(make, tasks, progress=None).run()
    explorer = RunExplorer(batch)
    runs = batch.runs_df()
    assert (runs["status"] == "ok").all() and int((runs["n_tool_errors"] > 0).sum()) == 8

    page = explorer.table.select().page(0, 50)
    failed = page[page["tool_errors"] > 0]
    assert len(failed) == 8 and set(failed["status"]) == {"tool_error"}
    assert all(error.startswith("lookup: ") and "no such city: bad city" in error for error in failed["error"])
    assert set(page.loc[page["tool_errors"] == 0, "status"]) == {"ok"}

    assert "tool_error" in explorer.table.choices("status")
    for filters in ({"status": ["tool_error"]}, {"error": "no such city"}):
        explorer.filter(**filters)
        assert len(explorer.current) == 8, filters
        runs_df, tool_calls = batch.trace.runs_df(), batch.trace.tool_calls_df()
        got = eval(explorer.query, {"runs": runs_df, "tool_calls": tool_calls, "pd": pd})  # noqa: S307 under test
        assert sorted(got["run_id"].astype(str)) == sorted(explorer.current.run_ids)
    explorer.filter(status=["tool_error"], error=None)
    html = str(explorer.static_bundle()["text/html"])  # the static copy a saved notebook keeps
    assert html.count('data-status="tool_error"') == 8 and "no such city: bad city 0" in html


def test_the_table_leads_with_task_status_error_and_shows_the_run_id_short() -> None:
    assert list(TABLE_COLUMNS)[:4] == ["task", "status", "error", "tool_errors"]
    assert list(TABLE_COLUMNS)[-1] == "run_id"
    run = "0123456789abcdef-run"
    page = pd.DataFrame(
        {column: [None] for column in TABLE_COLUMNS} | {"run_id": [run], "status": ["ok"], "task": ["add <b>"]}
    )
    page["started_at"] = pd.Series([pd.NaT], dtype="datetime64[ns, UTC]")  # a null time: an empty cell
    html = str(table_html(page))
    assert f'<td title="{run}">01234567</td>' in html and f'data-run="{run}"' in html
    assert html.index("add &lt;b&gt;") < html.index(">01234567<")
