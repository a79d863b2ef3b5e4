"""What one run is made of, besides its events: moves, LLM and tool call records, start and end.

The agent's loop (``AssistantAgent._run_steps``) yields these records in between its events.
``on_messages_stream`` drops them; the step-by-step mode pauses at each :class:`Move`; recorders
(the trace) receive every item. So one loop serves ``run``, ``run_stream``, the live view and the
stepper alike.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, Self

from ._ids import new_id, utc_now
from .hooks import Hook
from .messages import BaseAgentEvent, BaseChatMessage, CreateResult, FunctionCall, FunctionExecutionResult, Response

if TYPE_CHECKING:
    from .context import ChatCompletionContext
    from .models.base import ModelRequest


MoveName = Literal[
    "add_messages",
    "memory",
    "message_id",
    "call_llm",
    "text_exit",
    "tool_request",
    "tool_execution",
    "handoff_check",
    "next_llm_call",
    "reflect",
    "summarize",
]
END: Literal["end"] = "end"  # an edge to END: the run ends there (its Response)
# What an agent's settings must give for a move or an edge to be possible.
Condition = Literal["memory", "no_memory", "handoffs", "no_handoffs", "tool_loop", "reflect", "summary"]


@dataclass(frozen=True)
class LoopSettings:
    """The settings of an agent that decide which moves and edges of the loop can happen."""

    memory: bool = False
    handoffs: bool = False
    max_tool_iterations: int = 1
    reflect_on_tool_use: bool = False

    def holds(self, condition: Condition) -> bool:
        """Whether ``condition`` holds for these settings."""
        if condition == "memory" or condition == "no_memory":
            return self.memory == (condition == "memory")
        if condition == "handoffs" or condition == "no_handoffs":
            return self.handoffs == (condition == "handoffs")
        if condition == "tool_loop":
            return self.max_tool_iterations > 1
        return self.reflect_on_tool_use == (condition == "reflect")


@dataclass(frozen=True)
class Edge:
    """A transition of the loop: after this move, ``target`` is made when ``label`` says so."""

    target: MoveName | Literal["end"]
    label: str = ""
    needs: tuple[Condition, ...] = ()

    def possible(self, settings: LoopSettings) -> bool:
        return all(settings.holds(condition) for condition in self.needs)


@dataclass(frozen=True)
class MoveInfo:
    """The static description of one kind of move: for teaching, and the loop's shape.

    ``method`` is the ``AssistantAgent`` method that makes the move; ``edges`` are the moves that can
    follow it; ``needs`` says which settings make the move possible at all.
    """

    step: int
    title: str
    method: str
    label: str
    explanation: str
    edges: tuple[Edge, ...]
    needs: tuple[Condition, ...] = ()

    def possible(self, settings: LoopSettings) -> bool:
        return all(settings.holds(condition) for condition in self.needs)


MOVES: dict[MoveName, MoveInfo] = {
    "add_messages": MoveInfo(
        1,
        "New messages into model_context",
        "_add_messages_to_context",
        "add messages",
        "The new messages of this call are added to the model context, the agent's short-term memory. "
        "The context persists across calls, so each call passes only what is new: passing the whole "
        "history again would put every message in twice. A failed run's task stays in the context too: "
        "agent.retry() goes on from it without adding it again.",
        (Edge("memory", "memory", ("memory",)), Edge("message_id", "no memory", ("no_memory",))),
    ),
    "memory": MoveInfo(
        2,
        "Query memory",
        "_update_model_context_with_memory",
        "query memory",
        "Each memory store is queried with the context. Hits not already in the context are added as a "
        "system message, and each store with hits yields a MemoryQueryEvent, before any LLM event.",
        (Edge("message_id"),),
        ("memory",),
    ),
    "message_id": MoveInfo(
        3,
        "Make a message id",
        "_run_steps",
        "message id",
        "A message id is drawn before the model is called, so that streamed chunks can name the message "
        "they build (full_message_id) before that message exists.",
        (Edge("call_llm"),),
    ),
    "call_llm": MoveInfo(
        4,
        "Call the LLM",
        "_call_llm",
        "call the LLM",
        "The model is sent the system message, the context's messages, the tools of every workbench and "
        "one tool per handoff. It answers with text or with tool calls; streamed text arrives as chunks "
        "carrying the message id.",
        (Edge("text_exit", "text"), Edge("tool_request", "tool calls")),
    ),
    "text_exit": MoveInfo(
        5,
        "Text: the final answer",
        "_text_exit",
        "text: answer",
        "The model answered with text, so this is the answer (a TextMessage, or a StructuredMessage when "
        "output_content_type is set). This is the loop's only normal exit, whatever iterations are left.",
        (Edge(END, "answer"),),
    ),
    "tool_request": MoveInfo(
        5,
        "Tool calls requested",
        "_process_model_result",
        "tool calls",
        "The model asked for tool calls. The assistant message with the calls enters the context and a "
        "ToolCallRequestEvent is yielded (after a ThoughtEvent if the model reasoned first).",
        (Edge("tool_execution"),),
    ),
    "tool_execution": MoveInfo(
        5,
        "Run the tools",
        "_execute_tool_calls",
        "run the tools",
        "All calls run concurrently (asyncio.gather); events the tools stream are forwarded as they come. "
        "One ToolCallExecutionEvent carries the results in call order, and they enter the context. A "
        "failing tool, an unknown tool or bad arguments give an error result, and the loop goes on.",
        (
            Edge("handoff_check", needs=("handoffs",)),
            Edge("next_llm_call", "iterations left", ("no_handoffs", "tool_loop")),
            Edge("reflect", "iterations used up", ("no_handoffs", "reflect")),
            Edge("summarize", "iterations used up", ("no_handoffs", "summary")),
        ),
    ),
    "handoff_check": MoveInfo(
        5,
        "Check for a handoff",
        "_check_and_handle_handoff",
        "handoff?",
        "If one of the calls was a handoff tool, the run ends with a HandoffMessage to its target, its "
        "context holding the other calls and results. With several handoffs, the first wins and a "
        "warning says so.",
        (
            Edge(END, "handoff"),
            Edge("next_llm_call", "iterations left", ("tool_loop",)),
            Edge("reflect", "iterations used up", ("reflect",)),
            Edge("summarize", "iterations used up", ("summary",)),
        ),
        ("handoffs",),
    ),
    "next_llm_call": MoveInfo(
        5,
        "Call the LLM again with the results",
        "_call_llm",
        "call LLM again",
        "Iterations remain (max_tool_iterations), so the model is called again with the tool results in "
        "its context, and the loop goes back to its top with the new answer.",
        (Edge("text_exit", "text"), Edge("tool_request", "tool calls again")),
        ("tool_loop",),
    ),
    "reflect": MoveInfo(
        5,
        "Reflect on the tool results",
        "_reflect_on_tool_use_flow",
        "reflect (LLM)",
        "The tool loop is used up and reflect_on_tool_use is on: the model is called once more, with no "
        "tools (tool_choice='none'), to turn the results into a final answer.",
        (Edge(END, "answer"),),
        ("reflect",),
    ),
    "summarize": MoveInfo(
        5,
        "Summarise the tool results",
        "_summarize_tool_use",
        "summary",
        "The tool loop is used up and reflect_on_tool_use is off: the last batch of results, formatted "
        "with tool_call_summary_format, becomes the answer (a ToolCallSummaryMessage).",
        (Edge(END, "summary"),),
        ("summary",),
    ),
}


@dataclass(slots=True)
class Move:
    """A boundary in the loop: the move named here is about to be made."""

    run_id: str
    name: MoveName
    iteration: int | None = None

    @property
    def info(self) -> MoveInfo:
        return MOVES[self.name]

    @property
    def step(self) -> int:
        return MOVES[self.name].step


LLMPurpose = Literal["initial", "tool_loop", "reflection"]


@dataclass(slots=True)
class LLMCall:
    """One model call; yielded when it starts, completed in place when it ends.

    A streamed call also keeps its stream as it arrives: the pieces of text (``chunks``), the
    ``perf_counter`` time of each (``chunk_perf``) and the ids of the chunk events built for them
    (``chunk_ids``; none when the run builds no chunk events, see :meth:`stream_ids`). Recorders
    read streamed chunks from here, not one item at a time.
    """

    run_id: str
    iteration: int
    purpose: LLMPurpose
    model: str
    request: ModelRequest
    message_id: str
    streaming: bool
    provider: str = "unknown"  # the client's ``provider`` (gen_ai.provider.name)
    started_at: datetime = field(default_factory=utc_now)
    start_perf: float = field(default_factory=time.perf_counter)
    duration_s: float | None = None
    result: CreateResult | None = None
    error: str | None = None
    # An unstreamed call shares these empty ones: a trace keeping many calls keeps no containers.
    chunks: Sequence[str] = ()
    chunk_perf: Sequence[float] = ()
    chunk_ids: Sequence[str] = ()
    # The client's time of the stream's first delta of any kind (a stream of tool calls only has no
    # text chunk): first_token_s falls back on it.
    first_chunk_perf: float | None = None
    # The request's parameters as the client put them in the body, besides the messages and tools
    # (``OpenAIChatCompletionClient.request_parameters``); None: the client does not say (the trace
    # then shows the request's tool_choice and extra_create_args).
    sent: Mapping[str, Any] | None = None

    @property
    def cancelled(self) -> bool:
        """The call was stopped (its run's token, a Stop, an interrupt): its ``error`` is a cancellation."""
        return self.error is not None and self.error.split(":", 1)[0] in ("CancelledError", "CancelledWithResult")

    def finish(self, result: CreateResult | None, error: str | None = None) -> None:
        self.duration_s = time.perf_counter() - self.start_perf
        self.result = result
        self.error = error

    @property
    def first_token_s(self) -> float | None:
        """Seconds from the call's start to its first streamed chunk (None: unstreamed, or none yet).

        A stream that carries only tool calls has no text chunk: the client's time of its first
        delta counts then (``first_chunk_perf``), when the client measured it."""
        if self.chunk_perf:
            return self.chunk_perf[0] - self.start_perf
        return None if self.first_chunk_perf is None else self.first_chunk_perf - self.start_perf

    def stream_ids(self) -> Sequence[str]:
        """One id per streamed chunk: its event's, or a new one where no event was built (kept)."""
        missing = len(self.chunks) - len(self.chunk_ids)
        if missing > 0:
            self.chunk_ids = [*self.chunk_ids, *(new_id() for _ in range(missing))]
        return self.chunk_ids


@dataclass(slots=True)
class ToolExecution:
    """One tool call; yielded when the batch starts, completed in place when the call ends."""

    run_id: str
    iteration: int
    call: FunctionCall
    batch_size: int
    started_at: datetime = field(default_factory=utc_now)
    start_perf: float = field(default_factory=time.perf_counter)
    duration_s: float | None = None
    result: FunctionExecutionResult | None = None

    def finish(self, result: FunctionExecutionResult) -> None:
        self.duration_s = time.perf_counter() - self.start_perf
        self.result = result


@dataclass(slots=True)
class RunStarted:
    run_id: str
    agent: str
    task: list[BaseChatMessage]
    started_at: datetime = field(default_factory=utc_now)
    start_perf: float = field(default_factory=time.perf_counter)
    parent_run_id: str | None = None
    """The run this run is a turn of (a team's run, recorded by nbagent.autogen); None: a run of its own."""
    forked_from: str | None = None
    """The run this run is a fork of (``Stepper.fork``); None: not a fork."""
    fork_move: int | None = None
    """How many moves the fork shares with that run: it was forked before move ``fork_move + 1``."""
    loop_settings: LoopSettings | None = None
    """The settings of the agent that ran it (a replay reads them: a run cut short does not show them)."""


CANCELLED_TOOL_RESULT = "Error: the run was cancelled before this tool call finished"
"""The result the loop gives a tool call that its run's end cut short (the context stays valid)."""

InterventionKind = Literal["request", "answer", "tool_result"]


@dataclass(slots=True)
class Intervention:
    """A change a walk made to its run at a move boundary (``Stepper.edit_request``, ``give_answer``,
    ``give_tool_result``), yielded by the loop where it took effect: what changed, before which move."""

    run_id: str
    move: int
    """The index (from 1, as ``StepResult.index``) of the move the change was made before."""
    kind: InterventionKind
    change: str
    """What was changed, in words (``"tool result of c1: error 'timeout'"``)."""
    started_at: datetime = field(default_factory=utc_now)
    start_perf: float = field(default_factory=time.perf_counter)


RunStatus = Literal["ok", "error", "cancelled"]


@dataclass(slots=True)
class RunFinished:
    run_id: str
    agent: str
    status: RunStatus
    error: str | None = None
    ended_at: datetime = field(default_factory=utc_now)
    end_perf: float = field(default_factory=time.perf_counter)


RunRecord = Move | LLMCall | ToolExecution | RunStarted | RunFinished | Intervention
# A ``str`` item is a piece of streamed text of the current LLM call's message: what a run started
# with ``chunk_events=False`` yields instead of a ``ModelClientStreamingChunkEvent``.
RunItem = RunRecord | BaseAgentEvent | BaseChatMessage | Response | str
RECORD_TYPES = (Move, LLMCall, ToolExecution, RunStarted, RunFinished, Intervention)
NOT_EVENTS = (*RECORD_TYPES, str)  # the items of a run that are not events (a str: a chunk's text)
NOT_EVENT_TYPES = frozenset(NOT_EVENTS)
"""The same, for ``type(item) in NOT_EVENT_TYPES``: a set lookup, where ``isinstance`` against the event
classes (pydantic's, whose metaclass checks instances in Python) would cost a call each."""


class Recorder(Protocol):
    """Receives every item of every run of the agents it is attached to, but streamed chunks.

    A streamed chunk (a ``ModelClientStreamingChunkEvent``, or a ``str`` in a run without chunk
    events) is not passed on: its text, time and id are in the stream of the current ``LLMCall``.
    """

    def record(self, item: RunItem) -> None: ...


class RunSource(Protocol):
    """What a recorder may read of the source of the runs it records (an ``AssistantAgent``, or any
    other agent that yields the items of :data:`RunItem` to its ``recorders``).

    A trace records any source that speaks this protocol and knows no more of it: its ``name`` (the
    agent of its runs), its ``model_context`` (snapshotted as the runs go), its ``recorders`` (the
    trace adds and removes its recorder there) and its client's ``secrets`` (masked in every frame
    and export).
    """

    @property
    def name(self) -> str: ...

    @property
    def model_context(self) -> ChatCompletionContext: ...

    @property
    def secrets(self) -> Sequence[str]:
        """The secret values of the source's model client (API keys...), to mask wherever they appear."""
        ...

    recorders: list[Recorder]


class Cancellable(Protocol):
    """What cancels a run: nbagent's or AutoGen's ``CancellationToken``."""

    def cancel(self) -> None: ...


class ForeignRun(Protocol):
    """A run of another library's agent or team as nbagent's views and entry points read it
    (``nbagent.autogen``'s ``AutoGenRun``): its items are nbagent's run items."""

    cancellation_token: Any

    @property
    def agent(self) -> Any:
        """The agent or team that runs (its ``name`` titles a view)."""
        ...

    def __aiter__(self) -> AsyncGenerator[RunItem, None]: ...

    async def aclose(self) -> None:
        """End the run where it is."""
        ...


FOREIGN_RUN: Hook[[object, object, object], ForeignRun] = Hook("run")
"""``(source, task, cancellation_token)``: a run of ``source`` when it is another library's agent or
team (or a run of one, taken as it is), its turns marked for a view; ``None`` otherwise (registered
by :mod:`nbagent.autogen`, read by the live view)."""

FOREIGN_STEPPER: Hook[[object, object, object], Any] = Hook("stepper")
"""``(source, task, cancellation_token)``: a stepper walking ``source`` item by item when it is another
library's agent or team (``nbagent.autogen.step``); ``None`` otherwise (read by ``nbagent.step``)."""


class RunIterator:
    """The async-iterator protocol of a run (nbagent's ``AgentRun``, ``nbagent.autogen``'s ``AutoGenRun``).

    ``async for`` takes the items straight from one generator, the subclass's ``_iterate()``;
    ``async with`` closes the run however the block is left. The subclass keeps ``status``
    (``"running"`` from its first item to its end), ``_advancing`` (true while its loop runs, false
    while the consumer holds an item), ``_ended`` (set at the end, once made), and the ``token``
    that cancels it; :meth:`_stop` ends a running run from its ``aclose()``.
    """

    __slots__ = ("_items", "_advancing", "_ended")  # the subclass's __init__ sets them (None, False, None)
    status: str
    token: Cancellable  # ``cancel()`` ends the run where it awaits
    _items: AsyncGenerator[RunItem, None] | None
    _advancing: bool
    _ended: asyncio.Event | None

    def _iterate(self) -> AsyncGenerator[RunItem, None]:
        raise NotImplementedError

    def __aiter__(self) -> AsyncGenerator[RunItem, None]:
        """The run's items: ``_iterate()``, made once."""
        if self._items is None:
            self._items = self._iterate()
        return self._items

    async def __anext__(self) -> RunItem:
        return await self.__aiter__().__anext__()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """End the run where it is (nothing if it is not running)."""
        if self.status == "running":
            await self._stop()

    async def _stop(self) -> None:
        """End a running run: while its loop runs (the consumer awaits its next item from another task,
        a Stop button) cancel it at its await and wait for its end; else close its items."""
        if self._advancing:
            self.token.cancel()
            if self._ended is None:
                self._ended = asyncio.Event()
            await self._ended.wait()
            return
        await self.__aiter__().aclose()
