"""Predict mode in a real browser (issue 44.1, 44.5): in JupyterLab and Notebook 7 a learner answers the
stepper's predictions right and wrong, with the mouse and with the keyboard (a choice focused, Enter); the
widget says which and keeps the score, its texts at WCAG AA contrast in the light and the dark theme; the
saved notebook keeps the answers."""

from __future__ import annotations

import nbformat
import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from .conftest import RUN_TIMEOUT_MS, LabNotebook
from .measure import CONTRAST_JS
from .test_stepper_browser import CELLS as STEPPER_CELLS

pytestmark = [pytest.mark.slow, pytest.mark.browser]

CELLS = [
    STEPPER_CELLS[0],  # the stepper test's agent: add and mul, up to three tool rounds, then the answer
    "stepper = nbagent.step(agent, 'What is (2 + 3) * 4?', predict=True)\nstepper",
    "print('cells done')",
]
LIVE = ".jp-OutputArea .nba-stepper-live"
CALL_LLM_CHOICES = ["text: the final answer", "a call of the tool add", "a call of the tool mul"]
AA = 4.5
STATE_JS = """() => {
  const view = document.querySelector('.jp-OutputArea .nba-stepper-live');
  const question = view.querySelector('.nba-predict-question');
  const verdict = view.querySelector('.nba-predict-verdict');
  const score = view.querySelector('.nba-predict-score');
  const focused = document.activeElement;
  const shown = [...view.querySelectorAll('.nba-predict-choice')].filter(b => b.checkVisibility());
  return {
    index: view.querySelector('.nba-stepper-head').dataset.index,
    question: question ? question.dataset.move : null,
    choices: shown.map(b => b.innerText),
    choicesEnabled: shown.every(b => !b.disabled),
    verdict: verdict ? verdict.dataset.verdict : null,
    score: score ? [Number(score.dataset.right), Number(score.dataset.answered)] : null,
    focusedChoice: !!(focused && focused.closest('.nba-predict-choice')),
  };
}"""


def wait_for_move(nb: LabNotebook, index: int, **expected: object) -> dict[str, object]:
    """The widget's state (``STATE_JS``) once its head is at move ``index`` and each key of ``expected`` reads
    as given. A move's updates (the head, the question, its choices, the verdict, the kernel's focus) are
    separate widget messages, which under load arrive seconds apart: a quiet half second was not enough."""
    try:
        nb.page.wait_for_function(
            f"""([i, expected]) => {{ const s = ({STATE_JS})();
              return s.index === String(i)
                && Object.entries(expected).every(([k, v]) => JSON.stringify(s[k]) === JSON.stringify(v)); }}""",
            arg=[index, expected],
            timeout=RUN_TIMEOUT_MS,
        )
    except PlaywrightTimeoutError:
        pytest.fail(f"move {index}: never read {expected}; the widget reads {nb.page.evaluate(STATE_JS)}")
    nb.settle()
    state: dict[str, object] = nb.page.evaluate(STATE_JS)
    return state


def choice(nb: LabNotebook, text: str):  # type: ignore[no-untyped-def]
    return nb.page.locator(f"{LIVE} .nba-predict-choice", has_text=text)


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_a_learner_predicts_right_and_wrong_with_mouse_and_keyboard(run_notebook_in_lab, frontend: str) -> None:
    nb: LabNotebook = run_notebook_in_lab(CELLS, name=f"predict_{frontend}", frontend=frontend)
    page = nb.page
    assert nb.output_texts()[-1].strip() == "cells done"
    state = page.evaluate(STATE_JS)
    assert state["question"] == "add_messages" and state["index"] == "0"
    assert state["choices"] == ["STEP 2 · Query memory (memory)", "STEP 3 · Make a message id (no memory)"]

    choice(nb, "Make a message id").focus()  # the keyboard: a focused choice, Enter
    page.keyboard.press("Enter")
    state = wait_for_move(nb, 1, verdict="right", score=[1, 1], choices=[])
    assert state["verdict"] == "right" and state["score"] == [1, 1] and state["choices"] == []  # message_id: no choice
    page.locator(f"{LIVE} .jupyter-button", has_text="Next").first.click()
    state = wait_for_move(nb, 2, question="call_llm", choices=CALL_LLM_CHOICES)
    assert state["question"] == "call_llm"
    assert state["choices"] == CALL_LLM_CHOICES

    choice(nb, "text: the final answer").click()  # the mouse, and wrong: the model calls add
    state = wait_for_move(nb, 3, verdict="wrong", score=[1, 2])
    assert state["verdict"] == "wrong" and state["score"] == [1, 2]
    verdict = page.locator(f"{LIVE} .nba-predict-verdict").inner_text()
    assert "Not quite: you said text: the final answer; the loop went to a call of the tool add." in verdict
    page.locator(f"{LIVE} .jupyter-button", has_text="Next").first.click()  # tool_request: one way on
    state = wait_for_move(nb, 4, question="tool_execution", choicesEnabled=True)  # Enter on it comes next
    assert state["question"] == "tool_execution"

    choice(nb, "Call the LLM again").focus()
    page.keyboard.press("Enter")
    state = wait_for_move(nb, 5, verdict="right", question="next_llm_call", focusedChoice=True)
    assert state["verdict"] == "right" and state["score"] == [2, 3]
    assert state["question"] == "next_llm_call" and state["focusedChoice"], state  # the next question has the focus
    page.keyboard.press("Tab")  # on to the second choice, from the keyboard alone
    page.keyboard.press("Enter")  # "a call of the tool add": wrong, the model calls mul
    state = wait_for_move(nb, 6, verdict="wrong", score=[2, 4])
    assert state["verdict"] == "wrong" and state["score"] == [2, 4]

    for theme in ("JupyterLab Dark", "JupyterLab Light"):
        nb.set_theme(theme)
        found = page.evaluate(CONTRAST_JS, [["predict", f"{LIVE} .nba-predict-panel"]])["predict"]
        print(f"{frontend} · {theme} · predict panel: {found['texts']} texts, min {found['min']}:1")
        assert found["texts"] >= 10 and found["min"] >= AA, (theme, found["worst"])  # WCAG AA, as every view
        nb.shot(f"predict-{theme.split()[-1].lower()}", selector=f"{LIVE} .nba-predict-panel")
    assert nb.error_outputs() == [] and nb.console_errors == []
    if frontend == "lab":
        saved = nbformat.reads(nb.save(), as_version=4)
        html = "".join(out.get("data", {}).get("text/html", "") for out in saved.cells[1].outputs)
        assert html.count('class="nba-predict-item"') == 4
        assert 'data-right="2" data-answered="4"' in html and "you said: text: the final answer" in html
