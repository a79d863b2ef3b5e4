"""How a stepper (nbagent's and AutoGen's) is displayed: its static copy, then its live widget.

The static copy is displayed with a display id, so each later state replaces it
(:meth:`StaticCopyDisplay.changed`): a saved notebook shows the last state where widgets do not
render. The widget's own output holds no copy (an empty ``text/plain``), so nothing shows twice;
the stylesheet hides the copy while a connected live widget follows it.
"""

from __future__ import annotations

import functools
import sys
import uuid
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast, runtime_checkable

from ..render import EMPTY, STYLE, Markup
from .kernel import in_voila

if TYPE_CHECKING:
    import ipywidgets

__all__ = [
    "LiveWidget",
    "SharedParts",
    "StaticCopyDisplay",
    "cell_stylesheet",
    "close_widget",
    "descendants",
    "finish",
]

_STYLED_CELLS: OrderedDict[object, None] = OrderedDict()
"""The cells (their execute requests' ids, the latest ones) that were given the stylesheet."""
_STYLED_CELLS_KEPT = 1024


def _cell() -> object | None:
    """The cell whose output is being made now: the id of the execute request ipykernel sends outputs
    for (a background task keeps its cell's), else IPython's execution count; ``None`` outside IPython."""
    if "IPython" not in sys.modules:
        return None
    from IPython import get_ipython

    shell = get_ipython()
    if shell is None:
        return None
    header = getattr(shell, "parent_header", None)
    msg_id = header.get("msg_id") if isinstance(header, dict) else None
    return cast(object, msg_id or shell.execution_count)


def cell_stylesheet() -> Markup:
    """The stylesheet (``<style>``) for the first static copy of the current cell, nothing for the next ones.

    A ``<style>`` in one output styles the whole page, and a saved cell of 30 runs carried the same
    13.7 KB 30 times. A copy without it still reads well (its layout is inline, see
    :func:`~nbagent.render.portable`), as where the sanitizer drops it; outside IPython it is always given.
    """
    cell = _cell()
    if cell is None:
        return STYLE
    if cell in _STYLED_CELLS:
        return EMPTY
    _STYLED_CELLS[cell] = None
    if len(_STYLED_CELLS) > _STYLED_CELLS_KEPT:
        _STYLED_CELLS.popitem(last=False)
    return STYLE


def close_widget(widget: ipywidgets.Widget, *, parts: bool = True) -> None:
    """Close ``widget`` and (if ``parts``: not when other widgets share them) the widgets made with it
    (its layout, its style: models of their own). An
    HTML widget's frontend is sent an empty value first (a frontend that keeps a closed widget's last
    state, nbclient or ``nbconvert --execute``, saved its text beside the static copy that replaced it);
    the kernel's widget keeps its value once closed (static copies are made from it)."""
    import ipywidgets

    value = widget.value if isinstance(widget, ipywidgets.HTML) else ""
    if value:
        widget.value = ""
    for name in ("layout", "style") if parts else ():  # made when the model opened: one never opened has none
        part = getattr(widget, name) if widget.has_trait(name) and widget.trait_has_value(name) else None
        if isinstance(part, ipywidgets.Widget):
            part.close()
    widget.close()
    if value:
        widget.value = value  # closed: sent nowhere


@runtime_checkable
class Detaching(Protocol):
    """A widget that keeps widgets it made while they are not among its children (made once, shown when
    needed): closing it closes them too."""

    def detached(self) -> Iterable[ipywidgets.Widget]:
        """The widgets it made that no box shows now."""


def descendants(widget: ipywidgets.Widget) -> Iterator[ipywidgets.Widget]:
    """``widget`` and every widget inside it (a box's children, theirs..., and those it keeps
    :class:`Detaching`), innermost first."""
    import ipywidgets

    if isinstance(widget, ipywidgets.Box):
        for child in widget.children:
            yield from descendants(child)
    if isinstance(widget, Detaching):
        for kept in widget.detached():
            yield from descendants(kept)
    yield widget


class SharedParts:
    """One layout and one style of each kind for the widgets of one view, where each widget would make its
    own (each a widget model: a stepper's widget had 74): widgets laid out by CSS classes share them. Each is
    made when first asked for (a view that has no text box opens no text style)."""

    @functools.cached_property
    def layout(self) -> ipywidgets.Layout:
        import ipywidgets

        return ipywidgets.Layout()

    @functools.cached_property
    def html_style(self) -> ipywidgets.widgets.widget_string.HTMLStyle:
        from ipywidgets.widgets.widget_string import HTMLStyle

        return HTMLStyle()

    @functools.cached_property
    def toggle_style(self) -> ipywidgets.widgets.widget_bool.ToggleButtonStyle:
        from ipywidgets.widgets.widget_bool import ToggleButtonStyle

        return ToggleButtonStyle()

    @functools.cached_property
    def text_style(self) -> ipywidgets.widgets.widget_string.TextStyle:
        from ipywidgets.widgets.widget_string import TextStyle

        return TextStyle()

    def html(self, value: str = "") -> ipywidgets.HTML:
        """An HTML widget of the view."""
        import ipywidgets

        return ipywidgets.HTML(value, layout=self.layout, style=self.html_style)


def finish(
    display_ids: Iterable[str], bundle: dict[str, str], close: Callable[[], None], *, keep_in_voila: bool = True
) -> None:
    """The one way a shown widget ends (a run's view, a batch's progress, a stepper's, a comparison's and an
    explorer's widget): each output showing it is replaced by ``bundle`` (its static copy, or an empty
    output where the copy is an output of its own), then ``close`` closes its widget models, so nothing in
    a saved notebook needs them. Voila's page may not apply a display update made after its cell ended: there
    (``keep_in_voila``) the widgets stay, showing the end."""
    from IPython.display import update_display

    for display_id in display_ids:
        update_display(bundle, raw=True, display_id=display_id)  # type: ignore[no-untyped-call]
    if not (keep_in_voila and in_voila()):
        close()


class LiveWidget(Protocol):
    """What :class:`StaticCopyDisplay` needs of a stepper's widget."""

    def refresh(self) -> None:
        """Show the stepper's current state."""

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        """The widget's own output (its widget view)."""


W = TypeVar("W", bound=LiveWidget)


class StaticCopyDisplay(ABC, Generic[W]):
    """A stepper that shows its widget when displayed, after its static copy, and refreshes both on
    :meth:`changed`.

    Mixed in before the stepper class; the subclass says how to make its widget
    (:meth:`_make_widget`) and how its state reads as static HTML (:meth:`_static_html`).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._widget: W | None = None
        self._display_ids: list[str] = []
        self._live_ids: list[str] = []  # the outputs showing the widget

    @abstractmethod
    def _make_widget(self) -> W:
        """A new widget of this stepper."""

    @abstractmethod
    def _static_html(self) -> str:
        """The stepper's current state as static HTML (no buttons): its static copy."""

    def widget(self) -> W:
        """The widget of this stepper (one per stepper, made on first use)."""
        if self._widget is None:
            self._widget = self._make_widget()
        return self._widget

    def changed(self) -> None:
        """After each move and at the end: the widget and the static copy show the new state."""
        if self._widget is not None:
            self._widget.refresh()
        if not self._display_ids:
            return
        from IPython.display import update_display

        static = self.static_bundle()
        for display_id in self._display_ids:
            update_display(static, raw=True, display_id=display_id)  # type: ignore[no-untyped-call]

    def static_bundle(self) -> dict[str, str]:
        """The static copy alone: ``text/html`` of the last state and ``text/plain``."""
        return {"text/html": self._static_html(), "text/plain": repr(self)}

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = self.widget()._repr_mimebundle_(**kwargs) or {}
        data.update(self.static_bundle())
        return data

    def _ipython_display_(self) -> None:
        """Display the static copy (with a display id, so later moves update it) and then the widget.

        The widget's output holds no copy of its own (an empty ``text/plain``): where widgets do
        not render, the static copy before it is what shows.
        """
        from IPython.display import display

        display_id = uuid.uuid4().hex
        self._display_ids.append(display_id)
        display(self.static_bundle(), raw=True, display_id=display_id)  # type: ignore[no-untyped-call]
        live = self.widget()._repr_mimebundle_() or {}
        live["text/plain"] = ""
        live_id = uuid.uuid4().hex
        self._live_ids.append(live_id)
        display(live, raw=True, display_id=live_id)  # type: ignore[no-untyped-call]

    def close_widgets(self) -> None:
        """Done with the widget: each output that shows it is emptied (the static copy before it shows the
        last state, and later moves made in code still update it) and its models are closed.

        A saved notebook then holds no widget output for it: reopened without saved widget state, the
        widget manager finds no model missing (a live widget's output names a model only the kernel that
        made it had). Displayed again, the object shows a new widget.
        """
        widget, self._widget = self._widget, None
        if widget is None:
            return
        live_ids, self._live_ids = self._live_ids, []

        def close() -> None:
            for part in descendants(cast("ipywidgets.Widget", widget)):
                close_widget(part)

        finish(live_ids, {"text/plain": ""}, close, keep_in_voila=False)  # asked for: closed in Voila too
