"""What if, one click each (issue 44.3) in JupyterLab: the stepper's What if buttons are disabled with the reason
until the walk can be asked, then one click makes the fork, walks it to its end and shows it with the
comparison's sentences; the walk waits where it was."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import LabNotebook
from .test_fork_browser import CELLS, HEAD_INDEX

pytestmark = [pytest.mark.slow, pytest.mark.browser]
PARENT = ".jp-OutputArea .nba-stepper-live"


def test_what_if_the_tool_fails_in_one_click(run_notebook_in_lab: Callable[..., LabNotebook]) -> None:
    nb = run_notebook_in_lab(CELLS, name="whatif_lab")
    page = nb.page
    assert nb.output_texts()[-1].strip() == "cells done"
    fails = page.locator(f"{PARENT} .nba-what-if-tool-fails").first
    assert fails.is_disabled() and fails.get_attribute("title", timeout=5_000) is not None
    assert fails.get_attribute("title").startswith("the model has not asked for a tool yet")
    next_button = page.locator(f"{PARENT} .nba-stepper-bar .jupyter-button", has_text="Next").first
    for index in range(1, 5):  # paused before the tools run
        next_button.click()
        page.wait_for_function(HEAD_INDEX, arg=[PARENT, index])
    page.wait_for_function(
        "(s) => { const b = document.querySelector(s); return b && !b.disabled; }",
        arg=f"{PARENT} .nba-what-if-tool-fails",
    )
    box = fails.bounding_box()
    assert box is not None and box["width"] > 150  # its whole question shows, not cut at a button's width
    assert fails.inner_text().strip() == "What if the tool fails?"
    fails.click()
    fork = ".nba-forks .nba-stepper-live"
    page.wait_for_function(
        "() => document.querySelector('.nba-forks .nba-compare .nba-compare-sentences li') !== null", timeout=60_000
    )
    nb.settle()
    sentences = page.locator(".nba-forks .nba-compare .nba-compare-sentences").first.inner_text()
    assert "fork also runs add" in sentences and "error: Error: the tool failed (a what-if fork)" in sentences
    title = page.locator(f"{fork} .nba-fork-title").first.inner_text()
    assert title.startswith("What if the tool fails? Fork of run "), title  # the fork asks its question
    assert (
        page.evaluate(
            "() => document.querySelector('.jp-OutputArea .nba-stepper-live .nba-stepper-head').dataset.index"
        )
        == "4"
    )  # the walk waits before its tools, as it was
    nb.shot("what-if", selector=f"{PARENT} .nba-fork-panel")
    assert nb.error_outputs() == [] and nb.console_errors == []
