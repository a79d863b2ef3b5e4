"""``AgentRunView``: one run shown live, event by event, with standard ipywidgets only.

The view consumes ``agent.iter()`` (the one loop), so it sees the moves (STEP badges), the LLM call
and tool execution records (durations, tokens) and the events. Each event becomes a small
``widgets.HTML`` child; streamed text goes into its own widgets through a :class:`Coalescer`, so
the browser gets at most ~22 text updates per second per message and each update carries only the
last segment of that message. Every item is drawn by the one renderer (:mod:`nbagent.render`), so
every model or tool string is escaped.

While a run goes, the view ticks (every ``TICK_INTERVAL`` seconds): the footer's elapsed time and
the running LLM call's line ("streaming · N chunks", or "waiting for the model…" with its time).
How a run ended is told apart: ``ok``, ``error`` (it failed), ``cancelled`` (the Stop button or the
run's cancellation token) and ``interrupted`` (a kernel interrupt, or its task cancelled from
outside); each has its colour. Text that was streaming when a run ended without its message never
entered the model context: it stays, struck through, under "streamed text, discarded".

A view's widgets open their models (comms, which ipywidgets' registry keeps alive) only when it is
first displayed, or when a box that shows it asks for its model id: a view built and dropped, or run
and never displayed, holds none and is collected like any object; a finished view closes them.

A saved notebook shows every finished run as its static copy: when the run ends, the output is
replaced (through its display id) by the view's HTML alone, so a reopened notebook (JupyterLab,
Notebook 7; widget state saved or not) and nbconvert show it without the widget manager.

Stable hooks for browser tests: the root has the classes ``nba-view`` and ``nba-state-<status>``
(``idle``, ``running``, ``ok``, ``error``, ``cancelled``, ``interrupted``); the header
``nba-header`` holds ``nba-status`` and the Stop button ``nba-stop``; the body ``nba-body`` holds
one child per item (classes ``nba-item nba-item-<kind>``, kind in ``user``, ``llm``, ``stream``,
``thought``, ``memory``, ``tools``, ``handoff``, ``final``, ``event``, ``error``). Text still
streaming is a ``.nba-stream`` box: its head line ``.nba-stream-head`` (with an "expand" checkbox),
then a ``.nba-scroll`` box of bounded height that keeps its end in view, holding
``.nba-stream-text`` spans (the final message replaces it; ``.nba-discarded`` marks text that never
entered the context). A tool batch is a ``nba-tool-group`` box: its head line ``nba-tool-head``
(STEP badge) and a ``nba-tool-cards`` box of ``nba-tool-card-widget`` HTML widgets that wrap onto
more rows, each holding a ``.nba-tool-card`` with ``data-tool-name``, ``data-call-id`` and
``data-state``. The footer ``nba-footer-box`` has spans with ``data-metric`` (``tokens``,
``streaming_chunks`` while a call streams, ``prompt_tokens``, ``completion_tokens``,
``llm_calls``, ``tool_calls``, ``elapsed``, ``status``) and ``data-value``.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
import time
import uuid
import weakref
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any, ClassVar, TextIO, cast

import ipywidgets as widgets
from ipywidgets.widgets.widget_string import HTMLStyle

from ..agent import AgentRun, AssistantAgent, check_entry, replayed
from ..agent_input import Task, task_messages
from ..cancellation import CancellationToken
from ..messages import (
    BaseAgentEvent,
    BaseChatMessage,
    FunctionCall,
    HandoffMessage,
    MemoryQueryEvent,
    ModelClientStreamingChunkEvent,
    RequestUsage,
    Response,
    ThoughtEvent,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
)
from ..records import FOREIGN_RUN, ForeignRun, LLMCall, Move, MoveName, RunFinished, RunItem, RunStarted, ToolExecution
from ..redact import mask
from ..render import (
    EMPTY,
    STYLE,
    Markup,
    Options,
    el,
    error_block,
    footer,
    plural,
    portable,
    printable,
    stream_head,
    stream_segment,
    tool_card,
    tool_group_head,
)
from ..render import to_html as item_html
from ..render.textlog import TextLog
from ..sync import Pending, entry_point, run_coroutine
from .coalesce import DEFAULT_INTERVAL, Coalescer
from .kernel import in_kernel
from .static_display import cell_stylesheet, close_widget, descendants, finish

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell


SEGMENT_CHARS = 4000
"""The most characters one streamed-text widget holds before the text goes on in a new one."""
WAKE_INTERVAL = 0.1
"""Seconds between event-loop wake-ups while a run is shown (see :class:`_Waker`)."""
TICK_INTERVAL = 0.25
"""Seconds between two refreshes of the live status (elapsed time, the running LLM call's line).

Each refresh sends at most two widget updates (the footer, the running call's line): with the
streamed text's coalescer (at most ~22 a second) the browser gets about 30 messages a second, far
under jupyter_server's iopub limit (1,000 a second)."""
GO_LIVE_S = 0.2
"""How long a run :func:`show` displays goes before its live view (widgets, Stop button) shows.

A run that ends sooner is displayed once, as its static copy alone: no widget model is opened, updated
or closed for it, so a cell showing many fast runs in a loop sends one message a run (a live view's
widgets cost about 60 of those jupyter_server's IOPub rate limit counts). The wake-up that shows it
comes within ``WAKE_INTERVAL`` after, so a longer run has its Stop button within 0.3 s of its start."""
LIVE_MODELS_PER_WINDOW = 600
"""The most widget models the views going live may open within ``LIVE_WINDOW_S`` seconds.

Each model costs the frontend's IOPub about 1.5 of the messages jupyter_server's rate limit (1,000 a
second over 3 s) counts: its state updates and its ``comm_close`` when the run ends. So a cell of many
runs that each last just over ``GO_LIVE_S`` stays well under it: past this budget a run's view waits,
still showing nothing, until the window has room (or the run ends: its static copy)."""
LIVE_WINDOW_S = 3.0
STOP_GRACE_S = 2.0
"""How long an interrupted :meth:`AgentRunView.wait` waits for the run to end at its token, and then
again once its task has been cancelled."""
ENDED = frozenset({"ok", "error", "cancelled", "interrupted"})
"""The statuses of a view whose run has ended."""

PREVIEW_CHARS = 120
"""How much of an answer's first line a view's ``text/plain`` preview holds (its static copy holds more)."""
_last_view: weakref.ref[AgentRunView] | None = None
_went_live: deque[tuple[float, int]] = deque()  # (when, how many models) of the views gone live lately


def _live_budget_allows(models: int, now: float) -> bool:
    """Whether ``models`` widget models may open now (:data:`LIVE_MODELS_PER_WINDOW`); if so, counted."""
    while _went_live and _went_live[0][0] <= now - LIVE_WINDOW_S:
        _went_live.popleft()
    if _went_live and sum(count for _, count in _went_live) + models > LIVE_MODELS_PER_WINDOW:
        return False
    _went_live.append((now, models))
    return True


def last_view() -> AgentRunView | None:
    """The view :func:`show` or :func:`start` made last (``None`` if none, or it is gone).

    After ``view = await nbagent.show(...)`` was interrupted, ``view`` was never assigned: this is
    how to reach it (``nbagent.last_view().status``, its ``response``, ``llm_calls``...).
    """
    return _last_view() if _last_view is not None else None


class RunInterrupted(asyncio.CancelledError):
    """A shown run ended by a kernel interrupt: one line in the notebook, not a traceback.

    It is a ``CancelledError`` (what the interrupt raised), so code that handles cancellation
    handles it. ``view`` is the view of the run, also :func:`last_view`.
    """

    def __init__(self, view: AgentRunView) -> None:
        super().__init__(f"the run of {view.agent_name!r} was interrupted; its view: nbagent.last_view()")
        self.view = view

    def _render_traceback_(self) -> list[str]:
        """What IPython shows instead of the traceback."""
        return [f"{type(self).__name__}: {self}"]


class RunKeyboardInterrupt(KeyboardInterrupt):
    """A shown run driven without ``await`` (``nbagent.run(..., show=True)``, ``%%agent``) ended by a
    kernel interrupt: one line in the notebook. ``view`` is the view of the run."""

    def __init__(self, view: AgentRunView) -> None:
        super().__init__(f"the run of {view.agent_name!r} was interrupted; its view: nbagent.last_view()")
        self.view = view

    def _render_traceback_(self) -> list[str]:
        return [f"KeyboardInterrupt: {self}"]


# The kind (``nba-item-<kind>``) of an item the view shows as it comes; any other event is an "event".
_KINDS: dict[type, str] = {ThoughtEvent: "thought", MemoryQueryEvent: "memory"}


def _html(frame: _Frame, value: Markup, kind: str) -> widgets.HTML:
    widget = frame.html(value)
    widget.add_class("nba-item")
    widget.add_class(f"nba-item-{kind}")
    return widget


class _OpenLater(widgets.Widget):  # type: ignore[misc]
    """Mixed into a widget class: its model opens (a comm, an entry in ipywidgets' registry, which keeps
    it alive) only when it is first shown (:meth:`open_now`, or a box showing it asks for its
    ``model_id``), not when it is made: a view built and never displayed holds no widget model and is
    collected like any object."""

    _may_open = False

    def open(self) -> None:
        if self._may_open:
            super().open()

    def open_now(self) -> None:
        """Open the model (and, through the state it sends, those of the widgets it holds)."""
        self._may_open = True
        super().open()

    @property
    def model_id(self) -> str:
        if self.comm is None and not self._may_open:  # asked for by a box that shows it
            self.open_now()
        return cast(str, super().model_id)


class _LaterHTML(_OpenLater, widgets.HTML):  # type: ignore[misc]
    """An HTML widget whose model opens when first shown."""


class _LaterButton(_OpenLater, widgets.Button):  # type: ignore[misc]
    """A button whose model opens when first shown."""


class _LaterBox(_OpenLater, widgets.Box):  # type: ignore[misc]
    """A Box whose model opens when first shown."""


class _LaterHBox(_OpenLater, widgets.HBox):  # type: ignore[misc]
    """An HBox whose model opens when first shown."""


class _LaterVBox(_OpenLater, widgets.VBox):  # type: ignore[misc]
    """A VBox whose model opens when first shown."""


class _LaterLayout(_OpenLater, widgets.Layout):  # type: ignore[misc]
    """A layout whose model opens when a widget using it is first shown."""


class _LaterHTMLStyle(_OpenLater, HTMLStyle):  # type: ignore[misc]
    """An HTML widget's style whose model opens when a widget using it is first shown."""


class _Waker:
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


FRAME_S = 1 / 25
"""Seconds between two sends of a live view's changed values (its footer, status, LLM call lines, tool
cards): each is sent at most once a frame, its latest value."""


class _Frame:
    """What a view's widgets share: one layout and one HTML style (two widget models, not two for each of
    its widgets: every widget of a view is laid out by its CSS classes), and the values its HTML widgets
    are given, sent at most once every ``FRAME_S`` seconds each.

    A burst of items (a batch of tool calls and their results, the footer after each) becomes one update
    a widget a frame; a widget whose model is not open (a view not yet live) is assigned at once, which
    sends nothing. :meth:`flush` sends what is pending (before a static copy is made of the widgets).
    """

    __slots__ = ("_pending", "_timer", "layout", "style")

    def __init__(self) -> None:
        self._pending: dict[int, tuple[widgets.HTML, str]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self.layout = _LaterLayout()
        self.style = _LaterHTMLStyle()

    def html(self, value: str = EMPTY) -> widgets.HTML:
        """A new HTML widget of the view (its model opens when first shown)."""
        return _LaterHTML(value, layout=self.layout, style=self.style)

    def box(self, children: list[widgets.Widget], kind: type[widgets.Box] | None = None) -> widgets.Box:
        """A new box of the view (a ``Box``, or ``kind``: ``_LaterHBox``, ``_LaterVBox``)."""
        return (kind or _LaterBox)(children, layout=self.layout)

    def set(self, widget: widgets.HTML, value: str) -> None:
        """Give ``widget`` ``value``: now if its model is closed, else by the end of the frame."""
        if widget.comm is None:
            self._pending.pop(id(widget), None)
            widget.value = value
            return
        self._pending[id(widget)] = widget, value
        if self._timer is None:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:
                self.flush()
                return
            self._timer = loop.call_later(FRAME_S, self.flush)

    def flush(self) -> None:
        """Send every pending value now."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        pending, self._pending = self._pending, {}
        for widget, value in pending.values():
            widget.value = value


class _ToolCard:
    """The widget of one tool call and what is known about it."""

    __slots__ = ("call", "widget", "execution", "done", "recorded_s", "_frame")

    def __init__(self, call: FunctionCall, frame: _Frame) -> None:
        self.call = call
        self.execution: ToolExecution | None = None
        self.done = False
        self.recorded_s: float | None = None  # its recorded duration, shown instead of the one measured here
        self._frame = frame
        self.widget = frame.html(tool_card(call))
        self.widget.add_class("nba-tool-card-widget")

    def show_running(self) -> None:
        """Its batch has started: the call runs."""
        if not self.done:
            self._frame.set(self.widget, tool_card(self.call, running=True))

    def show_result(self, cancelled: bool = False) -> None:
        execution = self.execution
        result = execution.result if execution is not None else None
        duration = execution.duration_s if execution is not None else None
        if self.recorded_s is not None:
            duration = self.recorded_s
        self.done = result is not None or cancelled
        self._frame.set(self.widget, tool_card(self.call, result, duration, cancelled=cancelled and result is None))


class _Stream:
    """The widgets that show one message's text while its chunks arrive.

    The text goes into segments of at most ``SEGMENT_CHARS`` characters, and only the new text is
    escaped at each update: an update re-sends only the last segment, however long the message
    grows, and costs the same at its end as at its start. The segments sit in a scroll box of
    bounded height laid out from its end (``column-reverse``): it keeps the newest text in view
    while the text grows, with no script; its head line's "expand" checkbox lifts the bound.
    """

    __slots__ = ("box", "call", "coalescer", "head", "_badge", "_body", "_segment", "_escaped", "_length", "_frame")

    def __init__(self, badge: Markup, interval: float, frame: _Frame, call: LLMCall | None = None) -> None:
        self.call = call
        self._badge = badge
        self._frame = frame
        self._segment = frame.html()
        self._escaped = EMPTY
        self._length = 0
        self.head = frame.html(stream_head(badge))
        self._body = frame.box([self._segment])
        self._body.add_class("nba-stream-body")
        scroll = frame.box([self._body])
        scroll.add_class("nba-scroll")
        self.box = frame.box([self.head, scroll])
        for name in ("nba-item", "nba-item-stream", "nba-event", "nba-text", "nba-stream"):
            self.box.add_class(name)
        self.coalescer = Coalescer(self._show, interval)

    @property
    def segments(self) -> tuple[widgets.HTML, ...]:
        """The HTML widgets holding the text so far, in order."""
        return tuple(self._body.children)

    def discard(self) -> None:
        """Mark the text as never having entered the model context (its message was never complete)."""
        self.head.value = stream_head(self._badge, discarded=True)
        self.box.add_class("nba-discarded")

    def _show(self, new: str) -> None:
        while len(new) > SEGMENT_CHARS - self._length:
            room = SEGMENT_CHARS - self._length
            self._segment.value = stream_segment(self._escaped + new[:room])
            new = new[room:]
            self._segment = self._frame.html()
            self._escaped = EMPTY
            self._length = 0
            self._body.children = (*self._body.children, self._segment)
        self._escaped += new  # escaped as it joins the markup: each piece once
        self._length += len(new)
        self._segment.value = stream_segment(self._escaped)

    def close(self) -> None:
        """Close the segment widgets (the final message replaces them); the view's shared parts stay."""
        for widget in descendants(self.box):
            close_widget(widget, parts=False)


class _LLMRow:
    """The line of one LLM call: running, then its duration and tokens (or its error)."""

    __slots__ = ("call", "options", "widget", "recorded_s", "_frame")

    def __init__(self, call: LLMCall, options: Options, frame: _Frame) -> None:
        self.call = call
        self.options = options
        self.recorded_s: float | None = None  # its recorded duration, shown instead of the one measured here
        self._frame = frame
        self.widget = _html(frame, EMPTY, "llm")
        self.render()

    def render(self, now: float | None = None) -> None:
        options = self.options if now is None else Options(self.options.move, self.options.number, now)
        call = self.call if self.recorded_s is None else replace(self.call, duration_s=self.recorded_s)
        self._frame.set(self.widget, item_html(call, options))


class AgentRunView(_OpenLater, widgets.VBox):  # type: ignore[misc]
    """A live view of one agent run; call :meth:`run` (or :func:`show` / :func:`start`) to fill it.

    :meth:`handle` takes the run's items one by one and is the whole model of the view: it can be
    driven without a kernel or browser. The mime bundle adds ``text/html`` and ``text/plain`` of
    the current state to the widget view, so a saved notebook shows the finished run anywhere.
    """

    def __init__(self, title: str = "", *, interval: float = DEFAULT_INTERVAL) -> None:
        self._interval = interval
        self._frame = _Frame()
        self._title = self._frame.html()
        self._set_title(title)
        self._status_html = self._frame.html()
        self._status_html.add_class("nba-status")
        self.stop_button = _LaterButton(description="Stop", icon="stop", button_style="danger", disabled=True)
        self.stop_button.add_class("nba-stop")
        self.stop_button.on_click(lambda _: self.stop())
        header = self._frame.box([self._title, self._status_html, self.stop_button], _LaterHBox)
        header.add_class("nba-header")
        self.body = self._frame.box([], _LaterVBox)
        self.body.add_class("nba-body")
        self._footer = self._frame.html()
        self._footer.add_class("nba-footer-box")
        self._style = self._frame.html(STYLE)
        super().__init__([self._style, header, self.body, self._footer], layout=self._frame.layout)
        self.add_class("nba-view")

        self.status = "idle"
        self.error: str | None = None
        self.response: Response | None = None
        self.move: Move | None = None
        self.llm_calls: list[LLMCall] = []
        self.tool_executions: list[ToolExecution] = []
        self._started: RunStarted | None = None
        self._finished_perf: float | None = None
        self._streams: dict[str, _Stream] = {}
        self._cards: dict[str, _ToolCard] = {}
        self._llm_rows: list[_LLMRow] = []  # those of the calls still running
        self._call_rows: list[_LLMRow] = []  # every call's, in order
        self._token: CancellationToken | None = None
        self._stop_requested = False
        self._interrupted = False
        self.detail: str | None = None
        """How the run ended, when not ``ok``: the error, or what stopped it."""
        self._last_tick = 0.0
        self._display_ids: list[str] = []
        self._shown_in: int | None = None
        self._deferred = False  # displayed by show_later(): shown once its run has gone on GO_LIVE_S
        self._copy_style: Markup | None = None  # the stylesheet its static copies in outputs carry
        self.task: asyncio.Task[Response | None] | None = None
        self._echo: tuple[TextLog, TextIO] | None = None  # outside a notebook: the run as text (echo_to)
        self._echo_ended = False  # the echo wrote the run's end
        """The background task when started with :meth:`start`."""
        self._set_status("idle")

    # ------------------------------------------------------------------ the model

    def handle(self, item: RunItem) -> None:
        """Show one item of a run (record, event, message or ``Response``)."""
        kind = type(item)
        if self._echo is not None:
            self._write_echo(item)
        if kind is str:  # a chunk of the current LLM call's message (a run without chunk events)
            self._stream(self.llm_calls[-1].message_id, item)  # type: ignore[arg-type]
            return
        if kind is ModelClientStreamingChunkEvent:
            self._stream(item.full_message_id or "", item.content)  # type: ignore[union-attr]
            return
        self._refresh_llm_rows()
        on_item = self._ON_ITEM.get(kind)
        if on_item is not None:  # an item that changes what is shown already, or the view's state
            on_item(self, item)
        elif isinstance(item, (BaseAgentEvent, BaseChatMessage)):  # shown as the renderer draws it
            self._add(_html(self._frame, item_html(item, Options(self._move_name())), _KINDS.get(kind, "event")))
        self._update_footer()

    def echo_to(self, out: TextIO) -> None:
        """Also write the run as text to ``out`` as it goes (``show``/``start`` outside a notebook, where
        no widget can show): each STEP, event and message, streamed text as it comes, then the totals."""
        self._echo = TextLog(), out

    def _write_echo(self, item: RunItem) -> None:
        log, out = self._echo  # type: ignore[misc]
        if type(item) is str and self.llm_calls:  # a piece of the current call's message
            call = self.llm_calls[-1]
            item = ModelClientStreamingChunkEvent(content=item, full_message_id=call.message_id, source=self.agent_name)
        text = log.text(item)
        if type(item) is RunFinished:
            self._echo_ended = True
            text += log.close() + self.to_text().splitlines()[-1] + "\n"
        if text:
            out.write(text)
            out.flush()

    def _end_echo(self) -> None:
        """The echo's last lines for a run that ended with no ``RunFinished`` (stopped, interrupted, or a
        background run cancelled because the program ended before it): its status and what to write."""
        if self._echo is None or self._echo_ended:
            return
        self._echo_ended = True
        log, out = self._echo
        lines = self.to_text().splitlines()
        text = log.close() + f"run ended  {lines[0]}\n{lines[-1]}\n"
        if self.task is not None and self.status == "interrupted" and not self._interrupted:
            text += (
                "(a run nbagent.start began is cancelled when its program ends: `await view.wait()` waits for it, "
                "or write `await nbagent.show(agent, task)`)\n"
            )
        out.write(text)
        out.flush()

    def tick(self) -> None:
        """Refresh the live status (elapsed time, the running call's line) if ``TICK_INTERVAL`` has passed."""
        now = time.perf_counter()
        if self._deferred and self._started is not None and now - self._started.start_perf >= GO_LIVE_S:
            self._go_live(now)
        if self.status != "running" or now - self._last_tick < TICK_INTERVAL:
            return
        self._last_tick = now
        for row in self._llm_rows:  # the calls still running
            row.render(now)
        self._update_footer()

    def _on_move(self, move: Move) -> None:
        self.move = move
        self._set_status("running")

    def _on_run_started(self, started: RunStarted) -> None:
        self._started = started
        task = Options("add_messages")
        for message in started.task:
            self._add(_html(self._frame, item_html(message, task), "user"))
        self._set_status("running")

    def _on_llm_call(self, call: LLMCall) -> None:
        self.llm_calls.append(call)
        row = _LLMRow(call, Options(self._move_name(), len(self.llm_calls)), self._frame)
        self._llm_rows.append(row)
        self._call_rows.append(row)
        self._add(row.widget)

    def _on_tool_execution(self, execution: ToolExecution) -> None:
        self.tool_executions.append(execution)
        card = self._cards.get(execution.call.id)
        if card is not None:
            card.execution = execution
            card.show_running()

    def _on_tool_results(self, event: ToolCallExecutionEvent) -> None:
        for result in event.content:
            card = self._cards.get(result.call_id)
            if card is not None:
                card.show_result()

    def _on_run_finished(self, finished: RunFinished) -> None:
        self._finished_perf = finished.end_perf
        self._end(finished.status, finished.error)

    def _stream(self, message_id: str, text: str) -> None:
        stream = self._streams.get(message_id)
        if stream is None:
            call = self.llm_calls[-1] if self.llm_calls else None
            stream = self._streams[message_id] = _Stream(self._badge(), self._interval, self._frame, call)
            self._add(stream.box)
        stream.coalescer.append(text)

    def _on_thought(self, thought: ThoughtEvent) -> None:
        """The reasoning of a call that went on to call tools: it replaces that call's streamed text."""
        block = _html(self._frame, item_html(thought, Options(self._move_name())), "thought")
        call = self.llm_calls[-1] if self.llm_calls else None
        stream = self._streams.pop(call.message_id, None) if call is not None else None
        if stream is None:
            self._add(block)
        else:
            self._replace(stream, block)

    def _set_title(self, title: str) -> None:
        self._title_text = title
        self._title.value = el("span", el("b", title), class_="nba-title")

    def _move_name(self) -> MoveName | None:
        return self.move.name if self.move is not None else None

    def _badge(self) -> Markup:
        return Options(self._move_name()).badge

    def _add(self, widget: widgets.Widget) -> None:
        self.body.children = (*self.body.children, widget)

    def _on_tool_request(self, event: ToolCallRequestEvent) -> None:
        cards = [_ToolCard(call, self._frame) for call in event.content]
        for card in cards:
            self._cards[card.call.id] = card
        head = self._frame.html(tool_group_head(len(cards), self._badge()))
        row = self._frame.box([card.widget for card in cards])
        row.add_class("nba-tool-cards")
        group = self._frame.box([head, row], _LaterVBox)
        for name in ("nba-item", "nba-item-tools", "nba-event", "nba-tool-group"):
            group.add_class(name)
        self._add(group)

    def _on_response(self, response: Response) -> None:
        self.response = response
        message = response.chat_message
        kind = "handoff" if isinstance(message, HandoffMessage) else "final"
        value = item_html(message, Options(self._move_name()))
        stream = self._streams.pop(message.id, None)
        if stream is None:
            self._add(_html(self._frame, value, kind))
        else:
            self._replace(stream, _html(self._frame, value, kind))

    # What the view does with the items that change its state or what it shows already (the others it
    # adds as the renderer draws them).
    _ON_ITEM: ClassVar[dict[type, Callable[[AgentRunView, Any], None]]] = {
        Move: _on_move,
        RunStarted: _on_run_started,
        LLMCall: _on_llm_call,
        ToolExecution: _on_tool_execution,
        ToolCallRequestEvent: _on_tool_request,
        ToolCallExecutionEvent: _on_tool_results,
        Response: _on_response,
        RunFinished: _on_run_finished,
        ThoughtEvent: _on_thought,
    }

    def _replace(self, stream: _Stream, widget: widgets.Widget) -> None:
        stream.coalescer.close()
        self.body.children = tuple(widget if child is stream.box else child for child in self.body.children)
        stream.close()

    def _refresh_llm_rows(self) -> None:
        for row in self._llm_rows:
            if row.call.duration_s is not None:
                row.render()
        self._llm_rows = [row for row in self._llm_rows if row.call.duration_s is None]

    def show_recorded_times(
        self, llm_s: Sequence[float | None], tools_s: Mapping[str, float | None], elapsed_s: float | None
    ) -> None:
        """Show the times a recording kept instead of those measured here (a run replayed from its trace: its
        replayed calls take no time): each LLM call's (``llm_s``, in order), each tool call's (``tools_s``, by
        call id) and the run's (``elapsed_s``); a missing one leaves the time measured here."""
        for row, seconds in zip(self._call_rows, llm_s, strict=False):
            if seconds is not None:
                row.recorded_s = float(seconds)
                row.render()
        for call_id, seconds in tools_s.items():
            card = self._cards.get(call_id)
            if card is not None and seconds is not None:
                card.recorded_s = float(seconds)
                card.show_result()
        if elapsed_s is not None and self._started is not None:
            self._finished_perf = self._started.start_perf + float(elapsed_s)
        self._update_footer()
        self._refresh_displays()

    # ------------------------------------------------------------------ totals and status

    @property
    def usage(self) -> RequestUsage:
        """Tokens of the run's finished LLM calls."""
        total = RequestUsage()
        for call in self.llm_calls:
            if call.result is not None:
                total = total + call.result.usage
        return total

    @property
    def status_html(self) -> str:
        """The header's status line as HTML: the status (with the current move while running, how the
        run ended otherwise), the element ``nba-status-text`` with ``data-status``."""
        self._frame.flush()
        return str(self._status_html.value)

    @property
    def footer_html(self) -> str:
        """The footer as HTML: the run's totals, one ``data-metric``/``data-value`` pair each."""
        self._frame.flush()
        return str(self._footer.value)

    def flush(self) -> None:
        """Show now the streamed text and values still held back (sent within ``interval`` and ``FRAME_S``
        otherwise)."""
        for stream in self._streams.values():
            stream.coalescer.flush()
        self._frame.flush()

    @property
    def elapsed_s(self) -> float | None:
        if self._started is None:
            return None
        end = self._finished_perf if self._finished_perf is not None else time.perf_counter()
        return end - self._started.start_perf

    def _update_footer(self) -> None:
        shown = "" if self.status == "idle" else self.status
        streaming = None
        if self.status == "running" and self.llm_calls:
            call = self.llm_calls[-1]
            streaming = len(call.chunks) if call.duration_s is None and call.chunks else None
        self._frame.set(
            self._footer,
            footer(self.usage, len(self.llm_calls), len(self.tool_executions), self.elapsed_s, shown, streaming),
        )

    def _set_status(self, status: str, detail: str | None = None) -> None:
        if status != self.status or not self._status_html.value:
            self.remove_class(f"nba-state-{self.status}")
            self.add_class(f"nba-state-{status}")
            self.status = status
        text = status
        badge = EMPTY
        if status == "running" and self.move is not None:
            badge = self._badge()
            text = f"running · {self.move.info.title}"
        elif detail:
            text = f"{status}: {detail}"
        self._frame.set(self._status_html, badge + el("span", text, class_="nba-status-text", data_status=status))

    def _end(self, status: str, error: str | None = None) -> None:
        for stream in self._streams.values():
            stream.coalescer.close()
            if status != "ok" and (stream.call is None or stream.call.result is None):
                stream.discard()  # its call never returned: the text never entered the context
        self._refresh_llm_rows()
        for card in self._cards.values():
            if not card.done:
                card.show_result(cancelled=True)
        if error is not None and status == "error" and self.error is None:
            # Shown once: in the line of the LLM call that failed with it, else in a block of its own
            # (the status says "error"; the run's end and its exception both bring it here).
            self.error = error
            if not any(call.error == error for call in self.llm_calls):
                self._add(_html(self._frame, error_block(error), "error"))
        if self._finished_perf is None:
            self._finished_perf = time.perf_counter()
        self.stop_button.disabled = True
        if self.detail is None:
            self.detail = None if status == "ok" else error
        self._set_status(status, None if status == "error" else self.detail)
        self._update_footer()
        self._frame.flush()
        if self._deferred:  # ended before it went live: its static copy alone shows it
            self._deferred = False
            from IPython.display import display

            display(self.static_bundle(), raw=True)  # type: ignore[no-untyped-call]
        self._refresh_displays()
        if not self._display_ids:  # never shown (a script's echo, a view run by hand): nothing will show
            self.close_widgets()  # its widgets; displayed later, it shows its static copy
        self._end_echo()

    # ------------------------------------------------------------------ running

    async def run(
        self,
        source: AssistantAgent | AgentRun | object,
        task: Task = None,
        *,
        cancellation_token: CancellationToken | None = None,
    ) -> Response | None:
        """Run ``task`` on ``source`` (or consume an :class:`AgentRun`), showing every item.

        Returns the ``Response``, or ``None`` when the Stop button ended the run. Errors and outside
        cancellation (a kernel interrupt, ``task.cancel()``) are shown, then propagate.
        """
        autogen = FOREIGN_RUN(source, task, cancellation_token)  # an AutoGen agent or team: nbagent.autogen
        run: AgentRun | ForeignRun
        if autogen is not None:
            run = autogen
        elif isinstance(source, AgentRun):
            run = source
            if run.cancellation_token is None and run.status == "new":
                run.cancellation_token = CancellationToken()
        else:
            # The view reads only the text of streamed chunks: no chunk events are built for it.
            agent = cast(AssistantAgent, source)  # AutoGen's were dispatched above
            run = agent.iter(task_messages(task), cancellation_token or CancellationToken(), chunk_events=False)
        self._token = run.cancellation_token
        if not self._title_text:
            self._set_title(run.agent.name)
        self.stop_button.disabled = False
        self._interrupted = False
        waker = _Waker(self.tick)
        try:
            with self._watch_interrupts(foreground=asyncio.current_task() is not self.task):
                async for item in run:
                    self.handle(item)
        except asyncio.CancelledError:
            token = self._token
            if self._stop_requested or (not self._interrupted and token is not None and token.is_cancelled()):
                self._end("cancelled", "stopped with the Stop button" if self._stop_requested else "token cancelled")
                if self._stop_requested:
                    return None
                raise
            self._end("interrupted", _interrupt_name() if self._interrupted else "task cancelled")
            if self._interrupted:
                raise RunInterrupted(self) from None
            raise
        except KeyboardInterrupt:
            if self._token is not None:
                self._token.cancel()
            await run.aclose()
            self._end("interrupted", _interrupt_name())
            raise
        except Exception as error:
            self._end("error", f"{type(error).__name__}: {error}")
            raise
        finally:
            waker.stop()
            await run.aclose()
        return self.response

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
            self._interrupted = True
            return previous(signum, frame)

        signal.signal(signal.SIGINT, on_interrupt)
        try:
            yield
        finally:
            if signal.getsignal(signal.SIGINT) is on_interrupt:
                signal.signal(signal.SIGINT, previous)

    def start(
        self,
        source: AssistantAgent | AgentRun | object,
        task: Task = None,
        *,
        cancellation_token: CancellationToken | None = None,
    ) -> asyncio.Task[Response | None]:
        """Run in the background on the current event loop; the view keeps updating after the cell ends."""
        loop = asyncio.get_event_loop()
        self.task = loop.create_task(self.run(source, task, cancellation_token=cancellation_token))
        self.task.add_done_callback(_retrieve)
        return self.task

    def stop(self) -> None:
        """Cancel the run (what the Stop button does); the agent's context stays valid."""
        if self.status not in ("idle", "running") or (self._token is None and self.task is None):
            return
        self._stop_requested = True
        if self._token is not None:
            self._token.cancel()
        elif self.task is not None:
            self.task.cancel()

    @entry_point("view.wait()")
    async def wait(self) -> Response | None:
        """Wait for a background run; its ``Response``, or ``None`` if it was stopped.

        A kernel interrupt (or the waiting task cancelled) stops the run it waits for, as its Stop
        button does, and waits for it to end (the agent is free again, its context valid): the cell
        ends in one line, :class:`RunInterrupted`.
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
            self._interrupted = True
            if self._token is not None:
                self._token.cancel()
            else:
                task.cancel()
            await asyncio.wait([task], timeout=STOP_GRACE_S)
            if not task.done():  # it did not end at the token: cancelled where it waits
                task.cancel()
                await asyncio.wait([task], timeout=STOP_GRACE_S)
            raise RunInterrupted(self) from None
        self._refresh_displays()
        return response

    # ------------------------------------------------------------------ static fallback

    def to_html(self, *, stylesheet: bool = True) -> str:
        """Self-contained HTML of the current state (every value already escaped); without its
        stylesheet if not ``stylesheet`` (its layout stays, inline)."""
        self._frame.flush()
        inner = _joined(_static(child) for child in self.children if child is not self._style)
        if stylesheet:
            inner = STYLE + _SPACE + inner
        return str(portable(el("div", inner, class_=f"nba-view nba-state-{self.status}", data_status=self.status)))

    def to_text(self) -> str:
        """A short plain-text summary (the output's ``text/plain`` preview, beside the static copy that
        holds the answer): status, the answer's first line capped at ``PREVIEW_CHARS``, totals, run id;
        secrets masked, controls and invisible marks shown (:func:`~nbagent.render.printable`)."""
        lines = [f"{self.agent_name} · {self.status}" + (f" ({mask(self.detail)})" if self.detail else "")]
        if self.response is not None:
            answer = mask(self.response.chat_message.to_text())
            first = answer.split("\n", 1)[0][:PREVIEW_CHARS]
            rest = len(answer) - len(first)
            lines.append(first + (f" … ({rest:,} more characters)" if rest else ""))
        usage = self.usage
        elapsed = self.elapsed_s
        totals = [
            f"{usage.prompt_tokens + usage.completion_tokens:,} tokens",
            plural(len(self.llm_calls), "LLM call"),
            plural(len(self.tool_executions), "tool call"),
        ]
        if elapsed is not None:
            totals.append(f"{elapsed:.2f} s")
        if self._started is not None:
            totals.append(f"run {self._started.run_id}")
        lines.append(" · ".join(totals))
        return printable("\n".join(lines))

    def __repr__(self) -> str:
        """Short, for a script or a log: ipywidgets' own repr spells out every child widget's HTML."""
        return (
            f"AgentRunView(agent={self.agent_name!r}, status={self.status!r}, llm_calls={len(self.llm_calls)}, "
            f"tool_calls={len(self.tool_executions)})"
        )

    @property
    def agent_name(self) -> str:
        """The name of the agent whose run the view shows (its title before the run has started)."""
        return self._started.agent if self._started is not None else (self._title_text or "agent")

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        if self.comm is None and (self._may_open or self.status in ENDED):
            return self.static_bundle()  # its widgets closed, or never opened and the run over: the copy alone
        self.open_now()  # first shown: the widgets' models open now
        data = super()._repr_mimebundle_(**kwargs) or {}
        data.update(self.static_bundle())
        return data

    def static_bundle(self) -> dict[str, str]:
        """The static copy alone (``text/html`` and ``text/plain``): what a finished run's output holds.

        Its stylesheet is there if it is the cell's first static copy (:func:`cell_stylesheet`): a cell
        of many runs carries it once."""
        if self._copy_style is None:
            self._copy_style = cell_stylesheet()
        return {"text/html": self.to_html(stylesheet=bool(self._copy_style)), "text/plain": self.to_text()}

    def _ipython_display_(self) -> None:
        """Display once per cell with a display id, so the end of the run can replace the output.

        While the run goes the output is the widget (with its static copy in the bundle); when it
        has ended, the static copy alone: nothing in a saved notebook then needs the widget.
        """
        from IPython import get_ipython
        from IPython.display import display

        shell: InteractiveShell | None = get_ipython()
        count = shell.execution_count if shell is not None else None
        if count is not None and count == self._shown_in:
            return
        self._shown_in = count
        if self.status in ENDED:
            display(self.static_bundle(), raw=True)  # type: ignore[no-untyped-call]
            return
        self._display_live()

    def show_later(self) -> None:
        """Display the view in this cell once its run has gone on ``GO_LIVE_S`` seconds (live, with its
        Stop button), or, if it ends sooner, as its static copy alone (:func:`show` does this).

        Nothing shows for a view whose run never starts. Displayed this way, views of runs awaited one
        after another in a cell show in their order (each displays before the next starts).
        """
        if not in_kernel() or self.status in ENDED:
            self._ipython_display_()
            return
        from IPython import get_ipython

        shell: InteractiveShell | None = get_ipython()
        self._shown_in = shell.execution_count if shell is not None else None
        self._deferred = True

    def _go_live(self, now: float) -> None:
        """Display the live view, if the budget of widget models opened lately allows it."""
        models = sum(1 for _ in descendants(self)) + 4  # each widget; the shared parts, the button's
        if _live_budget_allows(models, now):
            self._deferred = False
            self._display_live()

    def _display_live(self) -> None:
        """Display the live widget (its static copy in its bundle), with a display id its end replaces."""
        from IPython.display import display

        display_id = uuid.uuid4().hex
        self._display_ids.append(display_id)
        display(self._repr_mimebundle_(), raw=True, display_id=display_id)  # type: ignore[no-untyped-call]

    def _refresh_displays(self) -> None:
        if not self._display_ids:
            return
        if self.status in ENDED:  # its outputs become its static copy, its widgets close (not in Voila)
            finish(self._display_ids, self.static_bundle(), self.close_widgets)
            return
        from IPython.display import update_display

        bundle = self._repr_mimebundle_()
        for display_id in self._display_ids:
            update_display(bundle, raw=True, display_id=display_id)  # type: ignore[no-untyped-call]

    def close_widgets(self) -> None:
        """Close the view's widgets (their models in the kernel and the browser); what they showed stays
        readable (:meth:`to_html`, :attr:`status`...).

        Done when a finished run's outputs have been replaced by its static copy: nothing shows the
        widgets any more, and a saved notebook then holds no widget state for them.
        """
        for widget in descendants(self):
            close_widget(widget)
        self.__dict__.pop("_repr_mimebundle_", None)  # ipywidgets' close() blanks it: the static copy shows


def _static(widget: widgets.Widget) -> Markup:
    """The HTML a widget shows, for the static fallback.

    The value of an HTML widget of the view is the renderer's markup (only the view sets it, and
    only from :mod:`nbagent.render`), so it is taken as it is.
    """
    if isinstance(widget, widgets.HTML):
        return Markup(widget.value)
    if isinstance(widget, widgets.Box):
        names = widget._dom_classes  # noqa: SLF001 ipywidgets' CSS classes trait (no public reader)
        classes = " ".join(names)
        inner = _joined(_static(child) for child in widget.children)
        if "nba-tool-group" in names:
            return el("div", inner, class_=classes, data_count=len(widget.children[1].children))
        return el("div", inner, class_=classes)
    return EMPTY  # buttons


_SPACE = Markup("\n")


def _joined(parts: Iterator[Markup]) -> Markup:
    """Sibling elements with white space between them, as text readers (and pages without the
    stylesheet) see them apart: the title and the status are not one word."""
    return _SPACE.join(part for part in parts if part)


def _name(source: AssistantAgent | AgentRun | object) -> str:
    return source.agent.name if isinstance(source, AgentRun) else str(getattr(source, "name", ""))


def _interrupt_name() -> str:
    """What interrupted a run: a kernel interrupt in a notebook, Ctrl-C anywhere else (a script)."""
    return "kernel interrupt" if in_kernel() else "Ctrl-C"


def _retrieve(task: asyncio.Task[Any]) -> None:
    """Mark a background run's exception as seen: the view already shows it."""
    if not task.cancelled():
        task.exception()


def show(
    source: AssistantAgent | AgentRun | object,
    task: Task = None,
    *,
    cancellation_token: CancellationToken | None = None,
    title: str = "",
) -> Pending[AgentRunView]:
    """Display a live view and run ``task``; returns the view when the run has ended (awaited).

    ``await nbagent.show(agent, "task")`` blocks the cell until the answer (``view.response``);
    without ``await``, ``nbagent.run(agent, task, show=True)``. Outside a notebook it prints the run.
    """
    shown = _show(source, task, cancellation_token, title)
    return Pending(shown, "nbagent.show(agent, task)", "nbagent.run(agent, task, show=True)")


async def _show(
    source: AssistantAgent | AgentRun | object,
    task: Task,
    cancellation_token: CancellationToken | None,
    title: str,
) -> AgentRunView:
    title = title or getattr(source, "title", "")  # a replay says what it is, and what it cannot reproduce
    source, task = replayed("nbagent.show", source, task)  # a trace's replay: its agent and recorded task
    autogen = FOREIGN_RUN(source, task, cancellation_token)  # an AutoGen agent or team: nbagent.autogen
    if autogen is None:
        check_entry("nbagent.show", source, task, cancellation_token, runs=True)
    view = _new_view(title or _name(source))
    _display_or_echo(view, later=True)
    await view.run(autogen or source, task, cancellation_token=cancellation_token)
    return view


def start(
    source: AssistantAgent | AgentRun | object,
    task: Task = None,
    *,
    cancellation_token: CancellationToken | None = None,
    title: str = "",
) -> AgentRunView:
    """Display a live view and run ``task`` in the background; returns the view at once.

    The run goes on in the kernel's event loop after the cell has finished; ``await view.wait()``
    gives its ``Response``.
    """
    title = title or getattr(source, "title", "")  # a replay says what it is, and what it cannot reproduce
    source, task = replayed("nbagent.start", source, task)  # a trace's replay: its agent and recorded task
    autogen = FOREIGN_RUN(source, task, cancellation_token)  # an AutoGen agent or team: nbagent.autogen
    if autogen is None:
        check_entry("nbagent.start", source, task, cancellation_token, runs=True)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        raise RuntimeError(
            "nbagent.start runs the agent in the background of a running event loop, a notebook's; in a "
            "script write `await nbagent.show(agent, task)` inside asyncio.run, or nbagent.run(agent, task)"
        ) from None
    view = _new_view(title or _name(source))
    _display_or_echo(view)
    view.start(autogen or source, task, cancellation_token=cancellation_token)
    return view


def _display_or_echo(view: AgentRunView, *, later: bool = False) -> None:
    """Display the view in a notebook (``later``: once its run has gone on a moment, see
    :meth:`AgentRunView.show_later`); anywhere else (a script, a terminal IPython), where a widget
    cannot show, write the run as text to stdout instead."""
    if not in_kernel():
        view.echo_to(sys.stdout)
    elif later:
        view.show_later()
    else:
        from IPython.display import display

        display(view)  # type: ignore[no-untyped-call]


def show_sync(
    source: AssistantAgent | AgentRun | object,
    task: Task = None,
    *,
    cancellation_token: CancellationToken | None = None,
    title: str = "",
) -> AgentRunView:
    """:func:`show` without ``await`` (``nbagent.run(..., show=True)``, ``%%agent``).

    The loop is driven by :func:`nbagent.sync.run_coroutine`, which handles the Stop button's
    click while the run goes; a kernel interrupt ends the cell in one line (the view stays
    reachable as :func:`last_view`).
    """
    before = last_view()
    try:
        return run_coroutine(lambda: show(source, task, cancellation_token=cancellation_token, title=title))
    except KeyboardInterrupt:
        view = last_view()
        if view is not None and view is not before and view.status == "interrupted":
            raise RunKeyboardInterrupt(view) from None
        raise


def _new_view(title: str) -> AgentRunView:
    """A view for :func:`show` / :func:`start`, kept as :func:`last_view`."""
    global _last_view
    view = AgentRunView(title)
    _last_view = weakref.ref(view)
    return view
