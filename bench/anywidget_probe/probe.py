"""Measure the live run view served as an anywidget (``mirror.py``) against the ipywidgets view.

Issue 33 point 7: can the live view be an anywidget with no loss in JupyterLab and Notebook 7, and
does marimo then get the live view and Stop? And does Voila render the current view progressively?
This script runs each case in real servers on 127.0.0.1 and headless Chromium (the harness of
``tests/browser/conftest.py``) and prints one JSON object of figures. docs/architecture.md ("Views
in other frontends") quotes them.

Needs marimo and voila, which nbagent does not depend on (and anywidget, which it does since the
explorer's table): use a scratch venv that sees the project's venv, so the servers and kernels it
starts have everything::

    python3 -m venv /tmp/awvenv
    /work/main/.venv/bin/python -c 'import site; print(site.getsitepackages()[0])' \
        > /tmp/awvenv/lib/python3.11/site-packages/main_venv.pth
    /tmp/awvenv/bin/pip install anywidget marimo voila
    # JupyterLab's app dir, kernels and lab extensions of the project's venv (the extensions copied:
    # Voila's file handler refuses a symlink that leads out of its data dir, with 403):
    for d in kernels lab nbconvert; do ln -sfn /work/main/.venv/share/jupyter/$d /tmp/awvenv/share/jupyter/$d; done
    cp -r /work/main/.venv/share/jupyter/labextensions/* /tmp/awvenv/share/jupyter/labextensions/
    for f in /work/main/.venv/etc/jupyter/jupyter_server_config.d/*; do
        ln -sfn $f /tmp/awvenv/etc/jupyter/jupyter_server_config.d/; done
    PYTHONPATH=src:bench/anywidget_probe /tmp/awvenv/bin/python bench/anywidget_probe/probe.py \
        [--cases lab,notebook,marimo,voila] [--json out.json]

Per Jupyter frontend and path (``ipywidgets``: ``nbagent.show``/``start`` as shipped; ``anywidget``:
the same ``AgentRunView`` shown through ``ViewMirror``), one notebook streams a 400-word answer after
a tool call (10 ms a chunk) and starts a run that waits in a tool forever:

* ``first_view_s`` / ``first_text_s``: from Run All to the view in the DOM / its first streamed text;
* ``live_text_updates``: distinct lengths of the streamed text the page showed while the run went
  (0 = not live); ``done_s``: to the view's ``ok``;
* kernel side: ``handle_us_per_item`` (``AgentRunView.handle`` and the streamed-text flushes, with every
  widget or mirror update they make), ``comm_msgs`` and ``comm_kb`` sent on the widgets' comms;
* ``stop_s``: from the Stop click to ``cancelled`` in the page;
* the notebook saved (widget state on): its size, the widget state's size, the run cell's output
  types; then reopened untrusted on the other server: does the static copy show the answer?

marimo (``marimo run`` of ``MARIMO_APP``; the page polled every 20 ms, through shadow roots): per view,
when it appeared, its status changes and its distinct streamed texts: a mirrored run awaited in its
cell, the plain ipywidgets view, the static copy repainted with ``mo.output.replace``, a run awaited
for 25 s, background runs (one started before that cell, one after); Stop clicked on the waiting ones.

Voila (``VOILA_CELLS``, by default and with ``--progressive_rendering=True``): the same per-view
figures for ``await nbagent.show``, the mirror and an ``nbagent.start`` run; that run's Stop (seconds to
``cancelled``, what the kernel says, and whether the page still shows the view 3 s later); what the
page shows of a display updated 3 s after its cell ended.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from playwright.sync_api import Browser, BrowserContext, sync_playwright  # noqa: E402
from tests.browser.conftest import (  # noqa: E402
    CHROMIUM,
    CHROMIUM_ARGS,
    LabServer,
    _serve,
    open_notebook,
)

WORDS = 400

SETUP = f'''
import asyncio, json, time
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage
from nbagent.notebook import view as view_module
from nbagent.notebook.view import AgentRunView
from ipykernel.comm.comm import BaseComm
from IPython.display import display
from mirror import ViewMirror

stats = {{"msgs": 0, "bytes": 0, "handle_s": 0.0, "items": 0}}
_publish = BaseComm.publish_msg
def _counted(self, msg_type, data=None, metadata=None, buffers=None, **keys):
    stats["msgs"] += 1
    stats["bytes"] += len(repr(data))
    return _publish(self, msg_type, data, metadata, buffers, **keys)
BaseComm.publish_msg = _counted
_handle, _show = AgentRunView.handle, view_module._Stream._show
def _timed_handle(self, item):
    start = time.perf_counter(); _handle(self, item)
    stats["handle_s"] += time.perf_counter() - start; stats["items"] += 1
def _timed_show(self, text):
    start = time.perf_counter(); _show(self, text); stats["handle_s"] += time.perf_counter() - start
AgentRunView.handle, view_module._Stream._show = _timed_handle, _timed_show

def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {{city}}"

ANSWER = " ".join(f"word{{i}}" for i in range({WORDS}))
def helper(name="helper"):
    call = FunctionCall(id="c1", name="weather", arguments='{{"city": "Paris"}}')
    usage = RequestUsage(prompt_tokens=5, completion_tokens=5)
    script = [CreateResult(finish_reason="function_calls", content=[call], usage=usage), ANSWER]
    return AssistantAgent(name, ReplayChatCompletionClient(script, chunk_delay=0.01), tools=[weather],
                          reflect_on_tool_use=True, model_client_stream=True)

async def wait_forever(x: int) -> str:
    """Never returns (until cancelled)."""
    await asyncio.Event().wait()
    return "unreachable"

def slow():
    call = FunctionCall(id="w1", name="wait_forever", arguments='{{"x": 1}}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
    return AssistantAgent("slow", ReplayChatCompletionClient(script), tools=[wait_forever], reflect_on_tool_use=True)

async def show_mirrored(agent, task):
    """What an anywidget path would do: the widget while the run goes, then the static copy."""
    view = AgentRunView(agent.name)
    mirror = ViewMirror(view)
    handle = display(mirror, display_id=True)
    try:
        await view.run(agent, task)
    finally:
        handle.update(view.static_bundle(), raw=True)
        mirror.close()  # as the view closes its widgets once its static copy replaced them
    return view, mirror

def start_mirrored(agent, task):
    view = AgentRunView(agent.name)
    mirror = ViewMirror(view)
    display(mirror)
    view.start(agent, task)
    return view, mirror
'''

CELLS = {
    "ipywidgets": [
        SETUP,
        "view = await nbagent.show(helper(), 'go')",
        "background = nbagent.start(slow(), 'go')",
    ],
    "anywidget": [
        SETUP,
        "view, mirror = await show_mirrored(helper(), 'go')",
        "background, background_mirror = start_mirrored(slow(), 'go')",
    ],
}

# Installed before Run All: note when the helper's view appears, its first text, every distinct text
# length while it runs, and when it is ok.
WATCH_JS = """() => {
  const t0 = performance.now();
  const w = window.__probe = {lengths: new Set(), first_view_s: null, first_text_s: null, done_s: null};
  const view = () => [...document.querySelectorAll('.nba-view')].find(v => {
    const t = v.querySelector('.nba-title'); return t && t.textContent.trim() === 'helper'; });
  const look = () => {
    const v = view(); const s = (performance.now() - t0) / 1000;
    if (!v) return;
    if (w.first_view_s === null) w.first_view_s = s;
    const text = [...v.querySelectorAll('.nba-stream-text')].map(e => e.textContent).join('');
    if (text && w.first_text_s === null) w.first_text_s = s;
    if (text && v.classList.contains('nba-state-running')) w.lengths.add(text.length);
    if (w.done_s === null && (v.classList.contains('nba-state-ok') || v.dataset.status === 'ok')) w.done_s = s;
  };
  new MutationObserver(look).observe(document.body,
    {subtree: true, childList: true, characterData: true, attributes: true});
}"""

RESULT_JS = """() => { const w = window.__probe;
  return {first_view_s: w.first_view_s, first_text_s: w.first_text_s, done_s: w.done_s,
    live_text_updates: w.lengths.size}; }"""

SLOW_VIEW_JS = """() => [...document.querySelectorAll('.nba-view')].find(v => {
  const t = v.querySelector('.nba-title'); return t && t.textContent.trim() === 'slow'; })"""

ARM_JS = (
    """() => { const view = ("""
    + SLOW_VIEW_JS
    + """)(); const t0 = performance.now();
  window.__stopped = new Promise((resolve, reject) => {
    const o = new MutationObserver(() => { if (view.classList.contains('nba-state-cancelled')) {
      o.disconnect(); resolve((performance.now() - t0) / 1000); } });
    o.observe(view, {attributes: true, subtree: true, childList: true, characterData: true});
    setTimeout(() => reject(new Error('not cancelled in 20 s')), 20000);
  }); }"""
)

RUNNING_JS = (
    "() => { const v = (" + SLOW_VIEW_JS + ")(); return !!(v && v.classList.contains('nba-state-running') && "
    "v.querySelector('.nba-tool-card[data-state=running]') && v.querySelector('button.nba-stop:not(:disabled)')); }"
)


def jupyter_case(
    server: LabServer,
    other: LabServer,
    context: BrowserContext,
    other_context: BrowserContext,
    frontend: str,
    path: str,
) -> dict[str, Any]:
    """One notebook in one frontend along one path; the figures listed in the module docstring."""
    name = f"probe_{frontend}_{path}"
    nb = open_notebook(server, context, CELLS[path], name, run_all=False, frontend=frontend)
    nb.page.evaluate(WATCH_JS)
    nb.page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    nb.page.wait_for_function(RUNNING_JS, timeout=120_000)
    nb.settle()
    figures: dict[str, Any] = nb.page.evaluate(RESULT_JS)
    stats = json.loads(nb.execute("print(json.dumps(stats))"))
    figures["handle_us_per_item"] = round(stats["handle_s"] / max(stats["items"], 1) * 1e6, 1)
    figures["items"] = stats["items"]
    figures["comm_msgs"] = stats["msgs"]
    figures["comm_kb"] = round(stats["bytes"] / 1000, 1)
    nb.page.evaluate(ARM_JS)
    nb.page.locator(".nba-view", has=nb.page.locator(".nba-title", has_text="slow")).locator(
        "button.nba-stop"
    ).first.click()
    figures["stop_s"] = round(float(nb.page.evaluate("async () => await window.__stopped")), 3)
    nb.settle()
    figures["kernel_status"] = nb.execute("print(view.status, background.status)").strip()
    text = nb.save()
    saved = json.loads(text)
    state = saved.get("metadata", {}).get("widgets", {})
    figures["saved_kb"] = round(len(text) / 1000, 1)
    figures["saved_widget_state_kb"] = round(len(json.dumps(state)) / 1000, 1)
    models = next(iter(state.values()), {}).get("state", {})
    figures["saved_widget_models"] = len(models)
    figures["saved_anywidget_models"] = sum("_esm" in m.get("state", {}) for m in models.values())
    figures["run_cell_outputs"] = [sorted(o.get("data", {})) for o in saved["cells"][1]["outputs"]]
    figures["console_errors"] = nb.console_errors
    nb.page.close()
    # Reopened untrusted: on the other server (its own data dir, so the notebook is not trusted there).
    copy = f"{name}_untrusted"
    shutil.copyfile(server.root / f"{name}.ipynb", other.root / f"{copy}.ipynb")
    reopened = open_notebook(other, other_context, None, copy, run_all=False, frontend=frontend)
    reopened.page.wait_for_timeout(1500)
    texts = reopened.output_texts()
    figures["untrusted_reopen_shows_answer"] = "word399" in texts[1]
    figures["untrusted_reopen_console_errors"] = reopened.console_errors
    reopened.page.close()
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="lab,notebook,marimo,voila")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    cases = args.cases.split(",")
    import anywidget
    import marimo
    import voila

    results: dict[str, Any] = {
        "versions": {"anywidget": anywidget.__version__, "marimo": marimo.__version__, "voila": voila.__version__},
        "load": os.getloadavg(),
    }
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            if "lab" in cases or "notebook" in cases:
                results.update(jupyter(browser, [c for c in cases if c in ("lab", "notebook")]))
            if "marimo" in cases:
                results["marimo"] = marimo_case(browser)
            if "voila" in cases:
                results["voila"] = voila_case(browser)
        finally:
            browser.close()
    print(json.dumps(results, indent=1))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


def jupyter(browser: Browser, frontends: list[str]) -> dict[str, Any]:
    servers = [_serve(), _serve()]
    lab, nb7 = (next(server) for server in servers)
    contexts = [browser.new_context(viewport={"width": 1280, "height": 900}) for _ in range(2)]
    results: dict[str, Any] = {}
    try:
        for frontend in frontends:
            for path in ("ipywidgets", "anywidget"):
                if frontend == "lab":
                    figures = jupyter_case(lab, nb7, contexts[0], contexts[1], "lab", path)
                else:
                    figures = jupyter_case(nb7, lab, contexts[1], contexts[0], "notebook", path)
                results[f"{frontend}/{path}"] = figures
                print(frontend, path, figures, file=sys.stderr)
    finally:
        for context in contexts:
            context.close()
        for server in servers:
            next(server, None)
    return results


MARIMO_APP = """
import marimo

app = marimo.App()


@app.cell
def _():
    import asyncio
    import marimo as mo
    from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient
    from nbagent.notebook.view import AgentRunView
    from mirror import ViewMirror

    def weather(city: str) -> str:
        \"\"\"The weather in a city.\"\"\"
        return f"sunny in {city}"

    ANSWER = " ".join(f"word{i}" for i in range(%(words)d))

    def helper(name):
        call = FunctionCall(id="c1", name="weather", arguments='{"city": "Paris"}')
        script = [CreateResult(finish_reason="function_calls", content=[call]), ANSWER]
        return AssistantAgent(name, ReplayChatCompletionClient(script, chunk_delay=0.01), tools=[weather],
                              reflect_on_tool_use=True, model_client_stream=True)

    async def wait_forever(x: int) -> str:
        \"\"\"Never returns (until cancelled).\"\"\"
        await asyncio.Event().wait()
        return "unreachable"

    def slow(name):
        call = FunctionCall(id="w1", name="wait_forever", arguments='{"x": 1}')
        script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
        return AssistantAgent(name, ReplayChatCompletionClient(script), tools=[wait_forever], reflect_on_tool_use=True)
    return AgentRunView, ViewMirror, asyncio, helper, mo, slow


@app.cell
async def _(AgentRunView, ViewMirror, helper, mo):
    view = AgentRunView("helper")
    mirror = ViewMirror(view)
    mo.output.replace(mirror)
    await view.run(helper("helper"), "go")
    mirror
    return


@app.cell
async def _(AgentRunView, helper, mo):
    plain = AgentRunView("helper_ipyw")
    mo.output.replace(plain)
    await plain.run(helper("helper_ipyw"), "go")
    plain
    return


@app.cell
async def _(AgentRunView, asyncio, helper, mo):
    # No widget: the view's static copy put in the cell's output (mo.output.replace) 4 times a second.
    html_view = AgentRunView("helper_html")

    async def _repaint():
        while True:
            mo.output.replace(mo.Html(html_view.to_html()))
            await asyncio.sleep(0.25)

    _painter = asyncio.ensure_future(_repaint())
    try:
        await html_view.run(helper("helper_html"), "go")
    finally:
        _painter.cancel()
    mo.Html(html_view.to_html())
    return


@app.cell
def _(AgentRunView, ViewMirror, slow):
    # Started before the next cell, which awaits for 25 s: its Stop is clicked while that cell runs.
    early = AgentRunView("slow_early")
    early_mirror = ViewMirror(early)
    early.start(slow("slow_early"), "go")
    early_mirror
    return


@app.cell
async def _(AgentRunView, ViewMirror, asyncio, mo, slow):
    fg = AgentRunView("slow_fg")
    fg_mirror = ViewMirror(fg)
    mo.output.replace(fg_mirror)
    try:
        await asyncio.wait_for(fg.run(slow("slow_fg"), "go"), 25)
    except asyncio.TimeoutError:
        pass
    fg_mirror
    return


@app.cell
def _(AgentRunView, ViewMirror, mo, slow):
    background = AgentRunView("slow_bg")
    background_mirror = ViewMirror(background)
    background.start(slow("slow_bg"), "go")
    background_mirror
    return


@app.cell
def _(AgentRunView, ViewMirror, helper, slow):
    streamed = AgentRunView("helper_bg")
    streamed_mirror = ViewMirror(streamed)
    streamed.start(helper("helper_bg"), "go")
    streamed_mirror
    return


if __name__ == "__main__":
    app.run()
"""

# Polls every 20 ms (marimo draws widgets inside shadow roots, which MutationObservers of the page do
# not see): per view title, when it appeared, its first streamed text, its distinct text lengths
# while running, its status changes.
POLL_JS = """() => {
  const t0 = performance.now();
  const all = (root, sel, out) => { root.querySelectorAll(sel).forEach(e => out.push(e));
    root.querySelectorAll('*').forEach(e => { if (e.shadowRoot) all(e.shadowRoot, sel, out); }); return out; };
  const views = window.__views = {};
  window.__allViews = () => all(document, '.nba-view', []);
  setInterval(() => {
    const s = (performance.now() - t0) / 1000;
    for (const v of all(document, '.nba-view', [])) {
      const t = v.querySelector('.nba-title'); if (!t) continue;
      const title = t.textContent.trim();
      const w = views[title] = views[title] || {first_view_s: s, first_text_s: null, lengths: [], states: []};
      const text = [...v.querySelectorAll('.nba-stream-text')].map(e => e.textContent).join('');
      if (text && w.first_text_s === null) w.first_text_s = s;
      const running = v.classList.contains('nba-state-running');
      if (text && running && !w.lengths.includes(text.length)) w.lengths.push(text.length);
      const state = ([...v.classList].find(c => c.startsWith('nba-state-')) || v.dataset.status || '?');
      if (!w.states.length || w.states[w.states.length - 1][0] !== state) w.states.push([state, s]);
    }
  }, 20);
}"""


def _wait_http(url: str, process: subprocess.Popen[bytes], log: Path, limit: float = 90.0) -> None:
    deadline = time.monotonic() + limit
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"server exited: {log.read_text()[-2000:]}")
        try:
            urllib.request.urlopen(url, timeout=5).read()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"no answer from {url}: {log.read_text()[-2000:]}") from None
            time.sleep(0.25)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _stop_process(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.kill(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


def _views(page: Any) -> dict[str, Any]:
    return page.evaluate("() => window.__views")


_HAS_VIEW_JS = """(title) => window.__allViews().some(v => {
  const t = v.querySelector('.nba-title'); return t && t.textContent.trim() === title; })"""


def _stop_in(page: Any, title: str, wait_ms: int = 90_000, cancel_s: float = 30) -> dict[str, Any]:
    """Click the Stop of view ``title`` once it runs; seconds to cancelled (polled), or what it shows."""
    view = page.locator(".nba-view", has=page.locator(".nba-title", has_text=title)).first
    try:
        view.locator("button.nba-stop:not(:disabled)").wait_for(timeout=wait_ms)
    except Exception as error:  # noqa: BLE001 a figure of the probe, not a failure of it
        return {"clicked": False, "why": type(error).__name__, "seen": _views(page).get(title)}
    t0 = time.perf_counter()
    view.locator("button.nba-stop").click()
    deadline = t0 + cancel_s
    while time.perf_counter() < deadline:
        states = (_views(page).get(title) or {}).get("states", [])
        if states and states[-1][0] == "nba-state-cancelled":
            return {"clicked": True, "stop_s": round(time.perf_counter() - t0, 3), "states": states}
        if not page.evaluate(_HAS_VIEW_JS, title):  # the output went away instead
            return {"clicked": True, "stop_s": None, "view_gone_s": round(time.perf_counter() - t0, 3)}
        time.sleep(0.02)
    return {"clicked": True, "stop_s": None, "states": (_views(page).get(title) or {}).get("states")}


def marimo_case(browser: Browser) -> dict[str, Any]:
    """``marimo run`` an app with the mirrored view (foreground, background with Stop, foreground with
    Stop) and the plain ipywidgets view; what the page shows of each."""
    base = Path(tempfile.mkdtemp(prefix="nbagent-marimo-"))
    (base / "app.py").write_text(MARIMO_APP % {"words": WORDS})
    port = _free_port()
    log = base / "marimo.log"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
        env.pop(name, None)
    marimo = str(Path(sys.executable).with_name("marimo"))
    command = [marimo, "run", "app.py", "--headless", "--host", "127.0.0.1", "--port", str(port), "--no-token"]
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=base, env=env, stdout=sink, stderr=subprocess.STDOUT)
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        _wait_http(f"http://127.0.0.1:{port}/", process, log)
        context.add_init_script(POLL_JS.replace("() => {", "(() => {", 1) + ")();")
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.goto(f"http://127.0.0.1:{port}/")
        figures: dict[str, Any] = {}
        figures["stop_during_another_cell"] = _stop_in(page, "slow_early", cancel_s=40)
        figures["stop_foreground"] = _stop_in(page, "slow_fg", 40_000)
        figures["stop_background"] = _stop_in(page, "slow_bg")
        page.wait_for_timeout(8000)  # helper_bg (4.5 s of streaming) ends
        ARTIFACTS = REPO / "test-artifacts"
        ARTIFACTS.mkdir(exist_ok=True)
        page.screenshot(path=str(ARTIFACTS / "anywidget-probe-marimo.png"), full_page=True)
        views = _views(page)
        for seen in views.values():
            seen["live_text_updates"] = len(seen.pop("lengths"))
        figures["views"] = views
        figures["page_errors"] = errors[:10]
        return figures
    finally:
        context.close()
        _stop_process(process)
        figures_log = log.read_text()[-3000:]
        if "Traceback" in figures_log:
            print(figures_log, file=sys.stderr)
        shutil.rmtree(base, ignore_errors=True)


VOILA_CELLS = [
    SETUP,
    "view = await nbagent.show(helper(), 'go')",
    "mirrored, mirror = await show_mirrored(helper('helper_any'), 'go')",
    "background = nbagent.start(slow(), 'go')\n"
    "background.task.add_done_callback(lambda _: open('slow_status.txt', 'w').write(background.status))",
    # A display updated after its cell has ended: does the page apply it?
    "from IPython.display import HTML\nlate = display(HTML('<p class=late>first</p>'), display_id=True)\n"
    "asyncio.get_event_loop().call_later(3, lambda: late.update(HTML('<p class=late>second</p>')))",
]


def voila_case(browser: Browser) -> dict[str, Any]:
    """Voila with and without progressive rendering: what the page shows of the shipped view (and the
    mirrored one) while the notebook runs, and the background run's Stop."""
    import nbformat

    results: dict[str, Any] = {}
    for progressive in (False, True):
        base = Path(tempfile.mkdtemp(prefix="nbagent-voila-"))
        notebook = nbformat.v4.new_notebook()
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
        notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in VOILA_CELLS]
        nbformat.write(notebook, base / "probe.ipynb")
        port = _free_port()
        log = base / "voila.log"
        env = dict(
            os.environ,
            PYTHONUNBUFFERED="1",
            JUPYTER_CONFIG_DIR=str(base / "config"),
            JUPYTER_DATA_DIR=str(base / "data"),
            JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        )
        for name in ("JUPYTER_PATH", "OPENAI_API_KEY", "OPENAI_BASE_URL"):
            env.pop(name, None)
        command = [
            str(Path(sys.executable).with_name("voila")),
            "probe.ipynb",
            "--no-browser",
            f"--port={port}",
            "--Voila.ip=127.0.0.1",
            f"--progressive_rendering={progressive}",
        ]
        with log.open("wb") as sink:
            process = subprocess.Popen(command, cwd=base, env=env, stdout=sink, stderr=subprocess.STDOUT)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=2).close()
                    break
                except OSError:
                    if time.monotonic() > deadline or process.poll() is not None:
                        raise RuntimeError(log.read_text()[-2000:]) from None
                    time.sleep(0.25)
            context.add_init_script(POLL_JS.replace("() => {", "(() => {", 1) + ")();")
            page = context.new_page()
            errors: list[str] = []
            page.on("pageerror", lambda error, errors=errors: errors.append(str(error)))
            page.goto(f"http://127.0.0.1:{port}/", timeout=120_000)
            figures: dict[str, Any] = {"stop_background": _stop_in(page, "slow", 60_000)}
            status = base / "slow_status.txt"
            for _ in range(100):  # what the kernel says of the stopped run (the page may not show it)
                if status.exists() and status.read_text():
                    break
                time.sleep(0.1)
            figures["stop_background"]["kernel_status"] = status.read_text() if status.exists() else None
            page.wait_for_timeout(3000)
            figures["stop_background"]["shown_3s_after"] = page.evaluate(_HAS_VIEW_JS, "slow")
            page.wait_for_timeout(4000)  # the late display update was sent 3 s after its cell ended
            figures["late_display_update_shown"] = page.evaluate(
                "() => [...document.querySelectorAll('p.late')].map(p => p.textContent)"
            )
            views = _views(page)
            for seen in views.values():
                seen["live_text_updates"] = len(seen.pop("lengths"))
            figures["views"] = views
            figures["page_errors"] = errors[:10]
            ARTIFACTS = REPO / "test-artifacts"
            ARTIFACTS.mkdir(exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / f"anywidget-probe-voila-{progressive}.png"), full_page=True)
            results["progressive" if progressive else "default"] = figures
        finally:
            context.close()
            _stop_process(process)
            shutil.rmtree(base, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
