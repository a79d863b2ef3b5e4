"""The row store of a trace: the rows its recorders append, and the context snapshots.

A :class:`RowStore` holds plain data only (no recorder, no trace, no source), so the recorders can
hold it strongly without making a reference cycle. Its recorders append rows to :attr:`RowStore.rows`
(the layouts of :mod:`nbagent.trace.rows`) and snapshots with :meth:`RowStore.add_snapshot` (or, on
their hot path, by appending to :attr:`RowStore.snapshots` and :attr:`RowStore.logs` in step, as it
does); nothing else changes them but :meth:`RowStore.name_chunks` and :meth:`RowStore.clear`. The
trace reads them.
"""

from __future__ import annotations

from ..messages import LLMMessage
from ..records import LLMCall, MoveName, RunFinished, RunStarted, ToolExecution
from .rows import Row, SnapshotRow, named_chunk


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
    )

    def __init__(self) -> None:
        self.rows: list[Row] = []
        """One row per item. Recorders only append to it; :meth:`clear` empties it in place."""
        self.snapshots: list[SnapshotRow] = []
        """One row per context snapshot, its log at the same position in :attr:`logs` (appended in step)."""
        self.logs: list[list[LLMMessage]] = []
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

    def add_snapshot(
        self, agent: str, length: int, recorder: int, run_id: str | None, move: MoveName | None, log: list[LLMMessage]
    ) -> None:
        """Snapshot ``agent``'s context, ``log[:length]``, before the next row (see :data:`rows.SnapshotRow`)."""
        self.snapshots.append((len(self.rows), agent, length, recorder, run_id, move))
        self.logs.append(log)

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
        """The ids of the runs started and not yet finished."""
        running: set[str] = set()
        for row in self.rows:
            if type(row) is RunStarted:
                running.add(row.run_id)
            elif type(row) is RunFinished:
                running.discard(row.run_id)
        return running

    def drop_runs(self, run_ids: set[str]) -> None:
        """Forget the rows of the finished runs ``run_ids``, keeping every other run's rows whole, and
        every snapshot and log (a run in progress may share its context's log with them)."""
        self.name_chunks()  # deferred chunk ids point at row positions, which this shifts
        rows = self.rows
        rows[:] = [row for row in rows if _run_of(row) not in run_ids]

    def clear(self) -> None:
        """Forget every row and snapshot but what a run in progress still needs to be recorded whole
        from here on: its ``RunStarted``, its last move and its LLM and tool calls not ended yet."""
        rows = self.rows
        # Per run in progress: its start, its last move's row, its calls not ended.
        running: dict[str, tuple[RunStarted, list[Row], list[Row]]] = {}
        for row in rows:
            if type(row) is tuple:
                if len(row) == 4 and row[0] in running:  # a move
                    running[row[0]][1][:] = [row]
            elif type(row) is RunStarted:
                running[row.run_id] = (row, [], [])
            elif type(row) is RunFinished:
                running.pop(row.run_id, None)
            elif (type(row) is LLMCall or type(row) is ToolExecution) and row.duration_s is None:
                if row.run_id in running:
                    running[row.run_id][2].append(row)
        if running:
            kept = {id(row) for started, move, calls in running.values() for row in (started, *move, *calls)}
            rows[:] = [row for row in rows if id(row) in kept]  # in place: the recorders append to this list
        else:  # no run in progress (the common case): nothing is kept
            rows.clear()
        self._unnamed.clear()
        self._unnamed_calls.clear()
        self.snapshots.clear()
        self.logs.clear()


def _run_of(row: Row) -> str | None:
    """The run a row belongs to (every layout starts with it; a record holds it)."""
    return row[0] if isinstance(row, tuple) else row.run_id
