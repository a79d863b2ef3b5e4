"""A Parquet dataset folder written part by part: the one owner of a dataset a writer adds to.

A :class:`Dataset` is one session's view of a folder (``<table>/session=<id>/part-<n>.parquet``): as a
:class:`~nbagent.trace.writer.DatasetWriter` (the path ``trace.to_parquet`` writes through too) it
finishes or removes the parts a killed writer left (:func:`~nbagent.trace.parquet.repair`), numbers new
parts, commits a part whole (its trace tables, then the writer's own tables, such as a Batch's
``attempts`` and ``results``: the last one placed says the part is done); it lists the committed parts,
reads a part (once: a part is never written again, so its tables are kept), reads the session lazily
(:class:`~nbagent.trace.LazyTrace`) and says which task keys are committed (one call: what a rerun
skips). The writer's own tables are pyarrow Tables of any columns: a row per run there carries what the
trace tables do not (a task's key, a variant, a repeat).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from .base import NoSuchRun, TraceFrames
from .combine import ALL_TABLES, cast, combine, stack
from .explore import TOOL_USE_COLUMNS, RunFollower, tool_errors_only
from .follow import Follower
from .loaded import LazyTrace, LoadedTrace
from .parquet import (
    MAX_ID,
    check_schema,
    check_session,
    committed_files,
    committed_parts,
    part_name,
    part_of,
    read_arrow,
    read_part,
    read_table_file,
    require_pyarrow,
    session_folder,
)
from .schema import TraceTables, empty, tables_of
from .writer import DatasetWriter

if TYPE_CHECKING:
    import pandas as pd

    from .live import Trace

__all__ = [
    "MAX_ID",
    "Dataset",
    "DatasetFollower",
    "MemoryPart",
    "check_session",
    "committed_tables",
    "read_whole",
    "write_whole",
]


def committed_tables(folder: Path, table: str, columns: Sequence[str] | None = None) -> list[Any]:
    """The writer's ``table`` (or a trace table) in every committed part of the dataset in ``folder``
    (every session), as pyarrow Tables of its ``columns`` (default all), in session and part order, each
    with its file's metadata (a part being written, or left half by a killed writer, is not read)."""
    return [read_arrow(path, columns) for path in committed_files(folder, table)]


def write_whole(path: Path, arrow: Any) -> None:
    """Write ``arrow`` (a pyarrow Table) to the Parquet file ``path`` beside a dataset's parts (an
    experiment's tasks, a rescored score, a judge's cache), visible whole or not at all: written to a
    hidden file in the same folder, then renamed over ``path`` (a reader sees the old file or the new)."""
    import os

    import pyarrow.parquet as pq

    require_pyarrow()
    path.parent.mkdir(parents=True, exist_ok=True)
    aside = path.with_name(f".{path.name}.writing-{os.getpid()}")
    try:
        pq.write_table(arrow, aside)
        os.replace(aside, path)
    finally:
        aside.unlink(missing_ok=True)


def read_whole(path: Path, columns: Sequence[str] | None = None) -> Any:
    """The file :func:`write_whole` wrote, as a pyarrow Table of its ``columns`` (default all; ``None``:
    there is no file)."""
    return read_arrow(path, columns) if path.is_file() else None


class Dataset(DatasetWriter):
    """Session ``session`` of the dataset in ``folder`` (made if missing), whose parts hold the trace
    tables and then ``extra_tables`` (the writer's own, the last one placed last: a part is committed
    once its every file is in place): its writing end (:class:`~nbagent.trace.writer.DatasetWriter`,
    which ``trace.to_parquet`` writes through too) and its reading."""

    def __init__(self, folder: Path, session: str, extra_tables: Sequence[str] = ()) -> None:
        super().__init__(folder, session, extra_tables)
        self._read: dict[int, dict[str, pd.DataFrame]] = {}  # committed parts' trace tables, read once
        self._lazy: LazyTrace | None = None

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

    def keys_of(self, prefix: str, table: str = "results", key: str = "task_key") -> set[str]:
        """The keys (column ``key`` of the writer's ``table``) the committed parts of the sessions whose id
        starts with ``prefix`` hold, whatever their status: what a writer that names its sessions (an
        attempt of a Spark partition) finds of its earlier attempts (their files alone are read)."""
        keys: set[str] = set()
        for folder in (self.folder / table).glob(f"session={prefix}*"):
            session = folder.name.partition("=")[2]
            for number in committed_parts(self.folder, session):
                path = folder / part_name(number)
                if path.exists():
                    keys.update(str(value) for value in read_arrow(path, [key]).column(0).to_pylist())
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


class MemoryPart(Protocol):
    """A part still in memory (being recorded, or waiting to be written): its number, its trace, and the
    writer's rows of its runs so far (tuples of the follower's ``columns``), appended to as runs end."""

    @property
    def number(self) -> int: ...

    @property
    def trace(self) -> Trace: ...

    @property
    def run_rows(self) -> Sequence[tuple[Any, ...]]: ...


class DatasetFollower(Follower):
    """The runs new or changed since the last :meth:`changes` of a writer's parts, in memory and committed
    to ``dataset`` (``None``: parts in memory only), each with the writer's row of it: what a live view of
    a Batch puts in its table. The parts in memory (``in_memory()``) are followed row by row
    (:class:`~nbagent.trace.explore.RunFollower`); a part once committed is not read again (its last rows
    are taken from memory); a part committed before it was seen in memory is read once, its ``runs``,
    ``tool_calls`` (the tool-use columns) and ``run_table`` files alone. ``columns`` are the writer's
    per-run rows' (``run_id`` among them; ``session``, if there, is the dataset's: its files do not hold
    it); ``with_rows(runs, rows)`` puts them beside the runs. Runs come in the order a reading of the
    whole dataset has them; when a run would come before runs already given (a retry's run in an earlier
    part than another task's run), :meth:`changes` says to read the whole again."""

    def __init__(
        self,
        dataset: Dataset | None,
        in_memory: Callable[[], Sequence[MemoryPart]],
        run_table: str,
        columns: Sequence[str],
        with_rows: Callable[[pd.DataFrame, list[tuple[Any, ...]]], pd.DataFrame],
    ) -> None:
        self._dataset, self._in_memory, self._run_table = dataset, in_memory, run_table
        self._columns, self._run, self._with_rows = list(columns), list(columns).index("run_id"), with_rows
        self._read: set[int] = set()  # the parts whose every run has been given, by number
        self._memory: dict[int, tuple[MemoryPart, RunFollower, int]] = {}  # part, its follower, its rows taken
        self._rows: dict[str, tuple[Any, ...]] = {}  # run id -> the writer's row of it (the parts in memory's)
        self._given: set[str] = set()
        self._top = -1  # the highest part some run of which has been given
        self.reset()

    def reset(self) -> None:
        """Count what the writer holds now as given: call it just before reading the whole (after
        :meth:`changes` gave ``None`` too); a run committed in between is given again (its row replaced)."""
        self._read = set(self._committed())
        self._memory, self._rows, self._given = {}, {}, set()
        for part in self._in_memory():
            if part.number not in self._read:
                self._memory[part.number] = (part, RunFollower(part.trace), len(part.run_rows))
                self._rows.update((row[self._run], row) for row in part.run_rows)
                self._given.update(str(run) for run in part.trace.runs_df()["run_id"])  # read with the whole
        numbers = self._read | {number for number, (part, _, _) in self._memory.items() if len(part.trace)}
        self._top = max(numbers, default=-1)

    def _committed(self) -> list[int]:
        return [] if self._dataset is None else self._dataset.committed()

    def state(self) -> tuple[object, ...]:
        """The committed parts and, of each part in memory, its number, rows and the writer's rows."""
        memory = [(part.number, len(part.trace), len(part.run_rows)) for part in self._in_memory()]
        return tuple(self._committed()), *memory

    def changes(self, also: Collection[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame] | None:
        """``(runs, tool_calls)``: the rows of ``runs_df()`` (with the writer's columns) and the tool-use
        columns of ``tool_calls_df()`` (results of tool errors only) of the runs new or changed since the
        last call (and of the runs ``also`` names, when they are in memory); ``None``: read the whole again."""
        committed = set(self._committed())  # listed before the parts in memory: a part moves from there to here
        in_memory = {part.number: part for part in self._in_memory()}
        runs: list[pd.DataFrame] = []
        tools: list[pd.DataFrame] = []
        stored: list[tuple[Any, ...]] = []
        for number in sorted((committed - self._read) | set(in_memory) | set(self._memory)):
            if number in self._read:
                continue
            if number in self._memory:  # followed in memory: its new rows and the writer's (all once committed)
                part, follower, taken = self._memory[number]
                fresh = part.run_rows[taken:]
                self._rows.update((row[self._run], row) for row in fresh)
                matched = {row[self._run] for row in fresh} | {run for run in also if run in self._rows}
                got = follower.changes(matched)
                if got is None:
                    return None
                runs.append(got[0])
                tools.append(tool_errors_only(got[1][list(TOOL_USE_COLUMNS)]))
                self._memory[number] = (part, follower, len(part.run_rows))
                if number in committed:
                    del self._memory[number]
                    self._read.add(number)
            elif number in in_memory:  # a part new in memory: its rows so far, then followed
                part = in_memory[number]
                runs.append(part.trace.runs_df())
                tools.append(tool_errors_only(part.trace.tool_calls_df()[list(TOOL_USE_COLUMNS)]))
                self._rows.update((row[self._run], row) for row in part.run_rows)
                self._memory[number] = (part, RunFollower(part.trace), len(part.run_rows))
            else:  # committed before it was seen in memory: read once
                assert self._dataset is not None
                read = self._dataset.part_tables(number, {"runs": None, "tool_calls": TOOL_USE_COLUMNS})
                runs.append(cast(read["runs"], "runs"))
                tools.append(tool_errors_only(cast(read["tool_calls"], "tool_calls", TOOL_USE_COLUMNS)))
                stored += self._stored_rows(number)
                self._read.add(number)
            fresh_runs = [str(run) for run in runs[-1]["run_id"] if str(run) not in self._given]
            if fresh_runs:
                if number < self._top:  # it would come before runs of a later part given already
                    return None
                self._top = number
                self._given.update(fresh_runs)
        if not runs:
            return empty("runs"), empty("tool_calls")[list(TOOL_USE_COLUMNS)]
        all_runs = stack(runs, "runs")
        found = {row[self._run]: row for row in stored}
        found.update((run, self._rows[run]) for run in all_runs["run_id"].astype(str) if run in self._rows)
        return self._with_rows(all_runs, list(found.values())), stack(tools, "tool_calls", TOOL_USE_COLUMNS)

    def trace_of(self, run_id: str) -> TraceFrames:
        """A trace holding run ``run_id``'s rows as the whole has them: its part's in memory (:meth:`held`),
        else the run read alone from the dataset (:meth:`stored`)."""
        held = self.held(run_id)
        return self.stored(run_id) if held is None else held

    def held(self, run_id: str) -> Trace | None:
        """The trace of the part in memory holding run ``run_id`` (``None``: none does); on the event loop,
        which changes the parts in memory."""
        for part in [*self._in_memory(), *(part for part, _, _ in self._memory.values())]:
            if run_id in part.trace.runs_df()["run_id"].astype(str).tolist():
                return part.trace
        return None

    def stored(self, run_id: str) -> TraceFrames:
        """Run ``run_id`` read alone from the dataset (:meth:`Dataset.lazy`): its files are read, so call it
        off the event loop, as a view does."""
        if self._dataset is None:
            raise NoSuchRun(f"run {run_id!r} is not in memory, and there is no dataset to read it from")
        return self._dataset.lazy().run(run_id)

    def _stored_rows(self, number: int) -> list[tuple[Any, ...]]:
        """The writer's rows of committed part ``number``, as tuples of ``columns`` (``session``: the folder's)."""
        assert self._dataset is not None
        session = self._dataset.session
        held = [name for name in self._columns if name != "session"]
        rows = self._dataset.part_rows(number, self._run_table, held)
        return [
            tuple(session if name == "session" else row[held.index(name)] for name in self._columns) for row in rows
        ]
