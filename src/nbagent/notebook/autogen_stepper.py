"""The widget of an :class:`~nbagent.autogen.stepper.AutoGenStepper`: buttons, the pause, the context.

Drawn with nbagent's renderer (:mod:`nbagent.render`), so every text is escaped, with standard
ipywidgets only (the notebook layer: ``nbagent.step`` and ``nbagent.autogen.step`` give this
stepper, the latter through :func:`nbagent.autogen.register_notebook_stepper`). Displayed as the
notebook's stepper is (:mod:`nbagent.notebook.static_display`): its static copy
(``nba-static-copy``), then the live widget (``nba-stepper-live``). Stable hooks for browser tests:
the root has the classes ``nba-stepper nba-ag-stepper``; the buttons ``nba-ag-next``,
``nba-ag-run`` and ``nba-ag-stop``; the status ``nba-stepper-status`` (``data-status``); the pause
``nba-ag-step`` with ``data-index``, ``data-kind`` and ``data-agent``; the speaking agent's context
``nba-ag-context`` (one ``tr`` per message, ``data-kind``); at a model call the request
``nba-ag-request``; the pauses so far ``nba-ag-history``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import ipywidgets as widgets

from .. import messages as nb
from ..autogen.stepper import AutoGenStep, AutoGenStepper, StepperFinished
from ..context import message_text
from ..records import LLMCall
from ..render import (
    STYLE,
    Markup,
    Options,
    concat,
    el,
    label,
    muted,
    portable,
    streamed_chunks,
    to_html,
    to_text,
    value,
)
from ..trace.context import message_kind
from .click_button import ClickButton
from .static_display import StaticCopyDisplay


def messages_table(messages: Sequence[nb.LLMMessage], css: str) -> Markup:
    """Messages as a table: position, kind, source, text (each escaped)."""
    rows = [
        el(
            "tr",
            el("td", str(position)),
            el("td", message_kind(message)),
            el("td", getattr(message, "source", "") or ""),
            el("td", value(message_text(message), limit=300)),
            data_kind=message_kind(message),
        )
        for position, message in enumerate(messages)
    ]
    head = el("tr", el("th", "#"), el("th", "kind"), el("th", "source"), el("th", "text"))
    if not rows:
        return el("p", "(empty)", class_=f"nba-muted {css}", data_count=0)
    return el("table", el("thead", head), el("tbody", rows), class_=f"nba-context {css}", data_count=len(rows))


def request_html(step: AutoGenStep) -> Markup:
    request = step.request
    if request is None:
        return Markup("")
    tools = ", ".join(tool.get("name", "?") for tool in request.tools) or "none"
    return el(
        "div",
        el("h4", f"The request the wrapped client saw ({len(request.messages)} messages)"),
        muted(f"tools: {tools} · tool_choice: {request.tool_choice}"),
        messages_table(request.messages, "nba-ag-request-messages"),
        class_="nba-ag-request",
    )


def step_html(stepper: AutoGenStepper) -> Markup:
    """The current pause: what it is, who speaks, what passed by, the request, the context."""
    step = stepper.current
    if step is None:
        return el("p", f"{stepper.name}: press Next to start the run.", class_="nba-muted nba-ag-step")
    head = el(
        "div",
        label(f"step {step.index + 1}"),
        " ",
        el("b", step.agent),
        muted(f" · {step.kind}"),
        class_="nba-stepper-head",
    )
    streamed = streamed_chunks([step.streamed]) if step.streamed else None
    passed = concat(to_html(item) for item in step.passed)
    return el(
        "div",
        head,
        streamed,
        to_html(step.item, Options(paused=isinstance(step.item, LLMCall) and step.item.duration_s is None)),
        passed,
        request_html(step),
        el("h4", f"{step.agent}'s model context now ({len(step.context)} messages)"),
        messages_table(step.context, "nba-ag-context"),
        class_="nba-ag-step",
        data_index=step.index,
        data_kind=step.kind,
        data_agent=step.agent,
    )


def history_html(stepper: AutoGenStepper) -> Markup:
    lines = [el("li", to_text(step.item) or step.kind, data_kind=step.kind) for step in stepper.history]
    return el("details", el("summary", f"{len(lines)} steps so far"), el("ol", lines), class_="nba-ag-history")


def static_html(stepper: AutoGenStepper) -> str:
    """The stepper as static HTML (no buttons), for saved notebooks: its static copy."""
    copy = el("div", step_html(stepper), history_html(stepper), class_="nba-stepper nba-ag-stepper nba-static-copy")
    return str(portable(STYLE + copy))


class AutoGenStepperWidget(widgets.VBox):  # type: ignore[misc]
    """Next, Run to end and Stop for one :class:`AutoGenStepper`, and its current pause.

    A button schedules its action on the kernel's event loop (so the buttons work after the cell has
    finished); clicks while a step is being made are ignored.
    """

    def __init__(self, stepper: AutoGenStepper) -> None:
        self.stepper = stepper
        self.next_button = ClickButton(description="Next", icon="step-forward", button_style="primary")
        self.run_button = ClickButton(description="Run to end", icon="fast-forward")
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="danger")
        for button, css in ((self.next_button, "nba-ag-next"), (self.run_button, "nba-ag-run")):
            button.add_class(css)
        self.stop_button.add_class("nba-ag-stop")
        self.status = widgets.HTML()
        self.status.add_class("nba-stepper-status")
        self.panel = widgets.HTML()
        self.history = widgets.HTML()
        self.next_button.on_click(lambda _: self.click(self._next))
        self.run_button.on_click(lambda _: self.click(stepper.run_to_end))
        self.stop_button.on_click(lambda _: self.stop())
        bar = widgets.HBox([self.next_button, self.run_button, self.stop_button, self.status])
        bar.add_class("nba-stepper-bar")
        super().__init__([widgets.HTML(STYLE), bar, self.panel, self.history])
        self.add_class("nba-stepper")
        self.add_class("nba-ag-stepper")
        self.add_class("nba-stepper-live")
        self.task: asyncio.Task[None] | None = None
        self.error: str | None = None
        self.refresh()

    async def _next(self) -> None:
        try:
            await self.stepper.next()
        except StepperFinished:
            pass

    @property
    def busy(self) -> bool:
        return self.task is not None and not self.task.done()

    def click(self, action: Callable[[], Awaitable[Any]]) -> asyncio.Task[None] | None:
        """Run a button's action on the event loop; ignored while another one runs."""
        if self.busy or self.stepper.moving or self.stepper.done:
            return None
        self.error = None
        self.task = asyncio.get_event_loop().create_task(self._perform(action))
        self.refresh()
        return self.task

    def stop(self) -> asyncio.Task[None] | None:
        """Stop the run (AutoGen's CancellationToken fires), also while a step is being made."""
        if self.stepper.done:
            return None
        return asyncio.get_event_loop().create_task(self._perform(self.stepper.aclose))

    async def _perform(self, action: Callable[[], Awaitable[Any]]) -> None:
        try:
            await action()
        except asyncio.CancelledError:
            self.error = "cancelled"
        except Exception as error:
            self.error = f"{type(error).__name__}: {error}"
        finally:
            self.task = None  # not busy any more: the refresh enables the buttons again
            self.stepper.changed()

    def refresh(self) -> None:
        stepper = self.stepper
        busy = self.busy or stepper.moving
        text = "working…" if busy else (self.error or stepper.error or stepper.status)
        with self.hold_sync():
            self.next_button.disabled = busy or stepper.done
            self.run_button.disabled = busy or stepper.done
            self.stop_button.disabled = stepper.done
            self.status.value = muted(
                f"{text} · {len(stepper.history)} steps", data_status=stepper.status, data_busy=str(busy).lower()
            )
            self.panel.value = step_html(stepper)
            self.history.value = history_html(stepper)


class NotebookAutoGenStepper(StaticCopyDisplay[AutoGenStepperWidget], AutoGenStepper):
    """An :class:`AutoGenStepper` that shows its widget when displayed and refreshes it after every
    step (what ``nbagent.step`` gives for an AutoGen agent or team)."""

    def _make_widget(self) -> AutoGenStepperWidget:
        return AutoGenStepperWidget(self)

    def _static_html(self) -> str:
        return static_html(self)
