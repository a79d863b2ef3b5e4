"""``trace.explore()``: a run explorer over any trace (live or loaded) or batch, in the notebook.

A table of the runs (:data:`~nbagent.trace.explore.TABLE_COLUMNS`), sorted by any column, filtered by
status, agent, tool used, error text, time range and a search over tasks and answers, a page at a
time (the frame logic is :mod:`nbagent.trace.explore`: it keeps 100,000 runs responsive). Picking a
run shows it in place as its live view draws it (the run replayed offline into an
:class:`~nbagent.notebook.view.AgentRunView`, whose static HTML is shown), with buttons to walk it in
the stepper (``nbagent.step(trace.replay(run_id))``, whose Fork button forks it), and to export the
view; picking two shows ``nbagent.compare`` of them. ``explorer.selection`` is the filtered frame and
``explorer.query`` the pandas expression that gives it. A live trace's table follows its runs (at most
:data:`MAX_UPDATES_PER_S` updates a second), and so do a batch's and a dataset folder's (the parts
committed since: ``LazyTrace.refresh``), each update reading only what is new; the saved notebook keeps
the first page and the run shown.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import ipywidgets as widgets

from .. import _check as check
from ..agent import replayed
from ..render import STYLE, Markup, concat, el, format_duration, portable
from ..sync import entry_point
from ..trace import LazyTrace, TraceFrames
from ..trace.base import read_in_worker
from ..trace.explore import (
    TABLE_COLUMNS,
    VARIANT,
    VARIANT_TABLE,
    RunTable,
    Selection,
    Variants,
    table_columns,
    tool_uses,
)
from ..trace.schema import seconds
from .explorer_table import ExplorerTable
from .saved import write_whole
from .static_display import StaticCopyDisplay
from .view import AgentRunView

if TYPE_CHECKING:
    import pandas as pd

    from ..batch import Batch
    from ..trace.dataset import DatasetFollower
    from ..trace.replay import Replay
    from .compare_view import CompareView
    from .stepper_widget import NotebookStepper

__all__ = ["COPY_DELAY_S", "MAX_UPDATES_PER_S", "ExplorerWidget", "RunExplorer", "explore"]

T = TypeVar("T")

#: At most this many table updates a second while a live trace records runs.
MAX_UPDATES_PER_S = 10
#: Seconds after the last change made in the browser (or by a live update) the static copy follows.
COPY_DELAY_S = 0.5
_WHERE = "explore"
_HEADERS = {
    "task": "task",
    "status": "status",
    "error": "error",
    "tool_errors": "tool errors",
    "llm_calls": "LLM calls",
    "tool_calls": "tool calls",
    "tokens": "tokens",
    "latency_s": "latency",
    "started_at": "started (UTC)",
    "agent": "agent",
    VARIANT: "variant",
    "parent": "parent",
    "run_id": "run",
}
#: The run id's cell shows its first characters (the whole id on hover, in ``data-run`` and when picked).
SHORT_ID = 8


_HINT = "click a header to sort, a run to open it, Shift-click a second to compare · keys: Up, Down, Enter, Page Down"

#: The cells the stylesheet colours or wraps carry a class (the others none: a page draws faster).
_CLASSES = {"status": "nba-x-status", "task": "nba-x-task", "error": "nba-x-error"}


def _cell(column: str, value: Any) -> str:
    import pandas as pd

    if value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value):
        return ""  # missing, whatever its type (a null time is NaT)
    if column == "latency_s":
        return format_duration(float(value))
    if column == "started_at":
        return str(value.strftime("%Y-%m-%d %H:%M:%S"))
    if column in ("error", "task"):
        text = str(value)
        return text if len(text) <= 120 else text[:119] + "…"
    if column == "run_id":
        return str(value)[:SHORT_ID]
    return str(value)


def _row_template(columns: tuple[str, ...]) -> Markup:
    """One row of the table of ``columns``; Markup.format escapes (and masks) every value put in it."""
    return (
        Markup('<tr class="{}" data-run="{}" data-status="{}">')
        + Markup("").join(
            el("td", Markup("{}"), class_=_CLASSES.get(column), title=Markup("{}") if column == "run_id" else None)
            for column in columns
        )
        + Markup("</tr>")
    )


#: The row templates by the columns shown (an experiment's runs have one more, their variant).
_ROWS = {columns: _row_template(columns) for columns in (tuple(TABLE_COLUMNS),)}


def table_html(
    page: pd.DataFrame, selected: frozenset[str] = frozenset(), sort: str | None = None, ascending: bool = True
) -> Markup:
    """The rows of ``page`` (the display table's columns) as an HTML table, every value escaped; the
    header of the ``sort`` column says its order (``aria-sort``)."""
    order = "ascending" if ascending else "descending"
    shown = tuple(table_columns(page))
    template = _ROWS.get(shown) or _ROWS.setdefault(shown, _row_template(shown))
    at_run, at_status = shown.index("run_id"), shown.index("status")
    head = el(
        "tr",
        [
            el("th", _HEADERS[column], scope="col", data_column=column, aria_sort=order if column == sort else None)
            for column in shown
        ],
    )
    columns = [page[column].tolist() for column in shown]
    rows = []
    for values in zip(*columns, strict=True):
        run_id, status = str(values[at_run]), str(values[at_status])
        row_class = "nba-x-row nba-x-selected" if run_id in selected else "nba-x-row"
        cells: list[str] = []
        for column, value in zip(shown, values, strict=True):
            if column == "run_id":
                cells.append(run_id)  # the title: the whole id
            cells.append(_cell(column, value))
        rows.append(template.format(row_class, run_id, status, *cells))
    return el("table", [el("thead", head), el("tbody", rows)], class_="nba-table nba-explorer-table")


class ExplorerWidget(widgets.VBox):  # type: ignore[misc]
    """Filters, sort, the page's table (:class:`ExplorerTable`: click a header to sort by it, a row to
    open it, Shift/Ctrl-click a second to compare; or Up, Down and Enter), pager, the picked run's view."""

    def __init__(self, explorer: RunExplorer) -> None:
        self.explorer = explorer
        table = explorer.table
        layout = widgets.Layout(width="auto")
        self.status = widgets.SelectMultiple(options=table.choices("status"), description="status", rows=3)
        self.agent = widgets.SelectMultiple(options=table.choices("agent"), description="agent", rows=3)
        # an experiment's runs: their variant (hidden for runs of none)
        self.variant = widgets.SelectMultiple(options=table.choices(VARIANT), description="variant", rows=3)
        self.tool = widgets.SelectMultiple(options=table.choices("tool"), description="tool", rows=3)
        self.error = widgets.Text(description="error", placeholder="error text", continuous_update=False)
        self.search = widgets.Text(description="search", placeholder="task or answer", continuous_update=False)
        self.since = widgets.Text(description="since", placeholder="2026-12-01 09:00", continuous_update=False)
        self.until = widgets.Text(description="until", placeholder="UTC, ISO", continuous_update=False)
        # Trace order is "" (a Dropdown whose value is None has no selection: it showed a blank).
        shown = table_columns(table.display)
        self.sort = widgets.Dropdown(options=[("trace order", ""), *((_HEADERS[c], c) for c in shown)])
        self.sort.description = "sort by"
        self.descending = widgets.ToggleButton(description="descending", value=False, layout=layout)
        self.message = widgets.Label()
        self.table = ExplorerTable(self._on_table)
        self.previous = widgets.Button(description="previous", icon="chevron-left", layout=layout)
        self.next = widgets.Button(description="next", icon="chevron-right", layout=layout)
        self.position = widgets.Label()
        self.hint = widgets.Label(_HINT)
        self.replay_button = widgets.Button(description="Replay in stepper", icon="play", layout=layout)
        self.export_button = widgets.Button(description="Export view", icon="download", layout=layout)
        self.detail = widgets.HTML()
        self.output = widgets.Output()
        filter_controls = {
            "status": self.status,
            "agent": self.agent,
            VARIANT: self.variant,
            "tool": self.tool,
            "error": self.error,
            "search": self.search,
            "since": self.since,
            "until": self.until,
        }
        for name, control in filter_controls.items():
            control.observe(self._on_filter, names="value")
            control.add_class(f"nba-x-filter-{name}")  # a handle for the page's scripts and tests
        self.position.add_class("nba-x-position")
        self.detail.add_class("nba-x-detail")
        self.sort.observe(self._on_sort, names="value")
        self.descending.observe(self._on_sort, names="value")
        self.previous.on_click(lambda _: self._turn(-1))
        self.next.on_click(lambda _: self._turn(1))
        self.replay_button.on_click(lambda _: self._replay())
        self.export_button.on_click(lambda _: self._export())
        filters = widgets.HBox([self.status, self.agent, self.variant, self.tool])
        texts = widgets.HBox([widgets.VBox([self.error, self.search]), widgets.VBox([self.since, self.until])])
        super().__init__(
            [
                widgets.HTML(STYLE),
                filters,
                texts,
                widgets.HBox([self.sort, self.descending, self.message]),
                self.table,
                widgets.HBox([self.previous, self.position, self.next]),
                self.hint,
                widgets.HBox([self.replay_button, self.export_button]),
                self.detail,
                self.output,
            ]
        )
        self.add_class("nba-explorer-live")
        self.add_class("nba-stepper-live")  # the stylesheet's pairing: a connected widget hides the copy
        self._updating = False
        #: The Replay button's last read of a run and its stepper (``None``: it could not be shown).
        self.replaying: asyncio.Task[NotebookStepper | None] | None = None
        self.refresh()

    def _turn(self, pages: int) -> None:
        with self.explorer.settling():
            self.explorer.turn(pages)

    def _on_filter(self, _change: object) -> None:
        if self._updating:
            return
        try:
            with self.explorer.settling():
                self.explorer.filter(
                    status=self.status.value,
                    agent=self.agent.value,
                    variant=self.variant.value,
                    tool=self.tool.value,
                    error=self.error.value,
                    search=self.search.value,
                    since=self.since.value or None,
                    until=self.until.value or None,
                )
        except (TypeError, ValueError) as error:
            self.message.value = str(error)

    def _on_sort(self, _change: object) -> None:
        if not self._updating:
            with self.explorer.settling():
                self.explorer.sort_by(self.sort.value or None, ascending=not self.descending.value)

    def _on_table(self, message: dict[str, Any]) -> None:
        """What the table sends: a header clicked (sort by it; again: the other way), a row opened
        (``add``: picked beside the one shown, to compare; again: dropped), Page Down / Up."""
        explorer = self.explorer
        event = message["event"]
        try:
            with explorer.settling():
                if event == "sort" and message.get("column") in table_columns(explorer.table.display):
                    column = message["column"]
                    same = explorer.current.sort == column
                    explorer.sort_by(column, ascending=not explorer.current.ascending if same else True)
                elif event == "open":
                    run = explorer.check_run("run", message.get("run"))
                    if not message.get("add"):
                        explorer.pick(run)
                    elif run in explorer.picked:
                        explorer.pick(*(picked for picked in explorer.picked if picked != run))
                    else:
                        explorer.pick(*explorer.picked[-1:], run)
                elif event == "turn" and isinstance(message.get("pages"), int):
                    explorer.turn(max(-1, min(1, message["pages"])))
        except (TypeError, ValueError) as error:
            self.message.value = str(error)

    def _replay(self) -> None:
        """The Replay button: the picked run's stepper shown below, its rows read in the background."""
        if self.explorer.picked:
            self.replaying = asyncio.get_event_loop().create_task(self._show_stepper(self.explorer.picked[0]))

    async def _show_stepper(self, run: str) -> NotebookStepper | None:
        """Run ``run``'s stepper (:meth:`RunExplorer.astepper`) shown in the output below; ``None`` and the
        message saying why when it cannot be (its rows unreadable or not read in time)."""
        self.message.value = f"reading run {run}…"
        try:
            stepper = await self.explorer.astepper(run)
        except Exception as error:  # the reason is shown; the explorer goes on
            self.message.value = f"run {run} cannot be replayed ({type(error).__name__}: {error})"
            return None
        self.message.value = ""
        with self.output:
            self.output.clear_output()
            from IPython.display import display

            display(stepper)  # type: ignore[no-untyped-call]
        return stepper

    def _export(self) -> None:
        if self.explorer.picked:
            path = self.explorer.export(self.explorer.picked[0])
            self.message.value = f"written {path}"

    def refresh(self) -> None:
        """Show the explorer's state: the choices, the page, the pager and the picked run."""
        explorer = self.explorer
        table = explorer.table
        page = explorer.page()
        with self.hold_sync():
            self._updating = True
            try:
                for name in ("status", "agent", VARIANT, "tool"):
                    control = getattr(self, name)
                    choices = tuple(table.choices(name))
                    if tuple(control.options) != choices:
                        keep = tuple(value for value in control.value if value in choices)
                        control.options = choices
                        control.value = keep
                self.variant.layout.display = None if self.variant.options else "none"
                self.message.value = "" if not self.message.value.startswith("written") else self.message.value
                current = explorer.current
                table_view = table_html(page, frozenset(explorer.picked), current.sort, current.ascending)
                self.table.html = str(el("div", table_view, class_="nba-trace nba-explorer"))
                on_page = set(page["run_id"].astype(str).tolist())
                if self.table.cursor not in on_page:
                    self.table.cursor = next((run for run in explorer.picked if run in on_page), "")
                self.sort.value, self.descending.value = current.sort or "", not current.ascending
                pages = explorer.current.pages(explorer.page_size)
                self.position.value = (
                    f"page {explorer.page_number + 1} of {pages} · {len(explorer.current):,} of {len(table):,} runs"
                )
                self.previous.disabled = explorer.page_number == 0
                self.next.disabled = explorer.page_number >= pages - 1
                self.replay_button.disabled = self.export_button.disabled = len(explorer.picked) != 1
                self.detail.value = explorer.detail_html
            finally:
                self._updating = False


class RunExplorer(StaticCopyDisplay[ExplorerWidget]):
    """The runs of ``source`` (a trace, live or loaded, or a ``Batch``), filtered, sorted and paged.

    Display it for the widget; or drive it from code: :meth:`filter`, :meth:`sort_by`, :meth:`turn`,
    :meth:`pick` / ``await`` :meth:`open`. :attr:`selection` is the frame of the runs kept (rows of
    ``runs_df()``), :attr:`query` the pandas expression giving it over ``runs`` and ``tool_calls``.
    """

    def __init__(
        self,
        source: TraceFrames | Batch | str | os.PathLike[str],
        *,
        page_size: int = 50,
        live: bool | None = None,
        session: str | None = None,
    ) -> None:
        super().__init__()
        from ..batch import Batch

        if session is not None and not isinstance(source, str | os.PathLike):
            raise check.wrong_value(_WHERE, "session", "None unless source is a dataset's folder", session)
        if isinstance(source, str | os.PathLike):  # a Parquet dataset, read lazily
            source = LazyTrace(source, session, where=f"{_WHERE}:source")
        if isinstance(source, Batch):
            self.trace: TraceFrames = source.trace
            self.name = "batch"
        elif isinstance(source, TraceFrames):
            self.trace = source
            self.name = "trace"
        else:
            raise check.wrong_type(
                _WHERE,
                "source",
                "a trace (Trace, LoadedTrace, LazyTrace), a Batch or a Parquet dataset's folder",
                source,
            )
        self.source = source
        self.page_size = int(check.integer(_WHERE, "page_size", page_size, minimum=1) or 1)
        check.boolean(_WHERE, "live", live, none=True)
        # a batch writing to a dataset: its runs so far read again (from the folder and its parts in memory)
        self._rereads = isinstance(source, Batch) and source.output is not None
        #: Whether the table follows the trace's new runs (a live trace's or a batch's, by default).
        if live is None:  # a dataset's folder is followed too: a batch or an exporting session adds to it
            live = self.trace.follower() is not None or (
                isinstance(source, Batch) and self._rereads and source.state in ("new", "running")
            )
        self.live = bool(live)
        self.page_number = 0
        #: The runs picked (one shown, two compared), by id.
        self.picked: list[str] = []
        #: The HTML shown for the picked runs (their view, or their comparison).
        self.detail_html = ""
        self.opening: asyncio.Task[str] | None = None
        self._seen: tuple[object, ...] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._settling = 0
        self._copy_due = False
        self._copy_timer: asyncio.TimerHandle | None = None
        self._min_interval = 1 / MAX_UPDATES_PER_S
        self._last_update = 0.0
        self.updates = 0
        # a live trace's new rows, read incrementally (a batch's runs not matched to a task yet, again); a
        # batch writing to a dataset: the parts in memory followed, each written part read once
        self._follower = self.trace.follower() if self.live else None
        self._batch: DatasetFollower | None = None
        if self.live and isinstance(source, Batch) and self._rereads:
            self._batch = source.follow()
        self._unmatched: set[str] = set()
        # a dataset's folder: its new parts are read in a worker thread at a live update (one at a time)
        self._folder_lock = threading.Lock()
        self._fetching: asyncio.Task[None] | None = None
        self._dropped = False  # a read's parts were not taken in (its update cancelled): read the whole next
        #: An experiment's dataset: each run's variant, read with the runs.
        self._variants = Variants.of(self.trace)
        self.table = self._read()
        self.current: Selection = self.table.select()

    # ------------------------------------------------------------------ the frame side

    def _read(self, again: bool = False) -> RunTable:
        """The table of the whole source (``again``: a batch writing to a dataset read anew)."""
        from ..batch import Batch

        self._seen = self._signature()
        if isinstance(self.source, Batch):
            if again and self._rereads:
                if self._batch is not None:
                    self._batch.reset()  # then what the batch holds now is read
                self.trace = self.source.trace  # the runs so far
            runs = self.source.with_tasks(self.trace.runs_df())
        else:
            runs = self._labelled(self.source.runs_df())
        table = RunTable(runs, tool_uses(self.trace))
        self._unmatched = self._without_task(table.runs)
        return table

    def _without_task(self, runs: pd.DataFrame) -> set[str]:
        """The runs of a batch's not matched to their task yet (their attempt is recorded as it ends)."""
        if "task_index" not in runs.columns:
            return set()
        return {str(run) for run in runs.loc[runs["task_index"].isna(), "run_id"]}

    def _update(self) -> None:
        """Read what changed in the trace since the last update: the new and changed runs alone."""
        from ..batch import Batch

        if self._reads_files():  # a dataset: the parts committed since, alone
            self._seen = self._signature()  # before listing: a part committed meanwhile is seen next time
            whole, self._dropped = self._dropped, False
            self._take(self._fetch_parts(whole))
            return
        follower = self._batch if self._batch is not None else self._follower
        changes = None if follower is None else follower.changes(self._unmatched)
        if changes is None:  # not followed, or rows were forgotten (trace.clear(), max_runs)
            self.table = self._read(again=True)
            return
        self._seen = self._signature()
        runs, tool_calls = changes
        if isinstance(self.source, Batch):
            if self._batch is None:  # a batch's follower gives them with their tasks
                runs = self.source.with_tasks(runs)
            self._unmatched = self._without_task(runs)
        self.table.update(runs, tool_calls)

    def _fetch_parts(self, whole: bool) -> tuple[bool, pd.DataFrame, pd.DataFrame] | None:
        """The parts of the followed folder committed since the last update, read (from a worker thread
        too: it touches no widget): ``(whole, runs, tool uses)``, ``whole`` when they are the whole
        table (a new part went before parts read: a session that started earlier); ``None``: none."""
        follower = self._follower
        assert follower is not None
        with self._folder_lock:
            got = follower.changes()
            if not whole and got is not None:  # ``whole``: a read before was not shown (the caller says so)
                return (False, self._labelled(got[0]), got[1]) if len(got[0]) or len(got[1]) else None
            return True, self._labelled(self.trace.runs_df()), tool_uses(self.trace)

    def _labelled(self, runs: pd.DataFrame) -> pd.DataFrame:
        """``runs`` with their variant when the source is an experiment's dataset."""
        return runs if self._variants is None else self._variants.put(runs)

    def _take(self, fetched: tuple[bool, pd.DataFrame, pd.DataFrame] | None) -> None:
        """Put what :meth:`_fetch_parts` read into the table."""
        if fetched is None:
            return
        whole, runs, tools = fetched
        if whole:
            self.table = RunTable(runs, tools)
            self._unmatched = self._without_task(self.table.runs)
        else:
            self.table.update(runs, tools)

    async def _poll_folder(self) -> None:
        """A live update of a followed folder, its files read in a worker thread (the loop runs on)."""
        started = self._last_update  # when :meth:`_due` let it start
        updates = self.updates
        seen = self._signature()
        try:
            whole, self._dropped = self._dropped, False
            fetched = await asyncio.to_thread(self._fetch_parts, whole)
        except asyncio.CancelledError:  # closed: the thread's read, if it took parts in, is not shown
            self._dropped = True
            raise
        finally:  # an error (the folder's files) stops the following, as it did on the loop: it is logged
            self._fetching = None
        if updates != self.updates and fetched is not None and not fetched[0]:
            fetched = None  # updated meanwhile from code (refresh()): what was read goes after, read it all
            self._dropped = True
            self._seen = None
        else:
            self._seen = seen
        with self.settling():
            self._take(fetched)
            self._updated(started)
        self._schedule()

    def _reads_files(self) -> bool:
        """Whether an update reads files (a followed dataset's folder): then off the event loop."""
        return self._follower is not None and self._follower.reads_files

    def _signature(self) -> tuple[object, ...] | None:
        from ..batch import Batch

        if self._rereads and isinstance(self.source, Batch):
            return (self.source.state, *self.source.recorded)
        return None if self._follower is None else self._follower.state()

    @property
    def selection(self) -> pd.DataFrame:
        """The runs the filters keep, in the explorer's order: rows of ``runs_df()``."""
        return self.current.frame

    @property
    def query(self) -> str:
        """The pandas expression giving :attr:`selection` from ``runs = trace.runs_df()`` and
        ``tool_calls = trace.tool_calls_df()`` (``pd``: pandas)."""
        return self.current.query()

    @property
    def code(self) -> str:
        """:attr:`query` as lines to paste, over the explored trace (or batch) named as ``trace`` (``batch``)."""
        opening, tools = self.trace.reading_code(self.name)
        variants = ""
        if self._variants is not None:  # an experiment's dataset: each run's variant from its own table
            table = str(self._variants.folder / VARIANT_TABLE)
            variants = f'runs = runs.merge(pd.read_parquet({table!r}, columns=["run_id", "{VARIANT}"]), how="left")\n'
        return (
            f"{opening}import pandas as pd\nruns = {self.name}.runs_df()\n{variants}tool_calls = {tools}\n"
            f"selection = {self.query}"
        )

    def page(self, number: int | None = None) -> pd.DataFrame:
        """Page ``number`` (from 0; the current one by default) of the table, :attr:`page_size` rows."""
        if number is not None:
            check.integer(_WHERE, "number", number, minimum=0)
            self.page_number = min(number, self.current.pages(self.page_size) - 1)
        return self.current.page(self.page_number, self.page_size)

    def filter(self, **filters: Any) -> RunExplorer:
        """Keep the runs with ``status``, ``agent``, ``variant``, ``tool`` (a name or a list), ``error`` and ``search``
        (text, case-insensitive), ``since``/``until`` (times, UTC); ``None`` or empty clears one."""
        self.current = self.table.select(
            self.current.filters.with_(**filters), self.current.sort, self.current.ascending
        )
        self.page_number = 0
        self._changed()
        return self

    def sort_by(self, column: str | None, *, ascending: bool = True) -> RunExplorer:
        """Sort by the table column ``column`` (``None``: trace order); stable, empty values last."""
        self.current = self.table.select(self.current.filters, column, ascending)
        self.page_number = 0
        self._changed()
        return self

    def turn(self, pages: int) -> None:
        """Go ``pages`` pages on (back when negative), within the first and the last."""
        last = self.current.pages(self.page_size) - 1
        self.page_number = max(0, min(last, self.page_number + pages))
        self._changed()

    # ------------------------------------------------------------------ picking runs

    def check_run(self, param: str, run_id: object) -> str:
        """``run_id`` if it names a run of the explored trace, else a ``ValueError`` naming ``param``."""
        run = str(check.string(_WHERE, param, run_id))
        if run not in self.table:
            raise check.wrong_value(_WHERE, param, "the id of a run of the explored trace", run_id)
        return run

    def pick(self, *run_ids: str) -> asyncio.Task[str] | None:
        """Pick runs: one is shown (:meth:`open`), two are compared (:meth:`acompare`), each in the
        background (the task, also :attr:`opening`, gives the HTML shown); none clears."""
        runs = [self.check_run(f"run_ids[{i}]", run) for i, run in enumerate(run_ids)]
        if len(runs) > 2:
            raise check.wrong_value(_WHERE, "run_ids", "one or two runs", run_ids)
        self.picked = runs
        if not runs:
            self.detail_html = ""
            self._changed()
            return None
        if len(runs) == 1:
            self.opening = asyncio.get_event_loop().create_task(self.open(runs[0]))
            return self.opening
        self.detail_html = str(el("div", f"comparing runs {runs[0]} and {runs[1]}…", class_="nba-muted"))
        self._changed()
        self.opening = asyncio.get_event_loop().create_task(self._comparing(*runs))
        return self.opening

    @entry_point("explorer.open(run_id)")
    async def open(self, run_id: str) -> str:
        """Show run ``run_id`` in place as its live view draws it: the run replayed offline (no model or
        tool called) into an ``AgentRunView``; its static HTML is returned and shown. A run that cannot
        be replayed (one still running, an AutoGen agent's) shows its timeline and why. A run that failed
        or was cancelled fails or is cancelled again in its replay: its view shows how, as it did live."""
        run = self.check_run("run_id", run_id)
        self.picked = [run]
        self.detail_html = str(el("div", f"opening run {run}…", class_="nba-muted"))
        self._changed()
        one: TraceFrames | None = None
        try:
            opened = await self._read_run(run, lambda source: _opened(source, run))
            one, replay = opened
            if isinstance(replay, Exception):
                raise replay
            agent, task = replayed(_WHERE, replay, None)
        except Exception as error:  # the reason is shown, with what the trace still tells
            try:
                timeline = Markup("") if one is None else Markup(one.timeline(run).to_html())
            except Exception:  # noqa: BLE001 what made the replay fail may stop this too
                timeline = Markup("")
            note = el("div", f"run {run} cannot be replayed ({type(error).__name__}: {error})", class_="nba-muted")
            html = str(portable(el("div", concat(note, timeline), class_="nba-explorer-run")))
        else:
            view = AgentRunView(f"run {run} ({agent.name})")
            try:
                await view.run(agent, task)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if current is not None and current.cancelling():
                    raise  # this open was cancelled, not the replayed run
            except Exception:  # noqa: S110 the recorded run's own error, shown by its view
                pass
            _recorded_times(view, one, run)
            html = view.to_html()
        if self.picked == [run]:
            self.detail_html = html
            self._changed()
        return html

    async def _read_run(self, run: str, read: Callable[[TraceFrames], T]) -> T:
        """``read`` of the trace holding run ``run`` (:meth:`_of`), awaited without holding the event loop (a
        click, the kernel): a dataset's files are read in a worker thread within
        :data:`~nbagent.trace.base.READ_TIMEOUT_S` (``TimeoutError`` past it); a trace in memory (a live
        trace, a batch's parts in memory: they change on the loop) is read at once, on the loop."""
        batch = self._batch
        if batch is None:
            return await self.trace.aread(read)
        held = batch.held(run)
        if held is not None:
            return await held.aread(read)
        return await read_in_worker(lambda: read(batch.stored(run)), f"run {run} of the batch's dataset")

    def stepper(self, run_id: str) -> NotebookStepper:
        """Run ``run_id`` replayed in the stepper (``nbagent.step(trace.replay(run_id))``): walk it
        move by move, fork it where it should have gone otherwise. Its rows are read in the calling
        thread; from the event loop, ``await`` :meth:`astepper` (what the Replay button does)."""
        run = self.check_run("run_id", run_id)
        return _stepper(self._of(run).replay(run))

    async def astepper(self, run_id: str) -> NotebookStepper:
        """:meth:`stepper`, the run's rows read off the event loop (a dataset's in a worker thread, within
        :data:`~nbagent.trace.base.READ_TIMEOUT_S`: a ``TimeoutError`` past it)."""
        run = self.check_run("run_id", run_id)
        return _stepper(await self._read_run(run, lambda source: source.replay(run)))

    def compare(self, a: str | None = None, b: str | None = None) -> CompareView:
        """``nbagent.compare`` of runs ``a`` and ``b`` (the two picked by default), their rows read in the
        calling thread; from the event loop, ``await`` :meth:`acompare` (what picking two does)."""
        left, right = self._pair(a, b)
        return _comparison(self._of(left).run(left), left, self._of(right).run(right), right)

    async def acompare(self, a: str | None = None, b: str | None = None) -> CompareView:
        """:meth:`compare`, both runs' rows read off the event loop, together (a dataset's in worker threads,
        within :data:`~nbagent.trace.base.READ_TIMEOUT_S`: a ``TimeoutError`` past it)."""
        left, right = self._pair(a, b)
        one, other = await asyncio.gather(
            self._read_run(left, lambda source: source.run(left)),
            self._read_run(right, lambda source: source.run(right)),
        )
        return _comparison(one, left, other, right)

    def _pair(self, a: str | None, b: str | None) -> tuple[str, str]:
        """The runs to compare: ``a`` and ``b``, or the two picked."""
        if a is None or b is None:
            if len(self.picked) != 2:
                raise check.wrong_value(_WHERE, "a, b", "two run ids (or two runs picked)", (a, b))
            a, b = self.picked
        return self.check_run("a", a), self.check_run("b", b)

    async def _comparing(self, left: str, right: str) -> str:
        """Show runs ``left`` and ``right`` compared (:meth:`acompare`), or why they cannot be; the HTML shown."""
        try:
            html = (await self.acompare(left, right)).html()
        except Exception as error:  # the reason is shown; the explorer goes on
            note = f"runs {left} and {right} cannot be compared ({type(error).__name__}: {error})"
            html = str(portable(el("div", note, class_="nba-muted nba-explorer-run")))
        if self.picked == [left, right]:
            self.detail_html = html
            self._changed()
        return html

    def _of(self, run: str) -> TraceFrames:
        """The trace to read run ``run`` from: the trace (whose replay and timeline of a run read that run's
        rows alone); a followed batch's part in memory holding it, or its run read alone from the batch's
        folder."""
        if self._batch is not None:
            return self._batch.trace_of(run)
        return self.trace

    def export(self, run_id: str, path: str | Path | None = None) -> Path:
        """Write run ``run_id``'s view (the HTML shown, with the stylesheet) to ``path``
        (``run-<id>.html`` in the working folder by default, the id's characters other than letters,
        digits, ``-`` and ``_`` as ``_``: a file's run id names no other folder), whole or not at all."""
        run = self.check_run("run_id", run_id)
        html = self.detail_html if self.picked == [run] else ""
        if not html:
            raise check.wrong_value(_WHERE, "run_id", "the run shown", run_id, "await explorer.open(run_id) first")
        target = Path(path) if path is not None else Path(f"run-{re.sub(r'[^A-Za-z0-9_-]', '_', run)[:120]}.html")
        page = Markup("<!doctype html><meta charset='utf-8'><title>run {}</title>{}{}").format(
            run, Markup(STYLE), Markup(html)
        )
        write_whole(target, page)
        return target

    # ------------------------------------------------------------------ live updates

    def refresh(self) -> None:
        """Read the trace's new and changed runs (what a live explorer does by itself; a trace not
        followed: all its runs again), keeping filters and sort."""
        started = time.perf_counter()
        self._update()
        self._updated(started)

    def _updated(self, started: float) -> None:
        """After an update begun at ``started``: the selection made again, the pace set, the views told."""
        self.current = self.table.select(self.current.filters, self.current.sort, self.current.ascending)
        self.page_number = min(self.page_number, self.current.pages(self.page_size) - 1)
        self.picked = [run for run in self.picked if run in self.table]
        cost = time.perf_counter() - started
        # at most MAX_UPDATES_PER_S a second, and never more than a fifth of the kernel's time
        self._min_interval = max(1 / MAX_UPDATES_PER_S, 4 * cost)
        self.updates += 1
        self._changed()

    def poll(self) -> bool:
        """Refresh if the trace has new items and the last update is old enough; whether it did."""
        if not self._due():
            return False
        self.refresh()
        return True

    def _due(self) -> bool:
        """Whether an update is due (the trace has new items and the last update is old enough): if so,
        its time is noted as the last update's."""
        if not self.live or self._signature() == self._seen:
            return False
        now = time.perf_counter()
        if now - self._last_update < self._min_interval:
            return False
        self._last_update = now
        return True

    def _schedule(self) -> None:
        if not self.live or self._widget is None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._timer = loop.call_later(self._min_interval, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if self._widget is None or not self._widget.comm or self._fetching is not None:
            return
        if self._reads_files():  # a folder: its files read off the loop
            if self._due():
                self._fetching = asyncio.get_running_loop().create_task(self._poll_folder())
                return  # it schedules the next tick when done
            self._schedule()
            return
        with self.settling():
            self.poll()
        self._schedule()

    def close(self) -> None:
        """Stop following the trace and close the widget (its static copy stays, brought up to date, and
        the widget's output is emptied: a notebook saved while the explorer is live names its model, which
        a reopened notebook without saved widget state logs as "widget model not found" once)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._fetching is not None:
            self._fetching.cancel()  # its thread ends its read; nothing is taken in
            self._fetching = None
        if self._copy_timer is not None:
            self._copy_timer.cancel()
            self._copy_timer = None
            self._copy_settled()
        self.close_widgets()

    # ------------------------------------------------------------------ display

    def _make_widget(self) -> ExplorerWidget:
        widget = ExplorerWidget(self)
        self._widget = widget
        self._schedule()
        return widget

    @contextmanager
    def settling(self) -> Iterator[None]:
        """Changes made inside (the browser's clicks and keys, a live trace's updates) show in the widget
        at once and in the static copy once they settle (:data:`COPY_DELAY_S` after the last): a page of
        the table redrawn is cheap in the browser, its static copy (styles inlined) costs more."""
        self._settling += 1
        try:
            yield
        finally:
            self._settling -= 1

    def _changed(self) -> None:
        if not self._settling or self._widget is None:
            self._copy_due = False
            self.changed()
            return
        self._widget.refresh()
        self._copy_due = True
        if self._copy_timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.changed()
                return
            self._copy_timer = loop.call_later(COPY_DELAY_S, self._copy_settled)

    def _copy_settled(self) -> None:
        self._copy_timer = None
        if self._copy_due:
            self._copy_due = False
            self.changed()

    def _static_html(self) -> str:
        first = self.current.page(0, self.page_size)
        pages = self.current.pages(self.page_size)
        head = el(
            "div",
            f"Run explorer: {len(self.current):,} of {len(self.table):,} runs, page 1 of {pages}",
            class_="nba-explorer-title",
        )
        query = el("pre", self.query, class_="nba-explorer-query")
        # The table's cells keep their classes but no inlined styles (a page's cells would each repeat the
        # same ~100 characters: 70 kB instead of 20 kB for 50 runs, and JupyterLab's work to show each
        # new copy grows with it); the frontends' own table styles lay them out where the stylesheet is not.
        table = table_html(first, frozenset(self.picked))
        detail = Markup(self.detail_html)  # the run's view, its styles inlined by the view itself
        parts = concat(portable(concat(head, query)), table, detail)
        return str(Markup('<div class="nba-trace nba-explorer nba-static-copy">') + parts + Markup("</div>"))

    def __repr__(self) -> str:
        return f"RunExplorer({len(self.current):,} of {len(self.table):,} runs, query={self.query!r})"


def _opened(source: TraceFrames, run: str) -> tuple[TraceFrames, Replay | Exception]:
    """Run ``run``'s rows alone (:meth:`~nbagent.trace.TraceFrames.run`: its recorded times, its timeline)
    and its replay, or why it cannot be replayed: a trace reading files replays the rows read (not read
    twice), the others replay from ``source`` (a live trace looks up what the run left open)."""
    one = source.run(run)
    try:
        return one, (one if source.reads_files else source).replay(run)
    except Exception as error:  # noqa: BLE001 shown by the view, with the run's timeline
        return one, error


def _stepper(replay: Replay) -> NotebookStepper:
    """The stepper of ``replay`` (a run of the explored trace)."""
    from .stepper_widget import step

    return cast("NotebookStepper", step(replay))  # a replay is an nbagent agent's run: never AutoGen's stepper


def _comparison(one: TraceFrames, left: str, other: TraceFrames, right: str) -> CompareView:
    """``nbagent.compare`` of run ``left`` of ``one`` and run ``right`` of ``other``, named short."""
    from .compare_view import compare

    return compare((one, left), (other, right), labels=(left[:8], right[:8]))


def _recorded_times(view: AgentRunView, trace: TraceFrames, run: str) -> None:
    """Show in ``view`` (run ``run`` replayed) the times ``trace`` recorded, not the replay's own (the table
    said 75 ms, the view 0.02 s); one missing or out of range (inf, 1e300, negative) is not shown."""
    calls = trace.llm_calls_df()
    calls = calls[calls["run_id"].astype("object") == run].sort_values("call_index")
    tools = trace.tool_calls_df()
    tools = tools[tools["run_id"].astype("object") == run]
    runs = trace.runs_df()
    ran = runs[runs["run_id"].astype("object") == run]["duration_s"]
    view.show_recorded_times(
        [seconds(value) for value in calls["duration_s"]],
        {str(call_id): seconds(value) for call_id, value in zip(tools["call_id"], tools["duration_s"], strict=True)},
        seconds(ran.iloc[0]) if len(ran) else None,
    )


def explore(
    source: TraceFrames | Batch | str | os.PathLike[str],
    *,
    page_size: int = 50,
    live: bool | None = None,
    session: str | None = None,
) -> RunExplorer:
    """A run explorer over ``source`` (display it): a trace (live or loaded), a ``Batch``, or the
    folder of a Parquet dataset (``trace.to_parquet``'s; every session, or ``session`` only), read
    lazily: the runs table and the tool names only, then each run's rows when it is opened. ``live``
    (default: a live trace, a running batch, a dataset's folder) follows the runs added."""
    return RunExplorer(source, page_size=page_size, live=live, session=session)
