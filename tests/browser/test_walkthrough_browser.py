"""The teaching walkthrough (notebooks/02) opened and Run All in JupyterLab (issue 7, item 4)."""

from __future__ import annotations

import nbformat
import pytest

from .conftest import REPO, LabNotebook

pytestmark = pytest.mark.browser

WALKTHROUGH = REPO / "notebooks" / "02_walkthrough_steps_1_5.ipynb"

_PROMPTS_JS = "() => [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')].map(p => p.textContent.trim())"
_STEPPER_JS = """() => [...document.querySelectorAll('.jp-OutputArea .nba-stepper')].map(s => [
  s.querySelector('.nba-stepper-status [data-status]').dataset.status,
  s.querySelector('.nba-stepper-head').dataset.step,
  s.querySelectorAll('.nba-node[data-state=visited], .nba-node[data-state=current]').length > 0,
])"""


def test_walkthrough_runs_in_lab(run_notebook_in_lab) -> None:
    code_cells = sum(cell.cell_type == "code" for cell in nbformat.read(WALKTHROUGH, as_version=4).cells)
    nb: LabNotebook = run_notebook_in_lab(WALKTHROUGH, name="walkthrough")
    page = nb.page
    assert page.evaluate(_PROMPTS_JS) == [f"[{n}]:" for n in range(1, code_cells + 1)]
    assert nb.error_outputs() == []
    assert nb.console_errors == []
    assert page.evaluate(_STEPPER_JS) == [["finished", "5", True]]
    assert nb.shot("stepper", ".jp-OutputArea .nba-stepper").stat().st_size > 20_000
    assert nb.xss_hits() == {"window": [], "title": "", "dom": ""}
