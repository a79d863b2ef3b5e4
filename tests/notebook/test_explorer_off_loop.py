"""Issue 42.6: every read of one run from the explorer (open, Replay in stepper, a comparison of two) reads a
dataset's files off the event loop, within a deadline, and says why when it cannot.

A watchdog stands in the read path (``read_run``, what a lazily read dataset reads one run with): before
reading, it asks the event loop to run a callback and waits for it. A read made on the loop's thread
holds the loop, so the callback cannot run until the read returns: the watchdog then waits out its
guard and records the read as blocking.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

import nbagent
import nbagent.trace.base
import nbagent.trace.loaded
from nbagent.notebook.explorer import ExplorerWidget, RunExplorer
from nbagent.notebook.stepper_widget import NotebookStepper
from nbagent.trace import load_parquet
from tests.trace.explore_data import write_sessions
from tests.trace.helpers import calls, text, tool_agent

#: How long the watchdog waits for the loop's callback (a hang guard: a free loop answers at once).
GUARD_S = 5.0


class LoopWatch:
    """``read_run`` wrapped: each read first asks ``loop`` to run a callback and records whether it ran
    while the read waited (``False``: the read held the loop); ``hold`` (an Event) makes reads wait for it."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, loop: asyncio.AbstractEventLoop) -> None:
        self.answered: list[bool] = []
        self.hold: threading.Event | None = None
        real = nbagent.trace.loaded.read_run

        def watched(*args: Any, **kwargs: Any) -> Any:
            seen = threading.Event()
            loop.call_soon_threadsafe(seen.set)
            self.answered.append(seen.wait(GUARD_S))
            if self.hold is not None:
                self.hold.wait(GUARD_S)
            return real(*args, **kwargs)

        monkeypatch.setattr(nbagent.trace.loaded, "read_run", watched)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("off-loop") / "traces"
    asyncio.run(write_sessions(folder))
    return folder


@pytest.fixture
async def watch(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[LoopWatch]:
    watched = LoopWatch(monkeypatch, asyncio.get_running_loop())
    yield watched
    if watched.hold is not None:
        watched.hold.set()  # a read left waiting ends


def send(widget: ExplorerWidget, **message: object) -> None:
    """What the table's front end sends when a row is clicked (Shift-click: ``add``)."""
    widget.table._handle_custom_msg(dict(message), [])  # noqa: SLF001 the comm's entry point


def tool_runs(explorer: RunExplorer) -> list[str]:
    return [str(run) for run in explorer.filter(tool="add").current.run_ids]


async def test_replay_in_stepper_reads_a_dataset_run_off_the_loop(dataset: Path, watch: LoopWatch) -> None:
    explorer = nbagent.explore(dataset)
    widget = explorer.widget()
    run = tool_runs(explorer)[0]
    await explorer.open(run)
    watch.answered.clear()
    widget.replay_button.click()  # the click returns at once: the run is read in the background
    assert widget.replaying is not None and not widget.replaying.done()
    stepper = await widget.replaying
    assert watch.answered == [True]  # read once, the loop free meanwhile
    assert isinstance(stepper, NotebookStepper) and widget.message.value == ""
    await stepper.run_to_end()
    recorded = load_parquet(dataset).runs_df().set_index("run_id")["final_text"][run]
    assert stepper.agent.trace.runs_df()["final_text"].iloc[-1] == recorded


async def test_picking_two_runs_of_a_dataset_compares_them_off_the_loop(dataset: Path, watch: LoopWatch) -> None:
    explorer = nbagent.explore(dataset)
    widget = explorer.widget()
    first, second = tool_runs(explorer)[:2]
    send(widget, event="open", run=first, add=False)
    assert explorer.opening is not None
    await explorer.opening
    watch.answered.clear()
    send(widget, event="open", run=second, add=True)  # the click returns at once, the comparison said to come
    assert explorer.picked == [first, second] and "comparing runs" in widget.detail.value
    assert explorer.opening is not None
    shown = await explorer.opening
    assert watch.answered == [True, True]  # both runs read, the loop free meanwhile
    eager = nbagent.explore(load_parquet(dataset))
    assert shown == widget.detail.value == explorer.detail_html == eager.compare(first, second).html()
    assert (await explorer.acompare(first, second)).html() == shown


async def test_a_batch_run_read_from_its_folder_goes_off_the_loop(tmp_path: Path, watch: LoopWatch) -> None:
    """A live Batch writing to ``output=``: its runs of parts written are read from the folder, off the loop."""
    tasks = [f"task {i}" for i in range(6)]
    answers: list[Any] = []
    for i in range(6):
        answers += [calls((f"c{i}", "add", f'{{"a": 1, "b": {i}}}')), text(f"it is {i + 1}")]
    batch = nbagent.Batch(tool_agent("calc", *answers), tasks, progress=None, output=tmp_path / "out", part_size=2)
    explorer = nbagent.explore(batch)
    widget = explorer.widget()
    await batch.run()
    explorer.refresh()
    first, second = [str(run) for run in explorer.table.runs["run_id"]][:2]
    shown = await explorer.open(first)
    assert "cannot be replayed" not in shown and 'data-tool-name="add"' in shown
    widget.replay_button.click()
    assert widget.replaying is not None
    stepper = await widget.replaying
    assert isinstance(stepper, NotebookStepper)
    task = explorer.pick(first, second)
    assert task is not None
    compared = await task
    assert "cannot be compared" not in compared and first[:8] in compared and second[:8] in compared
    assert len(watch.answered) == 4 and all(watch.answered)  # open, stepper, the two compared


async def test_a_read_past_its_deadline_says_so_and_the_explorer_goes_on(
    dataset: Path, watch: LoopWatch, monkeypatch: pytest.MonkeyPatch
) -> None:
    explorer = nbagent.explore(dataset)
    widget = explorer.widget()
    first, second = tool_runs(explorer)[:2]
    monkeypatch.setattr(nbagent.trace.base, "READ_TIMEOUT_S", 0.2)
    watch.hold = threading.Event()  # every read waits (a slow disk) past the deadline
    shown = await explorer.open(first)
    assert f"run {first} cannot be replayed (TimeoutError: LazyTrace(" in shown and "not read within 0.2 s" in shown
    assert widget.detail.value == shown
    widget.replay_button.click()
    assert widget.replaying is not None and await widget.replaying is None
    assert widget.message.value.startswith(f"run {first} cannot be replayed (TimeoutError: ")
    task = explorer.pick(first, second)
    assert task is not None
    compared = await task
    assert f"runs {first} and {second} cannot be compared (TimeoutError: " in compared
    assert widget.detail.value == compared
    watch.hold.set()  # the files read again in time (the default deadline): the same explorer opens the run
    monkeypatch.setattr(nbagent.trace.base, "READ_TIMEOUT_S", 60.0)
    shown = await explorer.open(first)
    assert "cannot be replayed" not in shown and 'data-tool-name="add"' in shown
    assert all(watch.answered)


async def test_aread_reads_files_in_a_worker_thread_and_memory_on_the_loop(dataset: Path) -> None:
    """The trace's async read: a lazily read dataset's in a worker thread, a trace in memory on the loop."""
    here = threading.get_ident()
    lazy, loaded = load_parquet(dataset, lazy=True), load_parquet(dataset)
    run = str(loaded.runs_df()["run_id"].iloc[1])
    where: dict[str, int] = {}

    def replay_in(name: str) -> Any:
        def read(trace: nbagent.trace.TraceFrames) -> Any:
            where[name] = threading.get_ident()
            return trace.replay(run)

        return read

    lazy_replay = await lazy.aread(replay_in("lazy"))
    loaded_replay = await loaded.aread(replay_in("loaded"))
    assert where["lazy"] != here and where["loaded"] == here
    assert [m.content for m in lazy_replay.task] == [m.content for m in loaded_replay.task]  # type: ignore[union-attr]
    with pytest.raises(TimeoutError, match=r"LazyTrace\(.*: not read within 0.01 s"):
        await lazy.aread(lambda trace: threading.Event().wait(0.5), timeout=0.01)
