"""Traces: every item of every run, as pandas DataFrames, views and exports.

The trace sits below the loop: it records any source that speaks the recorder protocol of
:mod:`nbagent.records` and knows no ``AssistantAgent``.
"""

from .core import (
    COLUMNS,
    CONTEXT_TABLES,
    JSON_COLUMNS,
    TABLES,
    DefaultRedactor,
    Redactor,
    Trace,
    TraceFrames,
    context_frame,
    context_rows,
    frame,
    pick_snapshot,
)
from .export import DUCKDB_EXAMPLE, LoadedTrace, load_jsonl, load_parquet, otlp_json, summarize
from .recording import AgentRecorder, SentMessages
from .timeline import Timeline

__all__ = [
    "COLUMNS",
    "CONTEXT_TABLES",
    "DUCKDB_EXAMPLE",
    "JSON_COLUMNS",
    "TABLES",
    "AgentRecorder",
    "DefaultRedactor",
    "LoadedTrace",
    "Redactor",
    "SentMessages",
    "Timeline",
    "Trace",
    "TraceFrames",
    "context_frame",
    "context_rows",
    "frame",
    "load_jsonl",
    "load_parquet",
    "otlp_json",
    "pick_snapshot",
    "summarize",
]
