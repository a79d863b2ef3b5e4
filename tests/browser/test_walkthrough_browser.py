"""The walkthrough (notebooks/02) in JupyterLab and Notebook 7: Run All in headless Chromium, then
stepped by hand from the start (issue 16.7: the code walks the stepper to its end, then resets it).

Saves ``test-artifacts/walkthrough[-notebook].png`` (the page after Run All) and
``test-artifacts/walkthrough-stepper[-notebook].png`` (the stepper widget paused at STEP 4, the
model call). ``docs/walkthrough.png`` (the README's image, committed; the test checks it is there)
is made by ``python -m tests.browser.screenshots``.
"""

from __future__ import annotations

import nbformat
import pytest

from .conftest import ARTIFACTS, REPO, LabNotebook

pytestmark = pytest.mark.browser

WALKTHROUGH = REPO / "notebooks" / "02_walkthrough_steps_1_5.ipynb"
DOCS_SHOT = REPO / "docs" / "walkthrough.png"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

_PROMPTS_JS = "() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim())"
_SCROLL_TO_STEPPER_JS = """async () => {
  const notebook = window.jupyterapp.shell.currentWidget.content;
  const index = notebook.widgets.findIndex(cell => cell.model.sharedModel.getSource().includes('= nbagent.step('));
  notebook.activeCellIndex = index;
  await notebook.scrollToItem(index, 'start');
  return index;
}"""
_STEPPER_JS = """() => {
  const views = [...document.querySelectorAll('.jp-OutputArea .nba-stepper')].filter(v => v.checkVisibility());
  const view = document.querySelector('.jp-OutputArea .nba-stepper-live');
  const head = view.querySelector('.nba-stepper-head');
  const request = view.querySelector('.nba-stepper-request');
  return {
    views: views.length,
    status: view.querySelector('.nba-stepper-status [data-status]').dataset.status,
    index: head.dataset.index, step: head.dataset.step, move: head.dataset.move,
    current: [...view.querySelectorAll('.nba-node[data-state=current]')].map(n => n.dataset.move),
    request: request ? [request.dataset.messages, request.dataset.tools] : null,
  };
}"""
_HEAD_AT_JS = (
    "(i) => document.querySelector('.jp-OutputArea .nba-stepper-live .nba-stepper-head').dataset.index === String(i)"
)


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_walkthrough_runs_and_its_stepper_steps_by_hand_from_the_start(run_notebook_in_lab, frontend: str) -> None:
    code_cells = sum(cell.cell_type == "code" for cell in nbformat.read(WALKTHROUGH, as_version=4).cells)
    suffix = "" if frontend == "lab" else "-notebook"
    nb: LabNotebook = run_notebook_in_lab(WALKTHROUGH, name=f"walkthrough{suffix}", frontend=frontend)
    page = nb.page
    assert page.evaluate(_PROMPTS_JS) == [f"[{n}]:" for n in range(1, code_cells + 1)]
    assert nb.error_outputs() == []
    assert nb.console_errors == []

    # JupyterLab renders only the cells in view: read every output from the notebook it saves.
    saved = nbformat.reads(nb.save(), as_version=4)
    outputs = [output for cell in saved.cells if cell.cell_type == "code" for output in cell.outputs]
    assert [o for o in outputs if o.output_type == "error" or o.get("name") == "stderr"] == []
    text = "\n".join(o.get("text", "") for o in outputs)
    for line in (
        "'Hi, I'm Ada.' is 2 times in the context the model sees",
        "STEP 2: Query memory  [_update_model_context_with_memory]",
        "answer: It is 12 °C and cloudy in Paris: take a jacket.",
        "stepper: ready · 0 moves",
        "second run: AgentBusyError",
        "ValueError: Tools cannot be used with a workbench.",
    ):
        assert line in text

    # The cells walked the stepper to its end, then reset it: one widget, ready at the start.
    assert page.evaluate(_SCROLL_TO_STEPPER_JS) > 0
    nb.settle()
    start = page.evaluate(_STEPPER_JS)
    assert (start["views"], start["status"], start["index"], start["current"]) == (1, "ready", "0", [])

    # By hand now, with no Reset first: Next four times makes STEP 1, 2, 3 and the STEP 4 model call.
    buttons = page.locator(".jp-OutputArea .nba-stepper-live .jupyter-button")
    seen = []
    for index in range(1, 5):
        buttons.filter(has_text="Next").click()
        page.wait_for_function(_HEAD_AT_JS, arg=index)
        state = page.evaluate(_STEPPER_JS)
        seen.append((state["step"], state["move"], state["current"]))
    assert seen == [
        ("1", "add_messages", ["add_messages"]),
        ("2", "memory", ["memory"]),
        ("3", "message_id", ["message_id"]),
        ("4", "call_llm", ["call_llm"]),
    ]
    # The request panel: the system message, the task and the memory's system message; one tool.
    assert page.evaluate(_STEPPER_JS)["request"] == ["3", "1"]

    page.set_viewport_size({"width": 1100, "height": 2400})
    nb.settle()
    shot = ARTIFACTS / f"walkthrough-stepper{suffix}.png"
    page.locator(".jp-OutputArea .nba-stepper-live").first.screenshot(path=str(shot))
    page.set_viewport_size({"width": 1280, "height": 900})
    assert shot.read_bytes()[:8] == PNG_MAGIC and shot.stat().st_size > 20_000
    assert DOCS_SHOT.read_bytes()[:8] == PNG_MAGIC
    assert nb.error_outputs() == []
    assert nb.console_errors == []
    assert nb.xss_hits() == {"window": [], "dom": ""}
