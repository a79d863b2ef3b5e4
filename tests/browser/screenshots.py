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
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from playwright.sync_api import BrowserContext, Error, ViewportSize, sync_playwright

from .conftest import (
    CHROMIUM,
    CHROMIUM_ARGS,
    DARK,
    LIGHT,
    REPO,
    VIEWPORT,
    LabNotebook,
    LabPages,
    LabServer,
    _serve,
    open_notebook,
)
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
SUFFIXES = {LIGHT: "", DARK: "_dark"}
VIEWS = ("live_view", "stepper", "walkthrough", "explorer")
NAMES = [f"{view}{suffix}.png" for suffix in SUFFIXES.values() for view in VIEWS]
"""The files ``take`` writes, in the order it returns them."""
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


SHOT_VIEWPORT: ViewportSize = {"width": 1100, "height": 2800}


def take(
    out: Path, server: LabServer | None = None, context: BrowserContext | None = None, pages: LabPages | None = None
) -> list[Path]:
    """Take the eight screenshots into ``out``; the paths written. ``server``, ``context`` and ``pages``: the
    ones to use (the browser tests' fixtures), else a server, a Chromium and a page of its own."""
    out.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        if server is None:
            server = stack.enter_context(_server())
        if context is None:
            playwright = stack.enter_context(sync_playwright())
            browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            stack.callback(browser.close)
            context = browser.new_context(viewport=VIEWPORT)
            stack.callback(context.close)
        return _shoot(out, server, context, pages if pages is not None else LabPages())


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


SHOTS: tuple[tuple[Sequence[str] | Path, str, Callable[[LabNotebook], None] | None, dict[str, str]], ...] = (
    (
        CELLS,
        "docs_views",
        None,
        {"live_view": ".jp-RenderedHTMLCommon .nba-view", "stepper": ".jp-OutputArea .nba-stepper-live"},
    ),
    (WALKTHROUGH, "docs_walkthrough", _walk_four_moves, {"walkthrough": ".jp-OutputArea .nba-stepper-live"}),
    (EXPLORER_CELLS, "docs_explorer", _explore, {"explorer": ".jp-OutputArea .nba-explorer-live"}),
)
"""Each notebook: its source, name, what is done in it before the shots, and its shots (a name, the element)."""


def _shoot(out: Path, server: LabServer, context: BrowserContext, pages: LabPages) -> list[Path]:
    """The notebooks open one after the other in one JupyterLab page, each shot in the theme the page shows,
    then in the other (one switch a notebook), at ``SHOT_VIEWPORT``; the server's theme is Light after."""
    written: dict[str, Path] = {}
    notebook: LabNotebook | None = None
    try:
        for source, name, prepare, shots in SHOTS:
            notebook = open_notebook(server, context, source, name, pages=pages)
            notebook.page.set_viewport_size(SHOT_VIEWPORT)
            notebook.settle()
            if prepare is not None:
                prepare(notebook)
            for theme in notebook.theme_order():
                notebook.set_theme(theme)
                notebook.settle()
                for view, selector in shots.items():
                    target = out / f"{view}{SUFFIXES[theme]}.png"
                    notebook.page.locator(selector).first.screenshot(path=str(target))
                    written[target.name] = target
            notebook.set_theme(LIGHT)  # before the put-away, which may close the page
            pages.put_away(notebook)
            notebook = None
    finally:
        if notebook is not None:  # stopped half-way: the theme back to Light, the page closed
            with contextlib.suppress(Error):
                notebook.set_theme(LIGHT)
            with contextlib.suppress(Error):
                notebook.page.close()
        for session in server.api("GET", "api/sessions") or []:
            if session["path"] in {f"{name}.ipynb" for _, name, _, _ in SHOTS}:
                server.api("DELETE", f"api/sessions/{session['id']}")
    return [written[name] for name in NAMES]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "docs", help="where to write the PNG files")
    args = parser.parse_args(argv)
    for path in take(args.out):
        print(f"{path} ({path.stat().st_size:,} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
