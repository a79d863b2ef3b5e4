"""Step-by-step mode: walk the agent's loop one move at a time, for teaching and debugging.

The stepper does not re-implement the loop. It consumes the one loop through ``agent.iter()``
(an :class:`~nbagent.agent.AgentRun`) and pauses at each :class:`~nbagent.records.Move`: ``next()``
pulls items until the following ``Move`` (or the end of the run), so the loop's code for exactly one
move runs, and reports what that move did. A run stepped to the end yields the same events, context
and trace records as ``run_stream`` on the same script.

Core module: it imports nothing from :mod:`nbagent.notebook` (the widget lives there).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, cast

from . import _check as check
from .agent import AgentRun, AssistantAgent, FailedRun, check_agent, replayed
from .agent_input import Task, check_token, task_messages
from .cancellation import CancellationToken, guarded
from .interventions import (
    TIMEOUT_RESULT,
    GivenAnswer,
    GivenMemory,
    Interventions,
    RequestEdit,
    check_context,
    given_answer,
)
from .messages import (
    BaseAgentEvent,
    BaseChatMessage,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    LLMMessage,
    MemoryQueryEvent,
    Response,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from .models.base import ChatCompletionClient, ModelRequest
from .models.replay import ReplayChatCompletionClient
from .records import MOVES, NOT_EVENTS, LLMCall, LoopSettings, Move, MoveInfo, MoveName, RunItem, ToolExecution
from .records import Condition as MoveCondition
from .sync import entry_point
from .tools import ToolSchema, Workbench
from .trace import Trace, context_rows
from .trace.replay import RecordedChatCompletionClient, RecordedWorkbench, Replay

if TYPE_CHECKING:
    import pandas as pd

StepperStatus = Literal["ready", "paused", "finished", "error", "cancelled"]
LLM_MOVES = ("call_llm", "next_llm_call", "reflect")
_KEEP: Any = object()
Condition = Callable[["StepResult"], bool]


_NEEDS: dict[MoveCondition, str] = {
    "memory": "memory",
    "no_memory": "no memory",
    "handoffs": "handoffs",
    "no_handoffs": "no handoffs",
    "tool_loop": "max_tool_iterations > 1",
    "reflect": "reflect_on_tool_use=True",
    "summary": "reflect_on_tool_use=False",
}


def _never(step: object, settings: LoopSettings) -> str:
    """Why a STEP is never made under these settings."""
    if step == 2 and not settings.memory:
        return "STEP 2 (query memory) is made only by an agent with memory"
    return ""


LIST_TOOLS_TIMEOUT_S = 30.0
"""How long a walk paused before a model call waits for the agent's workbenches to list their tools
(what ``edit_request(tools=...)`` and ``tool_choice=`` may name); past it, :attr:`AssistantAgent.tools`."""

PAUSE_GRACE_S = 0.3
"""After Pause or a kernel interrupt, how long the move in progress may take to reach its boundary (the
walk then pauses there); a move that takes longer (a slow tool or model call) is cancelled and undone:
the walk is paused again at the boundary before it (:class:`MoveUndone`)."""


class MoveUndone(Exception):
    """Pause (or a kernel interrupt) cancelled a move that did not reach its boundary within
    :data:`PAUSE_GRACE_S`: the walk is paused at the boundary before it, and ``next()`` makes it again.

    The interrupted run stays in the agent's trace, ended ``cancelled``; the walk goes on in a new run
    that made the moves before again from what the interrupted run got (no model or tool called
    again), recorded as its fork at that move.
    """

    def __init__(self, stepper: Stepper, move: Move) -> None:
        info = move.info
        super().__init__(
            f"Pause cancelled move {len(stepper.history) + 1} (STEP {info.step} {move.name}), which had not "
            f"ended after {PAUSE_GRACE_S:g} s: the walk is paused before it again; next() makes it again"
        )
        self.stepper = stepper
        self.move = move


class WalkInterrupted(asyncio.CancelledError):
    """``run_to_end`` / ``run_until`` ended by a kernel interrupt (or their task cancelled): the move in
    progress was finished and the walk is paused after it. One line in a notebook, no traceback.

    It is a ``CancelledError`` (what the interrupt raised), so code that handles cancellation handles it.
    """

    def __init__(self, stepper: Stepper) -> None:
        where = f"after move {len(stepper.history)}" if stepper.history else "before its first move"
        if stepper.status == "cancelled":
            text = "the move in progress did not end in time: the walk was cancelled; reset() to walk it again"
        elif stepper.done:
            text = f"the walk had ended ({stepper.status})"
        else:
            text = f"the walk is paused {where}; next() or run_to_end() goes on from there"
        super().__init__(f"interrupted: {text}")
        self.stepper = stepper

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of the traceback."""
        return [f"{type(self).__name__}: {self}"]


class StepperFinished(RuntimeError):
    """``next()`` was called on a stepper whose run is over."""


def diff_context(before: Sequence[LLMMessage], after: Sequence[LLMMessage]) -> tuple[list[int], list[int]]:
    """Positions added by a move, and positions whose message it replaced."""
    common = min(len(before), len(after))
    changed = [i for i in range(common) if before[i] is not after[i] and before[i] != after[i]]
    return list(range(common, len(after))), changed


@dataclass
class StepResult:
    """What one move did: the move, the items the loop yielded meanwhile, and the context around it.

    ``items`` holds everything the run yielded during the move (records and events, the ``Move``
    itself excluded); ``events`` only the events and messages. At ``call_llm``, ``next_llm_call``
    and ``reflect``, ``request`` is exactly what the model was sent and ``result`` the raw
    ``CreateResult`` it returned. ``error`` is the exception that ended the run during this move.
    ``context`` is the context after the move as a DataFrame (the trace's ``context_df`` columns:
    the run and STEP that added each row) plus ``change``: ``"added"``, ``"changed"`` or ``""``.
    ``seq`` is the position in the run's trace where the move ended (``None``: the end of the run).
    """

    index: int
    move: Move
    items: list[RunItem]
    context_before: list[LLMMessage]
    context_after: list[LLMMessage]
    trace: Trace = field(repr=False)
    seq: int | None = None
    upcoming: Move | None = None
    error: Exception | None = None
    added: list[int] = field(init=False)
    changed: list[int] = field(init=False)
    _context: pd.DataFrame | None = field(default=None, init=False, repr=False)  # built on request

    def __post_init__(self) -> None:
        self.added, self.changed = diff_context(self.context_before, self.context_after)

    @property
    def context(self) -> pd.DataFrame:
        """The context after this move, built on first use from the trace's snapshot at that point."""
        if self._context is None:
            import pandas as pd

            try:
                frame = self.trace.context_df(run_id=self.move.run_id, seq=self.seq)
            except KeyError:  # the agent's trace was not recording this run
                frame = context_rows(self.context_after, None, self.trace.redactor())
            change = pd.Series("", index=frame.index, dtype="string")
            change.iloc[self.added] = "added"
            change.iloc[self.changed] = "changed"
            self._context = frame.assign(change=change)
        return self._context

    @property
    def name(self) -> str:
        return self.move.name

    @property
    def info(self) -> MoveInfo:
        return self.move.info

    @property
    def step(self) -> int:
        return self.move.info.step

    @property
    def title(self) -> str:
        return self.move.info.title

    @property
    def method(self) -> str:
        return self.move.info.method

    @property
    def explanation(self) -> str:
        return self.move.info.explanation

    @property
    def iteration(self) -> int | None:
        return self.move.iteration

    @property
    def done(self) -> bool:
        """The run ended during this move (answer, error or cancellation)."""
        return self.upcoming is None

    @property
    def events(self) -> list[BaseAgentEvent | BaseChatMessage | Response]:
        return [item for item in self.items if not isinstance(item, NOT_EVENTS)]

    @property
    def llm_call(self) -> LLMCall | None:
        return next((item for item in self.items if isinstance(item, LLMCall)), None)

    @property
    def request(self) -> ModelRequest | None:
        """What the model received in this move: system message + messages, tools, tool_choice."""
        call = self.llm_call
        return None if call is None else call.request

    @property
    def result(self) -> CreateResult | None:
        """The raw ``CreateResult`` of this move's model call."""
        call = self.llm_call
        return None if call is None else call.result

    @property
    def tool_executions(self) -> list[ToolExecution]:
        return [item for item in self.items if isinstance(item, ToolExecution)]

    @property
    def tool_calls(self) -> list[FunctionCall]:
        """The tool calls this move requested or ran."""
        for item in self.items:
            if isinstance(item, ToolCallRequestEvent):
                return list(item.content)
        return [execution.call for execution in self.tool_executions]

    @property
    def asked_tools(self) -> list[FunctionCall]:
        """The tool calls this move's model call answered with (none: it answered with text, or called no model)."""
        created = self.result
        return [] if created is None or isinstance(created.content, str) else list(created.content)

    @property
    def tool_results(self) -> list[FunctionExecutionResult]:
        for item in self.items:
            if isinstance(item, ToolCallExecutionEvent):
                return list(item.content)
        return []

    @property
    def response(self) -> Response | None:
        return next((item for item in self.items if isinstance(item, Response)), None)

    @property
    def has_error(self) -> bool:
        """The run raised here, a model call failed, or a tool gave an error result."""
        call = self.llm_call
        return (
            self.error is not None
            or (call is not None and call.error is not None)
            or any(result.is_error for result in self.tool_results)
        )

    def matches(
        self,
        *,
        step: int | None = None,
        move: str | None = None,
        tool: str | None = None,
        iteration: int | None = None,
        error: bool | None = None,
    ) -> bool:
        """Whether this move meets every criterion given (``None`` ones are ignored)."""
        return (
            (step is None or self.step == step)
            and (move is None or self.name == move)
            and (tool is None or any(call.name == tool for call in self.tool_calls))
            and (iteration is None or self.iteration == iteration)
            and (error is None or self.has_error == error)
        )

    def __repr__(self) -> str:
        where = "" if self.iteration is None else f", iteration {self.iteration}"
        ending = f", error {type(self.error).__name__}" if self.error else ", done" if self.done else ""
        return (
            f"<StepResult #{self.index} STEP {self.step} {self.name} ({self.method}{where}): "
            f"{len(self.events)} events, +{len(self.added)} context rows{ending}>"
        )


@dataclass(frozen=True)
class ForkSource:
    """What a fork makes again of its parent walk's first ``moves`` moves: the parent's changes
    (``changes``), the model's answers, each tool batch's results and STEP 2's hits, as the parent got
    them; ``run_id`` is the parent's run."""

    changes: Interventions
    answers: list[GivenAnswer]
    results: list[list[FunctionExecutionResult | None]]
    memory: GivenMemory | None
    run_id: str
    moves: int


@dataclass
class _Snapshot:
    """What :meth:`Stepper.reset` puts back: the context's messages and the model client's checkpoint."""

    client_checkpoint: object | None  # ``model_client.checkpoint()``: None for a client that cannot rewind
    failed_run: FailedRun | None  # the agent's mark of a failed run, which the walk replaces
    messages: list[LLMMessage]  # the context's messages then (immutable: shared, not copied); a fork starts there


class Stepper:
    """Walks one run of ``agent`` on ``task``, one move at a time.

    ``await next()`` makes exactly one move and returns its :class:`StepResult`; ``run_to_end()``
    and ``run_until(...)`` make several. While the walk is in progress the agent is busy (another
    run on it raises ``AgentBusyError``): finish it, or end it with ``aclose()`` or ``reset()``.
    An exception raised by the run ends the walk: it is returned in the last ``StepResult.error``
    (not raised), and the context has been repaired by the run. Cancellation propagates.
    """

    def __init__(
        self, agent: AssistantAgent | Replay, task: Task = None, cancellation_token: CancellationToken | None = None
    ) -> None:
        resolved, task = replayed("Stepper", agent, task)  # a trace's replay: its agent and recorded task
        check_agent("Stepper", resolved, task)
        self.agent: AssistantAgent = resolved
        self.messages: list[BaseChatMessage] = task_messages(task, "Stepper")
        self.cancellation_token = check_token("Stepper", cancellation_token)
        self.replay: Replay | None = agent if isinstance(agent, Replay) else None
        """The trace's replay this walk plays (its forks keep it), or ``None``; views say what it cannot reproduce."""
        self.history: list[StepResult] = []
        self.status: StepperStatus = "ready"
        self._run: AgentRun | None = None
        self._upcoming: Move | None = None
        self._offered: list[ToolSchema] | None = None  # the tools listed for the upcoming model call
        self._lead: list[RunItem] = []
        self._snapshot: _Snapshot | None = None
        self._moving = False
        self._pause_requested = False
        self._move_task: asyncio.Task[StepResult] | None = None  # the move being made (Pause may undo it)
        self._undoing = False  # Pause cancelled the move being made: undo it rather than end the walk
        self._boundaries: list[object | None] = []  # the model client's checkpoint() before each move (fork(at=))
        self._seq = 0
        self._plan = Interventions()
        self.fork_source: ForkSource | None = None
        """What this walk, a fork, makes again of its parent's moves (``fork()`` sets it)."""
        self.parent: Stepper | None = None
        """The walk this one is a fork of (``fork()``), or ``None``."""
        self.what_if: str | None = None
        """The "what if" question this walk, a fork, answers (:func:`nbagent.whatif.ask`), or ``None``."""
        self.changes: list[str] = []
        """What was changed on this walk (:meth:`edit_request`, :meth:`give_answer`, :meth:`give_tool_result`),
        a short text each (``tool call c1 given an error ('service down')``), in order (a fork's title says
        it); :meth:`reset` clears it."""

    # ------------------------------------------------------------------ state

    @property
    def done(self) -> bool:
        return self.status in ("finished", "error", "cancelled")

    @property
    def run_id(self) -> str | None:
        """The id of the walk's run (``None`` before its first move)."""
        if self._run is not None:
            return self._run.run_id
        return self.history[0].move.run_id if self.history else None

    @property
    def upcoming(self) -> Move | None:
        """The move the next ``next()`` makes (``None`` before the first one and after the end)."""
        return self._upcoming

    @property
    def offered(self) -> list[ToolSchema] | None:
        """The tools listed from the agent's workbenches for the upcoming model call (``None``: no model
        call offering tools is next, or the listing failed)."""
        return self._offered

    @property
    def moving(self) -> bool:
        """A move is being made right now."""
        return self._moving

    @property
    def current(self) -> StepResult | None:
        """The last move made."""
        return self.history[-1] if self.history else None

    @property
    def events(self) -> list[BaseAgentEvent | BaseChatMessage | Response]:
        """Every event of the walk so far, in order, the final ``Response`` included."""
        return [event for result in self.history for event in result.events]

    @property
    def response(self) -> Response | None:
        return next((r.response for r in reversed(self.history) if r.response is not None), None)

    # ------------------------------------------------------------------ walking

    @entry_point("stepper.next()")
    async def next(self) -> StepResult:
        """Make one move: run the loop up to the next move boundary (or the end) and report it."""
        if self.done:
            raise StepperFinished(f"the run is over ({self.status}); await reset() to walk it again")
        if self._moving:
            raise RuntimeError("a move is already being made; await it before asking for the next one")
        self._moving = True
        try:
            if self._run is None:
                await self._begin()
            run, upcoming, done = self._run, self._upcoming, len(self.history)
            checkpoint = self.agent.model_client.checkpoint()
            assert run is not None and upcoming is not None
            self._undoing = False
            self._move_task = move = asyncio.ensure_future(self._advance())
            try:
                result = await move  # the caller's cancellation cancels the move too
            except asyncio.CancelledError:
                if not self._undoing or not move.cancelled():
                    raise
            else:
                self._offered = await self._list_offered()
                return result
            await self._undo(run, done, checkpoint)
            self._offered = await self._list_offered()
            raise MoveUndone(self, upcoming)
        finally:
            self._moving, self._move_task, self._undoing = False, None, False

    def pause(self) -> None:
        """Stop ``run_to_end()`` / ``run_until()`` at the next move boundary (the Pause button).

        The move in progress may take :data:`PAUSE_GRACE_S` to end, and the walk pauses after it; a
        slower one (a slow tool or model call, in any walk, a single ``next()`` too) is cancelled and
        undone: the walk is paused at the boundary before it and ``next()`` raises :class:`MoveUndone`.
        Either way the walk is paused, not cancelled. Safe to call from any thread.
        """
        self._pause_requested = True
        move = self._move_task
        if move is None or move.done():
            return
        loop = move.get_loop()
        loop.call_soon_threadsafe(loop.call_later, PAUSE_GRACE_S, self._undo_move, move)

    def _undo_move(self, move: asyncio.Task[StepResult]) -> None:
        """Cancel ``move`` if it is still being made; :meth:`next` then undoes it."""
        if not move.done() and move is self._move_task:
            self._undoing = True
            move.cancel()

    async def _undo(self, run: AgentRun, moves: int, checkpoint: object | None) -> None:
        """The move after ``moves`` was cancelled: walk again to the boundary before it.

        The interrupted run is ended (its context repaired, its trace ended ``cancelled``); the context,
        the client and the agent's failed-run mark are put back as :meth:`reset` does, and a new run
        makes the first ``moves`` moves again with what the interrupted run got (as :meth:`fork`
        does, this walk's changes included); then the model client is put back where it was before
        the cancelled move, so making it again asks the model what it asked.
        """
        if run.status == "running":
            await run.aclose()
        answers, results, memory = _given_of(self.history[:moves])
        source = ForkSource(self._plan, answers, results, memory, run.run_id, moves)
        own, boundaries = self.fork_source, self._boundaries[:moves]
        self._moving = False
        try:
            await Stepper.reset(self)  # this class's: a view of the walk is refreshed once, when it is paused again
        finally:
            self._moving = True
        if moves:
            self.fork_source = source
            try:
                await self._begin()
                for _ in range(moves):
                    await self._advance()
            finally:
                self.fork_source = own
        self._boundaries = boundaries  # the moves made again were given their answers: the client did not move
        self.agent.model_client.restore(checkpoint)

    @entry_point("stepper.run_to_end()")
    async def run_to_end(self) -> list[StepResult]:
        """Make every remaining move; returns them (empty if the run is already over).

        :meth:`pause` (or a kernel interrupt: :class:`WalkInterrupted`) stops it after the move in progress.
        """
        start = len(self.history)
        self._pause_requested = False
        while not self.done and not self._pause_requested:
            try:
                await self._next_or_pause()
            except MoveUndone:  # Pause undid a slow move: paused before it (the moves before made again)
                break
        return self.history[start:]

    @entry_point("stepper.run_until(...)")
    async def run_until(
        self,
        condition: Condition | None = None,
        *,
        step: int | None = None,
        move: str | None = None,
        tool: str | None = None,
        iteration: int | None = None,
        error: bool | None = None,
    ) -> StepResult | None:
        """Make moves until one meets every given criterion, and pause after it.

        ``step`` a STEP number (1-5), ``move`` a move name (``"call_llm"``, ``"tool_execution"``...),
        ``tool`` a tool name requested or run in the move, ``iteration`` a tool-loop iteration,
        ``error=True`` a move where the run raised, a model call failed or a tool gave an error
        result, ``condition`` any predicate on the :class:`StepResult`. Returns the matching move,
        or ``None`` if the run ended (or :meth:`pause` stopped it) without one. Calling it again goes
        on from there. A kernel interrupt pauses it after the move in progress (:class:`WalkInterrupted`).
        """
        criteria = (step, move, tool, iteration, error)
        if condition is None and all(value is None for value in criteria):
            raise ValueError("run_until needs a condition: step=, move=, tool=, iteration=, error= or a callable")
        await self._check_breakpoint(condition, step, move, tool, iteration, error)
        self._pause_requested = False
        while not self.done and not self._pause_requested:
            try:
                result = await self._next_or_pause()
            except MoveUndone:  # Pause undid a slow move: paused before it
                return None
            if result.matches(step=step, move=move, tool=tool, iteration=iteration, error=error) and (
                condition is None or condition(result)
            ):
                return result
        return None

    async def _next_or_pause(self) -> StepResult:
        """``next()``, shielded from the caller's cancellation: a kernel interrupt lets the move end at its
        boundary (at most :data:`PAUSE_GRACE_S`, else the move is undone, as Pause does) and raises
        :class:`WalkInterrupted`."""
        move = asyncio.ensure_future(self.next())
        try:
            return await asyncio.shield(move)
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None:
                task.uncancel()  # this cancellation is answered here: the wait below may run
            self.pause()
            done, _ = await asyncio.wait([move], timeout=PAUSE_GRACE_S + 1)  # it ends, or is undone
            if not done:  # still starting the run (no move to undo yet): the walk is cancelled
                move.cancel()
                await asyncio.wait([move])
            if not move.cancelled():
                move.exception()  # retrieved: the interruption is what the caller gets
            raise WalkInterrupted(self) from None

    async def _check_breakpoint(
        self,
        condition: object,
        step: object,
        move: object,
        tool: object,
        iteration: object,
        error: object,
    ) -> None:
        """A breakpoint that can never match raises at once, naming what this agent's runs can match."""
        where = "Stepper.run_until"
        check.function(where, "condition", condition, "a function (StepResult) -> bool", none=True)
        check.boolean(where, "error", error, none=True)
        settings = self.agent.loop_settings
        possible = [name for name, info in MOVES.items() if info.possible(settings)]
        steps = sorted({MOVES[name].step for name in possible})
        if step is not None:
            check.integer(where, "step", step, minimum=1, maximum=5)
            if step not in steps:
                raise check.wrong_value(
                    where, "step", f"a STEP this agent's runs make, one of {steps}", step, _never(step, settings)
                )
        if move is not None:
            info = MOVES[
                cast(MoveName, check.choice(where, "move", move, list(MOVES), "a move of records.MOVES, one of"))
            ]
            if move not in possible:
                listed = ", ".join(repr(name) for name in possible)
                hint = f"Move {move!r} is made only by an agent with {' and '.join(_NEEDS[c] for c in info.needs)}"
                raise check.wrong_value(where, "move", f"a move this agent's runs make ({listed})", move, hint)
            if step is not None and info.step != step:
                hint = f"Move {move!r} is STEP {info.step}: step={step} and move={move!r} never both match"
                raise check.wrong_value(where, "step", f"STEP {info.step} with move={move!r}", step, hint)
        if iteration is not None:
            last = settings.max_tool_iterations - 1
            check.integer(where, "iteration", iteration, minimum=0, maximum=last)
        if tool is not None:
            check.string(where, "tool", tool)
            names = [schema["name"] for schema in await self.agent.list_tools()]
            if tool not in names:
                offered = ", ".join(repr(name) for name in names) if names else "none: the agent has no tools"
                raise check.wrong_value(where, "tool", f"a tool the model is offered ({offered})", tool)

    @entry_point("stepper.aclose()")
    async def aclose(self) -> None:
        """End the run where it is, without restoring anything: every tool call in the context gets a result."""
        if self._moving:
            raise RuntimeError("a move is being made; await it (or cancel its task) before ending the run")
        run, self._run, self._offered = self._run, None, None
        if run is not None and run.status == "running":
            await run.aclose()
        if run is not None and not self.done:
            self.status = "cancelled"
        self._upcoming = None

    @entry_point("stepper.reset()")
    async def reset(self) -> None:
        """End the run (``aclose``) and put back what the walk changed, so it can be walked again.

        Restored: the model context as it was before the first move, and what the model client's
        ``checkpoint()`` keeps (a ``ReplayChatCompletionClient``: its script position, kept requests
        and usage counters; a replayed cassette: its position), and the agent's ``failed_run`` (the
        abandoned walk is not a failed run to retry). Not restored: side effects of tools
        that ran, memory stores, a real model's calls (it is called again and may answer
        differently), and the agent's trace, which keeps the abandoned run (ended ``cancelled``)
        next to the new one.
        """
        await self.aclose()
        snapshot, self._snapshot = self._snapshot, None
        if snapshot is not None:
            context = self.agent.model_context
            await context.clear()
            for message in snapshot.messages:
                await context.add_message(message)
            self.agent.model_client.restore(snapshot.client_checkpoint)
            self.agent.failed_run = snapshot.failed_run
        self.history.clear()
        self.changes.clear()
        self._boundaries.clear()
        self._lead = []
        self.status = "ready"

    # ------------------------------------------------------------------ forks and interventions

    @entry_point("stepper.fork()")
    async def fork(
        self,
        at: int | None = None,
        *,
        max_tool_iterations: int | None = None,
        reflect_on_tool_use: bool | None = None,
    ) -> Stepper:
        """A second walk paused at the same move (or after move ``at``), on a copy of the agent and its context.

        The copy (:meth:`AssistantAgent.copy`) starts from the context this walk started from and makes
        the moves this walk made again through the loop's seam (:mod:`nbagent.interventions`): the
        model's answers, the tools' results and the memory hits are given as this walk got them, so
        nothing is called again, and this walk's own changes are made again where it made them. This
        walk is untouched and can go on. The fork has a client and workbench of its own when they keep
        a position (a replay script, a trace's replay); a real model client, tools and memory stores
        are shared. Its runs are recorded in its agent's trace, with ``forked_from`` and ``fork_move``.
        Before going on, change what comes next with :meth:`edit_request`, :meth:`give_answer` and
        :meth:`give_tool_result`.

        ``at`` (from 1 to the moves made; a finished walk too) forks after an earlier move: the fork makes
        the first ``at`` moves again, with this walk's changes made in them, and its model client (a
        replay script, a trace's replay) is where this walk's was then. ``max_tool_iterations`` and
        ``reflect_on_tool_use`` give the fork's agent other settings (what if the limit were 1?); the
        moves made again must be ones the changed agent makes too, so fork before the first move they
        change. Either is listed in the fork's :attr:`changes`.
        """
        where = "Stepper.fork"
        if self._moving:
            raise RuntimeError(f"{where}: a move is being made; await it, then fork the walk paused at its next move")
        made = len(self.history)
        if at is None and self.done:
            raise StepperFinished(
                f"{where}: the walk is over ({self.status}); fork a walk paused before a move, fork it at= an "
                f"earlier move, or reset() it first"
            )
        if at is not None:
            source = self.fork_source
            check.integer(where, "at", at, minimum=source.moves if source is not None else 1, maximum=made)
        moves = made if at is None else at
        check.integer(where, "max_tool_iterations", max_tool_iterations, minimum=1, none=True)
        check.boolean(where, "reflect_on_tool_use", reflect_on_tool_use, none=True)
        agent = self.agent
        settings: dict[str, Any] = {}
        if max_tool_iterations is not None:
            settings["max_tool_iterations"] = max_tool_iterations
        if reflect_on_tool_use is not None:
            settings["reflect_on_tool_use"] = reflect_on_tool_use
        client = agent.model_client
        now = client.checkpoint()
        if moves < made:  # the client as it was before move at + 1: the fork asks what this walk asked next then
            client.restore(self._boundaries[moves])
        try:
            model_client = _client_copy(client)
        finally:
            client.restore(now)
        copy = agent.copy(model_client=model_client, workbench=_workbench_copy(agent.workbench), **settings)
        start = self._snapshot.messages if self._snapshot is not None else agent.model_context.messages
        await copy.model_context.clear()  # a fresh context holds its initial messages, which start has
        for message in start:  # messages are immutable: the copy's context shares them
            await copy.model_context.add_message(message)
        fork = type(self)(copy, list(self.messages), self.cancellation_token)
        fork.parent, fork.replay = self, self.replay
        fork.changes.extend(f"{name}={value}" for name, value in settings.items())
        run_id = self.run_id
        if moves and run_id is not None:  # the moves made so far are given as they were made
            answers, results, memory = _given_of(self.history[:moves])
            changes = Interventions()
            changes.applied = [(move, change) for move, change in self._plan.applied if move <= moves]
            fork.fork_source = ForkSource(changes, answers, results, memory, run_id, moves)
            for _ in range(moves):
                await fork.next()
        return fork

    async def _list_offered(self) -> list[ToolSchema] | None:
        """The tools the agent offers at the upcoming model call, listed from its workbenches (an MCP
        server's, a trace replay's recorded ones: :attr:`AssistantAgent.tools` holds only static
        workbenches' tools), or ``None`` when no model call offering tools is next or the listing failed
        (the call lists them again, and fails with the reason)."""
        upcoming, token = self._upcoming, self.cancellation_token
        if upcoming is None or upcoming.name not in ("call_llm", "next_llm_call"):
            return None
        if token is not None and token.is_cancelled():
            return None
        try:
            return await asyncio.wait_for(guarded(self.agent.list_tools(), token), LIST_TOOLS_TIMEOUT_S)
        except asyncio.CancelledError:
            if token is None or not token.is_cancelled():
                raise  # the caller's cancellation; the walk's token only ends the listing
            return None
        except Exception:  # a workbench that cannot list: edit_request falls back to agent.tools
            return None

    def _new_plan(self) -> Interventions:
        plan = Interventions()
        source = self.fork_source
        if source is not None:
            plan.replay(source.changes, source.answers, source.results, source.moves)
            plan.memory, plan.parent = source.memory, (source.run_id, source.moves)
        return plan

    def _check_next(self, where: str, moves: tuple[str, ...], what: str) -> str:
        """The name of the upcoming move, which must be one of ``moves`` (a change is made before it)."""
        upcoming = self._upcoming
        if self._moving or self.status != "paused" or upcoming is None:
            state = "a move is being made" if self._moving else f"the walk is {self.status}"
            raise RuntimeError(f"{where}: {state}; {what} is given while the walk is paused before a move")
        if upcoming.name not in moves:
            listed = " or ".join(repr(m) for m in moves)
            raise RuntimeError(
                f"{where}: the next move is {upcoming.name!r}; {what} is given before a move {listed}: "
                f"walk to it first (await stepper.run_until(move={moves[0]!r}))"
            )
        self._plan.move = len(self.history) + 1
        return upcoming.name

    def edit_request(
        self,
        *,
        system_message: str | None = _KEEP,
        messages: Sequence[LLMMessage] | None = None,
        tools: Sequence[str | ToolSchema] | None = None,
        tool_choice: str | None = None,
        model_client: ChatCompletionClient | None = None,
    ) -> None:
        """Change the request of the model call the next move makes (the walk must be paused before
        ``call_llm``, ``next_llm_call`` or ``reflect``).

        ``system_message`` (a text, or ``None`` for none), ``tools`` (names of tools the agent offers,
        an MCP server's or a trace replay's included, or tool schemas: a tool the agent lacks is
        offered by its schema) and ``model_client`` (e.g. a real model instead of the replay) hold for
        the rest of the run; ``messages`` replaces the context (every tool call with its result right after
        it, or a ``ValueError`` naming the message) and ``tool_choice`` (``"auto"``, ``"none"``,
        ``"required"`` or a tool's name) hold for this call. The change is recorded in the trace as an
        ``Intervention`` where it takes effect.
        """
        where = "Stepper.edit_request"
        move = self._check_next(where, LLM_MOVES, "a request change")
        edit = RequestEdit()
        if system_message is not _KEEP:
            edit.system_message = check.string(where, "system_message", system_message, none=True)
        if messages is not None:
            edit.messages = check_context(where, messages)
        listed = self._offered if self._offered is not None else self.agent.tools
        offered = {schema["name"]: schema for schema in listed}
        if tools is not None:
            if move == "reflect":
                raise check.wrong_value(where, "tools", "None at the reflection (it offers no tools)", tools)
            edit.tools = [_tool_schema(where, index, tool, offered) for index, tool in enumerate(tools)]
        if tool_choice is not None:
            if move == "reflect":
                raise check.wrong_value(
                    where, "tool_choice", "None at the reflection (its tool_choice is 'none')", tool_choice
                )
            names = [schema["name"] for schema in (edit.tools if edit.tools is not None else offered.values())]
            check.choice(where, "tool_choice", tool_choice, ["auto", "none", "required", *names])
            edit.tool_choice = tool_choice
        if model_client is not None:
            check.instance(where, "model_client", model_client, ChatCompletionClient, "a ChatCompletionClient")
            edit.model_client = model_client
        if not edit.describe(0):
            raise ValueError(
                f"{where}: nothing to change: give system_message=, messages=, tools=, tool_choice= or model_client="
            )
        self._plan.schedule_edit(edit)
        self.changes.append(f"the request changed ({edit.describe(0)})")

    def give_answer(self, answer: str | Sequence[FunctionCall] | CreateResult | BaseException) -> None:
        """Answer the model call the next move makes instead of the model: a text, tool calls
        (``FunctionCall`` objects: the tools then run, or get results from :meth:`give_tool_result`),
        a ``CreateResult``, or an exception (the call fails with it). Recorded as an ``Intervention``."""
        where = "Stepper.give_answer"
        move = self._check_next(where, LLM_MOVES, "an answer")
        given = given_answer(answer)
        if move == "reflect" and given.result is not None and not isinstance(given.result.content, str):
            raise check.wrong_value(where, "answer", "a text at the reflection (it offers no tools)", answer)
        self._plan.schedule_answer(given)
        self.changes.append(f"the model's answer given ({_short(answer)})")

    def give_tool_result(
        self, call_id: str, content: str | None = None, *, error: str | None = None, timeout: bool = False
    ) -> None:
        """Give tool call ``call_id`` of the next move (``tool_execution``) a result instead of calling
        its tool: ``content``, an ``error`` (its text; an error result), or ``timeout=True`` (the
        error result of a call that timed out). Recorded as an ``Intervention``."""
        where = "Stepper.give_tool_result"
        self._check_next(where, ("tool_execution",), "a tool result")
        calls = self.current.tool_calls if self.current is not None else []
        ids = [call.id for call in calls]
        check.string(where, "call_id", call_id)
        if call_id not in ids:
            raise check.wrong_value(where, "call_id", f"the id of a tool call the model asked for ({ids})", call_id)
        given = [content is not None, error is not None, timeout is True]
        if sum(given) != 1:
            raise ValueError(f"{where}: give exactly one of content=, error= or timeout=True (got {sum(given)})")
        check.string(where, "content", content, none=True)
        check.string(where, "error", error, none=True)
        check.boolean(where, "timeout", timeout)
        name = next(call.name for call in calls if call.id == call_id)
        text = content if content is not None else error if error is not None else TIMEOUT_RESULT
        result = FunctionExecutionResult(content=text, name=name, call_id=call_id, is_error=content is None)
        self._plan.schedule_result(call_id, result)
        kind = "a result" if content is not None else "an error" if error is not None else "a timeout"
        shown = "" if timeout else f" ({_short(text)})"
        self.changes.append(f"tool call {call_id} given {kind}{shown}")

    # ------------------------------------------------------------------ internals

    async def _begin(self) -> None:
        """Snapshot what reset restores, start the run and pull up to its first move."""
        agent = self.agent
        context = agent.model_context
        snapshot = _Snapshot(agent.model_client.checkpoint(), agent.failed_run, list(context.messages))
        self._plan = self._new_plan()
        run = self.agent.iter(self.messages, self.cancellation_token, interventions=self._plan)
        lead: list[RunItem] = []
        item = await run.__anext__()
        while not isinstance(item, Move):
            lead.append(item)
            item = await run.__anext__()
        self._snapshot, self._run, self._lead, self._upcoming = snapshot, run, lead, item
        self._seq = len(lead) + 1
        self.status = "paused"

    async def _advance(self) -> StepResult:
        assert self._run is not None and self._upcoming is not None
        run, move = self._run, self._upcoming
        self._plan.move = len(self.history) + 1
        self._boundaries[len(self.history) :] = [self.agent.model_client.checkpoint()]
        items, self._lead = self._lead, []
        before = self.agent.model_context.messages
        upcoming: Move | None = None
        failure: Exception | None = None
        try:
            async for item in run:
                self._seq += 1
                if isinstance(item, Move):
                    upcoming = item
                    break
                items.append(item)
        except Exception as exc:
            failure = exc
        except BaseException:
            self.status, self._run, self._upcoming = "cancelled", None, None
            raise
        if upcoming is None:
            self.status = "error" if failure is not None else "finished"
            self._run = None
        self._upcoming = upcoming
        result = StepResult(
            index=len(self.history) + 1,
            move=move,
            items=items,
            context_before=before,
            context_after=self.agent.model_context.messages,
            trace=self.agent.trace,
            seq=None if upcoming is None else self._seq - 1,
            upcoming=upcoming,
            error=failure,
        )
        self.history.append(result)
        return result

    def __repr__(self) -> str:
        where = f", at {self.current.name}" if self.current else ""
        return f"<Stepper agent={self.agent.name!r} status={self.status!r}, {len(self.history)} moves{where}>"


def _client_copy(client: ChatCompletionClient) -> ChatCompletionClient:
    """A fork's model client: its own when the client keeps a position (a replay script at the same
    answer, a trace's replay), else the same client (a real model's is stateless)."""
    if isinstance(client, RecordedChatCompletionClient):
        return client.copy()
    if type(client) is ReplayChatCompletionClient:
        twin = ReplayChatCompletionClient(
            client.chat_completions,
            model_info=client.model_info,
            latency=client.latency,
            chunk_delay=client.chunk_delay,
        )
        twin.position = client.position
        return twin
    return client


def _workbench_copy(workbenches: list[Workbench]) -> list[Workbench]:
    """A fork's workbenches: a trace's replay gets its own (it gives each result once), others are shared."""
    return [wb.copy() if isinstance(wb, RecordedWorkbench) else wb for wb in workbenches]


def _short(given: object, limit: int = 40) -> str:
    """A given answer or result, short, for :attr:`Stepper.changes`."""
    text = given if isinstance(given, str) else type(given).__name__
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _given_of(
    history: Sequence[StepResult],
) -> tuple[list[GivenAnswer], list[list[FunctionExecutionResult | None]], GivenMemory | None]:
    """What a walk's moves so far got: the model's answers, each tool batch's results, STEP 2's hits."""
    answers: list[GivenAnswer] = []
    results: list[list[FunctionExecutionResult | None]] = []
    memory = None
    for step in history:
        for item in step.items:
            if isinstance(item, LLMCall) and item.result is not None:
                answers.append(GivenAnswer(item.result, chunks=tuple(item.chunks) if item.streaming else None))
        executions = step.tool_executions
        if executions:
            results.append([execution.result for execution in executions])
        if step.name == "memory":
            events = [event for event in step.events if isinstance(event, MemoryQueryEvent)]
            memory = GivenMemory(events, list(step.context_after[len(step.context_before) :]))
    return answers, results, memory


def _tool_schema(where: str, index: int, tool: object, offered: dict[str, ToolSchema]) -> ToolSchema:
    """An item of ``edit_request(tools=...)``: the name of a tool the agent offers, or a tool schema."""
    if isinstance(tool, str):
        if tool not in offered:
            raise check.wrong_value(
                where, f"tools[{index}]", f"the name of a tool of the agent ({list(offered)})", tool
            )
        return offered[tool]
    if isinstance(tool, dict) and isinstance(tool.get("name"), str):
        return cast(ToolSchema, dict(tool))
    raise check.wrong_type(where, f"tools[{index}]", "a tool name (str) or a tool schema ({'name': ...})", tool)
