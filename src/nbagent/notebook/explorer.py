"""``trace.explore()``: a run explorer over any trace (live or loaded) or batch, in the notebook.

A table of the runs (:data:`~nbagent.trace.explore.TABLE_COLUMNS`), sorted by any column, filtered by
status, agent, tool used, error text, time range and a search over tasks and answers, a page at a
time (the frame logic is :mod:`nbagent.trace.explore`: it keeps 100,000 runs responsive). Picking a
run shows it in place as its live view draws it (the run replayed offline into an
:class:`~nbagent.notebook.view.AgentRunView`, whose static HTML is shown), with buttons to walk it in
the stepper (``nbagent.step(trace.replay(run_id))``, whose Fork button forks it), and to export the
view; picking two shows ``nbagent.compare`` of them. ``explorer.selection`` is the filtered frame and
``explorer.query`` the pandas expression that gives it. A live trace's table follows its runs (at most
:data:`MAX_UPDATES_PER_S` updates a second); the saved notebook keeps the first page and the run shown.
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

import ipywidgets as widgets

from .. import _check as check
from ..agent import replayed
from ..render import STYLE, Markup, concat, el, format_duration, portable
from ..trace import Trace, TraceFrames
from ..trace.explore import TABLE_COLUMNS, RunTable, Selection
from .static_display import StaticCopyDisplay, close_widget, descendants
from .view import AgentRunView

if TYPE_CHECKING:
    import pandas as pd

    from ..batch import Batch
    from .compare_view import CompareView
    from .stepper_widget import NotebookStepper

__all__ = ["MAX_UPDATES_PER_S", "ExplorerWidget", "RunExplorer", "explore"]

#: At most this many table updates a second while a live trace records runs.
MAX_UPDATES_PER_S = 10
_WHERE = "explore"
_HEADERS = {
    "run_id": "run",
    "agent": "agent",
    "task": "task",
    "status": "status",
    "error": "error",
    "llm_calls": "LLM calls",
    "tool_calls": "tool calls",
    "tokens": "tokens",
    "latency_s": "latency",
    "started_at": "started (UTC)",
    "parent": "parent",
}


#: The cells the stylesheet colours or wraps carry a class (the others none: a page draws faster).
_CLASSES = {"status": "nba-x-status", "task": "nba-x-task", "error": "nba-x-error"}


def _cell(column: str, value: Any) -> str:
    import pandas as pd

    if value is None or value is pd.NA or (isinstance(value, float) and value != value):
        return ""
    if column == "latency_s":
        return format_duration(float(value))
    if column == "started_at":
        return str(value.strftime("%Y-%m-%d %H:%M:%S"))
    if column in ("error", "task"):
        text = str(value)
        return text if len(text) <= 120 else text[:119] + "…"
    return str(value)


# One row of the table; Markup.format escapes (and masks) every value put in it.
_ROW = (
    Markup('<tr class="{}" data-run="{}" data-status="{}">')
    + Markup("").join(el("td", Markup("{}"), class_=_CLASSES.get(column)) for column in TABLE_COLUMNS)
    + Markup("</tr>")
)


_RUN, _STATUS = list(TABLE_COLUMNS).index("run_id"), list(TABLE_COLUMNS).index("status")


def table_html(page: pd.DataFrame, selected: frozenset[str] = frozenset()) -> Markup:
    """The rows of ``page`` (the display table's columns) as an HTML table, every value escaped."""
    head = el("tr", [el("th", _HEADERS[column], scope="col") for column in TABLE_COLUMNS])
    columns = [page[column].tolist() for column in TABLE_COLUMNS]
    rows = []
    for values in zip(*columns, strict=True):
        run_id, status = str(values[_RUN]), str(values[_STATUS])
        row_class = "nba-x-row nba-x-selected" if run_id in selected else "nba-x-row"
        cells = (_cell(column, value) for column, value in zip(TABLE_COLUMNS, values, strict=True))
        rows.append(_ROW.format(row_class, run_id, status, *cells))
    return el("table", [el("thead", head), el("tbody", rows)], class_="nba-table nba-explorer-table")


class ExplorerWidget(widgets.VBox):  # type: ignore[misc]
    """Filters, sort, the page's table and a list to pick runs, pager, and the picked run's view."""

    def __init__(self, explorer: RunExplorer) -> None:
        self.explorer = explorer
        table = explorer.table
        layout = widgets.Layout(width="auto")
        self.status = widgets.SelectMultiple(options=table.choices("status"), description="status", rows=3)
        self.agent = widgets.SelectMultiple(options=table.choices("agent"), description="agent", rows=3)
        self.tool = widgets.SelectMultiple(options=table.choices("tool"), description="tool", rows=3)
        self.error = widgets.Text(description="error", placeholder="error text", continuous_update=False)
        self.search = widgets.Text(description="search", placeholder="task or answer", continuous_update=False)
        self.since = widgets.Text(description="since", placeholder="2026-12-01 09:00", continuous_update=False)
        self.until = widgets.Text(description="until", placeholder="UTC, ISO", continuous_update=False)
        self.sort = widgets.Dropdown(options=[("trace order", None), *((_HEADERS[c], c) for c in TABLE_COLUMNS)])
        self.sort.description = "sort by"
        self.descending = widgets.ToggleButton(description="descending", value=False, layout=layout)
        self.message = widgets.Label()
        self.table = widgets.HTML()
        self.rows = widgets.SelectMultiple(description="open", rows=8, layout=widgets.Layout(width="100%"))
        self.previous = widgets.Button(description="previous", icon="chevron-left", layout=layout)
        self.next = widgets.Button(description="next", icon="chevron-right", layout=layout)
        self.position = widgets.Label()
        self.replay_button = widgets.Button(description="Replay in stepper", icon="play", layout=layout)
        self.export_button = widgets.Button(description="Export view", icon="download", layout=layout)
        self.detail = widgets.HTML()
        self.output = widgets.Output()
        for control in (self.status, self.agent, self.tool, self.error, self.search, self.since, self.until):
            control.observe(self._on_filter, names="value")
        self.sort.observe(self._on_sort, names="value")
        self.descending.observe(self._on_sort, names="value")
        self.rows.observe(self._on_rows, names="value")
        self.previous.on_click(lambda _: explorer.turn(-1))
        self.next.on_click(lambda _: explorer.turn(1))
        self.replay_button.on_click(lambda _: self._replay())
        self.export_button.on_click(lambda _: self._export())
        filters = widgets.HBox([self.status, self.agent, self.tool])
        texts = widgets.HBox([widgets.VBox([self.error, self.search]), widgets.VBox([self.since, self.until])])
        super().__init__(
            [
                widgets.HTML(STYLE),
                filters,
                texts,
                widgets.HBox([self.sort, self.descending, self.message]),
                self.table,
                widgets.HBox([self.previous, self.position, self.next]),
                self.rows,
                widgets.HBox([self.replay_button, self.export_button]),
                self.detail,
                self.output,
            ]
        )
        self.add_class("nba-explorer-live")
        self.add_class("nba-stepper-live")  # the stylesheet's pairing: a connected widget hides the copy
        self._updating = False
        self.refresh()

    def _on_filter(self, _change: object) -> None:
        if self._updating:
            return
        try:
            self.explorer.filter(
                status=self.status.value,
                agent=self.agent.value,
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
            self.explorer.sort_by(self.sort.value, ascending=not self.descending.value)

    def _on_rows(self, change: dict[str, Any]) -> None:
        if not self._updating:
            self.explorer.pick(*change["new"])

    def _replay(self) -> None:
        if self.explorer.picked:
            with self.output:
                self.output.clear_output()
                from IPython.display import display

                display(self.explorer.stepper(self.explorer.picked[0]))  # type: ignore[no-untyped-call]

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
                for name in ("status", "agent", "tool"):
                    control = getattr(self, name)
                    choices = tuple(table.choices(name))
                    if tuple(control.options) != choices:
                        keep = tuple(value for value in control.value if value in choices)
                        control.options = choices
                        control.value = keep
                self.message.value = "" if not self.message.value.startswith("written") else self.message.value
                table_view = table_html(page, frozenset(explorer.picked))
                self.table.value = str(el("div", table_view, class_="nba-trace nba-explorer"))
                options = [(_option(record), str(record.run_id)) for record in page.itertuples(index=False)]
                if self.rows.options != tuple(options):
                    self.rows.options = options
                self.rows.value = tuple(run for run in explorer.picked if run in {value for _, value in options})
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


def _option(record: Any) -> str:
    task = str(record.task or "")
    return f"{record.run_id} · {record.agent} · {record.status} · {task[:80]}"


class RunExplorer(StaticCopyDisplay[ExplorerWidget]):
    """The runs of ``source`` (a trace, live or loaded, or a ``Batch``), filtered, sorted and paged.

    Display it for the widget; or drive it from code: :meth:`filter`, :meth:`sort_by`, :meth:`turn`,
    :meth:`pick` / ``await`` :meth:`open`. :attr:`selection` is the frame of the runs kept (rows of
    ``runs_df()``), :attr:`query` the pandas expression giving it over ``runs`` and ``tool_calls``.
    """

    def __init__(self, source: TraceFrames | Batch, *, page_size: int = 50, live: bool | None = None) -> None:
        super().__init__()
        from ..batch import Batch

        if isinstance(source, Batch):
            self.trace: TraceFrames = source.trace
            self.name = "batch"
        elif isinstance(source, TraceFrames):
            self.trace = source
            self.name = "trace"
        else:
            raise check.wrong_type(_WHERE, "source", "a trace (Trace or LoadedTrace) or a Batch", source)
        self.source = source
        self.page_size = int(check.integer(_WHERE, "page_size", page_size, minimum=1) or 1)
        check.boolean(_WHERE, "live", live, none=True)
        #: Whether the table follows the trace's new runs (a live trace's, by default).
        self.live = isinstance(self.trace, Trace) if live is None else bool(live)
        self.page_number = 0
        #: The runs picked (one shown, two compared), by id.
        self.picked: list[str] = []
        #: The HTML shown for the picked runs (their view, or their comparison).
        self.detail_html = ""
        self.opening: asyncio.Task[str] | None = None
        self._seen: tuple[int, int] | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._min_interval = 1 / MAX_UPDATES_PER_S
        self._last_update = 0.0
        self.updates = 0
        self.table = self._read()
        self.current: Selection = self.table.select()

    # ------------------------------------------------------------------ the frame side

    def _read(self) -> RunTable:
        self._seen = self._signature()
        return RunTable(self.source.runs_df(), self.source.tool_calls_df())

    def _signature(self) -> tuple[int, int] | None:
        if isinstance(self.trace, Trace):
            return self.trace.store.epoch, len(self.trace)
        return None

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
        return (
            f"import pandas as pd\nruns = {self.name}.runs_df()\ntool_calls = {self.name}.tool_calls_df()\n"
            f"selection = {self.query}"
        )

    def page(self, number: int | None = None) -> pd.DataFrame:
        """Page ``number`` (from 0; the current one by default) of the table, :attr:`page_size` rows."""
        if number is not None:
            check.integer(_WHERE, "number", number, minimum=0)
            self.page_number = min(number, self.current.pages(self.page_size) - 1)
        return self.current.page(self.page_number, self.page_size)

    def filter(self, **filters: Any) -> RunExplorer:
        """Keep the runs with ``status``, ``agent``, ``tool`` (a name or a list), ``error`` and ``search``
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

    def _check_run(self, param: str, run_id: object) -> str:
        run = str(check.string(_WHERE, param, run_id))
        if run not in set(self.table.run_ids.tolist()):
            raise check.wrong_value(_WHERE, param, "the id of a run of the explored trace", run_id)
        return run

    def pick(self, *run_ids: str) -> asyncio.Task[str] | None:
        """Pick runs: one is shown (:meth:`open`, in the background), two are compared, none clears."""
        runs = [self._check_run(f"run_ids[{i}]", run) for i, run in enumerate(run_ids)]
        if len(runs) > 2:
            raise check.wrong_value(_WHERE, "run_ids", "one or two runs", run_ids)
        self.picked = runs
        if len(runs) == 2:
            self.detail_html = self.compare().html()
        elif not runs:
            self.detail_html = ""
        else:
            self.opening = asyncio.get_event_loop().create_task(self.open(runs[0]))
            return self.opening
        self._changed()
        return None

    async def open(self, run_id: str) -> str:
        """Show run ``run_id`` in place as its live view draws it: the run replayed offline (no model or
        tool called) into an ``AgentRunView``; its static HTML is returned and shown. A run that cannot
        be replayed (one still running, an AutoGen agent's) shows its timeline and why."""
        run = self._check_run("run_id", run_id)
        self.picked = [run]
        self.detail_html = str(el("div", f"opening run {run}…", class_="nba-muted"))
        self._changed()
        try:
            agent, task = replayed(_WHERE, self.trace.replay(run), None)
            view = AgentRunView(f"run {run} ({agent.name})")
            try:
                await view.run(agent, task)
                html = view.to_html()
            finally:
                for widget in descendants(view):
                    close_widget(widget)
        except Exception as error:  # the reason is shown, with what the trace still tells
            timeline = Markup(self.trace.timeline(run).to_html())
            note = el("div", f"run {run} cannot be replayed ({type(error).__name__}: {error})", class_="nba-muted")
            html = str(portable(el("div", concat(note, timeline), class_="nba-explorer-run")))
        if self.picked == [run]:
            self.detail_html = html
            self._changed()
        return html

    def stepper(self, run_id: str) -> NotebookStepper:
        """Run ``run_id`` replayed in the stepper (``nbagent.step(trace.replay(run_id))``): walk it
        move by move, fork it where it should have gone otherwise."""
        from .stepper_widget import step

        stepper = step(self.trace.replay(self._check_run("run_id", run_id)))
        return cast("NotebookStepper", stepper)  # a replay is an nbagent agent's run: never AutoGen's stepper

    def compare(self, a: str | None = None, b: str | None = None) -> CompareView:
        """``nbagent.compare`` of runs ``a`` and ``b`` (the two picked by default)."""
        from .compare_view import compare

        if a is None or b is None:
            if len(self.picked) != 2:
                raise check.wrong_value(_WHERE, "a, b", "two run ids (or two runs picked)", (a, b))
            a, b = self.picked
        left, right = self._check_run("a", a), self._check_run("b", b)
        return compare((self.trace, left), (self.trace, right), labels=(left, right))

    def export(self, run_id: str, path: str | Path | None = None) -> Path:
        """Write run ``run_id``'s view (the HTML shown, with the stylesheet) to ``path``
        (``run-<id>.html`` in the working folder by default), whole or not at all."""
        run = self._check_run("run_id", run_id)
        html = self.detail_html if self.picked == [run] else ""
        if not html:
            raise check.wrong_value(_WHERE, "run_id", "the run shown", run_id, "await explorer.open(run_id) first")
        target = Path(path) if path is not None else Path(f"run-{run}.html")
        page = f"<!doctype html><meta charset='utf-8'><title>run {run}</title>{STYLE}{html}"
        _write_whole(target, page)
        return target

    # ------------------------------------------------------------------ live updates

    def refresh(self) -> None:
        """Read the trace's runs again (what a live explorer does by itself), keeping filters and sort."""
        started = time.perf_counter()
        self.table = self._read()
        self.current = self.table.select(self.current.filters, self.current.sort, self.current.ascending)
        self.page_number = min(self.page_number, self.current.pages(self.page_size) - 1)
        self.picked = [run for run in self.picked if run in set(self.table.run_ids.tolist())]
        cost = time.perf_counter() - started
        # at most MAX_UPDATES_PER_S a second, and never more than a fifth of the kernel's time
        self._min_interval = max(1 / MAX_UPDATES_PER_S, 4 * cost)
        self.updates += 1
        self._changed()

    def poll(self) -> bool:
        """Refresh if the trace has new items and the last update is old enough; whether it did."""
        if not self.live or self._signature() == self._seen:
            return False
        if time.perf_counter() - self._last_update < self._min_interval:
            return False
        self._last_update = time.perf_counter()
        self.refresh()
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
        if self._widget is None or not self._widget.comm:
            return
        self.poll()
        self._schedule()

    def close(self) -> None:
        """Stop following the trace and close the widget (its static copy stays)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._widget is not None:
            for widget in descendants(self._widget):
                close_widget(widget)

    # ------------------------------------------------------------------ display

    def _make_widget(self) -> ExplorerWidget:
        widget = ExplorerWidget(self)
        self._widget = widget
        self._schedule()
        return widget

    def _changed(self) -> None:
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
        detail = Markup(self.detail_html)
        body = el(
            "div",
            concat(head, query, table_html(first, frozenset(self.picked)), detail),
            class_="nba-trace nba-explorer nba-static-copy",
        )
        return str(portable(body))

    def __repr__(self) -> str:
        return f"RunExplorer({len(self.current):,} of {len(self.table):,} runs, query={self.query!r})"


def _write_whole(target: Path, text: str) -> None:
    folder = target.parent if str(target.parent) else Path(".")
    handle, name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def explore(source: TraceFrames | Batch, *, page_size: int = 50, live: bool | None = None) -> RunExplorer:
    """A run explorer over ``source``: a trace (live or loaded) or a ``Batch`` (display it)."""
    return RunExplorer(source, page_size=page_size, live=live)
