"""The stepper widget's predict mode: the question before the next move, its choices as buttons, the verdict.

:class:`PredictPanel` draws a walk's :class:`~nbagent.predict.Quiz` (the logic is there, below the
notebook layer): the question, one button per choice (Tab reaches them, Enter or Space picks one;
after the move the first choice of the next question has the focus), then the verdict of the move
(right or wrong, what the loop did and why) and the score. :func:`quiz_html` is the part both the
widget and the saved notebook's static copy show: every question asked so far with the learner's
answer and its verdict, the question waiting with its choices, the score.

CSS hooks (tests use them): ``nba-predict`` (``data-active``), ``nba-predict-question`` (``data-move``,
``data-number``), ``nba-predict-choice`` per choice button (and ``nba-choice-<n>``, its position),
``nba-predict-verdict`` (``data-verdict``), ``nba-predict-log`` with one
``nba-predict-item`` (``data-verdict``) per question, ``nba-predict-score`` (``data-right``,
``data-answered``).
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable
from typing import Any, Protocol

import ipywidgets as widgets

from ..language import words
from ..predict import Prediction, Question, Quiz
from ..render import EMPTY, Markup, el
from .click_button import ClickButton
from .static_display import SharedParts

_MARKS = {"right": "✓", "wrong": "✗", "skipped": "–"}


class Owner(Protocol):
    """What the panel needs of the stepper widget it sits in."""

    parts: SharedParts

    def click(self, action: Callable[[], Awaitable[Any]]) -> object: ...


def _verdict_text(prediction: Prediction) -> str:
    verdict = prediction.verdict
    if verdict == "right":
        return words("Right: {what}.").format(what=prediction.actual_label)
    if verdict == "wrong":
        return words("Not quite: you said {picked}; the loop went to {what}.").format(
            picked=prediction.question.label_of(prediction.picked), what=prediction.actual_label
        )
    return words("Skipped: the loop went to {what}.").format(what=prediction.actual_label)


def verdict_html(prediction: Prediction | None) -> Markup:
    """The verdict of the last move: right or wrong, what the loop did and the one-line reason."""
    if prediction is None:
        return EMPTY
    verdict = prediction.verdict
    return el(
        "div",
        el("span", f"{_MARKS[verdict]} {_verdict_text(prediction)}", class_="nba-predict-mark"),
        " ",
        el("span", prediction.reason, class_="nba-predict-reason") if prediction.reason else None,
        class_="nba-predict-verdict",
        data_verdict=verdict,
        role="status",
    )


def question_html(question: Question | None, *, choices: bool) -> Markup:
    """The question waiting (``choices``: its choices listed too, for a copy without buttons)."""
    if question is None:
        return EMPTY
    listed = el("ol", [el("li", choice.label) for choice in question.choices]) if choices else None
    return el(
        "div",
        el("div", words("Predict move {number}:").format(number=question.number), " ", el("b", question.text)),
        listed,
        class_="nba-predict-question",
        data_move=question.move,
        data_number=question.number,
    )


def score_html(quiz: Quiz) -> Markup:
    score = quiz.score
    return el(
        "div",
        words("Score: {score}").format(score=str(score)),
        class_="nba-predict-score",
        data_right=score.right,
        data_answered=score.answered,
        data_skipped=score.skipped,
    )


def log_html(quiz: Quiz) -> Markup:
    """Every question asked in the walk, the learner's answer and its verdict, and the score."""
    if not quiz.predictions:
        return EMPTY
    items = [
        el(
            "li",
            el("span", _MARKS[prediction.verdict], class_="nba-predict-mark"),
            f" {words('move {number}').format(number=prediction.question.number)} · {prediction.question.text} ",
            words("you said: {picked}").format(picked=prediction.question.label_of(prediction.picked)),
            " · ",
            words("the loop: {what}").format(what=prediction.actual_label),
            el("div", prediction.reason, class_="nba-predict-reason") if prediction.reason else None,
            class_="nba-predict-item",
            data_verdict=prediction.verdict,
        )
        for prediction in quiz.predictions
    ]
    return el("details", el("summary", score_html(quiz)), el("ul", items, class_="nba-predict-log"), open=True)


def quiz_html(quiz: Quiz, *, live: bool | None = False) -> Markup:
    """What the predict mode shows as HTML: the questions so far with the answers and the score, the last
    verdict, and the question waiting (its choices listed when not ``live``: the widget draws them as
    buttons under it; ``live`` while a move is made: no question). Empty when predict mode was never on
    in this walk."""
    if not quiz.active and not quiz.predictions:
        return EMPTY
    question = None if live is None else quiz.question
    return el(
        "div",
        el("div", words("Predict mode"), class_="nba-predict-title"),
        log_html(quiz),
        verdict_html(quiz.last),
        question_html(question, choices=not live),
        class_="nba-predict",
        data_active=str(quiz.active).lower(),
    )


class PredictPanel:
    """A walk's predict mode in its widget (see the module's text): the Predict toggle (in the widget's bar) and,
    made when predict mode is first on (its widget models: the box, the question and verdict, the choices),
    :attr:`box`, which the widget shows under its bar."""

    def __init__(self, owner: Owner, quiz: Quiz) -> None:
        self.owner, self.quiz = owner, quiz
        parts = owner.parts
        self.toggle = widgets.ToggleButton(
            value=quiz.active,
            description=words("Predict"),
            icon="question",
            tooltip=words("Predict each move before it is made"),
            layout=parts.layout,
            style=parts.toggle_style,
        )
        self.toggle.add_class("nba-predict-toggle")
        self.toggle.observe(self._toggled, names="value")
        self.box: widgets.VBox | None = None
        self.body: widgets.HTML | None = None
        self.choices: widgets.HBox | None = None
        self._buttons: list[ClickButton] = []
        self._keys: list[str] = []
        self._focus = False  # a choice was picked: the next question's first choice gets the focus

    def _toggled(self, change: dict[str, Any]) -> None:
        if self.quiz.active == bool(change["new"]):
            return  # the widget catching up with the quiz (predict mode turned on from code)
        self.quiz.active = bool(change["new"])
        self.quiz.picked = None
        refresh = getattr(self.owner, "refresh", None)
        if callable(refresh):
            refresh()

    def _button(self, index: int) -> ClickButton:
        while len(self._buttons) <= index:
            button = ClickButton(layout=self.owner.parts.layout, style=self.owner.parts.toggle_style)  # CSS: width auto
            button.add_class("nba-predict-choice")
            button.add_class(f"nba-choice-{len(self._buttons)}")
            button.on_click(functools.partial(self._clicked, len(self._buttons)))
            self._buttons.append(button)
        return self._buttons[index]

    def _clicked(self, position: int, _: ClickButton) -> None:
        self.choose(position)

    def choose(self, position: int) -> object:
        """Pick the choice at ``position`` of the question shown and make the move (a choice button's click)."""
        if position >= len(self._keys):
            return None
        key = self._keys[position]
        self._focus = True
        return self.owner.click(lambda: self.quiz.answer(key))

    def refresh(self, busy: bool) -> None:
        """Show the quiz: the verdict and the log, and the question's choices as buttons (disabled while busy)."""
        quiz = self.quiz
        self.toggle.value = quiz.active
        if self.box is None or self.body is None or self.choices is None:
            if not quiz.active and not quiz.predictions:
                return  # never on in this walk: nothing to show, no model made
            parts = self.owner.parts
            self.body = parts.html()
            self.choices = widgets.HBox(layout=parts.layout)
            self.choices.add_class("nba-predict-choices")
            self.box = widgets.VBox([self.body, self.choices], layout=parts.layout)
            self.box.add_class("nba-predict-panel")
        self.body.value = quiz_html(quiz, live=None if busy else True)
        question = quiz.question if not busy else None
        keys = [choice.key for choice in question.choices] if question is not None else []
        if keys != self._keys or (question is None) != (not self.choices.children):
            buttons = [self._button(index) for index in range(len(keys))]
            for button, choice in zip(buttons, question.choices if question is not None else (), strict=True):
                button.description = choice.label
                button.tooltip = f"{choice.label} ({words('Enter picks it')})"
            self.choices.children = tuple(buttons)
            self._keys = keys
        for button in self.choices.children:
            button.disabled = busy
        if self._focus and question is not None and self.choices.children and not busy:
            self._focus = False
            self.choices.children[0].focus()

    def detached(self) -> list[ClickButton]:
        """The choice buttons made but not shown now (kept for the next question)."""
        shown = self.choices.children if self.choices is not None else ()
        return [button for button in self._buttons if button not in shown]

    @property
    def buttons(self) -> list[ClickButton]:
        """The choice buttons shown now, in the question's order."""
        return list(self.choices.children) if self.choices is not None else []
