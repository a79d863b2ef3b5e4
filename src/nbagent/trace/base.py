"""What a live trace and a loaded one share: their frames, views and exports (:class:`TraceFrames`).

A subclass gives the frames; the summary, the timeline, the notebook view and the exports are made
from them (the export modules read any :class:`~nbagent.trace.schema.TraceTables`).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

    from .timeline import Timeline


class TraceFrames(ABC):
    """Views and exports shared by a live trace (:class:`~nbagent.trace.Trace`) and a loaded one
    (:class:`~nbagent.trace.LoadedTrace`)."""

    trace_id: str

    @abstractmethod
    def events_df(self, include_chunks: bool = True) -> pd.DataFrame:
        """One row per recorded item, streamed chunks included unless ``include_chunks=False``."""

    @abstractmethod
    def llm_calls_df(self) -> pd.DataFrame:
        """One row per model call."""

    @abstractmethod
    def tool_calls_df(self) -> pd.DataFrame:
        """One row per tool call."""

    @abstractmethod
    def runs_df(self) -> pd.DataFrame:
        """One row per run."""

    @abstractmethod
    def context_df(self, run_id: str | None = None, seq: int | None = None, agent: str | None = None) -> pd.DataFrame:
        """The model context as it was when item ``seq`` of run ``run_id`` was recorded."""

    @abstractmethod
    def context_tables(self) -> dict[str, pd.DataFrame]:
        """The context snapshots as the tables ``context_logs`` and ``snapshots`` (for export)."""

    def summary(self) -> pd.Series:
        """Runs, LLM calls, tokens, tool error rate and p50/p95 latencies at a glance."""
        from .summary import summarize

        return summarize(self.runs_df(), self.llm_calls_df(), self.tool_calls_df())

    def timeline(self, run_id: str | None = None) -> Timeline:
        """A run's LLM calls and tool calls on a time axis (the last run by default), as HTML/SVG."""
        from .timeline import Timeline

        return Timeline.of(self.runs_df(), self.llm_calls_df(), self.tool_calls_df(), run_id)

    def to_parquet(self, folder: str | Path) -> Path:
        """Write the tables as ``folder/<table>.parquet`` (the four frames and the context snapshots);
        ``nbagent.load_parquet`` reads them."""
        from .parquet import write_parquet

        return write_parquet(self, folder)

    def to_jsonl(self, path: str | Path) -> Path:
        """Write every row of the tables (the context ones included) as one JSON line with a ``table`` field."""
        from .jsonl import write_jsonl

        return write_jsonl(self, path)

    def to_otlp_json(self, path: str | Path | None = None) -> dict[str, Any]:
        """OTLP-JSON spans (one per run, LLM call and tool call) with gen_ai.* attributes."""
        from .otlp import otlp_json

        document = otlp_json(self)
        if path is not None:
            Path(path).write_text(json.dumps(document), encoding="utf-8")
        return document

    def _repr_html_(self) -> str:
        from .views import summary_html

        return summary_html(self)
