"""The stepper widget's Fork here button and what a walk can change before its next move.

:class:`ForkPanel` sits under a stepper's widget. *Fork here* makes a fork of the walk
(:meth:`~nbagent.stepper.Stepper.fork`) and shows the fork's own stepper widget below. While a walk
is paused before a model call, a text can be given as the model's answer; before the tools run, a
tool call (chosen by its id) can be given a result, an error or a timeout
(:meth:`~nbagent.stepper.Stepper.give_answer`, :meth:`~nbagent.stepper.Stepper.give_tool_result`).
A fork's panel has *Compare with parent*, which shows :func:`nbagent.compare` of the two walks.

The *What if* row asks a question of the walk in one click (:mod:`nbagent.whatif`): the tool fails, the
model calls a second tool, another iteration limit, reflection the other way. Each makes the fork where
the change first matters, walks it to its end and shows it below with its comparison (what changed, in
words). A question the walk cannot be asked yet is disabled, its tooltip saying why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import ipywidgets as widgets

from ..language import words
from ..render import el
from ..stepper import LLM_MOVES, Stepper
from ..whatif import WHAT_IFS, ask, what_ifs
from .click_button import ClickButton
from .compare_view import compare
from .static_display import SharedParts


class Owner(Protocol):
    """What the panel needs of the stepper widget it sits in."""

    stepper: Stepper
    error: str | None
    parts: SharedParts

    def click(self, action: Callable[[], Awaitable[Any]]) -> object: ...

    def refresh(self) -> None: ...


class ForkPanel(widgets.VBox):  # type: ignore[misc]
    """Forks of a walk, and the changes it can make before its next move (see the module's text)."""

    def __init__(self, owner: Owner) -> None:
        self.owner = owner
        parts = owner.parts
        shared = {"layout": parts.layout, "style": parts.button_style}
        self.fork_button = ClickButton(
            description=words("Fork here"),
            icon="code-fork",
            tooltip=words("Fork the walk here"),
            layout=parts.layout,
            style=parts.toggle_style,
        )
        self.fork_button.add_class("nba-fork")
        self.fork_button.on_click(lambda _: owner.click(self.fork))
        self.call_id = widgets.Dropdown(description="tool call", layout=widgets.Layout(width="16em"))
        text = {"layout": widgets.Layout(width="24em"), "style": parts.text_style}  # the two text boxes share them
        self.value = widgets.Text(placeholder="the tool's result or error", **text)
        self.value.add_class("nba-give-result")
        self.answer = widgets.Text(placeholder="the model's answer", **text)
        self.answer.add_class("nba-give-answer")
        self.give_result = widgets.Button(description=words("Give result"), **shared)
        self.give_error = widgets.Button(description=words("Give error"), **shared)
        self.give_timeout = widgets.Button(description=words("Timeout"), **shared)
        self.give_answer = widgets.Button(description=words("Give answer"), **shared)
        self.compare_button = widgets.Button(
            description=words("Compare with parent"),
            icon="columns",
            layout=widgets.Layout(width="auto"),  # its own: shown and hidden on its own
            style=parts.button_style,
        )
        self.give_result.on_click(lambda _: self._give("result"))
        self.give_error.on_click(lambda _: self._give("error"))
        self.give_timeout.on_click(lambda _: self._give("timeout"))
        self.give_answer.on_click(lambda _: self._give("answer"))
        self.compare_button.on_click(lambda _: self.show_comparison())
        self.what_if_buttons = {key: widgets.Button(**shared) for key in WHAT_IFS}
        for key, button in self.what_if_buttons.items():
            button.add_class("nba-what-if-button")
            button.add_class(f"nba-what-if-{key.replace('_', '-')}")
            button.on_click(lambda _, key=key: owner.click(lambda: self.what_if(key)))
        self.what_if_row = widgets.HBox(
            list(self.what_if_buttons.values()),
            layout=parts.layout,
        )
        self.what_if_row.add_class("nba-what-if")
        self.note = parts.html()
        self.tool_row = widgets.HBox([self.call_id, self.value, self.give_result, self.give_error, self.give_timeout])
        self.answer_row = widgets.HBox([self.answer, self.give_answer])
        self.forks = widgets.VBox(layout=parts.layout)
        self.comparison = widgets.VBox(layout=parts.layout)
        self.forks.add_class("nba-forks")
        children = [
            self.tool_row,
            self.answer_row,
            self.what_if_row,
            self.compare_button,
            self.note,
            self.comparison,
            self.forks,
        ]
        super().__init__(children, layout=parts.layout)
        self.add_class("nba-fork-panel")

    async def fork(self) -> Stepper:
        """Fork the walk where it is paused and show the fork's widget below."""
        fork = await self.owner.stepper.fork()
        self._show(fork)
        return fork

    async def what_if(self, key: str) -> Stepper:
        """Answer a what-if question with a fork walked to its end, shown below with its comparison."""
        fork = await ask(self.owner.stepper, key)
        self._show(fork)
        panel = getattr(getattr(fork, "widget", lambda: None)(), "fork_panel", None)
        if isinstance(panel, ForkPanel):
            panel.show_comparison()
        return fork

    def _show(self, fork: Stepper) -> None:
        """Show a fork's widget below (and in the walk's static copy)."""
        widget = getattr(fork, "widget", None)
        if widget is not None:
            self.forks.children = (*self.forks.children, widget())
            shown = getattr(self.owner.stepper, "shown_forks", None)
            if shown is not None:  # the parent's static copy shows it too
                shown.append(fork)
                self.owner.stepper.changed()  # type: ignore[attr-defined]

    def show_comparison(self) -> None:
        """Show the comparison of this walk (a fork) with its parent."""
        stepper = self.owner.stepper
        if stepper.parent is None:
            return
        try:
            view = compare(stepper.parent, stepper, labels=("parent", "fork"))
        except Exception as error:  # a walk that has not moved yet
            self.owner.error = f"{type(error).__name__}: {error}"
        else:
            self.comparison.children = (view.widget(),)
        self.owner.refresh()

    def _give(self, kind: str) -> None:
        stepper = self.owner.stepper
        text = self.answer.value if kind == "answer" else self.value.value
        try:
            if kind == "answer":
                stepper.give_answer(text)
                done = f"the model's answer will be {text!r}"
            else:
                call_id = str(self.call_id.value)
                if kind == "result":
                    stepper.give_tool_result(call_id, text)
                elif kind == "error":
                    stepper.give_tool_result(call_id, error=text or "Error")
                else:
                    stepper.give_tool_result(call_id, timeout=True)
                done = f"tool call {call_id} will get: {kind} {text!r}" if kind != "timeout" else f"{call_id} times out"
        except Exception as error:
            self.owner.error = f"{type(error).__name__}: {error}"
        else:
            self.owner.error = None
            self.note.value = str(el("span", f"Next move: {done}", class_="nba-muted nba-given"))
        self.owner.refresh()

    def refresh(self, busy: bool) -> None:
        """Show the changes the walk can make before its next move."""
        stepper = self.owner.stepper
        upcoming = stepper.upcoming.name if stepper.upcoming is not None and stepper.status == "paused" else None
        calls = stepper.current.tool_calls if upcoming == "tool_execution" and stepper.current is not None else []
        ids = [call.id for call in calls]
        if list(self.call_id.options) != ids:
            self.call_id.options = ids
            self.call_id.value = ids[0] if ids else None
        self.fork_button.disabled = busy or stepper.done
        self.tool_row.layout.display = None if ids and not busy else "none"
        self.answer_row.layout.display = None if upcoming in LLM_MOVES and not busy else "none"
        self.compare_button.layout.display = None if stepper.parent is not None else "none"
        for what in what_ifs(stepper):
            button = self.what_if_buttons[what.key]
            button.description = what.question
            button.tooltip = what.why_not or words(
                "Fork the walk where this first matters and walk the fork to its end"
            )
            button.disabled = busy or what.at is None
        # A move already forked: its changes belong to the fork (a change typed above a fork's buttons went
        # to the parent); this walk's give buttons are disabled and say so.
        forked = any(
            fork.fork_source is not None and fork.fork_source.moves == len(stepper.history)
            for fork in getattr(stepper, "shown_forks", ())
        )
        for button in (self.give_result, self.give_error, self.give_timeout, self.give_answer):
            button.disabled = forked
        if upcoming is None or busy:
            self.note.value = ""
        elif forked:
            text = words("this move was forked: make the change in the fork below (or fork here again)")
            self.note.value = str(el("span", text, class_="nba-muted nba-forked"))
