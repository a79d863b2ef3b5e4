"""What a run view shows, as data: :class:`RunViewModel` built from the run's items, with no widget.

The model takes a run's items one by one (:meth:`RunViewModel.handle`) and keeps what the view shows:
its status (and how the run ended), totals, and its entries in order (the task, each LLM call's line,
events, streamed text, tool batches with their cards, the answer), each as the renderer's markup
(:mod:`nbagent.render`: every model or tool string escaped). It draws nothing: a :class:`ViewListener`
(the widget, :class:`~nbagent.notebook.view.AgentRunView`) is told of each change and draws it, and the
static copy a saved notebook keeps is the model's own :meth:`RunViewModel.html`. It imports no ipywidgets
and needs no kernel: tests drive it with items alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Protocol

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
from ..records import LLMCall, Move, MoveName, RunFinished, RunItem, RunStarted, ToolExecution
from ..redact import mask
from ..render import (
    EMPTY,
    STYLE,
    Markup,
    Options,
    el,
    error_block,
    escape,
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

__all__ = [
    "ENDED",
    "PREVIEW_CHARS",
    "SEGMENT_CHARS",
    "Block",
    "Entry",
    "LLMLine",
    "RunViewModel",
    "StreamText",
    "ToolCard",
    "ToolGroup",
    "ViewListener",
]

SEGMENT_CHARS = 4000
"""The most characters one segment of streamed text holds before the text goes on in the next one."""
ENDED = frozenset({"ok", "error", "cancelled", "interrupted"})
"""The statuses of a view whose run has ended."""
PREVIEW_CHARS = 120
"""How much of an answer's first line a view's ``text/plain`` preview holds (its static copy holds more)."""
STREAM_CLASSES = ("nba-item", "nba-item-stream", "nba-event", "nba-text", "nba-stream")
"""The classes of a box of streamed text (``nba-discarded`` is added when it never entered the context)."""
TOOL_GROUP_CLASSES = ("nba-item", "nba-item-tools", "nba-event", "nba-tool-group")
"""The classes of a batch of tool calls."""

# The kind (``nba-item-<kind>``) of an item shown as it comes; any other event is an "event".
_KINDS: dict[type, str] = {ThoughtEvent: "thought", MemoryQueryEvent: "memory"}
_SPACE = Markup("\n")


def joined(parts: Iterable[Markup]) -> Markup:
    """Sibling elements with white space between them, as text readers (and pages without the stylesheet)
    see them apart: the title and the status are not one word. Empty parts are left out."""
    return _SPACE.join(part for part in parts if part)


class Block:
    """An entry shown as one piece of markup (``kind``: ``user``, ``llm``, ``thought``, ``memory``,
    ``handoff``, ``final``, ``event``, ``error``): its ``html`` changes for an LLM call's line only."""

    __slots__ = ("kind", "html")

    def __init__(self, kind: str, html: Markup) -> None:
        self.kind = kind
        self.html = html


class LLMLine(Block):
    """The line of one LLM call: running (with its time so far), then its duration and tokens (or its error)."""

    __slots__ = ("call", "options", "recorded_s")

    def __init__(self, call: LLMCall, options: Options) -> None:
        self.call = call
        self.options = options
        self.recorded_s: float | None = None  # its recorded duration, shown instead of the one measured here
        super().__init__("llm", self.render())

    def render(self, now: float | None = None) -> Markup:
        """Its markup now (``now``: the time a running call's line counts to), kept as ``html``."""
        options = self.options if now is None else Options(self.options.move, self.options.number, now)
        call = self.call if self.recorded_s is None else replace(self.call, duration_s=self.recorded_s)
        self.html = item_html(call, options)
        return self.html


class ToolCard:
    """One tool call of a batch and what is known about it: its card's markup in ``html``."""

    __slots__ = ("call", "execution", "done", "recorded_s", "html")

    def __init__(self, call: FunctionCall) -> None:
        self.call = call
        self.execution: ToolExecution | None = None
        self.done = False
        self.recorded_s: float | None = None  # its recorded duration, shown instead of the one measured here
        self.html = tool_card(call)

    def running(self) -> None:
        """Its batch has started: the call runs."""
        if not self.done:
            self.html = tool_card(self.call, running=True)

    def ended(self, cancelled: bool = False) -> None:
        """Its result came (or, ``cancelled``, the run ended before it did)."""
        execution = self.execution
        result = execution.result if execution is not None else None
        duration = execution.duration_s if execution is not None else None
        if self.recorded_s is not None:
            duration = self.recorded_s
        self.done = result is not None or cancelled
        self.html = tool_card(self.call, result, duration, cancelled=cancelled and result is None)


class ToolGroup:
    """A batch of tool calls: its head line and one card per call."""

    __slots__ = ("head", "cards")

    def __init__(self, head: Markup, cards: list[ToolCard]) -> None:
        self.head = head
        self.cards = cards


class StreamText:
    """One message's text while its chunks arrive: kept as the pieces that came (appending one costs a list
    append), cut into segments of ``SEGMENT_CHARS`` characters when shown. ``discarded``: the run ended
    before the message was complete, so the text never entered the model context."""

    __slots__ = ("call", "badge", "pieces", "discarded")

    def __init__(self, badge: Markup, call: LLMCall | None) -> None:
        self.call = call
        self.badge = badge
        self.pieces: list[str] = []
        self.discarded = False

    @property
    def head(self) -> Markup:
        """Its head line."""
        return stream_head(self.badge, discarded=self.discarded)

    @property
    def classes(self) -> tuple[str, ...]:
        return (*STREAM_CLASSES, "nba-discarded") if self.discarded else STREAM_CLASSES

    @property
    def text(self) -> str:
        return "".join(self.pieces)

    def segments(self) -> list[Markup]:
        """Its text as segment markup, ``SEGMENT_CHARS`` characters each."""
        text = self.text
        return [stream_segment(escape(text[at : at + SEGMENT_CHARS])) for at in range(0, len(text), SEGMENT_CHARS)]


Entry = Block | StreamText | ToolGroup
"""What a view shows in its body, in order."""


class ViewListener(Protocol):
    """What draws a :class:`RunViewModel`: told of each change after the model has made it."""

    def added(self, entry: Entry) -> None:
        """``entry`` was put at the end of the body."""

    def replaced(self, old: StreamText, new: Block) -> None:
        """Streamed text gave way to its message (or the thought of a call that went on to tools)."""

    def changed(self, part: Block | ToolCard | StreamText) -> None:
        """``part``'s markup (its ``html``; a stream's head and classes) changed."""

    def streamed(self, stream: StreamText, text: str) -> None:
        """``text`` was appended to ``stream``."""

    def stream_ended(self, stream: StreamText) -> None:
        """No more text comes to ``stream`` (the run ended)."""

    def status_changed(self, previous: str) -> None:
        """The status (or its markup) changed; ``previous``: the status before."""

    def footer_changed(self) -> None:
        """The totals changed."""

    def title_changed(self) -> None:
        """The title changed."""


class RunViewModel:
    """What a view of one run shows, from the run's items: status, totals and entries, as markup.

    ``listener`` (the widget) is told of every change; without one the model is data alone.
    """

    def __init__(self, title: str = "", listener: ViewListener | None = None) -> None:
        self.listener = listener
        self.title = title
        self.status = "idle"
        self.detail: str | None = None
        """How the run ended, when not ``ok``: the error, or what stopped it."""
        self.error: str | None = None
        self.response: Response | None = None
        self.move: Move | None = None
        self.llm_calls: list[LLMCall] = []
        self.tool_executions: list[ToolExecution] = []
        self.started: RunStarted | None = None
        self.finished_perf: float | None = None
        self.entries: list[Entry] = []
        self.status_html = self._status_markup()
        self.footer_html = EMPTY
        self._streams: dict[str, StreamText] = {}
        self._cards: dict[str, ToolCard] = {}
        self._running: list[LLMLine] = []  # the lines of the calls still running
        self._lines: list[LLMLine] = []  # every call's, in order

    # ------------------------------------------------------------------ items

    def handle(self, item: RunItem) -> None:
        """Take one item of a run (record, event, message, ``Response``, or a ``str``: a chunk of the
        current LLM call's message)."""
        kind = type(item)
        if kind is str:
            self._stream(self.llm_calls[-1].message_id, item)  # type: ignore[arg-type]
            return
        if kind is ModelClientStreamingChunkEvent:
            self._stream(item.full_message_id or "", item.content)  # type: ignore[union-attr]
            return
        self._refresh_lines()
        on_item = self._ON_ITEM.get(kind)
        if on_item is not None:  # an item that changes what is shown already, or the state
            on_item(self, item)
        elif isinstance(item, (BaseAgentEvent, BaseChatMessage)):  # shown as the renderer draws it
            self._add(Block(_KINDS.get(kind, "event"), item_html(item, Options(self.move_name))))
        self._update_footer()

    def tick(self, now: float) -> None:
        """Count the running calls' lines and the elapsed time to ``now``."""
        for line in self._running:
            line.render(now)
            self._changed(line)
        self._update_footer()

    def set_title(self, title: str) -> None:
        self.title = title
        if self.listener is not None:
            self.listener.title_changed()

    @property
    def title_html(self) -> Markup:
        return el("span", el("b", self.title), class_="nba-title")

    @property
    def agent_name(self) -> str:
        """The name of the agent whose run it is (its title before the run has started)."""
        return self.started.agent if self.started is not None else (self.title or "agent")

    @property
    def move_name(self) -> MoveName | None:
        return self.move.name if self.move is not None else None

    def _badge(self) -> Markup:
        return Options(self.move_name).badge

    def _add(self, entry: Entry) -> None:
        self.entries.append(entry)
        if self.listener is not None:
            self.listener.added(entry)

    def _changed(self, part: Block | ToolCard | StreamText) -> None:
        if self.listener is not None:
            self.listener.changed(part)

    def _replace(self, stream: StreamText, block: Block) -> None:
        self.entries = [block if entry is stream else entry for entry in self.entries]
        if self.listener is not None:
            self.listener.replaced(stream, block)

    def _stream(self, message_id: str, text: str) -> None:
        stream = self._streams.get(message_id)
        if stream is None:
            call = self.llm_calls[-1] if self.llm_calls else None
            stream = self._streams[message_id] = StreamText(self._badge(), call)
            self._add(stream)
        if text:
            stream.pieces.append(text)
            if self.listener is not None:
                self.listener.streamed(stream, text)

    def _on_move(self, move: Move) -> None:
        self.move = move
        self._set_status("running")

    def _on_run_started(self, started: RunStarted) -> None:
        self.started = started
        task = Options("add_messages")
        for message in started.task:
            self._add(Block("user", item_html(message, task)))
        self._set_status("running")

    def _on_llm_call(self, call: LLMCall) -> None:
        self.llm_calls.append(call)
        line = LLMLine(call, Options(self.move_name, len(self.llm_calls)))
        self._running.append(line)
        self._lines.append(line)
        self._add(line)

    def _on_tool_request(self, event: ToolCallRequestEvent) -> None:
        cards = [ToolCard(call) for call in event.content]
        for card in cards:
            self._cards[card.call.id] = card
        self._add(ToolGroup(tool_group_head(len(cards), self._badge()), cards))

    def _on_tool_execution(self, execution: ToolExecution) -> None:
        self.tool_executions.append(execution)
        card = self._cards.get(execution.call.id)
        if card is not None:
            card.execution = execution
            card.running()
            self._changed(card)

    def _on_tool_results(self, event: ToolCallExecutionEvent) -> None:
        for result in event.content:
            card = self._cards.get(result.call_id)
            if card is not None:
                card.ended()
                self._changed(card)

    def _on_thought(self, thought: ThoughtEvent) -> None:
        """The reasoning of a call that went on to call tools: it replaces that call's streamed text."""
        block = Block("thought", item_html(thought, Options(self.move_name)))
        call = self.llm_calls[-1] if self.llm_calls else None
        stream = self._streams.pop(call.message_id, None) if call is not None else None
        if stream is None:
            self._add(block)
        else:
            self._replace(stream, block)

    def _on_response(self, response: Response) -> None:
        self.response = response
        message = response.chat_message
        block = Block(
            "handoff" if isinstance(message, HandoffMessage) else "final", item_html(message, Options(self.move_name))
        )
        stream = self._streams.pop(message.id, None)
        if stream is None:
            self._add(block)
        else:
            self._replace(stream, block)

    def _on_run_finished(self, finished: RunFinished) -> None:
        self.finished_perf = finished.end_perf
        self.end(finished.status, finished.error)

    # What the model does with the items that change its state or what it shows already (the others it
    # adds as the renderer draws them).
    _ON_ITEM: ClassVar[dict[type, Callable[[RunViewModel, Any], None]]] = {
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

    def _refresh_lines(self) -> None:
        for line in self._running:
            if line.call.duration_s is not None:
                line.render()
                self._changed(line)
        self._running = [line for line in self._running if line.call.duration_s is None]

    # ------------------------------------------------------------------ the end

    def end(self, status: str, error: str | None = None) -> None:
        """The run ended with ``status`` (``ok``, ``error``, ``cancelled``, ``interrupted``; ``error``: what
        failed, or what stopped it): text still streaming is marked discarded if its call never returned,
        tool calls without a result cancelled, the error shown once."""
        for stream in self._streams.values():
            if self.listener is not None:
                self.listener.stream_ended(stream)
            if status != "ok" and (stream.call is None or stream.call.result is None):
                stream.discarded = True  # its call never returned: the text never entered the context
                self._changed(stream)
        self._refresh_lines()
        for card in self._cards.values():
            if not card.done:
                card.ended(cancelled=True)
                self._changed(card)
        if error is not None and status == "error" and self.error is None:
            # Shown once: in the line of the LLM call that failed with it, else in a block of its own
            # (the status says "error"; the run's end and its exception both bring it here).
            self.error = error
            if not any(call.error == error for call in self.llm_calls):
                self._add(Block("error", error_block(error)))
        if self.finished_perf is None:
            self.finished_perf = time.perf_counter()
        if self.detail is None:
            self.detail = None if status == "ok" else error
        self._set_status(status, None if status == "error" else self.detail)
        self._update_footer()

    def show_recorded_times(
        self, llm_s: Sequence[float | None], tools_s: Mapping[str, float | None], elapsed_s: float | None
    ) -> None:
        """Show the times a recording kept instead of those measured here: each LLM call's (``llm_s``, in
        order), each tool call's (``tools_s``, by call id) and the run's (``elapsed_s``); a missing one
        leaves the time measured here."""
        for line, seconds in zip(self._lines, llm_s, strict=False):
            if seconds is not None:
                line.recorded_s = float(seconds)
                line.render()
                self._changed(line)
        for call_id, seconds in tools_s.items():
            card = self._cards.get(call_id)
            if card is not None and seconds is not None:
                card.recorded_s = float(seconds)
                card.ended()
                self._changed(card)
        if elapsed_s is not None and self.started is not None:
            self.finished_perf = self.started.start_perf + float(elapsed_s)
        self._update_footer()

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
    def elapsed_s(self) -> float | None:
        if self.started is None:
            return None
        end = self.finished_perf if self.finished_perf is not None else time.perf_counter()
        return end - self.started.start_perf

    def _update_footer(self) -> None:
        shown = "" if self.status == "idle" else self.status
        streaming = None
        if self.status == "running" and self.llm_calls:
            call = self.llm_calls[-1]
            streaming = len(call.chunks) if call.duration_s is None and call.chunks else None
        self.footer_html = footer(
            self.usage, len(self.llm_calls), len(self.tool_executions), self.elapsed_s, shown, streaming
        )
        if self.listener is not None:
            self.listener.footer_changed()

    def _status_markup(self, detail: str | None = None) -> Markup:
        text = self.status
        badge = EMPTY
        if self.status == "running" and self.move is not None:
            badge = self._badge()
            text = f"running · {self.move.info.title}"
        elif detail:
            text = f"{self.status}: {detail}"
        return badge + el("span", text, class_="nba-status-text", data_status=self.status)

    def _set_status(self, status: str, detail: str | None = None) -> None:
        previous, self.status = self.status, status
        self.status_html = self._status_markup(detail)
        if self.listener is not None:
            self.listener.status_changed(previous)

    # ------------------------------------------------------------------ static copy and text

    def html(self, *, stylesheet: bool = True) -> str:
        """Self-contained HTML of what the view shows now (every value already escaped), the elements and
        classes of the live widget's; without its stylesheet if not ``stylesheet`` (its layout stays,
        inline)."""
        header = el("div", joined((self.title_html, self.status_html)), class_="nba-header")
        body = el("div", joined(_entry_html(entry) for entry in self.entries), class_="nba-body")
        inner = joined((header, body, self.footer_html))
        if stylesheet:
            inner = STYLE + _SPACE + inner
        return str(portable(el("div", inner, class_=f"nba-view nba-state-{self.status}", data_status=self.status)))

    def to_text(self) -> str:
        """A short plain-text summary: status, the answer's first line capped at ``PREVIEW_CHARS``, totals,
        run id; secrets masked, controls and invisible marks shown (:func:`~nbagent.render.printable`)."""
        lines = [f"{self.agent_name} · {self.status}" + (f" ({mask(self.detail)})" if self.detail else "")]
        if self.response is not None:
            answer = mask(self.response.chat_message.to_text())
            first = answer.split("\n", 1)[0][:PREVIEW_CHARS]
            rest = len(answer) - len(first)
            lines.append(first + (f" … ({rest:,} more characters)" if rest else ""))
        elapsed = self.elapsed_s
        usage = self.usage
        totals = [
            f"{usage.prompt_tokens + usage.completion_tokens:,} tokens",
            plural(len(self.llm_calls), "LLM call"),
            plural(len(self.tool_executions), "tool call"),
        ]
        if elapsed is not None:
            totals.append(f"{elapsed:.2f} s")
        if self.started is not None:
            totals.append(f"run {self.started.run_id}")
        lines.append(" · ".join(totals))
        return printable("\n".join(lines))


def _entry_html(entry: Entry) -> Markup:
    """An entry as the static copy shows it: a block's markup; a stream's and a tool batch's box."""
    if isinstance(entry, Block):
        return entry.html
    if isinstance(entry, StreamText):
        body = el("div", joined(entry.segments()), class_="nba-stream-body")
        scroll = el("div", body, class_="nba-scroll")
        return el("div", joined((entry.head, scroll)), class_=" ".join(entry.classes))
    cards = el("div", joined(card.html for card in entry.cards), class_="nba-tool-cards")
    return el("div", joined((entry.head, cards)), class_=" ".join(TOOL_GROUP_CLASSES), data_count=len(entry.cards))
