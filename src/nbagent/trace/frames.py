"""The four frames of a trace, built from its rows: ``events``, ``llm_calls``, ``tool_calls`` and ``runs``.

Each builder takes the rows (every chunk's id drawn, see :meth:`RowStore.name_chunks`), the trace's
id and its redactor, and gives a frame with the columns and dtypes of :data:`~nbagent.trace.COLUMNS`.
pandas (and numpy) are imported only here, when a frame is built.
"""

from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import TYPE_CHECKING, Any

from ..messages import HandoffMessage, Response, SystemMessage
from ..models.base import ModelRequest, UnreportedUsage
from ..records import MOVES, Intervention, LLMCall, RunFinished, RunStarted, ToolExecution
from ..redact import Redactor, keep
from .recording import STEPS
from .rows import Row, records_of, split
from .schema import CHUNK_KIND, COLUMNS, frame, shared_texts, utc_times
from .texts import calls_text, event_text, optional_text, parse_arguments, redact_chunks, redacted_value

if TYPE_CHECKING:
    import pandas as pd

Anchor = tuple[int, float]
"""A wall-clock time (ns since the epoch) and the ``perf_counter`` time it was read at: row times
(``perf_counter``) become timestamps from it."""


def run_agents(rows: Sequence[Row]) -> dict[str, str]:
    """The agent of each run (from its ``RunStarted``)."""
    return {row.run_id: row.agent for row in rows if type(row) is RunStarted}


def times_ns(perfs: Sequence[float], anchor: Anchor) -> list[int]:
    """``perf_counter`` times as ns since the epoch, to the microsecond (the frames' timestamps)."""
    wall_ns, perf0 = anchor
    return [(ns := wall_ns + int((perf - perf0) * 1e9)) - ns % 1000 for perf in perfs]


Fill = tuple[int | None, str | None, int | None]
"""A row's step, move and iteration."""


def per_run(
    runs: Sequence[str | None], perfs: Sequence[float], agents: dict[str, str], own: dict[int, Fill]
) -> tuple[list[int | None], list[str | None], list[float | None], list[Fill]]:
    """What each row's run says of it, in one pass: its position in the run, the run's agent, its
    seconds since the run's first row, and its step, move and iteration (each its ``own`` or else the
    last its run had before it); all null for a row of no run."""
    counts: dict[str, int] = {}
    firsts: dict[str, float] = {}
    last: dict[str, Fill] = {}
    none: Fill = (None, None, None)
    seq: list[int | None] = []
    agent: list[str | None] = []
    elapsed: list[float | None] = []
    filled: list[Fill] = []
    for index, (run, perf) in enumerate(zip(runs, perfs)):
        if run is None:
            seq.append(None)
            agent.append(None)
            elapsed.append(None)
            filled.append(none)
            continue
        count = counts.get(run, 0)
        counts[run] = count + 1
        seq.append(count)
        agent.append(agents.get(run))
        elapsed.append(perf - firsts.setdefault(run, perf))
        fill = last.get(run, none)
        mine = own.get(index)
        if mine is not None:
            fill = last[run] = (
                fill[0] if mine[0] is None else mine[0],
                fill[1] if mine[1] is None else mine[1],
                fill[2] if mine[2] is None else mine[2],
            )
        filled.append(fill)
    return seq, agent, elapsed, filled


def events_frame(
    rows: Sequence[Row], trace_id: str, red: Redactor, anchor: Anchor, include_chunks: bool = True
) -> pd.DataFrame:
    """One row per recorded item, streamed chunks included unless ``include_chunks=False``."""
    import numpy as np

    parts = split(rows)
    n = len(parts)
    run_col, perf_col = parts.runs, parts.perfs
    started = run_agents(rows)
    kinds: list[str | None] = [None] * n
    texts: list[str | None] = [None] * n
    event_ids: list[str | None] = [None] * n
    message_ids: list[str | None] = [None] * n
    sources: list[str | None] = [None] * n
    sparse: dict[int, Fill] = {}
    usage: dict[int, tuple[int, int]] = {}
    chunks_of: dict[str | None, list[int]] = {}
    for index, (run, _, content, chunk_id, message_id) in zip(parts.chunk_at, parts.chunks):
        kinds[index] = CHUNK_KIND
        texts[index] = content
        event_ids[index] = chunk_id
        message_ids[index] = message_id
        sources[index] = started.get(run)
        chunks_of.setdefault(message_id, []).append(index)
    for index, (_, _, name, iteration) in zip(parts.move_at, parts.moves):
        kinds[index] = "Move"
        sparse[index] = (STEPS[name], name, iteration)
        texts[index] = MOVES[name].title
    for index, record in zip(parts.record_at, parts.records):
        kinds[index] = type(record).__name__
        if type(record) is LLMCall:
            sparse[index] = (None, None, record.iteration)
            message_ids[index] = record.message_id
            texts[index] = f"{record.purpose} call to {record.model}"
        elif type(record) is ToolExecution:
            sparse[index] = (None, None, record.iteration)
            texts[index] = calls_text([record.call], red)
        elif type(record) is RunStarted:
            sources[index] = record.agent
            texts[index] = red("\n".join(message.to_text() for message in record.task))
        elif type(record) is RunFinished:
            sources[index] = record.agent
            texts[index] = red(record.status if record.error is None else f"{record.status}: {record.error}")
        elif type(record) is Intervention:
            texts[index] = red(f"{record.kind} before move {record.move}: {record.change}")
    for index, (_, _, item) in zip(parts.event_at, parts.events):
        if isinstance(item, Response):
            message = item.chat_message
            kinds[index] = "Response"
            event_ids[index] = message_ids[index] = message.id
            sources[index] = message.source
            texts[index] = red(message.to_text())
        else:
            kinds[index] = type(item).__name__
            event_ids[index] = message_ids[index] = item.id
            sources[index] = item.source
            texts[index] = red(event_text(item, red))
            if item.models_usage is not None:
                usage[index] = (item.models_usage.prompt_tokens, item.models_usage.completion_tokens)
    if red is not keep:
        redact_chunks(texts, chunks_of, red)

    seq, agents, elapsed, filled = per_run(run_col, perf_col, started, sparse)
    data = {
        "trace_id": [trace_id] * n,
        "run_id": run_col,
        "agent": agents,
        "seq": seq,
        "kind": kinds,
        "step": [fill[0] for fill in filled],
        "move": [fill[1] for fill in filled],
        "iteration": [fill[2] for fill in filled],
        "event_id": event_ids,
        "message_id": message_ids,
        "source": sources,
        "text": texts,
        "prompt_tokens": [usage[i][0] if i in usage else None for i in range(n)],
        "completion_tokens": [usage[i][1] if i in usage else None for i in range(n)],
        "timestamp": utc_times(np.array(times_ns(perf_col, anchor), dtype="int64")),
        "elapsed_s": elapsed,
    }
    df = frame("events", data, shared_texts(red))
    return df if include_chunks else df[df["kind"] != CHUNK_KIND].reset_index(drop=True)


@dataclass(slots=True)
class EventColumns:
    """The columns of :func:`events_frame` an OTLP export reads, as lists of plain values (no pandas): per
    row its kind, run, time (ns since the epoch, to the microsecond, as the frame has it) and move (a
    ``Move`` row's name); the text of the rows of the kinds asked for (the others ``None``)."""

    kinds: list[str]
    runs: list[str | None]
    times: list[int]
    moves: list[str | None]
    texts: list[str | None]


def event_columns(rows: Sequence[Row], red: Redactor, anchor: Anchor, text_of: Collection[type]) -> EventColumns:
    """:class:`EventColumns` of ``rows``; texts of the events of the types ``text_of`` only, as
    :func:`events_frame` has them."""
    parts = split(rows)
    n = len(parts)
    kinds = [CHUNK_KIND] * n
    moves: list[str | None] = [None] * n
    texts: list[str | None] = [None] * n
    for index, (_, _, name, _) in zip(parts.move_at, parts.moves):
        kinds[index] = "Move"
        moves[index] = name
    for index, record in zip(parts.record_at, parts.records):
        kinds[index] = type(record).__name__
    for index, (_, _, item) in zip(parts.event_at, parts.events):
        kind = type(item)
        kinds[index] = "Response" if kind is Response else kind.__name__
        if kind in text_of and not isinstance(item, Response):
            texts[index] = red(event_text(item, red))
    return EventColumns(kinds, parts.runs, times_ns(parts.perfs, anchor), moves, texts)


_NOT_PARAMETERS = ("messages", "tools")  # the request's content: n_messages, system_instructions, tool_definitions


def request_params(call: LLMCall, red: Redactor) -> dict[str, Any]:
    """The parameters of a call's request by their names on the wire, redacted: as its client sent
    them when it says (``LLMCall.sent``: nbagent's OpenAI client, overrides through ``extra_body`` or
    create args included), else the ``tool_choice`` the client was asked for and its create args."""
    sent = call.sent
    if sent is None:
        request = call.request
        sent = {"tool_choice": request.tool_choice, **request.extra_create_args}
    params = {key: value for key, value in sent.items() if key not in _NOT_PARAMETERS}
    plain: dict[str, Any] = redacted_value(json.loads(json.dumps(params, default=str)), red)  # JSON values
    return plain


def sent_tool_choice(params: dict[str, Any]) -> str | None:
    """The ``tool_choice`` of request parameters as text: auto, none, required or the forced tool's
    name (``{"type": "function", "function": {"name": ...}}``); ``None`` when none was sent."""
    choice = params.get("tool_choice")
    if isinstance(choice, dict):
        function = choice.get("function")
        name = function.get("name") if isinstance(function, dict) else None
        return name if isinstance(name, str) else json.dumps(choice, sort_keys=True)
    return None if choice is None else str(choice)


def system_instructions(request: ModelRequest, red: Redactor) -> str | None:
    """The text of the system messages a request sent before the context, redacted."""
    texts = []
    for message in request.messages:
        if type(message) is not SystemMessage:
            break
        texts.append(message.content)
    return red("\n\n".join(texts)) if texts else None


def tool_definitions(request: ModelRequest, red: Redactor) -> list[dict[str, Any]]:
    """The tools a request offered, in the conventions' shape (gen_ai.tool.definitions)."""
    return [
        {
            "type": "function",
            "name": red(tool.get("name", "")),
            "description": optional_text(tool.get("description"), red),
            "parameters": tool.get("parameters"),
        }
        for tool in request.tools
    ]


def llm_calls_frame(rows: Sequence[Row], trace_id: str, red: Redactor) -> pd.DataFrame:
    """One row per model call."""
    return frame("llm_calls", llm_calls_columns(rows, trace_id, red), shared_texts(red))


def llm_calls_columns(rows: Sequence[Row], trace_id: str, red: Redactor) -> dict[str, list[Any]]:
    """The columns of :func:`llm_calls_frame` as lists of plain values (no pandas)."""
    agents = run_agents(rows)
    cols: dict[str, list[Any]] = {name: [] for name in COLUMNS["llm_calls"]}
    counters: dict[str, int] = {}
    for call in records_of(rows, LLMCall):
        result = call.result
        # A usage the server did not report is missing, not a measured 0 (issue 18).
        usage = result.usage if result is not None and not isinstance(result.usage, UnreportedUsage) else None
        calls = result.content if result is not None and not isinstance(result.content, str) else []
        if result is None:
            answer = None
        elif isinstance(result.content, str):
            answer = red(result.content)
        else:
            answer = calls_text(result.content, red)
        index = counters.get(call.run_id, 0)
        counters[call.run_id] = index + 1
        params = request_params(call, red)
        row = {
            "trace_id": trace_id,
            "run_id": call.run_id,
            "agent": agents.get(call.run_id),
            "call_index": index,
            "llm_call_id": f"{call.run_id}/{index}",
            "iteration": call.iteration,
            "purpose": call.purpose,
            "model": call.model,
            "provider": call.provider,
            "message_id": call.message_id,
            "streaming": call.streaming,
            "n_messages": len(call.request.messages),
            "n_tools": len(call.request.tools),
            "tool_choice": sent_tool_choice(params),
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
            "error": optional_text(call.error, red),
            "response_text": answer,
            "response_model": None if result is None else getattr(result, "response_model", None),
            "response_id": None if result is None else getattr(result, "response_id", None),
            "request_params": params,
            "system_instructions": system_instructions(call.request, red),
            "tool_definitions": tool_definitions(call.request, red),
        }
        for name, value in row.items():
            cols[name].append(value)
    return cols


def overlaps(executions: list[ToolExecution]) -> list[int]:
    """For each call, how many calls of its run overlapped it in time (itself included)."""
    spans = []
    for execution in executions:
        end = execution.start_perf + (execution.duration_s if execution.duration_s is not None else float("inf"))
        spans.append((execution.run_id, execution.start_perf, end))
    by_run: dict[str, list[int]] = {}
    for index, (run_id, _, _) in enumerate(spans):
        by_run.setdefault(run_id, []).append(index)
    counts = [1] * len(spans)
    for indices in by_run.values():  # sorted starts and ends: O(n log n) a run, not O(n^2)
        starts = sorted(spans[j][1] for j in indices)
        ends = sorted(spans[j][2] for j in indices)
        instants = Counter(start for _, start, end in (spans[j] for j in indices) if start == end)
        for i in indices:
            _, start, end = spans[i]
            # j overlaps i when start_j < end and start < end_j: those starting before i ends, less those
            # ended by i's start (each of which started before i ends, but for instants at i's own instant,
            # which did not); i is among them unless it is an instant, then it counts itself
            overlapping = bisect_left(starts, end) - bisect_right(ends, start)
            counts[i] = overlapping + instants[start] + 1 if start == end else overlapping
    return counts


def tool_calls_frame(rows: Sequence[Row], trace_id: str, red: Redactor) -> pd.DataFrame:
    """One row per tool call, with parsed arguments and how many calls ran at once."""
    return frame("tool_calls", tool_calls_columns(rows, trace_id, red), shared_texts(red))


def tool_calls_columns(rows: Sequence[Row], trace_id: str, red: Redactor) -> dict[str, list[Any]]:
    """The columns of :func:`tool_calls_frame` as lists of plain values (no pandas)."""
    agents = run_agents(rows)
    executions: list[ToolExecution] = []
    requested_by: list[str | None] = []  # the LLM call before each tool call in its run: the one that asked
    calls_in_run: dict[str, int] = {}
    for item in rows:
        if type(item) is LLMCall:
            calls_in_run[item.run_id] = calls_in_run.get(item.run_id, 0) + 1
        elif type(item) is ToolExecution:
            executions.append(item)
            count = calls_in_run.get(item.run_id, 0)
            requested_by.append(f"{item.run_id}/{count - 1}" if count else None)
    concurrent = overlaps(executions)
    cols: dict[str, list[Any]] = {name: [] for name in COLUMNS["tool_calls"]}
    for execution, overlap, llm_call_id in zip(executions, concurrent, requested_by):
        result = execution.result
        row = {
            "trace_id": trace_id,
            "run_id": execution.run_id,
            "agent": agents.get(execution.run_id),
            "iteration": execution.iteration,
            "batch_size": execution.batch_size,
            "call_id": execution.call.id,
            "llm_call_id": llm_call_id,
            "tool_name": red(execution.call.name),  # the model's: it may carry anything
            "arguments": parse_arguments(execution.call.arguments, red),
            "result": None if result is None else red(result.content),
            "is_error": None if result is None else result.is_error,
            "started_at": execution.started_at,
            "duration_s": execution.duration_s,
            "concurrent_with": overlap,
        }
        for name, value in row.items():
            cols[name].append(value)
    return cols


def _run_row(trace_id: str, run_id: str, start: float) -> dict[str, Any]:
    return {
        "trace_id": trace_id, "run_id": run_id, "agent": None, "parent_run_id": None, "forked_from": None,
        "fork_move": None, "max_tool_iterations": None, "reflect_on_tool_use": None, "status": "running",
        "error": None, "started_at": None, "ended_at": None, "duration_s": None, "task": None, "final_type": None,
        "final_text": None, "n_events": 0, "n_chunks": 0, "n_llm_calls": 0, "n_tool_calls": 0,
        "n_tool_errors": 0, "prompt_tokens": 0, "completion_tokens": 0, "handoff_target": None, "_start": start,
    }  # fmt: skip


def runs_frame(rows: Sequence[Row], trace_id: str, red: Redactor) -> pd.DataFrame:
    """One row per run: status, times, counts and tokens."""
    return frame("runs", runs_columns(rows, trace_id, red), shared_texts(red))


def runs_columns(rows: Sequence[Row], trace_id: str, red: Redactor) -> dict[str, list[Any]]:
    """The columns of :func:`runs_frame` as lists of plain values (no pandas)."""
    parts = split(rows)
    # Per run, from the rows in order: its first row's time (until its RunStarted says), its rows and chunks.
    first_perf = dict(zip(reversed(parts.runs), reversed(parts.perfs)))
    counts = Counter(parts.runs)
    chunks = Counter(map(itemgetter(0), parts.chunks))
    runs: dict[str, dict[str, Any]] = {}
    for run_id in dict.fromkeys(parts.runs):  # in the order of their first rows
        if run_id is not None:
            row = runs[run_id] = _run_row(trace_id, run_id, first_perf[run_id])
            row["n_events"], row["n_chunks"] = counts[run_id], chunks[run_id]
    for run_id, _, item in parts.events:
        if run_id is not None and type(item) is Response:
            runs[run_id]["final_type"] = item.chat_message.type
            runs[run_id]["final_text"] = red(item.chat_message.to_text())
            if isinstance(item.chat_message, HandoffMessage):
                runs[run_id]["handoff_target"] = red(item.chat_message.target)
    for record in parts.records:
        row = runs[record.run_id]
        if type(record) is RunStarted:
            row.update(agent=record.agent, started_at=record.started_at, _start=record.start_perf)
            row["parent_run_id"] = record.parent_run_id
            row["forked_from"], row["fork_move"] = record.forked_from, record.fork_move
            if record.loop_settings is not None:
                row["max_tool_iterations"] = record.loop_settings.max_tool_iterations
                row["reflect_on_tool_use"] = record.loop_settings.reflect_on_tool_use
            row["task"] = red("\n".join(message.to_text() for message in record.task))
        elif type(record) is RunFinished:
            row.update(status=record.status, error=optional_text(record.error, red), ended_at=record.ended_at)
            row["duration_s"] = record.end_perf - row["_start"]
        elif type(record) is LLMCall:
            row["n_llm_calls"] += 1
            if record.result is not None:
                row["prompt_tokens"] += record.result.usage.prompt_tokens
                row["completion_tokens"] += record.result.usage.completion_tokens
        elif type(record) is ToolExecution:
            row["n_tool_calls"] += 1
            row["n_tool_errors"] += bool(record.result is not None and record.result.is_error)
    return {name: [row[name] for row in runs.values()] for name in COLUMNS["runs"]}
