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
from typing import TYPE_CHECKING, Any

from .schema import TraceTables, json_value

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


def _ns(stamp: Any) -> int | None:
    import pandas as pd

    if stamp is None or stamp is pd.NaT or (not isinstance(stamp, pd.Timestamp) and pd.isna(stamp)):
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


def _context_messages(logs: pd.DataFrame, tool_results: Mapping[tuple[str, str], list[str]]) -> dict[int, list[Any]]:
    """Every context log as input messages (gen-ai-input-messages.json): ``log -> [message, ...]``.

    A tool result message answers the calls of the assistant message before it: one
    ``tool_call_response`` part per call when their results are known one by one, else one part.
    """
    out: dict[int, list[Any]] = {}
    last_calls: list[dict[str, Any]] = []
    for log, kind, text, calls, thought, run_id in zip(
        logs["log"].tolist(),
        logs["kind"].astype("object").tolist(),
        logs["text"].astype("object").tolist(),
        logs["tool_calls"].tolist(),
        logs["thought"].astype("object").tolist(),
        logs["run_id"].astype("object").tolist(),
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


class _Tables:
    """The frames an export reads, and what is derived from them once."""

    def __init__(self, trace: TraceTables, runs_wanted: Collection[str] | None) -> None:
        self.trace_id = trace.trace_id
        self.runs = trace.runs_df()
        self.llm = trace.llm_calls_df()
        self.tools = trace.tool_calls_df()
        self.events = trace.events_df()
        context = trace.context_tables()
        self.logs = context["context_logs"]
        self.snapshots = context["snapshots"]
        self.wanted = None if runs_wanted is None else set(runs_wanted)
        self.parents: dict[str, str] = {}
        if "parent_run_id" in self.runs:
            for run, parent in zip(self.runs["run_id"].astype(str), self.runs["parent_run_id"].astype("object")):
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

    def __init__(self, snapshots: pd.DataFrame) -> None:
        self.logs = [int(v) for v in snapshots["log"].tolist()]
        self.lengths = [int(v) for v in snapshots["length"].tolist()]
        self.rows: dict[Any, list[int]] = {}
        self.index: dict[Any, list[int]] = {}
        for index, (row, agent) in enumerate(zip(snapshots["event_row"].tolist(), snapshots["agent"].astype("object"))):
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
        self.kinds = events["kind"].astype("object").tolist()
        self.event_runs = events["run_id"].astype("object").tolist()
        self.event_texts = events["text"].astype("object").tolist()
        self.event_times = events["timestamp"].tolist()
        self.event_moves = events["move"].astype("object").tolist()

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
            for run, call_id, result in zip(
                tools["run_id"].astype(str), tools["call_id"].astype("object"), tools["result"].astype("object")
            ):
                results.setdefault((run, str(call_id)), []).append(_text(result) or "")
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
                    tools["llm_call_id"].astype("object"), tools["call_id"].astype("object"),
                    tools["tool_name"].astype("object"), tools["arguments"],
                ):  # fmt: skip
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
        return str(uuid.uuid5(_NAMESPACE, f"{self.t.trace_id}\x1f{agent or ''}\x1f{first}"))

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
        for call in t.llm.itertuples(index=False):
            first_calls.setdefault(str(call.run_id), call)
        call_rows = [i for i, kind in enumerate(self.kinds) if kind == "LLMCall"]
        self.run_spans(first_rows, first_calls)
        self.llm_spans(call_rows)
        self.tool_spans()
        self.memory_spans()
        return self.out

    def run_spans(self, first_rows: Mapping[str, int], first_calls: Mapping[str, Any]) -> None:
        t = self.t
        ordered = t.runs.sort_values("started_at", kind="stable")
        conversations: dict[str, str] = {}
        for run in ordered.itertuples(index=False):
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
        for position, call in enumerate(t.llm.itertuples(index=False)):
            run_id = str(call.run_id)
            if not t.keeps(run_id) or call.status == "running":
                continue
            start = _ns(call.started_at)
            duration = _number(call.duration_s)
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
        status = dict(zip(t.runs["run_id"].astype(str), t.runs["status"].astype("object")))
        llm_spans: dict[str, str] = {}
        if "llm_call_id" in t.llm:
            for run, index, key in zip(t.llm["run_id"].astype(str), t.llm["call_index"], t.llm["llm_call_id"]):
                llm_spans[str(key)] = span_hex("llm", run, str(index))
        for tool in t.tools.itertuples(index=False):
            run_id = str(tool.run_id)
            position = index_in_run.get(run_id, 0)
            index_in_run[run_id] = position + 1
            if not t.keeps(run_id):
                continue
            start = _ns(tool.started_at)
            duration = _number(tool.duration_s)
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
        tasks = dict(zip(t.runs["run_id"].astype(str), t.runs["task"].astype("object")))
        agents = dict(zip(t.runs["run_id"].astype(str), t.runs["agent"].astype("object")))
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


def spans_of(
    trace: TraceTables,
    content: bool = False,
    runs: Collection[str] | None = None,
    handoffs: dict[str, tuple[str, str]] | None = None,
) -> list[SpanData]:
    """The spans of ``trace`` (of the runs ``runs`` only, if given): only ended work.

    ``handoffs`` maps an agent to the (trace id, span id) of the last run that handed it the
    conversation and is updated in place: a recorder that sends run by run keeps it between runs.
    """
    return _Spans(_Tables(trace, runs), content, {} if handoffs is None else handoffs).build()


# --------------------------------------------------------------------------- protobuf


def _any_value(value: Any) -> Any:
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, ArrayValue

    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, str):
        return AnyValue(string_value=value)
    if isinstance(value, (list, tuple)) and all(isinstance(item, str) for item in value):
        return AnyValue(array_value=ArrayValue(values=[AnyValue(string_value=item) for item in value]))
    # Structured content (messages, definitions, records, arguments): JSON text, as the conventions allow.
    return AnyValue(string_value=json.dumps(value, ensure_ascii=False, default=str))


def _key_values(attributes: Mapping[str, Any]) -> list[Any]:
    from opentelemetry.proto.common.v1.common_pb2 import KeyValue

    out = []
    for key, value in attributes.items():
        value = json_value(value) if not isinstance(value, (list, dict)) else value
        if value is None or (isinstance(value, float) and math.isnan(value)):
            continue
        out.append(KeyValue(key=key, value=_any_value(value)))
    return out


def export_request(spans: Iterable[SpanData]) -> Any:
    """The spans as an ``ExportTraceServiceRequest`` (opentelemetry-proto), service ``nbagent``."""
    require_proto()
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import InstrumentationScope
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

    built = []
    for data in spans:
        span = Span(
            trace_id=bytes.fromhex(data.trace_id),
            span_id=bytes.fromhex(data.span_id),
            name=data.name,
            kind=data.kind,  # type: ignore[arg-type]
            start_time_unix_nano=data.start_ns,
            end_time_unix_nano=max(data.end_ns, data.start_ns),
            attributes=_key_values(data.attributes),
            links=[
                Span.Link(trace_id=bytes.fromhex(t), span_id=bytes.fromhex(s), attributes=_key_values(a))
                for t, s, a in data.links
            ],
        )
        if data.parent is not None:
            span.parent_span_id = bytes.fromhex(data.parent)
        if data.error is not None:
            span.status.CopyFrom(Status(code=Status.STATUS_CODE_ERROR, message=data.error))
        built.append(span)
    resource = Resource(attributes=_key_values({"service.name": "nbagent", "telemetry.sdk.name": "nbagent"}))
    scope = InstrumentationScope(name="nbagent.trace", version=_version())
    return ExportTraceServiceRequest(
        resource_spans=[ResourceSpans(resource=resource, scope_spans=[ScopeSpans(scope=scope, spans=built)])]
    )


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
    return to_json(export_request(spans_of(trace, content)))


class OTLPSendError(ConnectionError):
    """A send to an OTLP endpoint failed; ``status`` is the HTTP status it answered (``None``: no
    answer: refused, reset, timed out), ``retry_after`` the seconds its ``Retry-After`` asked for."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None) -> None:
        super().__init__(message)
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
    """POST ``request`` (an ``ExportTraceServiceRequest``, or its bytes) to ``endpoint`` as OTLP/HTTP
    protobuf; the HTTP status. ``timeout`` bounds the whole send (connecting, sending, the answer
    however slowly it trickles). Every failure is an :class:`OTLPSendError` that names the endpoint:
    a refused connection, no answer within ``timeout``, or a status >= 300."""
    body = request if isinstance(request, bytes) else request.SerializeToString()
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
        connection.request("POST", target, body, {"Content-Type": "application/x-protobuf", **(headers or {})})
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
