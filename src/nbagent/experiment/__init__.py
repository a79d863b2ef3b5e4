"""Experiments: variants of an agent over a dataset, scored and compared task by task.

:class:`Experiment` runs every variant x task x repeat through one :class:`~nbagent.Batch` and scores
each run as it ends (:mod:`.scorers`); :func:`load_experiment` reads one back offline (:mod:`.folder`);
:mod:`.stats` holds the statistics.
"""

from .core import Experiment, summarize
from .folder import STATUSES
from .load import load_experiment
from .scorers import FunctionScorer, Judge, Scorer, contains, exact_match, llm_judge, numeric, regex, scorer

__all__ = [
    "STATUSES",
    "Experiment",
    "FunctionScorer",
    "Judge",
    "Scorer",
    "contains",
    "exact_match",
    "llm_judge",
    "load_experiment",
    "numeric",
    "regex",
    "scorer",
    "summarize",
]
