"""The explorer's page of rows shows whole in Notebook 7 and JupyterLab (issue 43.7): no inner scroll box.

Notebook 7 makes a cell's outputs a scroll box about 300 px tall (``jp-mod-outputsScrolled``) when they
grow past 100 lines (1,820 px) as an output is added or updated: the explorer's 50-row page sat in it,
three rows visible. The explorer's stylesheet keeps a cell showing an explorer unscrolled.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import LabNotebook
from .test_explorer_browser import BIG, GRID, LIVE, PAGE_ROWS, SETUP, detail_title, rows, wait_position

pytestmark = [pytest.mark.browser, pytest.mark.slow]

AREA_JS = """(sel) => {
  const live = document.querySelector(sel);
  const cell = live.closest('.jp-CodeCell');
  const area = cell.querySelector('.jp-Cell-outputArea');
  const style = getComputedStyle(area);
  return {scrolled: cell.classList.contains('jp-mod-outputsScrolled'), client: area.clientHeight,
          scroll: area.scrollHeight, overflow: style.overflowY, maxHeight: style.maxHeight,
          live: live.getBoundingClientRect().height};
}"""


def fits(area: dict[str, object]) -> bool:
    """Whether the output area shows the whole explorer: as tall as it, and clipping nothing."""
    return float(area["client"]) >= float(area["live"]) - 2 and (  # type: ignore[arg-type]
        area["overflow"] == "visible" or float(area["scroll"]) <= float(area["client"]) + 2  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("frontend", ["notebook", "lab"])
def test_the_explorers_page_shows_whole(
    run_notebook_in_lab: Callable[..., LabNotebook], frontend: str, record_property: Callable[[str, object], None]
) -> None:
    cells = [BIG.replace("big.explore()", f"big.explore(page_size={2 * PAGE_ROWS})")]
    nb = run_notebook_in_lab(cells, name=f"explorer_page_{frontend}", frontend=frontend)
    wait_position(nb.page, "of 100,000 runs")
    assert len(rows(nb.page)) == 2 * PAGE_ROWS
    area = nb.page.evaluate(AREA_JS, LIVE)
    record_property("output_area", area)
    print(frontend, area)
    assert area["live"] > 40 * PAGE_ROWS, area
    assert fits(area), area  # the output area is no scroll box: all of the explorer shows


@pytest.mark.parametrize("frontend", ["notebook"])
def test_the_explorer_with_a_run_open_shows_whole(
    run_notebook_in_lab: Callable[..., LabNotebook], frontend: str, record_property: Callable[[str, object], None]
) -> None:
    cells = [SETUP, "explorer = trace.explore()\nexplorer"]
    nb = run_notebook_in_lab(cells, name=f"explorer_open_{frontend}", frontend=frontend)
    wait_position(nb.page, "12 of 12 runs")
    first = rows(nb.page)[1]
    nb.page.locator(f"{GRID} tr[data-run='{first['run']}']").click()
    detail_title(nb.page)
    nb.settle()
    area = nb.page.evaluate(AREA_JS, LIVE)
    print(frontend, "open", area)
    other = rows(nb.page)[3]
    nb.page.locator(f"{GRID} tr[data-run='{other['run']}']").click(modifiers=["Shift"])
    nb.page.wait_for_function("(sel) => document.querySelector(sel + ' .nba-x-detail .nba-compare table')", arg=LIVE)
    nb.settle()
    area2 = nb.page.evaluate(AREA_JS, LIVE)
    print(frontend, "compare", area2)
    nb.shot("compare")
    assert fits(area), area
    assert fits(area2), area2
