"""Traces: every item of every run, as pandas DataFrames, views and exports.

The trace sits below the loop: it records any source that speaks :class:`nbagent.records.RunSource`
(and the recorder protocol of :mod:`nbagent.records`) and knows no ``AssistantAgent``. Its modules,
bottom to top (each imports only those before it; pandas, numpy and pyarrow only inside functions):

* :mod:`~nbagent.trace.schema`: the tables' columns and dtypes (``COLUMNS``), ``frame()``, and the
  ``TraceTables`` protocol the exports read;
* :mod:`~nbagent.trace.rows`: the row layouts (one per kind of item) and the one place that tells
  them apart; :mod:`~nbagent.trace.store`: the ``RowStore`` of rows and context snapshots;
* :mod:`~nbagent.trace.recording`: ``AgentRecorder`` (one source's runs into a store), ``SentMessages``;
* :mod:`~nbagent.trace.texts`: items as redacted text (redactors: :mod:`nbagent.redact`);
* :mod:`~nbagent.trace.context`: the context at any point; :mod:`~nbagent.trace.frames`: the four frames;
* :mod:`~nbagent.trace.summary`, :mod:`~nbagent.trace.timeline`, :mod:`~nbagent.trace.views`: what
  a trace shows; :mod:`~nbagent.trace.combine`: several traces' tables as one;
  :mod:`~nbagent.trace.parquet`, :mod:`~nbagent.trace.jsonl`, :mod:`~nbagent.trace.otlp`: the
  exports, of any ``TraceTables``; :mod:`~nbagent.trace.writer`: ``DatasetWriter``, the one path a
  Parquet part is written (``to_parquet``'s and a Batch's ``output=``); :mod:`~nbagent.trace.follow`:
  the ``Follower`` interface (what a live view reads at each update); :mod:`~nbagent.trace.explore`:
  the explorer's table, ``RunFollower``;
* :mod:`~nbagent.trace.base`: ``TraceFrames``, what a live and a loaded trace share;
  :mod:`~nbagent.trace.lazy`: reading a Parquet dataset on demand;
  :mod:`~nbagent.trace.loaded`: ``LoadedTrace``, ``LazyTrace``, ``load_parquet``, ``load_jsonl``, ``concat``;
  :mod:`~nbagent.trace.live`: ``Trace``, ``context_frame``;
* :mod:`~nbagent.trace.dataset`: ``Dataset``, a Parquet dataset folder a writer adds parts to (a
  Batch's ``output=``), and ``DatasetFollower``, its parts in memory and committed followed.
"""

from typing import TYPE_CHECKING

from .._imports import lazy_names
from ..redact import DefaultRedactor, Redactor
from .base import TraceFrames
from .context import context_rows, pick_snapshot
from .live import Trace, context_frame
from .recording import AgentRecorder, SentMessages
from .schema import COLUMNS, CONTEXT_TABLES, JSON_COLUMNS, TABLES, TraceTables, frame
from .store import RowStore
from .summary import summarize

if TYPE_CHECKING:  # loaded on first use (see _LAZY)
    from .jsonl import jsonl_schema
    from .loaded import LazyTrace, LoadedTrace, concat, load_jsonl, load_parquet
    from .otlp import otlp_json
    from .parquet import DUCKDB_EXAMPLE, committed_files, duckdb_source
    from .sender import OTLPRecorder
    from .timeline import Timeline
    from .views import TraceView

# What a run's recording does not need: the exports, what reads them back, the views (and the renderer).
_LAZY = {
    "jsonl_schema": ".jsonl",
    **dict.fromkeys(("LazyTrace", "LoadedTrace", "concat", "load_jsonl", "load_parquet"), ".loaded"),
    "otlp_json": ".otlp",
    **dict.fromkeys(("DUCKDB_EXAMPLE", "committed_files", "duckdb_source"), ".parquet"),
    "OTLPRecorder": ".sender",
    "Timeline": ".timeline",
    "TraceView": ".views",
}

if not TYPE_CHECKING:  # hidden from type checkers: a misspelt name is "no attribute", not ``object``
    __getattr__, __dir__ = lazy_names(__name__, _LAZY)

__all__ = [
    "COLUMNS",
    "CONTEXT_TABLES",
    "DUCKDB_EXAMPLE",
    "JSON_COLUMNS",
    "TABLES",
    "AgentRecorder",
    "DefaultRedactor",
    "LazyTrace",
    "LoadedTrace",
    "OTLPRecorder",
    "Redactor",
    "RowStore",
    "SentMessages",
    "Timeline",
    "Trace",
    "TraceFrames",
    "TraceTables",
    "TraceView",
    "committed_files",
    "concat",
    "context_frame",
    "context_rows",
    "duckdb_source",
    "frame",
    "jsonl_schema",
    "load_jsonl",
    "load_parquet",
    "otlp_json",
    "pick_snapshot",
    "summarize",
]
