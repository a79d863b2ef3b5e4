"""One run of an AutoGen agent or team, item by item, recorded into an nbagent trace.

:class:`AutoGenRun` runs AutoGen's own ``run_stream`` and turns what it yields into nbagent's run
items (:data:`nbagent.records.RunItem`), which it records and passes on:

* a ``RunStarted`` for the run of the agent or team, and in a team one run per agent turn (from
  the agent's first item to its final message), grouped under the team's run;
* the agent's LLM calls as ``LLMCall`` records, from a :class:`~nbagent.autogen.client.RecordingClient`
  put in place of each agent's model client for the run (its request, usage, time to first token,
  errors);
* each AutoGen event and message as nbagent's (:mod:`nbagent.autogen.convert`), with its source
  agent; the final message of a turn as a ``Response``; tool calls as ``ToolExecution`` records timed
  from their ``ToolCallRequestEvent`` / ``ToolCallExecutionEvent`` pair; streamed chunks in the
  stream of their ``LLMCall``, as nbagent's own runs keep them;
* ``RunFinished`` for each turn and for the run; AutoGen's ``TaskResult`` is :attr:`AutoGenRun.result`.

Order. A single agent's ``run_stream`` is pulled one item at a time, so what its client does
happens between the items it falls between. A team runs its agents in the background and relays
their items to its stream through its runtime: a model call can start while the items an agent made
before it are still on their way. So the calls are merged with the items by time (AutoGen's
``created_at``, on the clock the recording client and context use too): before an item is recorded,
every call that started before it is; a call no item follows yet is recorded once the stream has
been quiet for ``settle`` seconds.

The model context of each agent is followed the same way (:mod:`nbagent.autogen.context`), so the
trace's snapshot at an item is the context as it was when the item was made.
"""

from __future__ import annotations

import asyncio
import contextvars
import time
import warnings
import weakref
from collections import deque
from collections.abc import AsyncGenerator, Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from autogen_agentchat import messages as ag
from autogen_agentchat.base import ChatAgent, TaskResult, Team
from autogen_core import CancellationToken, FunctionCall
from autogen_core import models as agm
from autogen_core.model_context import ChatCompletionContext as AgContext
from autogen_core.models import ChatCompletionClient

from .. import messages as nb
from .._ids import new_id, utc_now
from ..agent import CANCELLED_TOOL_RESULT, TEAM_CALL_GATE, AgentBusyError, AssistantAgent
from ..cancellation import CANCELLED
from ..cancellation import CancellationToken as NbCancellationToken
from ..records import LLMCall, RunFinished, RunItem, RunIterator, RunStarted, RunStatus, ToolExecution
from ..trace import Trace
from .client import RecordingClient, error_text
from .context import ContextView, RecordingContext, stored_messages
from .convert import Converter, autogen_token
from .show import AgentTurn
from .source import AutoGenSource

Task = str | ag.BaseChatMessage | Sequence[ag.BaseChatMessage] | None


# Per team (held weakly): per agent, what the team gave it in earlier runs that it has not answered yet,
# and whether its context held messages then. AutoGen keeps the messages in the agent's container.
_BUFFERS: weakref.WeakKeyDictionary[ChatAgent | Team, dict[str, tuple[list[nb.BaseChatMessage], bool]]] = (
    weakref.WeakKeyDictionary()
)


# The agents and teams an AutoGenRun is running, each with (weakly) that run: one run at a time (the
# run swaps the agent's model client and context for its own, as nbagent's agents run one at a time).
_BUSY: weakref.WeakKeyDictionary[ChatAgent | Team, weakref.ref[AutoGenRun]] = weakref.WeakKeyDictionary()

# What a run put in place, per agent: (agent, recording client, original client, recording context,
# original context); what :func:`_restore` puts back if the run is collected before its end.
_Wrapped = tuple[
    ChatAgent, ChatCompletionClient | None, ChatCompletionClient | None, AgContext | None, AgContext | None
]


def _restore(wrapped: list[_Wrapped], claimed: list[ChatAgent | Team]) -> None:
    """Put back the agents' own client and context, where a run's recording ones are still in place."""
    for agent, client, original_client, context, original_context in wrapped:
        if client is not None and getattr(agent, "_model_client", None) is client:
            agent._model_client = original_client  # type: ignore[attr-defined]  # noqa: SLF001 AutoGen's agent: no public setter (docs/contract.md)
        if context is not None and getattr(agent, "_model_context", None) is context:
            agent._model_context = original_context  # type: ignore[attr-defined]  # noqa: SLF001 AutoGen's agent: no public setter (docs/contract.md)
    for runnable in claimed:
        held = _BUSY.get(runnable)
        if held is not None and held() is None:
            del _BUSY[runnable]


def _weakly(method: Callable[[], None]) -> Callable[[], None]:
    """A callback calling the bound ``method`` while its object lives (a token given by the caller
    does not keep the run alive)."""
    ref = weakref.WeakMethod(method)

    def call() -> None:
        bound = ref()
        if bound is not None:
            bound()

    return call


# Event-loop iterations an item of a team's agent takes at most to reach the team's stream (about 6
# in AutoGen 0.7: the agent publishes it, the runtime delivers it to the group chat manager, which
# queues it for run_stream), with room to spare.
_RELAY_ITERATIONS = 50


def _retrieve(future: asyncio.Future[Any]) -> None:
    """Read an abandoned task's outcome when it comes (asyncio logs an exception never retrieved)."""
    if not future.cancelled():
        future.exception()


def perf_of(moment: datetime) -> float:
    """The ``perf_counter`` reading at wall-clock ``moment`` (AutoGen stamps items with the wall clock)."""
    if moment.tzinfo is None:  # AutoGen stamps in UTC; a naive time someone set is taken as UTC too
        moment = moment.replace(tzinfo=UTC)
    return time.perf_counter() - (utc_now() - moment).total_seconds()


def participants(runnable: ChatAgent | Team) -> list[ChatAgent]:
    """The agents of an agent (itself) or a team (its participants, those of nested teams included)."""
    if isinstance(runnable, ChatAgent):
        return [runnable]
    found: list[ChatAgent] = []
    # A team keeps its participants in ``_participants`` (no public accessor in 0.7): read, not changed.
    for member in getattr(runnable, "_participants", []):
        found.extend(participants(member))
    return found


def task_messages(task: Task) -> list[ag.BaseChatMessage] | None:
    """The task as AutoGen's ``run_stream`` makes it (a text is a ``TextMessage`` from ``user``)."""
    if task is None:
        return None
    if isinstance(task, str):
        return [ag.TextMessage(content=task, source="user")]
    if isinstance(task, ag.BaseChatMessage):
        return [task]
    return list(task)


class _Turn:
    """One turn of an agent: an nbagent run."""

    __slots__ = ("run_id", "calls", "batches", "tools", "request_at", "inner", "last_call")

    def __init__(self) -> None:
        self.run_id = new_id()
        self.calls = 0  # LLM calls recorded
        self.batches = 0  # tool batches ended
        self.tools: dict[str, ToolExecution] = {}  # the batch in progress, by call id
        self.request_at: datetime | None = None
        self.inner: list[nb.BaseAgentEvent | nb.BaseChatMessage] = []
        self.last_call: LLMCall | None = None


def _without_model(agent: ChatAgent, client: object) -> bool:
    """Whether ``agent`` makes no model call by design: a ``UserProxyAgent``, or an agent whose
    ``_model_client`` is ``None`` (AutoGen's ``CodeExecutorAgent`` without a model)."""
    if client is None and hasattr(agent, "_model_client"):
        return True
    return any(cls.__name__ == "UserProxyAgent" for cls in type(agent).__mro__)


class _Agent:
    """One AutoGen agent of the run: its source, its recording client and context, its turn."""

    def __init__(self, run: AutoGenRun, agent: ChatAgent, wrapped: list[_Wrapped]) -> None:
        self.run = run
        self.wrapped = wrapped  # the run's list of what its agents put in place (see _restore)
        self.agent = agent
        self.name = agent.name
        self.client: RecordingClient | None = None
        self.context: RecordingContext | None = None
        self._original_client: ChatCompletionClient | None = None
        self._original_context: AgContext | None = None
        self.source = AutoGenSource(agent.name)
        self.turn: _Turn | None = None
        self.stream_call: LLMCall | None = None  # the last streamed call recorded: chunks go to it
        self.chunks_seen = 0  # chunk events of stream_call read
        self.seen = 0  # chat messages of the run's thread this agent has been given
        # Messages a team gave the agent in earlier runs that it has not answered yet (its buffer).
        self.carried: list[nb.BaseChatMessage] = []
        self.spoke = False  # it held messages at the end of an earlier run of the team
        # nbagent's own AssistantAgent in an AutoGen team: its runs are nbagent runs, recorded by the
        # trace attached to it and handed on by a forwarder, not rebuilt from AutoGen's stream.
        self.own: AssistantAgent | None = agent if isinstance(agent, AssistantAgent) else None
        self.forwarder: _Forwarder | None = None
        self.attached = False  # the run's trace recorded the nbagent agent before the run

    # ------------------------------------------------------------------ wrapping

    async def wrap(self) -> None:
        """Put a recording client and context in place of the agent's for the run.

        AutoGen's ``AssistantAgent`` (and agents built like it) hold them in ``_model_client`` and
        ``_model_context``, read at the start of each turn; there is no public setter. The originals
        are put back by :meth:`unwrap` however the run ends.
        """
        agent = self.agent
        if self.own is not None:
            self.forwarder = _Forwarder(self.run, self)
            self.own.recorders.insert(0, self.forwarder)  # first: it marks a turn's RunStarted as the team's
            self.source.secrets = self.own.secrets
            return
        client = getattr(agent, "_model_client", None)
        if not isinstance(client, ChatCompletionClient) and not _without_model(agent, client):
            warnings.warn(
                f"AutoGen agent {agent.name!r} ({type(agent).__name__}) has no _model_client that nbagent "
                "can record: its model calls will be missing from the trace and the views (pass "
                "nbagent.autogen.RecordingClient(client) as its model client to record them)",
                stacklevel=4,
            )
        if isinstance(client, ChatCompletionClient):
            wrapper = client if isinstance(client, RecordingClient) else RecordingClient(client, self.run.converter)
            self._original_client = client
            wrapper.sink = self
            self.client = wrapper
            agent._model_client = wrapper  # type: ignore[attr-defined]  # noqa: SLF001 AutoGen's agent: no public setter (docs/contract.md)
            self.source.secrets = wrapper.secrets
        context = getattr(agent, "_model_context", None)
        if isinstance(context, AgContext):
            inner = context.inner if isinstance(context, RecordingContext) else context
            recording = RecordingContext(inner, self.run.converter)
            self._original_context = context
            self.context = recording
            held = self.run.converter.llms(await stored_messages(inner))
            if self.spoke and not held:  # reset since the last run: its buffer was emptied too
                self.carried = []
            self.source.model_context.follow(recording, held)
            agent._model_context = recording  # type: ignore[attr-defined]  # noqa: SLF001 AutoGen's agent: no public setter (docs/contract.md)
        self.wrapped.append((agent, self.client, self._original_client, self.context, self._original_context))

    def unwrap(self) -> None:
        agent = self.agent
        if self.own is not None and self.forwarder is not None:
            if self.forwarder in self.own.recorders:
                self.own.recorders.remove(self.forwarder)
            self.forwarder = None
        if self.client is not None:
            self.client.sink = None
            if getattr(agent, "_model_client", None) is self.client:
                agent._model_client = self._original_client  # type: ignore[attr-defined]  # noqa: SLF001 AutoGen's agent: no public setter (docs/contract.md)
        if self.context is not None and getattr(agent, "_model_context", None) is self.context:
            agent._model_context = self._original_context  # type: ignore[attr-defined]  # noqa: SLF001 AutoGen's agent: no public setter (docs/contract.md)

    # ------------------------------------------------------------------ the client's sink

    def call_started(self, call: LLMCall) -> asyncio.Future[None] | None:
        return self.run.call_started(self, call)

    def call_ended(self, call: LLMCall) -> None:
        self.run.wake()

    @property
    def view(self) -> ContextView:
        return self.source.model_context

    @property
    def messages(self) -> list[nb.LLMMessage]:
        """The agent's context as the run has followed it (an nbagent agent's: as it is)."""
        if self.own is not None:
            return list(self.own.model_context.messages)
        return self.view.messages


class _Forwarder:
    """A recorder on an nbagent agent taking part in the team: hands its run items to the run's
    consumer (the trace attached to the agent records them itself), a turn's ``RunStarted`` marked
    as a turn of the team's run."""

    def __init__(self, run: AutoGenRun, agent: _Agent) -> None:
        self._run = weakref.ref(run)
        self._agent = agent

    def record(self, item: RunItem) -> None:
        run = self._run()
        if run is None or run.status != "running":
            return
        if type(item) is LLMCall and id(item) in run.held_calls:  # handed on when its gate was made
            run.held_calls.discard(id(item))
            return
        if isinstance(item, RunStarted):
            item.parent_run_id = run.run_id
            run.turns.append((item.agent, item.run_id))
            run.turn_started(item)
        elif isinstance(item, nb.Response):
            run.last_answer = item.chat_message
        elif type(item) is LLMCall and item.streaming:
            self._agent.stream_call = item
            self._agent.chunks_seen = 0
        run.forwarded(self._agent, item)


class AutoGenRun(RunIterator):
    """One run of an AutoGen agent or team as an async iterator over nbagent run items, recorded.

    ``trace`` receives every item but streamed chunks (as nbagent's own runs feed their recorders).
    ``step=True`` makes each model call wait, once its ``LLMCall`` is yielded, until the consumer
    asks for the next item: the step-by-step mode pauses before every call. ``cancellation_token``
    is AutoGen's own; :meth:`cancel` and :meth:`aclose` fire it.

    On error or cancellation the final ``RunFinished`` records are given to the trace only, and the
    exception propagates, as with nbagent's own runs.
    """

    token: CancellationToken  # AutoGen's

    def __init__(
        self,
        runnable: ChatAgent | Team,
        task: Task = None,
        *,
        trace: Trace,
        cancellation_token: CancellationToken | NbCancellationToken | None = None,
        step: bool = False,
        markers: bool = False,
        settle: float = 0.1,
    ) -> None:
        if isinstance(runnable, AssistantAgent):  # a virtual ChatAgent (AutoGen's teams take it), not AutoGen's
            raise TypeError(
                f"{runnable.name!r} is nbagent's own AssistantAgent: run it with nbagent.run(agent, task) or "
                "agent.run(task=...); nbagent.autogen runs AutoGen's agents and teams (nbagent's agents may be "
                "participants of a team)"
            )
        if not isinstance(runnable, (ChatAgent, Team)):
            raise TypeError(f"not an AutoGen agent or team: {type(runnable).__name__}")
        self.runnable = runnable
        self.is_team = isinstance(runnable, Team)
        self.task = task_messages(task)
        self.trace = trace
        self.token = autogen_token(cancellation_token)
        # The same, as nbagent's: what nbagent's views cancel (the Stop button).
        self.cancellation_token = NbCancellationToken()
        self.cancellation_token.add_callback(self.token.cancel)
        self.step = step
        self.markers = markers
        self.settle = settle
        # Seconds a cancelled run waits for AutoGen's stream to end, from the moment it sees the
        # token fired: AutoGen 0.7.5's own ``__anext__`` can hang in ``stop_runtime()`` when a team is
        # cancelled during a tool call; the run is then abandoned and ends cancelled.
        self.teardown = 5.0
        self._teardown_by: float | None = None  # the monotonic deadline, once the token has fired
        self.converter = Converter()
        self.name: str = runnable.name
        self.run_id = new_id()
        self.status = "new"
        self.result: TaskResult | None = None
        self.turns: list[tuple[str, str]] = []  # (agent, run id) of each turn of a team, in order
        self._last_final: nb.BaseChatMessage | None = None  # the last turn's final message
        # What the run put in place, and the agents and team it runs (see _BUSY): a run collected
        # before its end (a consumer that broke out of its loop) puts the agents back.
        self._wrapped: list[_Wrapped] = []
        self._claimed: list[ChatAgent | Team] = []
        weakref.finalize(self, _restore, self._wrapped, self._claimed)
        self.agents = [_Agent(self, agent, self._wrapped) for agent in participants(runnable)]
        self._by_name = {agent.name: agent for agent in self.agents}
        self.top = self._by_name[self.name] if not self.is_team else None  # a single agent: its own run
        self.team_source = AutoGenSource(self.name) if self.is_team else None
        self._task_ids = {message.id for message in self.task or ()}
        self._thread: list[nb.BaseChatMessage] = []  # the chat messages of the run, in order
        self._pending: deque[tuple[_Agent, LLMCall]] = deque()  # calls started, not recorded yet
        self._forwarded: list[tuple[_Agent, RunItem]] = []  # items of nbagent agents' runs, not yielded yet
        self._turn_info: dict[int, tuple[int | None, str | None]] = {}  # per forwarded RunStarted: turn, handed from
        self.last_answer: nb.BaseChatMessage | None = None  # the last answer of an agent's turn, as it was made
        # Per call started and not yet yielded: the context position it was made from, and its gate
        # in the step-by-step mode (kept here, not on the call record, which is nbagent's).
        self._positions: dict[int, int] = {}
        self._contexts: dict[int, tuple[RunItem, list[nb.LLMMessage]]] = {}  # see context_at
        self._gates: dict[int, asyncio.Future[None]] = {}
        self.held_calls: set[int] = set()  # ids of the calls a gate handed on before they were recorded
        self._unrecorded: dict[int, tuple[_Agent, LLMCall]] = {}  # AutoGen's agents' calls recorded once sent
        self._wake: asyncio.Event | None = None
        # A single agent's last chat message: its answer if the stream ends after it.
        self._held: tuple[ag.BaseChatMessage | ag.BaseAgentEvent, nb.BaseChatMessage] | None = None
        self._items: AsyncGenerator[RunItem, None] | None = None
        self._advancing = False
        self._ended: asyncio.Event | None = None
        self._context = contextvars.copy_context()  # where AutoGen's stream runs
        self._stream: Any = None  # AutoGen's run_stream
        self._next: asyncio.Future[Any] | None = None  # the read of its next item

    # ------------------------------------------------------------------ iteration

    def cancel(self) -> None:
        """Fire the run's AutoGen ``CancellationToken``: the run ends with ``CancelledError``."""
        self.token.cancel()

    async def aclose(self) -> None:
        """End the run where it is (from another task, a Stop button: cancel it and wait for its end)."""
        if self._items is not None and self.status == "new":
            await self._items.aclose()  # taken and not started: it will not start
        await super().aclose()

    async def _iterate(self) -> AsyncGenerator[RunItem, None]:
        if self.status != "new":
            return
        self._begin()
        try:
            for agent in self.agents:
                await agent.wrap()
            self._attach()
            started = self._start()
            yield started
            self._advancing = True
            if self.step:  # nbagent's agents in the team wait before each model call, as AutoGen's do
                self._context.run(TEAM_CALL_GATE.set, self._gate_own)
            self._stream = self.runnable.run_stream(task=self.task, cancellation_token=self.token)
            while (batch := await self._next_batch()) is not None:
                for run_item in batch:
                    shown = self._shown(run_item)
                    if shown is not None:
                        self._advancing = False
                        yield shown
                        self._advancing = True
                    self._open_gates(run_item)
            self._advancing = False
            finished = self._finish_top("ok")
            yield finished
        except GeneratorExit:  # closed by the consumer (aclose) while it held an item
            self.token.cancel()
            await self._shutdown()
            await self._close_tool_calls()
            self._finish_all("cancelled")
            raise
        except asyncio.CancelledError:
            self._advancing = False
            self.token.cancel()
            await self._shutdown()
            await self._close_tool_calls()
            self._finish_all("cancelled")
            raise
        except BaseException as error:
            self._advancing = False
            await self._shutdown()
            self._finish_all("error", error)
            raise
        finally:
            self._end()

    @property
    def agent(self) -> ChatAgent | Team:
        """The agent or team this run runs (``run.agent.name`` names it, as for nbagent's runs)."""
        return self.runnable

    @property
    def agent_names(self) -> list[str]:
        """The names of the run's agents (a team's participants, nested teams' included)."""
        return list(self._by_name)

    def _emit(self, agent: _Agent | None, item: RunItem, out: list[RunItem]) -> None:
        """Pass ``item`` on; in the step-by-step mode, with its agent's context at this point."""
        out.append(item)
        if self.step and agent is not None and type(item) is not nb.ModelClientStreamingChunkEvent:
            self._contexts[id(item)] = (item, agent.messages)

    def turn_started(self, started: RunStarted) -> None:
        """An nbagent agent's turn starts (its items are yielded later): its place and who handed over."""
        last = self.last_answer
        handed = last.source if isinstance(last, nb.HandoffMessage) and last.target == started.agent else None
        self._turn_info[id(started)] = (len(self.turns) - 1, handed)

    def forwarded(self, agent: _Agent, item: RunItem) -> None:
        """An item of an nbagent agent's run in the team (recorded by the trace attached to it): yielded
        before the next item of AutoGen's stream, which the agent's item precedes."""
        kept: list[RunItem] = []
        self._emit(agent, item, kept)
        self._forwarded.extend((agent, one) for one in kept)
        self.wake()

    def _flush(self, out: list[RunItem]) -> None:
        if self._forwarded:
            out.extend(item for _, item in self._forwarded)
            self._forwarded.clear()

    def context_at(self, item: RunItem) -> list[nb.LLMMessage] | None:
        """The context of ``item``'s agent when the run recorded it (step-by-step mode; once per item)."""
        kept = self._contexts.pop(id(item), None)
        return kept[1] if kept is not None and kept[0] is item else None

    def context_of(self, agent: str) -> list[nb.LLMMessage]:
        """``agent``'s context as the run has followed it (as it was when the last item was made)."""
        found = self._by_name.get(agent)
        return [] if found is None else found.messages

    def _shown(self, item: RunItem) -> RunItem | None:
        """What is yielded for ``item``: with ``markers``, a turn's start as an ``AgentTurn``, its end not."""
        if not self.markers or not isinstance(item, (RunStarted, RunFinished)) or item.run_id == self.run_id:
            return item
        if isinstance(item, RunFinished):
            return None
        index, handed = self._turn_info.pop(id(item), (None, None))
        if index is None:
            index = len(self.turns) - 1
            last = self._last_final
            handed = last.source if isinstance(last, nb.HandoffMessage) and last.target == item.agent else None
        marker = AgentTurn(
            content=item.agent, source=item.agent, turn=index, handed_from=handed, run_id=item.run_id,
            created_at=item.started_at,
        )  # fmt: skip
        kept = self._contexts.pop(id(item), None)
        if kept is not None:
            self._contexts[id(marker)] = (marker, kept[1])
        return marker

    def _claim(self) -> None:
        """Mark the team and its agents as run by this run; :class:`AgentBusyError` if another runs one."""
        wanted: list[ChatAgent | Team] = [self.runnable, *(agent.agent for agent in self.agents)]
        for runnable in wanted:
            held = _BUSY.get(runnable)
            other = None if held is None else held()
            if other is not None and other is not self:
                what = "team" if isinstance(runnable, Team) else "agent"
                raise AgentBusyError(
                    f"AutoGen {what} {runnable.name!r} is running (nbagent run {other.run_id} of "
                    f"{other.name!r}); it runs one task at a time: await or cancel that run first"
                )
        me = weakref.ref(self)
        for runnable in wanted:
            _BUSY[runnable] = me
            self._claimed.append(runnable)

    def _release(self) -> None:
        for runnable in self._claimed:
            held = _BUSY.get(runnable)
            if held is not None and held() is self:
                del _BUSY[runnable]
        self._claimed.clear()

    def _begin(self) -> None:
        self._claim()
        self.status = "running"
        if self.is_team:
            kept = _BUFFERS.get(self.runnable, {})
            for agent in self.agents:
                carried, spoke = kept.get(agent.name, ([], False))
                # team.reset() empties the agents' contexts and buffers alike: an agent that had spoken
                # and holds no message now was reset (seen once its context is read, in wrap()).
                agent.carried = list(carried)
                agent.spoke = spoke
        self._wake = asyncio.Event()
        self.token.add_callback(_weakly(self.wake))  # a read of the stream that never ends is not waited on

    def _attach(self) -> None:
        """Attach the sources to the trace once the agents are wrapped: the trace keeps the secrets of
        their clients from then on (``wrap()`` gives them to the sources), so they stay masked once the
        run and its agents are gone."""
        for agent in self.agents:
            if agent.own is not None:  # nbagent's agent: the trace records its runs as its own trace does
                agent.attached = self.trace.recorder_of(agent.own) is not None
                self.trace.attach(agent.own)
            else:
                self.trace.attach(agent.source)
        if self.team_source is not None:
            self.trace.attach(self.team_source)

    def _end(self) -> None:
        if self.is_team:
            _BUFFERS[self.runnable] = {
                agent.name: ([*agent.carried, *self._thread[agent.seen :]], agent.spoke or bool(agent.messages))
                for agent in self.agents
            }
        for agent in self.agents:
            agent.unwrap()
        self._wrapped.clear()
        self._release()
        self._cancel_gates()
        for agent in self.agents:
            if agent.own is None:
                self.trace.detach(agent.source)
            elif not agent.attached:  # attached for this run only
                self.trace.detach(agent.own)
        if self.team_source is not None:
            self.trace.detach(self.team_source)
        if self._ended is not None:
            self._ended.set()

    async def _next_batch(self) -> list[RunItem] | None:
        """The run items of AutoGen's next item, or of calls that started (``None``: the stream ended)."""
        assert self._wake is not None
        self._contexts.clear()  # the contexts of the last batch's items, read as they were yielded
        if self.token.is_cancelled():
            raise asyncio.CancelledError(CANCELLED)
        if self._next is None:
            # Every step of AutoGen's stream in one context: its spans set context variables in one
            # step and reset them in a later one.
            self._next = asyncio.get_running_loop().create_task(self._stream.__anext__(), context=self._context)
            self.token.link_future(self._next)
        waker = asyncio.ensure_future(self._wake.wait())
        timeout = self.settle if self._pending and self.is_team else None
        done, _ = await asyncio.wait({self._next, waker}, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        if waker not in done:
            waker.cancel()
        self._wake.clear()
        if self.token.is_cancelled() and self._next not in done:
            # The read was cancelled with the token; AutoGen's stream may take long to end (or never).
            done, _ = await asyncio.wait({self._next}, timeout=self._teardown_left())
            if not done:  # abandoned: _shutdown does not wait for it either
                raise asyncio.CancelledError(CANCELLED)
        out: list[RunItem] = []
        self._flush(out)
        if self._next in done:
            future, self._next = self._next, None
            try:
                item = future.result()
            except StopAsyncIteration:
                return None
            if self.result is None:  # after its TaskResult the stream only ends
                self._take(item, out)
        elif not self.is_team:  # a single agent's call: nothing it made before is still on its way
            self._drain(None, out)
        elif not done and await self._quiet():  # a team's stream quiet for ``settle`` seconds
            self._drain(None, out)
        return out

    async def _quiet(self) -> bool:
        """Whether the team's stream is still quiet once the event loop has run what it had ready.

        ``settle`` seconds of wall-clock time are no proof on a busy machine (the process may not
        have run meanwhile): the relay of an item through the team's runtime takes a few loop
        iterations, which are given to it here before a call is recorded ahead of what may come.
        """
        for _ in range(_RELAY_ITERATIONS):
            await asyncio.sleep(0)
            if self._next is not None and self._next.done():
                return False
        return True

    def _teardown_left(self) -> float:
        """Seconds left of the ``teardown`` time, counted from the first time this is asked."""
        now = time.monotonic()
        if self._teardown_by is None:
            self._teardown_by = now + self.teardown
        return max(self._teardown_by - now, 0.0)

    async def _shutdown(self) -> None:
        """Stop AutoGen's stream: the pending read cancelled, the generator closed, within ``teardown``
        seconds in all (what is still running then is abandoned, the team left to finish alone)."""
        self._cancel_gates()
        pending, self._next = self._next, None
        if pending is not None and not pending.done():
            pending.cancel()
            # AutoGen 0.7.5's __anext__ waits in stop_runtime() for a runtime a cancelled tool call
            # keeps busy, maybe forever.
            await asyncio.wait({pending}, timeout=self._teardown_left())
            if pending.done() and not pending.cancelled():
                pending.exception()  # seen: not logged as never retrieved
            else:
                pending.add_done_callback(_retrieve)
        if self._stream is not None and (pending is None or pending.done()):
            closing = asyncio.get_running_loop().create_task(self._stream.aclose(), context=self._context)
            # A cancelled team waits for its runtime to be idle, which a tool that ignores the token
            # can delay a long time: the run ends after ``teardown`` seconds, the team left to finish.
            await asyncio.wait({closing}, timeout=self._teardown_left())
            if closing.done() and not closing.cancelled():
                closing.exception()  # the run ends with its own error; the teardown's is not raised
            else:
                closing.add_done_callback(_retrieve)
        out: list[RunItem] = []
        self._drain(None, out)  # the calls made up to here are part of the run

    async def _close_tool_calls(self) -> None:
        """A cancelled run leaves each agent's context as the OpenAI API accepts it (nbagent's fix 2):
        tool calls AutoGen left without results (cancelled during the tool) get an error result."""
        for agent in self.agents:
            context = agent.context.inner if agent.context is not None else None
            if context is None:
                continue
            try:
                held = await asyncio.wait_for(context.get_messages(), timeout=max(self._teardown_left(), 0.1))
                answered = {
                    result.call_id
                    for message in held
                    if isinstance(message, agm.FunctionExecutionResultMessage)
                    for result in message.content
                }
                last = held[-1] if held else None
                if not isinstance(last, agm.AssistantMessage) or not isinstance(last.content, list):
                    continue
                open_calls = [
                    call for call in last.content if isinstance(call, FunctionCall) and call.id not in answered
                ]
                if open_calls:
                    results = [
                        agm.FunctionExecutionResult(
                            content=CANCELLED_TOOL_RESULT, name=call.name, call_id=call.id, is_error=True
                        )
                        for call in open_calls
                    ]
                    await context.add_message(agm.FunctionExecutionResultMessage(content=results))
            except Exception:  # noqa: BLE001, S112 (a context that cannot be read or written is left as it is)
                continue

    # ------------------------------------------------------------------ calls

    def wake(self) -> None:
        if self._wake is not None:
            self._wake.set()

    def call_started(self, agent: _Agent, call: LLMCall) -> asyncio.Future[None] | None:
        """A recording client's call starts: it is recorded when its place among the items is known."""
        if self.status != "running":
            return None
        if agent.context is not None:  # the context the call was made from
            self._positions[id(call)] = len(agent.context.changes)
        self._pending.append((agent, call))
        self.wake()
        if not self.step:
            return None
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._gates[id(call)] = gate
        return gate

    def _gate_own(self, agent: object, call: LLMCall) -> asyncio.Future[None] | None:
        """:data:`~nbagent.agent.TEAM_CALL_GATE` in the step-by-step mode: an nbagent agent of the team
        waits before sending ``call`` until the consumer has taken it and asks for the next item."""
        own = next((one for one in self.agents if one.own is agent), None)
        if self.status != "running" or own is None or own.forwarder is None:
            return None
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._gates[id(call)] = gate
        # The call goes to the consumer now, the agent's recorders get it once the gate opens (its
        # time started then); the forwarder, one of them, does not hand it on twice.
        own.forwarder.record(call)
        self.held_calls.add(id(call))
        return gate

    def _cancel_gates(self) -> None:
        for gate in self._gates.values():
            if not gate.done():
                gate.cancel()
        self._gates.clear()
        self.held_calls.clear()  # never sent: never recorded
        for agent, call in self._unrecorded.values():  # shown already: recorded as they end, never sent
            agent.source.record(call)
        self._unrecorded.clear()

    def _open_gates(self, item: RunItem) -> None:
        if type(item) is LLMCall:
            gate = self._gates.pop(id(item), None)
            if gate is not None and not gate.done():
                unrecorded = self._unrecorded.pop(id(item), None)
                if unrecorded is not None:  # sent now: its time starts here, and its record has it
                    item.started_at, item.start_perf = utc_now(), time.perf_counter()
                    unrecorded[0].source.record(item)
                gate.set_result(None)

    def _drain(self, before: ag.BaseChatMessage | ag.BaseAgentEvent | None, out: list[RunItem]) -> None:
        """Record the pending calls that started before ``before`` (all of them with ``None``)."""
        while self._pending:
            agent, call = self._pending[0]
            if before is not None:
                made = before.created_at
                if call.started_at > made:
                    break
                # The same microsecond: a call starts after the tool results or memory it follows.
                if call.started_at == made and isinstance(before, (ag.ToolCallExecutionEvent, ag.MemoryQueryEvent)):
                    break
            self._pending.popleft()
            self._record_call(agent, call, out)

    def _record_call(self, agent: _Agent, call: LLMCall, out: list[RunItem]) -> None:
        turn = self._turn_of(agent, out, call.started_at, call.start_perf)
        if turn.calls == 0:
            call.purpose, call.iteration = "initial", 0
        elif call.request.tools:
            call.purpose, call.iteration = "tool_loop", turn.batches
        else:
            call.purpose, call.iteration = "reflection", max(turn.batches - 1, 0)
        turn.calls += 1
        turn.last_call = call
        call.run_id = turn.run_id
        position = self._positions.pop(id(call), None)
        if position is not None:
            agent.view.advance_to(position)
        if call.streaming:
            agent.stream_call = call
            agent.chunks_seen = 0
        if id(call) in self._gates:  # held (step by step): recorded when sent, its start time then
            self._unrecorded[id(call)] = (agent, call)
        else:
            agent.source.record(call)
        self._emit(agent, call, out)

    # ------------------------------------------------------------------ runs

    def _start(self) -> RunStarted:
        task = [self.converter.chat(message) for message in self.task or ()]
        self._thread.extend(task)
        if self.top is not None:  # a single agent: the run is its turn
            turn = self.top.turn = _Turn()
            turn.run_id = self.run_id
            self.top.seen = len(self._thread)
            started = RunStarted(self.run_id, self.name, task)
            self.top.source.record(started)
            return started
        started = RunStarted(self.run_id, self.name, task)
        assert self.team_source is not None
        self.team_source.record(started)
        return started

    def _turn_of(self, agent: _Agent, out: list[RunItem], at: datetime, perf: float) -> _Turn:
        """The agent's turn in progress; a new one (its ``RunStarted`` recorded) if none is."""
        if agent.turn is not None:
            return agent.turn
        turn = agent.turn = _Turn()
        self.turns.append((agent.name, turn.run_id))
        given = [*agent.carried, *self._thread[agent.seen :]]
        agent.carried = []
        agent.seen = len(self._thread)
        started = RunStarted(
            turn.run_id, agent.name, list(given), started_at=at, start_perf=perf, parent_run_id=self.run_id
        )
        agent.source.record(started)
        self._emit(agent, started, out)
        return turn

    def _end_turn(self, agent: _Agent, status: RunStatus, error: str | None, out: list[RunItem] | None) -> None:
        turn = agent.turn
        if turn is None:
            return
        agent.turn = None
        agent.stream_call = None
        finished = RunFinished(turn.run_id, agent.name, status, error)
        agent.source.record(finished)
        if out is not None:
            self._emit(agent, finished, out)

    def _finish_top(self, status: RunStatus, error: BaseException | None = None) -> RunFinished:
        self.status = status
        text = None if error is None else error_text(error)
        if self.top is not None:
            turn = self.top.turn
            self.top.turn = None
            finished = RunFinished(self.run_id if turn is None else turn.run_id, self.name, status, text)
            self.top.source.record(finished)
            return finished
        for agent in self.agents:
            call = None if agent.turn is None else agent.turn.last_call
            # A turn that failed at a model call ends with that call's error (the team's is AutoGen's
            # RuntimeError around it, with a traceback).
            self._end_turn(agent, status, call.error if call is not None and call.error else text, None)
        finished = RunFinished(self.run_id, self.name, status, text)
        assert self.team_source is not None
        self.team_source.record(finished)
        return finished

    def _finish_all(self, status: RunStatus, error: BaseException | None = None) -> None:
        if self.status in ("ok", "error", "cancelled"):
            return
        if self._held is not None:  # a single agent's message the stream did not confirm as its last
            self._record_event(self._by_name[self._held[1].source], self._held[1], [])
            self._held = None
        self._finish_top(status, error)

    # ------------------------------------------------------------------ items

    def _take(self, item: Any, out: list[RunItem]) -> None:
        """Turn one item of AutoGen's stream into nbagent's run items (recorded), appended to ``out``."""
        if isinstance(item, TaskResult):
            self._ended_with(item, out)
            return
        if not isinstance(item, (ag.BaseChatMessage, ag.BaseAgentEvent)):
            return
        if item.id in self._task_ids:  # the task, echoed first: the run's RunStarted holds it
            return
        self._drain(item, out)
        self._release_held(out, final=False)
        agent = self._by_name.get(item.source)
        if agent is None:  # the team's own (SelectSpeakerEvent...) or an agent of a nested team's
            converted = self.converter.item(item)
            if isinstance(converted, nb.BaseChatMessage):
                self._thread.append(converted)
            (self.team_source or self._source_of_top()).record(converted)
            out.append(converted)
            return
        if agent.own is not None:
            self._take_own(agent, item, out)
            return
        turn = self._turn_of(agent, out, item.created_at, perf_of(item.created_at))
        if isinstance(item, ag.ModelClientStreamingChunkEvent):
            self._chunk(agent, item, out)
            return
        agent.view.advance(item.created_at)
        converted = self.converter.item(item)
        if isinstance(item, ag.ToolCallExecutionEvent):
            self._apply_results(agent, item)
        if isinstance(converted, nb.BaseChatMessage):
            self._thread.append(converted)
            agent.seen = len(self._thread)  # a team gives an agent the others' messages, not its own
            if agent is self.top:  # the last chat message of a single agent is its answer
                self._held = (item, converted)
                return
            self._answer(agent, converted, out)
            self._end_turn(agent, "ok", None, out)
            self._last_final = self.last_answer = converted
            return
        self._record_event(agent, converted, out)
        if isinstance(item, ag.ToolCallRequestEvent):
            self._tools_started(agent, turn, item, out)
        elif isinstance(converted, nb.ToolCallExecutionEvent):
            self._tools_ended(turn, item.created_at, converted)

    def _take_own(self, agent: _Agent, item: ag.BaseChatMessage | ag.BaseAgentEvent, out: list[RunItem]) -> None:
        """An item of an nbagent agent, as AutoGen's stream relays it: its run's items were recorded and
        handed on already; the run keeps its chat messages (the team's thread) and its streamed chunks
        (which nbagent's recorders do not get one by one) go to the consumer."""
        self._flush(out)
        if isinstance(item, ag.ModelClientStreamingChunkEvent):
            call = agent.stream_call
            if call is not None and agent.chunks_seen < len(call.chunks):
                agent.chunks_seen += 1
            self._emit(agent, self.converter.event(item), out)
        elif isinstance(item, ag.BaseChatMessage):
            converted = self.converter.chat(item)
            self._thread.append(converted)
            agent.seen = len(self._thread)
            self._last_final = converted

    def _tools_started(self, agent: _Agent, turn: _Turn, item: ag.ToolCallRequestEvent, out: list[RunItem]) -> None:
        """A ToolCallRequestEvent: one ``ToolExecution`` per call, started when the event was made."""
        turn.request_at = item.created_at
        turn.tools = {}
        perf = perf_of(item.created_at)
        calls = [nb.FunctionCall(id=call.id, name=call.name, arguments=call.arguments) for call in item.content]
        for call in calls:
            execution = ToolExecution(
                turn.run_id, turn.batches, call, len(calls), started_at=item.created_at, start_perf=perf
            )
            turn.tools[call.id] = execution
            agent.source.record(execution)
            self._emit(agent, execution, out)

    def _tools_ended(self, turn: _Turn, made: datetime, event: nb.ToolCallExecutionEvent) -> None:
        """A ToolCallExecutionEvent: the batch's executions end when it was made (AutoGen runs the
        calls of a batch together and makes the event when the last one ends)."""
        ended = perf_of(made)
        for result in event.content:
            execution = turn.tools.pop(result.call_id, None)
            if execution is not None:
                execution.result = result
                execution.duration_s = max(ended - execution.start_perf, 0.0)
        turn.batches += 1

    def _ended_with(self, result: TaskResult, out: list[RunItem]) -> None:
        """AutoGen's TaskResult: the calls and turns still open end."""
        self._drain(None, out)
        self._release_held(out, final=True)
        for agent in self.agents:
            if agent is not self.top:
                self._end_turn(agent, "ok", None, out)
        self.result = result

    def _source_of_top(self) -> AutoGenSource:
        assert self.top is not None
        return self.top.source

    def _record_event(self, agent: _Agent, event: nb.BaseAgentEvent | nb.BaseChatMessage, out: list[RunItem]) -> None:
        if agent.turn is not None:
            agent.turn.inner.append(event)
        agent.source.record(event)
        self._emit(agent, event, out)

    def _answer(self, agent: _Agent, message: nb.BaseChatMessage, out: list[RunItem]) -> None:
        """The final message of the agent's turn, as the turn's ``Response``."""
        turn = agent.turn
        call = None if turn is None else turn.last_call
        if call is not None and not call.streaming and call.result is not None and isinstance(call.result.content, str):
            call.message_id = message.id  # AutoGen draws the message id; the answer carries it
        response = nb.Response(chat_message=message, inner_messages=list(turn.inner if turn else ()))
        agent.source.record(response)
        self._emit(agent, response, out)

    def _release_held(self, out: list[RunItem], final: bool) -> None:
        """A single agent's chat message: its answer if the stream ends after it, else an event."""
        held, self._held = self._held, None
        if held is None:
            return
        assert self.top is not None
        if final:
            self._answer(self.top, held[1], out)
        else:
            self._record_event(self.top, held[1], out)

    def _apply_results(self, agent: _Agent, item: ag.ToolCallExecutionEvent) -> None:
        """The context at a ToolCallExecutionEvent holds its results (AutoGen adds them just after
        making the event, then yields it)."""
        pending = agent.view.pending()
        if pending:
            _, what, payload = pending[0]
            ids = [result.call_id for result in item.content]
            if what == "add" and isinstance(payload, nb.FunctionExecutionResultMessage):
                if [result.call_id for result in payload.content] == ids:
                    agent.view.advance(count=1)

    def _chunk(self, agent: _Agent, item: ag.ModelClientStreamingChunkEvent, out: list[RunItem]) -> None:
        """A streamed chunk: its id goes to its call's stream (recorders read chunks from there)."""
        call = agent.stream_call
        if call is not None and agent.chunks_seen < len(call.chunks):
            if agent.chunks_seen == 0 and item.full_message_id:
                call.message_id = item.full_message_id
            if len(call.chunk_ids) == agent.chunks_seen:  # else the trace drew them when it was read
                call.chunk_ids.append(item.id)  # type: ignore[attr-defined]  # a list for streamed calls
            agent.chunks_seen += 1
            self._emit(agent, self.converter.event(item), out)
            return
        self._record_event(agent, self.converter.event(item), out)  # a chunk no recorded call streamed

    def __repr__(self) -> str:
        return f"AutoGenRun({self.name!r}, run_id={self.run_id!r}, status={self.status!r})"
