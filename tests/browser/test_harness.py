"""The harness itself, proven on plain ipywidgets: render, kernel callbacks, background updates, save."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from .conftest import LabNotebook

pytestmark = pytest.mark.browser

CELLS = [
    "import asyncio\nimport ipywidgets as widgets",
    "label = widgets.Label('harness ready')\nlabel",
    # A button whose callback runs in the kernel after Run All has finished.
    "clicks = widgets.HTML('clicks: 0')\n"
    "button = widgets.Button(description='Press me')\n"
    "def on_click(_):\n"
    "    clicks.value = f'clicks: {int(clicks.value.split()[-1]) + 1}'\n"
    "button.on_click(on_click)\n"
    "widgets.VBox([button, clicks])",
    # Updates from a task that keeps running after the cell has returned.
    "ticker = widgets.HTML('tick 0')\n"
    "async def tick():\n"
    "    for i in range(1, 21):\n"
    "        await asyncio.sleep(0.02)\n"
    "        ticker.value = f'tick {i}'\n"
    "task = asyncio.ensure_future(tick())\n"
    "ticker",
    "print('last cell ran')",
]


def test_plain_widgets_render_update_and_save(run_notebook_in_lab: Callable[..., LabNotebook]) -> None:
    nb: LabNotebook = run_notebook_in_lab(CELLS, name="harness_widgets")
    page = nb.page
    texts = nb.output_texts()
    assert [t.strip() for t in texts] == ["", "harness ready", "Press me\nclicks: 0", "tick 20", "last cell ran"]

    page.get_by_role("button", name="Press me").click()
    page.get_by_role("button", name="Press me").click()
    nb.settle()
    assert page.locator(".widget-html-content", has_text="clicks:").inner_text() == "clicks: 2"

    saved = json.loads(nb.save())
    state = saved["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    values = sorted(m["state"].get("value") for m in state.values() if m["model_name"] in ("HTMLModel", "LabelModel"))
    assert values == ["clicks: 2", "harness ready", "tick 20"]
    assert nb.error_outputs() == []
    assert nb.console_errors == []
    assert nb.screenshot is not None and nb.screenshot.stat().st_size > 10_000
