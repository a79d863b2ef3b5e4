"""A Parquet dataset folder written part by part: the one owner of a dataset a writer adds to.

A :class:`Dataset` is one session's view of a folder (``<table>/session=<id>/part-<n>.parquet``): it
finishes or removes the parts a killed writer left (:func:`~nbagent.trace.parquet.repair`), numbers new
parts, commits a part whole (its trace tables, then the writer's own tables, such as a Batch's
``attempts`` and ``results``: the last one placed says the part is done), lists the committed parts,
reads a part (once: a part is never written again, so its tables are kept), reads the session lazily
(:class:`~nbagent.trace.LazyTrace`) and says which task keys are committed (one call: what a rerun
skips). The writer's own tables are pyarrow Tables of any columns: a row per run there carries what the
trace tables do not (a task's key, a variant, a repeat).
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Collection, Mapping, Sequence
from itertools import count
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .combine import ALL_TABLES, combine
from .loaded import LazyTrace, LoadedTrace
from .parquet import (
    WRITE_ORDER,
    arrow_table,
    check_schema,
    committed_parts,
    next_part,
    part_name,
    part_of,
    pending_sessions,
    read_arrow,
    read_part,
    read_table_file,
    repair,
    require_pyarrow,
    session_folder,
    write_part,
)
from .schema import TraceTables, tables_of

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Dataset"]


class Dataset:
    """Session ``session`` of the dataset in ``folder`` (made if missing), whose parts hold the trace
    tables and then ``extra_tables`` (the writer's own, the last one placed last: a part is committed
    once its every file is in place)."""

    def __init__(self, folder: Path, session: str, extra_tables: Sequence[str] = ()) -> None:
        require_pyarrow()
        self.folder = folder
        self.session = session
        self.tables = (*WRITE_ORDER, *extra_tables)
        folder.mkdir(parents=True, exist_ok=True)
        #: What opening the folder finished or removed of the parts a killed writer left (one line each).
        self.repaired = self._repair()
        self._numbers = count(next_part(folder, session, self.tables))
        self._read: dict[int, dict[str, pd.DataFrame]] = {}  # committed parts' trace tables, read once
        self._lazy: LazyTrace | None = None

    def _repair(self) -> list[str]:
        """Finish or remove the parts of every session a killed writer left unfinished (so a rerun never
        runs a task whose rows are in place, nor finds its rows twice), and remove the scratch folders
        of earlier versions (``.writing-*``)."""
        done = []
        for scratch in self.folder.glob(".writing-*"):
            if scratch.is_dir():
                shutil.rmtree(scratch, ignore_errors=True)
                done.append(f"removed {scratch.name}")
        sessions = {p.name[len("session=") :] for t in self.tables for p in (self.folder / t).glob("session=*")}
        for session in sorted(sessions | pending_sessions(self.folder)):
            with contextlib.suppress(ValueError):  # a stray folder: not a session of a writer
                done += repair(self.folder, session, self.tables)
        return done

    # ------------------------------------------------------------------ writing

    def new_number(self) -> int:
        """The number of a new part of this session."""
        return next(self._numbers)

    def commit(self, number: int, trace: TraceTables, extra: Mapping[str, Any]) -> None:
        """Write part ``number``: ``trace``'s tables, then ``extra`` (table -> pyarrow Table, one for each
        of ``extra_tables``), visible whole or not at all (no loop object is touched: it runs in a
        worker thread)."""
        missing = [table for table in self.tables[len(WRITE_ORDER) :] if table not in extra]
        if missing or len(extra) != len(self.tables) - len(WRITE_ORDER):
            raise ValueError(f"Dataset.commit: extra must hold the tables {self.tables[len(WRITE_ORDER) :]}")
        frames = tables_of(trace)
        tables = {table: arrow_table(frames[table], table, self.session) for table in WRITE_ORDER}
        tables.update((table, extra[table]) for table in self.tables[len(WRITE_ORDER) :])
        write_part(self.folder, self.session, number, tables)

    # ------------------------------------------------------------------ reading

    def committed(self) -> list[int]:
        """This session's committed parts, in order."""
        return committed_parts(self.folder, self.session)

    def files(
        self, table: str, session: str | None = None, skip: Collection[int] = frozenset()
    ) -> list[tuple[str, Path]]:
        """(session, path) of every part file of ``table`` (of one session; but parts numbered in ``skip``),
        in session and part order."""
        pattern = f"session={session}" if session is not None else "session=*"
        found = []
        for folder in sorted((self.folder / table).glob(pattern)):
            sid = folder.name.partition("=")[2]
            numbered = [(int(path.stem.split("-")[-1]), path) for path in folder.glob("part-*.parquet")]
            found += [(sid, path) for number, path in sorted(numbered) if number not in skip]
        return found

    def read_extra(
        self, table: str, schema: Any, session: str | None = None, skip: Collection[int] = frozenset()
    ) -> pd.DataFrame | None:
        """One of the writer's tables across sessions (or of ``session``; but the parts numbered in
        ``skip``), as pandas reads it, with a ``session`` column; ``None`` when no part has it. A file of
        another ``schema`` (a pyarrow Schema) raises a ValueError naming it."""
        import pandas as pd

        frames = []
        for sid, path in self.files(table, session, skip):
            stored = read_arrow(path)
            check_schema(path, table, stored.schema, schema, schema.names)
            df = stored.to_pandas()
            df["session"] = sid
            frames.append(df)
        return pd.concat(frames, ignore_index=True) if frames else None

    def committed_tasks(self, table: str = "results", key: str = "task_key") -> set[str]:
        """The keys (column ``key`` of the writer's ``table``) some session committed with status ``ok``:
        the tasks a rerun skips (the key and status columns alone are read)."""
        keys: set[str] = set()
        for _, path in self.files(table):
            arrow = read_arrow(path, [key, "status"])
            for value, status in zip(arrow.column(key).to_pylist(), arrow.column("status").to_pylist()):
                if status == "ok" and value is not None:
                    keys.add(value)
        return keys

    def part(self, number: int) -> dict[str, pd.DataFrame]:
        """The trace tables of committed part ``number``, read once (a committed part never changes)."""
        tables = self._read.get(number)
        if tables is None:
            found = part_of(self.folder, self.session, number)
            tables = self._read[number] = {table: read_part(found, table) for table in ALL_TABLES}
        return tables

    def part_tables(self, number: int, columns: Mapping[str, Sequence[str] | None]) -> dict[str, pd.DataFrame]:
        """Some tables of part ``number`` (table -> its columns, ``None``: all), dtypes not cast: the kept
        tables if the part was read whole, else just those columns read."""
        kept = self._read.get(number)
        if kept is not None:
            return {table: kept[table] if cols is None else kept[table][list(cols)] for table, cols in columns.items()}
        folder = {table: session_folder(self.folder, table, self.session) / part_name(number) for table in columns}
        return {table: read_table_file(folder[table], table, cols) for table, cols in columns.items()}

    def part_rows(self, number: int, table: str, columns: Sequence[str]) -> list[tuple[Any, ...]]:
        """The rows of the writer's ``table`` in part ``number`` (none if it has no such file), as tuples of
        ``columns``."""
        path = session_folder(self.folder, table, self.session) / part_name(number)
        if not path.exists():
            return []
        data = read_arrow(path, columns).to_pydict()
        return list(zip(*(data[name] for name in columns)))

    def trace(self, trace_id: str, live: Mapping[int, TraceTables] | None = None) -> LoadedTrace:
        """This session's committed parts and the parts in memory ``live`` numbers (read from their
        traces instead), in part order, as one :class:`~nbagent.LoadedTrace`
        (:func:`~nbagent.trace.combine.combine`); each committed part is read once, whatever the calls."""
        live = live or {}
        numbers = sorted({*self.committed(), *live})
        pieces = [tables_of(live[number]) if number in live else self.part(number) for number in numbers]
        return LoadedTrace(combine(pieces), trace_id)

    def lazy(self) -> LazyTrace:
        """This session read on demand (:class:`~nbagent.trace.LazyTrace`), refreshed to its committed
        parts now (the same trace each call: a part listed once is not listed again)."""
        if self._lazy is None:
            self._lazy = LazyTrace(self.folder, self.session)
        else:
            self._lazy.refresh()
        return self._lazy
