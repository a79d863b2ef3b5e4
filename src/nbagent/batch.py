"""``Batch``: one agent over a dataset of tasks, with bounded concurrency, retries and live progress.

::

    batch = nbagent.Batch(make_agent, tasks, concurrency=16, timeout=60, retries=3)
    await batch.run()            # or batch.run_sync(), also inside a notebook cell
    batch.results                # one row per task, in input order (pandas)
    batch.trace                  # one Trace holding every run of every task
    batch = await nbagent.run_many(make_agent, tasks, concurrency=16)   # the same in one call

**make_agent** is a callable given each task (its text, or its row as a pandas ``Series`` when the
tasks are a DataFrame) that returns a fresh :class:`~nbagent.AssistantAgent`; or an agent used as a
template: each task runs on a copy of it with a fresh model context (the same tools, workbenches,
memory stores and settings; a model client that keeps no state between calls, such as the OpenAI
client, is shared with its connections; one that does, such as a replay script, is loaded anew from
its component config). Runs never share a context.

**tasks** is a list (or tuple), a pandas ``Series``, a DataFrame with a ``task_column`` (its other
columns are kept in the results), or any iterable (read as the batch goes). A task is a ``str``, a
chat message or a list of chat messages; a task of another type is a row with status ``error``.

**Runs.** At most ``concurrency`` at once. ``timeout`` bounds each task (its retries and waits
included): past it the run is cancelled, status ``timeout``. A rate limit or a server error
(:class:`~nbagent.ModelRateLimitError`, :class:`~nbagent.ModelServerError`) is retried up to
``retries`` times with exponential backoff (``backoff`` seconds doubled each time, with jitter, at
most ``max_backoff``), or after the ``Retry-After`` the server sent (at most ``max_backoff``, and
not at all when the wait would pass the task's ``timeout``); then every task waits that long before
its next model call. The batch's retries are the only ones: inside a batch the OpenAI client sends
each call once (its SDK's own retries are off), so a task makes at most ``1 + retries`` requests a
call. A retry goes on from the failed run (``agent.retry()``): the task is
not added to the context twice and the tools that ran are not run again. Whatever happens to a task
(the factory raises, a wrong task, a model error, a timeout) it is a row, never the end of the batch.
:meth:`Batch.stop` (the progress widget's Stop button), or cancelling ``run()``, cancels every run
at once: each leaves its agent's context valid, finished rows are kept, and the tasks not finished
are rows with status ``cancelled``.

**Results** (:data:`RESULT_COLUMNS`): one row per task, in input order (the input's index for a
Series or DataFrame), with real dtypes: categories, nullable ints, UTC timestamps. ``attempts_df()``
has one row per run (attempt) with its ``run_id``; ``events_df()``, ``llm_calls_df()``,
``tool_calls_df()`` and ``runs_df()`` are the trace's frames with each row's task
(``task_index``, ``task_key``, ``attempt``), so they filter by task.

**Progress**: in a notebook a widget (done, failed, running, tokens, throughput, ETA, p50/p95
latency, a Stop button; at most 10 updates a second) that leaves a static HTML summary in the saved
notebook; in a terminal a text progress bar (tqdm). ``progress=None`` shows nothing; a callable is
given the :class:`BatchProgress` at most 10 times a second and once at the end.

**Large batches**: with ``output=folder`` finished runs are written as the batch goes and leave
memory (a part every ``part_size`` tasks), into a dataset of one folder per table, Hive style::

    folder/results/session=<id>/part-00000.parquet     # this module's results and attempts
    folder/attempts/session=<id>/part-00000.parquet
    folder/events/session=<id>/part-00000.parquet      # the trace's tables (nbagent.TRACE_COLUMNS)
    folder/llm_calls/...  folder/tool_calls/...  folder/runs/...  folder/context_logs/...  folder/snapshots/...

A part (the trace tables, attempts and results of its tasks) is written whole or not at all, its
results last (see :mod:`nbagent.trace.parquet`): a batch killed while it writes loses only the tasks
of the part whose files were not all written yet, and a rerun finishes a part left half moved into
place. Running a batch again on the same folder skips the tasks already done (status ``ok``; a task is
known by ``key``: by default its position and a hash of its text). ``shard=(i, n)`` runs the tasks
at positions ``i, i + n, i + 2n, ...``; each shard is a session of its own in the same dataset, so n
machines make one dataset::

    # machine i of 4:
    batch = nbagent.Batch(make_agent, tasks, output="s3-mount/evals", shard=(i, 4))
    batch.run_sync()
    # anywhere, once the four are done (DuckDB; Spark: spark.read.parquet("s3-mount/evals/results")):
    duckdb.sql("SELECT status, count(*) FROM read_parquet('s3-mount/evals/results/**/*.parquet',"
               " hive_partitioning=true) GROUP BY status")

**Groups and a table per task** (what :class:`~nbagent.Experiment` runs on): ``group="column"`` counts
each group of tasks (a DataFrame column's values: an experiment's variants) in the progress
(:attr:`BatchProgress.groups`: each group's done, ok and failed, shown by the widget and the text bar);
``task_table=`` (a :class:`TaskTable`) is given each task as it ends (:class:`TaskEnd`: its status,
answer, run and the trace it is in) and returns the task's row, kept in each part of the dataset before
its results, so a task counts as done only with its row in place.

The loop layer: it imports the agent, the trace, the models and the renderer, never the notebook
(the widget registers itself as the ``"widget"`` progress display, see :func:`register_progress_display`).
pandas and pyarrow are imported only when results are built or written.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import sys
import time
import weakref
from array import array
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from . import _check as check
from ._ids import new_id
from .agent import AssistantAgent
from .agent_input import task_messages
from .cancellation import CancellationToken, guarded
from .components import load_component
from .hooks import HINT
from .interrupts import explain_cancellation
from .messages import BaseChatMessage, HandoffMessage, Response, ToolCallSummaryMessage
from .models.base import ChatCompletionClient, ModelRateLimitError, ModelServerError, UnreportedUsage
from .models.per_task import PerTaskClients
from .models.retries import OUTER_RETRIES
from .records import LLMCall, ToolExecution
from .redact import mask, process_secrets
from .sync import entry_point, run_coroutine
from .trace import Trace
from .trace.dataset import MAX_ID, Dataset, DatasetFollower, check_session

if TYPE_CHECKING:
    import pandas as pd

    from .trace import LoadedTrace

__all__ = [
    "ATTEMPT_COLUMNS",
    "RESULT_COLUMNS",
    "STATUSES",
    "Batch",
    "BatchProgress",
    "GroupProgress",
    "ProgressDisplay",
    "TaskEnd",
    "TaskTable",
    "TextProgress",
    "register_cell_display",
    "register_kernel_check",
    "register_progress_display",
    "run_many",
]

STATUSES = ("ok", "error", "timeout", "cancelled")
"""How a task ended: it answered; it failed (the factory, the task, a model or tool error...); its
``timeout`` passed; the batch was stopped or cancelled before it answered."""

RESULT_COLUMNS: dict[str, tuple[str, str]] = {
    "task": ("string", "the task as text (a chat message's text; a list's texts joined by newlines)"),
    "status": ("category", "ok, error, timeout or cancelled"),
    "answer": ("string", "the final message as text (null unless ok)"),
    "error": ("string", "what went wrong, as '<ExceptionType>: <message>' (null when ok)"),
    "stop_reason": (
        "category",
        "how the answer came: the last model call's finish reason (stop, length, content_filter...), "
        "tool_summary (the tool results were the answer) or handoff; null unless ok",
    ),
    "prompt_tokens": ("Int64", "prompt tokens of every model call of every attempt (null: none reported)"),
    "completion_tokens": ("Int64", "completion tokens of every model call of every attempt (null: none reported)"),
    "llm_calls": ("Int64", "model calls over every attempt"),
    "tool_calls": ("Int64", "tool calls over every attempt"),
    "duration_s": ("float64", "seconds from the task's start to its end, retries and waits included"),
    "started_at": ("datetime64[ns, UTC]", "when the task started (null: it never started)"),
    "ended_at": ("datetime64[ns, UTC]", "when it ended"),
    "run_id": ("string", "the run of the last attempt (attempts_df() lists every one)"),
    "attempts": ("Int64", "runs started for the task: 1 + retries (0: no run started)"),
    "session": ("category", "the session that ran it (a shard or a rerun is a session of its own)"),
    "task_key": ("string", "the task's key in the dataset (resume): by default its position and a hash of its text"),
}
"""The results' columns (then the input DataFrame's other columns): name -> (dtype, meaning)."""

ATTEMPT_COLUMNS: dict[str, tuple[str, str]] = {
    "task_index": ("Int64", "position of the task in the input"),
    "task_key": ("string", "the task's key"),
    "attempt": ("Int64", "1 for the first run, 2 for the first retry..."),
    "run_id": ("string", "the run (run_id in the trace's frames)"),
    "status": ("category", "how that run ended: ok, error, timeout or cancelled"),
    "error": ("string", "its error"),
    "wait_s": ("float64", "seconds waited before it (backoff or Retry-After)"),
    "session": ("category", "the session"),
}
"""The columns of ``attempts_df()``: one row per run of a task."""

RETRIED = (ModelRateLimitError, ModelServerError)
"""The errors a task is retried on: a rate limit (HTTP 429) and a server error (HTTP 5xx)."""
UPDATES_PER_SECOND = 10
"""The most progress updates a display gets in a second (the last state is always sent)."""
LIVE_LATENCIES = 2048
"""While a batch runs its p50/p95 are those of the last this many tasks; at the end, of every task."""
LAST_ERRORS = 5
OWN_TABLES = ("attempts", "results")
"""The tables a part with output= holds besides its trace's, placed after them (results last: a task is
done, and a rerun skips it, only once every row of its runs is in place); a ``task_table`` goes between."""
PENDING_PARTS = 2
"""With ``output=``: parts waiting to be written before no new task starts (memory stays flat when
tasks finish faster than parts are written)."""

T = TypeVar("T")
MakeAgent = Callable[[Any], AssistantAgent] | AssistantAgent
Key = str | Callable[[Any], object] | None


# ---------------------------------------------------------------------- progress


@dataclass(frozen=True)
class GroupProgress:
    """Where the tasks of one group of a batch are (``group=``: an experiment's variant)."""

    name: str
    total: int
    done: int
    """Tasks ended (any status) or skipped as done before."""
    ok: int
    failed: int
    """Tasks that ended with an error or a timeout."""

    @property
    def fraction(self) -> float:
        """Done over total (1 for a group of no task)."""
        return 1.0 if self.total == 0 else min(self.done / self.total, 1.0)

    def text(self) -> str:
        """``name done/total`` and the failures, short."""
        failed = f" ({self.failed:,} failed)" if self.failed else ""
        return f"{self.name} {self.done:,}/{self.total:,}{failed}"


@dataclass(frozen=True)
class BatchProgress:
    """Where a batch is: what progress displays show (a snapshot, taken at most 10 times a second)."""

    total: int | None
    """Tasks of the batch (of its shard); ``None`` for an iterable not read to its end yet."""
    ok: int
    error: int
    timeout: int
    cancelled: int
    skipped: int
    """Tasks done in an earlier session of the same output folder (resume): not run again."""
    running: int
    prompt_tokens: int
    completion_tokens: int
    elapsed_s: float
    p50_s: float | None
    """Median task duration (seconds) of the tasks finished (the last 2,048 while running)."""
    p95_s: float | None
    state: Literal["running", "done", "stopped", "failed"]
    """``done``: every task ran; ``stopped``: stopped or cancelled; ``failed``: the batch itself raised."""
    title: str = ""
    last_errors: tuple[tuple[str, str, str], ...] = ()
    """The last few tasks that did not end ok: (task, status, error), texts cut short."""
    groups: tuple[GroupProgress, ...] = ()
    """Each group's progress, in the order of the tasks (a batch with ``group=``; else none)."""

    @property
    def failed(self) -> int:
        """Tasks that ended with an error or a timeout."""
        return self.error + self.timeout

    @property
    def finished(self) -> int:
        """Tasks that ran and ended (any status), this session."""
        return self.ok + self.error + self.timeout + self.cancelled

    @property
    def done(self) -> int:
        """Tasks out of the way: finished, or skipped as done before."""
        return self.finished + self.skipped

    @property
    def tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    @property
    def throughput(self) -> float | None:
        """Tasks finished per second, this session."""
        return self.finished / self.elapsed_s if self.elapsed_s > 0 and self.finished else None

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the current throughput (``None``: unknown)."""
        rate = self.throughput
        if self.total is None or rate is None or self.state != "running":
            return None
        return max(self.total - self.done, 0) / rate

    @property
    def fraction(self) -> float | None:
        """Done over total (``None``: total unknown; 1 for an empty batch)."""
        if self.total is None:
            return None
        return 1.0 if self.total == 0 else min(self.done / self.total, 1.0)

    def metrics(self) -> dict[str, str]:
        """The figures as short texts, by name (what the widget and the text bar show)."""
        return {
            "done": f"{self.done:,}" + ("" if self.total is None else f"/{self.total:,}"),
            "ok": f"{self.ok:,}",
            "failed": f"{self.failed:,}",
            "cancelled": f"{self.cancelled:,}",
            "running": f"{self.running:,}",
            "tokens": f"{self.tokens:,}",
            "throughput": "–" if self.throughput is None else f"{self.throughput:,.1f}/s",
            "eta": "–" if self.eta_s is None else _seconds(self.eta_s),
            "p50": "–" if self.p50_s is None else _seconds(self.p50_s),
            "p95": "–" if self.p95_s is None else _seconds(self.p95_s),
            "elapsed": _seconds(self.elapsed_s),
        }

    def line(self) -> str:
        """One line of text: the state and every figure."""
        m = self.metrics()
        parts = [
            f"{m['done']} done",
            f"{m['ok']} ok",
            f"{m['failed']} failed",
        ]
        if self.cancelled:
            parts.append(f"{m['cancelled']} cancelled")
        if self.skipped:
            parts.append(f"{self.skipped:,} skipped (done before)")
        if self.state == "running":
            parts.append(f"{m['running']} running")
        parts += [f"{m['tokens']} tokens", m["throughput"], f"p50 {m['p50']}", f"p95 {m['p95']}"]
        if self.state == "running":
            parts.append(f"ETA {m['eta']}")
        else:
            parts.append(f"in {m['elapsed']}")
        head = f"{self.title}: " if self.title else ""
        groups = "".join(f" · {group.text()}" for group in self.groups)
        return f"{head}{self.state} · " + " · ".join(parts) + groups


def _seconds(value: float) -> str:
    if value < 1:
        return f"{value * 1000:.0f} ms"
    if value < 10:
        return f"{value:.2f} s"
    if value < 120:
        return f"{value:.0f} s"
    minutes, seconds = divmod(int(round(value)), 60)
    if minutes < 60:
        return f"{minutes} min {seconds:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


class ProgressDisplay(Protocol):
    """What shows a batch's progress: given a snapshot at most 10 times a second, and the last one."""

    def update(self, progress: BatchProgress) -> None: ...

    def finish(self, progress: BatchProgress) -> None: ...


ProgressFactory = Callable[["Batch"], ProgressDisplay]
_DISPLAYS: dict[str, ProgressFactory] = {}


def register_progress_display(name: str, factory: ProgressFactory) -> None:
    """Make ``progress=name`` show a batch with ``factory(batch)`` (the notebook registers ``"widget"``)."""
    _DISPLAYS[name] = factory


class TextProgress:
    """A text progress bar on stderr (tqdm): done/total, then ok, failed, running, tokens and p50."""

    def __init__(self, batch: Batch) -> None:
        from tqdm.auto import tqdm

        self._bar = tqdm(total=batch.total, desc=batch.title, unit="task", file=sys.stderr, dynamic_ncols=True)
        self._shown = 0

    def update(self, progress: BatchProgress) -> None:
        m = progress.metrics()
        groups = "".join(f" · {group.text()}" for group in progress.groups)
        figures = f"ok {m['ok']} · failed {m['failed']} · running {m['running']} · {m['tokens']} tok · p50 {m['p50']}"
        self._bar.set_postfix_str(figures + groups, refresh=False)
        if progress.total is not None and self._bar.total != progress.total:
            self._bar.total = progress.total
        self._bar.update(progress.done - self._shown)
        self._shown = progress.done

    def finish(self, progress: BatchProgress) -> None:
        self.update(progress)
        self._bar.close()
        print(progress.line(), file=sys.stderr)


class _CallbackDisplay:
    """``progress=<callable>``: the callable gets every snapshot, the last one included."""

    def __init__(self, callback: Callable[[BatchProgress], object]) -> None:
        self._callback = callback

    def update(self, progress: BatchProgress) -> None:
        self._callback(progress)

    def finish(self, progress: BatchProgress) -> None:
        self._callback(progress)


_KERNEL_CHECKS: list[Callable[[], bool]] = []


def register_kernel_check(check: Callable[[], bool]) -> None:
    """``check()`` tells whether the code runs in a notebook's kernel (then ``progress="auto"`` is the
    widget): the notebook layer's, registered by ``nbagent`` when this module loads (this layer imports no IPython)."""
    _KERNEL_CHECKS[:] = [check]


def _in_kernel() -> bool:
    return any(check() for check in _KERNEL_CHECKS)


CellDisplay = Callable[["Batch", "int | None"], None]
"""Shows a batch that is a cell's last value, given the cell its progress view is in (or ``None``)."""
_CELL_DISPLAYS: list[CellDisplay] = []


def register_cell_display(show: CellDisplay) -> None:
    """``show(batch, shown_in)`` displays a batch that ends a cell (``await batch.run()``): the notebook
    layer's, registered by ``nbagent`` when this module loads (this layer imports no IPython)."""
    _CELL_DISPLAYS[:] = [show]


# ---------------------------------------------------------------------- a table of one row per task


@dataclass(frozen=True, slots=True)
class TaskEnd:
    """A task that has ended, as a :class:`TaskTable` is given it (before its row counts as done)."""

    arg: object
    """What ``make_agent`` was given: the task, or its DataFrame row."""
    key: str
    position: int
    status: str
    """ok, error, timeout or cancelled (:data:`STATUSES`)."""
    answer: str | None
    error: str | None
    run_id: str | None
    """The run of its last attempt (``None``: no run started)."""
    trace: Trace
    """The live trace its runs are recorded in (``trace.run(run_id)``: that run's frames)."""
    tokens: int | None
    """Prompt and completion tokens over every attempt (``None``: none reported)."""
    tool_calls: int
    tool_errors: int
    """Tool calls of its last attempt's run that gave an error result."""
    duration_s: float
    token: CancellationToken
    """Cancelled when the batch is stopped: pass it to what the table awaits (a model call)."""


class TaskTable(Protocol):
    """A table of one row per task that a :class:`Batch` keeps beside its results (``task_table=``): with
    ``output=`` each part holds it, committed with the part's runs (before its results, so a task is done
    only once its row is in place). How an :class:`~nbagent.Experiment` stores its variants and scores."""

    @property
    def name(self) -> str:
        """The table's name in the dataset (a folder of the output, beside ``results``)."""
        ...

    async def row(self, end: TaskEnd) -> dict[str, Any]:
        """The task's row, once it has ended (awaited before the task counts as done)."""
        ...

    def table(self, rows: list[dict[str, Any]]) -> Any:
        """The rows of a part as a pyarrow Table (called when the part is written)."""
        ...


# ---------------------------------------------------------------------- tasks


@dataclass(slots=True)
class _Task:
    position: int
    key: str
    text: str
    value: object  # what the agent runs: a str, a chat message or a list of them (checked at run time)
    arg: object  # what make_agent is given: the task, or its DataFrame row


class _Source:
    """The tasks of a batch's shard, read in order (an iterable only as the batch goes)."""

    def __init__(self, tasks: object, task_column: str, key: Key, shard: tuple[int, int]) -> None:
        where = "Batch"
        self.arguments = (tasks, task_column, key, shard)
        self.column = task_column
        self.frame: pd.DataFrame | None = None
        self.index: Any = None  # the input's index (Series, DataFrame), for the results
        self._shard = shard
        self._key = key
        self._items: Iterable[Any]
        if isinstance(tasks, (str, bytes, BaseChatMessage, Mapping)) or not isinstance(tasks, Iterable):
            hint = "A single task is a list of one: [task]" if isinstance(tasks, (str, BaseChatMessage)) else ""
            raise check.wrong_type(
                where, "tasks", "a list of tasks, a pandas Series or DataFrame, or an iterable", tasks, hint
            )
        kind = type(tasks).__module__.split(".")[0] + "." + type(tasks).__name__
        if kind == "pandas.DataFrame":
            frame: Any = tasks
            if task_column not in frame.columns:
                raise check.wrong_value(
                    where,
                    "task_column",
                    f"a column of the tasks DataFrame ({', '.join(map(str, frame.columns)) or 'it has none'})",
                    task_column,
                )
            if isinstance(key, str) and key not in frame.columns:
                raise check.wrong_value(where, "key", "a column of the tasks DataFrame", key)
            self.frame = frame
            self.index = frame.index
            self.total: int | None = len(range(shard[0], len(frame), shard[1]))
            self._items = frame[task_column]
        elif kind == "pandas.Series":
            series: Any = tasks
            self.index = series.index
            self.total = len(range(shard[0], len(series), shard[1]))
            self._items = series
        else:
            if isinstance(key, str):
                raise check.wrong_type(
                    where, "key", "a function (task -> key) or None for tasks that are not a DataFrame", key
                )
            sized = isinstance(tasks, Sequence)
            self.total = len(range(shard[0], len(tasks), shard[1])) if sized else None  # type: ignore[arg-type]
            self._items = tasks
        self.read = 0  # tasks of the shard read so far
        self.exhausted = self.total is not None and self.total == 0
        self._iterator: Iterator[_Task] | None = None

    def positions(self) -> range | None:
        """The input positions of the shard's tasks, when the input has a length."""
        if self.total is None:
            return None
        start, step = self._shard
        return range(start, start + step * self.total, step)

    def again(self) -> _Source:
        """The same tasks, to be read again from the start (a one-shot iterator gives none)."""
        return _Source(*self.arguments)

    def task_at(self, position: int) -> _Task:
        """The task at ``position`` of a sized input (for the rows of tasks that never ran)."""
        items: Any = self._items
        value = items.iloc[position] if hasattr(items, "iloc") else items[position]
        return self._make(position, value)

    def _make(self, position: int, value: object) -> _Task:
        text = task_text(value)
        arg: object = value
        if self.frame is not None:
            arg = self.frame.iloc[position]
        key = self._key
        if key is None:
            task_key = f"{position}:{hashlib.sha1(text.encode('utf-8', 'replace')).hexdigest()[:16]}"
        elif isinstance(key, str):
            task_key = str(arg[key])  # type: ignore[index]
        else:
            task_key = str(key(arg))
        return _Task(position, task_key, text, value, arg)

    def __iter__(self) -> Iterator[_Task]:
        if self._iterator is None:
            self._iterator = self._generate()
        return self._iterator

    def _generate(self) -> Iterator[_Task]:
        start, step = self._shard
        for position, value in enumerate(self._items):
            if position % step != start:
                continue
            self.read += 1
            yield self._make(position, value)
        self.exhausted = True
        if self.total is None:
            self.total = self.read


def task_text(task: object) -> str:
    """A task as text: a str itself, a chat message's text, a list's texts joined (else its repr)."""
    if isinstance(task, str):
        return task
    if isinstance(task, BaseChatMessage):
        return task.to_text()
    if isinstance(task, (list, tuple)) and all(isinstance(item, BaseChatMessage) for item in task):
        return "\n".join(item.to_text() for item in task)
    return check.short_repr(task)


# ---------------------------------------------------------------------- agents


def agent_copier(template: AssistantAgent, where: str = "Batch: make_agent") -> Callable[[object], AssistantAgent]:
    """A factory of copies of ``template`` (:meth:`AssistantAgent.copy`), each with a fresh model context.

    The copies share the template's tools and workbenches, memory stores, output type and summary
    formatter (the same objects), and its model client when the client keeps no state between calls
    (``checkpoint()`` is ``None``: the OpenAI client, whose connections are then shared); a client
    that keeps state (a replay script's position, a cassette's) is loaded from the template client's
    component config for each copy, so each starts where the template's started.
    """
    client = template.model_client
    stateful = client.checkpoint() is not None
    try:
        config = client.dump_component(include_secrets=True) if stateful else None
        # Fail now rather than once per task: a copy made (a subclass whose __init__ takes other
        # arguments cannot make one) and, for a stateful client, a client loaded from its config.
        template.copy(model_client=load_component(config, ChatCompletionClient) if config is not None else None)
    except Exception as error:
        why = (
            f"its model client {type(client).__name__} keeps state between calls (checkpoint() is not None), "
            "so each copy needs its own, loaded from its component config, which failed"
            if stateful
            else f"AssistantAgent.copy() failed on {type(template).__name__}"
        )
        raise TypeError(
            f"{where}, the agent {template.name!r}, cannot be copied for each task: {why} "
            f"({_error_text(error)}); pass a function that builds a fresh agent for a task instead: "
            "Batch(lambda task: AssistantAgent(...), tasks)"
        ) from error
    if config is None:
        return lambda _: template.copy()
    return lambda _: template.copy(model_client=load_component(config, ChatCompletionClient))


# ---------------------------------------------------------------------- rows


class _Row:
    """One task's result as the batch goes (see :data:`RESULT_COLUMNS`)."""

    __slots__ = (
        "position", "key", "task", "status", "answer", "error", "stop_reason", "prompt_tokens",
        "completion_tokens", "llm_calls", "tool_calls", "duration_s", "started_at", "ended_at", "run_id",
        "attempts", "session", "tool_errors", "group",
    )  # fmt: skip

    def __init__(self, task: _Task, session: str) -> None:
        self.position = task.position
        self.key = task.key
        self.task = task.text
        self.status = "cancelled"
        self.answer: str | None = None
        self.error: str | None = None
        self.stop_reason: str | None = None
        self.prompt_tokens: int | None = None
        self.completion_tokens: int | None = None
        self.llm_calls = 0
        self.tool_calls = 0
        self.duration_s: float | None = None
        self.started_at: float | None = None
        self.ended_at: float | None = None
        self.run_id: str | None = None
        self.attempts = 0
        self.session = session
        self.tool_errors = 0  # of the last attempt's run (not a results column: a task table's)
        self.group: str | None = None  # its group's name (group=)

    def mask(self, secrets: Sequence[str]) -> None:
        """Mask secrets in the texts (a key the server echoed in the answer...), as the trace does."""
        self.task = mask(self.task, secrets)
        if self.answer is not None:
            self.answer = mask(self.answer, secrets)
        if self.error is not None:
            self.error = mask(self.error, secrets)

    def values(self) -> tuple[Any, ...]:
        return (
            self.task, self.status, self.answer, self.error, self.stop_reason, self.prompt_tokens,
            self.completion_tokens, self.llm_calls, self.tool_calls, self.duration_s, self.started_at,
            self.ended_at, self.run_id, self.attempts, self.session, self.key,
        )  # fmt: skip


class MakeAgentError(Exception):
    """``make_agent`` raised, or returned no fresh ``AssistantAgent``: the task is a row with status ``error``."""


AttemptRow = tuple[int, str, int, str, str, str | None, float, str]
"""(task_index, task_key, attempt, run_id, status, error, wait_s, session): :data:`ATTEMPT_COLUMNS`."""


def _error_text(error: BaseException) -> str:
    text = str(error)
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


# ---------------------------------------------------------------------- frames


def _frame(columns: Mapping[str, tuple[str, str]], data: Mapping[str, Sequence[Any]], index: Any = None) -> Any:
    """A DataFrame with exactly ``columns`` and their dtypes (times: epoch seconds or timestamps)."""
    import pandas as pd

    out: dict[str, Any] = {}
    for name, (dtype, _) in columns.items():
        values = list(data[name])
        if name == "status":
            out[name] = pd.Series(pd.Categorical(values, categories=list(STATUSES)))
        elif dtype == "category":
            out[name] = pd.Series(values, dtype="object").astype("category")
        elif dtype.startswith("datetime64"):
            if all(v is None or isinstance(v, (int, float)) for v in values):  # epoch seconds
                stamps = pd.to_datetime(pd.Series(values, dtype="float64"), unit="s", utc=True)
            else:
                stamps = pd.to_datetime(pd.Series(values, dtype="object"), utc=True)
            out[name] = stamps.astype(dtype).dt.floor("us")
        else:
            out[name] = pd.Series(pd.array(values, dtype=dtype))
    frame = pd.DataFrame(out, columns=list(columns))
    if index is not None:
        frame.index = index
    return frame


def _arrow_schema(columns: Mapping[str, tuple[str, str]], extra: Sequence[tuple[str, Any]] = ()) -> Any:
    import pyarrow as pa

    types = {
        "category": pa.string(),
        "string": pa.string(),
        "Int64": pa.int64(),
        "float64": pa.float64(),
        "datetime64[ns, UTC]": pa.timestamp("us", tz="UTC"),
    }
    fields = [(name, types[dtype]) for name, (dtype, _) in columns.items() if name != "session"]
    return pa.schema([*fields, *extra])


# ---------------------------------------------------------------------- the dataset


class _Part:
    """The runs of up to ``part_size`` tasks: recorded in their own trace, written together."""

    __slots__ = ("number", "trace", "rows", "attempts", "extra", "open", "started", "sealed")

    def __init__(self, number: int, trace: Trace) -> None:
        self.number = number
        self.trace = trace
        self.rows: list[_Row] = []
        self.attempts: list[AttemptRow] = []
        self.extra: list[dict[str, Any]] = []  # its task table's rows
        self.open = 0  # tasks running in it
        self.started = 0
        self.sealed = False  # no task starts in it any more

    @property
    def run_rows(self) -> list[AttemptRow]:
        """Its attempts: the rows of its runs a follower puts beside them (:class:`DatasetFollower`)."""
        return self.attempts


def _part_tables(part: _Part, task_table: TaskTable | None) -> dict[str, Any]:
    """A part's own tables (besides its trace's), as pyarrow Tables: its ``attempts``, its task table's
    and its ``results`` (in the order they are placed)."""
    import pyarrow as pa

    attempts = [dict(zip(ATTEMPT_COLUMNS, attempt)) for attempt in part.attempts]
    results = [_result_record(row) for row in part.rows]
    tables = {"attempts": pa.Table.from_pylist(attempts, schema=_arrow_schema(ATTEMPT_COLUMNS))}
    if task_table is not None:
        tables[task_table.name] = task_table.table(part.extra)
    tables["results"] = pa.Table.from_pylist(results, schema=_results_schema())
    return tables


def _results_schema() -> Any:
    import pyarrow as pa

    return _arrow_schema(RESULT_COLUMNS, [("task_index", pa.int64())])


def _read_table(
    dataset: Dataset,
    table: str,
    columns: Mapping[str, tuple[str, str]],
    session: str | None = None,
    skip: frozenset[int] = frozenset(),
) -> Any:
    """A table of this module (results, attempts) across sessions (but the parts numbered in ``skip``,
    which are in memory), with a ``session`` column, typed as ``columns`` says."""
    import pandas as pd

    schema = _results_schema() if table == "results" else _arrow_schema(columns)
    df = dataset.read_extra(table, schema, session, skip)
    if df is None:
        empty = _frame(columns, {name: [] for name in columns})
        if table == "results":
            empty["task_index"] = pd.array([], dtype="Int64")
        return empty
    typed = _frame(columns, {name: df[name].tolist() if name in df else [None] * len(df) for name in columns})
    if "task_index" in df and "task_index" not in typed:
        typed["task_index"] = pd.array(df["task_index"].tolist(), dtype="Int64")
    return typed


def _result_record(row: _Row) -> dict[str, Any]:
    from datetime import UTC, datetime

    record = dict(zip(RESULT_COLUMNS, row.values()))
    for name in ("started_at", "ended_at"):
        value = record[name]
        record[name] = None if value is None else datetime.fromtimestamp(value, UTC)
    del record["session"]
    record["task_index"] = row.position
    return record


# ---------------------------------------------------------------------- the batch


class Batch:
    """One agent over a dataset of tasks: bounded concurrency, per-task timeout, retries, progress,
    results and traces as DataFrames (see the module's documentation).

    ``make_agent``: a callable given each task (or its DataFrame row) that returns a fresh
    ``AssistantAgent``, or an ``AssistantAgent`` that each task gets a copy of. ``concurrency``: runs
    at once. ``timeout``: seconds per task (``None``: none). ``retries``: retries on rate limits and
    server errors, after ``backoff`` seconds doubling up to ``max_backoff`` (or the server's
    ``Retry-After``). ``task_column``: the DataFrame column the tasks are in. ``progress``:
    ``"auto"`` (a widget in a notebook, a text bar in a terminal, nothing otherwise), ``"widget"``,
    ``"text"``, ``None``, or a callable given each :class:`BatchProgress`. ``output``: a folder to
    write the runs to as they end (and to resume from); ``part_size`` tasks per written part.
    ``shard=(i, n)``: only the i-th of n shards. ``key``: how a task is known in the folder (a
    column name for a DataFrame, or a function of the task or row); by default its position and a
    hash of its text. ``title``: the progress display's title. ``group``: a column of the tasks
    DataFrame whose values group the tasks in the progress (each group's done, ok and failed: an
    experiment's variants). ``task_table``: a :class:`TaskTable` given each task as it ends, whose
    rows the batch keeps (with ``output=``, in each part). ``session``: this batch's session id
    (its trace's id and its folders in ``output``; by default a new one): a writer that names its
    sessions (:func:`nbagent.spark.run_batch`) finds them again.
    """

    def __init__(
        self,
        make_agent: MakeAgent,
        tasks: object,
        *,
        concurrency: int = 16,
        timeout: float | None = 60.0,
        retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        task_column: str = "task",
        progress: str | Callable[[BatchProgress], object] | None = "auto",
        output: str | os.PathLike[str] | None = None,
        part_size: int = 1000,
        shard: tuple[int, int] | None = None,
        key: Key = None,
        title: str | None = None,
        group: str | None = None,
        task_table: TaskTable | None = None,
        session: str | None = None,
    ) -> None:
        where = "Batch"
        if isinstance(make_agent, AssistantAgent):
            self._make: Callable[[object], AssistantAgent] = agent_copier(make_agent)
            self._template: AssistantAgent | None = make_agent
        elif callable(make_agent):
            self._make = make_agent
            self._template = None
        else:
            hint = HINT(make_agent, "agent") or ""  # AutoGen's own agents: nbagent.autogen.run(agent, task)
            raise check.wrong_type(
                where, "make_agent", "a function (task -> AssistantAgent) or an AssistantAgent", make_agent, hint
            )
        self.concurrency: int = _given(check.integer(where, "concurrency", concurrency, minimum=1))
        self.timeout = check.number(where, "timeout", timeout, positive=True, none=True)
        self.retries: int = _given(check.integer(where, "retries", retries, minimum=0))
        self.backoff: float = _given(check.number(where, "backoff", backoff, minimum=0))
        self.max_backoff: float = _given(check.number(where, "max_backoff", max_backoff, minimum=0))
        check.string(where, "task_column", task_column)
        if not (progress is None or callable(progress)):
            check.choice(where, "progress", progress, ["auto", "widget", "text"])
        self._progress_choice = progress
        self.part_size: int = _given(check.integer(where, "part_size", part_size, minimum=1))
        if shard is None:
            shard = (0, 1)
        if not (isinstance(shard, tuple) and len(shard) == 2 and all(type(v) is int for v in shard)):
            raise check.wrong_type(where, "shard", "a tuple (i, n) of two ints, or None", shard)
        if not (shard[1] >= 1 and 0 <= shard[0] < shard[1]):
            raise check.wrong_value(where, "shard", "(i, n) with n >= 1 and 0 <= i < n", shard)
        self.shard = shard
        if key is not None and not isinstance(key, str):
            check.function(where, "key", key, "a column name, a function (task -> key) or None")
        self._source = _Source(tasks, task_column, key, shard)
        self._group = check.string(where, "group", group, none=True)
        self._group_totals = self._totals_by_group()
        self.title = check.string(where, "title", title, none=True) or self._default_title()
        self.session = new_id() if session is None else _session(where, session)
        """This batch's session: its trace's id, and its folder in the output dataset."""
        self.output = None if output is None else Path(output)
        self._task_table = task_table
        tables = OWN_TABLES if task_table is None else ("attempts", task_table.name, "results")
        self._dataset = None if self.output is None else Dataset(self.output, self.session, tables)
        self._trace = Trace(trace_id=self.session)
        self._memory = _Part(0, self._trace)  # without output=: every run, every attempt
        self._rows: dict[int, _Row] = {}  # by position (in memory: every task; with output: the running ones)
        # With output=: (position, key) of each task skipped as done before (the rows of the tasks run
        # are read back from the folder, with their position): nothing else is kept per task.
        self._skipped_keys: list[tuple[int, str]] = []
        self._done_keys: set[str] = set()
        self._part: _Part | None = None
        self._unwritten: list[_Part] = []  # with output=: the parts not in the folder yet (read from memory)
        self._writes: list[asyncio.Future[None]] = []
        self._tokens: set[CancellationToken] = set()
        self._agents: weakref.WeakSet[AssistantAgent] = weakref.WeakSet()
        self._clients = PerTaskClients()  # a client make_agent made for one task is closed at its end
        self._state: Literal["new", "running", "done", "stopped", "failed"] = "new"
        self._stopping = False
        self._pause_until = 0.0  # no model call before this (monotonic): a server's Retry-After
        self._reset_counters()
        self._display: ProgressDisplay | None = None
        self._shown_in: int | None = None
        self._timer: asyncio.TimerHandle | None = None
        self._last_update = float("-inf")
        self._results_cache: Any = None

    def _totals_by_group(self) -> dict[str, int]:
        """The tasks of the shard per group (``group=``), in the order of the tasks."""
        group = self._group
        if group is None:
            return {}
        frame = self._source.frame
        if frame is None or group not in frame.columns:
            raise check.wrong_value("Batch", "group", "a column of the tasks DataFrame (tasks that are one)", group)
        positions = self._source.positions()
        assert positions is not None  # a DataFrame has a length
        values = frame[group].iloc[list(positions)].astype(str)
        counts = values.value_counts(sort=False)
        return {name: int(counts[name]) for name in values.unique()}

    def _default_title(self) -> str:
        name = self._template.name if self._template is not None else getattr(self._make, "__name__", "")
        if not name.isidentifier():  # a lambda
            name = "make_agent"
        total = self._source.total
        shard = "" if self.shard == (0, 1) else f" (shard {self.shard[0]} of {self.shard[1]})"
        return f"{name} over {'' if total is None else f'{total:,} '}tasks{shard}"

    def _reset_counters(self) -> None:
        self._counts = dict.fromkeys(STATUSES, 0)
        self._skipped = 0
        self._running = 0
        self._prompt_tokens = 0
        self._completion_tokens = 0
        self._durations = array("d")
        self._recent: deque[float] = deque(maxlen=LIVE_LATENCIES)
        self._last_errors: deque[tuple[str, str, str]] = deque(maxlen=LAST_ERRORS)
        self._groups = {name: [0, 0, 0] for name in self._group_totals}  # done, ok, failed
        self._started_perf = time.perf_counter()
        self._elapsed: float | None = None

    # ------------------------------------------------------------------ public state

    @property
    def total(self) -> int | None:
        """Tasks of the batch (its shard); ``None`` while an iterable has not been read to its end."""
        return self._source.total

    @property
    def state(self) -> str:
        """``new``, ``running``, ``done`` (every task ran), ``stopped`` or ``failed``."""
        return self._state

    @property
    def trace(self) -> Trace | LoadedTrace:
        """Every run of every task: the live :class:`~nbagent.Trace` (one trace, every agent recorded
        into it); with ``output=`` this session's runs read back from the folder (while the batch runs:
        the runs so far, those of the parts written read back and those of the parts in memory: its
        ``to_parquet`` leaves out the runs still going, as a live trace's does)."""
        if self._dataset is None:
            return self._trace
        loaded = self._dataset.trace(self.session, {part.number: part.trace for part in self._unwritten})
        loaded.records_runs = bool(self._unwritten)  # runs in memory: some may still be going
        return loaded

    @property
    def recorded(self) -> tuple[int, ...]:
        """What the batch has recorded so far: it changes whenever a run's rows or a written part do (what a
        live view of a batch with ``output=`` polls)."""
        if self._dataset is None:
            return (self._trace.store.epoch, len(self._trace))
        return (len(self._writes), *(n for part in self._unwritten for n in (part.number, len(part.trace))))

    @property
    def results(self) -> pd.DataFrame:
        """One row per task, in input order: :data:`RESULT_COLUMNS`, then the input DataFrame's columns."""
        if self._results_cache is None or self._state == "running":
            frame = self._build_results()
            if self._state == "running":
                return frame
            self._results_cache = frame
        return self._results_cache.copy()

    @property
    def failures(self) -> pd.DataFrame:
        """The rows of the tasks that did not end ok."""
        results = self.results
        return results[results["status"] != "ok"]

    def progress(self) -> BatchProgress:
        """Where the batch is now."""
        running = self._state == "running"
        elapsed = (time.perf_counter() - self._started_perf) if self._elapsed is None else self._elapsed
        latencies = sorted(self._recent if running else self._durations)
        state: Literal["running", "done", "stopped", "failed"] = (
            "running" if self._state == "new" or self._state == "running" else self._state
        )
        return BatchProgress(
            total=self.total,
            ok=self._counts["ok"],
            error=self._counts["error"],
            timeout=self._counts["timeout"],
            cancelled=self._counts["cancelled"],
            skipped=self._skipped,
            running=self._running,
            prompt_tokens=self._prompt_tokens,
            completion_tokens=self._completion_tokens,
            elapsed_s=elapsed,
            p50_s=_quantile(latencies, 0.5),
            p95_s=_quantile(latencies, 0.95),
            state=state,
            title=self.title,
            last_errors=tuple(self._last_errors),
            groups=tuple(
                GroupProgress(name, self._group_totals[name], *counts) for name, counts in self._groups.items()
            ),
        )

    def stop(self) -> None:
        """End the batch now: every run is cancelled where it is (its context stays valid), no task
        starts; ``run()`` returns with the finished rows, the others ``cancelled``. Safe from any thread."""
        self._stopping = True
        for token in list(self._tokens):
            token.cancel()

    # ------------------------------------------------------------------ running

    @entry_point("batch.run()", "batch.run_sync()")
    async def run(self) -> Batch:
        """Run every task (of the shard) not done yet; returns the batch once each has ended.

        Run again (or a new batch on the same ``output`` folder), it runs the tasks that did not end
        ok. Cancelled from outside (a kernel interrupt), it stops every run, keeps the rows, and the
        cancellation propagates.
        """
        if self._state == "running":
            raise RuntimeError("this batch is running: await it, or stop() it first")
        self._prepare()
        workers = [asyncio.ensure_future(self._worker()) for _ in range(self._worker_count())]
        failure: BaseException | None = None
        try:
            if workers:
                await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
                failure = _first_error(workers)
                if failure is not None:
                    self.stop()
                    await _settled(workers)
        except asyncio.CancelledError as error:
            self.stop()
            await _settled(workers)
            self._state = "stopped"
            explain_cancellation(
                error,
                "the batch was interrupted (the task awaiting it was cancelled: a kernel interrupt, Ctrl-C, "
                "task.cancel() or a timeout); the tasks that ended are in batch.results, and `await batch.run()` "
                "again runs the others",
            )
            raise
        except BaseException as error:  # a KeyboardInterrupt in the loop
            failure = error
            self.stop()
            await _settled(workers)
            raise
        finally:
            if self._state == "running":  # type: ignore[comparison-overlap]  # (set in _prepare)
                self._state = "failed" if failure is not None else "stopped" if self._stopping else "done"
            await self._finish()
        if failure is not None:
            raise failure
        return self

    def run_sync(self) -> Batch:
        """:meth:`run` without ``await``: in a script, and inside a notebook cell (the kernel's loop)."""
        return run_coroutine(
            self.run,
            "the batch was interrupted (Ctrl-C or a kernel interrupt); the tasks that ended are in batch.results, "
            "and batch.run_sync() again runs the others",
        )

    def _worker_count(self) -> int:
        total = self._source.total
        return self.concurrency if total is None else min(self.concurrency, total)

    def _prepare(self) -> None:
        self._state = "running"
        self._stopping = False
        self._results_cache = None
        self._reset_counters()
        done = {key for key, row in ((r.key, r) for r in self._rows.values()) if row.status == "ok"}
        if self._dataset is not None:
            done |= self._dataset.committed_tasks()
        self._done_keys = done
        if self._source.read:  # run again: read the tasks again from the start
            self._source = self._source.again()
        self._skipped_keys = []
        self._open_display()

    async def _worker(self) -> None:
        tasks = iter(self._source)
        while not self._stopping:
            if len(self._writes) > PENDING_PARTS:  # the writer is behind: wait for it, so memory stays flat
                await self._wait_for_writes()
                continue
            task = next(tasks, None)
            if task is None:
                return
            if task.key in self._done_keys:
                self._skip(task)
                continue
            await self._run_task(task)

    def _group_of(self, task: _Task) -> str | None:
        return None if self._group is None else str(task.arg[self._group])  # type: ignore[index]

    def _skip(self, task: _Task) -> None:
        self._skipped += 1
        if self._group is not None:
            self._groups[str(self._group_of(task))][0] += 1
        if self._dataset is not None:
            self._skipped_keys.append((task.position, task.key))
        self._changed()

    # ------------------------------------------------------------------ one task

    async def _run_task(self, task: _Task) -> None:
        row = _Row(task, self.session)
        row.group = self._group_of(task)
        self._rows[task.position] = row
        row.started_at = time.time()
        start = time.perf_counter()
        deadline = None if self.timeout is None else start + self.timeout
        token = CancellationToken()
        timed_out: list[bool] = []
        timer = (
            None
            if self.timeout is None
            else asyncio.get_running_loop().call_later(self.timeout, _expire, token, timed_out)
        )
        self._tokens.add(token)
        if self._stopping:
            token.cancel()
        self._running += 1
        self._changed()
        part = self._current_part()
        part.open += 1
        part.started += 1
        if self._dataset is not None and part.started >= self.part_size:
            part.sealed = True  # the next task starts a new part
        agent: AssistantAgent | None = None
        recorders: list[Any] = []
        outer = OUTER_RETRIES.set(True)  # this batch retries the task's runs: its client sends each call once
        try:
            messages = _task_messages(task)
            agent = self._new_agent(task)
            recorders = list(agent.recorders)
            agent.recorders[:] = [r for r in recorders if r is not agent.trace]  # recorded in the batch's trace
            part.trace.attach(agent)
            await self._attempts_of(agent, messages, row, part, token, deadline, timed_out)
        except asyncio.CancelledError:
            task_now = asyncio.current_task()
            row.status = "timeout" if timed_out else "cancelled"
            row.error = self._ending(bool(timed_out))
            if task_now is not None and task_now.cancelling():
                raise  # the worker itself is cancelled (the batch's run was): the row is kept
        except MakeAgentError as error:
            row.status = "error"
            row.error = str(error)
        except Exception as error:  # the task, the model, a retry given up: a row, not the end of the batch
            row.status = "error"
            row.error = _error_text(error)
        finally:
            OUTER_RETRIES.reset(outer)
            if timer is not None:
                timer.cancel()
            self._tokens.discard(token)
            if agent is not None:
                part.trace.detach(agent)
                agent.recorders[:] = recorders
            row.mask(process_secrets(agent.secrets if agent is not None else ()))
            duration = time.perf_counter() - start
            if self._task_table is not None:
                await self._table_row(task, row, part, duration)
            self._end_row(row, duration, part)
            if agent is not None:
                await self._clients.end(agent.model_client)

    async def _table_row(self, task: _Task, row: _Row, part: _Part, duration: float) -> None:
        """Give the task table the task that ended; its row goes in the part (with output=)."""
        assert self._task_table is not None
        token = CancellationToken()
        self._tokens.add(token)
        if self._stopping:
            token.cancel()
        tokens = None if row.prompt_tokens is None else row.prompt_tokens + (row.completion_tokens or 0)
        end = TaskEnd(
            task.arg, row.key, row.position, row.status, row.answer, row.error, row.run_id, part.trace, tokens,
            row.tool_calls, row.tool_errors, duration, token,
        )  # fmt: skip
        try:
            record = await self._task_table.row(end)
        finally:
            self._tokens.discard(token)
        part.extra.append(record)

    def _ending(self, timed_out: bool) -> str:
        """The error of a task that timed out or was cancelled."""
        if timed_out:
            return f"TimeoutError: the task ran past its timeout ({self.timeout:g} s)"
        return "CancelledError: the batch was stopped" if self._stopping else "CancelledError: the run was cancelled"

    def _new_agent(self, task: _Task) -> AssistantAgent:
        try:
            agent = self._make(task.arg)
        except Exception as error:
            raise MakeAgentError(f"make_agent raised {_error_text(error)}") from error
        if not isinstance(agent, AssistantAgent):
            raise MakeAgentError(f"make_agent returned {check.given(agent)}, not an AssistantAgent")
        if agent in self._agents or agent.is_running:
            raise MakeAgentError(
                f"Batch: make_agent returned the agent {agent.name!r} that another task of this batch ran on: "
                "each task needs a fresh agent (runs must not share a context); build a new one in make_agent, "
                "or pass an AssistantAgent as make_agent to copy it for each task"
            )
        self._agents.add(agent)
        self._clients.begin(agent.model_client)
        return agent

    async def _attempts_of(
        self,
        agent: AssistantAgent,
        messages: list[BaseChatMessage],
        row: _Row,
        part: _Part,
        token: CancellationToken,
        deadline: float | None,
        timed_out: list[bool],
    ) -> None:
        wait = 0.0
        while True:
            pause = self._pause_until - time.monotonic()
            if pause > 0:  # a server asked every client to wait
                wait += pause
                await guarded(asyncio.sleep(pause), token)
            row.attempts += 1
            run = agent.iter(messages if row.attempts == 1 else [], token, chunk_events=False)
            row.run_id = run.run_id
            try:
                response = await self._consume(run, row)
            except asyncio.CancelledError:
                self._attempt(row, part, "timeout" if timed_out else "cancelled", self._ending(bool(timed_out)), wait)
                raise
            except RETRIED as error:
                self._attempt(row, part, "error", _error_text(error), wait)
                delay = self._delay(row.attempts, error)
                if row.attempts > self.retries:
                    raise
                if deadline is not None and time.perf_counter() + delay >= deadline:
                    raise type(error)(
                        f"{error} (not retried: the wait of {delay:.1f} s would pass the task's timeout)",
                        status=error.status,
                        model=error.model,
                        retry_after=error.retry_after,
                    ) from error
                if error.retry_after is not None:
                    self._pause_until = max(self._pause_until, time.monotonic() + delay)
                wait = delay
                await guarded(asyncio.sleep(delay), token)
                continue
            except Exception as error:
                self._attempt(row, part, "error", _error_text(error), wait)
                raise
            self._attempt(row, part, "ok", None, wait)
            row.status = "ok"
            message = response.chat_message
            row.answer = message.to_text()
            if isinstance(message, ToolCallSummaryMessage):
                row.stop_reason = "tool_summary"
            elif isinstance(message, HandoffMessage):
                row.stop_reason = "handoff"
            return

    def _delay(self, attempt: int, error: ModelRateLimitError | ModelServerError) -> float:
        if error.retry_after is not None:  # the server's wait, at most max_backoff (the task's timeout: below)
            return min(float(error.retry_after), self.max_backoff)
        base: float = min(self.max_backoff, self.backoff * 2 ** (attempt - 1))
        return base * (0.5 + random.random() / 2)

    async def _consume(self, run: AsyncIterator[Any], row: _Row) -> Response:
        calls: list[LLMCall] = []
        tools: list[ToolExecution] = []
        response: Response | None = None
        try:
            async for item in run:
                kind = type(item)
                if kind is LLMCall:
                    calls.append(item)
                elif kind is ToolExecution:
                    row.tool_calls += 1
                    tools.append(item)
                elif kind is Response:
                    response = item
        finally:
            await run.aclose()  # type: ignore[attr-defined]
            self._count_calls(calls, row)
            row.tool_errors = sum(1 for tool in tools if tool.result is not None and tool.result.is_error)
        assert response is not None, "a run ended without a Response"
        last = calls[-1].result if calls else None
        if last is not None:
            row.stop_reason = last.finish_reason
        return response

    def _count_calls(self, calls: list[LLMCall], row: _Row) -> None:
        row.llm_calls += len(calls)
        for call in calls:
            result = call.result
            if result is None or isinstance(result.usage, UnreportedUsage):
                continue
            usage = result.usage
            row.prompt_tokens = (row.prompt_tokens or 0) + usage.prompt_tokens
            row.completion_tokens = (row.completion_tokens or 0) + usage.completion_tokens
            self._prompt_tokens += usage.prompt_tokens
            self._completion_tokens += usage.completion_tokens

    def _attempt(self, row: _Row, part: _Part, status: str, error: str | None, wait: float) -> None:
        error = None if error is None else mask(error, process_secrets())
        part.attempts.append((row.position, row.key, row.attempts, row.run_id or "", status, error, wait, self.session))

    def _end_row(self, row: _Row, duration: float, part: _Part) -> None:
        row.ended_at = time.time()
        row.duration_s = duration
        self._running -= 1
        self._counts[row.status] += 1
        if row.group is not None:
            counts = self._groups[row.group]
            counts[0] += 1
            counts[1] += row.status == "ok"
            counts[2] += row.status in ("error", "timeout")
        if row.status != "ok":
            self._last_errors.append((_short(row.task, 80), row.status, _short(row.error or row.status, 200)))
        if row.attempts:
            self._durations.append(row.duration_s)
            self._recent.append(row.duration_s)
        part.open -= 1
        if self._dataset is not None:
            del self._rows[row.position]
            part.rows.append(row)
            if part.sealed and part.open == 0:
                self._write(part)
        self._changed()

    # ------------------------------------------------------------------ parts (output=)

    def _current_part(self) -> _Part:
        """The part a task starting now records into (in memory: the one part, the batch's trace)."""
        if self._dataset is None:
            return self._memory
        part = self._part
        if part is None or part.sealed:
            part = self._part = _Part(self._dataset.new_number(), Trace(trace_id=self.session))
            self._unwritten.append(part)
        return part

    def _write(self, part: _Part) -> None:
        if self._part is part:
            self._part = None
        dataset = self._dataset
        assert dataset is not None
        tables = _part_tables(part, self._task_table)
        written = asyncio.ensure_future(asyncio.to_thread(dataset.commit, part.number, part.trace, tables))
        written.add_done_callback(lambda done: self._written(done, part))
        self._writes.append(written)

    def _written(self, written: asyncio.Future[None], part: _Part) -> None:
        if written.cancelled() or written.exception() is not None:
            return  # a failed write stays, and raises at the end of the run
        if written in self._writes:
            self._writes.remove(written)
        if part in self._unwritten:  # in the folder now: read from there
            self._unwritten.remove(part)

    async def _wait_for_writes(self) -> None:
        oldest = self._writes[0]
        await asyncio.shield(oldest)
        if oldest in self._writes:  # it failed: raise now rather than run tasks nobody can save
            self._writes.remove(oldest)
            oldest.result()

    async def _finish(self) -> None:
        self._elapsed = time.perf_counter() - self._started_perf
        if self._dataset is not None:
            part = self._part
            if part is not None and (part.rows or part.attempts):
                part.sealed = True
                self._write(part)
            self._part = None
            writes, self._writes = self._writes, []
            if writes:
                await asyncio.gather(*writes)
        self._close_display()

    # ------------------------------------------------------------------ progress

    def _open_display(self) -> None:
        choice = self._progress_choice
        if choice is None:
            self._display = None
            return
        if callable(choice):
            self._display = _CallbackDisplay(choice)
            return
        if choice == "auto":
            choice = "widget" if _in_kernel() else "text" if _stderr_is_terminal() else None
            if choice is None:
                self._display = None
                return
        factory = _DISPLAYS.get(choice) if choice != "text" else TextProgress
        if factory is None:
            raise RuntimeError(f"Batch: no progress display {choice!r} is registered")
        self._display = factory(self)

    def _changed(self) -> None:
        """Something changed: update the display now if the last update is 1/10 s old, else soon."""
        if self._display is None or self._timer is not None:
            return
        now = time.monotonic()
        wait = 1 / UPDATES_PER_SECOND - (now - self._last_update)
        if wait <= 0:
            self._update()
        else:
            self._timer = asyncio.get_running_loop().call_later(wait, self._update)

    def _update(self) -> None:
        self._timer = None
        self._last_update = time.monotonic()
        if self._display is not None:
            self._display.update(self.progress())

    def _close_display(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        display, self._display = self._display, None
        if display is not None:
            self._shown_in = getattr(display, "shown_in", None)  # the cell its view is in (_ipython_display_)
            display.finish(self.progress())

    # ------------------------------------------------------------------ results

    def _check_not_running(self, what: str) -> None:
        if self._state == "running" and self._dataset is not None:
            raise RuntimeError(f"Batch.{what}: with output= it is read from the folder once the batch has ended")

    def _build_results(self) -> pd.DataFrame:
        import pandas as pd

        positions = self._source.positions()
        if self._dataset is None:
            rows = self._rows
            order = list(positions) if positions is not None else sorted(rows)
            records = [(rows.get(p) or _Row(self._source.task_at(p), self.session)).values() for p in order]
            data = {name: [record[i] for record in records] for i, name in enumerate(RESULT_COLUMNS)}
            results = _frame(RESULT_COLUMNS, data)
        else:
            order, results = self._stored_results(positions)
        if self._source.index is not None:
            results.index = self._source.index[order]
        else:
            results.index = pd.Index(order, dtype="int64")
        frame = self._source.frame
        if frame is not None:
            inputs = frame.iloc[order].drop(columns=[self._source.column])
            inputs.columns = [f"{c}_input" if c in RESULT_COLUMNS else c for c in inputs.columns]
            results = pd.concat([results, inputs.set_axis(results.index)], axis=1)
        return results

    def _stored_results(self, positions: range | None) -> tuple[list[int], Any]:
        """With output=: the shard's rows read from the folder (each task's ok row, else its latest),
        and a ``cancelled`` row for each task that never ran; in input order."""
        import pandas as pd

        assert self._dataset is not None
        self._check_not_running("results")
        stored = _read_table(self._dataset, "results", RESULT_COLUMNS)
        mine = stored[stored["session"] == self.session]
        known = dict(zip(mine["task_key"].tolist(), mine["task_index"].tolist()))
        known.update((key, position) for position, key in self._skipped_keys)
        order = list(positions) if positions is not None else sorted(set(known.values()))
        stored = stored[stored["task_key"].isin(list(known))]
        ranked = stored.assign(_ok=(stored["status"] == "ok").astype(int))
        ranked = ranked.sort_values(["_ok", "ended_at"], na_position="first", kind="stable")
        latest = ranked.drop_duplicates("task_key", keep="last").drop(columns=["_ok", "task_index"])
        latest.index = pd.Index(latest["task_key"].map(known).astype("int64"))
        missing = [p for p in order if p not in latest.index]
        blank = [_Row(self._source.task_at(p), self.session).values() for p in missing]
        filler = _frame(RESULT_COLUMNS, {name: [r[i] for r in blank] for i, name in enumerate(RESULT_COLUMNS)})
        filler.index = pd.Index(missing, dtype="int64")
        combined = pd.concat([latest, filler]) if len(filler) else latest
        combined = combined.reindex(order)
        typed = _frame(RESULT_COLUMNS, {name: combined[name].tolist() for name in RESULT_COLUMNS})
        return order, typed

    def attempts_df(self) -> pd.DataFrame:
        """One row per run of a task (an attempt): its ``run_id``, status, error and the wait before it
        (an attempt is recorded as it ends; with ``output=``, while the batch runs: those of the parts
        written, read back, and those of the parts in memory)."""
        if self._dataset is None:
            attempts = self._memory.attempts
        else:
            unwritten = list(self._unwritten)
            stored = _read_table(self._dataset, "attempts", ATTEMPT_COLUMNS, self.session, _numbers(unwritten))
            attempts = [attempt for part in unwritten for attempt in part.attempts]
            if not attempts:
                return stored
            if len(stored):
                attempts = [*stored.itertuples(index=False, name=None), *attempts]
        data = {name: [a[i] for a in attempts] for i, name in enumerate(ATTEMPT_COLUMNS)}
        return _frame(ATTEMPT_COLUMNS, data)

    def with_tasks(self, frame: pd.DataFrame) -> pd.DataFrame:
        """``frame`` (rows of the trace's frames) with each row's ``task_index``, ``task_key`` and
        ``attempt`` (null for a run of no attempt recorded yet: an attempt is recorded as it ends)."""
        return _with_tasks(frame, self.attempts_df())

    def follow(self) -> DatasetFollower:
        """What a live view of this batch reads at each update: the runs new or changed since the last,
        with their task (:class:`~nbagent.trace.dataset.DatasetFollower`: with ``output=``, the parts in
        memory followed row by row and each written part read once at most; without, the batch's trace)."""
        parts = (lambda: list(self._unwritten)) if self._dataset is not None else (lambda: [self._memory])
        return DatasetFollower(self._dataset, parts, "attempts", list(ATTEMPT_COLUMNS), _runs_with_tasks)

    def events_df(self, include_chunks: bool = True) -> pd.DataFrame:
        """The trace's events with each row's ``task_index``, ``task_key`` and ``attempt``."""
        return self.with_tasks(self.trace.events_df(include_chunks))

    def llm_calls_df(self) -> pd.DataFrame:
        """The trace's LLM calls with each row's ``task_index``, ``task_key`` and ``attempt``."""
        return self.with_tasks(self.trace.llm_calls_df())

    def tool_calls_df(self) -> pd.DataFrame:
        """The trace's tool calls with each row's ``task_index``, ``task_key`` and ``attempt``."""
        return self.with_tasks(self.trace.tool_calls_df())

    def runs_df(self) -> pd.DataFrame:
        """The trace's runs with each row's ``task_index``, ``task_key`` and ``attempt``."""
        return self.with_tasks(self.trace.runs_df())

    def __repr__(self) -> str:
        return f"Batch({self.progress().line()})"

    def _ipython_display_(self) -> None:
        """As a cell's last value (``await batch.run()``): nothing under its progress view shown in that
        same cell, else its one-line repr (the notebook layer's :func:`register_cell_display`)."""
        for show in _CELL_DISPLAYS:
            show(self, getattr(self._display, "shown_in", self._shown_in))


def _with_tasks(frame: pd.DataFrame, attempts: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with each row's ``task_index``, ``task_key`` and ``attempt`` from ``attempts`` (rows of
    :data:`ATTEMPT_COLUMNS`)."""
    keys = attempts[["run_id", "task_index", "task_key", "attempt"]].rename(columns={"run_id": "_run"})
    keys = keys.astype({"_run": "string"})
    # one run_id column, the trace's (pandas 3 names a merge key given as an array after the Series)
    merged = frame.assign(_run=frame["run_id"].astype("string")).merge(keys, how="left", on="_run")
    return merged.drop(columns="_run")


def _runs_with_tasks(runs: pd.DataFrame, attempts: list[AttemptRow]) -> pd.DataFrame:
    """``runs`` with each run's ``task_index``, ``task_key`` and ``attempt`` from ``attempts``."""
    return _with_tasks(
        runs, _frame(ATTEMPT_COLUMNS, {name: [a[i] for a in attempts] for i, name in enumerate(ATTEMPT_COLUMNS)})
    )


def _numbers(parts: Sequence[_Part]) -> frozenset[int]:
    return frozenset(part.number for part in parts)


def _session(where: str, session: object) -> str:
    """A session id given to a batch: a str that can name a folder (ValueError naming ``session``)."""
    try:
        return check_session(_given(check.string(where, "session", session)))
    except ValueError:
        expected = f"an id that can name a folder (letters, digits, '.', '_' or '-'; at most {MAX_ID})"
        raise check.wrong_value(where, "session", expected, session) from None


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _given(value: T | None) -> T:
    """A checked argument that cannot be None (the check allowed none)."""
    assert value is not None
    return value


def _quantile(values: Sequence[float], q: float) -> float | None:
    """The ``q`` quantile of sorted ``values`` (linear between the closest ranks); ``None`` if empty."""
    if not values:
        return None
    position = (len(values) - 1) * q
    low = int(position)
    high = min(low + 1, len(values) - 1)
    return values[low] + (values[high] - values[low]) * (position - low)


def _task_messages(task: _Task) -> list[BaseChatMessage]:
    """A task's messages: a str, a chat message or a non-empty list of them (``TypeError`` otherwise)."""
    where = f"Batch: the task at position {task.position}"
    value = task.value
    if value is None or (isinstance(value, (list, tuple)) and not value):
        raise check.wrong_type(where, "task", "a str, a chat message or a non-empty list of chat messages", value)
    return task_messages(value, where)  # type: ignore[arg-type]


def _expire(token: CancellationToken, timed_out: list[bool]) -> None:
    if not token.is_cancelled():
        timed_out.append(True)
        token.cancel()


def _stderr_is_terminal() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False


def _first_error(workers: Sequence[asyncio.Future[None]]) -> BaseException | None:
    """The error of the first worker that failed (in order), every ended worker's error retrieved: a batch
    that fails (a full disk) raises one error and leaves no "Task exception was never retrieved"."""
    errors = [w.exception() for w in workers if w.done() and not w.cancelled()]
    return next((error for error in errors if error is not None), None)


async def _settled(workers: Sequence[asyncio.Future[None]]) -> None:
    """Wait for every worker to end, and retrieve the errors of those that failed (the first one is raised)."""
    if workers:
        await asyncio.wait(workers)
        _first_error(workers)


@entry_point("nbagent.run_many(make_agent, tasks)")
async def run_many(make_agent: MakeAgent, tasks: object, **options: Any) -> Batch:
    """``Batch(make_agent, tasks, **options)`` run to its end: ``batch = await nbagent.run_many(...)``."""
    batch = Batch(make_agent, tasks, **options)
    return await batch.run()
