"""The step-by-step widget: Next, Run to end and Reset over a :class:`~nbagent.stepper.Stepper`.

``nbagent.step(agent, "task")`` returns a :class:`NotebookStepper`: the programmatic stepper, which
shows this widget when displayed and refreshes it after every move, whether the move was made by a
button or by ``await stepper.next()`` in a later cell. The widget shows the pipeline (STEP 1 -> 5 and
the tool loop with its exits) with the current move highlighted, the move's STEP, method and
explanation, its events, the model context with the rows it added or changed, and at LLM moves the
exact request and the raw ``CreateResult``. Everything a model or a tool said is escaped.

CSS hooks (stable, tests use them): ``nba-node`` per diagram box with ``data-move`` and
``data-state`` (``current``, ``visited``, ``upcoming``, ``unused``, ``idle``); ``nba-stepper-head``
with ``data-step``, ``data-move`` and ``data-index``; ``nba-ctx-row`` with ``data-change``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import ipywidgets as widgets

from ..agent import AssistantAgent, Task
from ..cancellation import CancellationToken
from ..context import message_text
from ..messages import BaseAgentEvent, BaseChatMessage, ModelClientStreamingChunkEvent, Response
from ..records import MOVES
from ..stepper import Stepper, StepResult
from .html import STYLE, escape, event_html, step_badge, value_html

STEPPER_STYLE = """<style>
.nba-stepper{font-family:var(--jp-ui-font-family,system-ui,sans-serif);font-size:13px;line-height:1.45}
.nba-pipeline{max-width:100%;height:auto}
.nba-node rect{fill:#f4f6fa;stroke:#9aa5b8;stroke-width:1.2}
.nba-node text{font-size:11px;fill:#223;text-anchor:middle}
.nba-node text.nba-node-step{font-weight:700;font-size:10px;fill:#556}
.nba-node[data-state=visited] rect{fill:#e3f1e6;stroke:#6ca77c}
.nba-node[data-state=upcoming] rect{stroke:#c77800;stroke-width:2;stroke-dasharray:5 3}
.nba-node[data-state=current] rect{fill:#ffd54f;stroke:#c77800;stroke-width:3}
.nba-node[data-state=unused]{opacity:.35}
.nba-exit rect{fill:#fff;stroke:#16a085;stroke-dasharray:3 2}
.nba-exit text{font-size:11px;fill:#16a085;text-anchor:middle}
.nba-edge{fill:none;stroke:#8893a6;stroke-width:1.3}
.nba-edge-label{font-size:10px;fill:#667}
.nba-stepper-head{font-size:15px;font-weight:600;margin:6px 0 2px}
.nba-stepper-head code{font-size:13px;background:#eef1f6;padding:0 4px;border-radius:4px}
.nba-stepper-explanation{margin:2px 0 8px;max-width:60em}
.nba-stepper-next{color:#555;font-size:12px;margin:4px 0}
.nba-stepper h4{margin:10px 0 4px;font-size:13px}
.nba-ctx-row[data-change=added] td{background:#e3f7e7}
.nba-ctx-row[data-change=changed] td{background:#fff3cd}
.nba-stepper .nba-table pre{margin:0;white-space:pre-wrap;word-break:break-word;font-size:12px}
</style>"""

NODE_W, NODE_H = 132, 46
# Where each move sits in the diagram: (x, y, second line of the label).
NODES: dict[str, tuple[int, int, str]] = {
    "add_messages": (10, 10, "add messages"),
    "memory": (160, 10, "query memory"),
    "message_id": (310, 10, "message id"),
    "call_llm": (460, 10, "call the LLM"),
    "text_exit": (670, 10, "text: answer"),
    "tool_request": (160, 120, "tool calls"),
    "tool_execution": (310, 120, "run the tools"),
    "handoff_check": (460, 120, "handoff?"),
    "next_llm_call": (670, 120, "call LLM again"),
    "summarize": (160, 225, "summary"),
    "reflect": (310, 225, "reflect (LLM)"),
}
# Arrows: (SVG path, label, label x, label y).
EDGES: list[tuple[str, str, int, int]] = [
    ("M142,33 H158", "", 0, 0),
    ("M292,33 H308", "", 0, 0),
    ("M442,33 H458", "", 0, 0),
    ("M592,33 H668", "text", 614, 28),
    ("M526,56 V78 H200 V118", "tool calls", 330, 74),
    ("M292,143 H308", "", 0, 0),
    ("M442,143 H458", "", 0, 0),
    ("M592,143 H668", "iterations left", 596, 138),
    ("M760,120 V58", "text", 766, 92),
    ("M700,120 V100 H250 V118", "tool calls again", 420, 96),
    ("M526,166 V223", "handoff", 532, 200),
    ("M480,166 V196 H226 V223", "iterations used up", 250, 192),
    ("M376,196 V223", "", 0, 0),
]
HANDOFF_EXIT = (460, 225, "HandoffMessage")


def _node_states(stepper: Stepper) -> dict[str, str]:
    agent = stepper.agent
    states = dict.fromkeys(NODES, "idle")
    if not agent.handoffs:
        states["handoff_check"] = "unused"
    if agent.max_tool_iterations == 1:
        states["next_llm_call"] = "unused"
    states["summarize" if agent.reflect_on_tool_use else "reflect"] = "unused"
    for result in stepper.history:
        states[result.name] = "visited"
    if stepper.status == "ready":
        states["add_messages"] = "upcoming"
    elif stepper.upcoming is not None:
        states[stepper.upcoming.name] = "upcoming"
    if stepper.current is not None:
        states[stepper.current.name] = "current"
    return states


def pipeline_html(stepper: Stepper) -> str:
    """The loop as an SVG diagram, the current move highlighted and the next one outlined."""
    states = _node_states(stepper)
    parts = [
        '<svg class="nba-pipeline" viewBox="0 0 812 282" width="812" height="282" role="img" '
        'aria-label="STEP 1 to 5 and the tool loop">'
        '<defs><marker id="nba-stepper-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8893a6"/></marker></defs>'
    ]
    for path, label, lx, ly in EDGES:
        parts.append(f'<path class="nba-edge" d="{path}" marker-end="url(#nba-stepper-arrow)"/>')
        if label:
            parts.append(f'<text class="nba-edge-label" x="{lx}" y="{ly}">{escape(label)}</text>')
    for name, (x, y, label) in NODES.items():
        info = MOVES[name]
        cx = x + NODE_W // 2
        parts.append(
            f'<g class="nba-node" data-move="{name}" data-step="{info.step}" data-state="{states[name]}">'
            f"<title>{escape(info.title)} ({escape(info.method)})</title>"
            f'<rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="7"/>'
            f'<text class="nba-node-step" x="{cx}" y="{y + 18}">STEP {info.step}</text>'
            f'<text x="{cx}" y="{y + 35}">{escape(label)}</text></g>'
        )
    x, y, label = HANDOFF_EXIT
    parts.append(
        f'<g class="nba-exit"><rect x="{x}" y="{y}" width="{NODE_W}" height="{NODE_H}" rx="20"/>'
        f'<text x="{x + NODE_W // 2}" y="{y + 28}">{escape(label)}</text></g></svg>'
    )
    return "".join(parts)


def _events_html(result: StepResult) -> str:
    """The events of one move; streamed chunks are shown joined, as the text they built."""
    badge = step_badge(result.name)
    blocks: list[str] = []
    chunks: list[str] = []
    for event in result.events:
        if isinstance(event, ModelClientStreamingChunkEvent):
            chunks.append(event.content)
            continue
        if chunks:
            blocks.append(_chunks_html(chunks, badge))
            chunks = []
        item: BaseAgentEvent | BaseChatMessage = event.chat_message if isinstance(event, Response) else event
        blocks.append(event_html(item, badge))
    if chunks:
        blocks.append(_chunks_html(chunks, badge))
    return "".join(blocks) or '<div class="nba-muted">no events in this move</div>'


def _chunks_html(chunks: list[str], badge: str) -> str:
    return (
        f'<div class="nba-event nba-text nba-streamed" data-count="{len(chunks)}">{badge}'
        f'<span class="nba-label">{len(chunks)} streamed chunks</span>{value_html("".join(chunks))}</div>'
    )


def _cell(value: object) -> str:
    """A DataFrame cell as escaped text; missing values are empty."""
    return escape(value) if isinstance(value, (str, int)) else ""


def context_table_html(result: StepResult | None, stepper: Stepper) -> str:
    """The model context as a table; rows this move added or changed are highlighted."""
    frame = result.context if result is not None else stepper.agent.context_df().assign(change="")
    if frame.empty:
        return '<div class="nba-muted nba-stepper-context" data-rows="0">the model context is empty</div>'
    rows = "".join(
        f'<tr class="nba-ctx-row" data-change="{_cell(row.change)}" data-kind="{_cell(row.kind)}">'
        f"<td>{row.position}</td><td>{_cell(row.kind)}</td><td>{_cell(row.source)}</td>"
        f"<td>{value_html(row.text, limit=300, max_chars=4000)}</td>"
        f"<td>{escape(', '.join(call['name'] for call in row.tool_calls or []))}</td>"
        f"<td>{value_html(row.thought, limit=200, max_chars=4000) if isinstance(row.thought, str) else ''}</td>"
        f"<td>{row.tokens}</td>"
        f"<td>{'' if not isinstance(row.move, str) else f'STEP {row.step} {escape(row.move)}'}</td>"
        f"<td>{_cell(row.change)}</td></tr>"
        for row in frame.itertuples()
    )
    return (
        f'<table class="nba-table nba-stepper-context" data-rows="{len(frame)}"><tr><th>#</th><th>kind</th>'
        "<th>source</th><th>text</th><th>tool calls</th><th>thought</th><th>tokens</th><th>added by</th>"
        f"<th>change</th></tr>{rows}</table>"
    )


def request_html(result: StepResult) -> str:
    """Exactly what the model received at this move, and the raw ``CreateResult`` it returned."""
    call = result.llm_call
    if call is None:
        return ""
    request = call.request
    messages = "".join(
        f"<tr><td>{i}</td><td>{escape(message.type)}</td><td>{escape(getattr(message, 'source', '') or '')}</td>"
        f"<td>{value_html(message_text(message), limit=300, max_chars=4000)}</td></tr>"
        for i, message in enumerate(request.messages)
    )
    tools = "".join(
        f'<li><span class="nba-label">{escape(tool.get("name", ""))}</span>{escape(tool.get("description", ""))}'
        f"<details><summary>parameters</summary>"
        f"{value_html(json.dumps(tool.get('parameters', {}), indent=2, ensure_ascii=False), limit=2000, css='nba-tool-args')}"
        f"</details></li>"
        for tool in request.tools
    )
    json_output = request.json_output
    output = json_output.__name__ if isinstance(json_output, type) else repr(json_output)
    raw = "not returned (the call failed)" if call.result is None else call.result.model_dump_json(indent=2)
    failure = f'<div class="nba-event nba-error">{escape(call.error)}</div>' if call.error else ""
    return (
        f"<h4>Request sent to {escape(call.model)} ({escape(call.purpose)} call)</h4>"
        f'<div class="nba-stepper-request" data-messages="{len(request.messages)}" data-tools="{len(request.tools)}" '
        f'data-tool-choice="{escape(request.tool_choice)}">'
        f"<div>tool_choice=<code>{escape(request.tool_choice)}</code> · json_output=<code>{escape(output)}</code>"
        f" · streaming={call.streaming}</div>"
        f'<table class="nba-table"><tr><th>#</th><th>message</th><th>source</th><th>content</th></tr>{messages}</table>'
        f'<div><span class="nba-label">tools ({len(request.tools)})</span></div>'
        f'<ul class="nba-stepper-tools">{tools}</ul></div>'
        f'<h4>Raw CreateResult</h4><div class="nba-stepper-result">{value_html(raw, limit=1500)}</div>{failure}'
    )


def _head_html(result: StepResult) -> str:
    where = "" if result.iteration is None else f" · iteration {result.iteration}"
    return (
        f'<div class="nba-stepper-head" data-step="{result.step}" data-move="{result.name}" '
        f'data-index="{result.index}">STEP {result.step} · {escape(result.title)} '
        f"<code>{escape(result.method)}</code>"
        f'<span class="nba-muted"> move {result.index}{where}</span></div>'
        f'<p class="nba-stepper-explanation">{escape(result.explanation)}</p>'
    )


def _next_html(stepper: Stepper) -> str:
    if stepper.status == "ready":
        text = "Next: STEP 1 · " + MOVES["add_messages"].title
    elif stepper.upcoming is not None:
        info = stepper.upcoming.info
        text = f"Next: STEP {info.step} · {info.title} ({info.method})"
    else:
        text = f"The run is over ({stepper.status}). Reset to walk it again."
    return f'<div class="nba-stepper-next" data-status="{stepper.status}">{escape(text)}</div>'


def move_html(stepper: Stepper) -> str:
    """The panels of the last move: header, explanation, events, context, and request/result at LLM moves."""
    result = stepper.current
    if result is None:
        task = "\n".join(message.to_text() for message in stepper.messages)
        head = (
            '<div class="nba-stepper-head" data-step="0" data-move="" data-index="0">Ready to walk the loop</div>'
            f'<p class="nba-stepper-explanation">Task for {escape(stepper.agent.name)}:</p>{value_html(task)}'
        )
        return f"{head}{_next_html(stepper)}<h4>Model context</h4>{context_table_html(None, stepper)}"
    error = ""
    if result.error is not None:
        error = f'<div class="nba-event nba-error">{escape(type(result.error).__name__)}: {escape(result.error)}</div>'
    return (
        f"{_head_html(result)}{_next_html(stepper)}{error}"
        f"<h4>Events of this move</h4>{_events_html(result)}"
        f"<h4>Model context after this move (+{len(result.added)} added, {len(result.changed)} changed)</h4>"
        f"{context_table_html(result, stepper)}{request_html(result)}"
    )


def stepper_html(stepper: Stepper) -> str:
    """The whole widget as static HTML (no buttons), for saved notebooks."""
    return f'{STYLE}{STEPPER_STYLE}<div class="nba-stepper">{pipeline_html(stepper)}{move_html(stepper)}</div>'


class StepperWidget(widgets.VBox):
    """Buttons, pipeline diagram and move panels for one :class:`NotebookStepper`.

    Button callbacks run on the kernel's thread; each schedules the async action on the kernel's
    event loop, so the buttons work after the cell has finished. Clicks while an action runs are
    ignored (the buttons are disabled meanwhile).
    """

    def __init__(self, stepper: NotebookStepper) -> None:
        self.stepper = stepper
        self.next_button = widgets.Button(description="Next", icon="step-forward", button_style="primary")
        self.run_button = widgets.Button(description="Run to end", icon="fast-forward")
        self.reset_button = widgets.Button(description="Reset", icon="undo")
        self.status = widgets.HTML()
        self.status.add_class("nba-stepper-status")
        self.diagram = widgets.HTML()
        self.panel = widgets.HTML()
        self.next_button.on_click(lambda _: self.click(self.stepper.next))
        self.run_button.on_click(lambda _: self.click(self.stepper.run_to_end))
        self.reset_button.on_click(lambda _: self.click(self.stepper.reset))
        bar = widgets.HBox([self.next_button, self.run_button, self.reset_button, self.status])
        super().__init__([widgets.HTML(STYLE + STEPPER_STYLE), bar, self.diagram, self.panel])
        self.add_class("nba-stepper")
        self.task: asyncio.Task[None] | concurrent.futures.Future[None] | None = None
        self.error: str | None = None
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self.refresh()

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def click(
        self, action: Callable[[], Awaitable[Any]]
    ) -> asyncio.Task[None] | concurrent.futures.Future[None] | None:
        """Run a button's action on the kernel's event loop; ignored while another action runs.

        Returns what was scheduled (a task, or a future when clicked from another thread), or
        ``None`` when the click was ignored or there is no loop to run on.
        """
        if self.busy or self.stepper.moving:
            return None
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        self.error = None
        scheduled: asyncio.Task[None] | concurrent.futures.Future[None] | None = None
        if loop is not None:
            scheduled = loop.create_task(self._perform(action))
        elif self._loop is not None and self._loop.is_running():
            scheduled = asyncio.run_coroutine_threadsafe(self._perform(action), self._loop)
        else:
            self.error = "no running event loop to make the move on"
        if scheduled is not None and not scheduled.done():
            self.task = scheduled  # a move that already ended (another thread's click) is not busy
        self.refresh()
        return scheduled

    async def _perform(self, action: Callable[[], Awaitable[Any]]) -> None:
        try:
            await action()
        except asyncio.CancelledError:
            self.error = "cancelled"
        except Exception as error:
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self.task = None
            self.refresh()

    def refresh(self) -> None:
        """Show the stepper's current state."""
        stepper = self.stepper
        busy = self.busy or stepper.moving
        if busy:
            text = "working…"
        elif self.error:
            text = self.error
        else:
            text = f"{stepper.status} · {len(stepper.history)} moves"
        with self.hold_sync():
            self.next_button.disabled = busy or stepper.done
            self.run_button.disabled = busy or stepper.done
            self.reset_button.disabled = busy
            self.status.value = (
                f'<span class="nba-muted" data-status="{stepper.status}" data-busy="{str(busy).lower()}">'
                f"{escape(text)}</span>"
            )
            self.diagram.value = pipeline_html(stepper)
            self.panel.value = move_html(stepper)


class NotebookStepper(Stepper):
    """A :class:`Stepper` that shows its widget when displayed and refreshes it after every move."""

    def __init__(self, agent: AssistantAgent, task: Task, cancellation_token: CancellationToken | None = None) -> None:
        super().__init__(agent, task, cancellation_token)
        self._widget: StepperWidget | None = None
        self._display_ids: list[str] = []

    def widget(self) -> StepperWidget:
        """The widget of this stepper (one per stepper, made on first use)."""
        if self._widget is None:
            self._widget = StepperWidget(self)
        return self._widget

    async def next(self) -> StepResult:
        try:
            return await super().next()
        finally:
            self._refresh()

    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            self._refresh()

    async def reset(self) -> None:
        try:
            await super().reset()
        finally:
            self._refresh()

    def _refresh(self) -> None:
        if self._widget is None:
            return
        self._widget.refresh()
        if self._display_ids:
            from IPython.display import update_display

            bundle = self._repr_mimebundle_()
            for display_id in self._display_ids:
                update_display(bundle, raw=True, display_id=display_id)

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        data = self.widget()._repr_mimebundle_(**kwargs) or {}
        data["text/html"] = stepper_html(self)
        data["text/plain"] = repr(self)
        return data

    def _ipython_display_(self) -> None:
        """Display with a display id, so that later moves also update the saved (static) output."""
        from IPython.display import display

        display_id = uuid.uuid4().hex
        self._display_ids.append(display_id)
        display(self._repr_mimebundle_(), raw=True, display_id=display_id)


def step(agent: AssistantAgent, task: Task, cancellation_token: CancellationToken | None = None) -> NotebookStepper:
    """Walk one run of ``agent`` on ``task`` move by move; display the result to get the widget.

    ``await stepper.next()`` makes one move, ``run_to_end()`` all of them, ``run_until(...)`` stops
    at a breakpoint and ``reset()`` restores the context (and a replay script) to walk it again.
    """
    return NotebookStepper(agent, task, cancellation_token)
