"""Loaded traces: a trace read back from Parquet or JSON lines, with the views and exports of a live one."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from .base import TraceFrames
from .combine import combine
from .context import pick_snapshot
from .jsonl import read_jsonl
from .parquet import read_parquet
from .schema import CHUNK_KIND, COLUMNS, CONTEXT_TABLES, TraceTables, frame, tables_of

if TYPE_CHECKING:
    import pandas as pd


class LoadedTrace(TraceFrames):
    """A trace read back from Parquet or JSON lines: its DataFrames, views and exports."""

    def __init__(self, frames: dict[str, pd.DataFrame], trace_id: str, sessions: Sequence[str] | None = None) -> None:
        self._frames = frames
        self.trace_id = trace_id
        #: The trace ids of the sessions loaded, in the order their rows are (one for a single trace).
        self.sessions: list[str] = list(sessions) if sessions else [trace_id]

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
        sessions = f", {len(self.sessions)} sessions" if len(self.sessions) > 1 else ""
        return f"LoadedTrace({len(self._frames['events'])} items, {len(self._frames['runs'])} runs{sessions})"


def load_parquet(folder: str | Path, session: str | None = None) -> LoadedTrace:
    """Read a dataset written by ``trace.to_parquet`` (``folder/<table>/session=<id>/part-<n>.parquet``)
    back into DataFrames: every session of it, or ``session`` only, with the dtypes of
    :data:`~nbagent.trace.COLUMNS` (a trace's id is its rows' ``trace_id``; ``sessions`` lists them).
    A folder of the earlier layout (``folder/<table>.parquet``) loads too, and so does a file written
    before the context tables or a column existed (no context, the column null). Needs pyarrow
    (``pip install 'nbagent-loop[parquet]'``)."""
    frames, sessions = read_parquet(folder, session)
    return LoadedTrace(frames, sessions[0], sessions)


def load_jsonl(path: str | Path) -> LoadedTrace:
    """Read a folder written by ``trace.to_jsonl`` (``<table>.jsonl`` files), or a file of the
    earlier one-file format, back into the trace's DataFrames (a column added since the file was
    written reads as null)."""
    return LoadedTrace(*read_jsonl(path))


def concat(traces: Iterable[TraceTables]) -> LoadedTrace:
    """One trace of several: loaded ones (``load_jsonl``, ``load_parquet``) or live ones, rows in the
    order given, with :data:`~nbagent.trace.COLUMNS`' dtypes (a category column's categories are the
    union of the traces', where ``pd.concat`` of the frames would give ``object``), and every
    context snapshot still pointing at its rows (``context_df`` of any run works). Its ``sessions``
    lists the traces' ids in order (once each); its ``trace_id`` is the first's. A run found in two
    of the traces (a trace given with a concat or a later copy of it) is refused: it would count twice.

    A Parquet dataset holding every session (``trace.to_parquet(folder)`` for each) loads as one
    trace directly: ``load_parquet(folder)``.
    """
    if isinstance(traces, (TraceFrames, str, bytes, os.PathLike)) or not isinstance(traces, Iterable):
        hint = (
            "load a folder first: load_jsonl(path) or load_parquet(path); "
            if isinstance(traces, (str, os.PathLike))
            else ""
        )
        raise TypeError(f"concat: traces is {type(traces).__name__}, not a list of traces ({hint}e.g. concat([a, b]))")
    given = list(traces)
    if not given:
        raise ValueError("concat: traces is empty: give one trace or more")
    owner: dict[str, int] = {}
    for position, trace in enumerate(given):
        if not isinstance(trace, TraceFrames):
            raise TypeError(
                f"concat: traces[{position}] is {type(trace).__name__}, not a trace (a Trace or a LoadedTrace)"
            )
        for run_id in trace.runs_df()["run_id"].dropna().unique().tolist():
            if owner.setdefault(run_id, position) != position:  # its rows would be counted twice
                raise ValueError(
                    f"concat: run {run_id} is in traces[{owner[run_id]}] and traces[{position}]: "
                    "give each run once (a trace and a concat or later copy of it overlap)"
                )
    sessions: list[str] = []
    for trace in given:
        sessions += trace.sessions if isinstance(trace, LoadedTrace) else [trace.trace_id]
    order = list(dict.fromkeys(sessions))
    return LoadedTrace(combine([tables_of(trace) for trace in given]), order[0], order)
