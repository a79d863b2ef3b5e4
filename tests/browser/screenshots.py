"""Redo the screenshots in docs/, light and dark: ``python -m tests.browser.screenshots``.

It starts the browser tests' JupyterLab server (``conftest._serve``) and Debian's Chromium, runs three
notebooks with Run All and photographs four views in JupyterLab Light and JupyterLab Dark:

=======================  ====================================================================
``live_view[_dark].png``  a finished run (``await nbagent.show``): four parallel tool calls, the
                          streamed Markdown answer (a table, code), the footer
``stepper[_dark].png``    ``nbagent.step`` four moves in: the diagram at STEP 5's tool request,
                          the four tool cards, the context
``walkthrough[_dark].png`` the walkthrough (notebooks/02) after Run All, its stepper clicked
                          Next four times from the start: STEP 4, the request the model receives
``explorer[_dark].png``   ``trace.explore()`` over 40 runs of three agents: sorted by latency (its
                          header clicked twice), a run opened (clicked), the next row highlighted
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
EXPLORER_CELLS = [
    SETUP
    + """
import json
from nbagent import Trace
CITIES = {'Paris': '12 °C', 'Tokyo': '18 °C', 'Lima': '19 °C', 'Oslo': '-2 °C'}
async def get_weather(city: str) -> str:
    \"\"\"Current weather of a city.\"\"\"
    if city not in CITIES:
        raise LookupError(f'no weather station in {city}')
    return CITIES[city]
def weather(cities):
    calls = [FunctionCall(id=f'c{i}', name='get_weather', arguments=json.dumps({'city': c}))
             for i, c in enumerate(cities)]
    usage = RequestUsage(prompt_tokens=120 + 15 * len(cities), completion_tokens=9 * len(cities))
    script = [CreateResult(finish_reason='function_calls', content=calls, usage=usage),
              'Here is the weather: ' + ', '.join(cities) + '.']
    return AssistantAgent('weather', ReplayChatCompletionClient(script), tools=[get_weather])
trace = Trace()
names = [*CITIES, 'Atlantis']
for i in range(40):
    if i % 9 == 4:
        agent, task = AssistantAgent('planner', ReplayChatCompletionClient([])), f'Plan trip {i} to {names[i % 5]}'
    elif i % 3 == 0:
        agent, task = adder('adder', cards=1 + i % 4), f'Sum the pairs of list {i}'
    else:
        cities = [names[(i + k) % 5] for k in range(1 + i % 3)]
        agent, task = weather(cities), f"Weather in {', '.join(cities)}?"
    with trace.recording(agent):
        try:
            await agent.run(task=task)
        except Exception:
            pass
explorer = trace.explore(page_size=8)
explorer""",
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
    """Take the eight screenshots into ``out``; the paths written. ``server`` and ``browser``: the
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


def _explore(explorer: LabNotebook) -> None:
    """Sort by latency (the header clicked twice: descending), open the second run, highlight the third."""
    page = explorer.page
    grid = ".jp-OutputArea .nba-explorer-live .nba-x-grid"
    header = page.locator(f"{grid} th[data-column=latency_s]")
    for order in ("ascending", "descending"):
        header.click()
        page.wait_for_function(
            "([sel, order]) => document.querySelector(sel)?.getAttribute('aria-sort') === order",
            arg=[f"{grid} th[data-column=latency_s]", order],
        )
    page.locator(f"{grid} tr[data-run]").nth(1).click()
    page.wait_for_selector(".jp-OutputArea .nba-explorer-live .nba-x-detail .nba-view .nba-title", timeout=60_000)
    page.keyboard.press("ArrowDown")
    explorer.settle()


def _shoot(out: Path, server: LabServer, context: BrowserContext) -> list[Path]:
    written = []
    views = open_notebook(server, context, CELLS, "docs_views")
    walk = open_notebook(server, context, WALKTHROUGH, "docs_walkthrough")
    explorer = open_notebook(server, context, EXPLORER_CELLS, "docs_explorer")
    notebooks = (views, walk, explorer)
    try:
        _walk_four_moves(walk)
        _explore(explorer)
        for theme, suffix in THEMES:
            for notebook in notebooks:
                notebook.set_theme(theme)
                notebook.settle()
            shots = [
                (views, ".jp-RenderedHTMLCommon .nba-view", f"live_view{suffix}.png"),
                (views, ".jp-OutputArea .nba-stepper-live", f"stepper{suffix}.png"),
                (walk, ".jp-OutputArea .nba-stepper-live", f"walkthrough{suffix}.png"),
                (explorer, ".jp-OutputArea .nba-explorer-live", f"explorer{suffix}.png"),
            ]
            for notebook, selector, name in shots:
                target = out / name
                notebook.page.locator(selector).first.screenshot(path=str(target))
                written.append(target)
    finally:
        for notebook in notebooks:
            notebook.set_theme("JupyterLab Light")
            notebook.page.close()
        for session in server.api("GET", "api/sessions") or []:
            if session["path"] in ("docs_views.ipynb", "docs_walkthrough.ipynb", "docs_explorer.ipynb"):
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
