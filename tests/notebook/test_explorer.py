"""The run explorer's widget and model over real runs of scripted agents, without a kernel or browser."""

from __future__ import annotations

import asyncio
import html
import re
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage, Trace
from nbagent.notebook.explorer import COPY_DELAY_S, MAX_UPDATES_PER_S, ExplorerWidget, RunExplorer
from nbagent.notebook.stepper_widget import NotebookStepper

from ..frames import assert_frame_equal

XSS = '<img src=x onerror="alert(1)"><script>alert(2)</script>'


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def calc(name: str, answer: str) -> AssistantAgent:
    call = CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
    )
    client = ReplayChatCompletionClient([call, answer])
    return AssistantAgent(name, client, tools=[add])


def chat(name: str, answer: str) -> AssistantAgent:
    return AssistantAgent(name, ReplayChatCompletionClient([answer]))


async def runs_into(trace: Trace) -> None:
    for i in range(6):
        agent = calc("calc", f"it is 3 ({i})") if i % 2 else chat("chat", f"hello {XSS} {i}")
        with trace.recording(agent):
            await agent.run(task=f"task {i} {XSS}\nmore text")


@pytest.fixture
async def trace() -> Trace:
    trace = Trace()
    await runs_into(trace)
    return trace


def send(widget: ExplorerWidget, **message: object) -> None:
    """What the table's front end sends when a header or a row is clicked, or a key pressed."""
    widget.table._handle_custom_msg(dict(message), [])  # noqa: SLF001 the comm's entry point


def ids(explorer: RunExplorer) -> list[str]:
    return [str(run) for run in explorer.page()["run_id"]]


async def test_filters_sort_and_pages_in_the_widget(trace: Trace) -> None:
    explorer = trace.explore(page_size=2)
    widget = explorer.widget()
    # Trace order, the start, is named (issue 43.4: a value of None showed a blank).
    assert (widget.sort.value, widget.sort.label, explorer.current.sort) == ("", "trace order", None)
    assert widget.position.value == "page 1 of 3 · 6 of 6 runs"
    assert widget.previous.disabled and not widget.next.disabled
    widget.next.click()
    assert explorer.page_number == 1 and widget.position.value.startswith("page 2 of 3")
    widget.tool.value = ("add",)
    assert len(explorer.selection) == 3 and set(explorer.selection["agent"]) == {"calc"}
    assert explorer.page_number == 0
    widget.search.value = "HELLO"  # the answers: none of the calc runs
    assert len(explorer.selection) == 0 and widget.position.value == "page 1 of 1 · 0 of 6 runs"
    widget.tool.value = ()
    assert len(explorer.selection) == 3 and set(explorer.selection["agent"]) == {"chat"}
    widget.search.value = ""
    widget.sort.value = "task"
    widget.descending.value = True
    tasks = list(explorer.selection["task"])
    assert tasks == sorted(tasks, reverse=True)
    assert "&lt;img src=x onerror=&quot;" in widget.table.html and "<img" not in widget.table.html
    rows = re.findall(r'data-run="([^"]+)"', widget.table.html)
    assert rows == ids(explorer)
    assert 'data-column="task" aria-sort="descending"' in widget.table.html
    # a header clicked in the browser: sort by it, ascending; clicked again: descending
    send(widget, event="sort", column="agent")
    assert (explorer.current.sort, explorer.current.ascending) == ("agent", True)
    assert (widget.sort.value, widget.descending.value) == ("agent", False)
    send(widget, event="sort", column="agent")
    assert (explorer.current.sort, explorer.current.ascending, widget.descending.value) == ("agent", False, True)
    send(widget, event="sort", column="no such column")  # ignored
    assert explorer.current.sort == "agent"
    widget.sort.value = ""  # back to trace order
    assert explorer.current.sort is None and widget.sort.label == "trace order"
    widget.sort.value = "agent"
    send(widget, event="turn", pages=1)  # Page Down, on the last page
    assert explorer.page_number == 1
    widget.since.value = "not a time"
    assert "since must be an ISO date" in widget.message.value
    widget.since.value = ""
    assert widget.message.value == ""


async def test_the_query_reproduces_the_selection(trace: Trace) -> None:
    explorer = trace.explore()
    explorer.filter(tool="add", status="ok").sort_by("started_at", ascending=False)
    runs, tool_calls = trace.runs_df(), trace.tool_calls_df()
    found = eval(explorer.query, {"runs": runs, "tool_calls": tool_calls, "pd": pd})  # noqa: S307
    assert_frame_equal(found, explorer.selection)
    namespace: dict[str, object] = {"trace": trace}
    exec(explorer.code, namespace)  # noqa: S102 the code the explorer gives to paste
    assert_frame_equal(namespace["selection"], explorer.selection)  # type: ignore[arg-type]


async def test_picking_a_run_shows_its_view_escaped_and_replays_it(trace: Trace, tmp_path: Path) -> None:
    explorer = trace.explore()
    widget = explorer.widget()
    run = ids(explorer)[1]  # a calc run: a tool call
    widget.table.cursor = run  # Down to it in the browser, then Enter (or a click on it)
    send(widget, event="open", run=run, add=False)
    assert explorer.opening is not None
    shown = await explorer.opening
    assert widget.detail.value == shown == explorer.detail_html
    assert 'class="nba-view nba-state-ok"' in shown and f"run {run} (calc)" in shown
    assert 'nba-tool-card" data-tool-name="add"' in shown  # the live view's pieces, as a run shows them
    assert html.escape("task 1 <img src=x") in shown
    assert "<img" not in shown and "<script>" not in shown and html.escape("<img", quote=False) in shown
    assert f'data-run="{run}"' in widget.table.html and "nba-x-selected" in widget.table.html
    assert widget.table.cursor == run
    assert not widget.replay_button.disabled
    stepper = explorer.stepper(run)
    assert isinstance(stepper, NotebookStepper)
    await stepper.run_to_end()
    recorded = trace.runs_df().set_index("run_id")["final_text"][run]
    assert stepper.agent.trace.runs_df()["final_text"].iloc[-1] == recorded == "3"
    target = explorer.export(run, tmp_path / "run.html")
    assert target.read_text(encoding="utf-8").endswith(shown)
    with pytest.raises(ValueError, match="explore: run_id must be the id of a run of the explored trace"):
        await explorer.open("nope")


async def test_picking_two_runs_compares_them(trace: Trace) -> None:
    explorer = trace.explore()
    widget = explorer.widget()
    first, second = ids(explorer)[1], ids(explorer)[3]
    send(widget, event="open", run=first, add=False)
    assert explorer.opening is not None
    await explorer.opening
    send(widget, event="open", run=second, add=True)  # Shift-click (or Shift+Enter) on a second run
    assert explorer.picked == [first, second] and explorer.opening is not None
    await explorer.opening  # both runs read in the background (issue 42.6)
    # Its headers name the runs short (issue 43.4: the full ids were repeated four times), the full id on hover.
    comparison = nbagent.compare((trace, first), (trace, second), labels=(first[:8], second[:8]))
    assert widget.detail.value == comparison.html()
    assert widget.detail.value.count(first) == 1
    assert widget.replay_button.disabled
    send(widget, event="open", run=first, add=True)  # again: dropped from the comparison, the other shown
    assert explorer.picked == [second] and explorer.opening is not None
    await explorer.opening
    send(widget, event="open", run="not a run", add=False)
    assert widget.message.value == "explore: run must be the id of a run of the explored trace, got 'not a run'"
    with pytest.raises(ValueError, match="explore: run_ids must be one or two runs"):
        explorer.pick(*ids(explorer)[:3])


async def test_the_static_copy_is_the_first_page_and_the_run_shown(trace: Trace) -> None:
    explorer = trace.explore(page_size=4)
    explorer.sort_by("agent")
    run = ids(explorer)[0]
    await explorer.open(run)
    bundle = explorer._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    static = bundle["text/html"]
    assert static.count('class="nba-x-row') == 4 and "Run explorer: 6 of 6 runs, page 1 of 2" in static
    assert "nba-static-copy" in static and "nba-view nba-state-ok" in static
    assert "<img" not in static and "<script>alert" not in static
    assert html.escape(explorer.query) in static


async def test_a_live_trace_fills_the_table_at_most_ten_times_a_second() -> None:
    trace = Trace()
    explorer = RunExplorer(trace)
    widget = explorer.widget()
    assert explorer.live and widget.position.value == "page 1 of 1 · 0 of 0 runs"
    updates = []
    started = time.perf_counter()  # the explorer's clock
    for i in range(30):
        agent = chat("chat", f"answer {i}")
        with trace.recording(agent):
            await agent.run(task=f"task {i}")
        await asyncio.sleep(0.01)
        updates.append(explorer.updates)
    deadline = asyncio.get_running_loop().time() + 60  # a hang guard
    while len(explorer.table) < 30 and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    assert len(explorer.table) == 30 and widget.position.value.endswith("30 of 30 runs")
    # The rate over the time the runs really took (longer on a loaded machine), not their nominal sleeps.
    elapsed = explorer._last_update - started  # noqa: SLF001 the time of the last update, to bound the rate
    assert 1 <= explorer.updates
    assert explorer.updates <= MAX_UPDATES_PER_S * elapsed + 2, (explorer.updates, elapsed)
    assert "chat" in widget.agent.options
    explorer.close()
    assert explorer._timer is None  # noqa: SLF001


async def test_a_loaded_trace_and_a_batch(trace: Trace, tmp_path: Path) -> None:
    loaded = nbagent.load_parquet(trace.to_parquet(tmp_path / "ds"))
    explorer = loaded.explore()
    assert not explorer.live and len(explorer.table) == 6
    shown = await explorer.open(ids(explorer)[1])
    assert 'data-tool-name="add"' in shown
    batch = nbagent.Batch(chat("bot", "fine"), ["one", "two", "three"], progress=None)
    await batch.run()
    by_batch = nbagent.explore(batch)
    assert list(by_batch.table.display["parent"]) == ["task 0", "task 1", "task 2"]
    assert by_batch.code.startswith("import pandas as pd\nruns = batch.runs_df()")
    with pytest.raises(TypeError, match="explore: source must be a trace"):
        nbagent.explore(b"trace")  # type: ignore[arg-type]
    with pytest.raises(FileNotFoundError, match="explore: source 'trace' is not a folder"):  # a dataset's
        nbagent.explore("trace")


async def test_changes_made_in_the_browser_reach_the_static_copy_once_they_settle(trace: Trace) -> None:
    explorer = trace.explore(page_size=1)
    widget = explorer.widget()
    copies: list[str] = []
    explorer.changed = lambda: (copies.append(explorer._static_html()), widget.refresh())  # type: ignore[method-assign]  # noqa: SLF001
    for page in (2, 3, 4):
        widget.next.click()  # the widget shows each page at once
        assert widget.position.value.startswith(f"page {page} of 6")
    assert copies == []
    await asyncio.sleep(COPY_DELAY_S + 0.3)
    assert len(copies) == 1  # the static copy follows once, with the last state
    explorer.filter(agent="calc")  # from code: at once
    assert len(copies) == 2 and "3 of 6 runs" in copies[-1]
    send(widget, event="turn", pages=1)
    explorer.close()  # a pending copy is brought up to date on close
    assert len(copies) == 3 and explorer.page_number == 1


async def test_a_failed_and_a_cancelled_run_open_as_their_views_showed_them(trace: Trace) -> None:
    with trace.recording(broken := AssistantAgent("broken", ReplayChatCompletionClient([]))):
        with pytest.raises(Exception):  # noqa: B017 the scripted model has no reply
            await broken.run(task="fail")
    gate = asyncio.Event()

    async def hang() -> str:
        """Never answers."""
        gate.set()
        await asyncio.Event().wait()
        return "never"

    call = CreateResult(finish_reason="function_calls", content=[FunctionCall(id="h", name="hang", arguments="{}")])
    stuck = AssistantAgent("stuck", ReplayChatCompletionClient([call, "done"]), tools=[hang])
    with trace.recording(stuck):
        running = asyncio.ensure_future(stuck.run(task="hang"))
        await gate.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
    explorer = trace.explore()
    statuses = explorer.selection.set_index("agent")["status"]
    assert (statuses["broken"], statuses["stuck"]) == ("error", "cancelled")
    for agent, state in (("broken", "error"), ("stuck", "interrupted")):
        run = str(explorer.selection.set_index("agent")["run_id"][agent])
        shown = await explorer.open(run)
        assert f"run {run} ({agent})" in shown and f"nba-state-{state}" in shown, shown[:300]
        assert explorer.detail_html == shown


async def test_exporting_a_run_whose_id_a_file_chose_writes_it_as_text_in_the_folder(
    trace: Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = str(trace.runs_df()["run_id"].iloc[1])
    hostile = "r</title><script>x()</script>/../../escaped"
    folder = trace.to_jsonl(tmp_path / "jsonl")
    for path in folder.rglob("*.jsonl"):
        path.write_text(path.read_text(encoding="utf-8").replace(run, hostile), encoding="utf-8")
    explorer = nbagent.load_jsonl(folder).explore()
    assert hostile in ids(explorer)
    await explorer.open(hostile)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    target = explorer.export(hostile)
    assert target.parent.resolve() == work.resolve()  # in the working folder, whatever the id holds
    page = target.read_text(encoding="utf-8")
    assert "<script>" not in page and "&lt;/title&gt;&lt;script&gt;" in page


async def test_a_run_opened_shows_its_recorded_times() -> None:
    """Issue 43.4: a run opened from the explorer is replayed (no model or tool called, so it takes no time)
    and its view showed the replay's timings (the table said 75 ms, the view 0.02 s). It now shows the
    recorded ones: each LLM call's, each tool call's and the run's."""

    async def slow_add(a: int, b: int) -> int:
        """Add two numbers, slowly."""
        await asyncio.sleep(0.3)
        return a + b

    call = CreateResult(
        finish_reason="function_calls", content=[FunctionCall(id="c1", name="slow_add", arguments='{"a": 1, "b": 2}')]
    )
    agent = AssistantAgent("slow", ReplayChatCompletionClient([call, "3"], latency=0.4), tools=[slow_add])
    trace = Trace()
    with trace.recording(agent):
        await agent.run(task="add")
    run = str(trace.runs_df()["run_id"].iloc[0])
    recorded_calls = [float(s) for s in trace.llm_calls_df()["duration_s"]]
    recorded_tool = float(trace.tool_calls_df()["duration_s"].iloc[0])
    recorded_run = float(trace.runs_df()["duration_s"].iloc[0])
    assert min(recorded_calls) >= 0.4 and recorded_tool >= 0.3
    shown = await trace.explore().open(run)
    lines = re.findall(r'nba-llm-call".*?<span class="nba-muted"[^>]*>([^<]*)</span>', shown)
    assert [line.split(",")[0] for line in lines] == [f"{s * 1000:.0f} ms" for s in recorded_calls], lines
    assert f"{recorded_tool * 1000:.0f} ms" in shown
    elapsed = re.search(r'data-metric="elapsed" data-value="([^"]+)"', shown)
    assert elapsed is not None and float(elapsed.group(1)) == pytest.approx(recorded_run, abs=0.001)


async def test_opening_a_run_of_a_dataset_reads_its_files_off_the_event_loop(
    trace: Trace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 42.6: the explorer's open reads a lazily read dataset's files in a worker thread (the
    kernel's loop, and a click, are not held meanwhile), and the run's rows alone (not every run's
    model and tool calls for its recorded times)."""
    import pyarrow.parquet as pq

    readers: list[int] = []
    real = pq.read_table

    def recorded(*args: object, **kwargs: object) -> object:
        readers.append(threading.get_ident())
        return real(*args, **kwargs)  # type: ignore[arg-type]

    explorer = nbagent.load_parquet(trace.to_parquet(tmp_path / "ds"), lazy=True).explore()
    run = ids(explorer)[1]
    monkeypatch.setattr(pq, "read_table", recorded)
    shown = await explorer.open(run)
    assert 'data-tool-name="add"' in shown and "cannot be replayed" not in shown
    assert readers and threading.get_ident() not in readers
