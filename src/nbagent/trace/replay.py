"""Replay a recorded run offline: what ``trace.replay(run_id)`` reads back from a trace's frames.

A :class:`Replay` holds everything the frames keep of one run (live trace or loaded one alike: it is
built from ``events_df``, ``llm_calls_df``, ``tool_calls_df``, ``runs_df`` and ``context_df``): the
task, the context the run started from, the system message, the tools offered, the loop settings its
moves show, the model's answers (text or tool calls, streamed pieces, usage, thought, finish reason,
errors) and the tools' and memory stores' results. Its parts stand in for the real ones:

* :class:`RecordedChatCompletionClient` answers each call with the recorded answer (streamed as the
  recorded pieces), under the recorded model name, provider and request parameters;
* :class:`RecordedWorkbench` offers the recorded tool schemas and gives each call its recorded result,
  by call id, without calling any tool;
* :class:`RecordedMemory` adds the recorded hits to the context and reports them.

``AssistantAgent.from_replay(replay)`` assembles an agent of them (the loop layer; this layer knows no
agent); ``nbagent.run``, ``nbagent.step``, ``nbagent.show`` and ``nbagent.start`` take a replay as
they take an agent, its task included.

What a replay cannot reproduce (:data:`LIMITS`): tool side effects (no tool runs), a real model's
answers to anything the recording does not hold (after a fork changes the course, a replayed model has
no answer: give one, or a real client), text the trace redacted (it is replayed redacted), a
context's own policy (a buffered or token-limited context replays as an unbounded one), images (their
placeholders), the Python class of a structured output read from a file (a model of the same fields
is made; an answer that failed to parse replays as text), and custom summary formatters (the
recorded summary lines are given back).

A recorded file is data: no format string, ``eval`` or attribute lookup is built from its contents. A
structured answer whose keys cannot be a model's fields is replayed as its JSON, and the replay's
``limits`` say so (:data:`UNREBUILT`).
"""

from __future__ import annotations

import asyncio
import bisect
import json
import re
import string
from collections import deque
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import BaseModel, ConfigDict, create_model

from .._check import wrong_value
from ..cancellation import CancellationToken, guarded
from ..context import ChatCompletionContext
from ..memory import Memory, MemoryQueryResult, UpdateContextResult
from ..messages import (
    AssistantMessage,
    BaseChatMessage,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    MemoryContent,
    RequestUsage,
    Response,
    SystemMessage,
    TextMessage,
    UserMessage,
)
from ..models.base import ChatCompletionClient, ModelError, ModelInfo, ModelRequest, ModelStream, UnreportedUsage
from ..models.replay import ReplayExhaustedError
from ..records import CANCELLED_TOOL_RESULT, LoopSettings, RunStarted
from ..tools import Handoff, ToolResult, ToolSchema, Workbench
from .schema import CHUNK_KIND, TraceTables, seconds

if TYPE_CHECKING:
    import pandas as pd


class ReplaySource(TraceTables, Protocol):
    """What a replay reads of a trace (a live or a loaded one): its tables and its context at a point."""

    def context_df(
        self, run_id: str | None = None, seq: int | None = None, agent: str | None = None
    ) -> pd.DataFrame: ...


LIMITS = (
    "A replay gives back what the trace recorded; it does not reproduce: tool side effects (no tool "
    "runs), a real model's answers beyond the recording (after a fork that changes the course, give the "
    "answer or a real model client), text the trace redacted (replayed redacted), a buffered or "
    "token-limited context's policy (replayed unbounded), images (their placeholders), a structured "
    "output's own class when read from a file (a model of the same fields is made; an answer that failed "
    "to parse it replays as text), "
    "custom summary formatters (the recorded summary lines are given back)."
)
"""What a replay cannot reproduce, as the docstrings and the views say it."""


@dataclass(frozen=True)
class RecordedAnswer:
    """One recorded model call: its answer (or error), its streamed pieces and its timing."""

    result: CreateResult | None
    error: str | None = None
    chunks: tuple[str, ...] | None = None
    chunk_gaps: tuple[float, ...] = ()
    duration_s: float | None = None
    ttft_s: float | None = None


@dataclass(frozen=True)
class RecordedMemoryHit:
    """What one memory store's query gave in STEP 2: its hits' text and the messages it added."""

    text: str | None
    added: tuple[LLMMessage, ...] = ()


@dataclass(frozen=True)
class Replay:
    """A recorded run, read back from a trace so that the loop can make it again offline.

    ``nbagent.run(replay)``, ``nbagent.step(replay)`` and ``nbagent.show(replay)`` take it as an agent
    with its task; ``AssistantAgent.from_replay(replay)`` gives the agent. The replayed run's events,
    context and frames equal the recorded ones, ids and times aside. ``pace=True`` (at
    ``trace.replay``) waits the recorded times. What a replay cannot reproduce: :data:`LIMITS`.
    """

    run_id: str
    trace_id: str
    agent: str
    status: str
    task: tuple[BaseChatMessage, ...]
    start_context: tuple[LLMMessage, ...]
    system_message: str | None
    tools: tuple[ToolSchema, ...]
    handoffs: tuple[Handoff, ...]
    answers: tuple[RecordedAnswer, ...]
    tool_results: tuple[tuple[str, str, str, bool, float | None], ...]
    """``(call_id, name, content, is_error, duration_s)`` per recorded tool call, in order."""
    memory: tuple[RecordedMemoryHit, ...] | None
    settings: LoopSettings
    model: str
    provider: str
    model_client_stream: bool
    create_args: Mapping[str, Any] = field(default_factory=dict)
    output_content_type: type[BaseModel] | None = None
    output_content_type_format: str | None = None
    summary_lines: Mapping[str, str] | None = None
    """A recorded summary not made by the default format: its line per call id."""
    pace: bool = False
    limits: str = LIMITS

    @property
    def title(self) -> str:
        """What a view of the replay is titled: the run it replays, and what a replay gives back."""
        return (
            f"replay of run {self.run_id} ({self.agent}): recorded answers and tool results, no model or "
            "tool called (tool side effects are not made again)"
        )

    def model_client(self) -> RecordedChatCompletionClient:
        """A client that answers the recorded calls, in order."""
        return RecordedChatCompletionClient(
            self.answers,
            model=self.model,
            provider=self.provider,
            create_args=self.create_args,
            pace=self.pace,
            structured=self.output_content_type is not None,
        )

    def workbench(self) -> RecordedWorkbench:
        """A workbench that offers the recorded tools and gives each call its recorded result."""
        return RecordedWorkbench(
            [schema for schema in self.tools if schema["name"] not in {h.name for h in self.handoffs}],
            self.tool_results,
            pace=self.pace,
            cancels=self.status == "cancelled",
        )

    def memories(self) -> list[RecordedMemory]:
        """One store per recorded store with hits (one without hits when none had any), or none."""
        if self.memory is None:
            return []
        hits = list(self.memory) or [RecordedMemoryHit(None)]
        return [RecordedMemory(hit) for hit in hits]

    def __repr__(self) -> str:
        calls = len(self.answers)
        return f"Replay(run_id={self.run_id!r}, agent={self.agent!r}, {calls} model calls, status={self.status!r})"

    def _repr_html_(self) -> str:
        from ..render import el

        task = " / ".join(message.to_text() for message in self.task)
        return el(
            "div",
            el("div", f"Replay of run {self.run_id} ({self.agent}, {self.status})", class_="nba-replay-title"),
            el(
                "div",
                f"{len(self.answers)} recorded model calls ({self.model}), "
                f"{len(self.tool_results)} tool results; task: {task}",
            ),
            el("div", self.limits, class_="nba-replay-limits"),
            class_="nba-replay",
        )


class RecordedChatCompletionClient(ChatCompletionClient):
    """Answers each call with the next recorded answer: its text, tool calls, usage, thought, finish
    reason (a recorded error is raised again; a call that never ended is cancelled), streamed as the
    recorded pieces, under the recorded model name and provider. ``pace=True`` waits the recorded
    times. Past the recording it raises :class:`~nbagent.models.replay.ReplayExhaustedError`."""

    def __init__(
        self,
        answers: Sequence[RecordedAnswer],
        *,
        model: str = "replay",
        provider: str = "nbagent.replay",
        create_args: Mapping[str, Any] | None = None,
        pace: bool = False,
        structured: bool = False,
    ) -> None:
        super().__init__()
        self.answers = tuple(answers)
        self._model = model
        self.provider = provider
        self.create_args = dict(create_args or {})
        self.pace = pace
        self.model_info = ModelInfo(
            vision=False, function_calling=True, json_output=True, structured_output=True, family="replay"
        )
        self._index = 0
        self._structured = structured

    @property
    def model_name(self) -> str:
        return self._model

    @property
    def position(self) -> int:
        """The index of the next recorded answer."""
        return self._index

    @position.setter
    def position(self, index: int) -> None:
        if not 0 <= index <= len(self.answers):
            raise ValueError(f"position is between 0 and {len(self.answers)}, got {index}")
        self._index = index

    def copy(self) -> RecordedChatCompletionClient:
        """A client of the same recording at the same position (a fork's)."""
        twin = RecordedChatCompletionClient(
            self.answers, model=self._model, provider=self.provider, create_args=self.create_args, pace=self.pace
        )
        twin._index = self._index
        return twin

    def checkpoint(self) -> object:
        return (self, self._index, self._total_usage, self._actual_usage)

    def restore(self, checkpoint: object | None) -> None:
        if not (isinstance(checkpoint, tuple) and len(checkpoint) == 4 and checkpoint[0] is self):
            raise TypeError("restore() takes a checkpoint() of this same RecordedChatCompletionClient")
        _, self._index, self._total_usage, self._actual_usage = checkpoint

    def _next(self) -> RecordedAnswer:
        if self._index >= len(self.answers):
            raise ReplayExhaustedError(
                f"the recording has no answer for model call {self._index + 1}: the recorded run made "
                f"{len(self.answers)}. A replay answers only the calls the recorded run made; after a fork "
                "that changes the course, give the model's answer or another model client"
            )
        answer = self.answers[self._index]
        self._index += 1
        return answer

    async def _wait(self, seconds: float | None, token: CancellationToken | None) -> None:
        if self.pace and seconds:
            await guarded(asyncio.sleep(seconds), token)

    def _result(self, answer: RecordedAnswer) -> CreateResult:
        if answer.result is None:
            if answer.error is None or answer.error.startswith("CancelledError"):
                raise asyncio.CancelledError("the recorded call never ended: the run was cancelled there")
            raise recorded_error(answer.error)
        self._count_usage(answer.result.usage, actual=False)
        return answer.result

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        answer = self._next()
        await self._wait(answer.duration_s, cancellation_token)
        return self._result(answer)

    async def complete_stream(
        self,
        request: ModelRequest,
        cancellation_token: CancellationToken | None = None,
        stream: ModelStream | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        answer = self._next()
        chunks = answer.chunks or ()
        gaps = answer.chunk_gaps or (0.0,) * len(chunks)
        if not chunks:
            await self._wait(answer.duration_s, cancellation_token)
        for piece, gap in zip(chunks, gaps):
            await self._wait(gap, cancellation_token)
            yield piece
        yield self._result(answer)


_ERRORS: dict[str, type[ModelError]] = {}


def recorded_error(text: str) -> ModelError:
    """The recorded error of a model call, raised again: a ``ModelError`` of the recorded type name
    (``"Name: message"``), so the replayed run's error text is the recorded one."""
    name, _, message = text.partition(": ")
    if not name.isidentifier():
        name, message = "ModelError", text
    kind = _ERRORS.get(name)
    if kind is None:
        kind = _ERRORS[name] = cast(type[ModelError], type(name, (ModelError,), {"__module__": __name__}))
    return kind(message)


class RecordedWorkbench(Workbench):
    """Offers the recorded tool schemas and gives each call the recorded result of its call id (in
    order, when a model reused an id); no tool runs. A call the recording does not hold gets an error
    result saying so; with ``cancels`` (the recorded run was cancelled), a call its cancellation cut
    short is cancelled again there."""

    def __init__(
        self,
        schemas: Sequence[ToolSchema],
        results: Sequence[tuple[str, str, str, bool, float | None]],
        *,
        pace: bool = False,
        cancels: bool = False,
    ) -> None:
        self._schemas = list(schemas)
        self.cancels = cancels
        self._results: dict[str, deque[tuple[str, str, bool, float | None]]] = {}
        for call_id, name, content, is_error, duration in results:
            self._results.setdefault(call_id, deque()).append((name, content, is_error, duration))
        self.pace = pace

    def copy(self) -> RecordedWorkbench:
        """A workbench with the results not given yet (a fork's)."""
        twin = RecordedWorkbench(self._schemas, [], pace=self.pace, cancels=self.cancels)
        twin._results = {key: deque(queue) for key, queue in self._results.items()}
        return twin

    async def list_tools(self) -> list[ToolSchema]:
        return list(self._schemas)

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        cancellation_token: CancellationToken | None = None,
        call_id: str | None = None,
    ) -> ToolResult:
        queue = self._results.get(call_id or "")
        if not queue:
            return ToolResult(name, f"Error: the recording holds no result for tool call {call_id!r} ({name})", True)
        _, content, is_error, duration = queue.popleft()
        if self.pace and duration:
            await guarded(asyncio.sleep(duration), cancellation_token)
        if self.cancels and content == CANCELLED_TOOL_RESULT:  # where the recorded run was cancelled
            raise asyncio.CancelledError("the recorded run was cancelled while this tool call ran")
        return ToolResult(name, content, is_error=is_error)


class RecordedMemory(Memory):
    """A memory store that gives, in STEP 2, the recorded hits and adds the recorded messages."""

    def __init__(self, hit: RecordedMemoryHit) -> None:
        self.hit = hit

    async def query(
        self, query: str | MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> MemoryQueryResult:
        return MemoryQueryResult([] if self.hit.text is None else [MemoryContent(content=self.hit.text)])

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        raise TypeError("a RecordedMemory gives back a recording: nothing can be added to it")

    async def clear(self) -> None:
        return None

    async def update_context(
        self, model_context: ChatCompletionContext, cancellation_token: CancellationToken | None = None
    ) -> UpdateContextResult:
        for message in self.hit.added:
            await model_context.add_message(message)
        return UpdateContextResult(await self.query(""), len(self.hit.added))


# ---------------------------------------------------------------------- reading runs back from frames

Row = dict[str, Any]
"""A frame's row as a dict, its nulls as ``None``."""

Results = dict[tuple[str | None, str], list[tuple[str, bool]]]
"""Recorded tool results ``(content, is_error)`` by ``(run_id, call_id)``, in the order of the calls."""


def _rows(frame: pd.DataFrame, columns: Sequence[str]) -> list[Row]:
    """The rows of ``frame`` (only ``columns``) as dicts, nulls as ``None``: read once, then plain Python."""
    import pandas as pd

    lists = []
    for name in columns:  # ``tolist`` gives the values ``astype("object")`` gives, at half the cost
        values = frame[name].tolist()
        lists.append([None if not isinstance(v, (list, dict)) and pd.isna(v) else v for v in values])
    return [dict(zip(columns, values)) for values in zip(*lists)]


_EVENT_COLUMNS = ("run_id", "kind", "move", "iteration", "text", "message_id", "elapsed_s")
_CALL_COLUMNS = (
    "run_id", "model", "provider", "message_id", "streaming", "purpose", "status", "error", "prompt_tokens",
    "completion_tokens", "finish_reason", "cached", "has_thought", "n_tool_calls", "response_text", "response_model",
    "response_id", "duration_s", "ttft_s", "request_params", "system_instructions", "tool_definitions",
)  # fmt: skip
_TOOL_COLUMNS = (
    "run_id",
    "llm_call_id",
    "iteration",
    "call_id",
    "tool_name",
    "arguments",
    "result",
    "is_error",
    "duration_s",
)
_CONTEXT_COLUMNS = ("log", "kind", "source", "text", "tool_calls", "thought", "run_id", "move")


class ReplayIndex:
    """A trace's frames read once, for the replay of any of its runs (:meth:`replay`): each run's
    rows, model calls and tool calls, and its context at any row through the snapshot tables."""

    def __init__(self, trace: ReplaySource, source: ReplaySource | None = None) -> None:
        self.trace = trace
        # where a structured output's class and the loop settings a run left open are looked up: the
        # live trace a run's rows were taken from (``Trace.run``), else ``trace``
        self.source = trace if source is None else source
        runs = trace.runs_df()
        self.order = [str(r) for r in runs["run_id"]]
        self.runs = {str(row["run_id"]): row for row in _rows(runs, list(runs.columns))}
        self.events: dict[str, list[tuple[int, Row]]] = {}
        for position, row in enumerate(_rows(trace.events_df(), _EVENT_COLUMNS)):
            self.events.setdefault(row["run_id"], []).append((position, row))
        self.calls: dict[str, list[Row]] = {}
        for row in _rows(trace.llm_calls_df(), _CALL_COLUMNS):
            self.calls.setdefault(row["run_id"], []).append(row)
        self.tools: dict[str, list[Row]] = {}
        # each run's tool results by call id, in order, for the tool results in a context: a call id is
        # the model's (the replay model and many servers give "call_1" or "1" in every run), so it is
        # looked up in the run that made the call alone
        self.results: Results = {}
        for row in _rows(trace.tool_calls_df(), _TOOL_COLUMNS):
            self.tools.setdefault(row["run_id"], []).append(row)
            key = (row["run_id"], str(row["call_id"]))
            self.results.setdefault(key, []).append((_text(row["result"]), bool(row["is_error"])))
        tables = trace.context_tables()
        self.logs: dict[int, list[Row]] = {}
        for row in _rows(tables["context_logs"], _CONTEXT_COLUMNS):
            self.logs.setdefault(int(row["log"]), []).append(row)
        self.snapshots: dict[str, tuple[list[int], list[tuple[int, int]]]] = {}
        for row in _rows(tables["snapshots"], ("agent", "event_row", "log", "length")):
            at, where = self.snapshots.setdefault(str(row["agent"]), ([], []))
            at.append(int(row["event_row"]))
            where.append((int(row["log"]), int(row["length"])))

    def context(self, agent: str, position: int) -> list[Row] | None:
        """The context of ``agent`` when row ``position`` was recorded (``None``: none recorded)."""
        found = self.snapshots.get(agent)
        if found is None:
            return None
        at, where = found
        index = bisect.bisect_right(at, position) - 1
        if index < 0:
            return None
        log, length = where[index]
        return self.logs.get(log, [])[:length]

    def replay(self, run_id: str | None = None, *, pace: bool = False) -> Replay:
        """The :class:`Replay` of run ``run_id`` (the last run by default)."""
        if not self.order:
            raise ValueError("trace.replay: the trace holds no run to replay")
        if run_id is None:
            run_id = self.order[-1]
        elif not isinstance(run_id, str):
            raise TypeError(f"trace.replay: run_id must be a run id (str) or None, got {type(run_id).__name__}")
        run = self.runs.get(run_id)
        if run is None:
            known = ", ".join(repr(r) for r in self.order[-5:])
            raise wrong_value("trace.replay", "run_id", f"a run of this trace (the last: {known})", run_id)
        rows = self.events.get(run_id, [])
        events = [row for _, row in rows]
        calls = self.calls.get(run_id, [])
        if not calls:  # a team's run calls no model itself: its participants' runs do (they name it their parent)
            members = [other for other in self.order if self.runs[other].get("parent_run_id") == run_id]
            if members:
                raise wrong_value(
                    "trace.replay",
                    "run_id",
                    "one agent's run (a team's run is not replayed: nbagent replays one agent's loop, not a "
                    "team's turns, speaker selection and termination)",
                    run_id,
                    f"Replay its agents' runs instead: {', '.join(repr(m) for m in members[:5])}",
                )
        tools = self.tools.get(run_id, [])
        agent = str(run["agent"])
        start = self.context(agent, rows[0][0]) if rows else None
        end = self.context(agent, rows[-1][0]) if rows else None
        results = [
            (
                str(row["call_id"]),
                str(row["tool_name"]),
                _text(row["result"]),
                bool(row["is_error"]),
                seconds(row["duration_s"]),
            )
            for row in tools
            if row["is_error"] is not None
        ]
        start_messages = _messages(start or [], self.results)
        added = _messages(end or [], self.results)
        mine = [index for index, row in enumerate(end or []) if row["run_id"] == run_id]
        added_here = [added[index] for index in mine]
        added_moves = [(end or [])[index]["move"] for index in mine]
        moves = [str(row["move"]) for row in events if row["kind"] == "Move"]
        first_tools = next((call for call in calls if call["purpose"] != "reflection"), None)
        schemas = [_schema(definition) for definition in (first_tools or {}).get("tool_definitions") or []]
        system = None
        if calls and calls[0]["system_instructions"] is not None:
            system = _own_system(str(calls[0]["system_instructions"]), start_messages + added_here)
        final_type, final_text = run["final_type"], run["final_text"]
        answers = _answers(events, calls, added_here, tools)
        structured = final_type is not None and str(final_type).startswith("StructuredMessage")
        output_type, output_format, note = _output_type(
            self.source,
            run_id,
            agent,
            None if final_text is None or not structured else str(final_text),
            answers,
            _content_name(str(final_type)) if structured else "RecordedOutput",
        )
        summary = None
        if final_type == "ToolCallSummaryMessage" and final_text is not None:
            summary = _summary_lines(str(final_text), tools)
        first = calls[0] if calls else None
        return Replay(
            run_id=run_id,
            trace_id=self.trace.trace_id,
            agent=agent,
            status=str(run["status"]),
            task=tuple(_task(events, added_moves, added_here)),
            start_context=tuple(start_messages),
            system_message=system,
            tools=tuple(schemas),
            handoffs=tuple(_handoffs(schemas, results, run["handoff_target"], "handoff_check" in moves)),
            answers=tuple(answers),
            tool_results=tuple(results),
            memory=_memory(events, added_moves, added_here) if "memory" in moves else None,
            settings=_settings(self.source, run, events, moves, output_type is not None, calls),
            model="replay" if first is None else str(first["model"]),
            provider="nbagent.replay" if first is None or first["provider"] is None else str(first["provider"]),
            model_client_stream=bool(first is not None and first["streaming"]),
            create_args=_create_args(first),
            output_content_type=output_type,
            output_content_type_format=output_format,
            summary_lines=summary,
            pace=pace,
            limits=LIMITS if note is None else f"{LIMITS} {note}",
        )


def replay_of(
    trace: ReplaySource, run_id: str | None = None, *, pace: bool = False, source: ReplaySource | None = None
) -> Replay:
    """The :class:`Replay` of run ``run_id`` of ``trace`` (the last run by default); ``source``: the live
    trace ``trace`` holds rows of (see :class:`ReplayIndex`)."""
    return ReplayIndex(trace, source).replay(run_id, pace=pace)


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _messages(rows: Sequence[Row], results: Results) -> list[LLMMessage]:
    """The context frame's rows as LLM messages (tool results paired with the calls before them, each
    given the recorded result of its call id in the run that added it, the n-th for the n-th use of an id)."""
    out: list[LLMMessage] = []
    calls: list[dict[str, Any]] = []
    used: dict[tuple[str | None, str], int] = {}
    for row in rows:
        kind, text, source = str(row["kind"]), _text(row["text"]), _text(row["source"])
        thought = None if row["thought"] is None else str(row["thought"])
        if kind == "system":
            out.append(SystemMessage(content=text))
        elif kind == "user":
            out.append(UserMessage(content=text, source=source))
        elif kind == "assistant":
            if row["tool_calls"] is not None:
                calls = [dict(call) for call in row["tool_calls"]]
                content = [
                    FunctionCall(id=str(c["id"]), name=str(c["name"]), arguments=str(c["arguments"])) for c in calls
                ]
                out.append(AssistantMessage(content=content, source=source, thought=thought))
            else:
                out.append(AssistantMessage(content=text, source=source, thought=thought))
        else:
            names = source.split(", ")
            pending = [c for c in calls if str(c["name"]) in names] or calls
            lines = text.split("\n")
            parts: list[FunctionExecutionResult] = []
            for index, call in enumerate(pending[: len(names)]):
                call_id = str(call["id"])
                key = (None if row["run_id"] is None else str(row["run_id"]), call_id)
                recorded = results.get(key, [])
                nth = used[key] = used.get(key, -1) + 1
                is_error = False
                if recorded:
                    result, is_error = recorded[min(nth, len(recorded) - 1)]
                elif len(lines) == len(names):
                    result = lines[index]
                else:
                    result = text if index == 0 else ""
                parts.append(
                    FunctionExecutionResult(content=result, name=str(call["name"]), call_id=call_id, is_error=is_error)
                )
            out.append(FunctionExecutionResultMessage(content=parts))
    return out


def _task(events: Sequence[Row], moves: Sequence[str | None], added: Sequence[LLMMessage]) -> list[BaseChatMessage]:
    """The run's new messages: the user messages STEP 1 added, or the ``RunStarted`` text."""
    task: list[BaseChatMessage] = [
        TextMessage(content=message.content, source=message.source)
        for message, move in zip(added, moves)
        if move == "add_messages" and isinstance(message, UserMessage) and isinstance(message.content, str)
    ]
    if task or "add_messages" in moves:
        return task
    text = next((_text(row["text"]) for row in events if row["kind"] == "RunStarted"), "")
    return [TextMessage(content=text, source="user")] if text else []


def _answers(
    events: Sequence[Row], calls: Sequence[Row], added: Sequence[LLMMessage], tools: Sequence[Row]
) -> list[RecordedAnswer]:
    """Each model call's answer, as recorded (tool calls as the context has them, their argument text
    exact; else, for a run recorded without its context, from the tool calls table)."""
    starts = [index for index, row in enumerate(events) if row["kind"] == "LLMCall"]
    asked = iter([m for m in added if isinstance(m, AssistantMessage) and not isinstance(m.content, str)])
    answers: list[RecordedAnswer] = []
    for index, call in enumerate(calls):
        begin = starts[index] if index < len(starts) else len(events)
        end = starts[index + 1] if index + 1 < len(starts) else len(events)
        window = events[begin:end]
        thought = None
        if call["has_thought"]:
            thought = next((_text(row["text"]) for row in window if row["kind"] == "ThoughtEvent"), None)
        chunks: tuple[str, ...] | None = None
        gaps: tuple[float, ...] = ()
        if call["streaming"]:
            streamed = [row for row in window if row["kind"] == CHUNK_KIND and row["message_id"] == call["message_id"]]
            chunks = tuple(_text(row["text"]) for row in streamed)
            times = [float(row["elapsed_s"]) for row in streamed]
            began = float(window[0]["elapsed_s"]) if window else 0.0
            gaps = tuple(seconds(b - a) or 0.0 for a, b in zip([began, *times], times))  # out of range: none
        if call["status"] != "ok":
            answers.append(RecordedAnswer(None, call["error"], chunks, gaps))
            continue
        prompt, completion = call["prompt_tokens"], call["completion_tokens"]
        usage: RequestUsage
        if prompt is None and completion is None:
            usage = UnreportedUsage(prompt_tokens=0, completion_tokens=0)
        else:
            usage = RequestUsage(prompt_tokens=int(prompt or 0), completion_tokens=int(completion or 0))
        content: str | list[FunctionCall]
        if int(call["n_tool_calls"] or 0) > 0:
            message = next(asked, None)
            if message is not None:
                content = list(cast(list[FunctionCall], message.content))
            else:
                asked_by = f"{call['run_id']}/{index}"
                content = [_call_of(row) for row in tools if row["llm_call_id"] == asked_by]
            if thought is None and message is not None and message.thought is not None and call["has_thought"]:
                thought = message.thought
        else:
            content = _text(call["response_text"])
        result = CreateResult(
            finish_reason=cast(Any, str(call["finish_reason"])),
            content=content,
            usage=usage,
            cached=bool(call["cached"]),
            thought=thought,
            response_model=call["response_model"],
            response_id=call["response_id"],
        )
        # a time missing or out of range (inf, 1e300) is not waited for by a paced replay
        answers.append(RecordedAnswer(result, None, chunks, gaps, seconds(call["duration_s"]), seconds(call["ttft_s"])))
    return answers


def _call_of(row: Row) -> FunctionCall:
    """A tool call from its tool calls row (its arguments written back as JSON)."""
    arguments = row["arguments"]
    text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
    return FunctionCall(id=str(row["call_id"]), name=str(row["tool_name"]), arguments=text)


def _memory(
    events: Sequence[Row], moves: Sequence[str | None], added: Sequence[LLMMessage]
) -> tuple[RecordedMemoryHit, ...]:
    """The recorded memory stores' hits: one per ``MemoryQueryEvent``; the first adds STEP 2's messages."""
    texts = [_text(row["text"]) for row in events if row["kind"] == "MemoryQueryEvent"]
    messages = tuple(message for message, move in zip(added, moves) if move == "memory")
    if not texts:
        return (RecordedMemoryHit(None, messages),) if messages else ()
    return tuple(RecordedMemoryHit(text, messages if index == 0 else ()) for index, text in enumerate(texts))


def _schema(definition: Mapping[str, Any]) -> ToolSchema:
    schema = ToolSchema(name=str(definition.get("name", "")))
    if definition.get("description") is not None:
        schema["description"] = str(definition["description"])
    if definition.get("parameters") is not None:
        schema["parameters"] = dict(definition["parameters"])
    return schema


def _own_system(recorded: str, context: list[LLMMessage]) -> str | None:
    """The agent's system message: the recorded system text without the context's leading system
    messages (a memory's, sent after it)."""
    leading = []
    for message in context:
        if not isinstance(message, SystemMessage):
            break
        leading.append(message.content)
    if leading:
        tail = "\n\n".join(leading)
        if recorded == tail:
            return None
        if recorded.endswith("\n\n" + tail):
            return recorded[: -len(tail) - 2]
    return recorded


_HANDOFF_DESCRIPTION = re.compile(r"^Handoff to (.+)\.$", re.DOTALL)


def _handoffs(
    schemas: list[ToolSchema],
    results: list[tuple[str, str, str, bool, float | None]],
    target: str | None,
    checked: bool,
) -> list[Handoff]:
    """The handoffs among the recorded tools: those with a handoff's shape (``transfer_to_<target>``,
    "Handoff to <target>.", no parameters), when the run made a handoff check or handed off."""
    if not checked and target is None:
        return []
    messages = {name: content for _, name, content, _, _ in results}
    found = []
    for schema in schemas:
        name = schema["name"]
        match = _HANDOFF_DESCRIPTION.match(schema.get("description", ""))
        properties = (schema.get("parameters") or {}).get("properties") or {}
        if match is None or properties or not name.startswith("transfer_to_"):
            continue
        kwargs: dict[str, Any] = {"target": match.group(1), "name": name, "description": schema["description"]}
        if name in messages:
            kwargs["message"] = messages[name]
        found.append(Handoff(**kwargs))
    return found


def _output_type(
    trace: ReplaySource,
    run_id: str,
    agent: str,
    final_text: str | None,
    answers: list[RecordedAnswer],
    content_name: str = "RecordedOutput",
) -> tuple[type[BaseModel] | None, str | None, str | None]:
    """A structured output's class: the recorded one in a live trace (its answer's, else its agent's),
    else a model of the same fields (made from the answer's JSON) and a format string that gives the
    recorded text; and a note when the answer's class could not be rebuilt (:func:`_model_of`)."""
    live = hasattr(type(trace), "items")  # a live trace holds the events themselves
    if live and final_text is not None:  # a structured answer: its class, from the recorded event
        inside = False
        for item in getattr(trace, "items", ()):
            if type(item) is RunStarted:
                inside = item.run_id == run_id
            elif inside and isinstance(item, Response):
                content = getattr(item.chat_message, "content", None)
                if isinstance(content, BaseModel):
                    return type(content), getattr(item.chat_message, "format_string", None), None
    if live:
        owner = getattr(trace, "owner", None)
        if owner is not None and getattr(owner, "name", None) == agent:
            kind = getattr(owner, "output_content_type", None)
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                return kind, getattr(owner, "output_content_type_format", None), None
    if final_text is None:
        return None, None, None
    return _model_of(final_text, answers, content_name)


def _content_name(final_type: str) -> str:
    """The content class's name in a ``StructuredMessage[<module.Class>]`` type string (AutoGen's)."""
    inner = final_type.partition("[")[2].rstrip("]")
    name = inner.rpartition(".")[2]
    return name if name.isidentifier() else "RecordedOutput"


UNREBUILT = (
    "This run's structured answer has keys that are not field names ({keys}): its class is not rebuilt, "
    "the replayed answer is shown as its JSON."
)
"""The note a replay adds to its :data:`LIMITS` when a recorded structured answer cannot be rebuilt."""


def _field_name(key: str) -> bool:
    """Whether an answer's key can be a field of a model made for it: an identifier that is not private,
    not pydantic's (``model_...``) and not a ``BaseModel`` attribute. Only such a key goes into a format
    string, as a bare ``{key}``: no format spec, conversion, index or attribute a file could put there."""
    return key.isidentifier() and not key.startswith(("_", "model_")) and not hasattr(BaseModel, key)


def _model_of(
    final_text: str, answers: list[RecordedAnswer], name: str = "RecordedOutput"
) -> tuple[type[BaseModel], str | None, str | None]:
    """A model with the fields of the last answer's JSON, and a format string giving ``final_text``.

    A recorded file is data: when a key cannot be a field (:func:`_field_name`), the model takes the
    answer's keys as they are (``extra="allow"``), no format string is made (the answer shows as its
    JSON), and the note (:data:`UNREBUILT`) says so."""
    answer = next((a.result for a in reversed(answers) if a.result is not None), None)
    try:
        data = json.loads(answer.content) if answer is not None and isinstance(answer.content, str) else {}
    except json.JSONDecodeError:
        data = {}
    if not isinstance(data, dict):
        data = {}
    odd = [key for key in data if not _field_name(key)]
    if odd:
        keys = ", ".join(json.dumps(key)[:40] for key in odd[:3]) + (
            f" and {len(odd) - 3} more" if len(odd) > 3 else ""
        )
        return create_model(name, __config__=ConfigDict(extra="allow")), None, UNREBUILT.format(keys=keys)
    fields: dict[str, Any] = {key: (Any, ...) for key in data}
    model = create_model(name, **fields)
    fmt = None
    if final_text != json.dumps(data):
        fmt = final_text.replace("{", "{{").replace("}", "}}")
        for key, value in sorted(data.items(), key=lambda kv: -len(str(kv[1]))):
            if str(value):
                fmt = fmt.replace(str(value), "{" + key + "}", 1)
        if not _bare_fields(fmt, data) or fmt.format(**data) != final_text:
            fmt = None
    return model, fmt, None


def _bare_fields(fmt: str, data: Mapping[str, object]) -> bool:
    """Whether every replacement field of ``fmt`` is a bare ``{key}`` of ``data`` (no format spec, conversion,
    index or attribute): only then is ``fmt`` formatted, so its text is no longer than ``fmt`` and the
    values. A value's text can take a brace of the escaped answer (a value ``"{"`` turns ``{{x:>9}}`` into
    ``{k}{x:>9}}``), which would make a field with a spec out of the answer's own text."""
    try:
        parts = list(string.Formatter().parse(fmt))
    except ValueError:  # a lone brace
        return False
    return all(
        name is None or (name in data and not spec and conversion is None) for _, name, spec, conversion in parts
    )


def _settings(
    trace: ReplaySource, run: Row, events: Sequence[Row], moves: list[str], structured: bool, calls: Sequence[Row]
) -> LoopSettings:
    """The loop settings the run recorded (``runs_df``), else those its moves show and, for what they
    leave open, the live source's when it has them."""
    iterations = [int(row["iteration"]) for row in events if row["kind"] == "Move" and row["iteration"] is not None]
    last = max(iterations, default=0)
    limit, reflects = run.get("max_tool_iterations"), run.get("reflect_on_tool_use")
    if limit is not None and reflects is not None:
        return LoopSettings(
            memory="memory" in moves,
            handoffs="handoff_check" in moves,
            max_tool_iterations=int(limit),
            reflect_on_tool_use=bool(reflects),
        )
    source = getattr(trace, "owner", None)
    known: LoopSettings | None = None
    if source is not None and getattr(source, "name", None) == run["agent"]:
        known = getattr(source, "loop_settings", None)
    ended_by_limit = bool({"reflect", "summarize"} & set(moves))
    if not moves:  # a run recorded without its moves (AutoGen's): one iteration per model call that asked for tools
        last = max(0, sum(1 for call in calls if call["purpose"] != "reflection" and call["n_tool_calls"]) - 1)
    if ended_by_limit:
        max_iterations = last + 1
    else:
        max_iterations = max(last + 1, known.max_tool_iterations if known is not None else 1)
    if "reflect" in moves or any(call["purpose"] == "reflection" for call in calls):  # (a run without moves: AutoGen's)
        reflect = True
    elif "summarize" in moves:
        reflect = False
    else:
        reflect = known.reflect_on_tool_use if known is not None else structured
    return LoopSettings(
        memory="memory" in moves,
        handoffs="handoff_check" in moves or bool(known is not None and known.handoffs),
        max_tool_iterations=max_iterations,
        reflect_on_tool_use=reflect,
    )


def _summary_lines(text: str, tools: Sequence[Row]) -> dict[str, str] | None:
    """The recorded summary's line per call id of the last batch, when the default format does not give it."""
    if not tools:
        return None
    last = max(int(row["iteration"] or 0) for row in tools)
    batch = [row for row in tools if int(row["iteration"] or 0) == last]
    ids, contents = [str(row["call_id"]) for row in batch], [_text(row["result"]) for row in batch]
    if "\n".join(contents) == text:
        return None
    lines = text.split("\n")
    return dict(zip(ids, lines)) if len(lines) == len(ids) else None


def _create_args(call: Row | None) -> dict[str, Any]:
    """The recorded request parameters but ``tool_choice`` (the loop's, per call), as the create
    arguments that give them again."""
    if call is None:
        return {}
    params = call["request_params"] or {}
    return {str(key): value for key, value in dict(params).items() if key != "tool_choice"}
