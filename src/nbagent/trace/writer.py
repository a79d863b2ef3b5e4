"""Writing a Parquet dataset folder: the one path every part takes, ``trace.to_parquet``'s as a Batch's.

A :class:`DatasetWriter` is one session's writing end of a folder (``<table>/session=<id>/part-<n>.parquet``,
the layout of :mod:`nbagent.trace.parquet`): opening it finishes or removes the parts a killed writer
left, it numbers new parts, and commits a part whole: the trace tables (in :data:`WRITE_ORDER`, ``runs``
last), then the writer's own tables (a Batch's ``attempts`` and ``results``). :func:`write_parquet`
(``trace.to_parquet``) commits each session's new ended runs through one;
:class:`~nbagent.trace.dataset.Dataset` (a Batch's ``output=``) is a writer that also reads its folder.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import warnings
from collections.abc import Collection, Mapping, Sequence
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import _check as check
from .parquet import (
    WRITE_ORDER,
    arrow_table,
    check_session,
    next_part,
    pending_sessions,
    repair,
    require_pyarrow,
    session_folder,
    write_part,
    written_runs,
)
from .schema import TABLES, TraceTables, tables_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["DatasetWriter", "write_parquet"]


class DatasetWriter:
    """The writing end of session ``session`` of the dataset in ``folder`` (made if missing), whose parts
    hold the trace tables and then ``extra_tables`` (the writer's own, the last one placed last: a part
    is committed once its every file is in place). Opening it finishes or removes what a killed writer
    left unfinished: in every session of the folder (``repair_folder``, a Batch's resume: the scratch
    folders of earlier versions too), or in ``session`` alone."""

    def __init__(
        self, folder: Path, session: str, extra_tables: Sequence[str] = (), *, repair_folder: bool = True
    ) -> None:
        require_pyarrow()
        try:
            self.session = check_session(session)
        except ValueError as error:
            raise ValueError(f"{type(self).__name__}: session: {error}") from None
        self.folder = folder
        self.tables = (*WRITE_ORDER, *extra_tables)
        folder.mkdir(parents=True, exist_ok=True)
        #: What opening the folder finished or removed of the parts a killed writer left (one line each).
        self.repaired = self._repair_folder() if repair_folder else repair(folder, session, self.tables)
        self._numbers = count(next_part(folder, session, self.tables))

    def _repair_folder(self) -> list[str]:
        """Finish or remove the parts of every session a killed writer left unfinished (so a rerun never
        runs a task whose rows are in place, nor finds its rows twice), and remove the scratch folders
        of earlier versions (``.writing-*``). The parts other writers are writing meanwhile (other
        processes, machines or Spark executors adding to the same folder) are left alone."""
        done = []
        for scratch in self.folder.glob(".writing-*"):
            if scratch.is_dir():
                shutil.rmtree(scratch, ignore_errors=True)
                done.append(f"removed {scratch.name}")
        for session in sorted(pending_sessions(self.folder)):
            with contextlib.suppress(ValueError):  # a stray folder: not a session of a writer
                done += repair(self.folder, session, self.tables)
        return done

    def new_number(self) -> int:
        """The number of a new part of this session."""
        return next(self._numbers)

    def commit(self, number: int, trace: TraceTables, extra: Mapping[str, Any]) -> None:
        """Write part ``number``: ``trace``'s tables, then ``extra`` (table -> pyarrow Table, one for each
        of ``extra_tables``), visible whole or not at all (no loop object is touched: it runs in a
        worker thread)."""
        self.commit_tables(number, tables_of(trace), extra)

    def commit_tables(self, number: int, frames: Mapping[str, pd.DataFrame], extra: Mapping[str, Any]) -> None:
        """:meth:`commit` of the trace tables as frames (``frames``: table -> its frame, of this session)."""
        own = self.tables[len(WRITE_ORDER) :]
        if len(extra) != len(own) or any(table not in extra for table in own):
            raise ValueError(f"{type(self).__name__}.commit: extra must hold the tables {own}")
        tables = {table: arrow_table(frames[table], table, self.session) for table in WRITE_ORDER}
        tables.update((table, extra[table]) for table in own)
        write_part(self.folder, self.session, number, tables)


def split_sessions(tables: dict[str, pd.DataFrame], fallback: str) -> dict[str, dict[str, pd.DataFrame]]:
    """The tables of each session (trace id) in them, in order of appearance; a snapshot's
    ``event_row`` made relative to its session's first event. No row at all: one session, ``fallback``."""
    order: list[str] = []
    for df in tables.values():
        for value in df["trace_id"].astype("object").dropna().unique().tolist():
            if str(value) not in order:
                order.append(str(value))
    if len(order) <= 1:
        return {order[0] if order else fallback: tables}
    events_ids = tables["events"]["trace_id"].astype("object")
    out: dict[str, dict[str, pd.DataFrame]] = {}
    for session in order:
        mine = {
            name: df[df["trace_id"].astype("object") == session].reset_index(drop=True) for name, df in tables.items()
        }
        rows = events_ids.index[events_ids == session]
        offset = int(rows[0]) if len(rows) else 0
        snaps = mine["snapshots"].copy()
        snaps["event_row"] = (snaps["event_row"] - offset).astype("Int64")
        mine["snapshots"] = snaps
        out[session] = mine
    return out


def going_runs(runs: pd.DataFrame) -> set[str]:
    """The runs of ``runs`` (a ``runs`` frame) still going: those whose status is ``running`` and the
    runs under one (a team run's turns, by ``parent_run_id``, however deep), so that a team run and its
    turns are written in one part."""
    ids = runs["run_id"].tolist()
    parents = runs["parent_run_id"].tolist()
    going = {str(run) for run, status in zip(ids, runs["status"].tolist()) if status == "running"}
    children: dict[str, list[str]] = {}
    for run, parent in zip(ids, parents):
        if isinstance(parent, str) and isinstance(run, str):
            children.setdefault(parent, []).append(run)
    todo = list(going)
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in going:
                going.add(child)
                todo.append(child)
    return going


def without_runs(
    tables: Mapping[str, pd.DataFrame], runs: Collection[str], *, unowned: bool = True
) -> dict[str, pd.DataFrame]:
    """The tables of one session without the rows of ``runs`` (nor, when ``unowned``, those of no run:
    written with the runs before them); the snapshots taken at a row kept moved to its new position,
    the logs they read renumbered in order, the others left out."""
    import numpy as np
    import pandas as pd

    left = list(runs)

    def kept_rows(df: pd.DataFrame) -> Any:
        ids = df["run_id"].astype("object")
        kept = ~ids.isin(left).to_numpy()
        return kept & ids.notna().to_numpy() if unowned else kept

    keep = kept_rows(tables["events"])
    out = {
        table: tables[table][keep if table == "events" else kept_rows(tables[table])].reset_index(drop=True)
        for table in TABLES
    }
    before = np.concatenate([[0], np.cumsum(keep)])  # per old position: the rows kept before it
    keep_at = np.append(keep, bool(keep[-1]) if len(keep) else True)  # a snapshot after the last row
    snaps = tables["snapshots"]
    rows = snaps["event_row"].astype("Int64").fillna(-1).to_numpy(dtype="int64")
    taken = (rows >= 0) & (rows <= len(keep))
    taken[taken] = keep_at[rows[taken]]
    snaps = snaps[taken].reset_index(drop=True)
    logs = snaps["log"].astype("Int64").tolist()
    renumber = {log: index for index, log in enumerate(dict.fromkeys(logs))}
    snaps = snaps.assign(
        event_row=pd.Series(before[rows[taken]], dtype="Int64"),
        log=pd.Series([renumber[log] for log in logs], dtype="Int64"),
    )
    context = tables["context_logs"]
    context = context[context["log"].astype("Int64").isin(list(renumber)).fillna(False).to_numpy()]
    context = context.assign(log=context["log"].astype("Int64").map(renumber).astype("Int64")).reset_index(drop=True)
    return {**out, "snapshots": snaps, "context_logs": context}


BATCH_TABLES = ("results", "attempts")
"""The tables only a Batch's ``output=`` writes: a session holding them is a Batch's."""


def write_parquet(trace: TraceTables, folder: str | Path) -> Path:
    """``trace.to_parquet(folder)``: write each table as ``folder/<table>/session=<trace id>/part-<n>.parquet``
    (``n``: the next free part of that session) through a :class:`DatasetWriter` of each session, as a
    Batch's ``output=`` writes its parts: each part whole or not at all (a part a killed process left
    unfinished in that session is finished or removed first); JSON-valued columns are stored as JSON
    text. Returns ``folder``.

    **A run is in the dataset once, ended**: a run the folder holds already is not written again, so
    exporting the same trace to the same folder again (without ``trace.clear()`` between) adds only its
    new runs, and none when there is none; and a live trace's runs still going (status ``running``, and
    the turns of a team run still going) are left out with a warning: the first export after they have
    ended writes them (so no reader, DuckDB's or Spark's included, ever sees a run twice, or a run's
    rows cut short; ``trace.clear()`` keeps a run in progress whole, so an export-then-clear loses none of
    it). A loaded trace's runs are written
    as they were recorded, a run recorded as running too (with a warning: it will not be written again
    once ended). A session that is a Batch's ``output=`` (it has ``results``) is refused: the batch
    writes its runs itself."""
    if not isinstance(folder, str | os.PathLike):
        raise check.wrong_type("to_parquet", "folder", "a str or pathlib.Path", folder)
    require_pyarrow()
    root = Path(folder)
    if root.exists() and not root.is_dir():
        raise NotADirectoryError(f"to_parquet: folder {str(root)!r} is a file, not a folder")
    live = bool(getattr(trace, "records_runs", False))
    going_total: list[str] = []
    recorded_going: list[str] = []  # a loaded trace's runs recorded as running, written as they are
    for session, tables in split_sessions(tables_of(trace), trace.trace_id).items():
        session_folder(root, "runs", session)  # a bad id is refused before anything is written
        for table in BATCH_TABLES:
            if session_folder(root, table, session).exists():
                raise ValueError(
                    f"to_parquet: folder {str(root)!r}: session {session} is a Batch's output (it has {table}/): "
                    "the batch writes its runs there itself; export the trace to another folder"
                )
        writer = DatasetWriter(root, session, repair_folder=False)
        written = written_runs(root, session)
        going = going_runs(tables["runs"]) - written if live else set()
        going_total += sorted(going)
        if written or going:
            tables = without_runs(tables, written | going, unowned=bool(written))
            if not any(len(tables[table]) for table in TABLES):
                continue  # nothing new (or only runs still going) since the last export to this folder
        if not live:
            runs = tables["runs"]
            recorded_going += sorted(str(run) for run in runs.loc[runs["status"] == "running", "run_id"])
        writer.commit_tables(writer.new_number(), tables, {})
    if going_total:
        warnings.warn(
            f"nbagent: to_parquet: {len(going_total)} run(s) still going left out of {str(root)!r} "
            f"({_named(going_total)}): a run is written once it has ended, by the first to_parquet to this "
            "folder after that (trace.clear() keeps them whole meanwhile)",
            RuntimeWarning,
            stacklevel=3,
        )
    if recorded_going:
        warnings.warn(
            f"nbagent: to_parquet: {len(recorded_going)} run(s) recorded as running written as recorded to "
            f"{str(root)!r} ({_named(recorded_going)}): a run is written once, so this folder keeps them "
            "cut short; if they were still going, export the trace recording them, once they end, instead",
            RuntimeWarning,
            stacklevel=3,
        )
    return root


def _named(runs: Sequence[str]) -> str:
    """Up to three of ``runs``, for a warning."""
    return ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
