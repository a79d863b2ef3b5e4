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
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import deque
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, cast

from pydantic import BaseModel, create_model

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
from .schema import CHUNK_KIND, TraceTables

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


# ---------------------------------------------------------------------- reading a run back from frames


def replay_of(trace: ReplaySource, run_id: str | None = None, *, pace: bool = False) -> Replay:
    """The :class:`Replay` of run ``run_id`` of ``trace`` (the last run by default)."""
    import pandas as pd

    runs = trace.runs_df()
    if not len(runs):
        raise ValueError("trace.replay: the trace holds no run to replay")
    if run_id is None:
        run_id = str(runs["run_id"].iloc[-1])
    elif not isinstance(run_id, str):
        raise TypeError(f"trace.replay: run_id must be a run id (str) or None, got {type(run_id).__name__}")
    picked = runs[runs["run_id"].astype("object") == run_id]
    if not len(picked):
        known = ", ".join(repr(str(r)) for r in runs["run_id"].tail(5))
        raise wrong_value("trace.replay", "run_id", f"a run of this trace (the last: {known})", run_id)
    run = picked.iloc[0]
    events = trace.events_df()
    events = events[events["run_id"].astype("object") == run_id].reset_index(drop=True)
    calls = trace.llm_calls_df()
    calls = calls[calls["run_id"].astype("object") == run_id].reset_index(drop=True)
    tools = trace.tool_calls_df()
    all_tools = tools
    tools = tools[tools["run_id"].astype("object") == run_id].reset_index(drop=True)
    try:
        start = trace.context_df(run_id=run_id, seq=0)
        end = trace.context_df(run_id=run_id)
    except LookupError:  # no context recorded (a source the trace recorded without its context)
        start = end = None
    results = [
        (str(row.call_id), str(row.tool_name), _text(row.result), bool(row.is_error), _float(row.duration_s))
        for row in tools.itertuples()
        if not pd.isna(row.is_error)
    ]
    by_call_id = {str(row.call_id): _text(row.result) for row in all_tools.itertuples()}
    by_call_id.update({key: content for key, _, content, _, _ in results})
    error_ids = {str(row.call_id) for row in all_tools.itertuples() if _flag(row.is_error)}
    start_messages = _messages(start, by_call_id, error_ids) if start is not None else []
    mine = None if end is None else end[end["run_id"].astype("object") == run_id]
    added = _messages(end, by_call_id, error_ids) if end is not None else []
    added_here = [] if mine is None else [added[i] for i in mine.index]
    moves = [str(m) for m in events.loc[events["kind"] == "Move", "move"]]
    task = _task(events, mine, added_here)
    answers = _answers(events, calls, added_here)
    memory = _memory(events, mine, added_here) if "memory" in moves else None
    first_tools = next((row for row in calls.itertuples() if row.purpose != "reflection"), None)
    schemas = [] if first_tools is None else [_schema(definition) for definition in first_tools.tool_definitions]
    system = None
    if len(calls) and not pd.isna(calls["system_instructions"].iloc[0]):
        system = _own_system(str(calls["system_instructions"].iloc[0]), start_messages + [m for m in added_here])
    final_type = None if pd.isna(run["final_type"]) else str(run["final_type"])
    final_text = None if pd.isna(run["final_text"]) else str(run["final_text"])
    handoff_target = None if pd.isna(run["handoff_target"]) else str(run["handoff_target"])
    handoffs = _handoffs(schemas, results, handoff_target, "handoff_check" in moves)
    structured = final_type is not None and final_type.startswith("StructuredMessage")
    output_type, output_format = _output_type(
        trace, run_id, str(run["agent"]), final_text if structured else None, answers
    )
    settings = _settings(trace, run, events, moves, output_type is not None)
    summary = None
    if final_type == "ToolCallSummaryMessage" and final_text is not None:
        summary = _summary_lines(final_text, tools)
    first = calls.iloc[0] if len(calls) else None
    return Replay(
        run_id=run_id,
        trace_id=trace.trace_id,
        agent=str(run["agent"]),
        status=str(run["status"]),
        task=tuple(task),
        start_context=tuple(start_messages),
        system_message=system,
        tools=tuple(schemas),
        handoffs=tuple(handoffs),
        answers=tuple(answers),
        tool_results=tuple(results),
        memory=memory,
        settings=settings,
        model="replay" if first is None else str(first["model"]),
        provider="nbagent.replay" if first is None or pd.isna(first["provider"]) else str(first["provider"]),
        model_client_stream=bool(first is not None and _flag(first["streaming"])),
        create_args=_create_args(first),
        output_content_type=output_type,
        output_content_type_format=output_format,
        summary_lines=summary,
        pace=pace,
    )


def _text(value: object) -> str:
    import pandas as pd

    return "" if value is None or value is pd.NA or (isinstance(value, float) and value != value) else str(value)


def _flag(value: object) -> bool:
    """A nullable boolean cell as a bool (null: False)."""
    import pandas as pd

    return value is not None and value is not pd.NA and bool(value)


def _float(value: object) -> float | None:
    import pandas as pd

    if value is None or value is pd.NA:
        return None
    number = float(cast(float, value))
    return None if number != number else number


def _int(value: object) -> int | None:
    import pandas as pd

    return None if value is None or value is pd.NA else int(cast(int, value))


def _messages(frame: pd.DataFrame, results: Mapping[str, str], errors: set[str]) -> list[LLMMessage]:
    """The context frame's rows as LLM messages (tool results paired with the calls before them)."""
    out: list[LLMMessage] = []
    calls: list[dict[str, Any]] = []
    for row in frame.itertuples():
        kind, text, source = str(row.kind), _text(row.text), _text(row.source)
        thought = None if row.thought is None or row.thought is _na() else str(row.thought)
        if kind == "system":
            out.append(SystemMessage(content=text))
        elif kind == "user":
            out.append(UserMessage(content=text, source=source))
        elif kind == "assistant":
            if row.tool_calls is not None and not isinstance(row.tool_calls, float):
                calls = [dict(call) for call in row.tool_calls]
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
                if call_id in results:
                    result = results[call_id]
                elif len(lines) == len(names):
                    result = lines[index]
                else:
                    result = text if index == 0 else ""
                parts.append(
                    FunctionExecutionResult(
                        content=result, name=str(call["name"]), call_id=call_id, is_error=call_id in errors
                    )
                )
            out.append(FunctionExecutionResultMessage(content=parts))
    return out


def _na() -> object:
    import pandas as pd

    return pd.NA


def _task(events: pd.DataFrame, mine: pd.DataFrame | None, added: list[LLMMessage]) -> list[BaseChatMessage]:
    """The run's new messages: the user messages STEP 1 added, or the ``RunStarted`` text."""
    if mine is not None and len(mine):
        steps = list(mine["move"].astype("object"))
        task = [
            TextMessage(content=message.content, source=message.source)
            for message, move in zip(added, steps)
            if move == "add_messages" and isinstance(message, UserMessage) and isinstance(message.content, str)
        ]
        if task or "add_messages" in steps:
            return list(task)
    started = events[events["kind"] == "RunStarted"]
    text = _text(started["text"].iloc[0]) if len(started) else ""
    return [TextMessage(content=text, source="user")] if text else []


def _answers(events: pd.DataFrame, calls: pd.DataFrame, added: list[LLMMessage]) -> list[RecordedAnswer]:
    """Each model call's answer, as recorded."""
    import pandas as pd

    kinds = list(events["kind"].astype("object"))
    call_rows = [i for i, kind in enumerate(kinds) if kind == "LLMCall"]
    asked = iter([m for m in added if isinstance(m, AssistantMessage) and not isinstance(m.content, str)])
    answers: list[RecordedAnswer] = []
    for index, call in enumerate(calls.itertuples()):
        begin = call_rows[index] if index < len(call_rows) else len(kinds)
        end = call_rows[index + 1] if index + 1 < len(call_rows) else len(kinds)
        window = events.iloc[begin:end]
        thoughts = window[window["kind"] == "ThoughtEvent"]
        thought = _text(thoughts["text"].iloc[0]) if len(thoughts) and _flag(call.has_thought) else None
        chunk_rows = window[(window["kind"] == CHUNK_KIND) & (window["message_id"] == call.message_id)]
        chunks = tuple(_text(t) for t in chunk_rows["text"]) if _flag(call.streaming) else None
        gaps: tuple[float, ...] = ()
        if chunks:
            times = [float(t) for t in chunk_rows["elapsed_s"]]
            started = float(window["elapsed_s"].iloc[0])
            gaps = tuple(max(0.0, b - a) for a, b in zip([started, *times], times))
        status = str(call.status)
        if status != "ok":
            answers.append(RecordedAnswer(None, None if pd.isna(call.error) else str(call.error), chunks, gaps))
            continue
        prompt, completion = _int(call.prompt_tokens), _int(call.completion_tokens)
        usage: RequestUsage
        if prompt is None and completion is None:
            usage = UnreportedUsage(prompt_tokens=0, completion_tokens=0)
        else:
            usage = RequestUsage(prompt_tokens=prompt or 0, completion_tokens=completion or 0)
        content: str | list[FunctionCall]
        if (_int(call.n_tool_calls) or 0) > 0:
            message = next(asked, None)
            if message is not None:
                content = list(cast(list[FunctionCall], message.content))
                if thought is None and message.thought is not None and _flag(call.has_thought):
                    thought = message.thought
            else:
                content = []
        else:
            content = _text(call.response_text)
        result = CreateResult(
            finish_reason=cast(Any, str(call.finish_reason)),
            content=content,
            usage=usage,
            cached=_flag(call.cached),
            thought=thought,
            response_model=None if pd.isna(call.response_model) else str(call.response_model),
            response_id=None if pd.isna(call.response_id) else str(call.response_id),
        )
        answers.append(RecordedAnswer(result, None, chunks, gaps, _float(call.duration_s), _float(call.ttft_s)))
    return answers


def _memory(events: pd.DataFrame, mine: pd.DataFrame | None, added: list[LLMMessage]) -> tuple[RecordedMemoryHit, ...]:
    """The recorded memory stores' hits: one per ``MemoryQueryEvent``; the first adds STEP 2's messages."""
    texts = [_text(text) for text in events.loc[events["kind"] == "MemoryQueryEvent", "text"]]
    moves = [] if mine is None else list(mine["move"].astype("object"))
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
    trace: ReplaySource, run_id: str, agent: str, final_text: str | None, answers: list[RecordedAnswer]
) -> tuple[type[BaseModel] | None, str | None]:
    """A structured output's class: the recorded one in a live trace (its answer's, else its agent's),
    else a model of the same fields (made from the answer's JSON) and a format string that gives the
    recorded text."""
    items = getattr(trace, "items", None)  # a live trace holds the events themselves
    if items is not None:
        inside = False
        for item in items:
            if type(item) is RunStarted:
                inside = item.run_id == run_id
            elif inside and isinstance(item, Response):
                content = getattr(item.chat_message, "content", None)
                if isinstance(content, BaseModel):
                    return type(content), getattr(item.chat_message, "format_string", None)
        owner = getattr(trace, "owner", None)
        if owner is not None and getattr(owner, "name", None) == agent:
            kind = getattr(owner, "output_content_type", None)
            if isinstance(kind, type) and issubclass(kind, BaseModel):
                return kind, getattr(owner, "output_content_type_format", None)
    if final_text is None:
        return None, None
    answer = next((a.result for a in reversed(answers) if a.result is not None), None)
    try:
        data = json.loads(answer.content) if answer is not None and isinstance(answer.content, str) else {}
    except json.JSONDecodeError:
        data = {}
    fields: dict[str, Any] = {key: (Any, ...) for key in data} if isinstance(data, dict) else {}
    model = create_model("RecordedOutput", **fields)
    fmt = None
    if isinstance(data, dict) and final_text is not None and final_text != json.dumps(data):
        fmt = final_text.replace("{", "{{").replace("}", "}}")
        for key, value in sorted(data.items(), key=lambda kv: -len(str(kv[1]))):
            if str(value):
                fmt = fmt.replace(str(value), "{" + key + "}", 1)
        try:
            if fmt.format(**data) != final_text:
                fmt = None
        except (KeyError, IndexError, ValueError):
            fmt = None
    return model, fmt


def _settings(
    trace: ReplaySource, run: pd.Series, events: pd.DataFrame, moves: list[str], structured: bool
) -> LoopSettings:
    """The loop settings the run recorded (``runs_df``), else those its moves show and, for what they
    leave open, the live source's when it has them."""
    import pandas as pd

    iterations = [int(i) for i in events.loc[events["kind"] == "Move", "iteration"].dropna()]
    last = max(iterations, default=0)
    limit, reflects = run.get("max_tool_iterations"), run.get("reflect_on_tool_use")
    if limit is not None and not pd.isna(limit) and reflects is not None and not pd.isna(reflects):
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
    if ended_by_limit:
        max_iterations = last + 1
    else:
        max_iterations = max(last + 1, known.max_tool_iterations if known is not None else 1)
    if "reflect" in moves:
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


def _summary_lines(text: str, tools: pd.DataFrame) -> dict[str, str] | None:
    """The recorded summary's line per call id of the last batch, when the default format does not give it."""
    if not len(tools):
        return None
    last = tools[tools["iteration"] == tools["iteration"].max()]
    ids, contents = [str(c) for c in last["call_id"]], [_text(r) for r in last["result"]]
    if "\n".join(contents) == text:
        return None
    lines = text.split("\n")
    return dict(zip(ids, lines)) if len(lines) == len(ids) else None


def _create_args(call: pd.Series | None) -> dict[str, Any]:
    """The recorded request parameters but ``tool_choice`` (the loop's, per call), as the create
    arguments that give them again."""
    if call is None:
        return {}
    params = call["request_params"] or {}
    return {str(key): value for key, value in dict(params).items() if key != "tool_choice"}
