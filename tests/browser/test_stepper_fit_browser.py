"""The stepper's diagram fits JupyterLab at 1280 px with the file browser open (issue 43.7).

The diagram is drawn 900 px wide; with the file browser open a notebook at 1280 px has about 800 px for
an output, and the diagram was cut at the right edge (a scroll bar under it). It now scales to the width
it has (down to 825 px, its text at 11 px or more; below, it scrolls: tests/browser/test_untrusted_browser.py
at 800 px), in the live widget and in the static copy.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import LabNotebook
from .test_stepper_browser import CELLS

pytestmark = [pytest.mark.browser, pytest.mark.slow]

FIT_JS = """() => [...document.querySelectorAll('.jp-OutputArea .nba-diagram')]
  .filter(d => d.checkVisibility()).map(d => {
    const svg = d.querySelector('svg.nba-pipeline');
    const box = d.getBoundingClientRect(), drawn = svg.getBoundingClientRect();
    const area = d.closest('.jp-OutputArea-output').getBoundingClientRect();
    return {client: d.clientWidth, scroll: d.scrollWidth, svg: drawn.width, svgRight: drawn.right,
            right: Math.min(box.right, area.right), live: !!d.closest('.nba-stepper-live')};
  })"""


def test_the_stepper_diagram_fits_1280_px_with_the_file_browser_open(
    run_notebook_in_lab: Callable[..., LabNotebook], record_property: Callable[[str, object], None]
) -> None:
    nb = run_notebook_in_lab(CELLS, name="stepper_fit")
    page = nb.page
    page.set_viewport_size({"width": 1280, "height": 900})
    page.evaluate("() => window.jupyterapp.shell.activateById('filebrowser')")
    page.wait_for_function("() => document.querySelector('#filebrowser').checkVisibility()")
    nb.settle()
    page.locator(".nba-stepper-live .jupyter-button", has_text="Next").click()
    page.wait_for_function(
        "() => { const h = document.querySelector('.jp-OutputArea .nba-stepper-live .nba-stepper-head');"
        " return h && h.dataset.index === '1'; }"
    )
    nb.settle()
    nb.shot("1280-file-browser")
    diagrams = page.evaluate(FIT_JS)
    record_property("diagrams", diagrams)
    print(diagrams)
    assert [d["live"] for d in diagrams] == [True]  # the copy hides while the live widget shows
    (diagram,) = diagrams
    assert diagram["client"] < 900  # the space is narrower than the diagram's drawn width...
    assert diagram["scroll"] <= diagram["client"] + 1, diagram  # ...and nothing of it is cut or scrolled
    assert diagram["svgRight"] <= diagram["right"] + 1, diagram
    assert diagram["svg"] >= 825, diagram  # its text keeps 11 px or more (12 px drawn)
