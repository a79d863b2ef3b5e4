"""The harness itself, proven on plain ipywidgets: render, kernel callbacks, background updates, save."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from .conftest import QUIET_JS, LabNotebook, StaticPage

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

    # A request the server answers with a 5xx is the server's failure, kept apart from the page's errors.
    page.route(lambda url: "/nbagent-probe" in url, lambda route: route.fulfill(status=500, body="down"))
    assert page.evaluate("fetch('nbagent-probe?token=secret').then(answer => answer.status)") == 500
    for _ in range(240):  # the console's line comes as an event of its own (a 60 s hang guard)
        if len(nb.server_errors) == 2:
            break
        page.wait_for_timeout(250)
    assert nb.console_errors == []
    response, console = nb.server_errors
    assert response.startswith("500 GET http://127.0.0.1:") and response.endswith("/nbagent-probe")
    assert console.startswith("console.error: Failed to load resource: the server responded with a status of 500")
    assert console.endswith("/nbagent-probe)") and "secret" not in response + console


# A page with one element that changes every 50 ms (its text, or one of its attributes), and another that
# changes once, from start() on (after the page has opened).
_TICKING = """<!doctype html><html><body><div class="{classes}"><span class="nba-status">0</span></div>
<div class="elsewhere"><span>ended</span></div>
<script>let n = 0; const ticker = document.querySelector('div');
function start() {{
  setInterval(() => {{ n += 1; if ('{tick}' === 'text') ticker.firstChild.textContent = String(n);
    else ticker.setAttribute('data-windowed-list-index', String(n)); }}, 50);
  setTimeout(() => {{ document.querySelector('.elsewhere span').textContent = 'changed once'; }}, 100);
}}</script>
</body></html>"""


@pytest.mark.parametrize(
    ("classes", "tick", "quiet"),
    [
        ("nba-view nba-state-running", "text", True),  # a running view's elapsed time
        ("nba-view nba-state-ok", "text", False),  # an ended view's
        ("jp-Cell", "attribute", True),  # Notebook 7 renumbering its cells while a running view grows
        ("nba-view nba-state-ok", "attribute", False),  # an attribute of what an output shows
    ],
)
def test_the_quiet_wait_leaves_out_only_a_running_views_ticks(
    open_static_html: Callable[[Path], StaticPage], tmp_path: Path, classes: str, tick: str, quiet: bool
) -> None:
    """A running view ticks until its run ends (and Notebook 7 rewrites its cells' attributes as it grows):
    the settle's DOM-quiet wait does not wait for that (it waited its whole cap before), while any other
    change still keeps the page from being quiet."""
    page_file = tmp_path / "ticking.html"
    page_file.write_text(_TICKING.format(classes=classes, tick=tick))
    page = open_static_html(page_file).page
    page.evaluate("() => start()")
    assert page.evaluate(QUIET_JS, [500, 5_000]) is quiet
    assert page.evaluate("() => n") >= 2  # it ticked during the wait
