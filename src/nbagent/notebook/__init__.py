"""Notebook side of nbagent: the live run view, the stepper widget, the sync entry point's helpers, magics,
and :func:`prune_widget_state` for notebooks nbclient saved (``nbconvert --execute``, papermill).

Their HTML is drawn by the one renderer, :mod:`nbagent.render`.

Its widget modules import ipywidgets; the core (``import nbagent``) does not, nor does this package itself.
"""

from .saved import WidgetPruning, prune_widget_state

__all__ = ["WidgetPruning", "prune_widget_state"]
