"""The harness itself, proven on plain ipywidgets: render, kernel callbacks, background updates, save."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from nbagent.notebook.saved import STATE_MIME, VIEW_MIME

from ..kernels import CHANNELS, KERNEL_TRANSPORT
from ..waits import until
from .conftest import (
    QUIET_JS,
    WIDGET_RESTORE_RACE_LOG,
    LabNotebook,
    LabServer,
    StaticPage,
    reopened_with_widgets,
)

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
    # The ticker's task runs on after its cell: its last update is an event to wait for, not a quiet DOM (beside
    # a second full run at load 20 to 30, the page was quiet for 0.5 s between two ticks and read "tick 19").
    page.locator(".jp-OutputArea .widget-html-content", has_text="tick 20").wait_for()
    texts = nb.output_texts()
    assert [t.strip() for t in texts] == ["", "harness ready", "Press me\nclicks: 0", "tick 20", "last cell ran"]

    page.get_by_role("button", name="Press me").click()
    page.get_by_role("button", name="Press me").click()
    nb.settle()
    assert page.locator(".widget-html-content", has_text="clicks:").inner_text() == "clicks: 2"

    saved = json.loads(nb.save())
    state = saved["metadata"]["widgets"][STATE_MIME]["state"]
    values = sorted(m["state"].get("value") for m in state.values() if m["model_name"] in ("HTMLModel", "LabelModel"))
    assert values == ["clicks: 2", "harness ready", "tick 20"]
    assert nb.error_outputs() == []
    assert nb.console_errors == []
    assert nb.screenshot is not None and nb.screenshot.stat().st_size > 10_000

    # A request the server answers with a 5xx is the server's failure, kept apart from the page's errors.
    page.route(lambda url: "/nbagent-probe" in url, lambda route: route.fulfill(status=500, body="down"))
    assert page.evaluate("fetch('nbagent-probe?token=secret').then(answer => answer.status)") == 500

    def probe_lines() -> list[str]:
        return [line for line in nb.server_errors if "/nbagent-probe" in line]

    for _ in range(240):  # the response and the console line come as events of their own (a 60 s hang guard)
        if len(probe_lines()) == 2:
            break
        page.wait_for_timeout(250)
    assert nb.console_errors == []
    (response,) = [line for line in probe_lines() if line.startswith("500 GET http://127.0.0.1:")]
    (console,) = [line for line in probe_lines() if line.startswith("console.error: Failed to load resource")]
    assert response.endswith("/nbagent-probe") and "status of 500" in console and console.endswith("/nbagent-probe)")
    assert all("secret" not in line for line in nb.server_errors)


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


class _Page:
    """What ``reopened_with_widgets`` asks of a page: the outcome of its wait, and a console line that
    comes during the 2.5 s after it (as ipywidgets logs a model it gave up on)."""

    def __init__(self, outcome: str, errors: list[str], late: str | None = None) -> None:
        self.outcome, self.errors, self.late, self.closed = outcome, errors, late, False

    def wait_for_function(self, script: str, timeout: int) -> Any:
        return SimpleNamespace(json_value=lambda: self.outcome)

    def wait_for_timeout(self, ms: int) -> None:
        if self.late is not None:
            self.errors.append(self.late)

    def close(self) -> None:
        self.closed = True


def _saved(root: Path, models: list[str], held: list[str]) -> None:
    outputs = [{"output_type": "display_data", "data": {VIEW_MIME: {"model_id": m}}, "metadata": {}} for m in models]
    state = {STATE_MIME: {"state": {m: {} for m in held}}}
    cell = {"cell_type": "code", "source": "", "outputs": outputs, "metadata": {}, "execution_count": 1}
    (root / "saved.ipynb").write_text(json.dumps({"cells": [cell], "metadata": {"widgets": state}}))


@pytest.mark.parametrize(
    ("pages", "opened"),
    [
        ([("lost", None), ("restored", None)], 2),  # the output showed the miss
        ([("restored", WIDGET_RESTORE_RACE_LOG + "\n    at x.get_model"), ("restored", None)], 2),  # it logged it
        ([("restored", "console.error: something else")], 1),  # another error is the test's to judge
    ],
)
def test_a_page_that_lost_a_saved_model_is_checked_closed_and_opened_again(
    tmp_path: Path, pages: list[tuple[str, str | None]], opened: int
) -> None:
    _saved(tmp_path, ["m1"], ["m1"])
    made: list[LabNotebook] = []
    discarded: list[LabNotebook] = []

    def open_again() -> LabNotebook:
        outcome, late = pages[len(made)]
        errors: list[str] = []
        page = _Page(outcome, errors, late)
        made.append(LabNotebook(SimpleNamespace(root=tmp_path), "saved", page, console_errors=errors))  # type: ignore[arg-type]
        return made[-1]

    got = reopened_with_widgets(open_again, "true", on_discard=discarded.append)
    assert got is made[-1] and len(made) == opened and discarded == made[:-1]
    assert [notebook.page.closed for notebook in made] == [True] * (opened - 1) + [False]  # type: ignore[attr-defined]


def test_a_lost_model_fails_after_three_opens_and_one_the_saved_state_lacks_at_once(tmp_path: Path) -> None:
    made: list[LabNotebook] = []

    def open_again() -> LabNotebook:
        made.append(LabNotebook(SimpleNamespace(root=tmp_path), "saved", _Page("lost", []), []))  # type: ignore[arg-type]
        return made[-1]

    _saved(tmp_path, ["m1"], ["m1"])
    with pytest.raises(pytest.fail.Exception, match="on each of 3 opens"):
        reopened_with_widgets(open_again, "true")
    assert len(made) == 3
    _saved(tmp_path, ["m1", "m2"], ["m1"])
    with pytest.raises(pytest.fail.Exception, match=r"saved widget state lacks: \['m2'\]"):
        reopened_with_widgets(open_again, "true")
    assert len(made) == 4


def test_the_servers_kernels_talk_over_unix_sockets(lab: LabServer) -> None:
    """A kernel the JupyterLab server starts has its five channels on Unix sockets (``KERNEL_TRANSPORT``,
    given on the server's command line), named after its connection file, and removes them at shutdown."""
    kernel = lab.api("POST", "api/kernels")
    try:
        connection = lab.root.parent / "runtime" / f"kernel-{kernel['id']}.json"
        until(connection.exists, "the kernel's connection file")
        info = json.loads(connection.read_text())
        paths = [f"{info['ip']}-{info[name]}" for name in CHANNELS]
        assert (info["transport"], info["ip"]) == (KERNEL_TRANSPORT, str(connection.with_suffix("")) + "-ipc")
        until(lambda: all(os.path.exists(path) for path in paths), "the kernel's sockets")
    finally:
        lab.api("DELETE", f"api/kernels/{kernel['id']}")
    until(lambda: not any(os.path.exists(path) for path in paths), "the sockets' removal")
