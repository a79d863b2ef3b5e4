"""The stepper widget in JupyterLab: its buttons work after Run All has finished."""

from __future__ import annotations

import pytest

from .conftest import ARTIFACTS, LabNotebook

pytestmark = pytest.mark.browser

CELLS = [
    "import nbagent\n"
    "from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient\n"
    "def add(a: int, b: int) -> int:\n"
    '    """Add two integers."""\n'
    "    return a + b\n"
    "def mul(a: int, b: int) -> int:\n"
    '    """Multiply two integers."""\n'
    "    return a * b\n"
    "def calls(call_id, name, arguments):\n"
    "    call = FunctionCall(id=call_id, name=name, arguments=arguments)\n"
    "    return CreateResult(finish_reason='function_calls', content=[call])\n"
    "script = [calls('c1', 'add', '{\"a\": 2, \"b\": 3}'), calls('c2', 'mul', '{\"a\": 5, \"b\": 4}'),\n"
    "          '(2 + 3) * 4 = **20**']\n"
    "agent = AssistantAgent('assistant', ReplayChatCompletionClient(script), tools=[add, mul], max_tool_iterations=3)",
    "stepper = nbagent.step(agent, 'What is (2 + 3) * 4? <img src=x onerror=\"__xss(1)\">')\nstepper",
    "print('cells done')",
]
MOVES = [
    "add_messages", "message_id", "call_llm", "tool_request", "tool_execution",
    "next_llm_call", "tool_request", "tool_execution", "next_llm_call", "text_exit",
]  # fmt: skip
STEPS = ["1", "3", "4", "5", "5", "5", "5", "5", "5", "5"]
ROWS = [1, 1, 1, 2, 3, 3, 4, 5, 5, 6]

STATE_JS = """() => {
  const view = document.querySelector('.jp-OutputArea .nba-stepper-live');
  const head = view.querySelector('.nba-stepper-head');
  const table = view.querySelector('.nba-stepper-context');
  return {
    index: head.dataset.index, step: head.dataset.step, move: head.dataset.move,
    current: [...view.querySelectorAll('.nba-node[data-state=current]')].map(n => n.dataset.move),
    currentStep: [...view.querySelectorAll('.nba-node[data-state=current]')].map(n => n.dataset.step),
    rows: Number(table.dataset.rows),
    added: view.querySelectorAll('.nba-ctx-row[data-change=added]').length,
    views: [...document.querySelectorAll('.jp-OutputArea .nba-stepper')].filter(v => v.checkVisibility()).length,
  };
}"""


def test_next_button_walks_the_loop_after_the_cell_finished(run_notebook_in_lab) -> None:
    nb: LabNotebook = run_notebook_in_lab(CELLS, name="stepper_widget")
    page = nb.page
    assert nb.output_texts()[-1].strip() == "cells done"
    start = page.evaluate(STATE_JS)
    assert (start["index"], start["step"], start["current"], start["views"]) == ("0", "0", [], 1)

    next_button = page.locator(".nba-stepper-live .jupyter-button", has_text="Next")
    seen = []
    for index in range(1, len(MOVES) + 1):
        next_button.click()
        page.wait_for_function(
            "(i) => { const h = document.querySelector('.jp-OutputArea .nba-stepper-live .nba-stepper-head');"
            " return h && h.dataset.index === String(i); }",
            arg=index,
        )
        state = page.evaluate(STATE_JS)
        assert state["current"] == [state["move"]] and state["currentStep"] == [state["step"]]
        seen.append((state["move"], state["step"], state["rows"]))
        if index == 6:
            nb.shot("mid-walk")
            page.set_viewport_size({"width": 1280, "height": 2600})
            nb.settle()
            element = ARTIFACTS / "stepper_widget-element.png"
            page.locator(".jp-OutputArea .nba-stepper-live").screenshot(path=str(element))
            page.set_viewport_size({"width": 1280, "height": 900})
    assert seen == list(zip(MOVES, STEPS, ROWS))
    page.wait_for_function("() => document.querySelector('.nba-stepper-live .jupyter-button').disabled")
    nb.settle()
    final = page.evaluate(STATE_JS)
    assert (final["added"], final["views"]) == (1, 1)
    assert page.locator(".nba-stepper-live .nba-final .nba-markdown strong").inner_text() == "20"
    end_shot = nb.shot("done")
    assert end_shot.stat().st_size > 20_000 and (ARTIFACTS / "stepper_widget-element.png").stat().st_size > 20_000

    page.locator(".nba-stepper-live .jupyter-button", has_text="Reset").click()
    page.wait_for_function(
        "() => document.querySelector('.jp-OutputArea .nba-stepper-live .nba-stepper-head').dataset.index === '0'"
    )
    reset = page.evaluate(STATE_JS)
    assert (reset["step"], reset["current"], reset["rows"]) == ("0", [], 0)
    assert nb.xss_hits() == {"window": [], "dom": ""}  # the task's <img> stayed text
    assert nb.error_outputs() == []
    assert nb.console_errors == []
