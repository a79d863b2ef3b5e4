"""Predict mode: before each move of a walk the learner picks what comes next, then the move checks it.

The choices at a point are the loop's own: the edges of the move about to be made in
:data:`nbagent.records.MOVES` (which STEP follows; after the tools, whether an iteration is left,
reflect or summarise, a handoff), and before a model call what the model will answer (text, or a
call of one of the tools it is offered, handoff tools included). Nothing is written per notebook:
:func:`question_at` reads them from the walk's state and :func:`judge` checks a pick against the
move the loop then made, with the one-line reason (the first sentence of the explanation of what
happened, and the setting that decided it). A move with one way on (STEP 3 always calls the model)
asks nothing.

:class:`Quiz` keeps a walk's predictions and its score. It knows no widget: the stepper widget
draws it (:mod:`nbagent.notebook.predict_panel`), ``nbagent.step(agent, task, predict=True)``
turns it on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from . import _check as check
from .language import words
from .records import END, MOVES, LoopSettings, MoveName
from .sync import entry_point

if TYPE_CHECKING:
    from .stepper import Stepper, StepResult

__all__ = ["Choice", "Prediction", "Question", "Quiz", "Score", "judge", "question_at"]

LLM_QUESTION_MOVES: tuple[MoveName, ...] = ("call_llm", "next_llm_call")
"""Before these moves the question is what the model will answer (the moves after them follow from it)."""
TEXT = "text_exit"
TOOL_PREFIX = "tool:"
ANY_TOOL = "tool_request"


@dataclass(frozen=True)
class Choice:
    """One answer a learner can pick: ``key`` (a move's name, ``"end"``, or ``"tool:<name>"``) and its label."""

    key: str
    label: str


@dataclass(frozen=True)
class Question:
    """What is asked before move ``number`` (1 = the first) of a walk, which is ``move``."""

    number: int
    move: MoveName
    text: str
    choices: tuple[Choice, ...]

    @property
    def keys(self) -> list[str]:
        return [choice.key for choice in self.choices]

    def label_of(self, key: str | None) -> str:
        """The label of the choice ``key`` (a skipped question's: ``"(skipped)"``)."""
        if key is None:
            return words("(skipped)")
        fallback = words("the run ends") if key == END else key
        return next((choice.label for choice in self.choices if choice.key == key), fallback)


@dataclass(frozen=True)
class Prediction:
    """A question, the learner's pick (``None``: skipped), what the loop did and why."""

    question: Question
    picked: str | None
    actual: str
    right: bool
    reason: str

    @property
    def verdict(self) -> str:
        """``"right"``, ``"wrong"`` or ``"skipped"``."""
        return "skipped" if self.picked is None else "right" if self.right else "wrong"

    @property
    def actual_label(self) -> str:
        """What happened, in the question's words."""
        return self.question.label_of(self.actual)


@dataclass(frozen=True)
class Score:
    """A walk's score: how many predictions were right, wrong, and how many questions were skipped."""

    right: int
    wrong: int
    skipped: int

    @property
    def answered(self) -> int:
        return self.right + self.wrong

    def __str__(self) -> str:
        text = words("{right} of {answered} predictions right").format(right=self.right, answered=self.answered)
        if self.skipped:
            text += " " + words("({skipped} skipped)").format(skipped=self.skipped)
        return text


def _move_label(name: MoveName) -> str:
    info = MOVES[name]
    return f"STEP {info.step} · {info.title}"


def _first_sentence(text: str) -> str:
    for stop in (". ", "。"):
        at = text.find(stop)
        if at > 0:
            return text[: at + len(stop)].strip()
    return text


def question_at(stepper: Stepper) -> Question | None:
    """The question before the walk's next move, or ``None`` when it has one way on (or is over).

    Before a model call (``call_llm``, ``next_llm_call``): text, or a call of each tool the model is
    offered (a handoff's tool included); with no tool offered, "tool calls". Before any other move:
    each edge of the move in :data:`~nbagent.records.MOVES`, whatever the agent's settings (the settings
    are what decides between them: that is the question).
    """
    if stepper.done or stepper.moving:
        return None
    if stepper.status == "ready":
        move: MoveName = "add_messages"
    elif stepper.upcoming is not None:
        move = stepper.upcoming.name
    else:
        return None
    number = len(stepper.history) + 1
    title = _move_label(move)
    if move in LLM_QUESTION_MOVES:
        offered = stepper.offered if stepper.offered is not None else stepper.agent.tools
        names = [schema["name"] for schema in offered]
        handoffs = {handoff.name: handoff.target for handoff in stepper.agent.handoffs.values()}
        tools = [
            Choice(
                TOOL_PREFIX + name,
                words("hand off to {target} ({name})").format(target=handoffs[name], name=name)
                if name in handoffs
                else words("a call of the tool {name}").format(name=name),
            )
            for name in names
        ] or [Choice(ANY_TOOL, words("tool calls"))]
        text = words("{move}: what will the model answer?").format(move=title)
        return Question(number, move, text, (Choice(TEXT, words("text: the final answer")), *tools))
    edges = MOVES[move].edges
    if len(edges) < 2:
        return None
    choices = tuple(
        Choice(
            edge.target,
            (words("the run ends") if edge.target == END else _move_label(edge.target))
            + (f" ({edge.label})" if edge.label else ""),
        )
        for edge in edges
    )
    return Question(number, move, words("After {move}, what comes next?").format(move=title), choices)


def judge(question: Question, picked: str | None, result: StepResult, settings: LoopSettings) -> Prediction:
    """Check ``picked`` (a key of ``question``'s choices, or ``None`` for a skipped question) against
    ``result``, the move made after it was asked by an agent with ``settings``; the reason says what
    the loop did and why."""
    upcoming = result.upcoming
    following: str = END if upcoming is None else upcoming.name
    actual: str
    if question.move in LLM_QUESTION_MOVES:
        calls = result.asked_tools
        if following == TEXT:
            actual, right = TEXT, picked == TEXT
            reason = words("The model answered with text.")
        elif calls:
            names = [call.name for call in calls]
            keys = [TOOL_PREFIX + name for name in names]
            actual = next((key for key in keys if key in question.keys), ANY_TOOL)
            right = picked in keys or picked == ANY_TOOL
            reason = words("The model asked for {tools}.").format(tools=", ".join(names))
        else:
            actual, right, reason = following, False, ""
    else:
        actual, right = following, picked == following
        reason = _first_sentence(MOVES[question.move if upcoming is None else upcoming.name].explanation)
    if result.error is not None:
        reason = words("The run failed: {error}").format(error=f"{type(result.error).__name__}: {result.error}")
    elif question.move in ("tool_execution", "handoff_check") and result.iteration is not None:
        reason += " " + _iteration_note(result.iteration, settings)
    return Prediction(question, picked, actual, right and picked is not None, reason.strip())


def _iteration_note(iteration: int, settings: LoopSettings) -> str:
    """The settings that decide where the tool loop goes after a move of tool-loop ``iteration``."""
    return words("(tool-loop iteration {number} of max_tool_iterations={limit}; reflect_on_tool_use={reflect})").format(
        number=iteration + 1, limit=settings.max_tool_iterations, reflect=settings.reflect_on_tool_use
    )


class Quiz:
    """A walk's predictions: the question before its next move, the learner's pick, and the score.

    ``active`` turns it on (``nbagent.step(..., predict=True)``, the widget's Predict toggle): a walk
    that makes a move while it is on records a :class:`Prediction` for each question (skipped when no
    answer was picked). :meth:`answer` picks and makes the move; :meth:`reset` starts the score again.
    """

    def __init__(self, stepper: Stepper, *, active: bool = False) -> None:
        self.stepper = stepper
        self.active = check.boolean("Quiz", "active", active)
        self.predictions: list[Prediction] = []
        self._recorded: StepResult | None = None
        self.picked: str | None = None
        """The pick for the next move (:meth:`pick`), used by the move the walk makes next."""

    @property
    def question(self) -> Question | None:
        """The question before the walk's next move (``None``: it has one way on, or the walk is over)."""
        return question_at(self.stepper) if self.active else None

    @property
    def last(self) -> Prediction | None:
        return self.predictions[-1] if self.predictions else None

    @property
    def score(self) -> Score:
        verdicts = [prediction.verdict for prediction in self.predictions]
        return Score(verdicts.count("right"), verdicts.count("wrong"), verdicts.count("skipped"))

    def pick(self, answer: str) -> Question:
        """Pick ``answer`` (a key of the question's choices) for the next move; returns the question."""
        where = "Quiz.pick"
        question = self.question
        if question is None:
            state = "predict mode is off" if not self.active else "the next move has one way on (nothing to predict)"
            if self.stepper.done:
                state = f"the walk is over ({self.stepper.status})"
            raise RuntimeError(f"{where}: no question is asked now: {state}")
        check.choice(where, "answer", answer, question.keys, "one of the question's choices")
        self.picked = answer
        return question

    @entry_point("stepper.quiz.answer(key)")
    async def answer(self, answer: str) -> Prediction:
        """Pick ``answer``, make the move, and return the prediction checked against it."""
        question = self.pick(answer)
        result = await self.stepper.next()
        return self.record(question, result) or judge(question, answer, result, self.stepper.agent.loop_settings)

    def record(self, question: Question | None, result: StepResult) -> Prediction | None:
        """Check the pick (or a skip) of ``question``, asked before ``result``'s move; once per move."""
        picked, self.picked = self.picked, None
        if question is None or not self.active or result.index != question.number:
            return None
        if result is self._recorded:
            return self.last  # recorded already (a notebook stepper's move and Quiz.answer both report it)
        prediction = judge(question, picked, result, self.stepper.agent.loop_settings)
        self.predictions.append(prediction)
        self._recorded = result
        return prediction

    def reset(self) -> None:
        """Forget the predictions (the walk was reset: a new score)."""
        self.predictions.clear()
        self.picked, self._recorded = None, None

    def __repr__(self) -> str:
        state = "on" if self.active else "off"
        return f"<Quiz {state}: {self.score}>"
