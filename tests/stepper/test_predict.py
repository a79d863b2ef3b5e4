"""Predict mode (issue 44.1): the questions come from the loop's state, the answers are checked against the
move the loop made, the score counts them; in the widget, the choices are buttons and the static copy keeps
the questions and the answers, in English and Chinese."""

from __future__ import annotations

import re

import pytest

import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient
from nbagent.notebook.predict_panel import quiz_html
from nbagent.notebook.stepper_widget import NotebookStepper, stepper_html
from nbagent.predict import Quiz, question_at
from nbagent.stepper import Stepper

from .scenarios import SCENARIOS, Scenario, text

pytestmark = pytest.mark.filterwarnings("ignore:Multiple handoffs detected")
PAYLOAD = '<img src=x onerror="window.__xss=1">'


def scenario(name: str) -> Scenario:
    return next(s for s in SCENARIOS if s.name == name)


async def walk(quiz: Quiz, answers: list[str] | None = None) -> list[tuple[str, list[str], str]]:
    """Walk quiz's stepper to the end: (move, choices, what happened) per question; ``answers`` are picked in
    turn (a question without one is skipped)."""
    asked = []
    stepper = quiz.stepper
    while not stepper.done:
        question = quiz.question
        if question is None:
            await stepper.next()
            continue
        if answers:
            prediction = await quiz.answer(answers.pop(0))
        else:
            quiz.record(question, await stepper.next())
            prediction = quiz.last
        assert prediction is not None and prediction.question == question
        asked.append((question.move, question.keys, prediction.actual))
    return asked


async def test_questions_come_from_the_loop_state_and_the_actual_moves() -> None:
    quiz = Quiz(Stepper(scenario("two_rounds_then_text").agent(), "(2 + 3) * 4?"), active=True)
    asked = await walk(quiz)
    every_edge = ["handoff_check", "next_llm_call", "reflect", "summarize"]
    assert asked == [
        ("add_messages", ["memory", "message_id"], "message_id"),
        ("call_llm", ["text_exit", "tool:add", "tool:mul"], "tool:add"),
        ("tool_execution", every_edge, "next_llm_call"),
        ("next_llm_call", ["text_exit", "tool:add", "tool:mul"], "tool:mul"),
        ("tool_execution", every_edge, "next_llm_call"),
        ("next_llm_call", ["text_exit", "tool:add", "tool:mul"], "text_exit"),
    ]
    assert quiz.score.skipped == 6 and quiz.score.answered == 0


async def test_handoffs_and_iteration_limits_are_asked_and_explained() -> None:
    quiz = Quiz(Stepper(scenario("handoff_and_tool").agent(), "task"), active=True)
    asked = await walk(quiz)
    assert asked[1] == ("call_llm", ["text_exit", "tool:add", "tool:transfer_to_billing"], "tool:add")
    assert asked[2][2] == "handoff_check"
    assert asked[3] == ("handoff_check", ["end", "next_llm_call", "reflect", "summarize"], "end")
    handoff = quiz.predictions[1].question.choices[2]
    assert handoff.label == "hand off to billing (transfer_to_billing)"
    assert quiz.predictions[3].actual_label == "the run ends (handoff)"
    assert quiz.predictions[3].reason.startswith("If one of the calls was a handoff tool")

    quiz = Quiz(Stepper(scenario("keeps_calling_limit_3").agent(), "task"), active=True)
    asked = await walk(quiz)
    after_tools = [p for p in quiz.predictions if p.question.move == "tool_execution"]
    assert [p.actual for p in after_tools] == ["next_llm_call", "next_llm_call", "summarize"]
    assert "iteration 3 of max_tool_iterations=3; reflect_on_tool_use=False" in after_tools[-1].reason
    assert after_tools[-1].actual_label == "STEP 5 · Summarise the tool results (iterations used up)"


@pytest.mark.parametrize("sc", SCENARIOS, ids=lambda sc: sc.name)
async def test_answering_what_the_loop_does_scores_every_question_right(sc: Scenario) -> None:
    first = Quiz(Stepper(sc.agent(), "task"), active=True)
    actual = [happened for _, _, happened in await walk(first)]
    quiz = Quiz(Stepper(sc.agent(), "task"), active=True)
    await walk(quiz, list(actual))
    assert quiz.score.right == len(actual) > 0 and quiz.score.wrong == 0
    assert [r.name for r in quiz.stepper.history] == sc.moves  # predicting changes nothing of the walk
    assert all(p.verdict == "right" and p.reason for p in quiz.predictions)


async def test_wrong_answers_are_wrong_and_say_what_happened() -> None:
    quiz = Quiz(Stepper(scenario("one_tool_reflect_on").agent(), "2 + 3?"), active=True)
    await walk(quiz, ["memory", "text_exit", "summarize"])
    assert [p.verdict for p in quiz.predictions] == ["wrong", "wrong", "wrong"]
    assert [p.actual for p in quiz.predictions] == ["message_id", "tool:add", "reflect"]
    assert str(quiz.score) == "0 of 3 predictions right"
    last = quiz.predictions[-1]
    assert last.reason.startswith("The tool loop is used up and reflect_on_tool_use is on")
    assert "iteration 1 of max_tool_iterations=1; reflect_on_tool_use=True" in last.reason


async def test_a_model_with_no_tools_offered_is_asked_text_or_tool_calls() -> None:
    quiz = Quiz(Stepper(AssistantAgent("a", ReplayChatCompletionClient([text("Hi.")])), "hi"), active=True)
    await quiz.stepper.run_until(move="message_id")
    question = quiz.question
    assert question is not None and question.keys == ["text_exit", "tool_request"]
    prediction = await quiz.answer("tool_request")
    assert prediction.verdict == "wrong" and prediction.reason == "The model answered with text."
    assert quiz.question is None  # the text exit has one way on: nothing to predict


async def test_a_failed_model_call_is_wrong_whatever_was_picked_and_says_why() -> None:
    model = ReplayChatCompletionClient([])  # its script is empty: the call fails
    quiz = Quiz(Stepper(AssistantAgent("a", model), "hi"), active=True)
    await quiz.stepper.next()
    await quiz.stepper.next()
    prediction = await quiz.answer("text_exit")
    assert prediction.verdict == "wrong" and prediction.actual == "end"
    assert prediction.reason.startswith("The run failed: ")


async def test_bad_answers_are_refused_naming_the_parameter_and_lose_nothing() -> None:
    quiz = Quiz(Stepper(scenario("plain_text").agent(), "hi"), active=True)
    with pytest.raises(ValueError, match=r"Quiz\.pick.*answer.*'memory'.*'message_id'"):
        await quiz.answer("call_llm")
    assert quiz.stepper.history == [] and quiz.predictions == []
    await quiz.stepper.next()
    with pytest.raises(RuntimeError, match="one way on"):
        quiz.pick("call_llm")
    off = Quiz(Stepper(scenario("plain_text").agent(), "hi"))
    with pytest.raises(RuntimeError, match="predict mode is off"):
        off.pick("message_id")
    with pytest.raises(TypeError, match="active"):
        Quiz(off.stepper, active="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="predict"):
        nbagent.step(scenario("plain_text").agent(), "hi", predict=1)  # type: ignore[arg-type]


async def test_a_question_is_recorded_once_and_reset_starts_a_new_score() -> None:
    stepper = nbagent.step(scenario("plain_text").agent(), "hi", predict=True)
    assert isinstance(stepper, NotebookStepper)
    await stepper.quiz.answer("message_id")  # the notebook stepper's move records it, and answer() too: once
    assert len(stepper.quiz.predictions) == 1 and stepper.quiz.score.right == 1
    await stepper.run_to_end()  # moves made without a pick are skipped questions
    assert [p.verdict for p in stepper.quiz.predictions] == ["right", "skipped"]
    await stepper.reset()
    assert stepper.quiz.predictions == [] and question_at(stepper) is not None


async def test_the_widget_draws_the_question_as_buttons_and_the_verdict() -> None:
    stepper = nbagent.step(scenario("one_tool_reflect_off").agent(), "2 + 3?", predict=True)
    widget = stepper.widget()
    panel = widget.predict_panel
    assert widget.predict_panel.toggle.value is True
    assert [b.description for b in panel.buttons] == [
        "STEP 2 · Query memory (memory)",
        "STEP 3 · Make a message id (no memory)",
    ]
    assert 'data-move="add_messages" data-number="1"' in panel.body.value
    panel.buttons[1].click()  # right
    await widget.task
    assert 'data-verdict="right"' in panel.body.value and "Right: STEP 3" in panel.body.value
    assert panel.buttons == []  # message_id has one way on
    await stepper.next()
    assert [b.description for b in panel.buttons] == ["text: the final answer", "a call of the tool add"]
    panel.buttons[0].click()  # wrong: the model calls add
    await widget.task
    assert 'data-verdict="wrong"' in panel.body.value
    assert "Not quite: you said text: the final answer; the loop went to a call of the tool add." in panel.body.value
    assert re.search(r'nba-predict-score" data-right="1" data-answered="2"', panel.body.value)
    widget.next_button.click()  # Next without a pick: nothing asked before tool_request
    await widget.task
    widget.next_button.click()  # Next without a pick before the tools run: skipped
    await widget.task
    assert [p.verdict for p in stepper.quiz.predictions] == ["right", "wrong", "skipped"]


async def test_the_toggle_turns_predict_mode_on_and_off() -> None:
    stepper = nbagent.step(scenario("plain_text").agent(), "hi")
    widget = stepper.widget()
    assert widget.predict_panel.box is None and widget.predict_panel.buttons == []  # no model made until it is on
    assert quiz_html(stepper.quiz) == ""
    widget.predict_panel.toggle.value = True
    assert stepper.quiz.active and len(widget.predict_panel.buttons) == 2
    assert widget.children == (widget.head, widget.bar, widget.predict_panel.box, widget.panel, widget.fork_panel)
    widget.predict_panel.toggle.value = False
    assert not stepper.quiz.active and widget.predict_panel.buttons == []


async def test_the_static_copy_keeps_the_questions_and_answers() -> None:
    stepper = nbagent.step(scenario("one_tool_reflect_off").agent(), "2 + 3?", predict=True)
    await stepper.quiz.answer("message_id")
    await stepper.next()
    await stepper.quiz.answer("text_exit")
    copy = stepper_html(stepper)
    assert copy.count('class="nba-predict-item"') == 2
    assert 'data-verdict="right"' in copy and 'data-verdict="wrong"' in copy
    assert "you said: text: the final answer" in copy and "the loop: a call of the tool add" in copy
    assert 'data-right="1" data-answered="2"' in copy
    assert "<button" not in copy  # a copy has no buttons: the question waiting lists its choices
    await stepper.next()  # tool_request: the next question is asked before the tools run
    copy = stepper_html(stepper)
    question = re.search(r'<div class="nba-predict-question".*?</ol>', copy, re.S)
    assert question is not None and "<li>STEP 5 · Summarise the tool results (iterations used up)</li>" in question[0]
    assert str(stepper._repr_mimebundle_()["text/html"]).count('class="nba-predict-item"') == 2


async def test_chinese_walks_ask_in_chinese() -> None:
    nbagent.set_language("zh")
    try:
        stepper = nbagent.step(scenario("one_tool_reflect_off").agent(), "2 + 3?", predict=True)
        question = stepper.quiz.question
        assert question is not None and question.text == "STEP 1 · 新消息进 model_context 之后,接下来是哪一步?"
        assert question.choices[1].label == "STEP 3 · 生成 message_id (没有记忆)"
        await stepper.quiz.answer("message_id")
        copy = stepper_html(stepper)
        assert "预测模式" in copy and "你选:STEP 3" in copy and "1 个预测里对了 1 个" in copy
    finally:
        nbagent.set_language("en")


async def test_what_a_model_says_is_escaped_in_the_verdict() -> None:
    class Failing(ReplayChatCompletionClient):
        async def complete(self, request, cancellation_token=None):  # type: ignore[no-untyped-def]
            raise RuntimeError(PAYLOAD)

    stepper = nbagent.step(AssistantAgent("a", Failing([])), "hi", predict=True)
    await stepper.next()
    await stepper.next()
    await stepper.quiz.answer("text_exit")
    assert PAYLOAD in stepper.quiz.last.reason
    for html in (stepper.widget().predict_panel.body.value, stepper_html(stepper)):
        assert PAYLOAD not in html and "&lt;img src=x" in html


async def test_predict_mode_turned_on_from_code_keeps_a_pick_made_before_the_widget_caught_up() -> None:
    stepper = nbagent.step(scenario("plain_text").agent(), "hi")
    widget = stepper.widget()
    stepper.quiz.active = True  # the widget's toggle still shows off until its next refresh
    stepper.quiz.pick("message_id")
    widget.refresh()  # the toggle catches up: that is no click of the learner's, the pick stays
    assert widget.predict_panel.toggle.value is True and stepper.quiz.picked == "message_id"
    await stepper.next()
    assert stepper.quiz.last is not None and stepper.quiz.last.verdict == "right"
