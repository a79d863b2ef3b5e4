"""Loaded traces: a trace read back from Parquet or JSON lines, with the views and exports of a live one
(:class:`LoadedTrace`), and a Parquet dataset read on demand (:class:`LazyTrace`)."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, TypeVar, overload

from .. import _check as check
from .base import NoSuchRun, TraceFrames
from .combine import combine
from .context import pick_snapshot
from .explore import TOOL_USE_COLUMNS, tool_uses
from .follow import Follower
from .jsonl import read_jsonl
from .lazy import open_dataset, read_all, read_run, read_table
from .parquet import Part, UnreadableFile, in_order, new_parts, read_parquet, session_id, without_unreadable
from .schema import CHUNK_KIND, COLUMNS, CONTEXT_TABLES, TraceTables, frame, tables_of

if TYPE_CHECKING:
    import pandas as pd

T = TypeVar("T")


_LOAD = "load_parquet"


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
            self._frames["events"]["run_id"].tolist(),
            agents,
            list(zip(snapshots["event_row"].tolist(), snapshots["agent"].tolist())),
            run_id,
            seq,
            agent,
        )
        snapshot = snapshots.iloc[index]
        logs = self._frames["context_logs"]
        rows = logs[logs["log"] == snapshot["log"]].iloc[: int(snapshot["length"])]
        return frame("context", {name: rows[name].tolist() for name in COLUMNS["context"]})

    def context_tables(self) -> dict[str, pd.DataFrame]:
        return {table: self._frames[table].copy() for table in CONTEXT_TABLES}

    def __repr__(self) -> str:
        sessions = f", {len(self.sessions)} sessions" if len(self.sessions) > 1 else ""
        return f"LoadedTrace({len(self._frames['events'])} items, {len(self._frames['runs'])} runs{sessions})"


class LazyTrace(TraceFrames):
    """A Parquet dataset whose tables stay on disk until asked for: ``load_parquet(folder, lazy=True)``.

    Opening it reads the files' metadata only. Each frame is read when asked for (nothing is kept), a
    table's columns alone with :meth:`table`, and one run's rows alone with :meth:`run`: what the run
    explorer (``nbagent.explore(folder)``) shows, replays, compares and draws (``replay``,
    ``timeline`` and ``context_df`` of a run read that run's rows only). Its frames equal
    ``load_parquet(folder)``'s (rows, order, dtypes); :meth:`load` reads everything into a
    :class:`LoadedTrace`. ``sessions`` lists the sessions' ids in the order their rows are;
    ``trace_id`` is the first's. Reading: :mod:`nbagent.trace.lazy`.

    A dataset written to while it is read (a Batch's ``output=``, a session exported now and then):
    :meth:`refresh` takes in the parts committed since, reading their metadata alone."""

    reads_by_run = True
    reads_files = True

    def __init__(
        self, folder: str | os.PathLike[str], session: str | None = None, *, where: str = _LOAD, strict: bool = False
    ) -> None:
        # ``where`` names who was given the folder in the errors (its parameter after a colon:
        # ``"explore:source"``; default ``load_parquet``'s ``folder``)
        name, _, param = where.partition(":")
        check.boolean(name, "strict", strict)
        keyed, ids, root = open_dataset(folder, session, name, param or "folder", strict)
        #: Whether a part one file of which is no whole Parquet file is refused (else skipped with a warning).
        self.strict = strict
        #: The dataset's folder.
        self.folder = root
        #: The session read (``None``: every session).
        self.session = session
        names = list(dict.fromkeys(part.session for _, part in keyed))
        self._ids = dict(zip(names, ids, strict=False))  # session -> its trace id
        self._keyed = keyed
        #: The trace ids of the sessions read, in the order their rows are.
        self.sessions: list[str] = ids
        self.trace_id = ids[0]

    @property
    def _parts(self) -> list[Part]:
        """The parts read, in order (of :attr:`_keyed`, the parts with their sort keys)."""
        return [part for _, part in self._keyed]

    @property
    def parts(self) -> list[tuple[str, int]]:
        """The parts read, in the order their rows are: ``(session, part number)`` each."""
        return [(part.session, part.number) for part in self._parts]

    def refresh(self) -> LazyTrace:
        """Take in the parts committed to the dataset since it was opened (or last refreshed): the
        session folders are listed and the new parts' metadata alone read (no part read before is read
        again). Returns the new parts as a :class:`LazyTrace` of their own (none new: one of no part,
        whose frames have no row), to read what is new alone: ``trace.refresh().runs_df()``. Each new
        part is put where ``load_parquet`` puts it (:attr:`parts` says where), so the frames stay equal
        to ``load_parquet``'s of the dataset now."""
        found = new_parts(self.folder, self.session, set(self.parts), self.strict)
        for name in dict.fromkeys(part.session for _, part in found):
            if name not in self._ids:
                self._ids[name] = session_id(self.folder, name)
        if found:
            self._keyed = in_order([*self._keyed, *found])
            self.sessions = [self._ids[name] for name in dict.fromkeys(part.session for part in self._parts)]
            self.trace_id = self.sessions[0]
        added = [part for _, part in in_order(found)]
        return self._of(added)

    def _of(self, parts: list[Part]) -> LazyTrace:
        """A lazy trace of ``parts`` (of this dataset, in order) alone."""
        other = object.__new__(LazyTrace)
        other.folder, other.session, other.strict = self.folder, self.session, self.strict
        keys = {(part.session, part.number): key for key, part in self._keyed}
        other._keyed = [(keys[part.session, part.number], part) for part in parts]  # in the order given
        other._ids = dict(self._ids)
        other.sessions = [self._ids[name] for name in dict.fromkeys(part.session for part in parts)] or [self.trace_id]
        other.trace_id = other.sessions[0]
        return other

    def table(
        self, name: str, columns: Sequence[str] | None = None, run_ids: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """Table ``name`` (``events``, ``llm_calls``, ``tool_calls``, ``runs``, ``context_logs``,
        ``snapshots``) as :meth:`load`'s, its ``columns`` only (default: all), the rows of ``run_ids``
        only (default: all; not for the context tables, which have no run). Given ``columns`` or
        ``run_ids``, a category column's categories are the values of the rows read alone."""
        return self._reading(lambda parts: read_table(parts, name, columns, run_ids, where="trace.table"))

    def _reading(self, read: Callable[[list[Part]], T]) -> T:
        """``read`` of the parts: a part one file of which turns out unreadable (its pages garbled, found
        when read) is left out from then on, with a warning naming the file, and the rest read again
        (``strict``: the ValueError naming it raised)."""
        while True:
            parts = self._parts
            try:
                return read(parts)
            except UnreadableFile as error:
                kept = without_unreadable(parts, error, self.strict)
                self._keyed = [(key, part) for key, part in self._keyed if part in kept]

    def events_df(self, include_chunks: bool = True) -> pd.DataFrame:
        return self._reading(lambda parts: read_table(parts, "events", chunks=include_chunks))

    def llm_calls_df(self) -> pd.DataFrame:
        return self._reading(lambda parts: read_table(parts, "llm_calls"))

    def tool_calls_df(self) -> pd.DataFrame:
        return self._reading(lambda parts: read_table(parts, "tool_calls"))

    def runs_df(self) -> pd.DataFrame:
        return self._reading(lambda parts: read_table(parts, "runs"))

    def context_tables(self) -> dict[str, pd.DataFrame]:
        tables = self._reading(read_all)
        return {name: frame for name, frame in tables.items() if name in CONTEXT_TABLES}

    def load(self) -> LoadedTrace:
        """Every table read into memory: the :class:`LoadedTrace` ``load_parquet(folder)`` gives."""
        return LoadedTrace(self._reading(read_all), self.trace_id, self.sessions)

    def context_df(self, run_id: str | None = None, seq: int | None = None, agent: str | None = None) -> pd.DataFrame:
        if run_id is None:
            return self.load().context_df(None, seq, agent)
        return self.run(run_id).context_df(run_id, seq, agent)

    def source_folder(self) -> Path:
        return self.folder

    def follower(self) -> PartFollower:
        """The parts committed to its folder since, each read once
        (:class:`~nbagent.trace.explore.PartFollower`: its files read, call it off the event loop)."""
        return PartFollower(self)

    def reading_code(self, name: str) -> tuple[str, str]:
        """The dataset read again lazily, and the tool calls' columns the explorer's filters read only."""
        session = f", {self.session!r}" if self.session is not None else ""
        opening = f"import nbagent\n{name} = nbagent.load_parquet({str(self.folder)!r}{session}, lazy=True)\n"
        return opening, f'{name}.table("tool_calls", {list(TOOL_USE_COLUMNS)!r})'

    def run(self, run_id: str) -> LoadedTrace:
        """Run ``run_id``'s rows alone, read from the dataset: a :class:`LoadedTrace` whose replay,
        timeline, context and comparison of that run are those in the whole dataset (what else it
        holds for them: :func:`nbagent.trace.lazy.read_run`)."""
        run = str(check.string("trace.run", "run_id", run_id))
        tables = read_run(self._parts, run)
        if tables is None:
            wrong = check.wrong_value("trace.run", "run_id", f"a run of the dataset {str(self.folder)!r}", run_id)
            raise NoSuchRun(str(wrong))
        return LoadedTrace(tables, self.trace_id, self.sessions)

    def last_run(self, started: bool = False) -> str:
        """As :meth:`TraceFrames.last_run`, reading the ``runs`` table's ids and start times only."""
        runs = self._reading(lambda parts: read_table(parts, "runs", ["run_id", "started_at"]))
        if not len(runs):
            raise NoSuchRun(f"the dataset {str(self.folder)!r} holds no run")
        if started:
            runs = runs.sort_values("started_at", kind="stable")
        return str(runs["run_id"].iloc[-1])

    def __repr__(self) -> str:
        sessions = f", {len(self.sessions)} sessions" if len(self.sessions) > 1 else ""
        return f"LazyTrace({str(self.folder)!r}, {len(self._parts)} parts{sessions})"


@overload
def load_parquet(
    folder: str | Path, session: str | None = None, *, lazy: Literal[False] = False, strict: bool = False
) -> LoadedTrace: ...


@overload
def load_parquet(
    folder: str | Path, session: str | None = None, *, lazy: Literal[True], strict: bool = False
) -> LazyTrace: ...


@overload
def load_parquet(
    folder: str | Path, session: str | None = None, *, lazy: bool, strict: bool = False
) -> LoadedTrace | LazyTrace: ...


def load_parquet(
    folder: str | Path, session: str | None = None, *, lazy: bool = False, strict: bool = False
) -> LoadedTrace | LazyTrace:
    """Read a dataset written by ``trace.to_parquet`` (``folder/<table>/session=<id>/part-<n>.parquet``)
    back into DataFrames: every session of it, or ``session`` only, with the dtypes of
    :data:`~nbagent.trace.COLUMNS` (a trace's id is its rows' ``trace_id``; ``sessions`` lists them).
    A folder of the earlier layout (``folder/<table>.parquet``) loads too, and so does a file written
    before the context tables or a column existed (no context, the column null). Needs pyarrow
    (``pip install 'nbagent-loop[parquet]'``).

    ``lazy=True`` reads nothing but the files' metadata yet: a :class:`~nbagent.trace.LazyTrace`
    whose frames are read when asked for, and a run's rows alone when it is replayed, compared or
    explored (``nbagent.explore(folder)`` explores a dataset this way).

    A part one file of which is no whole Parquet file (empty, truncated: a copy cut short, a disk that
    filled up) is skipped with a warning naming the file, and the rest of the dataset loads;
    ``strict=True`` raises a ValueError naming it instead. A file whose pages are garbled past a whole
    footer is found when read: its part is then skipped the same way (a lazy trace leaves it out from
    that read on; ``strict=True``: the ValueError naming it); a run of it opened alone says so."""
    check.boolean(_LOAD, "lazy", lazy)
    check.boolean(_LOAD, "strict", strict)
    if lazy:
        return LazyTrace(folder, session, strict=strict)
    frames, sessions = read_parquet(folder, session, strict)
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


class PartFollower(Follower):
    """The parts committed to a lazily read dataset since it was last asked (its files read: call
    :meth:`changes` off the event loop; one call at a time). :meth:`changes` takes the new parts into the
    trace (:meth:`~nbagent.trace.LazyTrace.refresh`: no part is read twice) and gives their runs; when a
    new part goes before parts already given (a session that started earlier), ``None``."""

    reads_files = True

    def __init__(self, trace: LazyTrace) -> None:
        self.trace = trace
        self._lock = threading.Lock()

    def state(self) -> tuple[object, ...]:
        """The modification times of the folder (a pending folder removed), of ``runs/`` (a session
        added) and of each ``runs/session=*`` (a part added): what changes when a part is committed."""
        try:
            runs = self.trace.folder / "runs"
            sessions = sorted((entry.name, entry.stat().st_mtime_ns) for entry in os.scandir(runs) if entry.is_dir())
            return self.trace.folder.stat().st_mtime_ns, runs.stat().st_mtime_ns, *sessions
        except OSError:  # not there (yet, or any more)
            return ()

    def changes(self, also: Collection[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame] | None:
        with self._lock:
            known = self.trace.parts
            new = self.trace.refresh()
            if self.trace.parts[: len(known)] != known:
                return None
            return new.runs_df(), tool_uses(new)
