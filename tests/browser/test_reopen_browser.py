"""A saved notebook reopened, and exported (issue 16.2), in JupyterLab and Notebook 7, with the widget
manager saving widget state and without.

Run All makes every kind of view (``await show``, ``start`` then ``wait``, ``run(show=True)``,
``%%agent``, a run stopped mid-stream, a failed one, a stepper walked three moves, a trace); the
notebook is saved from the page, the kernels are shut down and the notebook is opened again in a
new page. Every run shows its static copy (the finished view's output is replaced by it when the
run ends) and the stepper its last state as static HTML: no "Error displaying widget: model not
found", no "Loading widget...", no disconnected widget rebuilt from the saved state. A stepper walked
to its end and then closed (``close_widgets``) leaves no widget output: without saved widget state the
page logs one "widget model not found", for the stepper still mid-walk when saved, and none for it. Then nbconvert
exports the saved file and the page is opened offline (every request but file: aborted): the same
views show, with and without saved widget state.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from nbconvert import HTMLExporter

from .conftest import LabNotebook, StaticPage, reopened_with_widgets
from .measure import VISIBLE_OUTPUTS_JS
from .views16 import SETUP

pytestmark = pytest.mark.browser

CELLS = [
    SETUP,
    "%load_ext nbagent",
    "shown_agent = adder('shown')\nshown = await nbagent.show(shown_agent, 'Sum the four pairs.')",
    "background = nbagent.start(adder('background'), 'Sum the four pairs.')",
    "await background.wait()",
    "nbagent.run(adder('synced'), 'Sum the four pairs.', show=True)",
    "magic = adder('magic')",
    "%%agent magic\nSum the four pairs.",
    "cut = nbagent.start(talker('cutter', 0.01), 'Talk.')\nawait asyncio.sleep(0.6)\ncut.stop()\nawait cut.wait()",
    "try:\n    await nbagent.show(AssistantAgent('failing', ReplayChatCompletionClient([])), 'Hello?')\n"
    "except Exception as error:\n    print(type(error).__name__)",
    "stepper = nbagent.step(adder('stepped'), 'Sum the pairs.')\nstepper",
    "for _ in range(3):\n    await stepper.next()",
    "shown_agent.trace",
    "closed = nbagent.step(adder('closed'), 'Sum the pairs.')\nclosed",
    "await closed.run_to_end()\nclosed.close_widgets()",
]
VIEWS = {"shown": "ok", "background": "ok", "synced": "ok", "magic": "ok", "cutter": "cancelled", "failing": "error"}

# What a page shows of the views: each visible view's title and status, the visible static copies
# of steppers (their head's move index), visible live or disconnected widgets, trace summaries.
_SEEN_JS = """() => {
  const visible = (selector) => [...document.querySelectorAll(selector)].filter(e => e.checkVisibility());
  return {
    views: visible('.nba-view').map(v => [v.querySelector('.nba-title').textContent.trim(), v.dataset.status]),
    copies: visible('.nba-static-copy').map(c => c.querySelector('.nba-stepper-head').dataset.index),
    live: visible('.nba-stepper-live').length,
    disconnected: visible('.jupyter-widgets-disconnected').length,
    traces: visible('.nba-trace .nba-trace-summary').length,
    discarded: visible('.nba-discarded .nba-discarded-note').length,
    text: document.body.innerText,
  };
}"""


# Both steppers show their copies, and no widget is still loading or was lost.
_RESTORED_JS = """[...document.querySelectorAll('.nba-static-copy')].filter(e => e.checkVisibility()).length === 2
  && !document.body.innerText.includes('Loading widget')
  && !document.body.innerText.includes('Error displaying widget')"""


def check_page(seen: dict[str, object], where: str, closed: str) -> None:
    assert dict(seen["views"]) == VIEWS, where  # type: ignore[call-overload]
    assert len(seen["views"]) == len(VIEWS), where  # type: ignore[arg-type]
    assert seen["copies"] == ["3", closed], where  # the stepper walked three moves, the closed one's end
    assert (seen["live"], seen["disconnected"]) == (0, 0), where
    assert seen["traces"] == 1 and seen["discarded"] == 1, where
    text = str(seen["text"])
    assert "Error displaying widget" not in text and "Loading widget" not in text, where


@pytest.mark.parametrize("widget_state", [True, False], ids=["widget-state", "no-widget-state"])
@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_a_saved_notebook_shows_every_run_when_reopened_and_exported(
    run_notebook_in_lab: Callable[..., LabNotebook],
    open_static_html: Callable[[Path], StaticPage],
    request: pytest.FixtureRequest,
    frontend: str,
    widget_state: bool,
    tmp_path: Path,
) -> None:
    name = f"reopen_{frontend}_{'state' if widget_state else 'nostate'}"
    server = request.getfixturevalue("lab" if frontend == "lab" else "notebook7")
    server.save_widget_state(widget_state)  # read by the pages opened from now on
    try:
        nb = run_notebook_in_lab(CELLS, name=name, frontend=frontend)
        assert nb.error_outputs() == []
        assert nb.page.evaluate(VISIBLE_OUTPUTS_JS)[9].strip().endswith("ReplayExhaustedError")
        live = nb.page.evaluate(_SEEN_JS)
        # The walked stepper's widget shows (its copy hidden); the closed one's copy shows, at its end.
        assert dict(live["views"]) == VIEWS and live["live"] == 1 and len(live["copies"]) == 1
        closed = live["copies"][0]
        assert int(closed) > 3
        saved = json.loads(nb.save())
        assert ("widgets" in saved["metadata"]) is widget_state
        widget_outputs = [
            output
            for cell in saved["cells"]
            for output in cell.get("outputs", [])
            if "application/vnd.jupyter.widget-view+json" in output.get("data", {})
        ]
        assert len(widget_outputs) == 1  # the walked stepper's: the closed one's output was emptied
        nb.page.close()
        server.shutdown_kernels()

        def open_again() -> LabNotebook:
            return run_notebook_in_lab(None, name=name, run_all=False, frontend=frontend)

        if widget_state:  # the walked stepper's widget comes back from the saved state
            reopened = reopened_with_widgets(open_again, _RESTORED_JS)
        else:
            reopened = open_again()
            reopened.page.wait_for_timeout(2000)  # the widget manager has given up on missing models by now
            # it logs the miss once it has given up (get_model polls for 2 s)
            for _ in range(40):
                if reopened.console_errors:
                    break
                reopened.page.wait_for_timeout(250)
        reopened.settle()
        check_page(reopened.page.evaluate(_SEEN_JS), f"reopened in {frontend}", closed)
        reopened.shot()
        if widget_state:
            assert reopened.console_errors == []
        else:
            # The walked stepper's output names a model only the old kernel had: ipywidgets' widget renderer
            # logs that miss (see nbagent.notebook.stepper_widget); the closed stepper's output names none.
            print(f"reopened in {frontend} without widget state: console errors {reopened.console_errors}")
            assert len(reopened.console_errors) == 1, reopened.console_errors
            assert "widget model not found" in reopened.console_errors[0]

        body, _ = HTMLExporter().from_filename(str(nb.path))
        export = tmp_path / f"{name}.html"
        export.write_text(body, encoding="utf-8")
        static = open_static_html(export)
        check_page(static.page.evaluate(_SEEN_JS), f"nbconvert of {frontend}'s save", closed)
        static.page.screenshot(path=str(tmp_path / f"{name}.png"), full_page=True)
    finally:
        server.save_widget_state(True)
