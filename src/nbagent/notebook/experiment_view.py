"""An experiment's widgets: two variants compared task by task, down to a fork at the move where they part.

:class:`ComparisonView` (``comparison.view()``, ``exp.view()`` below its summary) shows the statistics
per score and where the pairs part, then the tasks a page at a time (the run explorer's table,
:class:`~nbagent.notebook.explorer_table.ExplorerTable`: click a header to sort by it, again the other
way; click a task, or Up, Down and Enter, to open its two runs side by side in :func:`nbagent.compare`;
Page Down and Page Up turn pages). *Fork at the first difference* opens the stepper on the picked task's
run of ``b`` replayed and walked to just before the move where it parts from ``a``'s: fork it there
(*Fork here*), change the move, walk on; *Score the walks* scores that walk and its forks with the
experiment's scorers, beside the two variants' scores. Every state is also a static copy (the one
renderer's HTML, readable where a sanitizer drops the stylesheet and no widget renders), which
replaces the widget when :meth:`~nbagent.notebook.static_display.StaticCopyDisplay.close_widgets` ends it.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, cast

import ipywidgets as widgets

from .. import _check as check
from ..experiment.compare import VariantComparison, walk_to
from ..render import STYLE, Markup, el, portable
from ..render.experiment import (
    comparison_head_html,
    comparison_html,
    frame_table,
    order_tasks,
    summary_html,
    summary_text,
    task_rows_html,
)
from ..sync import entry_point
from .compare_view import CompareView, compare
from .explorer_table import ExplorerTable
from .static_display import StaticCopyDisplay, cell_stylesheet

if TYPE_CHECKING:
    import pandas as pd

    from ..experiment import Experiment
    from .stepper_widget import NotebookStepper

__all__ = ["ComparisonView", "ExperimentView", "comparison_view", "experiment_view"]

_WHERE = "ComparisonView"
_HINT = "click a header to sort, a task to open its two runs · keys: Up, Down, Enter, Page Down, Page Up"


class ComparisonWidget(widgets.VBox):  # type: ignore[misc]
    """The statistics, the page of tasks (clicked or walked with the keyboard), the pager, the picked
    task's two runs, the fork's stepper and its scores."""

    def __init__(self, view: ComparisonView) -> None:
        self.view = view
        layout = widgets.Layout(width="auto")
        self.head = widgets.HTML()
        self.table = ExplorerTable(self._on_table)
        self.previous = widgets.Button(description="previous", icon="chevron-left", layout=layout)
        self.next = widgets.Button(description="next", icon="chevron-right", layout=layout)
        self.position = widgets.Label()
        self.hint = widgets.Label(_HINT)
        self.message = widgets.Label()
        self.fork_button = widgets.Button(description="Fork at the first difference", icon="code-fork", layout=layout)
        self.score_button = widgets.Button(description="Score the walks", icon="check", layout=layout)
        self.runs = widgets.VBox()
        self.walk = widgets.VBox()
        self.scores = widgets.HTML()
        self.previous.on_click(lambda _: self._act(lambda: view.turn(-1)))
        self.next.on_click(lambda _: self._act(lambda: view.turn(1)))
        self.fork_button.on_click(lambda _: self._start(view.fork_at_parting()))
        self.score_button.on_click(lambda _: self._start(view.score_walks()))
        self.position.add_class("nba-x-position")
        super().__init__(
            [
                widgets.HTML(STYLE),
                self.head,
                self.table,
                widgets.HBox([self.previous, self.position, self.next]),
                self.hint,
                widgets.HBox([self.fork_button, self.score_button, self.message]),
                self.runs,
                self.walk,
                self.scores,
            ]
        )
        self.add_class("nba-experiment-live")
        self.add_class("nba-stepper-live")  # the stylesheet's pairing: a connected widget hides the copy
        self.task: asyncio.Task[Any] | None = None
        self.refresh()
        view.read_partings()

    def _act(self, action: Any) -> None:
        try:
            action()
        except (TypeError, ValueError) as error:
            self.message.value = str(error)

    def _start(self, action: Any) -> None:
        """Run a button's coroutine on the kernel's loop (never blocking it); ignored while one runs."""
        if self.task is not None and not self.task.done():
            action.close()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            action.close()
            self.message.value = "no running event loop"
            return
        self.task = loop.create_task(self._perform(action))

    async def _perform(self, action: Any) -> None:
        self.message.value = "working…"
        try:
            await action
        except Exception as error:  # noqa: BLE001 shown where the user clicked, the widget stays usable
            self.message.value = f"{type(error).__name__}: {error}"
        else:
            self.message.value = ""

    def _on_table(self, message: dict[str, Any]) -> None:
        """A header clicked (sort by it; again: the other way), a task opened, Page Down / Up."""
        view = self.view
        event = message["event"]
        try:
            if event == "sort" and isinstance(message.get("column"), str):
                column = message["column"]
                view.sort_by(column, ascending=not view.ascending if column == view.sort else True)
            elif event == "open":
                view.pick(message.get("run"))  # type: ignore[arg-type]
            elif event == "turn" and isinstance(message.get("pages"), int):
                view.turn(max(-1, min(1, message["pages"])))
        except (TypeError, ValueError) as error:
            self.message.value = str(error)

    def refresh(self) -> None:
        """Show the view's state: the page, the pager, the picked task's runs, the walk and its scores."""
        view = self.view
        comparison = view.comparison
        page = view.page()
        with self.hold_sync():
            parting = comparison.parting if comparison.has_partings else None
            head = comparison_head_html(comparison.a, comparison.b, comparison.stats, parting, len(comparison.scored))
            self.head.value = str(el("div", head, class_="nba-trace nba-experiment"))
            rows = task_rows_html(page, list(comparison.scores), sort=view.sort, ascending=view.ascending)
            self.table.html = str(el("div", rows, class_="nba-trace nba-experiment"))
            keys = set(page["task_id"].astype(str))
            if self.table.cursor not in keys:
                self.table.cursor = view.picked if view.picked is not None and view.picked in keys else ""
            pages = view.pages()
            self.position.value = f"page {view.page_number + 1} of {pages} · {len(comparison.scored):,} tasks"
            self.previous.disabled = view.page_number == 0
            self.next.disabled = view.page_number >= pages - 1
            self.fork_button.disabled = view.picked is None
            self.score_button.disabled = view.walk is None
            runs = () if view.runs is None else (view.runs.widget(),)
            if tuple(self.runs.children) != runs:
                self.runs.children = runs
            walk = () if view.walk is None else (view.walk.widget(),)
            if tuple(self.walk.children) != walk:
                self.walk.children = walk
            self.scores.value = str(view.scores_html())


class ComparisonView(StaticCopyDisplay[ComparisonWidget]):
    """A :class:`~nbagent.experiment.compare.VariantComparison` as a widget after its static copy.

    Drive it from code as from the widget: :meth:`sort_by`, :meth:`turn`, :meth:`pick` (a task: its two
    runs in :func:`nbagent.compare`), ``await`` :meth:`fork_at_parting` and :meth:`score_walks`.
    """

    def __init__(self, comparison: VariantComparison, *, page_size: int = 20) -> None:
        super().__init__()
        check.instance(_WHERE, "comparison", comparison, VariantComparison, "a comparison (exp.compare(a, b))")
        self.comparison = comparison
        self.page_size = int(check.integer(_WHERE, "page_size", page_size, minimum=1) or 20)
        self.sort: str | None = None
        """The column the tasks are ordered by (``None``: the first score's delta, the largest changes first)."""
        self.ascending = True
        self.page_number = 0
        self.picked: str | None = None
        self.runs: CompareView | None = None
        self.walk: NotebookStepper | None = None
        self.walk_task: str | None = None
        self.walk_scores: pd.DataFrame | None = None
        self.reading: asyncio.Future[Any] | None = None
        self.owner: ExperimentView | None = None
        """The experiment's view this comparison is shown in (its static copy holds this one's)."""

    def read_partings(self) -> asyncio.Future[Any] | None:
        """Read where the runs part (every run's moves, once) off the event loop, then show it; ``None``
        when it is read already or there is no running loop (then it is read when first shown)."""
        comparison = self.comparison
        if comparison.has_partings:
            return None
        if self.reading is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                return None
            self.reading = loop.run_in_executor(None, lambda: comparison.parting)
            self.reading.add_done_callback(lambda _: self.changed())
        return self.reading

    def tasks(self) -> pd.DataFrame:
        """The tasks (the comparison's frame; before where the runs part is read, without it)."""
        comparison = self.comparison
        return comparison.frame if comparison.has_partings else comparison.scored

    def changed(self) -> None:
        """The widget and the static copies (this one's, and the experiment view's holding it) show the new state."""
        super().changed()
        if self.owner is not None:
            self.owner.changed()

    def ordered(self) -> pd.DataFrame:
        """The tasks in the order shown (:attr:`sort`, :attr:`ascending`)."""
        frame, _, _ = order_tasks(self.tasks(), list(self.comparison.scores), self.sort, self.ascending)
        return frame

    def pages(self) -> int:
        return max(1, -(-len(self.comparison.scored) // self.page_size))

    def page(self) -> pd.DataFrame:
        """The tasks of the current page."""
        start = self.page_number * self.page_size
        return self.ordered().iloc[start : start + self.page_size]

    def sort_by(self, column: str, *, ascending: bool = True) -> None:
        """Order the tasks by ``column`` of the comparison's frame (a delta, a score, ``task_id``...)."""
        check.choice(f"{_WHERE}.sort_by", "column", column, list(self.tasks().columns))
        self.sort, self.ascending, self.page_number = column, bool(ascending), 0
        self.changed()

    def turn(self, pages: int) -> None:
        """Go ``pages`` pages on (back when negative), within the first and the last."""
        check.integer(f"{_WHERE}.turn", "pages", pages)
        self.page_number = max(0, min(self.pages() - 1, self.page_number + pages))
        self.changed()

    def pick(self, task_id: str) -> CompareView:
        """Open task ``task_id``: its runs of ``a`` and ``b`` side by side (:func:`nbagent.compare`)."""
        comparison = self.comparison
        run_a, run_b = comparison.run_ids(task_id)
        trace = comparison.trace
        self.runs = compare((trace.run(run_a), run_a), (trace.run(run_b), run_b), labels=(comparison.a, comparison.b))
        self.picked = task_id
        self.changed()
        return self.runs

    @entry_point("comparison.fork_at_parting()")
    async def fork_at_parting(self, side: str | None = None) -> NotebookStepper:
        """The stepper on the picked task's run of ``side`` (default ``b``) replayed, walked to just before
        the move where the two runs part (a pair that never parts: to its end), shown below the runs."""
        from .stepper_widget import step

        if self.picked is None:
            raise check.wrong_value(f"{_WHERE}.fork_at_parting", "picked", "a task picked first", None, "pick(task_id)")
        replay, before = self.comparison.parting_replay(self.picked, side=side)
        stepper = cast("NotebookStepper", step(replay))  # a replay is an nbagent agent's run
        self.walk, self.walk_task, self.walk_scores = stepper, self.picked, None
        self.changed()
        await walk_to(stepper, before)
        stepper.changed()
        self.changed()
        return stepper

    @entry_point("comparison.score_walks()")
    async def score_walks(self) -> pd.DataFrame:
        """The walk of :meth:`fork_at_parting` and each fork made of it that has run, scored by the
        experiment's scorers, under the task's scores of ``a`` and ``b``: one row each."""
        import pandas as pd

        if self.walk is None or self.walk_task is None:
            raise check.wrong_value(f"{_WHERE}.score_walks", "walk", "a walk (fork_at_parting) first", None)
        comparison, task = self.comparison, self.walk_task
        scored = comparison.scored
        pair = scored[scored["task_id"] == task].iloc[0]
        rows: dict[str, dict[str, Any]] = {}
        for side in ("a", "b"):
            name = comparison.a if side == "a" else comparison.b
            rows[f"{name} (run {str(pair[f'run_id_{side}'])[:8]})"] = {
                s: pair[f"{s}_{side}"] for s in comparison.scores
            }
        walks: list[tuple[str, NotebookStepper]] = [("walk", self.walk)]
        walks += [(f"fork {i}", fork) for i, fork in enumerate(getattr(self.walk, "shown_forks", ()), 1)]
        for label, walk in walks:
            if walk.run_id is None or not walk.done:
                continue
            scored = await comparison.score_run(walk.agent.trace, walk.run_id, task)
            rows[f"{label} (run {walk.run_id[:8]})"] = scored
        self.walk_scores = pd.DataFrame.from_dict(rows, orient="index")
        self.walk_scores.index.name = "run"
        self.changed()
        return self.walk_scores

    def scores_html(self) -> Markup:
        """The walks' scores (:meth:`score_walks`) as a table, or nothing."""
        if self.walk_scores is None:
            return Markup("")
        caption = f"task {self.walk_task}: the walks scored by the experiment's scorers"
        return el("div", frame_table(self.walk_scores, index="run", caption=caption), class_="nba-trace nba-experiment")

    def _make_widget(self) -> ComparisonWidget:
        return ComparisonWidget(self)

    def copy_html(self) -> Markup:
        """The view's state as HTML without the stylesheet: the statistics, the page of tasks, the picked
        task's two runs and the walks' scores."""
        comparison = self.comparison
        body = comparison_html(
            comparison.a,
            comparison.b,
            comparison.stats,
            comparison.parting if comparison.has_partings else None,
            self.page(),
            list(comparison.scores),
            sort=self.sort,
            ascending=self.ascending,
            rows=self.page_size,
            style=False,
            total=len(comparison.scored),
        )
        note = el("div", f"page {self.page_number + 1} of {self.pages()}", class_="nba-muted")
        parts = [body, note]
        if self.runs is not None:
            parts.append(Markup(self.runs.html(style=False)))
        parts.append(self.scores_html())
        return Markup("").join(parts)

    def _static_html(self) -> str:
        return static_copy(self.copy_html())

    def __repr__(self) -> str:
        return self.comparison.text(rows=self.page_size)


class ExperimentWidget(widgets.VBox):  # type: ignore[misc]
    """The summary per variant, the two variants compared (picked in two lists) and their comparison."""

    def __init__(self, view: ExperimentView) -> None:
        self.view = view
        names = view.variants
        self.summary = widgets.HTML()
        self.a = widgets.Dropdown(options=names, value=view.a, description="a")
        self.b = widgets.Dropdown(options=names, value=view.b, description="b")
        self.message = widgets.Label()
        self.comparison = widgets.VBox()
        self.a.observe(self._on_pick, names="value")
        self.b.observe(self._on_pick, names="value")
        super().__init__(
            [widgets.HTML(STYLE), self.summary, widgets.HBox([self.a, self.b, self.message]), self.comparison]
        )
        self.add_class("nba-experiment-live")
        self.add_class("nba-stepper-live")
        self.refresh()

    def _on_pick(self, _change: object) -> None:
        try:
            self.view.compare(self.a.value, self.b.value)
        except (TypeError, ValueError) as error:
            self.message.value = str(error)
        else:
            self.message.value = ""

    def refresh(self) -> None:
        view = self.view
        self.summary.value = str(summary_html(view.summary, title=view.title))
        shown = () if view.comparison is None else (view.comparison.widget(),)
        if tuple(self.comparison.children) != shown:
            self.comparison.children = shown


class ExperimentView(StaticCopyDisplay[ExperimentWidget]):
    """An experiment's view: its summary per variant and two of its variants compared (:class:`ComparisonView`)."""

    def __init__(self, experiment: Experiment, a: str | None = None, b: str | None = None) -> None:
        super().__init__()
        self.experiment = experiment
        self.variants = [str(v) for v in experiment.variants]
        self.summary = experiment.summary()
        self.title = repr(experiment)
        self.a = a or self.variants[0]
        self.b = b or (self.variants[1] if len(self.variants) > 1 else self.variants[0])
        self.comparison: ComparisonView | None = None
        if len(self.variants) > 1:
            self.compare(self.a, self.b)

    def compare(self, a: str, b: str) -> ComparisonView:
        """Compare variants ``a`` and ``b`` below the summary."""
        from ..experiment.compare import compare_variants

        self.comparison = ComparisonView(compare_variants(self.experiment, a, b))
        self.comparison.owner = self
        self.a, self.b = a, b
        self.changed()
        return self.comparison

    def _make_widget(self) -> ExperimentWidget:
        return ExperimentWidget(self)

    def _static_html(self) -> str:
        parts = [summary_html(self.summary, title=self.title, style=False)]
        if self.comparison is not None:
            parts.append(self.comparison.copy_html())
        return static_copy(Markup("").join(parts))

    def __repr__(self) -> str:
        text = summary_text(self.summary, title=self.title)
        return text if self.comparison is None else f"{text}\n{self.comparison!r}"


def static_copy(content: Markup) -> str:
    """A view's static copy: the stylesheet (once per cell), then ``content`` laid out inline (readable where a
    sanitizer drops the stylesheet), marked as the copy a connected widget after it hides."""
    return str(cell_stylesheet() + el("div", portable(content), class_="nba-trace nba-experiment nba-static-copy"))


def comparison_view(comparison: VariantComparison, *, page_size: int = 20) -> ComparisonView:
    """``comparison.view()``: the widget of a comparison of two variants (display it)."""
    return ComparisonView(comparison, page_size=page_size)


def experiment_view(experiment: Experiment, a: str | None = None, b: str | None = None) -> ExperimentView:
    """``exp.view()``: the experiment's summary and two of its variants compared, as a widget (display it)."""
    return ExperimentView(experiment, a, b)
