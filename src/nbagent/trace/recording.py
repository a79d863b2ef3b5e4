"""Recording: what a trace keeps of every run a source makes, as the run goes.

An :class:`AgentRecorder` records one source's runs (anything that speaks
:class:`nbagent.records.RunSource`: an ``AssistantAgent``, or another library's agent) into a
:class:`~nbagent.trace.store.RowStore`, one row per item in the layouts of :mod:`nbagent.trace.rows`:
a record is kept as itself, a move and a streamed chunk as a tuple of plain values, an event as a
tuple of its run, its time and itself; chunk rows are appended in bulk from the LLM call's stream.
So a trace keeping thousands of runs holds no object of its own per row for the cyclic garbage
collector to track but one per event.

The model context is kept as append-only logs of its messages: an nbagent context's own message
list (``message_log``: only ever appended to; ``clear`` and ``load_state`` replace it), or for any
other context a copy the recorder keeps, extended while the context was only appended to (verified)
and started anew when it changed any other way (cleared, loaded, rewritten). At a run's start, and at
each move or run end where the context changed, a snapshot is taken as a prefix of a log (log,
length), so a long-lived agent's trace holds each message once, not once per snapshot; the snapshots
give the context at any point, and which run and STEP added each message. An LLM call's request is
kept the same way when its messages are a few messages (the system message) and then a slice of the
log (:class:`SentMessages`).
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, islice, repeat
from typing import Any, Generic, TypeVar, overload

from ..context import OWN_CONTEXTS
from ..messages import LLMMessage
from ..models.base import ModelRequest
from ..records import (
    MOVES,
    Intervention,
    LLMCall,
    Move,
    MoveName,
    RunFinished,
    RunItem,
    RunSource,
    RunStarted,
    ToolExecution,
)
from ..tools import ToolSchema
from .packed import nest
from .store import RowStore

T = TypeVar("T")
STEPS = {name: info.step for name, info in MOVES.items()}
# Where a message was added: (run id, STEP, move name); Nones: outside a run.
Origin = tuple[str | None, int | None, str | None]
NOWHERE: Origin = (None, None, None)
_perf = time.perf_counter
# Messages a request may hold before the context's view (the agent sends its system message first).
_MAX_HEAD = 4
# A request with fewer messages is kept as its list: sharing the log would cost more than it saves.
_SHARE_FROM = 32


class SentMessages(Sequence[LLMMessage]):
    """The messages of a recorded LLM call: the few sent before the context's view (the system
    message) and a slice of the recorder's message log. Reads like the list it stands for (``len``,
    indexing, slicing to a list, iteration, ``==`` with a list) and holds O(1) references."""

    __slots__ = ("_head", "_log", "_start", "_stop")

    def __init__(self, head: Sequence[LLMMessage], log: list[LLMMessage], start: int, stop: int) -> None:
        self._head = tuple(head)
        self._log = log  # append-only: positions below ``stop`` never change
        self._start = start
        self._stop = stop

    def __len__(self) -> int:
        return len(self._head) + self._stop - self._start

    def parts(self) -> tuple[tuple[LLMMessage, ...], list[LLMMessage], int, int]:
        """What it is made of: ``SentMessages(*parts)`` is an equal one (how a packed trace keeps it)."""
        return self._head, self._log, self._start, self._stop

    @overload
    def __getitem__(self, index: int) -> LLMMessage: ...

    @overload
    def __getitem__(self, index: slice) -> list[LLMMessage]: ...

    def __getitem__(self, index: int | slice) -> LLMMessage | list[LLMMessage]:
        if isinstance(index, slice):
            return self.to_list()[index]
        size = len(self)
        position = index + size if index < 0 else index
        if not 0 <= position < size:
            raise IndexError("list index out of range")
        head = len(self._head)
        return self._head[position] if position < head else self._log[self._start + position - head]

    def __iter__(self) -> Iterator[LLMMessage]:
        return chain(self._head, islice(self._log, self._start, self._stop))

    def to_list(self) -> list[LLMMessage]:
        """The messages as a new list."""
        return [*self._head, *self._log[self._start : self._stop]]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, SentMessages):
            return self.to_list() == other.to_list()
        if isinstance(other, list):
            return self.to_list() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return repr(self.to_list())


nest(SentMessages, SentMessages.parts, SentMessages)  # a packed request keeps its parts as columns


class AgentRecorder(Generic[T]):
    """Records one source's runs into a trace's row store; made by ``Trace.attach`` (and for ``agent.trace``).

    ``trace`` is the trace it records for (held weakly), ``store`` its rows, ``key`` the recorder's
    index among the trace's recorders (how snapshots name it) and ``source`` the source whose runs it
    records (held weakly; ``None``: none). A source runs one task at a time, so the current run is
    known per source, and items of sources running at once in one event loop land in the right run.
    """

    __slots__ = (
        "_trace", "_source", "_context", "_size", "_rows", "_tail", "_append", "_run", "_call", "_flushed",
        "_where_run", "_where", "_plain", "_log", "_mirror", "_head", "_name", "_origins", "_store",
        "_add_snapshot", "_add_log", "_key", "_open", "_released", "_tools",
    )  # fmt: skip

    def __init__(self, trace: T, store: RowStore, key: int, source: RunSource | None) -> None:
        # Weak references to the trace and the source: the source holds its trace, the trace its
        # recorder, so strong ones would make cycles that keep an agent and every item its trace
        # recorded alive until the cyclic garbage collector runs; the items kept meanwhile trigger
        # collections that scan them all, again and again. The store holds plain data only.
        self._trace = weakref.ref(trace)
        self._source = None if source is None else weakref.ref(source)
        self._context = None if source is None else source.model_context
        # The context is one of nbagent's: ``message_log`` holds its messages, is only appended to, and
        # is replaced (not emptied) by clear() and load_state(): the trace can keep it as its log.
        self._plain = source is not None and type(source.model_context) in OWN_CONTEXTS
        self._size = -1  # the context's length at the last checkpoint
        self._store = store
        self._rows = store.rows
        self._tail = store.rows.tail  # the rows' list the recorders append to (changed in place only)
        # The store's appenders, bound once by the store for all its recorders (RowStore.add_snapshot
        # inlined: a snapshot is taken at most moves).
        self._append = store.append_row
        self._add_snapshot = store.append_snapshot
        self._add_log = store.append_log
        # A snapshot names this recorder by its index among the trace's recorders rather than
        # holding it, which would make a cycle.
        self._key = key
        self._run: str | None = None
        self._open = False  # a run of the source is in progress (started, not finished)
        self._released = False  # detached: the context is let go of once no run is in progress
        self._call: LLMCall | None = None  # the last LLM call: its stream goes into rows
        self._flushed = 0  # how many of its chunks have rows
        # The run and name of the move in force (None: outside a run): what adds messages now.
        self._where_run: str | None = None
        self._where: MoveName | None = None
        self._name = "" if source is None else source.name  # the source's name at the current run's start
        # The context's messages at the last checkpoint, in order (an nbagent context's own list); a
        # position is never changed, and a change other than appending starts a new log. Snapshots
        # and requests keep slices of logs.
        self._log: list[LLMMessage] | None = None
        # (log, n, [*the n messages a request had before it, *log]): to compare requests with, since a
        # slice of a request would touch every message (refcounts) at each call.
        self._mirror: tuple[list[LLMMessage], int, list[LLMMessage]] | None = None
        # The messages shared requests sent before the log (the system message), shared by them.
        self._head: tuple[LLMMessage, ...] = ()
        # The tools shared requests sent (equal lists of the same schemas): one list for all of them.
        self._tools: list[ToolSchema] = []
        # (snapshots read, id(log) -> its length read, id(message) -> (message, run_id, step, move)):
        # origins, computed from the snapshots when first asked for (None: not yet).
        self._origins: tuple[int, dict[int, int], dict[int, tuple[Any, ...]], int] | None = None

    @property
    def trace(self) -> T:
        """The trace this recorder records into."""
        trace = self._trace()
        if trace is None:
            raise ReferenceError("the trace of this recorder was deleted")
        return trace

    @property
    def trace_alive(self) -> bool:
        """Whether the trace this recorder records into still exists."""
        return self._trace() is not None

    @property
    def source(self) -> RunSource | None:
        """The source whose runs it records (``None``: none, or deleted)."""
        return None if self._source is None else self._source()

    @property
    def agent(self) -> RunSource | None:
        """The source whose runs it records (``None``: none, or deleted); the same as :attr:`source`."""
        return self.source

    def flush(self) -> None:
        """Rows for the chunks the current LLM call streamed since they were last turned into rows."""
        call = self._call
        if call is not None and len(call.chunks) > self._flushed:
            self._flush_stream()

    def restart(self) -> None:
        """Start afresh after the trace's snapshots were cleared: no context log known, and the
        chunks streamed so far by the current call not to be recorded."""
        if self._call is not None:
            self._flushed = len(self._call.chunks)
        self._log = self._mirror = None
        self._size = -1
        self._origins = None

    def release(self) -> None:
        """Let go of the source's context once detached, unless a run of it is in progress (a run
        keeps its recorders to its end: then, at its end): the trace keeps its messages, not the
        context object."""
        self._released = True
        if not self._open:
            self._context = None

    def record(self, item: RunItem) -> None:
        # ``kind`` is ``type(item)``, so ``kind is X`` means ``item`` is an X; mypy does not narrow
        # through the local, and the ignores below keep this path free of isinstance() or cast().
        call = self._call
        if call is not None and len(call.chunks) > self._flushed:
            self._flush_stream()
        kind = type(item)
        # A record is its own row (it holds its run and its start or end time); a move's or an
        # event's row holds the time it was recorded.
        if kind is LLMCall:
            if item.streaming:  # type: ignore[union-attr]
                self._call = item  # type: ignore[assignment]
                self._flushed = 0
            if len(item.request.messages) >= _SHARE_FROM:  # type: ignore[union-attr]
                self._share_request(item)  # type: ignore[arg-type]
            self._append(item)  # type: ignore[arg-type]
            return
        if kind is ToolExecution or kind is Intervention:
            self._append(item)  # type: ignore[arg-type]
            return
        # A move, the run's start or end, or an event. A context changes at a move, at the events a
        # move yields once it added its messages (MemoryQueryEvent, the tool events, Response), at the
        # run's end or between runs (load_state, on_reset...). nbagent's contexts only append to their
        # list, or replace it: a checkpoint when the list or its length changed; other contexts are
        # compared each time.
        if kind is RunStarted:
            self._run = item.run_id  # type: ignore[union-attr]
            self._name = item.agent  # type: ignore[union-attr]
            self._open = True
        context = self._context
        if context is not None:
            if not self._plain:
                self._checkpoint()
            else:  # inline, as it runs at every move: a snapshot when the list or its length changed
                messages = context.message_log
                if messages is not self._log or len(messages) != self._size:
                    self._log = messages
                    size = self._size = len(messages)
                    at = self._rows.packed + len(self._tail)  # len(self._rows), without a call
                    self._add_snapshot((at, self._name, size, self._key, self._where_run, self._where))
                    self._add_log(messages)
        if kind is Move:
            run = self._where_run = item.run_id  # type: ignore[union-attr]
            name = self._where = item.name  # type: ignore[union-attr]
            self._append((run, _perf(), name, item.iteration))  # type: ignore[union-attr]  # rows.MoveRow
            return
        if kind is RunFinished:
            self._where_run = self._where = None
            self._open = False
            if self._released:  # detached during the run: its end is snapshotted above
                self._context = None
            self._append(item)  # type: ignore[arg-type]
            self._store.run_ended(item.run_id)  # type: ignore[union-attr]  # Trace(max_runs=) forgets the oldest
            return
        if kind is not RunStarted:  # an event: rows.EventRow
            self._append((self._run, _perf(), item))  # type: ignore[arg-type]
            return
        self._append(item)  # type: ignore[arg-type]  # a record: it has its run and time

    def _flush_stream(self) -> None:
        """Rows for the chunks the last LLM call streamed since the last flush, in one go.

        A chunk row is (the LLM call's run, perf_counter time, content, id, full_message_id):
        :data:`rows.ChunkRow`; keeping chunk event objects would hold ~700 bytes a chunk.
        """
        call, rows = self._call, self._rows
        assert call is not None
        start, end = self._flushed, len(call.chunks)
        self._flushed = end
        count = end - start
        if len(call.chunk_ids) >= end:
            ids: Iterable[str | None] = call.chunk_ids[start:end]
        else:  # chunks no event was built for: ids are drawn when the rows are first read
            self._store.defer_chunk_ids(len(rows), call, start, end)
            ids = repeat(None, count)
        rows.extend(
            zip(repeat(call.run_id, count), call.chunk_perf[start:end], call.chunks[start:end], ids,
                repeat(call.message_id, count))
        )  # fmt: skip

    def _checkpoint(self) -> None:
        """Bring the log up to a context other than nbagent's; snapshot it if it changed.

        (An nbagent context's own list is the log, see :meth:`record`: it is only appended to, and
        replaced when the context is cleared or loaded.) The context's messages are copied into a
        log of the recorder's: the context was only appended to if that log is a prefix of it (the
        same objects at the log's first and last positions, and equal lists: C-speed, identical
        objects compare at once), and its new messages are appended; otherwise a new log starts.
        """
        context = self._context
        assert context is not None
        log = self._log
        messages = context.messages
        size = self._size = len(messages)
        if log is not None:
            known = len(log)
            if size >= known and (not known or (messages[0] is log[0] and messages[known - 1] is log[known - 1])):
                if size == known:
                    if messages == log:
                        return  # unchanged
                else:
                    log += messages[known:]
                    if log == messages:
                        self._snapshot(log, size)
                        return
                    del log[known:]
        log = self._log = list(messages)
        self._snapshot(log, size)

    def _snapshot(self, log: list[LLMMessage], size: int) -> None:
        """Snapshot the context as ``log[:size]``, with the run and name of the move in force."""
        self._store.add_snapshot(self._name, size, self._key, self._where_run, self._where, log)

    def _share_request(self, call: LLMCall) -> None:
        """Keep ``call``'s request as a slice of the log when its messages are a few messages (the
        system message) then the log's last ones, verified equal (the same objects at both ends)."""
        request = call.request
        messages = request.messages
        log = self._log
        if log is None or type(messages) is not list:
            return
        total, known = len(messages), len(log)
        if not known or messages[-1] is not log[-1]:
            return
        for head in range(min(total, _MAX_HEAD + 1)):
            start = known - (total - head)
            if start >= 0 and messages[head] is log[start]:
                break
        else:
            return
        if start:  # a tail of the log (a bounded context's view): compare the slices
            if messages[head:] != log[start:]:
                return
        elif head:  # the whole log after the head: compare with [*head, *log] kept up to date
            mirror = self._mirror
            if (
                mirror is None
                or mirror[0] is not log
                or mirror[1] != head
                or any(mirror[2][i] is not messages[i] for i in range(head))
            ):
                mirror = self._mirror = (log, head, messages[:head])
            mirror[2].extend(log[len(mirror[2]) - head :])
            if messages != mirror[2]:
                return
        elif messages != log:
            return
        shared = self._head
        if len(shared) != head or any(shared[i] is not messages[i] for i in range(head)):
            shared = self._head = tuple(messages[:head])
        sent = SentMessages(shared, log, start, known)
        tools = request.tools
        if tools == self._tools:  # the same schemas (compared by identity first): no list per call
            tools = self._tools
        else:
            self._tools = tools
        call.request = ModelRequest(sent, tools, request.tool_choice, request.json_output, request.extra_create_args)

    def origin_of(self, message: LLMMessage, live: bool = False) -> Origin:
        """The run, STEP and move that added ``message`` to the context (Nones: outside a run).

        A message's origin is the move in force before the first snapshot that holds it. One in no
        snapshot was added since the last one (``live``: by the move in force now) or never was.
        """
        store = self._store
        snapshots, logs, epoch = store.snapshots, store.logs, store.epoch
        seen, read, origins, known = self._origins or (0, {}, {}, epoch)
        if known != epoch:  # snapshots were forgotten since: read them again
            seen, read, origins = 0, {}, {}
        mine = store.snapshots_of(self._key)  # this recorder's alone: a batch's store holds every task's
        if seen != len(mine):
            for at in mine[seen:]:
                _, _, size, _, run, move = snapshots[at]
                log = logs[at]
                start = read.get(id(log), 0)
                if size <= start:
                    continue
                origin = NOWHERE if move is None else (run, STEPS[move], move)
                for held in islice(log, start, size):
                    found = origins.get(id(held))
                    if found is None or found[0] is not held:
                        origins[id(held)] = (held, *origin)
                read[id(log)] = size
            self._origins = (len(mine), read, origins, epoch)
        found = origins.get(id(message))
        if found is None or found[0] is not message:
            where = self._where
            return (self._where_run, STEPS[where], where) if live and where is not None else NOWHERE
        return found[1:]
