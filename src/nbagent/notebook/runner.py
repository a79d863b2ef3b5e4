"""Running a shown run: :class:`Runner` drives the loop into what shows it, and handles Stop and interrupts.

The runner makes the run (``agent.iter``, an :class:`~nbagent.agent.AgentRun` given, or an AutoGen agent's
through :data:`~nbagent.records.FOREIGN_RUN`), hands each item to its :class:`Shown` (the view) and tells it
how the run ended: ``ok``, ``error``, ``cancelled`` (Stop, or the run's cancellation token) or ``interrupted``
(a kernel interrupt, Ctrl-C, or its task cancelled from outside). A kernel interrupt of a cell awaiting a run
ends the cell in one line (:class:`RunInterrupted`); a run in the background (:meth:`Runner.start`) is waited
for with :meth:`Runner.wait`, which an interrupt stops as Stop does. It knows no widget.
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol, cast

from ..agent import AgentRun, AssistantAgent
from ..agent_input import Task, task_messages
from ..cancellation import CancellationToken
from ..messages import Response
from ..records import FOREIGN_RUN, ForeignRun, RunItem
from .kernel import in_kernel

__all__ = [
    "STOP_GRACE_S",
    "WAKE_INTERVAL",
    "RunInterrupted",
    "RunKeyboardInterrupt",
    "Runner",
    "Shown",
    "Waker",
    "run_of",
]

WAKE_INTERVAL = 0.1
"""Seconds between event-loop wake-ups while a run is shown (see :class:`Waker`)."""
STOP_GRACE_S = 2.0
"""How long an interrupted :meth:`Runner.wait` waits for the run to end at its token, and then again once
its task has been cancelled."""


class Shown(Protocol):
    """What shows a run the :class:`Runner` drives (a view)."""

    @property
    def agent_name(self) -> str:
        """The name of the agent whose run it shows."""

    @property
    def status(self) -> str:
        """``idle``, ``running``, or how the run ended."""

    @property
    def response(self) -> Response | None:
        """The run's answer, once it came."""

    def begin(self, agent_name: str) -> None:
        """The run is about to start (``agent_name``: its agent's): Stop may be clicked."""

    def handle(self, item: RunItem) -> None:
        """Show one item of the run."""

    def tick(self) -> None:
        """Called every ``WAKE_INTERVAL`` seconds while the run goes."""

    def end(self, status: str, error: str | None = None) -> None:
        """The run ended with no ``RunFinished`` to say so (stopped, interrupted, failed)."""

    def refresh(self) -> None:
        """The run's end was waited for: its outputs show the end."""


class RunInterrupted(asyncio.CancelledError):
    """A shown run ended by a kernel interrupt: one line in the notebook, not a traceback.

    It is a ``CancelledError`` (what the interrupt raised), so code that handles cancellation
    handles it. ``view`` is the view of the run, also :func:`~nbagent.notebook.view.last_view`.
    """

    def __init__(self, view: Shown) -> None:
        super().__init__(f"the run of {view.agent_name!r} was interrupted; its view: nbagent.last_view()")
        self.view = view

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of the traceback."""
        return [f"{type(self).__name__}: {self}"]


class RunKeyboardInterrupt(KeyboardInterrupt):
    """A shown run driven without ``await`` (``nbagent.run(..., show=True)``, ``%%agent``) ended by a
    kernel interrupt: one line in the notebook. ``view`` is the view of the run."""

    def __init__(self, view: Shown) -> None:
        super().__init__(f"the run of {view.agent_name!r} was interrupted; its view: nbagent.last_view()")
        self.view = view

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self}"]


class Waker:
    """Wakes the event loop every ``WAKE_INTERVAL`` seconds while a run is shown, calling ``tick``.

    ipykernel 7 turns a kernel interrupt of an awaiting cell into a task cancellation that is only
    processed when the loop next wakes up: with a tool sleeping 30 s, the interrupt took 30 s. The
    wake-ups make it take at most ``WAKE_INTERVAL``; they also drive the view's live status.
    """

    __slots__ = ("_loop", "_handle", "_tick")

    def __init__(self, tick: Callable[[], None] | None = None) -> None:
        self._loop = asyncio.get_running_loop()
        self._tick = tick
        self._handle: asyncio.TimerHandle | None = self._loop.call_later(WAKE_INTERVAL, self._wake)

    def _wake(self) -> None:
        self._handle = self._loop.call_later(WAKE_INTERVAL, self._wake)
        if self._tick is not None:
            self._tick()

    def stop(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None


def interrupt_name() -> str:
    """What interrupted a run: a kernel interrupt in a notebook, Ctrl-C anywhere else (a script)."""
    return "kernel interrupt" if in_kernel() else "Ctrl-C"


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a background run's exception as seen: its view already shows it."""
    if not task.cancelled():
        task.exception()


def run_of(
    source: AssistantAgent | AgentRun | object, task: Task = None, cancellation_token: CancellationToken | None = None
) -> AgentRun | ForeignRun:
    """The run of ``task`` on ``source``: an AutoGen agent's or team's (through ``FOREIGN_RUN``), an
    :class:`AgentRun` given (given a token if it has none), or ``agent.iter`` with no chunk events (a view
    reads only the text of streamed chunks)."""
    autogen = FOREIGN_RUN(source, task, cancellation_token)  # an AutoGen agent or team: nbagent.autogen
    if autogen is not None:
        return autogen
    if isinstance(source, AgentRun):
        if source.cancellation_token is None and source.status == "new":
            source.cancellation_token = CancellationToken()
        return source
    agent = cast(AssistantAgent, source)  # AutoGen's were dispatched above
    return agent.iter(task_messages(task), cancellation_token or CancellationToken(), chunk_events=False)


class Runner:
    """Runs one run at a time into ``shown``: the foreground (:meth:`run`) or the background (:meth:`start`),
    its Stop (:meth:`stop`) and the interrupts of the cell that waits for it."""

    def __init__(self, shown: Shown) -> None:
        self.shown = shown
        self.task: asyncio.Task[Response | None] | None = None
        """The background task when started with :meth:`start`."""
        self.token: CancellationToken | None = None
        self.stop_requested = False
        self.interrupted = False
        """A kernel interrupt (or the waiting task cancelled) ended the run."""

    async def run(self, make: Callable[[], AgentRun | ForeignRun]) -> Response | None:
        """Run what ``make`` gives (:func:`run_of`, called as the run starts), showing every item.

        Returns the ``Response``, or ``None`` when Stop ended the run. Errors and outside cancellation (a
        kernel interrupt, ``task.cancel()``) are shown, then propagate.
        """
        run = make()
        shown = self.shown
        self.token = run.cancellation_token
        shown.begin(run.agent.name)
        self.interrupted = False
        waker = Waker(shown.tick)
        try:
            with self._watch_interrupts(foreground=asyncio.current_task() is not self.task):
                async for item in run:
                    shown.handle(item)
        except asyncio.CancelledError:
            token = self.token
            if self.stop_requested or (not self.interrupted and token is not None and token.is_cancelled()):
                shown.end("cancelled", "stopped with the Stop button" if self.stop_requested else "token cancelled")
                if self.stop_requested:
                    return None
                raise
            shown.end("interrupted", interrupt_name() if self.interrupted else "task cancelled")
            if self.interrupted:
                raise RunInterrupted(shown) from None
            raise
        except KeyboardInterrupt:
            if self.token is not None:
                self.token.cancel()
            await run.aclose()
            shown.end("interrupted", interrupt_name())
            raise
        except Exception as error:
            shown.end("error", f"{type(error).__name__}: {error}")
            raise
        finally:
            waker.stop()
            await run.aclose()
        return shown.response

    @contextmanager
    def _watch_interrupts(self, foreground: bool) -> Iterator[None]:
        """Note a kernel interrupt (SIGINT) during a run in the cell's own task, then let it act as before.

        A run in the background (:meth:`start`) is not interrupted by the kernel, and a handler set
        there would outlive the cell: nothing is installed then, nor outside the main thread.
        """
        previous = signal.getsignal(signal.SIGINT) if threading.current_thread() is threading.main_thread() else None
        if not foreground or not callable(previous):
            yield
            return

        def on_interrupt(signum: int, frame: Any) -> Any:
            self.interrupted = True
            return previous(signum, frame)

        signal.signal(signal.SIGINT, on_interrupt)
        try:
            yield
        finally:
            if signal.getsignal(signal.SIGINT) is on_interrupt:
                signal.signal(signal.SIGINT, previous)

    def start(self, make: Callable[[], AgentRun | ForeignRun]) -> asyncio.Task[Response | None]:
        """Run what ``make`` gives in the background on the current event loop."""
        loop = asyncio.get_event_loop()
        self.task = loop.create_task(self.run(make))
        self.task.add_done_callback(_retrieve)
        return self.task

    def stop(self) -> None:
        """Cancel the run (what Stop does); the agent's context stays valid."""
        if self.shown.status not in ("idle", "running") or (self.token is None and self.task is None):
            return
        self.stop_requested = True
        if self.token is not None:
            self.token.cancel()
        elif self.task is not None:
            self.task.cancel()

    async def wait(self) -> Response | None:
        """Wait for the background run; its ``Response``, or ``None`` if it was stopped.

        A kernel interrupt (or the waiting task cancelled) stops the run it waits for, as Stop does, and
        waits for it to end (the agent is free again, its context valid): the cell ends in one line,
        :class:`RunInterrupted`.
        """
        if self.task is None:
            raise RuntimeError("this view has no background run: use start() first")
        task = self.task
        try:
            response = await asyncio.shield(task)
        except asyncio.CancelledError:
            if task.done():
                raise
            waiting = asyncio.current_task()
            if waiting is not None:
                waiting.uncancel()  # answered here: the waits below may run
            self.interrupted = True
            if self.token is not None:
                self.token.cancel()
            else:
                task.cancel()
            await asyncio.wait([task], timeout=STOP_GRACE_S)
            if not task.done():  # it did not end at the token: cancelled where it waits
                task.cancel()
                await asyncio.wait([task], timeout=STOP_GRACE_S)
            raise RunInterrupted(self.shown) from None
        self.shown.refresh()
        return response
