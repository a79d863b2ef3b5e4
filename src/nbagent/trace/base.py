"""What a live trace and a loaded one share: their frames, views and exports (:class:`TraceFrames`).

A subclass gives the frames; the summary, the timeline, the notebook view and the exports are made
from them (the export modules read any :class:`~nbagent.trace.schema.TraceTables`).
"""

from __future__ import annotations

import asyncio
import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from .. import _check as check

if TYPE_CHECKING:
    import pandas as pd

    from .follow import Follower
    from .otlp import SpanTables
    from .replay import Replay
    from .timeline import Timeline


_explorer: list[Callable[..., Any]] = []

T = TypeVar("T")

#: The longest a read of files awaited from the event loop (:func:`read_in_worker`: a view opening,
#: replaying or comparing a run of a dataset) may take before it gives up with a ``TimeoutError``.
READ_TIMEOUT_S = 60.0


async def read_in_worker(read: Callable[[], T], what: str, timeout: float | None = None) -> T:
    """``read()`` in a worker thread, the event loop running on meanwhile (a click, the kernel), at most
    ``timeout`` seconds (default :data:`READ_TIMEOUT_S`): then a ``TimeoutError`` naming ``what`` and the
    time (the thread ends its read by itself; what it read is dropped)."""
    seconds = READ_TIMEOUT_S if timeout is None else timeout
    try:
        async with asyncio.timeout(seconds):
            return await asyncio.to_thread(read)
    except TimeoutError:
        raise TimeoutError(f"{what}: not read within {seconds:g} s (slow files, or too much to read)") from None


def register_explorer(factory: Callable[..., Any]) -> None:
    """Set what :meth:`TraceFrames.explore` makes (the notebook layer's run explorer registers itself)."""
    _explorer[:] = [factory]


class NoSuchRun(ValueError, KeyError):
    """A run the trace does not hold: a ValueError naming the parameter, and a KeyError (a lookup's miss)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class TraceFrames(ABC):
    """Views and exports shared by a live trace (:class:`~nbagent.trace.Trace`) and a loaded one
    (:class:`~nbagent.trace.LoadedTrace`)."""

    trace_id: str

    @abstractmethod
    def events_df(self, include_chunks: bool = True) -> pd.DataFrame:
        """One row per recorded item, streamed chunks included unless ``include_chunks=False``."""

    @abstractmethod
    def llm_calls_df(self) -> pd.DataFrame:
        """One row per model call."""

    @abstractmethod
    def tool_calls_df(self) -> pd.DataFrame:
        """One row per tool call."""

    @abstractmethod
    def runs_df(self) -> pd.DataFrame:
        """One row per run."""

    @abstractmethod
    def context_df(self, run_id: str | None = None, seq: int | None = None, agent: str | None = None) -> pd.DataFrame:
        """The model context as it was when item ``seq`` of run ``run_id`` was recorded."""

    @abstractmethod
    def context_tables(self) -> dict[str, pd.DataFrame]:
        """The context snapshots as the tables ``context_logs`` and ``snapshots`` (for export)."""

    def table(
        self, name: str, columns: Sequence[str] | None = None, run_ids: Sequence[str] | None = None
    ) -> pd.DataFrame:
        """Table ``name`` (``events``, ``llm_calls``, ``tool_calls``, ``runs``, ``context_logs``,
        ``snapshots``), its ``columns`` only (default: all), the rows of ``run_ids`` only (default: all;
        not for the context tables, which have no run). A lazily read dataset reads those alone."""
        from .combine import ALL_TABLES
        from .schema import COLUMNS, CONTEXT_TABLES

        where = "trace.table"
        check.choice(where, "name", name, ALL_TABLES)
        if name in CONTEXT_TABLES:
            if run_ids is not None:
                raise check.wrong_value(where, "run_ids", f"None for {name!r} (a table of no run)", run_ids)
            df = self.context_tables()[name]
        else:
            df = self.events_df() if name == "events" else getattr(self, f"{name}_df")()
        if run_ids is not None:
            given = check.sequence(where, "run_ids", run_ids, "a list of run ids")
            wanted = [str(check.string(where, f"run_ids[{i}]", run)) for i, run in enumerate(given)]
            df = df[df["run_id"].astype("object").isin(wanted).to_numpy()].reset_index(drop=True)
        if columns is not None:
            chosen = list(check.sequence(where, "columns", columns, "a list of column names"))
            for position, column in enumerate(chosen):
                check.choice(where, f"columns[{position}]", column, COLUMNS[name])
            df = df[chosen]
        return df

    #: Whether the reads of one run (``replay``, ``timeline``, the explorer's open) read that run's rows
    #: alone (:meth:`run`): a live trace and a lazily read dataset, whose whole frames cost what every run
    #: costs; a loaded trace's frames are in memory already.
    reads_by_run: bool = False

    #: Whether reading this trace (a frame, a run of it) reads files: a view then reads it in a worker
    #: thread, so the event loop (a click) is not held meanwhile (a lazily read dataset). The others are
    #: read where they are: a live trace changes on the loop, a loaded one is in memory.
    reads_files: bool = False

    def run(self, run_id: str) -> TraceFrames:
        """A trace holding run ``run_id`` with what its replay, timeline, context and comparison read: the
        run's rows alone where the trace reads by run (:attr:`reads_by_run`; a live trace's from its rows,
        a lazily read dataset's from its files), this trace itself where its frames are in memory."""
        run = str(check.string("trace.run", "run_id", run_id))
        if run not in set(self.runs_df()["run_id"].astype("object")):
            raise NoSuchRun(str(check.wrong_value("trace.run", "run_id", "a run of this trace", run_id)))
        return self

    async def aread(self, read: Callable[[TraceFrames], T], *, timeout: float | None = None) -> T:
        """``read(self)`` (say ``lambda trace: trace.replay(run_id)``) awaited from the event loop without
        holding it: in a worker thread where reading this trace reads files (:attr:`reads_files`), within
        ``timeout`` seconds (:func:`read_in_worker`); at once, on the loop, for the others (a live trace
        changes on the loop, a loaded one is in memory)."""
        if not self.reads_files:
            return read(self)
        return await read_in_worker(lambda: read(self), repr(self), timeout)

    def source_folder(self) -> Path | None:
        """The dataset folder this trace reads its frames from (a lazily read dataset's); ``None`` for a
        trace whose frames are in memory."""
        return None

    def follower(self) -> Follower | None:
        """What a live view of this trace reads at each update (the runs new or changed since the last):
        ``None`` where the trace does not change (a loaded trace); a live trace's follows its rows, a
        lazily read dataset's the parts committed to its folder."""
        return None

    def reading_code(self, name: str) -> tuple[str, str]:
        """What code pasted elsewhere reads this trace with, when it is named ``name``: the lines that make
        it in a new session (none: ``name`` is the user's variable) and the expression of its tool calls'
        table (a dataset's: the columns the explorer's filters read only)."""
        return "", f"{name}.tool_calls_df()"

    def last_run(self, started: bool = False) -> str:
        """The id of the trace's last run (of the last run started, if ``started``); :class:`NoSuchRun` if none."""
        runs = self.runs_df()
        if not len(runs):
            raise NoSuchRun("the trace holds no run")
        if started:
            runs = runs.sort_values("started_at", kind="stable")
        return str(runs["run_id"].iloc[-1])

    def replay(self, run_id: str | None = None, *, pace: bool = False) -> Replay:
        """Run ``run_id`` (the last by default) read back so that the loop makes it again offline.

        ``nbagent.run(replay)``, ``nbagent.step(replay)`` and ``nbagent.show(replay)`` take it as an agent
        with its task: the recorded model answers (streamed pieces, tool calls, usage, thoughts,
        structured output), tool and memory results (no tool is called), system message, tool schemas
        and starting context give the recorded run again, ids and times aside; ``pace=True`` waits the
        recorded times. What a replay cannot reproduce: :data:`nbagent.trace.replay.LIMITS`.
        """
        from .replay import replay_of

        if not self.reads_by_run:
            return replay_of(self, run_id, pace=pace)
        if run_id is not None and not isinstance(run_id, str):
            raise TypeError(f"trace.replay: run_id must be a run id (str) or None, got {type(run_id).__name__}")
        if run_id is None:
            try:
                run_id = self.last_run()
            except ValueError as error:
                raise ValueError(f"trace.replay: no run to replay ({error})") from None
        return replay_of(self.run(run_id), run_id, pace=pace, source=self)

    def replays(self, run_ids: Iterable[str] | None = None, *, pace: bool = False) -> Iterator[Replay]:
        """The replay of each run of ``run_ids`` (every run by default, in order), the frames read once
        for all of them (what a dataset of runs is replayed with: see :meth:`replay`)."""
        from .replay import ReplayIndex

        index = ReplayIndex(self)
        for run_id in index.order if run_ids is None else run_ids:
            yield index.replay(run_id, pace=pace)

    def explore(self, *, page_size: int = 50, live: bool | None = None) -> Any:
        """A run explorer of this trace's runs (display it): filter, sort, page, open, replay and compare
        them; ``live`` (a live trace's default) follows new runs. See :mod:`nbagent.notebook.explorer`."""
        if not _explorer:
            raise RuntimeError("trace.explore needs the notebook side: import nbagent (and ipywidgets) first")
        return _explorer[0](self, page_size=page_size, live=live)

    def summary(self) -> pd.Series:
        """Runs, LLM calls, tokens, tool error rate and p50/p95 latencies at a glance."""
        from .summary import summarize

        return summarize(self.runs_df(), self.llm_calls_df(), self.tool_calls_df())

    def timeline(self, run_id: str | None = None) -> Timeline:
        """A run's LLM calls and tool calls on a time axis (the last run by default), as HTML/SVG."""
        from .timeline import Timeline

        if self.reads_by_run:  # a run it does not hold: NoSuchRun, a KeyError as Timeline.of raises
            run = self.last_run(started=True) if run_id is None else run_id
            one = self.run(run)
            return Timeline.of(one.runs_df(), one.llm_calls_df(), one.tool_calls_df(), run)
        return Timeline.of(self.runs_df(), self.llm_calls_df(), self.tool_calls_df(), run_id)

    #: Whether OTLP exports carry the messages (``to_otlp``/``to_otlp_json`` with ``content=None``);
    #: ``None``: as ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says (off when unset).
    otlp_content: bool | None = None

    #: Whether runs still record into this trace (a live :class:`~nbagent.trace.Trace`; a running batch's
    #: trace read back): ``to_parquet`` leaves its runs still going out (a loaded trace's are written as
    #: they were recorded).
    records_runs: bool = False

    def to_parquet(self, folder: str | Path) -> Path:
        """Write the tables as a dataset by table, ``folder/<table>/session=<trace id>/part-<n>.parquet``
        (the four frames and the context snapshots; ``n`` the next free part, so exporting again adds a
        part with the runs not written yet); ``nbagent.load_parquet(folder)`` reads it back. Each run is
        written once, ended: a run still going is left out (with a warning) and written by the first
        export after it ends (with what the trace holds of it then: ``clear()`` before that forgets its
        rows so far). Returns ``folder``."""
        from .writer import write_parquet

        return write_parquet(self, folder)

    def to_jsonl(self, folder: str | Path) -> Path:
        """Write ``folder/<table>.jsonl`` for each table (the context ones included), one JSON object a
        row with every column, each file read whole by ``pl.read_ndjson`` and DuckDB's ``read_json_auto``
        with their defaults (see :mod:`nbagent.trace.jsonl`), with ``folder/schema.json`` and
        ``folder/trace.json``; ``nbagent.load_jsonl(folder)`` reads it back."""
        from .jsonl import write_jsonl

        return write_jsonl(self, folder)

    def span_tables(self) -> SpanTables:
        """What the OTLP spans are built from (:class:`~nbagent.trace.otlp.SpanTables`): made from the
        frames here; a live trace makes them from its rows."""
        from .otlp import span_tables

        return span_tables(self)

    def _content(self, content: bool | None) -> bool:
        from .otlp import content_default

        if content is not None:
            return content
        return content_default() if self.otlp_content is None else self.otlp_content

    def to_otlp_json(self, path: str | Path | None = None, *, content: bool | None = None) -> dict[str, Any]:
        """The trace as OTLP-JSON (an ``ExportTraceServiceRequest``): a span per run, LLM call, tool call
        and memory query, with the GenAI semantic conventions' attributes, ended work only; the
        messages only with ``content=True`` (default: ``trace.otlp_content``). Written to ``path`` if given."""
        from .otlp import export_request, spans_of, to_json

        document = to_json(export_request(spans_of(self, self._content(content))))
        if path is not None:
            Path(path).write_text(json.dumps(document), encoding="utf-8")
        return document

    def to_otlp(
        self,
        endpoint: str,
        headers: Mapping[str, str] | None = None,
        *,
        content: bool | None = None,
        timeout: float = 30.0,
    ) -> int:
        """POST the trace's spans (as :meth:`to_otlp_json`) to an OTLP/HTTP ``endpoint`` (a collector's,
        MLflow's or Phoenix's ``.../v1/traces``) as protobuf, with ``headers``; the number of spans
        sent. ``timeout`` bounds the whole send (however slowly an answer trickles); a refused connection,
        no answer in time or an error status raises an ``OTLPSendError`` (a ``ConnectionError``) naming
        the endpoint. It blocks its thread: in async code, ``await asyncio.to_thread(trace.to_otlp, ...)``,
        or an :class:`~nbagent.trace.OTLPRecorder`, which sends from a thread of its own."""
        from .otlp import export_request, post, spans_of

        spans = spans_of(self, self._content(content))
        if spans:
            post(endpoint, export_request(spans), headers, timeout)
        return len(spans)

    def _repr_html_(self) -> str:
        from .views import summary_html

        return summary_html(self)
