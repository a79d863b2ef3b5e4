"""Loaded traces: a trace read back from Parquet or JSON lines, with the views and exports of a live one."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from .base import TraceFrames
from .context import pick_snapshot
from .jsonl import read_jsonl
from .parquet import read_parquet
from .schema import CHUNK_KIND, COLUMNS, CONTEXT_TABLES, frame

if TYPE_CHECKING:
    import pandas as pd


class LoadedTrace(TraceFrames):
    """A trace read back from Parquet or JSON lines: its DataFrames, views and exports."""

    def __init__(self, frames: dict[str, pd.DataFrame], trace_id: str) -> None:
        self._frames = frames
        self.trace_id = trace_id

    def events_df(self, include_chunks: bool = True) -> pd.DataFrame:
        events = self._frames["events"]
        if include_chunks:
            return events.copy()
        return events[events["kind"] != CHUNK_KIND].reset_index(drop=True)

    def llm_calls_df(self) -> pd.DataFrame:
        return self._frames["llm_calls"].copy()

    def tool_calls_df(self) -> pd.DataFrame:
        return self._frames["tool_calls"].copy()

    def runs_df(self) -> pd.DataFrame:
        return self._frames["runs"].copy()

    def context_df(self, run_id: str | None = None, seq: int | None = None, agent: str | None = None) -> pd.DataFrame:
        import pandas as pd

        runs = self._frames["runs"]
        snapshots = self._frames["snapshots"]
        agents = {str(run): str(name) for run, name in zip(runs["run_id"], runs["agent"]) if not pd.isna(name)}
        index = pick_snapshot(
            self._frames["events"]["run_id"].astype("object").tolist(),
            agents,
            list(zip(snapshots["event_row"].tolist(), snapshots["agent"].astype("object").tolist())),
            run_id,
            seq,
            agent,
        )
        snapshot = snapshots.iloc[index]
        logs = self._frames["context_logs"]
        rows = logs[logs["log"] == snapshot["log"]].iloc[: int(snapshot["length"])]
        return frame("context", {name: rows[name].astype("object").tolist() for name in COLUMNS["context"]})

    def context_tables(self) -> dict[str, pd.DataFrame]:
        return {table: self._frames[table].copy() for table in CONTEXT_TABLES}

    def __repr__(self) -> str:
        return f"LoadedTrace({len(self._frames['events'])} items, {len(self._frames['runs'])} runs)"


def load_parquet(folder: str | Path) -> LoadedTrace:
    """Read a folder written by ``trace.to_parquet`` back into DataFrames equal to the saved ones (a
    folder written before the context tables or a column existed loads with no context and the
    column null). Needs pyarrow (``pip install 'nbagent[parquet]'``)."""
    return LoadedTrace(*read_parquet(folder))


def load_jsonl(path: str | Path) -> LoadedTrace:
    """Read a file written by ``trace.to_jsonl`` back into the trace's DataFrames (a column added
    since the file was written reads as null)."""
    return LoadedTrace(*read_jsonl(path))
