"""Redo the screenshots in docs/, light and dark: ``python -m tests.browser.screenshots``.

It starts the browser tests' JupyterLab server (``conftest._serve``) and Debian's Chromium, runs two
notebooks with Run All and photographs three views in JupyterLab Light and JupyterLab Dark:

=======================  ====================================================================
``live_view[_dark].png``  a finished run (``await nbagent.show``): four parallel tool calls, the
                          streamed Markdown answer (a table, code), the footer
``stepper[_dark].png``    ``nbagent.step`` four moves in: the diagram at STEP 5's tool request,
                          the four tool cards, the context
``walkthrough[_dark].png`` the walkthrough (notebooks/02) after Run All, its stepper clicked
                          Next four times from the start: STEP 4, the request the model receives
=======================  ====================================================================

``--out DIR`` writes them elsewhere (default: docs/). Offline: the notebooks use the replay model.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from pathlib import Path

from playwright.sync_api import Browser, BrowserContext, sync_playwright

from .conftest import CHROMIUM, CHROMIUM_ARGS, REPO, LabNotebook, LabServer, _serve, open_notebook
from .views16 import SETUP

WALKTHROUGH = REPO / "notebooks" / "02_walkthrough_steps_1_5.ipynb"
CELLS = [
    SETUP,
    "agent = adder('assistant')\nview = await nbagent.show(agent, 'What are 0+1, 1+2, 2+3 and 3+4?')",
    "stepper = nbagent.step(adder('assistant'), 'What are 0+1, 1+2, 2+3 and 3+4?')\nstepper",
    "for _ in range(4):\n    await stepper.next()",
]
THEMES = (("JupyterLab Light", ""), ("JupyterLab Dark", "_dark"))
_HEAD_AT_JS = (
    "(i) => document.querySelector('.jp-OutputArea .nba-stepper-live .nba-stepper-head').dataset.index === String(i)"
)


@contextlib.contextmanager
def _server() -> Iterator[LabServer]:
    serving = _serve()
    server = next(serving)
    try:
        yield server
    finally:
        serving.close()  # runs _serve's cleanup: the server stopped by its PID


def _walk_four_moves(walk: LabNotebook) -> None:
    page = walk.page
    page.evaluate(
        """async () => { const nb = window.jupyterapp.shell.currentWidget.content;
             const i = nb.widgets.findIndex(c => c.model.sharedModel.getSource().includes('= nbagent.step('));
             nb.activeCellIndex = i; await nb.scrollToItem(i, 'start'); }"""
    )
    next_button = page.locator(".jp-OutputArea .nba-stepper-live .jupyter-button", has_text="Next")
    for index in range(1, 5):
        next_button.click()
        page.wait_for_function(_HEAD_AT_JS, arg=index)
    walk.settle()


def take(out: Path, server: LabServer | None = None, browser: Browser | None = None) -> list[Path]:
    """Take the six screenshots into ``out``; the paths written. ``server`` and ``browser``: the
    ones to use (the browser tests' fixtures), else a server and a Chromium of its own."""
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if server is None:
            server = stack.enter_context(_server())
        if browser is None:
            playwright = stack.enter_context(sync_playwright())
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            stack.callback(browser.close)
        context = browser.new_context(viewport={"width": 1100, "height": 2800})
        stack.callback(context.close)
        return _shoot(out, server, context)


def _shoot(out: Path, server: LabServer, context: BrowserContext) -> list[Path]:
    written = []
    views = open_notebook(server, context, CELLS, "docs_views")
    walk = open_notebook(server, context, WALKTHROUGH, "docs_walkthrough")
    try:
        _walk_four_moves(walk)
        for theme, suffix in THEMES:
            for notebook in (views, walk):
                notebook.set_theme(theme)
                notebook.settle()
            shots = [
                (views, ".jp-RenderedHTMLCommon .nba-view", f"live_view{suffix}.png"),
                (views, ".jp-OutputArea .nba-stepper-live", f"stepper{suffix}.png"),
                (walk, ".jp-OutputArea .nba-stepper-live", f"walkthrough{suffix}.png"),
            ]
            for notebook, selector, name in shots:
                target = out / name
                notebook.page.locator(selector).first.screenshot(path=str(target))
                written.append(target)
    finally:
        for notebook in (views, walk):
            notebook.set_theme("JupyterLab Light")
            notebook.page.close()
        for session in server.api("GET", "api/sessions") or []:
            if session["path"] in ("docs_views.ipynb", "docs_walkthrough.ipynb"):
                server.api("DELETE", f"api/sessions/{session['id']}")
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="where to write the PNG files")
    args = parser.parse_args(argv)
    for path in take(args.out):
        print(f"{path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
