"""Fork here in the stepper widget (issue 26), in JupyterLab and Notebook 7: click it, give the fork's
tool call an error in the fork's panel, run the fork to its end, compare it with its parent; the
comparison marks where they diverge, and every text of the fork and the comparison has a contrast
of at least 4.5:1 in JupyterLab Light and Dark."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import LabNotebook
from .measure import CONTRAST_JS

pytestmark = pytest.mark.browser

CELLS = [
    "import nbagent\n"
    "from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient\n"
    "def add(a: int, b: int) -> int:\n"
    '    """Add two integers."""\n'
    "    return a + b\n"
    "call = FunctionCall(id='c1', name='add', arguments='{\"a\": 2, \"b\": 3}')\n"
    "script = [CreateResult(finish_reason='function_calls', content=[call]), 'It is 5.']\n"
    "agent = AssistantAgent('assistant', ReplayChatCompletionClient(script), tools=[add], reflect_on_tool_use=True)",
    "stepper = nbagent.step(agent, 'What is 2 + 3?')\nstepper",
    "print('cells done')",
]
HEAD_INDEX = (
    "([root, i]) => { const h = document.querySelector(root + ' .nba-stepper-head');"
    " return h && h.dataset.index === String(i); }"
)
AA = 4.5


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_fork_here_edit_a_tool_result_continue_and_compare(
    run_notebook_in_lab: Callable[..., LabNotebook], frontend: str, record_property: Callable[[str, object], None]
) -> None:
    nb = run_notebook_in_lab(CELLS, name=f"fork_{frontend}", frontend=frontend)
    page = nb.page
    assert nb.output_texts()[-1].strip() == "cells done"
    parent = ".jp-OutputArea .nba-stepper-live"
    next_button = page.locator(f"{parent} .nba-stepper-bar .jupyter-button", has_text="Next").first
    for index in range(1, 5):  # paused before the tools run
        next_button.click()
        page.wait_for_function(HEAD_INDEX, arg=[parent, index])
    page.locator(f"{parent} .nba-stepper-bar .jupyter-button", has_text="Fork here").first.click()
    fork = ".nba-forks .nba-stepper-live"
    page.wait_for_function(HEAD_INDEX, arg=[fork, 4])
    page.locator(f"{fork} .nba-give-result input").fill("Error: the adder is down")
    page.locator(f"{fork} .jupyter-button", has_text="Give error").click()
    page.wait_for_function(f"() => document.querySelector('{fork} .nba-given') !== null")
    page.locator(f"{fork} .nba-stepper-bar .jupyter-button", has_text="Run to end").click()
    page.wait_for_function(f"() => document.querySelector('{fork} .nba-stepper-head').dataset.index === '6'")
    page.locator(f"{fork} .jupyter-button", has_text="Compare with parent").click()
    page.wait_for_function("() => document.querySelector('.nba-compare table') !== null")
    diverged = page.evaluate("() => document.querySelectorAll('.nba-compare tr[data-diverged=true]').length")
    texts = page.evaluate("() => document.querySelector('.nba-compare').innerText")
    assert diverged >= 1 and "Error: the adder is down" in texts
    # the parent is where it was, paused before its tool execution
    assert page.evaluate(f"() => document.querySelector('{parent} .nba-stepper-head').dataset.index") == "4"
    page.set_viewport_size({"width": 1280, "height": 3000})
    figures = {}
    failures = []
    for theme in ("JupyterLab Light", "JupyterLab Dark"):
        nb.set_theme(theme)
        seen = page.evaluate(CONTRAST_JS, [["fork", fork], ["comparison", ".nba-compare"]])
        for name, found in seen.items():
            figures[f"{theme} {name}"] = found["min"]
            assert found["views"] >= 1 and found["texts"] >= 3, (theme, name, found)
            if found["min"] < AA:
                failures.append((theme, name, found["worst"]))
        nb.shot(f"fork-{theme.split()[-1].lower()}")
    record_property("contrast", figures)
    print(figures)
    nb.set_theme("JupyterLab Light")
    assert failures == []
    assert nb.console_errors == []
    assert nb.error_outputs() == []
