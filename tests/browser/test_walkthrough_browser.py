"""The walkthrough (notebooks/02) in JupyterLab: Run All in headless Chromium, then stepped by hand.

Saves ``test-artifacts/walkthrough.png`` (the page after Run All) and
``test-artifacts/walkthrough-stepper.png`` (the stepper widget paused at STEP 4, the model call).
With ``NBAGENT_UPDATE_DOCS=1`` the latter is also copied to ``docs/walkthrough.png``, the README's
image (committed; the test checks it is there).
"""

from __future__ import annotations

import os
import shutil

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
  const views = [...document.querySelectorAll('.jp-OutputArea .nba-stepper')];
  const view = views[0];
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
    "(i) => document.querySelector('.jp-OutputArea .nba-stepper .nba-stepper-head').dataset.index === String(i)"
)


def test_walkthrough_runs_in_lab_and_its_stepper_steps_by_hand(run_notebook_in_lab) -> None:
    code_cells = sum(cell.cell_type == "code" for cell in nbformat.read(WALKTHROUGH, as_version=4).cells)
    nb: LabNotebook = run_notebook_in_lab(WALKTHROUGH, name="walkthrough")
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
        "second run: AgentBusyError",
        "ValueError: Tools cannot be used with a workbench.",
    ):
        assert line in text

    # The cells walked the stepper to its end: one widget, finished on the reflection move.
    assert page.evaluate(_SCROLL_TO_STEPPER_JS) > 0
    nb.settle()
    end = page.evaluate(_STEPPER_JS)
    assert (end["views"], end["status"], end["step"], end["move"], end["current"]) == (
        1, "finished", "5", "reflect", ["reflect"]
    )  # fmt: skip

    # By hand now: Reset, then Next four times makes STEP 1, 2, 3 and the STEP 4 model call.
    buttons = page.locator(".jp-OutputArea .nba-stepper .jupyter-button")
    buttons.filter(has_text="Reset").click()
    page.wait_for_function(_HEAD_AT_JS, arg=0)
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
    shot = ARTIFACTS / "walkthrough-stepper.png"
    page.locator(".jp-OutputArea .nba-stepper").first.screenshot(path=str(shot))
    page.set_viewport_size({"width": 1280, "height": 900})
    assert shot.read_bytes()[:8] == PNG_MAGIC and shot.stat().st_size > 20_000
    if os.environ.get("NBAGENT_UPDATE_DOCS") == "1":
        shutil.copyfile(shot, DOCS_SHOT)
    assert DOCS_SHOT.read_bytes()[:8] == PNG_MAGIC
    assert nb.error_outputs() == []
    assert nb.console_errors == []
    assert nb.xss_hits() == {"window": [], "title": "", "dom": ""}
