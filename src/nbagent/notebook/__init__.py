"""Notebook side of nbagent: the live run view, the stepper widget, the sync entry point's helpers, magics.

Their HTML is drawn by the one renderer, :mod:`nbagent.render`.

Importing this package imports ipywidgets; the core (``import nbagent``) does not.
"""
