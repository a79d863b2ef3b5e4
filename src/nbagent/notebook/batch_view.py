"""``BatchView``: a batch's live progress in a notebook, and the static summary it leaves behind.

The batch (:class:`nbagent.batch.Batch`) hands the view a :class:`~nbagent.batch.BatchProgress` at
most 10 times a second (and once at the end); each update sets one HTML widget (one comm message),
far under jupyter_server's iopub limit. The view shows done/total with a bar, ok, failed, running,
tokens, throughput, ETA and p50/p95 task latency, the last errors, and a Stop button
(``batch.stop()``: every run is cancelled, each agent's context stays valid). Everything is drawn by
the one renderer (:mod:`nbagent.render`), so task and error texts are escaped.

It is displayed with a display id; when the batch ends, the output is replaced by the static HTML
summary alone (``text/html`` and ``text/plain``), so a saved notebook, reopened or exported by
nbconvert, shows the final state without the widget manager.

Stable hooks for tests: the root has the classes ``nba-view nba-batch nba-state-<state>``
(``running``, ``ok`` once done, ``cancelled`` when stopped, ``error`` when the batch failed) and
``data-state`` (the batch's state); ``nba-batch-metrics`` holds spans with ``data-metric`` (``done``,
``ok``, ``failed``, ``running``, ``tokens``, ``throughput``, ``eta``, ``p50``, ``p95``, ``elapsed``)
and ``data-value``; the bar ``nba-batch-bar`` has ``aria-valuenow`` (percent); the Stop button
``nba-stop``; the last errors are rows of ``nba-batch-errors``; a batch with ``group=`` (an experiment's
variants) has a row per group in ``nba-batch-groups`` (``data-group``: its name), with its own bar.

Registered as the ``"widget"`` progress display of :mod:`nbagent.batch` by :mod:`nbagent`
(``progress="auto"`` picks it in a kernel).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from ..render import EMPTY, STYLE, Markup, el, plural, portable
from .static_display import close_widget, descendants, finish

if TYPE_CHECKING:
    from ..batch import Batch, BatchProgress

# A batch's state as the view's nba-state-<...> class (the stylesheet's colours).
_STATE_CLASS = {"running": "running", "done": "ok", "stopped": "cancelled", "failed": "error"}
_STATE_TEXT = {"running": "running", "done": "done", "stopped": "stopped", "failed": "failed"}
_SHOWN = ("done", "ok", "failed", "running", "tokens", "throughput", "eta", "p50", "p95", "elapsed")
_LABELS = {
    "done": "done",
    "ok": "ok",
    "failed": "failed",
    "running": "running",
    "tokens": "tokens",
    "throughput": "throughput",
    "eta": "ETA",
    "p50": "p50",
    "p95": "p95",
    "elapsed": "elapsed",
}


def _raw(progress: BatchProgress) -> dict[str, object]:
    """The figures as numbers, for ``data-value`` (empty when unknown)."""
    return {
        "done": progress.done,
        "ok": progress.ok,
        "failed": progress.failed,
        "running": progress.running,
        "tokens": progress.tokens,
        "throughput": "" if progress.throughput is None else round(progress.throughput, 3),
        "eta": "" if progress.eta_s is None else round(progress.eta_s, 3),
        "p50": "" if progress.p50_s is None else round(progress.p50_s, 4),
        "p95": "" if progress.p95_s is None else round(progress.p95_s, 4),
        "elapsed": round(progress.elapsed_s, 3),
    }


def progress_html(progress: BatchProgress, *, live: bool = True) -> Markup:
    """The view's body (``live=False``: the static summary, with the stylesheet and root element)."""
    figures, raw = progress.metrics(), _raw(progress)
    state = progress.state
    chip = el("span", _STATE_TEXT[state], class_="nba-status-text", data_status=_STATE_CLASS[state])
    head = el("div", el("span", progress.title, class_="nba-title"), chip, class_="nba-batch-head")
    fraction = progress.fraction
    percent = 0.0 if fraction is None else round(fraction * 100, 1)
    fill = el("div", class_="nba-batch-fill", style=f"width:{percent}%")
    bar = el(
        "div",
        fill,
        class_="nba-batch-bar",
        role="progressbar",
        aria_valuemin=0,
        aria_valuemax=100,
        aria_valuenow=percent,
    )
    spans = [
        el("span", _LABELS[name] + " ", el("b", figures[name]), data_metric=name, data_value=raw[name])
        for name in _SHOWN
        if not (name in ("running", "eta") and state != "running")
    ]
    if progress.skipped:
        spans.append(el("span", "skipped ", el("b", f"{progress.skipped:,}"), data_metric="skipped"))
    if progress.cancelled:
        spans.append(
            el(
                "span",
                "cancelled ",
                el("b", f"{progress.cancelled:,}"),
                data_metric="cancelled",
                data_value=progress.cancelled,
            )
        )
    metrics = el("div", Markup(" ").join(spans), class_="nba-batch-metrics")
    groups = EMPTY
    if progress.groups:  # group=: each group's progress (an experiment's variants)
        rows = [
            el(
                "tr",
                el("td", group.name),
                el("td", el("div", el("div", class_="nba-batch-fill", style=f"width:{round(group.fraction * 100, 1)}%"),
                            class_="nba-batch-bar", role="progressbar", aria_valuemin=0, aria_valuemax=100,
                            aria_valuenow=round(group.fraction * 100, 1))),
                el("td", f"{group.done:,}/{group.total:,}"),
                el("td", f"{group.ok:,} ok"),
                el("td", f"{group.failed:,} failed"),
                data_group=group.name,
            )
            for group in progress.groups
        ]  # fmt: skip
        groups = el("table", *rows, class_="nba-table nba-batch-groups")
    errors = EMPTY
    failures = [(task, status, error) for task, status, error in progress.last_errors if status != "cancelled"]
    if failures:  # a task the Stop cancelled is counted under "cancelled", not listed as a failure
        rows = [el("tr", el("td", task), el("td", status), el("td", error)) for task, status, error in failures]
        caption = el("caption", f"last {plural(len(rows), 'failure')}")
        errors = el("table", caption, *rows, class_="nba-table nba-batch-errors")
    body = el("div", head, bar, metrics, groups, errors, class_="nba-batch-body")
    if live:
        return body
    return portable(
        el(
            "div",
            STYLE,
            body,
            class_=f"nba-view nba-batch nba-batch-static nba-state-{_STATE_CLASS[state]}",
            data_state=state,
        )
    )


class BatchView(widgets.VBox):  # type: ignore[misc]
    """A batch's progress: an HTML widget and a Stop button (a progress display of :mod:`nbagent.batch`)."""

    def __init__(self, batch: Batch, *, show: bool = True) -> None:
        self.progress = batch.progress()
        self._body = widgets.HTML(progress_html(self.progress))
        self.stop_button = widgets.Button(description="Stop", tooltip="Cancel every run of the batch")
        self.stop_button.add_class("nba-stop")
        self._stop = batch.stop
        self.stop_button.on_click(lambda _: self._stop())
        super().__init__([widgets.HTML(STYLE), self._body, self.stop_button])
        self.add_class("nba-view")
        self.add_class("nba-batch")
        self._state_class = ""
        self._set_state(self.progress)
        self.updates = 0
        """How many times the view was updated (each is one widget message)."""
        self._display_id: str | None = None
        self.shown_in: int | None = None
        """The execution count of the cell the view was shown in (``Batch`` shows no repr under it)."""
        if show:
            self._show()

    def _set_state(self, progress: BatchProgress) -> None:
        new = f"nba-state-{_STATE_CLASS[progress.state]}"
        if new != self._state_class:
            if self._state_class:
                self.remove_class(self._state_class)
            self.add_class(new)
            self._state_class = new

    def update(self, progress: BatchProgress) -> None:
        """Show ``progress`` (the batch calls it at most 10 times a second)."""
        self.progress = progress
        self.updates += 1
        self._body.value = progress_html(progress)
        self._set_state(progress)

    def finish(self, progress: BatchProgress) -> None:
        """The batch ended: show the last state, disable Stop, and leave the static summary as the output."""
        self.update(progress)
        self.stop_button.disabled = True
        if self._display_id is not None:  # its output becomes its static summary, its widgets close
            finish([self._display_id], self.static_bundle(), self._close_widgets)

    def _close_widgets(self) -> None:
        for widget in descendants(self):  # nothing shows them any more: their models go
            close_widget(widget)

    # ------------------------------------------------------------------ static copy

    def to_html(self) -> str:
        """The static summary: self-contained HTML (every value escaped)."""
        return str(progress_html(self.progress, live=False))

    def to_text(self) -> str:
        return self.progress.line()

    def static_bundle(self) -> dict[str, str]:
        return {"text/html": self.to_html(), "text/plain": self.to_text()}

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data: dict[str, Any] = super()._repr_mimebundle_(**kwargs) or {}
        data.update(self.static_bundle())
        return data

    def _show(self) -> None:
        from IPython import get_ipython
        from IPython.display import display

        shell = get_ipython()
        self.shown_in = shell.execution_count if shell is not None else None
        self._display_id = uuid.uuid4().hex
        display(self._repr_mimebundle_(), raw=True, display_id=self._display_id)  # type: ignore[no-untyped-call]


def batch_view(batch: Batch) -> BatchView:
    """The ``"widget"`` progress display: a :class:`BatchView` shown in the current cell."""
    return BatchView(batch)


def show_in_cell(batch: Batch, shown_in: int | None) -> None:
    """A batch that is a cell's last value (``await batch.run()``): nothing under its progress view shown
    in that same cell, else its one-line repr (registered with ``batch.register_cell_display``)."""
    from IPython import get_ipython
    from IPython.display import display

    shell = get_ipython()
    if shell is not None and shown_in is not None and shown_in == shell.execution_count:
        return
    display({"text/plain": repr(batch)}, raw=True)  # type: ignore[no-untyped-call]
