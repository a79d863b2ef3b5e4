"""The live trace: every item of every run of the sources it records, kept for analysis.

A :class:`Trace` holds a :class:`~nbagent.trace.store.RowStore` that its recorders
(:class:`~nbagent.trace.recording.AgentRecorder`, one per source) append to, and builds the frames
from its rows: ``events_df``, ``llm_calls_df``, ``tool_calls_df``, ``runs_df``, the context at any
point (``context_df``), ``summary`` and a timeline. It records any source that speaks
:class:`nbagent.records.RunSource` (an ``AssistantAgent``, or another library's agent) and knows
nothing else of it.

Redaction happens when rows are built: every string that reaches a DataFrame, and so every export,
goes through the trace's redaction hook first (by default API keys, bearer tokens and
``Authorization`` values are masked, also when a key is split over several streamed chunks).
pandas is imported only when a DataFrame is asked for. Column names and dtypes: :data:`COLUMNS`.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from itertools import islice
from typing import TYPE_CHECKING, Any, Literal

from .. import _check as check
from .._ids import new_id
from ..messages import AssistantMessage, MemoryQueryEvent
from ..records import LLMCall, RunItem, RunSource, RunStarted, ToolExecution
from ..redact import DefaultRedactor, Redactor, keep, mask
from .base import NoSuchRun, TraceFrames
from .context import context_columns, context_rows, context_tables, pick_snapshot, snapshot_context
from .frames import (
    event_columns,
    events_frame,
    llm_calls_columns,
    llm_calls_frame,
    run_agents,
    runs_columns,
    runs_frame,
    tool_calls_columns,
    tool_calls_frame,
)
from .recording import AgentRecorder
from .rows import Row, as_chunk, as_move, records_of, split
from .store import RowStore

if TYPE_CHECKING:
    import pandas as pd

    from .explore import RunFollower
    from .loaded import LoadedTrace
    from .otlp import SpanTables


class Trace(TraceFrames):
    """Every item of every run of the sources it records, with DataFrames, views and exports.

    Each agent has one (``agent.trace``, its ``owner``). To gather several agents' runs in one trace,
    use ``trace.attach(agent)`` / ``trace.detach(agent)`` or ``with trace.recording(a, b): ...``.
    ``redact`` maps every stored string before it reaches a frame or a file (``None``: keep as is;
    the default redactor masks each long text once, not at every frame built). ``max_runs``: keep
    at least the last this many finished runs, at most a quarter more (a ring buffer forgetting the
    oldest runs' rows and context snapshots a quarter at a time: memory stays flat however long the
    session).
    """

    records_runs = True

    def __init__(
        self,
        *,
        owner: RunSource | None = None,
        redact: Redactor | None | Literal["default"] = "default",
        trace_id: str | None = None,
        max_runs: int | None = None,
    ) -> None:
        check.integer("Trace", "max_runs", max_runs, minimum=1, none=True)
        self.trace_id = trace_id or new_id()
        self._store = RowStore()
        self._store.max_runs = max_runs
        self._memo: _MemoRedactor | None = None
        # Every recorder this trace made, attached or not: a snapshot names its recorder by index.
        self._recorders: list[AgentRecorder[Trace]] = []
        self._redact = redact
        # The secrets of every source this trace recorded: still masked once a source is detached or
        # deleted (the default redactor reads them).
        self._secrets: set[str] = set()
        self._anchor = (time.time_ns(), time.perf_counter())
        self._own = self._new_recorder(owner)
        # The recorder protocol: ``record(item)`` records one item of the owner's runs. Bound once
        # here rather than forwarded, since it runs for every streamed chunk.
        self.record: Callable[[RunItem], None] = self._own.record
        self._attached: dict[int, AgentRecorder[Trace]] = {}

    def _new_recorder(self, source: RunSource | None) -> AgentRecorder[Trace]:
        if source is not None:
            self._secrets.update(source.secrets)
        recorder = AgentRecorder(self, self._store, len(self._recorders), source)
        self._recorders.append(recorder)
        return recorder

    # ------------------------------------------------------------------ recording

    @property
    def owner(self) -> RunSource | None:
        """The source this trace was made for (``agent.trace``'s agent; ``None``: none, or deleted)."""
        return self._own.source

    @property
    def recorder(self) -> AgentRecorder[Trace]:
        """The recorder of the trace's owner (``trace.record`` is its ``record``)."""
        return self._own

    @property
    def store(self) -> RowStore:
        """The rows and context snapshots the recorders keep (:mod:`nbagent.trace.rows` layouts)."""
        return self._store

    def attach(self, source: RunSource) -> AgentRecorder[Trace]:
        """Record ``source``'s runs from its next run on; returns the recorder added to ``source.recorders``."""
        if source is self._own.source:  # the trace records its owner already
            return self._own
        attached = self.recorder_of(source)
        if attached is not None:
            return attached
        recorder = self._attached[id(source)] = self._new_recorder(source)  # (a collected source's goes)
        source.recorders.append(recorder)
        return recorder

    def detach(self, source: RunSource) -> None:
        """Stop recording ``source``'s runs (a run in progress keeps its recorders to its end)."""
        recorder = self.recorder_of(source)
        if recorder is not None and recorder is not self._own:
            del self._attached[id(source)]
            if recorder in source.recorders:
                source.recorders.remove(recorder)
            recorder.release()

    def recording(self, *sources: RunSource) -> _Recording:
        """A context manager that attaches ``sources`` on entry and detaches them on exit."""
        return _Recording(self, sources)

    def recorder_of(self, source: RunSource) -> AgentRecorder[Trace] | None:
        """The recorder that records ``source`` into this trace as its owner or attached (else ``None``)."""
        if self._own.source is source:
            return self._own
        recorder = self._attached.get(id(source))
        # ids are keys: one of a source collected since may be this new source's (never its recorder)
        return recorder if recorder is not None and recorder.source is source else None

    def _rows(self) -> Sequence[Row]:
        """The rows, with those of chunks streamed so far by LLM calls still in progress, and every
        chunk's id drawn."""
        self._own.flush()
        for recorder in self._attached.values():
            recorder.flush()
        self._store.name_chunks()
        return self._store.rows

    def _read_rows(self) -> Sequence[Row]:
        """:meth:`_rows` for a reader that passes over every row more than once (a frame): the packed
        rows rebuilt once, into a list, rather than at each pass."""
        rows = self._store.rows
        return list(self._rows()) if rows.packed else self._rows()

    @property
    def items(self) -> list[RunItem]:
        """The recorded items in order: live records and events (not redacted); moves and chunks rebuilt."""
        rows = self._read_rows()
        parts = split(rows)
        agents = run_agents(rows)
        wall_ns, perf0 = self._anchor
        out: list[RunItem | None] = [None] * len(parts)
        for index, record in zip(parts.record_at, parts.records):
            out[index] = record
        for index, (_, _, event) in zip(parts.event_at, parts.events):
            out[index] = event
        for index, move in zip(parts.move_at, parts.moves):
            out[index] = as_move(move)
        for index, chunk in zip(parts.chunk_at, parts.chunks):
            run, perf = chunk[0], chunk[1]
            created = datetime.fromtimestamp((wall_ns / 1e9) + (perf - perf0), UTC)
            out[index] = as_chunk(chunk, agents.get(run, ""), created)
        return out  # type: ignore[return-value]  # every position is filled

    def __len__(self) -> int:
        return len(self._rows())

    def clear(self) -> None:
        """Forget every recorded item and snapshot (and the chunks streamed so far) of the runs that have
        ended; a run in progress keeps all it recorded, so that it is recorded, and exported by
        ``to_parquet`` once it ends, whole (a service's export-then-clear loses nothing of a run going
        on across it)."""
        if self._store.clear():
            for recorder in self._recorders:
                recorder.restart()

    def redactor(self) -> Redactor:
        """The function every stored string goes through (the default masks keys found now)."""
        if self._redact == "default":
            sources = (recorder.source for recorder in self._recorders)
            fresh = DefaultRedactor(
                {*self._secrets, *(secret for source in sources if source is not None for secret in source.secrets)}
            )
            memo = self._memo
            if memo is None or set(memo.secrets) != set(fresh.secrets) or memo.epoch != self._store.epoch:
                memo = self._memo = _MemoRedactor(fresh.secrets, self._store.epoch)
            return memo
        if self._redact is None:
            return keep
        return self._redact

    # ------------------------------------------------------------------ frames

    def events_df(self, include_chunks: bool = True) -> pd.DataFrame:
        """One row per recorded item, streamed chunks included unless ``include_chunks=False``."""
        red = self.redactor()
        return events_frame(self._read_rows(), self.trace_id, red, self._anchor, include_chunks)

    def llm_calls_df(self) -> pd.DataFrame:
        """One row per model call."""
        red = self.redactor()
        return llm_calls_frame(self._read_rows(), self.trace_id, red)

    def tool_calls_df(self) -> pd.DataFrame:
        """One row per tool call, with parsed arguments and how many calls ran at once."""
        red = self.redactor()
        return tool_calls_frame(self._read_rows(), self.trace_id, red)

    def runs_df(self) -> pd.DataFrame:
        """One row per run: status, times, counts and tokens."""
        red = self.redactor()
        return runs_frame(self._read_rows(), self.trace_id, red)

    def span_tables(self) -> SpanTables:
        """What the OTLP spans are built from, made from the rows with no frame built (the values
        the frames hold: ``spans_of`` gives the same spans either way)."""
        rows = self._read_rows()
        red = self.redactor()
        tables = {
            "runs": runs_columns(rows, self.trace_id, red),
            "llm_calls": llm_calls_columns(rows, self.trace_id, red),
            "tool_calls": tool_calls_columns(rows, self.trace_id, red),
            **context_columns(self._store, self._recorders, red, self.trace_id),
        }
        events = event_columns(rows, red, self._anchor, (MemoryQueryEvent,))
        from .otlp import SpanTables  # the exports load on first use

        return SpanTables(self.trace_id, tables, events)

    # ------------------------------------------------------------------ one run

    reads_by_run = True

    def last_run(self, started: bool = False) -> str:
        """The id of the last run (runs are in the order they started: ``started`` changes nothing)."""
        self._rows()  # (every recorder's rows in)
        last = self._store.rows.last_record(RunStarted)
        if last is None:
            raise NoSuchRun("the trace holds no run")
        return str(last.run_id)

    def follower(self) -> RunFollower:
        """Its rows followed as they are recorded (:class:`~nbagent.trace.explore.RunFollower`)."""
        from .explore import RunFollower  # the explorer's side loads on first use

        return RunFollower(self)

    def run(self, run_id: str) -> LoadedTrace:
        """Run ``run_id``'s rows alone, with what its replay, timeline, context and comparison read (its
        recorder's context snapshots it saw, the one it started from first, and the tool calls of that
        recorder's earlier runs whose results those contexts hold): a :class:`LoadedTrace` whose frames of
        that run equal this trace's. It costs what the run costs (its rows and snapshots are found through
        the store's indexes, kept up to date as read), not what the trace holds."""
        run = str(check.string("trace.run", "run_id", run_id))
        rows = self._rows()
        store = self._store
        positions = store.rows_of(run)
        if not positions or type(rows[positions[0]]) is not RunStarted:
            raise NoSuchRun(str(check.wrong_value("trace.run", "run_id", "a run of this trace", run_id)))
        mine = store.rows.rows_at(positions)
        # a team run's turns (the runs naming it their parent): their rows in ``runs`` (whole, as the
        # whole trace's), so that its replay can say to replay them instead
        members = [row for turn in store.turns_of(run) for row in store.rows.rows_at(store.rows_of(turn))]
        found = RowStore()
        key = store.recorder_of_run(run)
        earlier: set[str] = set()
        if key is not None:
            own = store.snapshots_of(key)
            first, last = positions[0], positions[-1]
            row_at = store.snapshots.row_at
            chosen = [at for at in own if first <= row_at(at) <= last]
            before = [at for at in own if row_at(at) < first]
            chosen = before[-1:] + chosen
            for at in chosen:
                row, agent, size, recorder, where, move = store.snapshots[at]
                found.snapshots.append((bisect.bisect_left(positions, row), agent, size, recorder, where, move))
                found.logs.append(store.logs[at])
            run_at = store.snapshots.run_at
            earlier = {where for at in own if (where := run_at(at)) is not None and where != run}
        calls = _held_calls(found, islice(rows, positions[0]), earlier) if earlier else []
        red = self.redactor()
        frames = {
            "events": events_frame(mine, self.trace_id, red, self._anchor, True),
            "llm_calls": llm_calls_frame(mine, self.trace_id, red),
            "tool_calls": tool_calls_frame(calls + mine, self.trace_id, red),
            "runs": runs_frame(mine + members, self.trace_id, red),
            **context_tables(found, self._recorders, red, self.trace_id),
        }
        from .loaded import LoadedTrace  # loaded traces' side loads on first use

        return LoadedTrace(frames, self.trace_id)

    # ------------------------------------------------------------------ context

    def context_df(self, run_id: str | None = None, seq: int | None = None, agent: str | None = None) -> pd.DataFrame:
        """The model context as it was when item ``seq`` of run ``run_id`` was recorded.

        Without ``seq``: at the end of that run; without ``run_id``: the latest snapshot (of
        ``agent`` if given). The context of each source this trace records (``owner`` or attached) is
        snapshotted at run start, and at each move, event or run end where it changed.
        """
        rows = self._store.rows
        self._rows()  # flushed, chunk ids drawn
        store = self._store
        runs = list(rows.runs_from(0))  # each row's run and each run's agent, no packed row rebuilt
        agents = {started.run_id: started.agent for _, started in rows.records_from(0, RunStarted)}
        snapshots = [(row, name) for row, name, *_ in store.snapshots]
        index = pick_snapshot(runs, agents, snapshots, run_id, seq, agent)
        return snapshot_context(store, index, self._recorders, self.redactor())

    def context_tables(self) -> dict[str, pd.DataFrame]:
        """The context snapshots as two tables: ``context_logs``, each message log once (the context
        frame's columns, per log), and ``snapshots``, each snapshot as a prefix of a log."""
        self._rows()  # the snapshots' rows are positions among every row, chunks included
        return context_tables(self._store, self._recorders, self.redactor(), self.trace_id)

    def request_df(self, run_id: str, call_index: int = 0) -> pd.DataFrame:
        """What LLM call ``call_index`` of run ``run_id`` sent the model: one row per message, system
        messages included (the context frame's columns; run and STEP where this trace saw them added)."""
        rows = self._rows()
        calls = [call for call in records_of(rows, LLMCall) if call.run_id == run_id]
        if not 0 <= call_index < len(calls):
            raise IndexError(f"run {run_id!r} has {len(calls)} LLM calls, no call {call_index}")
        agent = run_agents(rows).get(run_id)
        recorder = next(
            (r for r in self._recorders if agent and (s := r.source) is not None and s.name == agent),  # detached too
            None,
        )
        return context_rows(calls[call_index].request.messages, recorder, self.redactor())

    def live_context_df(self, source: RunSource) -> pd.DataFrame:
        """``source``'s model context now, with the run and STEP this trace saw add each message."""
        recorder = self.recorder_of(source)
        return context_rows(source.model_context.messages, recorder, self.redactor(), live=recorder is not None)

    def __repr__(self) -> str:
        return f"Trace({len(self)} items, {len(run_agents(self._rows()))} runs)"


def _held_calls(snapshots: RowStore, rows: Iterable[Row], runs: set[str]) -> list[Row]:
    """The tool calls of ``runs`` among ``rows`` whose ids the assistant messages of ``snapshots``' contexts
    hold (a call id is the model's, often the same in every run: it is looked up in those runs alone)."""
    held: set[str] = set()
    for (_, _, size, _, _, _), log in zip(snapshots.snapshots, snapshots.logs):
        for message in log[:size]:
            if isinstance(message, AssistantMessage) and not isinstance(message.content, str):
                held.update(call.id for call in message.content)
    if not held:
        return []
    return [row for row in rows if type(row) is ToolExecution and row.run_id in runs and row.call.id in held]


MEMO_FROM = 256
"""Texts at least this long are masked once per trace (while its secrets stay the same), not each time
a frame is built: a session of long tool outputs builds its frames without scanning them again."""


class _MemoRedactor(DefaultRedactor):
    """The default redactor remembering what it made of each long text (by value: the same text
    reached by another path is not scanned again). Made anew when the secrets change, or rows are
    forgotten (so it never keeps a forgotten run's texts)."""

    def __init__(self, secrets: list[str], epoch: int) -> None:
        self.secrets = secrets
        self.epoch = epoch
        self._done: dict[str, str] = {}
        self._arrow: dict[str, Any] = {}

    def arrow_text(self, text: str) -> Any:
        """The one Arrow copy of a long (masked) text the trace's frames share (:func:`.schema.text_column`)."""
        found = self._arrow.get(text)
        if found is None:
            import pyarrow as pa

            found = self._arrow[text] = pa.array([text], type=pa.large_string())
        return found

    def __call__(self, text: str) -> str:
        if len(text) < MEMO_FROM:
            return mask(text, self.secrets)
        done = self._done.get(text)
        if done is None:
            done = self._done[text] = mask(text, self.secrets)
        return done


class _Recording:
    def __init__(self, trace: Trace, sources: Sequence[RunSource]) -> None:
        self.trace = trace
        self.sources = sources

    def __enter__(self) -> Trace:
        for source in self.sources:
            self.trace.attach(source)
        return self.trace

    def __exit__(self, *exc: object) -> None:
        for source in self.sources:
            self.trace.detach(source)


def context_frame(source: RunSource) -> pd.DataFrame:
    """``agent.context_df()``: the source's model context now, with the run and STEP that added each
    message, as the first trace among its recorders that records it saw (else without them)."""
    for candidate in source.recorders:
        if isinstance(candidate, Trace) and candidate.owner is source:
            return candidate.live_context_df(source)
        if isinstance(candidate, AgentRecorder) and candidate.source is source and candidate.trace_alive:
            trace = candidate.trace
            if isinstance(trace, Trace):
                return context_rows(source.model_context.messages, candidate, trace.redactor(), live=True)
    return context_rows(source.model_context.messages, None, DefaultRedactor(source.secrets))
