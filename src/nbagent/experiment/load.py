"""``load_experiment(folder)``: an experiment written with ``output=folder``, read back offline."""

from __future__ import annotations

import os
from pathlib import Path

from .. import _check as check
from .core import Experiment

__all__ = ["load_experiment"]


def load_experiment(folder: str | os.PathLike[str]) -> Experiment:
    """The experiment written to ``folder`` (``Experiment(..., output=folder)``), read offline: its
    ``results``, ``summary()``, ``trace`` (read lazily) and ``rescore()`` work with no agent and no model
    (an LLM judge's verdicts come from its cache in the folder). ``run()`` needs the variants' agents:
    build the Experiment again with the same ``output`` to run what is not done."""
    if not isinstance(folder, (str, os.PathLike)):
        raise check.wrong_type("load_experiment", "folder", "a str or pathlib.Path (an experiment's output)", folder)
    return Experiment.open(Path(folder))
