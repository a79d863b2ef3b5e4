"""OTLP: a trace as OpenTelemetry spans, built with the official protobuf types (``opentelemetry-proto``,
``pip install 'nbagent-loop[otlp]'``), written as OTLP-JSON or sent over OTLP/HTTP.

One OpenTelemetry trace per run: an ``invoke_agent {agent}`` span (INTERNAL), and under it a
``chat {model}`` span per LLM call (CLIENT), an ``execute_tool {tool}`` span per tool call (INTERNAL)
and a ``retrieval`` span per memory query (INTERNAL), with the GenAI semantic conventions' names
(``gen_ai.operation.name``, ``gen_ai.provider.name``, ``gen_ai.request.model``,
``gen_ai.request.stream``, ``gen_ai.request.temperature``..., ``gen_ai.response.model``,
``gen_ai.response.id``, ``gen_ai.response.finish_reasons``, ``gen_ai.response.time_to_first_chunk``,
``gen_ai.usage.input_tokens``, ``gen_ai.usage.output_tokens``, ``gen_ai.conversation.id``,
``gen_ai.tool.name``, ``gen_ai.tool.call.id``, ``error.type``...); what they do not name is under
``nbagent.*``. Every ``gen_ai.*`` name is one the opentelemetry-semantic-conventions release
(0.66b2) defines: a memory query is its ``retrieval`` operation (a framework's retrieval of what is
relevant to a query), with ``gen_ai.retrieval.query.text``; what the memories gave is nbagent's own
``nbagent.memory.content`` (the conventions' ``gen_ai.retrieval.documents`` wants each document's id
and score, which AutoGen's memory results do not have). A run that is a turn of another
(``runs.parent_run_id``) is a child of that run's span, in its trace; a run a handoff passed the
conversation to links to the handing run's span, and a fork (``runs.forked_from``) links to the span
of the run it was forked from.

* **Only ended work**: a run, call or query still running is left out (its children that ended are
  sent, under the span id it will have), so the first a receiver sees of a span is its final form.
* **Span ids** are derived from the run and the position of the call in it (never from the model's
  tool call ids, which may repeat or be empty), unique in an export and the same in every export.
* **Status** is UNSET unless there was an error: then ERROR, with ``error.type`` the exception's class
  (``CancelledError`` for a cancelled run, call or tool call) or ``_OTHER``.
* **Content is opt-in**, as the conventions want (``content=True`` per export, ``trace.otlp_content``
  for a trace, ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` for the process):
  ``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions`` and
  ``gen_ai.tool.definitions`` as JSON in the conventions' shapes (roles and typed parts), the tool
  calls' arguments and results, the memory query and what it gave; and on the agent span
  OpenInference's ``input.value`` / ``output.value`` (the task and the final answer, what Phoenix
  shows as a trace's input and output). Everything comes from the trace's frames: redacted.
* **Conversation**: ``gen_ai.conversation.id`` is one id per conversation, an agent's context from
  its first message on (a context cleared or replaced starts another), the same in every export.
"""

from __future__ import annotations

import bisect
import contextlib
import hashlib
import http.client
import json
import math
import os
import re
import socket
import threading
import urllib.parse
import uuid
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Protocol

from ..printable import printable
from ..redact import valid_text
from .frames import EventColumns
from .schema import TraceTables, json_value, seconds

if TYPE_CHECKING:
    import pandas as pd

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
# The text the loop gives a tool call its run's cancellation cut short (agent.CANCELLED_TOOL_RESULT).
CANCELLED_TOOL_PREFIX = "Error: the run was cancelled"
_NAMESPACE = uuid.UUID("6f1c9a52-3d4e-4b8f-9a27-5c0e8d71b3a4")  # nbagent's, for conversation ids

# OTLP span kinds (opentelemetry.proto.trace.v1.Span.SpanKind)
INTERNAL, CLIENT = 1, 3
# nbagent's finish reasons -> the conventions' (FinishReason of gen-ai-output-messages.json)
_FINISH = {"stop": "stop", "function_calls": "tool_call", "length": "length", "content_filter": "content_filter"}
# request_params keys (the names on the wire) -> attribute names; the last three are the names the
# column used before it held the parameters as sent (files written then still export)
_REQUEST = {
    "temperature": "gen_ai.request.temperature",
    "max_tokens": "gen_ai.request.max_tokens",
    "max_completion_tokens": "gen_ai.request.max_tokens",
    "top_p": "gen_ai.request.top_p",
    "top_k": "gen_ai.request.top_k",
    "seed": "gen_ai.request.seed",
    "stop": "gen_ai.request.stop_sequences",
    "frequency_penalty": "gen_ai.request.frequency_penalty",
    "presence_penalty": "gen_ai.request.presence_penalty",
    "n": "gen_ai.request.choice.count",
    "stop_sequences": "gen_ai.request.stop_sequences",
    "choice_count": "gen_ai.request.choice.count",
    "output_type": "gen_ai.output.type",
}
# response_format types -> gen_ai.output.type
_OUTPUT_TYPE = {"json_object": "json", "json_schema": "json", "text": "text"}


def request_attributes(params: Mapping[str, Any]) -> dict[str, Any]:
    """The gen_ai.request.* attributes (and gen_ai.output.type) of an LLM call's request_params."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        name = _REQUEST.get(key)
        if name is None or value is None:
            continue
        if name == "gen_ai.request.stop_sequences":
            value = [value] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                continue
        elif name == "gen_ai.output.type":
            if not isinstance(value, str):
                continue
        elif isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        elif name == "gen_ai.request.choice.count" and value == 1:
            continue  # set only when it is not 1
        out[name] = value
    response_format = params.get("response_format")
    if isinstance(response_format, dict) and response_format.get("type") in _OUTPUT_TYPE:
        out["gen_ai.output.type"] = _OUTPUT_TYPE[response_format["type"]]
    return out


def content_default() -> bool:
    """Whether content is captured when nothing says otherwise: what the environment variable
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says (``true``/``1``), else no."""
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


def require_proto() -> None:
    """Raise an ImportError that names the extra to install when opentelemetry-proto is missing."""
    try:
        import opentelemetry.proto.trace.v1.trace_pb2  # noqa: F401
    except ImportError as error:
        raise ImportError(
            "OTLP export needs opentelemetry-proto: pip install 'nbagent-loop[otlp]'", name="opentelemetry.proto"
        ) from error


# --------------------------------------------------------------------------- values


def _text(value: Any) -> str | None:
    value = json_value(value)
    return None if value is None else str(value)


def _number(value: Any) -> Any:
    value = json_value(value)
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return value


def _flag(value: Any) -> bool:
    return bool(json_value(value))


def error_type(error: str | None) -> str | None:
    """The class name an error text starts with (``"ValueError: ..."``), else ``_OTHER``."""
    if error is None:
        return None
    head = error.split(":", 1)[0].strip()
    return head if head.isidentifier() else "_OTHER"


_TOOL_ERROR = re.compile(r"Error: ([A-Za-z_][A-Za-z0-9_.]*): ")


def tool_error_type(result: str | None) -> str:
    """A failed tool call's ``error.type``: ``CancelledError`` when its run's cancellation cut it
    short, the exception's class when the result names it (``"Error: ValueError: ..."``), else ``_OTHER``."""
    text = result or ""
    if text.startswith(CANCELLED_TOOL_PREFIX):
        return "CancelledError"
    match = _TOOL_ERROR.match(text)
    return match.group(1) if match else "_OTHER"


def trace_hex(run_id: str) -> str:
    """The OpenTelemetry trace id (hex) of a run: its uuid's digits, else a hash of its id."""
    digits = run_id.replace("-", "").lower()
    if len(digits) == 32 and all(c in "0123456789abcdef" for c in digits):
        return digits
    return hashlib.sha256(run_id.encode()).hexdigest()[:32]


def span_hex(*parts: str) -> str:
    """A span id (hex) derived from ``parts``; never all zeros."""
    digest = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]
    return digest if digest != "0" * 16 else "1" + digest[1:]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _ns(stamp: Any) -> int | None:
    """A time as ns since the epoch: a frame's timestamp, a record's datetime (naive: UTC) or ns already."""
    if stamp is None or type(stamp) is int:
        return stamp
    if type(stamp) is datetime:  # a record's: to the microsecond, as its frame has it
        delta = (stamp if stamp.tzinfo is not None else stamp.replace(tzinfo=UTC)) - _EPOCH
        return (delta.days * 86_400 + delta.seconds) * 1_000_000_000 + delta.microseconds * 1000
    import pandas as pd

    if stamp is pd.NaT or (not isinstance(stamp, pd.Timestamp) and pd.isna(stamp)):
        return None
    return int(pd.Timestamp(stamp).value)


@dataclass
class SpanData:
    """One span before it becomes a protobuf ``Span``: ids in hex, times in ns since the epoch."""

    trace_id: str
    span_id: str
    parent: str | None
    name: str
    kind: int
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    error: str | None = None
    links: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


# --------------------------------------------------------------------------- content shapes


def _text_part(content: str) -> dict[str, Any]:
    return {"type": "text", "content": content}


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):
        try:
            return json.loads(raw)
        except json.JSONDecodeError:
            return raw
    return raw


def _context_messages(logs: Columns, tool_results: Mapping[tuple[str, str], list[str]]) -> dict[int, list[Any]]:
    """Every context log as input messages (gen-ai-input-messages.json): ``log -> [message, ...]``.

    A tool result message answers the calls of the assistant message before it: one
    ``tool_call_response`` part per call when their results are known one by one, else one part.
    """
    out: dict[int, list[Any]] = {}
    last_calls: list[dict[str, Any]] = []
    for log, kind, text, calls, thought, run_id in zip(
        logs["log"], logs["kind"], logs["text"], logs["tool_calls"], logs["thought"], logs["run_id"]
    ):
        messages = out.setdefault(int(log), [])
        text = _text(text) or ""
        if kind == "assistant":
            parts: list[dict[str, Any]] = []
            if _text(thought):
                parts.append({"type": "reasoning", "content": _text(thought)})
            if isinstance(calls, list) and calls:
                last_calls = calls
                parts += [
                    {"type": "tool_call", "id": call.get("id") or None, "name": call.get("name") or "",
                     "arguments": _arguments(call.get("arguments"))}
                    for call in calls
                ]  # fmt: skip
            else:
                parts.append(_text_part(text))
            messages.append({"role": "assistant", "parts": parts})
        elif kind == "tool_result":
            results = [tool_results.get((str(run_id), str(call.get("id"))), []) for call in last_calls]
            if last_calls and all(len(found) == 1 for found in results):
                parts = [
                    {"type": "tool_call_response", "id": call.get("id") or None, "response": found[0]}
                    for call, found in zip(last_calls, results)
                ]
            else:
                parts = [{"type": "tool_call_response", "id": None, "response": text}]
            messages.append({"role": "tool", "parts": parts})
        else:
            messages.append({"role": "system" if kind == "system" else "user", "parts": [_text_part(text)]})
    return out


# --------------------------------------------------------------------------- spans


Columns = dict[str, list[Any]]
"""A table as lists of values by column name."""


@dataclass
class SpanTables:
    """What the spans are built from: the trace's id, its tables as columns (``runs``, ``llm_calls``,
    ``tool_calls``, ``context_logs``, ``snapshots``) and the columns of ``events`` the spans read.
    :func:`span_tables` makes them from any trace's frames; a live trace makes them from its rows
    (``Trace.span_tables``: the same values, without building a frame)."""

    trace_id: str
    tables: dict[str, Columns]
    events: EventColumns


def _columns(df: pd.DataFrame) -> Columns:
    return {name: df[name].tolist() for name in df.columns}


def span_tables(trace: TraceTables) -> SpanTables:
    """:class:`SpanTables` of a trace read from its frames (a loaded trace, a combined one...)."""
    events = trace.events_df()
    context = trace.context_tables()
    tables = {
        "runs": _columns(trace.runs_df()),
        "llm_calls": _columns(trace.llm_calls_df()),
        "tool_calls": _columns(trace.tool_calls_df()),
        "context_logs": _columns(context["context_logs"]),
        "snapshots": _columns(context["snapshots"]),
    }
    columns = EventColumns(
        events["kind"].tolist(),
        events["run_id"].tolist(),
        events["timestamp"].tolist(),
        events["move"].tolist(),
        events["text"].tolist(),
    )
    return SpanTables(trace.trace_id, tables, columns)


def _rows(table: Columns) -> list[SimpleNamespace]:
    """A table's rows, each with its columns as attributes."""
    names = list(table)
    return [SimpleNamespace(**dict(zip(names, values))) for values in zip(*table.values())]


class _Tables:
    """The tables an export reads, and what is derived from them once."""

    def __init__(self, source: SpanTables, runs_wanted: Collection[str] | None) -> None:
        self.trace_id = source.trace_id
        self.runs = source.tables["runs"]
        self.llm = source.tables["llm_calls"]
        self.tools = source.tables["tool_calls"]
        self.events = source.events
        self.logs = source.tables["context_logs"]
        self.snapshots = source.tables["snapshots"]
        self.wanted = None if runs_wanted is None else set(runs_wanted)
        self.run_ids = [str(run) for run in self.runs["run_id"]]
        self.parents: dict[str, str] = {}
        for run, parent in zip(self.run_ids, self.runs.get("parent_run_id", [])):
            if _text(parent):
                self.parents[run] = str(parent)

    def root_of(self, run_id: str) -> str:
        seen = {run_id}
        while run_id in self.parents and self.parents[run_id] not in seen:
            run_id = self.parents[run_id]
            seen.add(run_id)
        return run_id

    def trace_of(self, run_id: str) -> str:
        return trace_hex(self.root_of(run_id))

    def keeps(self, run_id: str) -> bool:
        return self.wanted is None or run_id in self.wanted


class _Snapshots:
    """The snapshots of each agent's context by the events row they were taken at, for bisection."""

    def __init__(self, snapshots: Columns) -> None:
        self.logs = [int(v) for v in snapshots["log"]]
        self.lengths = [int(v) for v in snapshots["length"]]
        self.rows: dict[Any, list[int]] = {}
        self.index: dict[Any, list[int]] = {}
        for index, (row, agent) in enumerate(zip(snapshots["event_row"], snapshots["agent"])):
            self.rows.setdefault(agent, []).append(int(row))
            self.index.setdefault(agent, []).append(index)

    def before(self, row: int, agent: str | None) -> int | None:
        """The last snapshot of ``agent``'s context taken at or before events row ``row``."""
        rows = self.rows.get(agent)
        if not rows:
            return None
        at = bisect.bisect_right(rows, row)
        return self.index[agent][at - 1] if at else None

    def from_(self, row: int, agent: str | None) -> int | None:
        """The first snapshot of ``agent``'s context taken at or after events row ``row``."""
        rows = self.rows.get(agent)
        if not rows:
            return None
        at = bisect.bisect_left(rows, row)
        return self.index[agent][at] if at < len(rows) else None


class _Spans:
    def __init__(self, tables: _Tables, content: bool, handoffs: dict[str, tuple[str, str]]) -> None:
        self.t = tables
        self.content = content
        self.handoffs = handoffs
        self.out: list[SpanData] = []
        self.used: set[str] = set()
        self._messages: dict[int, list[Any]] | None = None
        self.snaps = _Snapshots(tables.snapshots)
        self._requested: dict[str, list[dict[str, Any]]] | None = None
        events = tables.events
        self.kinds = events.kinds
        self.event_runs = events.runs
        self.event_texts = events.texts
        self.event_times = events.times
        self.event_moves = events.moves

    # ids ------------------------------------------------------------------

    def new_id(self, *parts: str) -> str:
        span_id = span_hex(*parts)
        salt = 0
        while span_id in self.used:  # a collision of 64-bit hashes: re-derive, deterministically
            salt += 1
            span_id = span_hex(*parts, str(salt))
        self.used.add(span_id)
        return span_id

    def run_span(self, run_id: str) -> str:
        return span_hex("run", run_id)

    # content --------------------------------------------------------------

    def messages(self) -> dict[int, list[Any]]:
        if self._messages is None:
            tools = self.t.tools
            results: dict[tuple[str, str], list[str]] = {}
            for run, call_id, result in zip(tools["run_id"], tools["call_id"], tools["result"]):
                results.setdefault((str(run), str(call_id)), []).append(_text(result) or "")
            self._messages = _context_messages(self.t.logs, results)
        return self._messages

    def context_at(self, row: int, agent: str | None) -> list[Any] | None:
        index = self.snaps.before(row, agent)
        if index is None:
            return None
        return self.messages().get(self.snaps.logs[index], [])[: self.snaps.lengths[index]]

    def requested(self, llm_call_id: str | None) -> list[dict[str, Any]]:
        """The tool calls an LLM call asked for, as ``tool_call`` parts (from the tool call rows)."""
        if self._requested is None:
            self._requested = {}
            tools = self.t.tools
            if "llm_call_id" in tools:
                for key, call_id, name, arguments in zip(
                    tools["llm_call_id"], tools["call_id"], tools["tool_name"], tools["arguments"]
                ):
                    part = {"type": "tool_call", "id": _text(call_id) or None, "name": _text(name) or "",
                            "arguments": arguments}  # fmt: skip
                    self._requested.setdefault(str(key), []).append(part)
        return self._requested.get(str(llm_call_id), [])

    def conversation(self, run_id: str, agent: str | None, first_row: int | None) -> str:
        """One id per agent's conversation: its trace, agent and the first message of its context."""
        first = ""
        if first_row is not None:
            index = self.snaps.from_(first_row, agent)  # the snapshot at the run's start
            if index is None:
                index = self.snaps.before(first_row, agent)
            if index is not None:
                log = self.messages().get(self.snaps.logs[index], [])
                first = json.dumps(log[:1], sort_keys=True, ensure_ascii=False)
        return str(uuid.uuid5(_NAMESPACE, valid_text(f"{self.t.trace_id}\x1f{agent or ''}\x1f{first}")))

    # building ---------------------------------------------------------------

    def add(self, span: SpanData) -> None:
        self.out.append(span)

    def build(self) -> list[SpanData]:
        t = self.t
        first_rows: dict[str, int] = {}
        for index, run in enumerate(self.event_runs):
            if run is not None and run not in first_rows:
                first_rows[str(run)] = index
        first_calls: dict[str, Any] = {}
        self.llm_rows = _rows(t.llm)
        for call in self.llm_rows:
            first_calls.setdefault(str(call.run_id), call)
        call_rows = [i for i, kind in enumerate(self.kinds) if kind == "LLMCall"]
        self.run_spans(first_rows, first_calls)
        self.llm_spans(call_rows)
        self.tool_spans()
        self.memory_spans()
        return self.out

    def run_spans(self, first_rows: Mapping[str, int], first_calls: Mapping[str, Any]) -> None:
        t = self.t
        rows = _rows(t.runs)
        starts = [_ns(run.started_at) for run in rows]
        order = sorted(range(len(rows)), key=lambda i: (starts[i] is None, starts[i] or 0))  # stable, NaT last
        conversations: dict[str, str] = {}
        for run in (rows[i] for i in order):
            run_id = str(run.run_id)
            agent = _text(run.agent)
            root = t.root_of(run_id)
            if root != run_id and root in conversations:
                conversations[run_id] = conversations[root]
            else:
                conversations[run_id] = self.conversation(run_id, agent, first_rows.get(run_id))
            if not t.keeps(run_id) or run.status == "running":
                continue
            start, end = _ns(run.started_at), _ns(run.ended_at)
            if start is None or end is None:
                continue
            target = _text(getattr(run, "handoff_target", None))
            handed_from = self.handoffs.pop(agent, None) if agent else None
            if target:
                self.handoffs[target] = (t.trace_of(run_id), self.run_span(run_id))
            first_call = first_calls.get(run_id)
            error = _text(run.error)
            if run.status == "cancelled":
                kind_of_error, message = "CancelledError", error or "the run was cancelled"
            elif run.status == "error":
                kind_of_error, message = error_type(error) or "_OTHER", error or "the run failed"
            else:
                kind_of_error, message = None, None
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "invoke_agent",
                "gen_ai.provider.name": None if first_call is None else _text(first_call.provider),
                "gen_ai.request.model": None if first_call is None else _text(first_call.model),
                "gen_ai.agent.name": agent,
                "gen_ai.conversation.id": conversations[run_id],
                "gen_ai.usage.input_tokens": _number(run.prompt_tokens),
                "gen_ai.usage.output_tokens": _number(run.completion_tokens),
                "nbagent.trace_id": t.trace_id,
                "nbagent.run_id": run_id,
                "nbagent.status": _text(run.status),
                "nbagent.handoff.target": target,
                "error.type": kind_of_error,
            }
            if self.content:
                task, final = _text(run.task), _text(run.final_text)
                if task is not None:
                    attributes["gen_ai.input.messages"] = [{"role": "user", "parts": [_text_part(task)]}]
                    attributes["input.value"], attributes["input.mime_type"] = task, "text/plain"
                if final is not None:
                    finish = "error" if kind_of_error else "stop"
                    attributes["gen_ai.output.messages"] = [
                        {"role": "assistant", "parts": [_text_part(final)], "finish_reason": finish}
                    ]
                    attributes["output.value"], attributes["output.mime_type"] = final, "text/plain"
                if first_call is not None:
                    attributes.update(_definitions(first_call))
            parent = t.parents.get(run_id)
            span = SpanData(
                t.trace_of(run_id), self.run_span(run_id), None if parent is None else self.run_span(parent),
                f"invoke_agent {agent}" if agent else "invoke_agent", INTERNAL, start, end, attributes, message,
            )  # fmt: skip
            self.used.add(span.span_id)
            if handed_from is not None:
                span.links.append((*handed_from, {"nbagent.link": "handoff"}))
            forked = _text(getattr(run, "forked_from", None))
            if forked:  # a fork (Stepper.fork) links to the run it was forked from, in that run's trace
                moves = _number(getattr(run, "fork_move", None))
                link = {"nbagent.link": "fork", "nbagent.fork_move": int(moves or 0)}
                span.links.append((t.trace_of(forked), self.run_span(forked), link))
            self.add(span)

    def llm_spans(self, call_rows: list[int]) -> None:
        t = self.t
        for position, call in enumerate(self.llm_rows):
            run_id = str(call.run_id)
            if not t.keeps(run_id) or call.status == "running":
                continue
            start = _ns(call.started_at)
            duration = seconds(call.duration_s)  # out of range: missing, no span
            if start is None or duration is None:
                continue
            error = _text(call.error)
            finish = _text(call.finish_reason)
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "chat",
                "gen_ai.provider.name": _text(call.provider),
                "gen_ai.request.model": _text(call.model),
                "gen_ai.request.stream": True if _flag(call.streaming) else None,  # set only when streamed
                "gen_ai.response.model": _text(getattr(call, "response_model", None)),
                "gen_ai.response.id": _text(getattr(call, "response_id", None)),
                "gen_ai.response.finish_reasons": [_FINISH.get(finish, finish)] if finish else None,
                "gen_ai.response.time_to_first_chunk": _number(call.ttft_s),
                "gen_ai.usage.input_tokens": _number(call.prompt_tokens),
                "gen_ai.usage.output_tokens": _number(call.completion_tokens),
                "gen_ai.agent.name": _text(call.agent),
                "nbagent.llm_call_id": _text(getattr(call, "llm_call_id", None)),
                "nbagent.purpose": _text(call.purpose),
                "nbagent.iteration": _number(call.iteration),
                "nbagent.n_tool_calls": _number(call.n_tool_calls),
                "error.type": error_type(error),
            }
            params = getattr(call, "request_params", None)
            if isinstance(params, dict):
                attributes.update(request_attributes(params))
            if self.content:
                row = call_rows[position] if position < len(call_rows) else None
                messages = None if row is None else self.context_at(row, _text(call.agent))
                if messages is not None:
                    attributes["gen_ai.input.messages"] = messages
                attributes.update(_definitions(call))
                output = self.output_of(call, error)
                if output is not None:
                    attributes["gen_ai.output.messages"] = output
            span = SpanData(
                t.trace_of(run_id), self.new_id("llm", run_id, str(call.call_index)), self.run_span(run_id),
                f"chat {call.model}", CLIENT, start, start + round(float(duration) * 1e9), attributes, error,
            )  # fmt: skip
            self.add(span)

    def output_of(self, call: Any, error: str | None) -> list[Any] | None:
        if error is not None:
            return None
        finish = _text(call.finish_reason) or "stop"
        reason = _FINISH.get(finish, finish)
        if finish == "function_calls":
            key = _text(getattr(call, "llm_call_id", None))
            parts = self.requested(key) if key is not None else []
            return [{"role": "assistant", "parts": parts, "finish_reason": reason}] if parts else None
        text = _text(call.response_text)
        if text is None:
            return None
        return [{"role": "assistant", "parts": [_text_part(text)], "finish_reason": reason}]

    def tool_spans(self) -> None:
        t = self.t
        index_in_run: dict[str, int] = {}
        status = dict(zip(t.run_ids, t.runs["status"]))
        for tool in _rows(t.tools):
            run_id = str(tool.run_id)
            position = index_in_run.get(run_id, 0)
            index_in_run[run_id] = position + 1
            if not t.keeps(run_id):
                continue
            start = _ns(tool.started_at)
            duration = seconds(tool.duration_s)  # out of range: missing, no span
            if start is None or duration is None or json_value(tool.is_error) is None:
                continue  # still running
            failed = _flag(tool.is_error)
            result = _text(tool.result)
            kind_of_error = tool_error_type(result) if failed else None
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": _text(tool.tool_name),
                "gen_ai.tool.type": "function",
                "gen_ai.tool.call.id": _text(tool.call_id) or None,
                "nbagent.iteration": _number(tool.iteration),
                "nbagent.concurrent_with": _number(tool.concurrent_with),
                "nbagent.llm_call_id": _text(getattr(tool, "llm_call_id", None)),
                "nbagent.run_status": status.get(run_id),
                "error.type": kind_of_error,
            }
            if self.content:
                attributes["gen_ai.tool.call.arguments"] = tool.arguments
                if not failed and result is not None:
                    attributes["gen_ai.tool.call.result"] = result  # on success only
            span = SpanData(
                t.trace_of(run_id), self.new_id("tool", run_id, str(position)), self.run_span(run_id),
                f"execute_tool {tool.tool_name}", INTERNAL, start, start + round(float(duration) * 1e9), attributes,
                (result or "the tool call failed") if failed else None,
            )  # fmt: skip
            self.add(span)

    def memory_spans(self) -> None:
        t = self.t
        index_in_run: dict[str, int] = {}
        tasks = dict(zip(t.run_ids, t.runs["task"]))
        agents = dict(zip(t.run_ids, t.runs["agent"]))
        started: dict[str, int] = {}
        for row, (kind, run, move) in enumerate(zip(self.kinds, self.event_runs, self.event_moves)):
            if run is None:
                continue
            run_id = str(run)
            if kind == "Move" and move == "memory":
                started[run_id] = row
                continue
            if kind != "MemoryQueryEvent":
                continue
            position = index_in_run.get(run_id, 0)
            index_in_run[run_id] = position + 1
            begin = started.pop(run_id, row)
            if not t.keeps(run_id):
                continue
            start, end = _ns(self.event_times[begin]), _ns(self.event_times[row])
            if start is None or end is None:
                continue
            attributes: dict[str, Any] = {
                "gen_ai.operation.name": "retrieval",
                "gen_ai.agent.name": _text(agents.get(run_id)),
            }
            if self.content:
                attributes["gen_ai.retrieval.query.text"] = _text(tasks.get(run_id))
                attributes["nbagent.memory.content"] = _text(self.event_texts[row]) or ""
            self.add(
                SpanData(
                    t.trace_of(run_id),
                    self.new_id("memory", run_id, str(position)),
                    self.run_span(run_id),
                    "retrieval",
                    INTERNAL,
                    start,
                    end,
                    attributes,
                )  # fmt: skip
            )


def _definitions(call: Any) -> dict[str, Any]:
    """The system instructions and tool definitions of an LLM call's row (content)."""
    out: dict[str, Any] = {}
    system = _text(getattr(call, "system_instructions", None))
    if system:
        out["gen_ai.system_instructions"] = [_text_part(system)]
    tools = getattr(call, "tool_definitions", None)
    if isinstance(tools, list) and tools:
        out["gen_ai.tool.definitions"] = tools
    return out


class SpanSource(Protocol):
    """A trace that gives its span tables (every trace: ``TraceFrames.span_tables``)."""

    def span_tables(self) -> SpanTables: ...


def spans_of(
    trace: SpanSource | SpanTables,
    content: bool = False,
    runs: Collection[str] | None = None,
    handoffs: dict[str, tuple[str, str]] | None = None,
) -> list[SpanData]:
    """The spans of ``trace`` (of the runs ``runs`` only, if given): only ended work.

    ``handoffs`` maps an agent to the (trace id, span id) of the last run that handed it the
    conversation and is updated in place: a recorder that sends run by run keeps it between runs.
    """
    source = trace if isinstance(trace, SpanTables) else trace.span_tables()
    return _Spans(_Tables(source, runs), content, {} if handoffs is None else handoffs).build()


# --------------------------------------------------------------------------- protobuf


def _any_value(value: Any) -> Any:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue

    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=valid_text(item)) for item in value]))
    return AnyValue(string_value=valid_text(_string_form(value)))  # protobuf takes valid UTF-8 alone


def _string_form(value: Any) -> str:
    """A value sent as a string: a string as it is; structured content (messages, definitions,
    records, arguments) as JSON text, as the conventions allow."""
    return value if isinstance(value, str) else dumps(value)


def _is_string(value: Any) -> bool:
    """Whether :func:`_any_value` sends ``value`` as a ``string_value``."""
    if isinstance(value, (bool, int, float)):
        return False
    return not (isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value))


SLICE = 65_536
"""Strings longer than this are JSON-escaped, encoded and copied into the request in pieces of this many
characters: one ``json.dumps``, ``encode`` or protobuf copy of a several-MB text holds the interpreter lock
(so the event loop, when the sender thread does it) 5-50 ms; a piece well under 1 ms."""


def dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False, default=str)``, made with no call escaping a long text
    whole (see :func:`_json_pieces`)."""
    return "".join(_json_pieces(value))


_SWAP_FROM = 1024  # strings this long are escaped on their own, the rest in one json.dumps


def _json_pieces(value: Any) -> list[str]:
    """``json.dumps(value, ensure_ascii=False, default=str)`` as pieces, each string longer than
    :data:`_SWAP_FROM` escaped on its own, in pieces of :data:`SLICE` characters (escaping is character
    by character: the text is the same)."""
    long: list[str] = []

    def swap(item: Any) -> Any:
        if isinstance(item, str):
            if len(item) <= _SWAP_FROM:
                return item
            long.append(item)
            return f"{marker}{len(long) - 1}"
        if isinstance(item, dict):
            return {key: swap(one) for key, one in item.items()}
        if isinstance(item, (list, tuple)):
            return [swap(one) for one in item]
        return item

    marker = f"\x00nbagent-long-{uuid.uuid4().hex}-"
    swapped = swap(value)
    text = json.dumps(swapped, ensure_ascii=False, default=str)
    if not long:
        return [text]
    cut = re.split(re.escape(json.dumps(marker)[:-1]) + r'(\d+)"', text)
    if cut[1::2] != [str(i) for i in range(len(long))]:  # not where expected: the plain way
        return [json.dumps(value, ensure_ascii=False, default=str)]
    out = [cut[0]]
    for item, after in zip(long, cut[2::2]):
        out.append('"')
        out += (json.dumps(item[at : at + SLICE], ensure_ascii=False)[1:-1] for at in range(0, len(item), SLICE))
        out += ('"', after)
    return out


def _key_values(attributes: Mapping[str, Any]) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    return [KeyValue(key=key, value=_any_value(value)) for key, value in _attributes(attributes)]


def _attributes(attributes: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The attributes that have a value, as JSON-like values."""
    out = []
    for key, value in attributes.items():
        value = json_value(value) if not isinstance(value, (list, dict)) else value
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        out.append((key, value))
    return out


def _span_head(data: SpanData) -> Any:
    """A span's fields before its attributes (ids, name, kind, times, parent) as a ``Span`` message."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span

    head = Span(
        trace_id=bytes.fromhex(data.trace_id),
        span_id=bytes.fromhex(data.span_id),
        name=data.name,
        kind=data.kind,  # type: ignore[arg-type]
        start_time_unix_nano=data.start_ns,
        end_time_unix_nano=max(data.end_ns, data.start_ns),
    )
    if data.parent is not None:
        head.parent_span_id = bytes.fromhex(data.parent)
    return head


def _span_tail(data: SpanData) -> Any:
    """A span's fields after its attributes (links, error status) as a ``Span`` message."""
    from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

    tail = Span(
        links=[
            Span.Link(trace_id=bytes.fromhex(t), span_id=bytes.fromhex(s), attributes=_key_values(a))
            for t, s, a in data.links
        ]
    )
    if data.error is not None:
        tail.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=data.error))
    return tail


def export_request(spans: Iterable[SpanData]) -> Any:
    """The spans as an ``ExportTraceServiceRequest`` (opentelemetry-proto), service ``nbagent``."""
    require_proto()
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans

    built = []
    for data in spans:
        span = _span_head(data)
        span.attributes.extend(_key_values(data.attributes))
        span.MergeFrom(_span_tail(data))
        built.append(span)
    resource = Resource(attributes=_key_values({"service.name": "nbagent", "telemetry.sdk.name": "nbagent"}))
    scope = InstrumentationScope(name="nbagent.trace", version=_version())
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(scope=scope, spans=built)])]
    )


def _varint(number: int) -> bytes:
    out = bytearray()
    while number > 0x7F:
        out.append(number & 0x7F | 0x80)
        number >>= 7
    out.append(number)
    return bytes(out)


def _field(number: int, parts: list[bytes]) -> list[bytes]:
    """A length-delimited field ``number`` holding ``parts`` (joined), as pieces."""
    return [_varint(number << 3 | 2), _varint(sum(len(part) for part in parts)), *parts]


def _utf8(text: str) -> list[bytes]:
    return [text[at : at + SLICE].encode() for at in range(0, len(text), SLICE)]


def _key_value_bytes(key: str, value: Any) -> list[bytes]:
    """One ``KeyValue``'s bytes as pieces: a long string value copied in pieces, others by protobuf."""
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

    if not _is_string(value):
        return [KeyValue(key=key, value=_any_value(value)).SerializeToString()]
    pieces = [value] if isinstance(value, str) else _json_pieces(value)
    if sum(len(piece) for piece in pieces) <= SLICE:
        return [KeyValue(key=key, value=AnyValue(string_value="".join(pieces))).SerializeToString()]
    encoded = [chunk for piece in pieces for chunk in _utf8(piece)]
    return [*_field(1, [key.encode()]), *_field(2, _field(1, encoded))]


def serialize_request(spans: Iterable[SpanData]) -> bytes:
    """``export_request(spans).SerializeToString()``: the same bytes (:func:`request_blocks` joined)."""
    return b"".join(request_blocks(spans))


def request_blocks(spans: Iterable[SpanData]) -> list[bytes]:
    """``export_request(spans).SerializeToString()`` in blocks of about :data:`SLICE` bytes (or up to
    4 times that), made with no call copying a long text whole: each span's fields and each attribute
    are serialized on their own and long string values escaped, encoded and copied in pieces (building
    the request message copied every span, 45 ms with a 5 MB tool output, and joining 10 MB took 6 ms,
    each one call holding the interpreter lock). :func:`post` sends the blocks one by one."""
    require_proto()
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource

    spans_part: list[bytes] = []
    for data in spans:
        head, tail = _span_head(data), _span_tail(data)
        body = [head.SerializeToString()]
        for key, value in _attributes(data.attributes):
            body += _field(9, _key_value_bytes(key, value))
        body.append(tail.SerializeToString())
        spans_part += _field(2, body)
    resource = Resource(attributes=_key_values({"service.name": "nbagent", "telemetry.sdk.name": "nbagent"}))
    scope = InstrumentationScope(name="nbagent.trace", version=_version())
    scope_spans = [*_field(1, [scope.SerializeToString()]), *spans_part]
    resource_spans = [*_field(1, [resource.SerializeToString()]), *_field(2, scope_spans)]
    blocks: list[bytes] = []
    small: list[bytes] = []
    size = 0
    for part in _field(1, resource_spans):
        if len(part) >= SLICE:
            if small:
                blocks.append(b"".join(small))
                small, size = [], 0
            blocks.append(part)
            continue
        small.append(part)
        size += len(part)
        if size >= SLICE:
            blocks.append(b"".join(small))
            small, size = [], 0
    if small:
        blocks.append(b"".join(small))
    return blocks


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("nbagent-loop")  # the distribution's name (the import name is nbagent)
    except PackageNotFoundError:
        return ""


_ID_KEYS = ("traceId", "spanId", "parentSpanId")


def _hex_ids(node: Any) -> None:
    """protobuf's JSON has bytes in base64; OTLP-JSON has trace and span ids in hex."""
    import base64

    if isinstance(node, dict):
        for key, value in node.items():
            if key in _ID_KEYS and isinstance(value, str):
                node[key] = base64.b64decode(value).hex()
            else:
                _hex_ids(value)
    elif isinstance(node, list):
        for item in node:
            _hex_ids(item)


def to_json(request: Any) -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` in OTLP-JSON: protobuf's JSON mapping (lowerCamelCase names,
    64-bit integers as strings) with enums as integers and ids in hex, as the OTLP spec says."""
    from google.protobuf.json_format import MessageToDict

    document: dict[str, Any] = MessageToDict(request, use_integers_for_enums=True)
    _hex_ids(document)
    return document


def otlp_json(trace: TraceTables, content: bool = False) -> dict[str, Any]:
    """The trace as an OTLP-JSON ``ExportTraceServiceRequest`` (one OpenTelemetry trace per run)."""
    return to_json(export_request(spans_of(span_tables(trace), content)))


class OTLPSendError(ConnectionError):
    """A send to an OTLP endpoint failed; ``status`` is the HTTP status it answered (``None``: no
    answer: refused, reset, timed out), ``retry_after`` the seconds its ``Retry-After`` asked for. Its
    message carries the endpoint's words: their terminal controls, bidi and zero-width marks are shown,
    never obeyed (:func:`~nbagent.printable.printable`)."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(printable(message))
        self.status = status
        self.retry_after = retry_after

    @property
    def retriable(self) -> bool:
        """Whether sending again may succeed: no answer, 429 (rate limited) or a 5xx."""
        return self.status is None or self.status == 429 or self.status >= 500


def shown_endpoint(endpoint: str) -> str:
    """``endpoint`` as errors show it: without a ``user:password@``."""
    parts = urllib.parse.urlsplit(endpoint)
    if "@" not in parts.netloc:
        return endpoint
    return urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _abort(connection: http.client.HTTPConnection, fired: threading.Event) -> None:
    """The deadline passed: cut the connection, so the read blocked on it returns at once."""
    fired.set()
    sock = connection.sock
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def post(endpoint: str, request: Any, headers: Mapping[str, str] | None = None, timeout: float = 30.0) -> int:
    """POST ``request`` (an ``ExportTraceServiceRequest``, its bytes, or its bytes as a list of blocks
    sent one after another: :func:`request_blocks`) to ``endpoint`` as OTLP/HTTP protobuf; the HTTP
    status. ``timeout`` bounds the whole send (connecting, sending, the answer
    however slowly it trickles). Every failure is an :class:`OTLPSendError` that names the endpoint:
    a refused connection, no answer within ``timeout``, or a status >= 300."""
    body: bytes | list[bytes] = request if isinstance(request, (bytes, list)) else request.SerializeToString()
    length = len(body) if isinstance(body, bytes) else sum(len(block) for block in body)
    shown = shown_endpoint(endpoint)
    url = urllib.parse.urlsplit(endpoint)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ValueError(f"an OTLP endpoint is an http:// or https:// URL, not {shown!r}")
    kind = http.client.HTTPSConnection if url.scheme == "https" else http.client.HTTPConnection
    connection = kind(url.hostname, url.port, timeout=timeout)
    target = (url.path or "/") + (f"?{url.query}" if url.query else "")
    fired = threading.Event()
    deadline = threading.Timer(timeout, _abort, (connection, fired))
    deadline.daemon = True
    deadline.start()
    try:
        sent = {"Content-Type": "application/x-protobuf", "Content-Length": str(length), **(headers or {})}
        connection.request("POST", target, body, sent)
        response = connection.getresponse()
        status = int(response.status)
        detail = response.read(500) if status >= 300 else b""
        retry_after = response.getheader("Retry-After")
    except (OSError, http.client.HTTPException) as error:
        if fired.is_set() or isinstance(error, TimeoutError):
            raise OTLPSendError(f"OTLP endpoint {shown} did not answer within {timeout:.3g} s") from error
        if isinstance(error, ConnectionRefusedError):
            raise OTLPSendError(f"OTLP endpoint {shown} refused the connection") from error
        raise OTLPSendError(f"OTLP endpoint {shown}: {type(error).__name__}: {error}") from error
    finally:
        deadline.cancel()
        connection.close()
    if status >= 300:
        text = detail.decode("utf-8", "replace")
        wait = float(retry_after) if retry_after and retry_after.strip().isdigit() else None
        raise OTLPSendError(f"OTLP endpoint {shown} answered {status}: {text}", status, wait)
    return status
