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

import functools
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
    """Forks of a walk, and the changes it can make before its next move (see the module's text).

    Its widgets are made when first needed (each is a widget model the frontend keeps): the row that gives a
    tool call's result or the model's answer when the walk first pauses before one, *Compare with parent*
    only in a fork's panel, the box of forks at the first fork. Every button is a :class:`ClickButton` sharing
    the walk's one layout and one style."""

    def __init__(self, owner: Owner) -> None:
        self.owner = owner
        parts = owner.parts
        self.fork_button = self._button(words("Fork here"), icon="code-fork", tooltip=words("Fork the walk here"))
        self.fork_button.add_class("nba-fork")
        self.fork_button.on_click(lambda _: owner.click(self.fork))
        self.give_row: widgets.HBox | None = None
        """The tool call's result or error, or the model's answer, to give before the next move (made at the first
        pause before one; its children are the ones the paused move takes, none while there is nothing to give)."""
        self.call_id: widgets.Dropdown | None = None
        self.value: widgets.Text | None = None
        self.give_result: ClickButton | None = None
        self.give_error: ClickButton | None = None
        self.give_timeout: ClickButton | None = None
        self.answer: widgets.Text | None = None
        self.give_answer: ClickButton | None = None
        self.what_if_buttons = {key: self._button("") for key in WHAT_IFS}
        for key, button in self.what_if_buttons.items():
            button.add_class("nba-what-if-button")
            button.add_class(f"nba-what-if-{key.replace('_', '-')}")
            button.on_click(functools.partial(self._ask, key))
        self.what_if_row = widgets.HBox(list(self.what_if_buttons.values()), layout=parts.layout)
        self.what_if_row.add_class("nba-what-if")
        self.note = parts.html()
        self.compare_button: ClickButton | None = None
        self.comparison: widgets.VBox | None = None
        if owner.stepper.parent is not None:  # a fork's panel: its comparison with its parent
            self.compare_button = self._button(words("Compare with parent"), icon="columns")
            self.compare_button.add_class("nba-compare-parent")
            self.compare_button.on_click(lambda _: self.show_comparison())
            self.comparison = widgets.VBox(layout=parts.layout)
        self.forks: widgets.VBox | None = None
        super().__init__(layout=parts.layout)
        self._arrange()
        self.add_class("nba-fork-panel")

    def _ask(self, key: str, _: ClickButton) -> None:
        self.owner.click(lambda: self.what_if(key))

    def _button(self, description: str, **options: Any) -> ClickButton:
        parts = self.owner.parts
        return ClickButton(description=description, layout=parts.layout, style=parts.toggle_style, **options)

    def detached(self) -> list[widgets.Widget]:
        """The give widgets made but not shown now (:class:`~.static_display.Detaching`: closed with the panel)."""
        made = (self.call_id, self.value, self.give_result, self.give_error, self.give_timeout, self.answer)
        shown = self.give_row.children if self.give_row is not None else ()
        return [widget for widget in (*made, self.give_answer) if widget is not None and widget not in shown]

    def _arrange(self) -> None:
        children = [self.give_row, self.what_if_row, self.compare_button, self.note, self.comparison, self.forks]
        self.children = tuple(child for child in children if child is not None)

    def _give_row(self, tool: bool) -> tuple[widgets.Widget, ...]:
        """The give row's children for a tool call (``tool``) or for the model's answer, made the first time."""
        parts = self.owner.parts
        if self.give_row is None:
            self.give_row = widgets.HBox(layout=parts.layout)
            self.give_row.add_class("nba-give-row")
            self._arrange()
        text = {"layout": parts.layout, "style": parts.text_style}  # widths from the stylesheet's classes
        if tool:
            if self.call_id is None or self.value is None:
                self.call_id = widgets.Dropdown(description=words("tool call"), **text)
                self.call_id.add_class("nba-give-call")
                self.value = widgets.Text(placeholder=words("the tool's result or error"), **text)
                self.value.add_class("nba-give-result")
                self.give_result = self._button(words("Give result"))
                self.give_error = self._button(words("Give error"))
                self.give_timeout = self._button(words("Timeout"))
                self.give_result.on_click(lambda _: self._give("result"))
                self.give_error.on_click(lambda _: self._give("error"))
                self.give_timeout.on_click(lambda _: self._give("timeout"))
            return (self.call_id, self.value, self.give_result, self.give_error, self.give_timeout)
        if self.answer is None:
            self.answer = widgets.Text(placeholder=words("the model's answer"), **text)
            self.answer.add_class("nba-give-answer")
            self.give_answer = self._button(words("Give answer"))
            self.give_answer.on_click(lambda _: self._give("answer"))
        return (self.answer, self.give_answer)

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
            if self.forks is None:
                self.forks = widgets.VBox(layout=self.owner.parts.layout)
                self.forks.add_class("nba-forks")
                self._arrange()
            self.forks.children = (*self.forks.children, widget())
            shown = getattr(self.owner.stepper, "shown_forks", None)
            if shown is not None:  # the parent's static copy shows it too
                shown.append(fork)
                self.owner.stepper.changed()  # type: ignore[attr-defined]

    def show_comparison(self) -> None:
        """Show the comparison of this walk (a fork) with its parent."""
        stepper = self.owner.stepper
        if stepper.parent is None or self.comparison is None:
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
        field = self.answer if kind == "answer" else self.value
        text = field.value if field is not None else ""
        try:
            if kind == "answer":
                stepper.give_answer(text)
                done = words("the model's answer will be {text}").format(text=repr(text))
            else:
                call_id = str(self.call_id.value if self.call_id is not None else "")
                if kind == "result":
                    stepper.give_tool_result(call_id, text)
                elif kind == "error":
                    stepper.give_tool_result(call_id, error=text or "Error")
                else:
                    stepper.give_tool_result(call_id, timeout=True)
                given = {
                    "result": "tool call {call_id} will get: result {text}",
                    "error": "tool call {call_id} will get: error {text}",
                }.get(kind, "{call_id} times out")
                done = words(given).format(call_id=call_id, text=repr(text))
        except Exception as error:
            self.owner.error = f"{type(error).__name__}: {error}"
        else:
            self.owner.error = None
            given = words("Next move: {done}").format(done=done)
            self.note.value = str(el("span", given, class_="nba-muted nba-given"))
        self.owner.refresh()

    def refresh(self, busy: bool) -> None:
        """Show the changes the walk can make before its next move."""
        stepper = self.owner.stepper
        upcoming = stepper.upcoming.name if stepper.upcoming is not None and stepper.status == "paused" else None
        calls = stepper.current.tool_calls if upcoming == "tool_execution" and stepper.current is not None else []
        ids = [call.id for call in calls]
        tool, answer = bool(ids) and not busy, upcoming in LLM_MOVES and not busy
        if tool or answer or self.give_row is not None:
            shown = self._give_row(tool) if tool or answer else ()
            if self.give_row is not None and self.give_row.children != shown:
                self.give_row.children = shown
        if self.call_id is not None and list(self.call_id.options) != ids:
            self.call_id.options = ids
            self.call_id.value = ids[0] if ids else None
        self.fork_button.disabled = busy or stepper.done
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
        for give in (self.give_result, self.give_error, self.give_timeout, self.give_answer):
            if give is not None:
                give.disabled = forked
        if upcoming is None or busy:
            self.note.value = ""
        elif forked:
            text = words("this move was forked: make the change in the fork below (or fork here again)")
            self.note.value = str(el("span", text, class_="nba-muted nba-forked"))
