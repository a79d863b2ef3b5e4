"""The row store of a trace: the rows its recorders append, and the context snapshots.

A :class:`RowStore` holds plain data only (no recorder, no trace, no source), so the recorders can
hold it strongly without making a reference cycle. Its recorders append rows to :attr:`RowStore.rows`
(the layouts of :mod:`nbagent.trace.rows`) and snapshots with :meth:`RowStore.add_snapshot` (or, on
their hot path, by appending to :attr:`RowStore.snapshots` and :attr:`RowStore.logs` in step, as it
does); nothing else changes them but :meth:`RowStore.name_chunks` and :meth:`RowStore.clear`. The
trace reads them.
"""

from __future__ import annotations

from array import array
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import compress, islice, repeat
from operator import is_
from typing import Any, overload

from ..messages import LLMMessage
from ..records import LLMCall, MoveName, RunFinished, RunStarted
from .packed import PackedRows, RunIds, Table, coded
from .rows import Row, SnapshotRow, named_chunk


class SnapshotRows(Sequence[SnapshotRow]):
    """The snapshot rows of a store, kept as columns: each row's numbers in arrays of integers of the
    fewest bytes that hold them (its row in 4 bytes), its agent and move as codes into a table of the names
    (:class:`~nbagent.trace.packed.Table`), its run as a code into :attr:`run_ids` (16 bytes a run, shared
    with the store's packed rows): about 9 bytes a snapshot where a tuple of six, with its two integers past the small
    ones Python caches, cost 150. Reads like
    the list of tuples it stands for: ``len``, indexing (a tuple), iteration, ``append`` of a tuple,
    ``clear`` and ``[:] =``.

    ``append`` is a list's (the recorders append at most moves): the rows wait there and go into the
    columns in bulk, when read or when :data:`SETTLE_FROM` of them wait (:meth:`settle`)."""

    __slots__ = (
        "_rows", "_agents", "_sizes", "_recorders", "_runs", "run_ids", "_moves", "_names", "_waiting", "append",
    )  # fmt: skip

    def __init__(self, run_ids: RunIds | None = None) -> None:
        self._rows = array("I")
        self._agents = array("B")
        self._sizes = array("B")
        self._recorders = array("B")
        self._runs = array("B")  # codes into ``run_ids``
        self.run_ids = RunIds() if run_ids is None else run_ids
        """The runs' ids (the store's: replaced by it when every row is)."""
        self._moves = array("B")
        self._names = Table()  # the agents' and moves' names (and None), coded
        self._waiting: list[SnapshotRow] = []
        self.append: Callable[[SnapshotRow], None] = self._waiting.append
        """Add a snapshot row at the end."""

    def settle(self, at_least: int = 1) -> bool:
        """Move the waiting rows into the columns, if at least ``at_least`` wait; whether any did."""
        waiting = self._waiting
        if len(waiting) < at_least or not waiting:
            return False
        rows, agents, sizes, recorders, runs, moves = zip(*waiting)
        names, run_ids = self._names, self.run_ids
        self._rows.extend(rows)
        agent_codes, move_codes = list(map(names.__getitem__, agents)), list(map(names.__getitem__, moves))
        self._agents = coded(agent_codes, len(names), self._agents)
        self._sizes = coded(sizes, max(sizes) + 1, self._sizes)
        self._recorders = coded(recorders, max(recorders) + 1, self._recorders)
        codes = run_ids.adding(runs)
        self._runs = coded(map(codes.__getitem__, runs), len(run_ids), self._runs)
        self._moves = coded(move_codes, len(names), self._moves)
        waiting.clear()
        return True

    def __len__(self) -> int:
        return len(self._rows) + len(self._waiting)

    @overload
    def __getitem__(self, index: int) -> SnapshotRow: ...

    @overload
    def __getitem__(self, index: slice) -> list[SnapshotRow]: ...

    def __getitem__(self, index: int | slice) -> SnapshotRow | list[SnapshotRow]:
        if isinstance(index, slice):
            return list(self)[index]
        self.settle()
        names = self._names.distinct
        return (
            self._rows[index],
            names[self._agents[index]],
            self._sizes[index],
            self._recorders[index],
            self.run_ids.get(self._runs[index]),
            names[self._moves[index]],
        )

    def __iter__(self) -> Iterator[SnapshotRow]:
        self.settle()
        names = self._names.distinct
        agents, moves = map(names.__getitem__, self._agents), map(names.__getitem__, self._moves)
        runs = map(self.run_ids.get, self._runs)
        return zip(self._rows, agents, self._sizes, self._recorders, runs, moves)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (SnapshotRows, list)):
            return list(self) == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __setitem__(self, index: slice, snapshots: Iterable[SnapshotRow]) -> None:
        """``snapshots[:] = rows``: every row replaced (the only assignment a store makes)."""
        replace(self, index, snapshots, "snapshot rows")

    def clear(self) -> bool:
        """Forget every snapshot row; whether some were settled (their runs' ids kept)."""
        self._waiting.clear()
        if not self._rows:
            return False
        self._rows = array("I")
        self._agents, self._sizes, self._recorders, self._runs, self._moves = (array("B") for _ in range(5))
        return True

    def row_at(self, index: int) -> int:
        """The row snapshot ``index`` was taken before (without building its row)."""
        self.settle()
        return self._rows[index]

    def recorder_at(self, index: int) -> int:
        """The recorder of snapshot ``index`` (an index of the store's, without building its row)."""
        self.settle()
        return self._recorders[index]

    def run_at(self, index: int) -> str | None:
        """The run in force at snapshot ``index``."""
        self.settle()
        return self.run_ids.get(self._runs[index])


class Logs(Sequence[list[LLMMessage]]):
    """Per context snapshot, the message log it is a prefix of: each distinct log (a list, by identity)
    held once, a snapshot's as a code of the fewest bytes (a reference a snapshot was 8). Reads like the
    list it stands for (``len``, indexing, iteration, ``append``, ``clear``, ``[:] =``); ``append`` is
    a list's (the recorders' hot path): the logs wait there and are coded in bulk (:meth:`settle`)."""

    __slots__ = ("_codes", "_distinct", "_index", "_waiting", "append")

    def __init__(self) -> None:
        self._codes = array("B")
        self._distinct: list[list[LLMMessage]] = []
        self._index: dict[int, int] = {}  # id() of a distinct log (held, so its id stays its own) -> its code
        self._waiting: list[list[LLMMessage]] = []
        self.append: Callable[[list[LLMMessage]], None] = self._waiting.append
        """Add a snapshot's log at the end."""

    def settle(self, at_least: int = 1) -> None:
        """Code the logs waiting, if at least ``at_least`` wait."""
        waiting = self._waiting
        if len(waiting) < at_least or not waiting:
            return
        index, distinct = self._index, self._distinct
        for key, log in {id(log): log for log in waiting}.items():
            if key not in index:
                index[key] = len(distinct)
                distinct.append(log)
        self._codes = coded(map(index.__getitem__, map(id, waiting)), len(distinct), self._codes)
        waiting.clear()

    def __len__(self) -> int:
        return len(self._codes) + len(self._waiting)

    @overload
    def __getitem__(self, index: int) -> list[LLMMessage]: ...

    @overload
    def __getitem__(self, index: slice) -> list[list[LLMMessage]]: ...

    def __getitem__(self, index: int | slice) -> list[LLMMessage] | list[list[LLMMessage]]:
        self.settle()
        if isinstance(index, slice):
            return list(map(self._distinct.__getitem__, self._codes[index]))
        return self._distinct[self._codes[index]]

    def __iter__(self) -> Iterator[list[LLMMessage]]:
        self.settle()
        return map(self._distinct.__getitem__, self._codes)

    def __setitem__(self, index: slice, logs: Iterable[list[LLMMessage]]) -> None:
        """``logs[:] = logs``: every log replaced (the only assignment a store makes)."""
        replace(self, index, logs, "logs")

    def clear(self) -> None:
        """Forget every log."""
        self._waiting.clear()
        if self._distinct:  # (a trace cleared at every run settles none)
            self._codes = array("B")
            self._distinct = []
            self._index = {}


def replace(columns: SnapshotRows | Logs, index: slice, values: Iterable[Any], what: str) -> None:
    """``columns[:] = values`` (``what`` they hold, for the error): every value replaced, then settled."""
    if index != slice(None):
        raise IndexError(f"{what} are replaced whole ([:] =) or appended to")
    kept = list(values)  # may read ``columns`` itself
    columns.clear()
    for value in kept:
        columns.append(value)
    columns.settle()


SETTLE_FROM = 256
"""Snapshot rows wait as tuples, at most this many (then a run's end moves them into the columns)."""
PACK_RUNS = 24
"""Once this many finished runs wait in a store's tail, a run's end packs them (:meth:`RowStore.pack`):
appended to the open block, a plain run's rows packed save about 1.5 KB; an append has a cost of its own
whatever its size (a pass per column), which 24 runs share (the `kept` scenario of
bench/bench_instructions.py). A trace cleared at every run (a service's export-then-clear loop, the loop
benchmarks) never has that many and packs nothing."""


class RowStore:
    """The rows of a trace (one per recorded item) and its context snapshots, in recording order."""

    __slots__ = (
        "rows",
        "snapshots",
        "logs",
        "append_row",
        "append_snapshot",
        "append_log",
        "_unnamed",
        "_unnamed_calls",
        "max_runs",
        "epoch",
        "_ended",
        "_by_recorder",
        "_indexed",
        "_spans",
        "_turns",
        "_run_keys",
        "_rows_indexed",
        "_waiting",
        "_blocker",
    )

    def __init__(self) -> None:
        self.rows = PackedRows()
        """One row per item, in order: the finished runs' packed (:meth:`pack`), then the tail the recorders
        append to. Only :meth:`pack`, :meth:`name_chunks`, :meth:`drop_runs` and :meth:`clear` change it
        otherwise, in place."""
        self.snapshots = SnapshotRows(self.rows.run_ids)  # one list of run ids for both
        """One row per context snapshot, its log at the same position in :attr:`logs` (appended in step)."""
        self.logs = Logs()
        """Per snapshot, the message log it is a prefix of (logs are shared between snapshots)."""
        # The lists' appends, bound once for every recorder of the store (each list is only ever
        # changed in place, so they stay its own).
        self.append_row = self.rows.append
        self.append_snapshot = self.snapshots.append
        self.append_log = self.logs.append
        # (first row, first chunk, end chunk) of chunk rows whose ids are not drawn yet, and the LLM
        # call that streamed them in ``_unnamed_calls`` (so that the tuple holds plain values only).
        self._unnamed: list[tuple[int, int, int]] = []
        self._unnamed_calls: list[LLMCall] = []
        self.max_runs: int | None = None
        """Keep the rows of at most this many finished runs (the oldest go): ``Trace(max_runs=)``."""
        self.epoch = 0
        """Counts the times rows were forgotten (:meth:`clear`, :meth:`drop_runs`): what was derived
        from the rows before (a recorder's origins, the redactor's memo) is stale once it changes."""
        self._ended: deque[str] = deque()  # with max_runs: the finished runs kept, oldest first
        # Per recorder key, the positions of its snapshots (built as read: :meth:`snapshots_of`), and the
        # epoch and number of snapshots it was built over.
        self._by_recorder: dict[int, list[int]] = {}
        self._indexed = (0, 0)
        # Per run, the positions of its first and last rows, its turns (the runs naming it their parent)
        # and the recorder whose snapshots it took (built as read: :meth:`rows_of`, :meth:`recorder_of_run`).
        self._spans: dict[str, list[int]] = {}
        self._turns: dict[str, list[str]] = {}
        self._run_keys: dict[str, int] = {}
        self._rows_indexed = (0, 0)
        self._waiting = 0  # runs ended since the last pack, counted to pack once PACK_RUNS wait
        self._blocker: str | None = None  # the run in progress the last pack stopped at

    def add_snapshot(
        self, agent: str, length: int, recorder: int, run_id: str | None, move: MoveName | None, log: list[LLMMessage]
    ) -> None:
        """Snapshot ``agent``'s context, ``log[:length]``, before the next row (see :data:`rows.SnapshotRow`)."""
        self.snapshots.append((len(self.rows), agent, length, recorder, run_id, move))
        self.logs.append(log)

    def snapshots_of(self, recorder: int) -> list[int]:
        """The positions in :attr:`snapshots` of recorder ``recorder``'s snapshots, in order: an index of
        every recorder's, brought up to date with the snapshots taken since it was last read (so that
        the recorders of a store, one per task of a batch, read their own snapshots and no other's)."""
        epoch, done = self._indexed
        index = self._by_recorder
        keys = self._run_keys
        if epoch != self.epoch:  # snapshots were forgotten since: index them again
            index.clear()
            keys.clear()
            done = 0
        snapshots = self.snapshots
        for at in range(done, len(snapshots)):
            key, run = snapshots.recorder_at(at), snapshots.run_at(at)
            if run is not None and run not in keys:
                keys[run] = key
            mine = index.get(key)
            if mine is None:
                index[key] = [at]
            else:
                mine.append(at)
        self._indexed = (self.epoch, len(snapshots))
        return index.get(recorder, [])

    def _index_rows(self) -> None:
        """Bring the per-run index of the rows up to date (forgotten rows since: index them again)."""
        epoch, done = self._rows_indexed
        spans, turns = self._spans, self._turns
        if epoch != self.epoch:
            spans.clear()
            turns.clear()
            done = 0
        for at, run in enumerate(self.rows.runs_from(done), done):
            if run is None:
                continue
            span = spans.get(run)
            if span is None:
                spans[run] = [at, at]
            else:
                span[1] = at
        for _, started in self.rows.records_from(done, RunStarted):  # a run's first row
            if started.parent_run_id is not None:
                turns.setdefault(started.parent_run_id, []).append(started.run_id)
        self._rows_indexed = (self.epoch, len(self.rows))

    def rows_of(self, run_id: str) -> list[int]:
        """The positions in :attr:`rows` of run ``run_id``'s rows, in order: found between its first and
        last rows (an index of every run's, brought up to date as read), not by a pass over every row."""
        self._index_rows()
        span = self._spans.get(run_id)
        if span is None:
            return []
        first, last = span
        runs = islice(self.rows.runs_from(first), last - first + 1)  # no row rebuilt to read its run
        return [at for at, run in zip(range(first, last + 1), runs) if run == run_id]

    def turns_of(self, run_id: str) -> list[str]:
        """The runs naming run ``run_id`` their parent (a team run's turns), in the order they started."""
        self._index_rows()
        return list(self._turns.get(run_id, ()))

    def recorder_of_run(self, run_id: str) -> int | None:
        """The recorder whose snapshots run ``run_id`` took (``None``: it took none)."""
        self.snapshots_of(-1)  # the snapshot index brought up to date
        return self._run_keys.get(run_id)

    def defer_chunk_ids(self, first_row: int, call: LLMCall, start: int, end: int) -> None:
        """Chunks ``start:end`` of ``call`` have rows from ``first_row`` on with no id yet: draw them
        when the rows are first read (:meth:`name_chunks`), not while the run streams."""
        self._unnamed.append((first_row, start, end))
        self._unnamed_calls.append(call)

    def name_chunks(self) -> None:
        """Give every chunk row its id (``LLMCall.stream_ids``: kept, so two traces of a run agree)."""
        rows = self.rows
        for (first, start, end), call in zip(self._unnamed, self._unnamed_calls):
            for index, chunk_id in enumerate(call.stream_ids()[start:end], first):
                rows[index] = named_chunk(rows[index], chunk_id)
        self._unnamed.clear()
        self._unnamed_calls.clear()

    def in_progress(self) -> set[str]:
        """The ids of the runs started and not yet finished (their rows are all in the tail)."""
        return set(self._running(self.rows.tail)[0])

    @staticmethod
    def _running(rows: list[Row]) -> tuple[list[str], list[int]]:
        """The runs of ``rows`` started and not finished in them, in the order they started, and the
        positions of their ``RunStarted``."""
        kinds = list(map(type, rows))
        started = compress(rows, map(is_, kinds, repeat(RunStarted)))
        at = compress(range(len(rows)), map(is_, kinds, repeat(RunStarted)))
        ended = {row.run_id for row in compress(rows, map(is_, kinds, repeat(RunFinished)))}  # type: ignore[union-attr]
        running = [(row.run_id, where) for row, where in zip(started, at) if row.run_id not in ended]  # type: ignore[union-attr]
        return [run for run, _ in running], [where for _, where in running]

    def pack(self, at_least: int = 1) -> None:
        """Pack the rows of the finished runs at the tail's front (up to the first row of a run in
        progress: a run's rows are all after its start), if they hold at least ``at_least`` finished
        runs (any row, for 1): they are not changed any more (every chunk's id drawn first)."""
        tail = self.rows.tail
        running, starts = self._running(tail)
        end = starts[0] if starts else len(tail)
        self._waiting = 0
        self._blocker = running[0] if running else None
        if end and (at_least <= 1 or list(map(type, tail[:end])).count(RunFinished) >= at_least):
            self.name_chunks()
            self.rows.pack(end)
            self.snapshots.settle()  # their snapshot rows into the columns too (their runs' ids shared)
            self.logs.settle()
            self.rows.run_ids.settled()

    def run_ended(self, run_id: str) -> None:
        """A run ended (its ``RunFinished`` is the last row): once :data:`PACK_RUNS` finished runs wait,
        their rows are packed (not while the run in progress the last pack stopped at goes on: nothing
        after its start can be); with :attr:`max_runs`, forget the oldest finished runs once a quarter
        more than that are kept (so the cost is paid now and then); the snapshot rows waiting go into
        their columns once :data:`SETTLE_FROM` wait."""
        if self.snapshots.settle(SETTLE_FROM):  # (packing held up: their runs' rows packed later add their ids)
            self.logs.settle()  # appended in step with the snapshot rows
            self.rows.run_ids.settled()
        if run_id == self._blocker:
            self._blocker = None
        waiting = self._waiting = self._waiting + 1
        if waiting >= PACK_RUNS and self._blocker is None:
            self.pack(PACK_RUNS)
        if self.max_runs is None:
            return
        ended = self._ended
        ended.append(run_id)
        if len(ended) > self.max_runs + max(1, self.max_runs // 4):
            self.drop_runs({ended.popleft() for _ in range(len(ended) - self.max_runs)})

    def _new_run_ids(self) -> None:
        """A new list of run ids for the packed rows and the snapshot rows (every row is replaced)."""
        self.rows.run_ids = self.snapshots.run_ids = RunIds()

    def drop_runs(self, run_ids: set[str]) -> None:
        """Forget the rows of the finished runs ``run_ids`` and the context snapshots taken before
        their rows, keeping every other run's rows and snapshots whole (the snapshots' rows moved to
        where their rows are now; a log still shared with a kept snapshot stays)."""
        self.name_chunks()  # deferred chunk ids point at row positions, which this shifts
        rows = self.rows
        kept: list[Row] = []
        before = [0] * (len(rows) + 1)  # per old position: how many rows are kept before it
        dropped = [False] * (len(rows) + 1)
        for index, row in enumerate(rows):
            before[index] = len(kept)
            if run_of(row) in run_ids:
                dropped[index] = True
            else:
                kept.append(row)
        before[len(rows)] = len(kept)
        rows[:] = kept  # in place: the recorders append to this list
        snapshots: list[SnapshotRow] = []
        logs: list[list[LLMMessage]] = []
        for snapshot, log in zip(self.snapshots, self.logs):
            if not dropped[snapshot[0]]:
                snapshots.append((before[snapshot[0]], *snapshot[1:]))
                logs.append(log)
        self._new_run_ids()
        self.snapshots[:] = snapshots
        self.logs[:] = logs
        self.epoch += 1
        self.pack(PACK_RUNS)

    def clear(self) -> bool:
        """Forget every row and snapshot, but those of the runs in progress: they keep theirs whole (as
        :meth:`drop_runs` keeps the runs it does not drop), so that a run going on across a clear is
        recorded, and exported once it ends, whole. Whether every row went (no run in progress)."""
        rows, tail = self.rows, self.rows.tail  # a run in progress has its rows in the tail
        started = {row.run_id for row in tail if type(row) is RunStarted}
        running = started - {row.run_id for row in tail if type(row) is RunFinished}
        if running:
            self.drop_runs({run for run in map(run_of, rows) if run is not None and run not in running})
            self._ended.clear()
            return False
        packed = rows.packed
        if packed:
            rows.clear()
        else:
            tail.clear()  # no run in progress (the common case): nothing is kept
        self._unnamed.clear()
        self._unnamed_calls.clear()
        if self.snapshots.clear() or packed:  # run ids were kept
            self._new_run_ids()
        self.logs.clear()
        self._ended.clear()
        self._waiting = 0
        self._blocker = None
        self.epoch += 1
        return True


def run_of(row: Row) -> str | None:
    """The run a row belongs to (every layout starts with it; a record holds it)."""
    return row[0] if isinstance(row, tuple) else row.run_id
