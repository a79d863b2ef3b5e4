"""Traces: every run an agent makes, kept for analysis as pandas DataFrames, views and exports.

A :class:`Trace` holds the rows its recorders (:mod:`nbagent.recording`) append and builds the
frames from them: ``events_df``, ``llm_calls_df``, ``tool_calls_df``, ``runs_df``, the context at
any point (``context_df``), ``summary`` and a timeline.

Redaction happens when rows are built: every string that reaches a DataFrame, and so every export,
goes through the trace's redaction hook first (by default API keys, bearer tokens and
``Authorization`` values are masked, also when a key is split over several streamed chunks).
pandas is imported only when a DataFrame is asked for. Column names and dtypes: :data:`COLUMNS`.
"""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._ids import new_id
from ..context import estimate_tokens, message_text
from ..messages import (
    AssistantMessage,
    BaseAgentEvent,
    BaseChatMessage,
    FunctionCall,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelClientStreamingChunkEvent,
    Response,
    SystemMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from ..records import MOVES, LLMCall, Move, RunFinished, RunItem, RunStarted, ToolExecution
from ..redact import REDACTED, known_secrets, redact, redact_data
from .recording import NOWHERE, STEPS, AgentRecorder

if TYPE_CHECKING:
    import pandas as pd

    from ..agent import AssistantAgent
    from .timeline import Timeline

Redactor = Callable[[str], str]

_AUTHORIZATION = re.compile(
    r"""(\b(?:proxy-)?authorization["']?\s*[:=]\s*["']?)((?:bearer|basic|token)\s+)?(?!\[REDACTED\])[^\s"',;}]+""",
    re.IGNORECASE,
)
# An API key given by name (``api-key:`` and ``X-Api-Key:`` headers, ``api_key=``...): values of 8+ characters.
_API_KEY = re.compile(
    r"""(\b(?:[a-z0-9]+[-_])*api[-_]?key["']?\s*[:=]\s*["']?)(?!\[REDACTED\])[^\s"',;}]{8,}""",
    re.IGNORECASE,
)


def _mask_value(match: re.Match[str]) -> str:
    return match.group(1) + REDACTED


class DefaultRedactor:
    """Masks API keys (``sk-...``, the keys set in the environment and those of the recorded agents'
    clients), bearer tokens, ``Authorization`` values and values given as ``api-key``; in parsed tool
    arguments also the values of secret-named keys."""

    def __init__(self, extra: Iterable[str] = ()) -> None:
        self.secrets = known_secrets(extra)

    def __call__(self, text: str) -> str:
        lowered = text.lower()  # the patterns only where their words are: a scan costs 25-45 us per KB
        if "authorization" in lowered:
            text = _AUTHORIZATION.sub(_mask_value, text)
        if "api" in lowered and "key" in lowered:
            text = _API_KEY.sub(_mask_value, text)
        return redact(text, self.secrets)


# table -> column -> (dtype, meaning). The frames are built with exactly these columns and dtypes.
COLUMNS: dict[str, dict[str, tuple[str, str]]] = {
    "events": {
        "trace_id": ("category", "id of the trace (one per session), to tell traces apart in a folder"),
        "run_id": ("category", "id of the run the item belongs to"),
        "agent": ("category", "name of the agent that ran it"),
        "seq": ("Int64", "position of the item in its run, from 0 (RunStarted)"),
        "kind": ("category", "Move, LLMCall, ToolExecution, RunStarted, RunFinished, Response or the event type"),
        "step": ("Int64", "STEP 1-5 of the loop, from the item's move or the move before it"),
        "move": ("category", "name of that move (records.MOVES)"),
        "iteration": ("Int64", "tool-loop iteration, from 0"),
        "event_id": ("string", "id of the event or message (null for records)"),
        "message_id": ("string", "id of the message the item builds or is (chunks: full_message_id)"),
        "source": ("category", "who produced the event"),
        "text": ("string", "content as text, redacted"),
        "prompt_tokens": ("Int64", "models_usage.prompt_tokens of the event"),
        "completion_tokens": ("Int64", "models_usage.completion_tokens of the event"),
        "timestamp": (
            "datetime64[ns, UTC]",
            "wall-clock time the item was recorded (a record's own start or end), to the us",
        ),
        "elapsed_s": ("float64", "monotonic seconds since the run started"),
    },
    "llm_calls": {
        "trace_id": ("category", "id of the trace"),
        "run_id": ("category", "id of the run"),
        "agent": ("category", "name of the agent"),
        "call_index": ("Int64", "position of the call in its run, from 0"),
        "iteration": ("Int64", "tool-loop iteration the call belongs to (a reflection: the last, which it follows)"),
        "purpose": ("category", "initial, tool_loop or reflection"),
        "model": ("category", "model name"),
        "provider": ("category", "who serves the model, as its client knows it (gen_ai.provider.name)"),
        "message_id": ("string", "id of the message the answer becomes"),
        "streaming": ("boolean", "whether the call was streamed"),
        "n_messages": ("Int64", "messages sent (system messages included)"),
        "n_tools": ("Int64", "tools offered"),
        "tool_choice": ("category", "auto, none, required or a tool name"),
        "started_at": ("datetime64[ns, UTC]", "when the call started"),
        "ttft_s": ("float64", "seconds to the first streamed text chunk (NaN: not streamed, or tool calls only)"),
        "duration_s": ("float64", "seconds the call took (NaN if it never ended)"),
        "prompt_tokens": ("Int64", "usage.prompt_tokens (gen_ai.usage.input_tokens)"),
        "completion_tokens": ("Int64", "usage.completion_tokens (gen_ai.usage.output_tokens)"),
        "finish_reason": ("category", "stop, function_calls, length, content_filter or unknown"),
        "cached": ("boolean", "the answer came from a cache"),
        "has_thought": ("boolean", "the model returned reasoning"),
        "n_tool_calls": ("Int64", "tool calls in the answer"),
        "status": ("category", "ok, error or running (never ended)"),
        "error": ("string", "the error, when the call failed"),
        "response_text": ("string", "the text answer (or the calls as name(arguments)), redacted"),
    },
    "tool_calls": {
        "trace_id": ("category", "id of the trace"),
        "run_id": ("category", "id of the run"),
        "agent": ("category", "name of the agent"),
        "iteration": ("Int64", "tool-loop iteration"),
        "batch_size": ("Int64", "calls the model requested at once"),
        "call_id": ("string", "id of the call (gen_ai.tool.call.id)"),
        "tool_name": ("category", "name of the tool (gen_ai.tool.name)"),
        "arguments": ("object", "arguments parsed from JSON (a dict; the raw string if it is not JSON)"),
        "result": ("string", "the result text, redacted"),
        "is_error": ("boolean", "the call gave an error result (null if it never ended)"),
        "started_at": ("datetime64[ns, UTC]", "when the call started"),
        "duration_s": ("float64", "seconds the call took"),
        "concurrent_with": ("Int64", "how many calls of the run ran at once with it, itself included"),
    },
    "runs": {
        "trace_id": ("category", "id of the trace"),
        "run_id": ("category", "id of the run"),
        "agent": ("category", "name of the agent"),
        "status": ("category", "ok, error, cancelled or running"),
        "error": ("string", "the error, when the run failed"),
        "started_at": ("datetime64[ns, UTC]", "when the run started"),
        "ended_at": ("datetime64[ns, UTC]", "when it ended (null while running)"),
        "duration_s": ("float64", "seconds it took"),
        "task": ("string", "the new messages of the run as text, redacted"),
        "final_type": ("category", "type of the final message"),
        "final_text": ("string", "the final message as text, redacted"),
        "n_events": ("Int64", "items recorded, records and chunks included"),
        "n_chunks": ("Int64", "streamed chunks"),
        "n_llm_calls": ("Int64", "model calls"),
        "n_tool_calls": ("Int64", "tool calls"),
        "n_tool_errors": ("Int64", "tool calls with an error result"),
        "prompt_tokens": ("Int64", "prompt tokens over the run's model calls"),
        "completion_tokens": ("Int64", "completion tokens over the run's model calls"),
    },
    "context": {
        "position": ("Int64", "index in the model context"),
        "kind": ("category", "system, user, assistant or tool_result"),
        "source": ("category", "who wrote the message"),
        "text": ("string", "the message as the model reads it, redacted"),
        "tool_calls": ("object", "assistant tool calls as [{id, name, arguments}] (None otherwise)"),
        "thought": ("string", "the model's reasoning, redacted"),
        "tokens": ("Int64", "estimated tokens (nbagent.context.estimate_tokens)"),
        "run_id": ("category", "the run that added the message (null: added outside a run)"),
        "step": ("Int64", "the STEP that added it"),
        "move": ("category", "the move that added it"),
    },
}
# The context snapshots as exported: each message log once, each snapshot as a prefix of one.
COLUMNS["context_logs"] = {
    "trace_id": ("category", "id of the trace"),
    "log": ("Int64", "id of the log: a context's messages in order, only ever appended to"),
    **COLUMNS["context"],
}
COLUMNS["snapshots"] = {
    "trace_id": ("category", "id of the trace"),
    "agent": ("category", "the agent whose context it is"),
    "event_row": ("Int64", "row in events_df (chunks included) of the first item that saw this context"),
    "log": ("Int64", "the log (context_logs.log) the context was a prefix of"),
    "length": ("Int64", "the context then: the log's first length messages"),
}
TABLES = ("events", "llm_calls", "tool_calls", "runs")
CONTEXT_TABLES = ("context_logs", "snapshots")  # exported with TABLES; they give context_df after a load
JSON_COLUMNS = {"tool_calls": ("arguments",), "context": ("tool_calls",), "context_logs": ("tool_calls",)}

_CHUNK = ModelClientStreamingChunkEvent
_CHUNK_KIND = "ModelClientStreamingChunkEvent"


def _text(value: str | None, red: Redactor) -> str | None:
    return None if value is None else red(value)


def _arguments_text(raw: str, red: Redactor) -> str:
    """A call's argument text, redacted; values of secret-named keys masked too (then re-serialised)."""
    if isinstance(red, DefaultRedactor):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError:
            return red(raw)
        masked = redact_data(value, red.secrets)
        if masked != value:
            return red(json.dumps(masked, ensure_ascii=False))
    return red(raw)


def _calls_text(calls: Sequence[FunctionCall], red: Redactor) -> str:
    return "\n".join(f"{red(call.name)}({_arguments_text(call.arguments, red)})" for call in calls)


def _event_text(item: BaseAgentEvent | BaseChatMessage, red: Redactor) -> str:
    if type(item) is ToolCallRequestEvent:
        return _calls_text(item.content, red)
    if type(item) is ToolCallExecutionEvent:
        return "\n".join(result.content for result in item.content)
    return item.to_text()


def _redact_json(value: Any, red: Redactor) -> Any:
    if isinstance(value, str):
        return red(value)
    if isinstance(value, dict):
        return {key: _redact_json(item, red) for key, item in value.items()}
    if isinstance(value, list):
        return [_redact_json(item, red) for item in value]
    return value


def _parse_arguments(raw: str, red: Redactor) -> Any:
    """Tool arguments as parsed JSON with every string redacted; the raw text if it is not JSON."""
    try:
        value = json.loads(raw) if raw.strip() else {}
    except json.JSONDecodeError:
        return red(raw)
    if isinstance(red, DefaultRedactor):
        value = redact_data(value, red.secrets)
    return _redact_json(value, red)


def _identity(text: str) -> str:
    return text


def frame(table: str, data: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """A DataFrame of ``table`` with the columns and dtypes of :data:`COLUMNS` (times to the microsecond)."""
    import pandas as pd

    columns = COLUMNS[table]
    out: dict[str, Any] = {}
    for name, (dtype, _) in columns.items():
        values = data[name]
        if dtype == "object":
            out[name] = pd.Series(list(values), dtype="object")
        elif dtype == "category":  # categories of text, also when every value is null (else float64)
            out[name] = pd.Series(values, dtype="object").astype("category")
        elif dtype.startswith("datetime64"):  # to the microsecond: what Parquet readers all take (Spark)
            times = pd.to_datetime(values, utc=True, format="ISO8601")  # text: any ISO 8601 (JSON lines)
            out[name] = pd.Series(times).astype(dtype).dt.floor("us")
        else:
            out[name] = pd.Series(values, dtype=dtype)
    return pd.DataFrame(out, columns=list(columns))


class TraceFrames(ABC):
    """Views and exports shared by a live :class:`Trace` and a loaded one (``trace_export.LoadedTrace``)."""

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

    def summary(self) -> pd.Series:
        """Runs, LLM calls, tokens, tool error rate and p50/p95 latencies at a glance."""
        from .export import summarize

        return summarize(self.runs_df(), self.llm_calls_df(), self.tool_calls_df())

    def timeline(self, run_id: str | None = None) -> Timeline:
        """A run's LLM calls and tool calls on a time axis (the last run by default), as HTML/SVG."""
        from .timeline import Timeline

        return Timeline.of(self.runs_df(), self.llm_calls_df(), self.tool_calls_df(), run_id)

    def to_parquet(self, folder: str | Path) -> Path:
        """Write the tables as ``folder/<table>.parquet`` (the four frames and the context snapshots);
        ``trace_export.load_parquet`` reads them."""
        from .export import write_parquet

        return write_parquet(self, folder)

    def to_jsonl(self, path: str | Path) -> Path:
        """Write every row of the tables (the context ones included) as one JSON line with a ``table`` field."""
        from .export import write_jsonl

        return write_jsonl(self, path)

    def to_otlp_json(self, path: str | Path | None = None) -> dict[str, Any]:
        """OTLP-JSON spans (one per run, LLM call and tool call) with gen_ai.* attributes."""
        from .export import otlp_json

        document = otlp_json(self)
        if path is not None:
            Path(path).write_text(json.dumps(document), encoding="utf-8")
        return document

    def _repr_html_(self) -> str:
        from .views import summary_html

        return summary_html(self)


class Trace(TraceFrames):
    """Every item of every run of the agents it records, with DataFrames, views and exports.

    Each agent has one (``agent.trace``). To gather several agents' runs in one trace, use
    ``trace.attach(agent)`` / ``trace.detach(agent)`` or ``with trace.recording(a, b): ...``.
    ``redact`` maps every stored string before it reaches a frame or a file (``None``: keep as is).
    """

    def __init__(
        self,
        *,
        owner: AssistantAgent | None = None,
        redact: Redactor | None | str = "default",
        trace_id: str | None = None,
    ) -> None:
        self.trace_id = trace_id or new_id()
        # One row per item (see the module's docstring): a record, or a tuple (a move's, a chunk's
        # or an event's), told apart by their length (4, 5, 3).
        self._row_list: list[Any] = []
        # (first row, first chunk, end chunk) of chunk rows whose ids are not drawn yet, and the LLM
        # call that streamed them in ``_unnamed_calls`` (so that the tuple holds plain values only).
        self._unnamed: list[tuple[int, int, int]] = []
        self._unnamed_calls: list[LLMCall] = []
        # (row index, agent name, length, recorder index, run id and name of the move in force) per
        # snapshot, and its log in ``_snapshot_logs``: the context then is log[:length].
        self._snapshots: list[tuple[int, str, int, int, str | None, str | None]] = []
        self._snapshot_logs: list[list[LLMMessage]] = []
        # Every recorder this trace made, attached or not: a snapshot names its recorder by index.
        self._recorders: list[AgentRecorder] = []
        self._redact = redact
        # The keys of the clients of every agent this trace recorded: still masked once an agent is
        # detached or deleted (the default redactor reads them).
        self._client_secrets: set[str] = set()
        self._anchor = (time.time_ns(), time.perf_counter())
        self._own = AgentRecorder(self, owner)
        if owner is not None:
            self._client_secrets.update(owner.model_client._secrets)
        # The recorder protocol: ``record(item)`` records one item of the owner's runs. Bound once
        # here rather than forwarded, since it runs for every streamed chunk.
        self.record: Callable[[RunItem], None] = self._own.record
        self._attached: dict[int, AgentRecorder] = {}

    # ------------------------------------------------------------------ recording

    def attach(self, agent: AssistantAgent) -> AgentRecorder:
        """Record ``agent``'s runs from its next run on; returns the recorder added to ``agent.recorders``."""
        if agent is self._own.agent:  # the trace records its owner already
            return self._own
        if id(agent) in self._attached:
            return self._attached[id(agent)]
        self._client_secrets.update(agent.model_client._secrets)
        recorder = AgentRecorder(self, agent)
        self._attached[id(agent)] = recorder
        agent.recorders.append(recorder)
        return recorder

    def detach(self, agent: AssistantAgent) -> None:
        """Stop recording ``agent``'s runs (a run in progress keeps its recorders to its end)."""
        recorder = self._attached.pop(id(agent), None)
        if recorder is not None and recorder in agent.recorders:
            agent.recorders.remove(recorder)

    def recording(self, *agents: AssistantAgent) -> _Recording:
        """A context manager that attaches ``agents`` on entry and detaches them on exit."""
        return _Recording(self, agents)

    def _flush(self) -> list[Any]:
        """The rows, with those of chunks streamed so far by LLM calls still in progress, and every
        chunk's id drawn."""
        for recorder in (self._own, *self._attached.values()):
            call = recorder._call
            if call is not None and len(call.chunks) > recorder._flushed:
                recorder._flush_stream()
        rows = self._row_list
        for (first, start, end), call in zip(self._unnamed, self._unnamed_calls):
            for index, chunk_id in enumerate(call.stream_ids()[start:end], first):
                content, _, message_id, perf, run = rows[index]
                rows[index] = (content, chunk_id, message_id, perf, run)
        self._unnamed.clear()
        self._unnamed_calls.clear()
        return rows

    def _columns(self) -> tuple[list[Any], list[str | None], list[float]]:
        """The rows as three columns: the item (a record or an event; a move's or a chunk's row as
        it is), its run id and its perf_counter time."""
        items: list[Any] = []
        runs: list[str | None] = []
        perfs: list[float] = []
        for row in self._flush():
            kind = type(row)
            if kind is tuple:
                size = len(row)
                if size == 3:
                    item, run, perf = row
                elif size == 4:
                    item, run, perf = row, row[2], row[3]
                else:
                    item, perf, run = row, row[3], row[4]
            else:
                item, run, perf = row, row.run_id, row.end_perf if kind is RunFinished else row.start_perf
            items.append(item)
            runs.append(run)
            perfs.append(perf)
        return items, runs, perfs

    @property
    def items(self) -> list[RunItem]:
        """The recorded items in order: live records and events (not redacted); moves and chunks rebuilt."""
        agents: dict[str | None, str] = {run: info.agent for run, info in self._runs_info().items()}
        wall_ns, perf0 = self._anchor
        out: list[RunItem] = []
        for item, run, perf in zip(*self._columns()):
            if type(item) is not tuple:
                out.append(item)
            elif len(item) == 4:
                out.append(Move(item[2], item[0], item[1]))
            else:
                content, event_id, message_id, _, _ = item
                created = datetime.fromtimestamp((wall_ns / 1e9) + (perf - perf0), UTC)
                out.append(
                    _CHUNK.model_construct(
                        id=event_id, source=agents.get(run, ""), content=content, full_message_id=message_id,
                        created_at=created,
                    )
                )  # fmt: skip
        return out

    def __len__(self) -> int:
        return len(self._flush())

    def clear(self) -> None:
        """Forget every recorded item and snapshot (and the chunks streamed so far), but what a run in
        progress still needs to be recorded whole from here on: its ``RunStarted``, its last move and
        its LLM and tool calls not ended yet (completed in place when they end)."""
        rows = self._row_list
        # Per run in progress: its start, its last move's row, its calls not ended.
        running: dict[str, tuple[RunStarted, list[Any], list[Any]]] = {}
        for row in rows:
            kind = type(row)
            if kind is RunStarted:
                running[row.run_id] = (row, [], [])
            elif kind is RunFinished:
                running.pop(row.run_id, None)
            elif kind is tuple:
                if len(row) == 4 and row[2] in running:  # a move
                    running[row[2]][1][:] = [row]
            elif (kind is LLMCall or kind is ToolExecution) and row.duration_s is None and row.run_id in running:
                running[row.run_id][2].append(row)
        kept = {id(row) for started, move, calls in running.values() for row in (started, *move, *calls)}
        rows[:] = [row for row in rows if id(row) in kept]  # in place: the recorders append to this list
        self._unnamed.clear()
        self._unnamed_calls.clear()
        self._snapshots.clear()
        self._snapshot_logs.clear()
        for recorder in self._recorders:
            if recorder._call is not None:
                recorder._flushed = len(recorder._call.chunks)
            recorder._log = recorder._mirror = None
            recorder._size = -1
            recorder._origins = (0, {}, {})

    def redactor(self) -> Redactor:
        """The function every stored string goes through (the default masks keys found now)."""
        if self._redact == "default":
            clients = (r.agent.model_client for r in self._recorders if r.agent is not None)
            return DefaultRedactor(
                {*self._client_secrets, *(secret for client in clients for secret in client._secrets)}
            )
        if self._redact is None:
            return _identity
        assert callable(self._redact)
        return self._redact

    # ------------------------------------------------------------------ frames

    def _timestamps(self, perfs: Sequence[float]) -> Any:
        import numpy as np
        import pandas as pd

        wall_ns, perf0 = self._anchor
        ns = wall_ns + ((np.asarray(perfs, dtype="float64") - perf0) * 1e9).astype("int64")
        return pd.to_datetime(ns, unit="ns", utc=True)

    def _runs_info(self) -> dict[str, RunStarted]:
        return {row.run_id: row for row in self._flush() if type(row) is RunStarted}

    def events_df(self, include_chunks: bool = True) -> pd.DataFrame:
        """One row per recorded item, streamed chunks included unless ``include_chunks=False``."""
        import numpy as np
        import pandas as pd

        red = self.redactor()
        items, run_col, perf_col = self._columns()
        n = len(items)
        started = {run: info.agent for run, info in self._runs_info().items()}
        kinds: list[str] = []
        texts: list[str | None] = []
        event_ids: list[str | None] = []
        message_ids: list[str | None] = []
        sources: list[str | None] = []
        sparse: dict[int, tuple[int | None, str | None, int | None]] = {}
        usage: dict[int, tuple[int, int]] = {}
        chunks_of: dict[str | None, list[int]] = {}
        for index, (item, run) in enumerate(zip(items, run_col)):
            kind = type(item)
            if kind is tuple:
                if len(item) == 5:
                    content, event_id, message_id, _, _ = item
                    kinds.append(_CHUNK_KIND)
                    texts.append(content)
                    event_ids.append(event_id)
                    message_ids.append(message_id)
                    sources.append(started.get(run))  # type: ignore[arg-type]
                    chunks_of.setdefault(message_id, []).append(index)
                    continue
                name, iteration, _, _ = item
                kinds.append("Move")
                sparse[index] = (STEPS[name], name, iteration)
                texts.append(MOVES[name].title)
                event_ids.append(None)
                message_ids.append(None)
                sources.append(None)
                continue
            kinds.append(kind.__name__)
            event_id = message_id = source = text = None
            if kind is LLMCall:
                sparse[index] = (None, None, item.iteration)
                message_id = item.message_id
                text = f"{item.purpose} call to {item.model}"
            elif kind is ToolExecution:
                sparse[index] = (None, None, item.iteration)
                text = _calls_text([item.call], red)
            elif kind is RunStarted:
                source = item.agent
                text = red("\n".join(message.to_text() for message in item.task))
            elif kind is RunFinished:
                source = item.agent
                text = red(item.status if item.error is None else f"{item.status}: {item.error}")
            elif kind is Response:
                message = item.chat_message
                kinds[-1] = "Response"
                event_id = message_id = message.id
                source = message.source
                text = red(message.to_text())
            else:
                event_id = message_id = item.id
                source = item.source
                text = red(_event_text(item, red))
                if item.models_usage is not None:
                    usage[index] = (item.models_usage.prompt_tokens, item.models_usage.completion_tokens)
            texts.append(text)
            event_ids.append(event_id)
            message_ids.append(message_id)
            sources.append(source)
        if red is not _identity:
            _redact_chunks(texts, chunks_of, red)

        def sparse_column(values: dict[int, Any], dtype: str) -> pd.Series:
            column = pd.Series(pd.NA, index=range(n), dtype=dtype)
            if values:
                column.iloc[list(values)] = list(values.values())
            return column

        step = sparse_column({i: v[0] for i, v in sparse.items() if v[0] is not None}, "Int64")
        move = sparse_column({i: v[1] for i, v in sparse.items() if v[1] is not None}, "object")
        iteration = sparse_column({i: v[2] for i, v in sparse.items() if v[2] is not None}, "Int64")
        runs = pd.Series(run_col, dtype="object")
        fill = pd.DataFrame({"step": step, "move": move, "iteration": iteration}).groupby(runs, sort=False).ffill()
        perf = pd.Series(np.array(perf_col, dtype="float64"))
        data = {
            "trace_id": [self.trace_id] * n,
            "run_id": run_col,
            "agent": runs.map(started).astype("object") if n else [],
            "seq": runs.groupby(runs, sort=False).cumcount() if n else [],
            "kind": kinds,
            "step": fill["step"] if n else [],
            "move": fill["move"] if n else [],
            "iteration": fill["iteration"] if n else [],
            "event_id": event_ids,
            "message_id": message_ids,
            "source": sources,
            "text": texts,
            "prompt_tokens": sparse_column({i: u[0] for i, u in usage.items()}, "Int64"),
            "completion_tokens": sparse_column({i: u[1] for i, u in usage.items()}, "Int64"),
            "timestamp": self._timestamps(perf.to_numpy()),
            "elapsed_s": (perf - perf.groupby(runs, sort=False).transform("first")).to_numpy() if n else [],
        }
        df = frame("events", data)
        return df if include_chunks else df[df["kind"] != _CHUNK_KIND].reset_index(drop=True)

    def _records(self, kind: type) -> Iterator[Any]:
        return (row for row in self._flush() if type(row) is kind)

    def llm_calls_df(self) -> pd.DataFrame:
        """One row per model call."""
        red = self.redactor()
        agents = {run: info.agent for run, info in self._runs_info().items()}
        cols: dict[str, list[Any]] = {name: [] for name in COLUMNS["llm_calls"]}
        counters: dict[str, int] = {}
        for call in self._records(LLMCall):
            result = call.result
            usage = result.usage if result is not None else None
            calls = result.content if result is not None and not isinstance(result.content, str) else []
            if result is None:
                answer = None
            elif isinstance(result.content, str):
                answer = red(result.content)
            else:
                answer = _calls_text(result.content, red)
            index = counters.get(call.run_id, 0)
            counters[call.run_id] = index + 1
            row = {
                "trace_id": self.trace_id,
                "run_id": call.run_id,
                "agent": agents.get(call.run_id),
                "call_index": index,
                "iteration": call.iteration,
                "purpose": call.purpose,
                "model": call.model,
                "provider": call.provider,
                "message_id": call.message_id,
                "streaming": call.streaming,
                "n_messages": len(call.request.messages),
                "n_tools": len(call.request.tools),
                "tool_choice": call.request.tool_choice,
                "started_at": call.started_at,
                "ttft_s": call.first_token_s,
                "duration_s": call.duration_s,
                "prompt_tokens": None if usage is None else usage.prompt_tokens,
                "completion_tokens": None if usage is None else usage.completion_tokens,
                "finish_reason": None if result is None else result.finish_reason,
                "cached": None if result is None else result.cached,
                "has_thought": None if result is None else bool(result.thought),
                "n_tool_calls": None if result is None else len(calls),
                "status": "error" if call.error else ("running" if call.duration_s is None else "ok"),
                "error": _text(call.error, red),
                "response_text": answer,
            }
            for name, value in row.items():
                cols[name].append(value)
        return frame("llm_calls", cols)

    def tool_calls_df(self) -> pd.DataFrame:
        """One row per tool call, with parsed arguments and how many calls ran at once."""
        red = self.redactor()
        agents = {run: info.agent for run, info in self._runs_info().items()}
        executions = list(self._records(ToolExecution))
        concurrent = _concurrency(executions)
        cols: dict[str, list[Any]] = {name: [] for name in COLUMNS["tool_calls"]}
        for execution, overlap in zip(executions, concurrent):
            result = execution.result
            row = {
                "trace_id": self.trace_id,
                "run_id": execution.run_id,
                "agent": agents.get(execution.run_id),
                "iteration": execution.iteration,
                "batch_size": execution.batch_size,
                "call_id": execution.call.id,
                "tool_name": red(execution.call.name),  # the model's: it may carry anything
                "arguments": _parse_arguments(execution.call.arguments, red),
                "result": None if result is None else red(result.content),
                "is_error": None if result is None else result.is_error,
                "started_at": execution.started_at,
                "duration_s": execution.duration_s,
                "concurrent_with": overlap,
            }
            for name, value in row.items():
                cols[name].append(value)
        return frame("tool_calls", cols)

    def runs_df(self) -> pd.DataFrame:
        """One row per run: status, times, counts and tokens."""
        red = self.redactor()
        runs: dict[str, dict[str, Any]] = {}
        for item, run_id, perf in zip(*self._columns()):
            if run_id is None:
                continue
            kind = _CHUNK if type(item) is tuple and len(item) == 5 else type(item)  # a move: tuple
            row = runs.get(run_id)
            if row is None:
                row = runs[run_id] = {
                    "trace_id": self.trace_id, "run_id": run_id, "agent": None, "status": "running",
                    "error": None, "started_at": None, "ended_at": None, "duration_s": None, "task": None,
                    "final_type": None, "final_text": None, "n_events": 0, "n_chunks": 0, "n_llm_calls": 0,
                    "n_tool_calls": 0, "n_tool_errors": 0, "prompt_tokens": 0, "completion_tokens": 0,
                    "_start": perf,
                }  # fmt: skip
            row["n_events"] += 1
            if kind is _CHUNK:
                row["n_chunks"] += 1
            elif kind is RunStarted:
                row.update(agent=item.agent, started_at=item.started_at, _start=item.start_perf)
                row["task"] = red("\n".join(message.to_text() for message in item.task))
            elif kind is RunFinished:
                row.update(status=item.status, error=_text(item.error, red), ended_at=item.ended_at)
                row["duration_s"] = item.end_perf - row["_start"]
            elif kind is Response:
                row["final_type"] = item.chat_message.type
                row["final_text"] = red(item.chat_message.to_text())
            elif kind is LLMCall:
                row["n_llm_calls"] += 1
                if item.result is not None:
                    row["prompt_tokens"] += item.result.usage.prompt_tokens
                    row["completion_tokens"] += item.result.usage.completion_tokens
            elif kind is ToolExecution:
                row["n_tool_calls"] += 1
                row["n_tool_errors"] += bool(item.result is not None and item.result.is_error)
        cols = {name: [row[name] for row in runs.values()] for name in COLUMNS["runs"]}
        return frame("runs", cols)

    # ------------------------------------------------------------------ context

    def context_df(self, run_id: str | None = None, seq: int | None = None, agent: str | None = None) -> pd.DataFrame:
        """The model context as it was when item ``seq`` of run ``run_id`` was recorded.

        Without ``seq``: at the end of that run; without ``run_id``: the latest snapshot (of
        ``agent`` if given). The context of each agent this trace records (``owner`` or attached) is
        snapshotted at run start, and at each move, event or run end where it changed.
        """
        _, runs, _ = self._columns()
        agents = {run: info.agent for run, info in self._runs_info().items()}
        index = pick_snapshot(runs, agents, [(row, name) for row, name, *_ in self._snapshots], run_id, seq, agent)
        _, _, size, key, _, _ = self._snapshots[index]
        return context_rows(self._snapshot_logs[index][:size], self._recorders[key], self.redactor())

    def context_tables(self) -> dict[str, pd.DataFrame]:
        """The context snapshots as two tables: ``context_logs``, each message log once (the context
        frame's columns, per log), and ``snapshots``, each snapshot as a prefix of a log."""
        self._flush()  # the snapshots' rows are positions among every row, chunks included
        red = self.redactor()
        logs: dict[tuple[int, int], int] = {}  # (id of the log, recorder) -> log id
        kept: list[tuple[list[LLMMessage], int]] = []  # per log id: the log and its recorder
        lengths: list[int] = []
        snapshots: dict[str, list[Any]] = {name: [] for name in COLUMNS["snapshots"]}
        for (row, agent, size, key, _, _), log in zip(self._snapshots, self._snapshot_logs):
            log_id = logs.setdefault((id(log), key), len(logs))
            if log_id == len(kept):
                kept.append((log, key))
                lengths.append(size)
            lengths[log_id] = max(lengths[log_id], size)
            for name, value in zip(COLUMNS["snapshots"], (self.trace_id, agent, row, log_id, size)):
                snapshots[name].append(value)
        messages: dict[str, list[Any]] = {name: [] for name in COLUMNS["context_logs"]}
        for log_id, ((log, key), length) in enumerate(zip(kept, lengths)):
            messages["trace_id"] += [self.trace_id] * length
            messages["log"] += [log_id] * length
            _add_context_rows(messages, log[:length], self._recorders[key], red)
        return {"context_logs": frame("context_logs", messages), "snapshots": frame("snapshots", snapshots)}

    def request_df(self, run_id: str, call_index: int = 0) -> pd.DataFrame:
        """What LLM call ``call_index`` of run ``run_id`` sent the model: one row per message, system
        messages included (the context frame's columns; run and STEP where this trace saw them added)."""
        calls = [call for call in self._records(LLMCall) if call.run_id == run_id]
        if not 0 <= call_index < len(calls):
            raise IndexError(f"run {run_id!r} has {len(calls)} LLM calls, no call {call_index}")
        agent = self._runs_info().get(run_id)
        recorder = next(
            (r for r in self._recorders if agent and r.agent and r.agent.name == agent.agent),  # detached too
            None,
        )
        return context_rows(calls[call_index].request.messages, recorder, self.redactor())

    def __repr__(self) -> str:
        return f"Trace({len(self)} items, {len(self._runs_info())} runs)"


class _Recording:
    def __init__(self, trace: Trace, agents: Sequence[AssistantAgent]) -> None:
        self.trace = trace
        self.agents = agents

    def __enter__(self) -> Trace:
        for agent in self.agents:
            self.trace.attach(agent)
        return self.trace

    def __exit__(self, *exc: object) -> None:
        for agent in self.agents:
            self.trace.detach(agent)


def _redact_chunks(texts: list[str | None], chunks_of: dict[str | None, list[int]], red: Redactor) -> None:
    """Redact streamed chunks message by message, so a key split over chunks is caught too.

    Each chunk is redacted alone; if the redacted chunks do not join to the redacted message (a secret
    spans chunks), the whole redacted message goes to the first chunk and the others become empty, so
    the chunks still join to the message.
    """
    for indices in chunks_of.values():
        pieces = [texts[i] or "" for i in indices]
        joined = "".join(pieces)
        whole = red(joined)
        if whole == joined:
            continue
        pieces = [red(piece) for piece in pieces]
        if "".join(pieces) != whole:  # a secret spans chunks (or one chunk alone masks only its part)
            pieces = [whole] + [""] * (len(pieces) - 1)
        for i, piece in zip(indices, pieces):
            texts[i] = piece


def pick_snapshot(
    runs: Sequence[str | None],
    agents: Mapping[str, str],
    snapshots: Sequence[tuple[int, str]],
    run_id: str | None,
    seq: int | None,
    agent: str | None,
) -> int:
    """Which snapshot (given as (row, agent)) holds the context item ``seq`` of run ``run_id`` saw.

    ``runs`` gives the run of each row, ``agents`` the agent of each run. Without ``seq``: at the end
    of the run; without ``run_id``: the latest snapshot (of ``agent`` if given).
    """
    limit = len(runs)
    if run_id is not None:
        positions = [index for index, run in enumerate(runs) if run == run_id]
        if not positions:
            raise KeyError(f"no run {run_id!r} in this trace")
        if seq is not None:
            if not 0 <= seq < len(positions):
                raise IndexError(f"run {run_id!r} has {len(positions)} items, no seq {seq}")
            limit = positions[seq]
        else:
            limit = positions[-1]  # its last item: a snapshot of the next run start is after it
        agent = agents.get(run_id, agent)
    chosen = None
    for index, (row, name) in enumerate(snapshots):
        if row <= limit and (agent is None or name == agent):
            chosen = index
    if chosen is None:
        raise LookupError("no context snapshot there: this trace records no agent's context at that point")
    return chosen


def _concurrency(executions: list[ToolExecution]) -> list[int]:
    """For each call, how many calls of its run overlapped it in time (itself included)."""
    spans = []
    for execution in executions:
        end = execution.start_perf + (execution.duration_s if execution.duration_s is not None else float("inf"))
        spans.append((execution.run_id, execution.start_perf, end))
    by_run: dict[str, list[int]] = {}
    for index, (run_id, _, _) in enumerate(spans):
        by_run.setdefault(run_id, []).append(index)
    counts = [1] * len(spans)
    for indices in by_run.values():
        for i in indices:
            _, start, end = spans[i]
            counts[i] = sum(1 for j in indices if spans[j][1] < end and start < spans[j][2] or j == i)
    return counts


def _kind(message: LLMMessage) -> str:
    if isinstance(message, SystemMessage):
        return "system"
    if isinstance(message, AssistantMessage):
        return "assistant"
    if isinstance(message, FunctionExecutionResultMessage):
        return "tool_result"
    return "user"


def context_rows(
    messages: Sequence[LLMMessage], recorder: AgentRecorder | None, red: Redactor, live: bool = False
) -> pd.DataFrame:
    """The context frame of ``messages``, with the run and STEP ``recorder`` saw add each one
    (``live``: ``messages`` is the agent's context now, see :meth:`AgentRecorder.origin_of`)."""
    cols: dict[str, list[Any]] = {name: [] for name in COLUMNS["context"]}
    _add_context_rows(cols, messages, recorder, red, live)
    return frame("context", cols)


def _add_context_rows(
    cols: dict[str, list[Any]],
    messages: Sequence[LLMMessage],
    recorder: AgentRecorder | None,
    red: Redactor,
    live: bool = False,
) -> None:
    """Append the context frame's rows of ``messages`` to ``cols`` (see :func:`context_rows`)."""
    for position, message in enumerate(messages):
        run_id, step, move = recorder.origin_of(message, live) if recorder is not None else NOWHERE
        calls = None
        if isinstance(message, AssistantMessage) and not isinstance(message.content, str):
            calls = [
                {"id": c.id, "name": red(c.name), "arguments": _arguments_text(c.arguments, red)}
                for c in message.content
            ]
            text = _calls_text(message.content, red)
        else:
            text = red(message_text(message))
        if isinstance(message, FunctionExecutionResultMessage):
            source = red(", ".join(result.name for result in message.content))
        else:
            source = getattr(message, "source", "system")
        row = {
            "position": position,
            "kind": _kind(message),
            "source": source,
            "text": text,
            "tool_calls": calls,
            "thought": _text(getattr(message, "thought", None), red),
            "tokens": estimate_tokens(message),
            "run_id": run_id,
            "step": step,
            "move": move,
        }
        for name, value in row.items():
            cols[name].append(value)


def context_frame(agent: AssistantAgent) -> pd.DataFrame:
    """``agent.context_df()``: its model context now, with the run and STEP that added each message."""
    recorder = None
    for candidate in agent.recorders:
        if isinstance(candidate, Trace) and candidate._own.agent is agent:
            recorder = candidate._own
        elif isinstance(candidate, AgentRecorder) and candidate.agent is agent and candidate._trace() is not None:
            recorder = candidate
        if recorder is not None:
            break
    if recorder is None:
        return context_rows(agent.model_context.messages, None, DefaultRedactor(agent.model_client._secrets))
    return context_rows(agent.model_context.messages, recorder, recorder.trace.redactor(), live=True)
