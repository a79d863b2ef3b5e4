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
import sys
import time
import uuid
import weakref
from collections import deque
from collections.abc import Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, TextIO, cast

import ipywidgets as widgets
from ipywidgets.widgets.widget_string import HTMLStyle

from ..agent import AgentRun, AssistantAgent, check_entry, replayed
from ..agent_input import Task
from ..cancellation import CancellationToken
from ..messages import ModelClientStreamingChunkEvent, RequestUsage, Response
from ..records import FOREIGN_RUN, LLMCall, Move, RunFinished, RunItem, ToolExecution
from ..render import EMPTY, STYLE, Markup, stream_segment
from ..render.textlog import TextLog
from ..sync import Pending, entry_point, run_coroutine
from .coalesce import DEFAULT_INTERVAL, Coalescer
from .kernel import in_kernel
from .runner import RunInterrupted, RunKeyboardInterrupt, Runner, run_of
from .static_display import cell_stylesheet, close_widget, descendants, finish
from .view_model import (
    ENDED,
    SEGMENT_CHARS,
    STREAM_CLASSES,
    TOOL_GROUP_CLASSES,
    Block,
    Entry,
    RunViewModel,
    StreamText,
    ToolCard,
)

if TYPE_CHECKING:
    from IPython.core.interactiveshell import InteractiveShell

__all__ = [
    "FRAME_S",
    "GO_LIVE_S",
    "TICK_INTERVAL",
    "AgentRunView",
    "RunInterrupted",
    "RunKeyboardInterrupt",
    "last_view",
    "show",
    "show_sync",
    "start",
]

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
FRAME_S = 1 / 25
"""Seconds between two sends of a live view's changed values (its footer, status, LLM call lines, tool
cards): each is sent at most once a frame, its latest value."""

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


# The kinds of widget a view is made of, each opening its model when first shown (one mechanism: _OpenLater).
class _LaterHTML(_OpenLater, widgets.HTML):  # type: ignore[misc]
    pass


class _LaterButton(_OpenLater, widgets.Button):  # type: ignore[misc]
    pass


class _LaterBox(_OpenLater, widgets.Box):  # type: ignore[misc]
    pass


class _LaterHBox(_OpenLater, widgets.HBox):  # type: ignore[misc]
    pass


class _LaterVBox(_OpenLater, widgets.VBox):  # type: ignore[misc]
    pass


class _LaterLayout(_OpenLater, widgets.Layout):  # type: ignore[misc]
    pass


class _LaterHTMLStyle(_OpenLater, HTMLStyle):  # type: ignore[misc]
    pass


class _Frame:
    """What a view's widgets share: one layout and one HTML style (two widget models, not two for each of
    its widgets: every widget of a view is laid out by its CSS classes), and the values its HTML widgets
    are given, sent at most once every ``FRAME_S`` seconds each.

    A burst of items (a batch of tool calls and their results, the footer after each) becomes one update
    a widget a frame; a widget whose model is not open (a view not yet live) is assigned at once, which
    sends nothing. :meth:`flush` sends what is pending.
    """

    __slots__ = ("_pending", "_timer", "layout", "style")

    def __init__(self) -> None:
        self._pending: dict[int, tuple[widgets.HTML, str]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self.layout = _LaterLayout()
        self.style = _LaterHTMLStyle()

    def html(self, value: str = EMPTY, *classes: str) -> widgets.HTML:
        """A new HTML widget of the view (its model opens when first shown), with CSS ``classes``."""
        widget = _LaterHTML(value, layout=self.layout, style=self.style)
        for name in classes:
            widget.add_class(name)
        return widget

    def box(self, children: list[widgets.Widget], *classes: str, kind: type[widgets.Box] = _LaterBox) -> widgets.Box:
        """A new box of the view (a ``Box``, or ``kind``: ``_LaterHBox``, ``_LaterVBox``), with CSS ``classes``."""
        box = kind(children, layout=self.layout)
        for name in classes:
            box.add_class(name)
        return box

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


class _Stream:
    """The widgets that draw one message's text while its chunks arrive (a :class:`StreamText`).

    The text arrives through a :class:`Coalescer`, so the browser gets at most ~22 updates a second, and
    goes into segments of at most ``SEGMENT_CHARS`` characters (the model's, cut at the same places); only
    the new text is escaped at each update: an update re-sends only the last segment, however long the
    message grows, and costs the same at its end as at its start. The segments sit in a scroll box of
    bounded height laid out from its end (``column-reverse``): it keeps the newest text in view while the
    text grows, with no script; its head line's "expand" checkbox lifts the bound.
    """

    __slots__ = ("box", "coalescer", "head", "_body", "_segment", "_escaped", "_length", "_frame")

    def __init__(self, stream: StreamText, interval: float, frame: _Frame) -> None:
        self._frame = frame
        self._segment = frame.html()
        self._escaped = EMPTY
        self._length = 0
        self.head = frame.html(stream.head)
        self._body = frame.box([self._segment], "nba-stream-body")
        self.box = frame.box([self.head, frame.box([self._body], "nba-scroll")], *STREAM_CLASSES)
        self.coalescer = Coalescer(self._show, interval)

    def discard(self, stream: StreamText) -> None:
        """Mark the text as never having entered the model context (its message was never complete)."""
        self.head.value = stream.head
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


class _Drawing:
    """Draws a view's :class:`RunViewModel` into its widgets: the model's :class:`ViewListener`.

    It makes the widgets of the header (``title``, ``status``) and the ``footer``; each entry of the model
    is one widget of the view's body (a streamed text's and a tool batch's, a box of them); each change of
    the model sets the values of the widgets that show it, at most once a frame.
    """

    __slots__ = ("view", "model", "frame", "interval", "title", "status", "footer", "_widgets", "_streams")

    def __init__(self, view: AgentRunView, model: RunViewModel, frame: _Frame, interval: float) -> None:
        self.view = view
        self.model = model
        self.frame = frame
        self.interval = interval
        self.title = frame.html(model.title_html)
        self.status = frame.html(model.status_html, "nba-status")
        self.footer = frame.html(model.footer_html, "nba-footer-box")
        self._widgets: dict[Block | ToolCard, widgets.HTML] = {}
        self._streams: dict[StreamText, _Stream] = {}
        model.listener = self

    def _widget(self, entry: Entry) -> widgets.Widget:
        frame = self.frame
        if isinstance(entry, Block):
            widget = self._widgets[entry] = frame.html(entry.html, "nba-item", f"nba-item-{entry.kind}")
            return widget
        if isinstance(entry, StreamText):
            stream = self._streams[entry] = _Stream(entry, self.interval, frame)
            return stream.box
        cards = []
        for card in entry.cards:
            cards.append(frame.html(card.html, "nba-tool-card-widget"))
            self._widgets[card] = cards[-1]
        row = frame.box(cards, "nba-tool-cards")
        return frame.box([frame.html(entry.head), row], *TOOL_GROUP_CLASSES, kind=_LaterVBox)

    def added(self, entry: Entry) -> None:
        body = self.view.body
        body.children = (*body.children, self._widget(entry))

    def replaced(self, old: StreamText, new: Block) -> None:
        stream = self._streams.pop(old)
        stream.coalescer.close()
        widget = self._widget(new)
        body = self.view.body
        body.children = tuple(widget if child is stream.box else child for child in body.children)
        stream.close()

    def changed(self, part: Block | ToolCard | StreamText) -> None:
        if isinstance(part, StreamText):
            stream = self._streams.get(part)
            if stream is not None:
                stream.discard(part)
            return
        self.frame.set(self._widgets[part], part.html)

    def streamed(self, stream: StreamText, text: str) -> None:
        self._streams[stream].coalescer.append(text)

    def stream_ended(self, stream: StreamText) -> None:
        drawn = self._streams.get(stream)
        if drawn is not None:
            drawn.coalescer.close()

    def status_changed(self, previous: str) -> None:
        status = self.model.status
        if status != previous:
            self.view.remove_class(f"nba-state-{previous}")
            self.view.add_class(f"nba-state-{status}")
        self.frame.set(self.status, self.model.status_html)

    def footer_changed(self) -> None:
        self.frame.set(self.footer, self.model.footer_html)

    def title_changed(self) -> None:
        self.title.value = self.model.title_html

    def flush(self) -> None:
        """Send now the streamed text and values still held back."""
        for stream in self._streams.values():
            stream.coalescer.flush()
        self.frame.flush()


class AgentRunView(_OpenLater, widgets.VBox):  # type: ignore[misc]
    """A live view of one agent run; call :meth:`run` (or :func:`show` / :func:`start`) to fill it.

    Three parts, one job each: :attr:`model` (a :class:`~nbagent.notebook.view_model.RunViewModel`: what
    the view shows, built from the run's items, no widget), the widgets that draw it (this VBox), and the
    runner (:class:`~nbagent.notebook.runner.Runner`: the run, Stop, interrupts). :meth:`handle` takes the
    run's items one by one: it can be driven without a kernel or browser. The mime bundle adds
    ``text/html`` and ``text/plain`` of the current state to the widget view, so a saved notebook shows
    the finished run anywhere.
    """

    def __init__(self, title: str = "", *, interval: float = DEFAULT_INTERVAL) -> None:
        frame = _Frame()
        self.model = RunViewModel(title)
        """What the view shows, as data (its status, totals and entries)."""
        self._drawing = drawing = _Drawing(self, self.model, frame, interval)
        self._title = drawing.title
        self.stop_button = _LaterButton(
            description="Stop", icon="stop", button_style="danger", disabled=True, layout=frame.layout
        )
        self.stop_button.add_class("nba-stop")
        self.stop_button.on_click(lambda _: self.stop())
        header = frame.box([self._title, drawing.status, self.stop_button], "nba-header", kind=_LaterHBox)
        self.body = frame.box([], "nba-body", kind=_LaterVBox)
        super().__init__([frame.html(STYLE), header, self.body, drawing.footer], layout=frame.layout)
        self.add_class("nba-view")
        self.add_class("nba-state-idle")
        self._runner = Runner(self)
        self._last_tick = 0.0
        self._display_ids: list[str] = []
        self._shown_in: int | None = None
        self._deferred = False  # displayed by show_later(): shown once its run has gone on GO_LIVE_S
        self._copy_style: Markup | None = None  # the stylesheet its static copies in outputs carry
        self._echo: tuple[TextLog, TextIO] | None = None  # outside a notebook: the run as text (echo_to)
        self._echo_ended = False  # the echo wrote the run's end

    # ------------------------------------------------------------------ what the model holds

    @property
    def status(self) -> str:
        """``idle``, ``running``, ``ok``, ``error``, ``cancelled`` or ``interrupted``."""
        return self.model.status

    @property
    def detail(self) -> str | None:
        """How the run ended, when not ``ok``: the error, or what stopped it."""
        return self.model.detail

    @property
    def error(self) -> str | None:
        return self.model.error

    @property
    def response(self) -> Response | None:
        return self.model.response

    @property
    def move(self) -> Move | None:
        return self.model.move

    @property
    def llm_calls(self) -> list[LLMCall]:
        return self.model.llm_calls

    @property
    def tool_executions(self) -> list[ToolExecution]:
        return self.model.tool_executions

    @property
    def usage(self) -> RequestUsage:
        """Tokens of the run's finished LLM calls."""
        return self.model.usage

    @property
    def elapsed_s(self) -> float | None:
        return self.model.elapsed_s

    @property
    def agent_name(self) -> str:
        """The name of the agent whose run the view shows (its title before the run has started)."""
        return self.model.agent_name

    @property
    def _finished_perf(self) -> float | None:
        return self.model.finished_perf

    @property
    def task(self) -> asyncio.Task[Response | None] | None:
        """The background task when started with :meth:`start`."""
        return self._runner.task

    @property
    def status_html(self) -> str:
        """The header's status line as HTML: the status (with the current move while running, how the
        run ended otherwise), the element ``nba-status-text`` with ``data-status``."""
        return str(self.model.status_html)

    @property
    def footer_html(self) -> str:
        """The footer as HTML: the run's totals, one ``data-metric``/``data-value`` pair each."""
        return str(self.model.footer_html)

    # ------------------------------------------------------------------ the items

    def handle(self, item: RunItem) -> None:
        """Show one item of a run (record, event, message or ``Response``)."""
        if self._echo is not None:
            self._write_echo(item)
        self.model.handle(item)
        if type(item) is RunFinished:
            self._ended()

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
        if self.task is not None and self.status == "interrupted" and not self._runner.interrupted:
            text += (
                "(a run nbagent.start began is cancelled when its program ends: `await view.wait()` waits for it, "
                "or write `await nbagent.show(agent, task)`)\n"
            )
        out.write(text)
        out.flush()

    def tick(self) -> None:
        """Refresh the live status (elapsed time, the running call's line) if ``TICK_INTERVAL`` has passed."""
        now = time.perf_counter()
        started = self.model.started
        if self._deferred and started is not None and now - started.start_perf >= GO_LIVE_S:
            self._go_live(now)
        if self.status != "running" or now - self._last_tick < TICK_INTERVAL:
            return
        self._last_tick = now
        self.model.tick(now)

    def show_recorded_times(
        self, llm_s: Sequence[float | None], tools_s: Mapping[str, float | None], elapsed_s: float | None
    ) -> None:
        """Show the times a recording kept instead of those measured here (a run replayed from its trace: its
        replayed calls take no time): each LLM call's (``llm_s``, in order), each tool call's (``tools_s``, by
        call id) and the run's (``elapsed_s``); a missing one leaves the time measured here."""
        self.model.show_recorded_times(llm_s, tools_s, elapsed_s)
        self._refresh_displays()

    def flush(self) -> None:
        """Show now the streamed text and values still held back (sent within ``interval`` and ``FRAME_S``
        otherwise)."""
        self._drawing.flush()

    # ------------------------------------------------------------------ running (the runner's)

    def begin(self, agent_name: str) -> None:
        """Its run is about to start: titled after ``agent_name`` if it has no title, Stop enabled."""
        if not self.model.title:
            self.model.set_title(agent_name)
        self.stop_button.disabled = False

    def end(self, status: str, error: str | None = None) -> None:
        """Its run ended with ``status`` (``error``: what failed, or what stopped it) and no ``RunFinished``."""
        self.model.end(status, error)
        self._ended()

    def _ended(self) -> None:
        """The model has its end: Stop disabled, the output becomes the static copy, the widgets close."""
        self.stop_button.disabled = True
        self._drawing.flush()
        if self._deferred:  # ended before it went live: its static copy alone shows it
            self._deferred = False
            from IPython.display import display

            display(self.static_bundle(), raw=True)  # type: ignore[no-untyped-call]
        self._refresh_displays()
        if not self._display_ids:  # never shown (a script's echo, a view run by hand): nothing will show
            self.close_widgets()  # its widgets; displayed later, it shows its static copy
        self._end_echo()

    def refresh(self) -> None:
        """Its outputs show the current state (the static copy alone once the run has ended)."""
        self._refresh_displays()

    @entry_point("view.run(agent, task)")
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
        return await self._runner.run(partial(run_of, source, task, cancellation_token))

    def start(
        self,
        source: AssistantAgent | AgentRun | object,
        task: Task = None,
        *,
        cancellation_token: CancellationToken | None = None,
    ) -> asyncio.Task[Response | None]:
        """Run in the background on the current event loop; the view keeps updating after the cell ends."""
        return self._runner.start(partial(run_of, source, task, cancellation_token))

    def stop(self) -> None:
        """Cancel the run (what the Stop button does); the agent's context stays valid."""
        self._runner.stop()

    @entry_point("view.wait()")
    async def wait(self) -> Response | None:
        """Wait for a background run; its ``Response``, or ``None`` if it was stopped.

        A kernel interrupt (or the waiting task cancelled) stops the run it waits for, as its Stop
        button does, and waits for it to end (the agent is free again, its context valid): the cell
        ends in one line, :class:`RunInterrupted`.
        """
        return await self._runner.wait()

    # ------------------------------------------------------------------ static fallback

    def to_html(self, *, stylesheet: bool = True) -> str:
        """Self-contained HTML of the current state (every value already escaped); without its
        stylesheet if not ``stylesheet`` (its layout stays, inline)."""
        return self.model.html(stylesheet=stylesheet)

    def to_text(self) -> str:
        """A short plain-text summary (the output's ``text/plain`` preview, beside the static copy that
        holds the answer): status, the answer's first line capped, totals, run id; secrets masked,
        controls and invisible marks shown (:func:`~nbagent.render.printable`)."""
        return self.model.to_text()

    def __repr__(self) -> str:
        """Short, for a script or a log: ipywidgets' own repr spells out every child widget's HTML."""
        return (
            f"AgentRunView(agent={self.agent_name!r}, status={self.status!r}, llm_calls={len(self.llm_calls)}, "
            f"tool_calls={len(self.tool_executions)})"
        )

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
        models = sum(1 for _ in descendants(self)) + 3  # each widget; the shared layout and style, the button's style
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


def _name(source: AssistantAgent | AgentRun | object) -> str:
    return source.agent.name if isinstance(source, AgentRun) else str(getattr(source, "name", ""))


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
