"""How a stepper (nbagent's and AutoGen's) is displayed: its static copy, then its live widget.

The static copy is displayed with a display id, so each later state replaces it
(:func:`update_static_copy`): a saved notebook shows the last state where widgets do not render.
The widget's own output holds no copy (an empty ``text/plain``), so nothing shows twice; the
stylesheet hides the copy while a connected live widget follows it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

__all__ = ["display_static_then_widget", "update_static_copy"]


def display_static_then_widget(display_ids: list[str], static: Mapping[str, str], widget: Any) -> None:
    """Display ``static`` (its display id appended to ``display_ids``) and then ``widget``."""
    from IPython.display import display

    display_id = uuid.uuid4().hex
    display_ids.append(display_id)
    display(dict(static), raw=True, display_id=display_id)  # type: ignore[no-untyped-call]
    live = widget._repr_mimebundle_() or {}
    live["text/plain"] = ""
    display(live, raw=True)  # type: ignore[no-untyped-call]


def update_static_copy(display_ids: list[str], static: Mapping[str, str]) -> None:
    """Replace every displayed static copy by ``static``."""
    if not display_ids:
        return
    from IPython.display import update_display

    for display_id in display_ids:
        update_display(dict(static), raw=True, display_id=display_id)  # type: ignore[no-untyped-call]
