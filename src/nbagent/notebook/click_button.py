"""A button whose click says which state it was made against, so a double click makes one move.

ipywidgets' ``Button`` sends a bare "click" message: the kernel cannot tell the second click of a
double click (sent before the browser learnt that the first one started a move) from a new click
made after the move. When the first move ends before the second click reaches the kernel, the second
click starts a second move.

:class:`ClickButton` is a ``ToggleButton`` the kernel turns off again as soon as it takes a click.
A click in the browser flips the value the browser shows, so each click carries the state it was made
against: a click on the "off" button sends ``True`` (a click: the handlers run, and the kernel turns
the button off again); the second click of a double click, made before the kernel's "off" reached
the browser, sends ``False``, the value the kernel already has, so nothing changes and nothing runs.
A click made after the browser shows the button off again is a new click. No time window: clicks in
quick succession, each made against the state the browser shows, each count.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import ipywidgets as widgets

__all__ = ["ClickButton"]


class ClickButton(widgets.ToggleButton):  # type: ignore[misc]
    """A push button (``on_click``, ``click()``, as ``ipywidgets.Button``) that ignores a click made
    against a state the kernel has already moved past (the second click of a double click)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(value=False, **kwargs)
        self._handlers: list[Callable[[ClickButton], object]] = []
        self.observe(self._taken, names="value")

    def on_click(self, callback: Callable[[ClickButton], object]) -> None:
        """Call ``callback(button)`` on each click."""
        self._handlers.append(callback)

    def click(self) -> None:
        """Click the button from the kernel, as the browser does against the state it shows."""
        self.value = True

    def _taken(self, change: dict[str, Any]) -> None:
        if not change["new"]:
            return  # the kernel turned it off, or a click against a state already moved past
        self.value = False  # the browser shows it off again: its next click is a new one
        for handler in self._handlers:
            handler(self)
