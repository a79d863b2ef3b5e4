"""The step-by-step widget: Next, Run to end and Reset over a :class:`~nbagent.stepper.Stepper`.

``nbagent.step(agent, "task")`` returns a :class:`NotebookStepper`: the programmatic stepper, which
shows this widget when displayed and refreshes it after every move, whether the move was made by a
button or by ``await stepper.next()`` in a later cell. The widget shows the pipeline (STEP 1 -> 5 and
the tool loop with its exits) with the current move highlighted, the move's STEP, method and
explanation, its events, the model context with the rows it added or changed, and at LLM moves the
exact request and the raw ``CreateResult``. Everything a model or a tool said is escaped.

The diagram is drawn from the loop's own description (``records.MOVES``, by
:func:`nbagent.render.pipeline`) and the agent's ``loop_settings``; the panels by the one renderer.

Displayed, a stepper is two outputs: its static copy (``nba-static-copy``: the diagram and panels
of its last state as HTML, updated after every move) and the live widget (``nba-stepper-live``).
The stylesheet hides the copy while the widget shows, and hides a widget output that shows no
live stepper (a reopened notebook: the widget manager has no model for it) so the copy shows
instead: a saved notebook never shows "Error displaying widget: model not found", and nbconvert
shows the copy, with or without saved widget state. Without saved widget state (JupyterLab's
default), the widget manager of a reopened trusted notebook still logs "widget model not found" once
in the browser's console for each stepper whose widget was live when it was saved: the output names a
model only the kernel that made it had, and the widget renderer of ipywidgets' JupyterLab manager
(``WidgetRenderer.renderModel``, used by Notebook 7 too) looks the model up (``get_model`` waits 2 s,
then throws) and logs the miss; it never falls back to the output's ``text/html``, and only an
output whose model id is empty (blanked by the frontend when a widget is closed while a page shows
it) is skipped. Nothing in the kernel sees the notebook being saved. A walk kept to read is ended
with :meth:`~.static_display.StaticCopyDisplay.close_widgets`: the widget's output is emptied and
its models closed, so the saved notebook names none (a finished walk keeps its widget until then:
its Reset walks it again).

CSS hooks (stable, tests use them): ``nba-node`` per diagram box with ``data-move`` and
``data-state`` (``current``, ``visited``, ``upcoming``, ``unused``, ``idle``); ``nba-edge-group``
per arrow with ``data-from``, ``data-to`` and ``data-state`` (``taken``, ``unused``, ``idle``);
``nba-stepper-head`` with ``data-step``, ``data-move`` and ``data-index``; ``nba-ctx-row`` with
``data-change``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, cast

import ipywidgets as widgets

from .. import _check as check
from ..agent import AssistantAgent, check_entry, replayed
from ..agent_input import Task
from ..cancellation import CancellationToken
from ..context import message_text
from ..language import words
from ..messages import ModelClientStreamingChunkEvent
from ..predict import Quiz
from ..records import FOREIGN_STEPPER, MOVES
from ..render import (
    EMPTY,
    STYLE,
    Markup,
    Options,
    concat,
    el,
    label,
    muted,
    pipeline,
    portable,
    streamed_chunks,
    to_html,
    value,
)
from ..stepper import MoveUndone, Stepper, StepResult
from ..sync import entry_point
from ..trace.compare import Comparison
from .click_button import ClickButton
from .fork_panel import ForkPanel
from .predict_panel import PredictPanel, quiz_html
from .static_display import SharedParts, StaticCopyDisplay

if TYPE_CHECKING:
    from ..trace.replay import Replay


def pipeline_html(stepper: Stepper) -> Markup:
    """The loop as an SVG diagram (drawn from ``MOVES``), the current move highlighted and the next one outlined."""
    upcoming = "add_messages" if stepper.status == "ready" else stepper.upcoming.name if stepper.upcoming else None
    svg = pipeline(
        [stepper.agent.loop_settings],  # what it makes impossible is drawn unused
        visited=[result.move.name for result in stepper.history],
        current=stepper.current.move.name if stepper.current is not None else None,
        upcoming=upcoming,
        ended=stepper.status == "finished",
    )
    return el("div", svg, class_="nba-diagram")  # it scrolls in a narrow notebook: its text keeps its size


def _events_html(result: StepResult) -> Markup:
    """The events of one move; streamed chunks are shown joined, as the text they built."""
    options = Options(result.move.name)
    blocks: list[Markup] = []
    chunks: list[str] = []
    for event in result.events:
        if isinstance(event, ModelClientStreamingChunkEvent):
            chunks.append(event.content)
            continue
        if chunks:
            blocks.append(streamed_chunks(chunks, options.badge))
            chunks = []
        blocks.append(to_html(event, options))
    if chunks:
        blocks.append(streamed_chunks(chunks, options.badge))
    return concat(blocks) if blocks else el("div", words("no events in this move"), class_="nba-muted")


def _cell(item: object) -> str:
    """A DataFrame cell as text; missing values are empty."""
    return str(item) if isinstance(item, (str, int)) else ""


_CONTEXT_COLUMNS = ("#", "kind", "source", "text", "tool calls", "thought", "tokens", "added by", "change")


def context_table_html(result: StepResult | None, stepper: Stepper) -> Markup:
    """The model context as a table; rows this move added or changed are highlighted."""
    frame = result.context if result is not None else stepper.agent.context_df().assign(change="")
    if frame.empty:
        return el("div", words("the model context is empty"), class_="nba-muted nba-stepper-context", data_rows=0)
    rows = [
        el(
            "tr",
            el("td", row.position),
            el("td", _cell(row.kind)),
            el("td", _cell(row.source)),
            el("td", value(row.text, limit=300, max_chars=4000)),
            el("td", ", ".join(call["name"] for call in row.tool_calls or [])),
            el("td", value(row.thought, limit=200, max_chars=4000) if isinstance(row.thought, str) else None),
            el("td", row.tokens),
            el("td", f"STEP {row.step} {row.move}" if isinstance(row.move, str) else None),
            el("td", words(_cell(row.change)) if row.change else ""),
            class_="nba-ctx-row",
            data_change=_cell(row.change),
            data_kind=_cell(row.kind),
        )
        for row in frame.itertuples()
    ]
    head = el("tr", [el("th", words(name)) for name in _CONTEXT_COLUMNS])
    return el("table", head, rows, class_="nba-table nba-stepper-context", data_rows=len(frame))


def request_html(result: StepResult) -> Markup:
    """Exactly what the model received at this move, and the raw ``CreateResult`` it returned."""
    call = result.llm_call
    if call is None:
        return EMPTY
    request = call.request
    messages = [
        el(
            "tr",
            el("td", i),
            el("td", message.type),
            el("td", getattr(message, "source", "") or ""),
            el("td", value(message_text(message), limit=300, max_chars=4000)),
        )
        for i, message in enumerate(request.messages)
    ]
    tools = [
        el(
            "li",
            label(tool.get("name", "")),
            tool.get("description", ""),
            el(
                "details",
                el("summary", words("parameters")),
                value(
                    json.dumps(tool.get("parameters", {}), indent=2, ensure_ascii=False),
                    limit=2000,
                    css="nba-tool-args",
                ),
            ),
        )
        for tool in request.tools
    ]
    json_output = request.json_output
    output = json_output.__name__ if isinstance(json_output, type) else repr(json_output)
    raw = words("not returned (the call failed)") if call.result is None else call.result.model_dump_json(indent=2)
    sent = el(
        "div",
        el(
            "div",
            "tool_choice=",
            el("code", request.tool_choice),
            " · json_output=",
            el("code", output),
            f" · streaming={call.streaming}",
        ),
        el("table", el("tr", el("th", "#"), el("th", "message"), el("th", "source"), el("th", "content")), messages,
           class_="nba-table"),
        el("div", label(words("tools ({count})").format(count=len(request.tools)))),
        el("ul", tools, class_="nba-stepper-tools"),
        class_="nba-stepper-request",
        data_messages=len(request.messages),
        data_tools=len(request.tools),
        data_tool_choice=request.tool_choice,
    )  # fmt: skip
    return (
        el("h4", words("Request sent to {model} ({purpose} call)").format(model=call.model, purpose=call.purpose))
        + sent
        + el("h4", words("Raw CreateResult"))
        + el("div", value(raw, limit=1500), class_="nba-stepper-result")
        + (el("div", call.error, class_="nba-event nba-error") if call.error else EMPTY)
    )


def _next_html(stepper: Stepper) -> Markup:
    if stepper.status == "ready":
        text = words("Next: STEP {step} · {title}").format(step=1, title=MOVES["add_messages"].title)
    elif stepper.upcoming is not None:
        info = stepper.upcoming.info
        text = words("Next: STEP {step} · {title}").format(step=info.step, title=info.title) + f" ({info.method})"
    else:
        text = words("The run is over ({status}). Reset to walk it again.").format(status=stepper.status)
    return el("div", text, class_="nba-stepper-next", data_status=stepper.status)


def move_html(stepper: Stepper) -> Markup:
    """The panels of the last move: header, explanation, events, context, and request/result at LLM moves."""
    result = stepper.current
    if result is None:
        task = "\n".join(message.to_text() for message in stepper.messages)
        return concat(
            el(
                "div",
                words("Ready to walk the loop"),
                class_="nba-stepper-head",
                data_step=0,
                data_move="",
                data_index=0,
            ),
            el("p", words("Task for {name}:").format(name=stepper.agent.name), class_="nba-stepper-explanation"),
            value(task),
            _next_html(stepper),
            el("h4", words("Model context")),
            context_table_html(None, stepper),
        )
    error = None
    if result.error is not None:
        error = el("div", f"{type(result.error).__name__}: {result.error}", class_="nba-event nba-error")
    return concat(
        to_html(result.move, Options(number=result.index)),
        _next_html(stepper),
        error,
        el("h4", words("Events of this move")),
        _events_html(result),
        el(
            "h4",
            words("Model context after this move (+{added} added, {changed} changed)").format(
                added=len(result.added), changed=len(result.changed)
            ),
        ),
        context_table_html(result, stepper),
        request_html(result),
    )


def replay_html(stepper: Stepper) -> Markup:
    """What a walk of a trace's replay plays and cannot reproduce (as the live view's title); else empty."""
    replay = stepper.replay
    if replay is None:
        return EMPTY
    fork = "a fork of the " if stepper.parent is not None else ""
    return el(
        "div",
        el("div", fork + replay.title, class_="nba-replay-title"),
        muted(replay.limits),
        class_="nba-replay",
    )


def fork_title(stepper: Stepper) -> Markup:
    """A fork's title (empty for a walk that is no fork): ``Fork of run <first 8 of the parent's run> at move
    N: <what was changed on it>``, the parent's full run id on hover; a what-if fork's question first."""
    parent = stepper.parent
    if parent is None:
        return EMPTY
    source = stepper.fork_source
    run = source.run_id if source is not None else (parent.run_id or "")
    at = source.moves if source is not None else 0
    change = "; ".join(stepper.changes) or words("no change yet")
    text = words("Fork of run {run} at move {move}: {change}").format(run=run[:8], move=at, change=change)
    asked = el("span", stepper.what_if + " ", class_="nba-what-if-question") if stepper.what_if else None
    return el("div", asked, text, class_="nba-fork-title", title=run)


_WHAT_CHANGED: weakref.WeakKeyDictionary[Stepper, tuple[tuple[object, ...], Markup]] = weakref.WeakKeyDictionary()
"""Per what-if fork, its sentences and the state of both walks they were read at (reading both runs' frames
takes about 0.2 s: the parent's static copy is drawn after each of its moves)."""


def what_if_html(stepper: Stepper) -> Markup:
    """What changed from a what-if fork's parent to it, in words (empty for any other walk; its title asks the
    question)."""
    parent = stepper.parent
    if stepper.what_if is None or parent is None or parent.run_id is None or stepper.run_id is None:
        return EMPTY
    state = (parent.run_id, len(parent.history), parent.status, stepper.run_id, len(stepper.history), stepper.status)
    cached = _WHAT_CHANGED.get(stepper)
    if cached is not None and cached[0] == state:
        return cached[1]
    runs = (parent.agent.trace, parent.run_id), (stepper.agent.trace, stepper.run_id)
    sentences = Comparison(*runs, labels=("parent", "fork")).sentences()
    said = el("ul", [el("li", sentence) for sentence in sentences], class_="nba-compare-sentences nba-what-if-answer")
    _WHAT_CHANGED[stepper] = (state, said)
    return said


def _status_text(stepper: Stepper) -> str:
    return words("{status} · {moves} moves").format(status=stepper.status, moves=len(stepper.history))


def stepper_html(stepper: Stepper) -> str:
    """The whole widget as static HTML (no buttons), for saved notebooks: its static copy (with the
    forks its Fork here button made, each below, as their widgets are)."""
    return str(portable(STYLE + _stepper_copy(stepper)))


def _stepper_copy(stepper: Stepper, *, nested: bool = False) -> Markup:
    """A walk's copy (``nested``: a fork's, inside its parent's), its forks' copies nested in it."""
    forks = [_stepper_copy(fork, nested=True) for fork in getattr(stepper, "shown_forks", ())]
    status = el(
        "div",
        muted(f"{stepper.agent.name}: {_status_text(stepper)} " + words("(a saved copy: run the cell to step it)")),
        class_="nba-stepper-status",
        data_status=stepper.status,
    )
    classes = ["nba-stepper", *(["nba-fork-walk"] if stepper.parent is not None else [])]
    copy = el(
        "div",
        fork_title(stepper),
        what_if_html(stepper),
        status,
        replay_html(stepper),
        quiz_html(stepper.quiz) if isinstance(stepper, NotebookStepper) else EMPTY,
        pipeline_html(stepper),
        move_html(stepper),
        *forks,
        class_=" ".join([*classes, *([] if nested else ["nba-static-copy"])]),
    )
    return copy


class StepperWidget(widgets.VBox):  # type: ignore[misc]
    """Buttons, pipeline diagram and move panels for one :class:`NotebookStepper`.

    Button callbacks run on the kernel's thread; each schedules the async action on the kernel's
    event loop, so the buttons work after the cell has finished. Clicks while an action runs are
    ignored (the buttons are disabled meanwhile), and so is the second click of a double click made
    before the browser saw the first one taken (:class:`~.click_button.ClickButton`). Pause, enabled
    while a move is made, pauses the walk at a move boundary within a second (not cancelled): after
    the move in progress, or before it when it is slow (it is undone: :class:`~nbagent.stepper.MoveUndone`).
    """

    def __init__(self, stepper: NotebookStepper) -> None:
        self.stepper = stepper
        # A double click makes one move: each click says the state it was made against (ClickButton).
        self.parts = parts = SharedParts()  # one layout and style for its widgets, not one each
        toggle = {"layout": parts.layout, "style": parts.toggle_style}
        self.next_button = ClickButton(description=words("Next"), icon="step-forward", button_style="primary", **toggle)
        self.run_button = ClickButton(description=words("Run to end"), icon="fast-forward", **toggle)
        self.reset_button = ClickButton(description=words("Reset"), icon="undo", **toggle)
        self.pause_button = ClickButton(description=words("Pause"), icon="pause", disabled=True, **toggle)
        self.pause_button.add_class("nba-pause")
        self.pause_button.on_click(lambda _: self.pause())
        self.status = parts.html()
        self.status.add_class("nba-stepper-status")
        self.head = parts.html()  # the stylesheet; a fork's title; a trace's replay: what it cannot reproduce
        self.panel = parts.html()  # the loop's diagram, then the panels of the last move
        self.next_button.on_click(lambda _: self.click(self.stepper.next))
        self.run_button.on_click(lambda _: self.click(self.stepper.run_to_end))
        self.reset_button.on_click(lambda _: self.click(self.stepper.reset))
        self.fork_panel = ForkPanel(self)  # Fork here, and the changes a walk can make (issue 26)
        self.predict_panel = PredictPanel(self, stepper.quiz)  # predict mode (issue 44)
        self.bar = widgets.HBox(
            [
                self.next_button,
                self.run_button,
                self.pause_button,
                self.reset_button,
                self.fork_panel.fork_button,
                self.predict_panel.toggle,
                self.status,
            ],
            layout=parts.layout,
        )
        self.bar.add_class("nba-stepper-bar")
        self.predict_shown = False
        super().__init__([self.head, self.bar, self.panel, self.fork_panel], layout=parts.layout)
        self.add_class("nba-stepper")
        self.add_class("nba-stepper-live")
        if stepper.parent is not None:  # drawn nested in its parent's widget, its controls inside it
            self.add_class("nba-fork-walk")
        self.task: asyncio.Task[None] | None = None
        self.error: str | None = None
        self.paused_at: float | None = None
        """When Pause was clicked (``time.perf_counter()``), until the walk has paused."""
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self.refresh()

    def detached(self) -> list[widgets.Widget]:
        """Widgets it made that no box shows now (:class:`~.static_display.Detaching`): predict mode's choice
        buttons kept for a later question."""
        return list(self.predict_panel.detached())

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
        if loop is None and self._loop is not None and self._loop.is_running():
            # Another thread: the widget's state is the loop's alone, so the move, the "working…"
            # refresh and the one after all run there, in that order (a refresh from this thread
            # could land after the loop's and show the state from before the move).
            return asyncio.run_coroutine_threadsafe(self._perform(action, announce=True), self._loop)
        self.error = None
        scheduled: asyncio.Task[None] | None = None
        if loop is not None:
            scheduled = self.task = loop.create_task(self._perform(action))
        else:
            self.error = "no running event loop to make the move on"
        self.refresh()
        return scheduled

    def pause(self) -> None:
        """Stop "Run to end" after the move in progress (the Pause button)."""
        if self.busy:
            self.paused_at = time.perf_counter()
            self.stepper.pause()
            self.refresh()

    async def _perform(self, action: Callable[[], Awaitable[Any]], announce: bool = False) -> None:
        if announce:  # clicked from another thread: this task is the busy one from here on
            self.error = None
            self.task = asyncio.current_task()
            self.refresh()
        try:
            await action()
        except MoveUndone as undone:  # Pause cancelled a slow Next: paused before the move, as before it
            self.error = str(undone)
        except asyncio.CancelledError:
            self.error = "cancelled"
        except Exception as error:
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self.task = None
            self.paused_at = None
            self.refresh()

    def refresh(self) -> None:
        """Show the stepper's current state."""
        stepper = self.stepper
        busy = self.busy or stepper.moving
        if busy:
            text = words("pausing…") if self.paused_at is not None else words("working…")
        elif self.error:
            text = self.error
        else:
            text = _status_text(stepper)
        with self.hold_sync():
            self.next_button.disabled = busy or stepper.done
            self.run_button.disabled = busy or stepper.done
            self.reset_button.disabled = busy
            self.pause_button.disabled = not busy or self.paused_at is not None
            self.status.value = muted(text, data_status=stepper.status, data_busy=str(busy).lower())
            self.head.value = STYLE + fork_title(stepper) + replay_html(stepper)
            self.panel.value = pipeline_html(stepper) + move_html(stepper)
            self.fork_panel.refresh(busy)
            self.predict_panel.refresh(busy)
            predict = self.predict_panel.box  # made when predict mode is first on: shown under the bar from then
            if predict is not None and not self.predict_shown:
                self.predict_shown = True
                self.children = (self.head, self.bar, predict, self.panel, self.fork_panel)


class NotebookStepper(StaticCopyDisplay[StepperWidget], Stepper):
    """A :class:`Stepper` that shows its widget when displayed and refreshes it after every move."""

    def __init__(
        self,
        agent: AssistantAgent,
        task: Task,
        cancellation_token: CancellationToken | None = None,
        *,
        predict: bool = False,
    ) -> None:
        super().__init__(agent, task, cancellation_token)
        self.quiz = Quiz(self, active=predict)
        """Predict mode (:mod:`nbagent.predict`): on with ``predict=True`` or the widget's Predict toggle."""
        self.shown_forks: list[NotebookStepper] = []
        """The forks its widget's Fork here button made: its static copy shows them below, as the widget does."""

    def changed(self) -> None:
        super().changed()
        parent = self.parent
        if isinstance(parent, NotebookStepper) and self in parent.shown_forks:
            parent.changed()  # the parent's static copy holds this fork's

    def _make_widget(self) -> StepperWidget:
        return StepperWidget(self)

    def _static_html(self) -> str:
        return stepper_html(self)

    @entry_point("stepper.next()")
    async def next(self) -> StepResult:
        question = self.quiz.question  # asked before the move, checked after it (a skip if nothing was picked)
        try:
            result = await super().next()
            self.quiz.record(question, result)
            return result
        finally:
            self.changed()

    @entry_point("stepper.aclose()")
    async def aclose(self) -> None:
        try:
            await super().aclose()
        finally:
            self.changed()

    @entry_point("stepper.reset()")
    async def reset(self) -> None:
        try:
            await super().reset()
            self.quiz.reset()
        finally:
            self.changed()


def step(
    agent: AssistantAgent | Replay | object,
    task: Task = None,
    cancellation_token: CancellationToken | None = None,
    *,
    predict: bool = False,
) -> NotebookStepper | Any:
    """Walk one run of ``agent`` on ``task`` move by move; display the result to get the widget.

    ``await stepper.next()`` makes one move, ``run_to_end()`` all of them, ``run_until(...)`` stops
    at a breakpoint and ``reset()`` restores the context (and a replay script) to walk it again.
    ``predict=True`` starts in predict mode (:mod:`nbagent.predict`): before each move with a choice the
    learner picks what comes next (the widget's buttons, or ``await stepper.quiz.answer(key)``), the
    move checks it, and ``stepper.quiz.score`` is the walk's score.
    An AutoGen agent or team is walked item by item of its stream (:mod:`nbagent.autogen.stepper`).
    """
    source = agent
    agent, task = replayed("nbagent.step", agent, task)  # a trace's replay: its agent and recorded task
    check.boolean("nbagent.step", "predict", predict)
    foreign = FOREIGN_STEPPER(agent, task, cancellation_token)  # AutoGen's: nbagent.autogen.step, with its widget
    if foreign is not None:
        if predict:
            raise check.wrong_value(
                "nbagent.step",
                "predict",
                "False for an AutoGen agent or team",
                predict,
                "predict mode asks about nbagent's loop (STEP 1-5); an AutoGen agent is walked item by item of its "
                "stream: walk an nbagent AssistantAgent with predict=True",
            )
        return foreign
    check_entry("nbagent.step", agent, task, cancellation_token)
    if TYPE_CHECKING:  # for the type checker: check_entry refused anything else
        assert isinstance(agent, AssistantAgent)
    stepper = NotebookStepper(agent, task, cancellation_token, predict=predict)
    if source is not agent:  # a trace's replay: the widget says what it plays and cannot reproduce
        stepper.replay = cast("Replay", source)
    return stepper
