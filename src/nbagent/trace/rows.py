"""The rows a trace keeps, one per recorded item: their layouts, and the one place that tells them apart.

A record (:class:`RunStarted`, :class:`LLMCall`, :class:`ToolExecution`, :class:`RunFinished`) is its
own row: it holds its run id and its ``perf_counter`` time (``LLMCall`` and ``ToolExecution`` are
completed in place after they are recorded). Every other item is a plain tuple in one of three
layouts, each starting with the run id and the ``perf_counter`` time it was recorded:

* :data:`EventRow` ``(run_id, perf, event)``: an event, a message or a ``Response``;
* :data:`MoveRow` ``(run_id, perf, name, iteration)``: a :class:`Move`;
* :data:`ChunkRow` ``(run_id, perf, content, chunk_id, message_id)``: a streamed chunk (its LLM call's run).

Plain tuples rather than NamedTuples or slotted objects: the garbage collector untracks a tuple of
atomic values (text, numbers, ``None``) at its first collection, so a trace keeping thousands of runs
gives full collections nothing to scan for its move and chunk rows, but it never untracks an
instance of a tuple subclass; and chunk rows are built in bulk at C speed (``zip``), 0.04 us a chunk,
where a NamedTuple costs 0.13 us (measured, CPython 3.11). The layouts have different lengths (3, 4
and 5), and the length is what tells them apart: it is read here (:func:`split`, :func:`kind_of`)
and in ``RowStore.clear``, nowhere else, and mypy checks every unpacking of a layout against its type.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import TypeVar

from ..messages import BaseAgentEvent, BaseChatMessage, ModelClientStreamingChunkEvent, Response
from ..records import Intervention, LLMCall, Move, MoveName, RunFinished, RunStarted, ToolExecution

Event = BaseAgentEvent | BaseChatMessage | Response
"""An item of a run that is neither a record nor a streamed chunk."""
Record = RunStarted | LLMCall | ToolExecution | RunFinished | Intervention
"""A record kept as its own row."""

EventRow = tuple[str | None, float, Event]
"""``(run_id, perf, event)``: the run in progress when the event was recorded (``None``: none)."""
MoveRow = tuple[str, float, MoveName, int | None]
"""``(run_id, perf, name, iteration)``: a :class:`Move`, rebuilt by :func:`as_move`."""
ChunkRow = tuple[str, float, str, str | None, str]
"""``(run_id, perf, content, chunk_id, message_id)``: a streamed chunk. ``chunk_id`` is ``None`` until
the trace draws the ids of chunks no event was built for (``LLMCall.stream_ids``)."""

Row = Record | EventRow | MoveRow | ChunkRow

SnapshotRow = tuple[int, str, int, int, str | None, MoveName | None]
"""``(row, agent, length, recorder, run_id, move)``: the context of ``agent`` when row ``row`` was about to
be recorded was the first ``length`` messages of a log (kept apart, in ``RowStore.logs``: a list would
keep the tuple tracked); the recorder is named by its index in the trace's recorders; ``run_id`` and
``move`` are the run and the move in force then (Nones: outside a run), which added the messages
that are new in this snapshot."""
R = TypeVar("R", RunStarted, LLMCall, ToolExecution, RunFinished)

CHUNK = ModelClientStreamingChunkEvent  # the kind of a chunk row (see kind_of)


def kind_of(row: Row) -> type:
    """The type of the item ``row`` stands for: ``Move`` for a move row, ``ModelClientStreamingChunkEvent``
    for a chunk row, else the type of the record or event."""
    if isinstance(row, tuple):
        if len(row) == 5:
            return CHUNK
        if len(row) == 4:
            return Move
        return type(row[2])
    return type(row)


def run_of(row: Row) -> str | None:
    """The run the item of ``row`` belongs to."""
    return row[0] if isinstance(row, tuple) else row.run_id


def perf_of(row: Row) -> float:
    """The ``perf_counter`` time of ``row``: when it was recorded, a record's own start (or end)."""
    if isinstance(row, tuple):
        return row[1]
    return row.end_perf if isinstance(row, RunFinished) else row.start_perf


def as_move(row: MoveRow) -> Move:
    """The :class:`Move` a move row stands for (equal to the one recorded)."""
    run_id, _, name, iteration = row
    return Move(run_id, name, iteration)


def as_chunk(row: ChunkRow, source: str, created_at: datetime) -> ModelClientStreamingChunkEvent:
    """The chunk event a chunk row stands for (its id drawn: see :meth:`RowStore.name_chunks`)."""
    _, _, content, chunk_id, message_id = row
    return CHUNK.model_construct(
        id=chunk_id, source=source, content=content, full_message_id=message_id, created_at=created_at
    )


def named_chunk(row: Row, chunk_id: str) -> ChunkRow:
    """The chunk row ``row`` with its id drawn."""
    assert isinstance(row, tuple) and len(row) == 5, row
    run_id, perf, content, _, message_id = row
    return (run_id, perf, content, chunk_id, message_id)


@dataclass(slots=True)
class Split:
    """Rows told apart by layout, in one pass (:func:`split`): the run and time of every row, and each
    layout's rows with their positions (``chunks[i]`` is row ``chunk_at[i]``; the same for the others)."""

    runs: list[str | None] = field(default_factory=list)
    perfs: list[float] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    record_at: list[int] = field(default_factory=list)
    events: list[EventRow] = field(default_factory=list)
    event_at: list[int] = field(default_factory=list)
    moves: list[MoveRow] = field(default_factory=list)
    move_at: list[int] = field(default_factory=list)
    chunks: list[ChunkRow] = field(default_factory=list)
    chunk_at: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.runs)


def split(rows: Iterable[Row]) -> Split:
    """Every row's run and time, and the rows of each layout with their positions."""
    out = Split()
    run, perf = out.runs.append, out.perfs.append
    record, record_at = out.records.append, out.record_at.append
    event, event_at = out.events.append, out.event_at.append
    move, move_at = out.moves.append, out.move_at.append
    chunk, chunk_at = out.chunks.append, out.chunk_at.append
    for index, row in enumerate(rows):
        if isinstance(row, tuple):
            run(row[0])
            perf(row[1])
            if len(row) == 5:
                chunk(row)
                chunk_at(index)
            elif len(row) == 4:
                move(row)
                move_at(index)
            else:
                event(row)
                event_at(index)
        else:
            run(row.run_id)
            perf(row.end_perf if isinstance(row, RunFinished) else row.start_perf)
            record(row)
            record_at(index)
    return out


def records_of(rows: Iterable[Row], kind: type[R]) -> list[R]:
    """The records of type ``kind``, in order."""
    return [row for row in rows if isinstance(row, kind)]
