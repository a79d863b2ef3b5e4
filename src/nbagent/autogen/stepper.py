"""Step by step through an AutoGen agent's or team's run: one pause per item of AutoGen's stream.

:class:`AutoGenStepper` pulls the run (:class:`~nbagent.autogen.session.AutoGenRun` in its
step-by-step mode) one item at a time. It pauses at every event and message of AutoGen's stream,
at every model call *before* the call is sent (the wrapped client waits until the next step is
asked for), where a team's agent starts its turn, and at the end. Each pause is an
:class:`AutoGenStep`: the item, the agent speaking, that agent's context as it was then, and at a
model call the request the wrapped client saw. Streamed text is gathered into the pause that
follows it; the tool execution records into the pause of their ``ToolCallRequestEvent``.

A team runs its agents in the background (its runtime relays their items to its stream): between
two model calls an agent's tools run without waiting for the next step, so the pauses there follow
what the agent already did. A single agent's ``run_stream`` is pulled item by item: nothing runs
between two pauses.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

from .. import messages as nb
from ..models.base import ModelRequest
from ..records import LLMCall, RunFinished, RunItem, RunStarted, ToolExecution
from ..trace import Trace
from .session import AutoGenRun, Task
from .show import AgentTurn

if TYPE_CHECKING:
    import pandas as pd
    from autogen_agentchat.base import ChatAgent, TaskResult, Team
    from autogen_core import CancellationToken

StepperStatus = Literal["ready", "paused", "finished", "error", "cancelled"]


class StepperFinished(RuntimeError):
    """The run has ended: there is no next step."""


@dataclass
class AutoGenStep:
    """One pause: the item paused at, who speaks, their context then, and what passed by before it."""

    index: int
    item: RunItem
    agent: str
    context: list[nb.LLMMessage]
    streamed: str = ""  # text streamed since the previous pause
    passed: list[RunItem] = field(default_factory=list)  # items shown with this one (tool executions...)

    @property
    def kind(self) -> str:
        item = self.item
        if isinstance(item, nb.Response):
            return type(item.chat_message).__name__
        return type(item).__name__

    @property
    def llm_call(self) -> LLMCall | None:
        return self.item if isinstance(self.item, LLMCall) else None

    @property
    def request(self) -> ModelRequest | None:
        """At a model call: what the wrapped client was asked (messages, tools, tool_choice)."""
        return self.item.request if isinstance(self.item, LLMCall) else None

    @property
    def tool_executions(self) -> list[ToolExecution]:
        return [item for item in self.passed if isinstance(item, ToolExecution)]

    def context_df(self) -> pd.DataFrame:
        """The speaking agent's context at this pause as the trace's context frame."""
        from ..redact import DefaultRedactor
        from ..trace import context_rows

        return context_rows(self.context, None, DefaultRedactor())

    def __repr__(self) -> str:
        return f"AutoGenStep({self.index}, {self.kind}, agent={self.agent!r}, {len(self.context)} messages)"


# Items that are no pause of their own: shown with the pause that follows (or precedes) them.
_PASSING = (ToolExecution,)


class AutoGenStepper:
    """Walk one run of an AutoGen agent or team item by item (``await stepper.next()``)."""

    def __init__(
        self,
        agent_or_team: ChatAgent | Team,
        task: Task = None,
        *,
        trace: Trace | None = None,
        cancellation_token: CancellationToken | None = None,
    ) -> None:
        from .traces import trace_of

        self.agent_or_team = agent_or_team
        self.trace = trace if trace is not None else trace_of(agent_or_team)
        self.run = AutoGenRun(
            agent_or_team, task, trace=self.trace, cancellation_token=cancellation_token, step=True, markers=True
        )
        self.history: list[AutoGenStep] = []
        self.status: StepperStatus = "ready"
        self.error: str | None = None
        self._speaker = agent_or_team.name
        self._moving = False
        self._run_agents: dict[str, str] = {self.run.run_id: agent_or_team.name}

    @property
    def name(self) -> str:
        return self.agent_or_team.name

    @property
    def done(self) -> bool:
        return self.status in ("finished", "error", "cancelled")

    @property
    def moving(self) -> bool:
        """A step is being made (the run is working towards the next pause)."""
        return self._moving

    @property
    def current(self) -> AutoGenStep | None:
        return self.history[-1] if self.history else None

    @property
    def result(self) -> TaskResult | None:
        """AutoGen's ``TaskResult`` once the run has ended."""
        return self.run.result

    async def next(self) -> AutoGenStep:
        """Run to the next pause and return it; :class:`StepperFinished` once the run has ended."""
        if self.done:
            raise StepperFinished(f"the run of {self.name} has ended ({self.status})")
        if self._moving:
            raise RuntimeError("a step is being made already")
        self._moving = True
        streamed: list[str] = []
        passed: list[RunItem] = []
        try:
            while True:
                try:
                    item = await self.run.__anext__()
                except StopAsyncIteration:
                    self.status = "finished"
                    raise StepperFinished(f"the run of {self.name} has ended") from None
                if isinstance(item, nb.ModelClientStreamingChunkEvent):
                    streamed.append(item.content)
                    continue
                if isinstance(item, _PASSING) and self.history:
                    self.history[-1].passed.append(item)
                    continue
                step = self._pause(item, "".join(streamed), passed)
                ended = isinstance(item, RunFinished) and item.run_id == self.run.run_id
                if ended:  # the run's generator ends (agents unwrapped, trace detached) on the next read
                    async for _ in self.run:
                        pass
                self.status = "finished" if ended else "paused"
                return step
        except StepperFinished:
            raise
        except asyncio.CancelledError:
            self.status, self.error = "cancelled", "cancelled"
            raise
        except Exception as error:
            self.status, self.error = "error", f"{type(error).__name__}: {error}"
            raise
        finally:
            self._moving = False
            self.changed()

    async def run_to_end(self) -> list[AutoGenStep]:
        """Every remaining pause, to the end of the run."""
        steps = []
        while not self.done:
            try:
                steps.append(await self.next())
            except StepperFinished:
                break
        return steps

    async def aclose(self) -> None:
        """Stop the run where it is (AutoGen's CancellationToken fires)."""
        if self.done:
            return
        try:
            await self.run.aclose()
        finally:
            self.status = "cancelled"
            self.changed()

    def changed(self) -> None:
        """Called after each step and at the end: the change hook (the notebook's stepper refreshes
        its widget and its static copy here; a view of its own overrides it)."""

    def _pause(self, item: RunItem, streamed: str, passed: list[RunItem]) -> AutoGenStep:
        if isinstance(item, AgentTurn):
            self._speaker = item.content
            self._run_agents[item.run_id] = item.content
        elif isinstance(item, (RunStarted, RunFinished)):
            self._speaker = item.agent
        elif isinstance(item, LLMCall):
            self._speaker = self._run_agents.get(item.run_id, self._speaker)
        elif isinstance(item, (nb.BaseAgentEvent, nb.BaseChatMessage)) and item.source in self.run.agent_names:
            self._speaker = item.source
        context = self.run.context_at(item)
        if context is None:
            context = self.run.context_of(self._speaker)
        step = AutoGenStep(len(self.history), item, self._speaker, context, streamed, passed)
        self.history.append(step)
        return step

    def __repr__(self) -> str:
        return f"AutoGenStepper({self.name!r}, {self.status}, {len(self.history)} steps)"


def context_lines(messages: Sequence[nb.LLMMessage]) -> list[str]:
    """One line per context message (kind, source, text), for plain-text output."""
    from ..context import message_text

    lines = []
    for position, message in enumerate(messages):
        source = getattr(message, "source", "system" if isinstance(message, nb.SystemMessage) else "tool")
        text = " ".join(message_text(message).split())
        lines.append(f"{position:>3} {type(message).__name__:<31} {source:<12} {text[:80]}")
    return lines
