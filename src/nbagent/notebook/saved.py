"""Saved notebooks: keep in a notebook's widget state only the models its outputs still show.

JupyterLab and Notebook 7 save the models their widget manager holds: a closed widget's model is gone.
nbclient (``jupyter nbconvert --execute``, papermill, ``NotebookClient``) saves otherwise: it merges the
state of every widget it saw opened during a cell, ignores ``comm_close`` and writes them all into
``metadata.widgets`` (nbclient 0.11). A view that went live and was then replaced by its static copy
leaves its closed, emptied models there (docs/architecture.md, "Views in other frontends").

:func:`prune_widget_state` removes them afterwards, from a notebook dict or a saved file (written whole):
it keeps each model an output's widget view names, every model such a model names
(``"IPY_MODEL_<id>"`` in its state, or a widget view inside an Output widget's outputs), recursively,
and a model with no view of its own (a ``jslink``) that names a kept one; it removes every other model.
A notebook whose outputs show no widget is left with no widget state at all.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["STATE_MIME", "VIEW_MIME", "WidgetPruning", "prune_widget_state", "write_whole"]

STATE_MIME = "application/vnd.jupyter.widget-state+json"
"""The key of a notebook's ``metadata.widgets`` that holds the saved widget models."""
VIEW_MIME = "application/vnd.jupyter.widget-view+json"
"""The mime type of an output that shows a widget (``{"model_id": ...}``)."""
_REFERENCE = "IPY_MODEL_"
"""How ipywidgets serializes a reference to another model (a layout, a child, a link's ends)."""
_WHERE = f"metadata.widgets[{STATE_MIME!r}]"


@dataclass(frozen=True)
class WidgetPruning:
    """What :func:`prune_widget_state` did: the models kept and removed, and (for a file) its size before and
    after in bytes (``None`` for a notebook dict; equal when nothing was removed: the file is not rewritten)."""

    kept: int
    removed: int
    bytes_before: int | None = None
    bytes_after: int | None = None


def _named_models(value: object) -> Iterator[str]:
    """Every model id ``value`` names, at any depth: ``"IPY_MODEL_<id>"`` strings and widget views'
    ``model_id``. Walked without recursion (a deeply nested untrusted state cannot exhaust the stack)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if item.startswith(_REFERENCE):
                yield item[len(_REFERENCE) :]
        elif isinstance(item, dict):
            view = item.get(VIEW_MIME)
            if isinstance(view, dict) and isinstance(view.get("model_id"), str):
                yield view["model_id"]
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)


def _has_no_view(model: object) -> bool:
    """A model no output can show (``_view_name`` null or absent: a link between two widgets' traits)."""
    state = model.get("state") if isinstance(model, dict) else None
    return isinstance(state, dict) and state.get("_view_name") is None


def _prune(notebook: MutableMapping[str, Any], name: str) -> WidgetPruning:
    if not isinstance(notebook, MutableMapping) or not isinstance(notebook.get("cells"), list):
        raise ValueError(f"prune_widget_state: {name} is not a notebook (a JSON object with a list of 'cells')")
    metadata = notebook.get("metadata")
    widgets = metadata.get("widgets") if isinstance(metadata, MutableMapping) else None
    saved = widgets.get(STATE_MIME) if isinstance(widgets, MutableMapping) else None
    if saved is None:
        return WidgetPruning(kept=0, removed=0)
    models = saved.get("state") if isinstance(saved, MutableMapping) else None
    if not isinstance(models, MutableMapping):
        raise ValueError(
            f"prune_widget_state: {name}'s {_WHERE}['state'] is {type(models).__name__}, not an object of "
            "widget models by model id: left as it is"
        )
    names = {model_id: set(_named_models(model)) for model_id, model in models.items()}
    kept: set[str] = set()
    outputs = [cell.get("outputs") for cell in notebook["cells"] if isinstance(cell, MutableMapping)]
    reached = list(_named_models(outputs))
    viewless = {model_id for model_id, model in models.items() if _has_no_view(model)}
    while reached:
        while reached:
            model_id = reached.pop()
            if model_id in models and model_id not in kept:
                kept.add(model_id)
                reached.extend(names[model_id] - kept)
        reached = [model_id for model_id in viewless - kept if names[model_id] & kept]  # links of kept models
    removed = [model_id for model_id in models if model_id not in kept]
    for model_id in removed:
        del models[model_id]
    if not models and isinstance(widgets, MutableMapping):
        del widgets[STATE_MIME]
        if not widgets and isinstance(metadata, MutableMapping):
            del metadata["widgets"]
    return WidgetPruning(kept=len(kept), removed=len(removed))


def write_whole(target: Path, text: str) -> None:
    """Write ``text`` to ``target`` under a hidden name beside it, then rename it over ``target``: a reader
    sees the old file or the new one, never part of it. An existing file keeps its permissions."""
    folder = target.parent if str(target.parent) else Path(".")
    handle, name = tempfile.mkstemp(dir=folder, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            mode = target.stat().st_mode & 0o7777
        except FileNotFoundError:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(name, mode)
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise


def prune_widget_state(notebook: MutableMapping[str, Any] | str | os.PathLike[str]) -> WidgetPruning:
    """Remove from a notebook's saved widget state every model its outputs no longer show (see the module).

    ``notebook`` is a notebook as a dict (``nbformat.NotebookNode`` included), changed in place, or the path of
    an ``.ipynb`` file, rewritten whole (as nbformat writes it) when a model was removed, else left untouched.
    Typical after nbclient: ``jupyter nbconvert --to notebook --execute a.ipynb`` then
    ``prune_widget_state("a.nbconvert.ipynb")`` (or ``python -m nbagent prune-widgets a.nbconvert.ipynb``).
    Raises ``ValueError`` naming ``notebook`` for a file or dict that is not a notebook, or whose widget state
    is not an object of models; nothing is changed then.
    """
    if isinstance(notebook, MutableMapping):
        return _prune(notebook, "notebook")
    if not isinstance(notebook, str | os.PathLike):
        raise TypeError(
            "prune_widget_state: notebook must be a notebook dict or the path of an .ipynb file, not "
            f"{type(notebook).__name__}"
        )
    path = Path(notebook)
    raw = path.read_bytes()
    try:
        loaded = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as error:
        raise ValueError(f"prune_widget_state: notebook {str(path)!r} is not a JSON notebook: {error}") from None
    if not isinstance(loaded, dict):
        raise ValueError(f"prune_widget_state: notebook {str(path)!r} is not a notebook (a JSON object)")
    pruned = _prune(loaded, f"notebook {str(path)!r}")
    if not pruned.removed:
        return WidgetPruning(pruned.kept, 0, len(raw), len(raw))
    text = json.dumps(loaded, sort_keys=True, indent=1, ensure_ascii=False) + "\n"  # as nbformat writes it
    write_whole(path, text)
    return WidgetPruning(pruned.kept, pruned.removed, len(raw), len(text.encode("utf-8")))
