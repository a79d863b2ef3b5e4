"""``nbagent.compare(a, b)``: two runs side by side, aligned move by move, as a widget and a static copy.

Each side is a ``(trace, run_id)`` pair (a live or a loaded trace), a stepper (the run of its walk)
or an agent (its last run). The comparison (:class:`~nbagent.trace.compare.Comparison`: ``frame``,
``first_divergence``) is drawn by its ``html()`` through the one renderer, in the widget and in the
static copy a saved notebook keeps; the widget's Refresh reads both runs again (walks that went on).
"""

from __future__ import annotations

import ipywidgets as widgets

from .. import _check as check
from ..agent import AssistantAgent
from ..language import words
from ..render import STYLE
from ..stepper import Stepper
from ..trace import TraceFrames
from ..trace.compare import Comparison
from ..trace.replay import ReplaySource
from .static_display import StaticCopyDisplay

Side = tuple[ReplaySource, str] | Stepper | AssistantAgent
_EXPECTED = "a (trace, run_id) pair, a Stepper (its walk) or an AssistantAgent (its last run)"


def run_of(where: str, param: str, side: object) -> tuple[ReplaySource, str]:
    """The ``(trace, run_id)`` a side of a comparison stands for."""
    if isinstance(side, Stepper):
        if side.run_id is None:
            raise check.wrong_value(where, param, "a stepper that made a move", side, "await stepper.next() first")
        return side.agent.trace, side.run_id
    if isinstance(side, AssistantAgent):
        runs = side.trace.runs_df()
        if not len(runs):
            raise check.wrong_value(where, param, "an agent that ran", side, "run it first, or pass (trace, run_id)")
        return side.trace, str(runs["run_id"].iloc[-1])
    if isinstance(side, tuple) and len(side) == 2:
        trace, run_id = side
        if not isinstance(trace, TraceFrames):  # the shared trace interface: a live, loaded or lazy trace
            raise check.wrong_type(where, f"{param}[0]", "a trace (Trace, LoadedTrace or LazyTrace)", trace)
        check.string(where, f"{param}[1]", run_id)
        runs = trace.runs_df()
        if run_id not in set(runs["run_id"].astype("object")):
            raise check.wrong_value(where, f"{param}[1]", "the id of a run of that trace", run_id)
        return trace, run_id
    raise check.wrong_type(where, param, _EXPECTED, side)


class CompareWidget(widgets.VBox):  # type: ignore[misc]
    """The comparison's HTML and a Refresh button (which reads both runs again)."""

    def __init__(self, view: CompareView) -> None:
        self.view = view
        self.refresh_button = widgets.Button(description=words("Refresh"), icon="refresh")
        self.refresh_button.on_click(lambda _: view.update())
        self.body = widgets.HTML()
        super().__init__([widgets.HTML(STYLE), self.refresh_button, self.body])
        self.add_class("nba-compare-live")
        self.refresh()

    def refresh(self) -> None:
        self.body.value = self.view.html()


class CompareView(StaticCopyDisplay[CompareWidget], Comparison):
    """A :class:`Comparison` shown as a widget after its static copy (``frame``, ``html()`` as its base)."""

    def _make_widget(self) -> CompareWidget:
        return CompareWidget(self)

    def _static_html(self) -> str:
        return self.html()

    def update(self) -> None:
        """Read both runs again and show them."""
        self.refresh()
        self.changed()


def compare(a: Side, b: Side, *, labels: tuple[str, str] = ("A", "B")) -> CompareView:
    """Runs ``a`` and ``b`` side by side, aligned move by move, where they diverge marked.

    Each is a ``(trace, run_id)`` pair, a stepper (its walk: a fork and its parent) or an agent (its
    last run). Display it for the widget (and the static copy a saved notebook keeps); ``.frame`` is
    the alignment as a DataFrame (one row per aligned move, a ``diverged`` column).
    """
    where = "nbagent.compare"
    left, right = run_of(where, "a", a), run_of(where, "b", b)
    check.sequence(where, "labels", labels, "two labels (str, str)")
    if len(labels) != 2 or not all(isinstance(label, str) for label in labels):
        raise check.wrong_value(where, "labels", "two labels (str, str)", labels)
    return CompareView(left, right, (labels[0], labels[1]))
