"""Notebook side of nbagent: the live run view, safe HTML, the sync entry point's helpers, magics.

Importing this package imports ipywidgets; the core (``import nbagent``) does not.
"""
