"""Real-browser harness: a JupyterLab server (and one for Notebook 7) a session, headless Chromium a package.

Fixtures (all tests using them must be marked ``@pytest.mark.browser``):

``lab`` (session) -> ``LabServer``
    ``jupyter lab`` on 127.0.0.1, a free port and a random token, in a temporary root with its own
    JUPYTER_CONFIG_DIR / JUPYTER_DATA_DIR / JUPYTER_RUNTIME_DIR, user settings and workspaces (the
    system kernelspec and the ipywidgets lab extension stay reachable). The widget manager is set to
    save widget state into the notebook, so a saved notebook holds everything a widget sent;
    notebooks render every cell (``windowingMode: none``), so all prompts and outputs are in the DOM.
    ``lab.root`` is the server's root dir, ``lab.url(path)`` adds the token, ``lab.secret`` is a
    random fake API key that kernels find in ``os.environ["NBAGENT_TEST_API_KEY"]`` (so it never
    has to be written in a notebook). ``lab.save_widget_state(bool)`` sets the widget manager's
    ``saveState`` for pages opened afterwards; ``lab.shutdown_kernels()`` ends every session and
    kernel (a notebook opened then starts a fresh kernel). Killed by PID at the end.

``notebook7`` (session) -> ``LabServer``
    A second such server, for Notebook 7 pages only (a Notebook 7.6 page on a server where a
    JupyterLab page has been open raises a page error of its own), started on first use.

``browser`` (package) -> ``playwright.sync_api.Browser``
    Debian Chromium (``/usr/bin/chromium``), headless. Missing Chromium skips the test locally and
    fails it when ``CI=true``. Package-scoped (as ``playwright``, the sync API it runs on): Playwright's
    sync API keeps its event loop running in the thread while open, which asyncio tests outside
    ``tests/browser`` cannot share. The JupyterLab and Notebook 7 pages open in a Chromium each, with a
    profile on disk (``lab_context``, ``notebook7_context``: ``profile_context``).

``run_notebook_in_lab`` (function) -> ``Callable[[cells | Path, name], LabNotebook]``
    ``nb = run_notebook_in_lab(["import ipywidgets as w", "w.Label('hi')"], name="demo")`` writes
    ``demo.ipynb`` into ``lab.root`` (cells are code-cell sources, or pass the path of an existing
    .ipynb to copy), opens it (in the page a closed notebook left loaded, ``LabPages``, or in a new page
    of one shared browser context, with a Lab workspace of its own), runs
    ``jupyterapp.commands.execute('notebook:run-all-cells')``, waits for the kernel to be idle, no
    ``[*]`` prompt and a DOM quiet for 0.5 s (a running nbagent view's ticks aside), and saves
    ``test-artifacts/<name>.png``.
    ``run_notebook_in_lab(None, name="demo", run_all=False)`` opens the existing ``demo.ipynb``
    again without running it (e.g. to see what a saved notebook shows on open; a test that needs a
    fresh page for it closes the first notebook's page, ``nb.page.close()``, and none is kept).
    ``frontend="notebook"`` opens it in Notebook 7 instead (``/notebooks/<name>.ipynb``, on the
    ``notebook7`` server, in a browser context of its own; ``nb.lab`` is that server); Notebook 7's
    own load error is left out of ``console_errors``. ``open_notebook(server, context, ...)`` does
    the same outside pytest (``screenshots.py``).
    ``LabNotebook``: ``page``, ``console_errors`` (console ``error`` messages and uncaught page
    errors), ``server_errors`` (requests the Jupyter server answered with a 5xx, left out of
    ``console_errors``: nbagent's views make no request), ``screenshot``, ``output_texts()``
    (visible text of each cell's outputs),
    ``error_outputs()`` (tracebacks and stderr), ``settle()`` (wait again, e.g. after clicking a
    widget button), ``save()`` (save from JupyterLab, return the .ipynb text as written on disk),
    ``shot(label, selector=None)`` (another screenshot, of the page or of one element),
    ``execute(code)`` (run code in the notebook's kernel outside any cell, return its stdout),
    ``xss_hits()`` (the XSS markers, see below), ``set_theme(name)`` (``JupyterLab Light`` or
    ``JupyterLab Dark``, waits until it applies), ``close()``. Kernels are shut down and notebooks closed
    after the test. A JupyterLab notebook opens in the page the last closed one left loaded, if it was kept
    (``LabPages``: loading JupyterLab is most of a browser test's CPU), as in a user's JupyterLab; a
    Notebook 7 notebook, or one opened after the settings pages read at load changed
    (``lab.save_widget_state``), opens in a new page.

``reopened_with_widgets(open_again, restored_js, on_discard=None)`` opens a saved notebook again until
``restored_js`` holds, past ipywidgets' restore race (see ``WIDGET_RESTORE_RACE``).

``open_static_html`` (function) -> ``Callable[[Path], StaticPage]``
    Opens an HTML file (e.g. an nbconvert export) in Chromium with every non-``file:`` request
    aborted (closed network); ``StaticPage``: ``page``, ``console_errors``.

XSS helpers live in ``xss.py``: ``xss_payloads(prefix)`` (the corpus; each payload, if it ever
runs, calls ``__xss('<id>')``), ``MARKER_INIT_JS`` (installed in every page here: ``__xss`` records
the id in ``window.__xssHits`` and sets ``data-xss`` on ``<html>``),
``XSS_HITS_JS`` (reads both markers; ``nb.xss_hits()``) and ``DANGEROUS_DOM_JS`` (lists
payload scripts, iframes/objects/embeds/forms, ``on*`` attributes and ``javascript:`` URLs inside a
selector, e.g. ``page.evaluate(DANGEROUS_DOM_JS, ".nba-view")``). What the tests of issue 16
measure in a page (contrast, visible outputs, the diagram's arrows) is in ``measure.py``.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import nbformat
import pytest
from playwright.sync_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Error,
    Page,
    Playwright,
    Response,
    ViewportSize,
    sync_playwright,
)
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from nbagent.notebook.saved import STATE_MIME, VIEW_MIME
from tests.kernels import KERNEL_TRANSPORT, ipc_prefix_fits
from tests.ports import free_port

from .xss import MARKER_INIT_JS, XSS_HITS_JS

CHROMIUM = Path("/usr/bin/chromium")
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
LIGHT, DARK = "JupyterLab Light", "JupyterLab Dark"
"""The two themes the views are checked in; every test leaves its server's setting at ``LIGHT``."""
VIEWPORT: ViewportSize = {"width": 1280, "height": 900}
"""Every page's size when it opens (a test may change its own)."""
START_TIMEOUT_S = 300.0
"""How long the JupyterLab server (one a worker, for the session) gets to answer: a hang guard. Idle it
answers in a few seconds; on a machine 2.4 times slower than usual beside a second full run (load about 23)
it had not answered in 90 s, still loading its extensions, and every test of that worker that needed it
failed. The first test to need it has ``MARKER_TIMEOUT_S["browser"]`` (tests/conftest.py) for the two."""
RUN_TIMEOUT_MS = 120_000
HANG_BOUND_S = 60.0
"""The bound a browser test puts on a user-visible latency (Stop to cancelled, Pause to paused): against a
hang, not a speed target. A Stop or Pause that did nothing still fails: the run ends uncancelled, or the
walk ends, where the tools wait for ever or 30 s, and the tests check the state they end in. The seconds are
printed. The 1 s targets are figures measured in a real kernel, from a comm click or a kernel interrupt to
the run's or walk's end, where no page adds to them: bench/bench_stop_pause.py (the kernel tests record them
too). Measured in the page, idle: 0.03-0.24 s; at a load average of 13 on the two cores: 0.54-1.93 s; in a
loaded pair on a machine 2.4 to 3 times slower, a Pause was not shown paused within 5 s (2026-12-07)."""
SECRET_ENV = "NBAGENT_TEST_API_KEY"


@dataclass
class LabServer:
    """A running JupyterLab server owned by the test session."""

    root: Path
    port: int
    token: str
    process: subprocess.Popen[bytes]
    log: Path
    secret: str
    """A fake API key, random per session, in the kernels' environment as ``SECRET_ENV``."""
    widget_settings: Path
    """The widget manager's user settings (``saveState``)."""
    settings_version: int = 0
    """How many times the settings pages read when they load have changed (a page kept for the next notebook,
    ``LabPages``, is not used once they have)."""

    def save_widget_state(self, save: bool) -> None:
        """Set the widget manager's ``saveState`` for pages opened from now on (True at start)."""
        self.widget_settings.write_text(json.dumps({"saveState": save}))
        self.settings_version += 1

    def shutdown_kernels(self) -> None:
        """End every session and kernel (a notebook opened afterwards starts a new kernel)."""
        for session in self.api("GET", "api/sessions") or []:
            self.api("DELETE", f"api/sessions/{session['id']}")
        for kernel in self.api("GET", "api/kernels") or []:
            self.api("DELETE", f"api/kernels/{kernel['id']}")

    def url(self, path: str = "", query: str = "") -> str:
        """``http://127.0.0.1:<port>/<path>?<query>&token=<token>``."""
        sep = "&" if query else ""
        return f"http://127.0.0.1:{self.port}/{path.lstrip('/')}?{query}{sep}token={self.token}"

    def api(self, method: str, path: str) -> Any:
        """Call the server's REST API; return the decoded JSON body (None when empty)."""
        request = urllib.request.Request(self.url(path), method=method)
        with urllib.request.urlopen(request, timeout=10) as reply:
            body = reply.read()
        return json.loads(body) if body else None


def _require_chromium() -> None:
    if CHROMIUM.exists():
        return
    reason = f"{CHROMIUM} is missing: install Debian's chromium to run the browser tests"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason + " (CI=true: browser tests must run)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def lab() -> Iterator[LabServer]:
    """Start JupyterLab in a temporary root; kill it by PID at the end of the session."""
    yield from _serve()


@pytest.fixture(scope="session")
def notebook7() -> Iterator[LabServer]:
    """A second server, for the Notebook 7 pages (started when a test first opens one).

    After a JupyterLab page has been open on a server, Notebook 7.6 pages opened on it raise
    "Command 'filebrowser:open-path' not registered" (its bundled file browser restores a path
    with a command Notebook 7 has not): a server of their own keeps them apart.
    """
    yield from _serve()


def _serve() -> Iterator[LabServer]:
    """Start a JupyterLab server (what ``lab`` and ``notebook7`` yield); stop it when resumed."""
    _require_chromium()
    base = Path(tempfile.mkdtemp(prefix="nbagent-lab-"))
    root, config, data, runtime = (base / name for name in ("root", "config", "data", "runtime"))
    settings = config / "lab" / "user-settings"
    widget_settings = settings / "@jupyter-widgets" / "jupyterlab-manager"
    for path in (root, data, runtime, widget_settings):
        path.mkdir(parents=True)
    # The server names each kernel's sockets after its connection file in the runtime folder.
    ipc_prefix_fits(f"{runtime}/kernel-{uuid.UUID(int=0)}-ipc", "the browser tests' JupyterLab server")
    (widget_settings / "plugin.jupyterlab-settings").write_text(json.dumps({"saveState": True}))
    news = settings / "@jupyterlab" / "apputils-extension"
    news.mkdir(parents=True)
    (news / "notification.jupyterlab-settings").write_text(json.dumps({"fetchNews": "false"}))
    # Render every cell (no virtual scrolling), so tests see all prompts and outputs in the DOM.
    tracker = settings / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"windowingMode": "none"}))
    secret = "sk-nbagenttest" + secrets.token_hex(20)
    env = dict(
        os.environ,
        JUPYTER_CONFIG_DIR=str(config),
        JUPYTER_DATA_DIR=str(data),
        JUPYTER_RUNTIME_DIR=str(runtime),
        PYTHONUNBUFFERED="1",
        **{SECRET_ENV: secret},
    )
    for name in ("JUPYTER_PATH", "OPENAI_API_KEY", "OPENAI_BASE_URL"):  # offline: notebooks use the replay model
        env.pop(name, None)
    port, token = free_port(), secrets.token_hex(16)
    log = base / "lab.log"
    command = [
        sys.executable,
        "-m",
        "jupyterlab",
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        "--LabApp.expose_app_in_browser=True",
        # Notebook 7 (the notebook package) is served by the same server, at /notebooks/<path>.
        "--JupyterNotebookApp.expose_app_in_browser=True",
        f"--JupyterNotebookApp.user_settings_dir={settings}",
        f"--JupyterNotebookApp.workspaces_dir={base / 'workspaces'}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
        "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly",
        "--ServerApp.terminals_enabled=False",
        # Its kernels on Unix sockets, as every kernel of the tests (tests/kernels.py: KERNEL_TRANSPORT).
        f"--KernelManager.transport={KERNEL_TRANSPORT}",
    ] + (["--allow-root"] if os.geteuid() == 0 else [])
    with log.open("wb") as sink:
        process = subprocess.Popen(command, cwd=root, env=env, stdout=sink, stderr=subprocess.STDOUT)
    server = LabServer(root, port, token, process, log, secret, widget_settings / "plugin.jupyterlab-settings")
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"jupyter lab exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                server.api("GET", "api/status")
                break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    tail = log.read_text()[-3000:]
                    raise RuntimeError(f"jupyter lab did not answer in {START_TIMEOUT_S} s:\n{tail}") from None
                time.sleep(0.25)
        yield server
    finally:
        _stop(server)
        shutil.rmtree(base, ignore_errors=True)


def _stop(server: LabServer) -> None:
    """Shut down the kernels, then the server (SIGTERM, SIGKILL after 15 s), by PID."""
    if server.process.poll() is None:
        try:
            for kernel in server.api("GET", "api/kernels") or []:
                server.api("DELETE", f"api/kernels/{kernel['id']}")
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        os.kill(server.process.pid, signal.SIGTERM)
        try:
            server.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.kill(server.process.pid, signal.SIGKILL)
            server.process.wait(timeout=5)


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """Playwright's sync API, for Debian Chromium.

    Package-scoped, unlike the servers: while Playwright's sync API is open, its event loop counts as
    running in this thread, and every asyncio test after it would fail ("Cannot run the event loop while
    another loop is running"); closed when the worker leaves ``tests/browser``, it takes its loop with it.
    """
    _require_chromium()
    with sync_playwright() as api:
        yield api


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """Headless Debian Chromium, for ``open_static_html``'s contexts (no profile on disk)."""
    chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
    try:
        yield chromium
    finally:
        chromium.close()


# Notebook 7.6's own page raises this on every load, a vanilla server's too (its shortcuts plugin
# reading a settings schema not loaded yet): not the notebook's doing, left out of console_errors.
NOTEBOOK7_OWN_ERRORS = ("pageerror: Cannot read properties of undefined (reading 'schema')",)


# ipywidgets' own race (8.1, jupyterlab_widgets 3.0): an output showing a widget replaced while the
# browser is still making its views (a VBox whose children changed just before) leaves two promise
# callbacks to run on views already removed: DOMWidgetView.setLayout posts a resize message to its
# disposed Lumino widget (Lumino logs "reading 'processLuminoMessage'") and BoxView.add_child_model
# inserts into a disposed panel ("Could not add child view to box"). A cell of plain ipywidgets shows
# it (display a VBox, add a child, update the display at once; the CPU throttled 8x: 16-20 of these
# each run); nothing on the page is wrong after it. A finished nbagent view replaces its live widget
# with its static copy in the same way, so under load these come from ipywidgets, not from nbagent:
# left out of console_errors, the first line matched exactly.
IPYWIDGETS_REMOVED_VIEW_RACE = (
    "TypeError: Cannot read properties of null (reading 'processLuminoMessage')",
    "Error: Could not add child view to box",
)


# ipywidgets' own race when a notebook with saved widget state opens (jupyterlab_widgets 3.0): the widget
# manager restores twice at once, from the kernel and saved state when its session is ready, and from the
# kernel alone when the kernel connects. The second may finish first and mark the manager restored while
# the saved state's models are still being made; an output asking for one then polls for 2 s and gives up
# for good with this text, or (its output rendered again meanwhile) only logs "widget model not found".
# Under load (two full runs side by side, load about 30) making them took longer: the control widget of
# test_security.py showed the text on reopening, and Notebook 7 logged the line for a stepper of
# test_reopen_browser.py that did show. Not nbagent's doing; opening the notebook again restores it.
WIDGET_RESTORE_RACE = "Error displaying widget: model not found"
WIDGET_RESTORE_RACE_LOG = "console.error: Error: widget model not found"
GET_MODEL_POLL_MS = 2_500
"""How long an output asking for a missing model may still log its miss (ipywidgets polls 2 s)."""


def reopened_with_widgets(
    open_again: Callable[[], LabNotebook],
    restored_js: str,
    *,
    on_discard: Callable[[LabNotebook], None] | None = None,
    tries: int = 3,
    timeout_ms: int = 120_000,
) -> LabNotebook:
    """Open a saved notebook again (``open_again``) until ``restored_js``, a JavaScript expression, is true
    on its page and no output missed a model; a page that lost one to ipywidgets' restore race (shown or
    logged, see ``WIDGET_RESTORE_RACE``) is given to ``on_discard`` (what it shows is checked all the same),
    closed and opened again, up to ``tries`` times. A model the saved widget state does not hold fails at
    once: that is not the race. ``timeout_ms`` is each page's hang guard."""
    assert tries >= 1
    seen: list[str] = []
    for _ in range(tries):
        notebook = open_again()
        unsaved = _models_not_in_saved_state(notebook.path)
        if unsaved:
            pytest.fail(f"{notebook.name}: outputs show widget models its saved widget state lacks: {unsaved}")
        try:
            outcome = notebook.page.wait_for_function(
                f"""() => ({restored_js}) ? 'restored'
                    : document.body.innerText.includes({json.dumps(WIDGET_RESTORE_RACE)}) ? 'lost' : false""",
                timeout=timeout_ms,
            )
        except PlaywrightTimeoutError:
            pytest.fail(
                f"reopened {notebook.name}: `{restored_js}` still false after {timeout_ms // 1000} s; its outputs "
                f"read {notebook.output_texts()!r}, its console {notebook.console_errors}"
            )
        if outcome.json_value() == "restored":
            notebook.page.wait_for_timeout(GET_MODEL_POLL_MS)
            missed = [error for error in notebook.console_errors if error.startswith(WIDGET_RESTORE_RACE_LOG)]
            if not missed:
                return notebook
            seen.append(f"restored, but an output logged {missed[0].splitlines()[0]!r}")
        else:
            seen.append(f"an output shows {WIDGET_RESTORE_RACE!r}; console: {notebook.console_errors}")
        print(f"reopened {notebook.name}: ipywidgets' restore race ({seen[-1]}); opening it again")
        if on_discard is not None:
            on_discard(notebook)
        notebook.page.close()
    pytest.fail(
        f"{notebook.name} lost a widget model its saved state holds on each of {tries} opens (ipywidgets' restore "
        f"race, or a model the state names wrongly): {seen}"
    )


def _models_not_in_saved_state(path: Path) -> list[str]:
    """The widget models the saved notebook's outputs show that its saved widget state does not hold."""
    saved = json.loads(path.read_text(encoding="utf-8"))
    held = saved.get("metadata", {}).get("widgets", {}).get(STATE_MIME, {}).get("state", {})
    shown = [
        output["data"][VIEW_MIME]["model_id"]
        for cell in saved["cells"]
        for output in cell.get("outputs", [])
        if VIEW_MIME in output.get("data", {})
    ]
    return [model for model in shown if model not in held]


# Chromium's console line for a request its server answered with a 5xx. nbagent's views request nothing
# (their HTML, CSS and scripts come inline, through the kernel), so on a Jupyter page such a line is the
# Jupyter server's own failure: under load (two full runs side by side, load about 30) Notebook 7 logged
# one. Such lines go to ``server_errors`` with their URL, not to ``console_errors``, as does each 5xx response.
SERVER_ERROR_LINE = "Failed to load resource: the server responded with a status of 5"


@dataclass
class PageWatch:
    """Where a page's console errors and server errors go: the lists of the notebook it shows now (a JupyterLab
    page kept for the next notebook, ``LabPages``, is pointed at that notebook's lists)."""

    console_errors: list[str]
    server_errors: list[str] | None = None
    ignore: Sequence[str] = ()


def _watch_console(
    page: Page, errors: list[str], ignore: Sequence[str] = (), server_errors: list[str] | None = None
) -> PageWatch:
    watch = PageWatch(errors, server_errors, ignore)

    def on_console(message: ConsoleMessage) -> None:
        if message.type != "error" or message.text.split("\n", 1)[0] in IPYWIDGETS_REMOVED_VIEW_RACE:
            return
        if watch.server_errors is not None and message.text.startswith(SERVER_ERROR_LINE):
            server_error(f"console.error: {message.text} ({_without_query(message.location['url'])})")
        else:
            watch.console_errors.append(f"console.error: {message.text}")

    def on_page_error(error: Error) -> None:
        if f"pageerror: {error}" not in watch.ignore:
            watch.console_errors.append(f"pageerror: {error}")

    def on_response(response: Response) -> None:
        if watch.server_errors is not None and response.status >= 500:
            server_error(f"{response.status} {response.request.method} {_without_query(response.url)}")

    def server_error(line: str) -> None:
        assert watch.server_errors is not None
        watch.server_errors.append(line)
        print(line)  # shown with the test's output if it fails for another reason

    page.on("console", on_console)
    page.on("pageerror", on_page_error)
    page.on("response", on_response)
    return watch


def _without_query(url: str) -> str:
    """``url`` without its query (where a Jupyter URL carries its token)."""
    return url.split("?", 1)[0]


# Resolves with true once the DOM has not changed for `quiet` ms, or with false after `limit` ms. A running
# nbagent view (``nba-view nba-state-running``) is left out: it ticks (its elapsed time, its streamed text)
# until its run ends, so a page showing one never went quiet and each wait took its whole `limit` (a settle
# 15 s, a theme switch 5 s; measured: 8 of them in test_theme_contrast.py). Its ending still counts (the
# root's class changes, its static copy replaces it), and a test waits for a running view's own states by
# condition (``wait_for_function``). Changes to nodes already removed count through their parent's change.
# Notebook 7 also rewrites the attributes of its cells and of their panel (``data-windowed-list-index``,
# ``tabindex``, ``class``: 16 times in 1.5 s measured) whenever a cell's height changes, so while a running
# view grows: those attributes are its layout's bookkeeping, not what a cell shows, and are left out too.
QUIET_JS = """([quiet, limit]) => new Promise(resolve => {
  let timer = null;
  const done = () => { observer.disconnect(); clearTimeout(cap); resolve(true); };
  const ticking = (record) => {
    const node = record.target.nodeType === Node.ELEMENT_NODE ? record.target : record.target.parentElement;
    if (!node || !node.isConnected || node.closest('.nba-view.nba-state-running') !== null) return true;
    return record.type === 'attributes' && node.matches('.jp-WindowedPanel, .jp-Cell');
  };
  const observer = new MutationObserver((records) => {
    if (records.every(ticking)) return;
    clearTimeout(timer);
    timer = setTimeout(done, quiet);
  });
  observer.observe(document.body, {subtree: true, childList: true, characterData: true, attributes: true});
  timer = setTimeout(done, quiet);
  const cap = setTimeout(() => { observer.disconnect(); resolve(false); }, limit);
})"""

_IDLE_JS = """() => {
  const panel = window.jupyterapp && window.jupyterapp.shell.currentWidget;
  const kernel = panel && panel.sessionContext && panel.sessionContext.session
    && panel.sessionContext.session.kernel;
  if (!kernel || kernel.status !== 'idle') return false;
  return [...document.querySelectorAll('.jp-InputPrompt')].every(p => !p.textContent.includes('[*]'));
}"""


# Runs code in the current notebook's kernel; resolves with its stdout (or the error), rejects on timeout.
_EXECUTE_JS = """async ([code, limit]) => {
  const kernel = window.jupyterapp.shell.currentWidget.sessionContext.session.kernel;
  const future = kernel.requestExecute({code, stop_on_error: true, store_history: false});
  let out = '';
  future.onIOPub = (msg) => {
    if (msg.header.msg_type === 'stream') out += msg.content.text;
    if (msg.header.msg_type === 'error') out += msg.content.ename + ': ' + msg.content.evalue;
  };
  const timeout = new Promise(
    (_, reject) => setTimeout(() => reject(new Error('kernel did not reply in ' + limit + ' ms')), limit));
  await Promise.race([future.done, timeout]);
  return out;
}"""


@dataclass
class LabNotebook:
    """A notebook opened and run in JupyterLab, with what the browser reported."""

    lab: LabServer
    name: str
    page: Page
    console_errors: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)
    """Requests the Jupyter server answered with a 5xx, and their console lines (see ``SERVER_ERROR_LINE``)."""
    screenshot: Path | None = None
    frontend: str = "lab"
    """``lab`` (JupyterLab, /lab/tree/...) or ``notebook`` (Notebook 7, /notebooks/...)."""
    watch: PageWatch | None = None
    """Where its page's console errors go (set by ``open_notebook``)."""
    shown: int = 1
    """How many notebooks its page has shown, this one included (``LabPages``)."""
    pages: LabPages | None = None
    """Where its JupyterLab page goes when it is closed (``close``), if anywhere."""
    closed: bool = False
    settings_version: int = 0
    """The server's ``settings_version`` when its page loaded."""

    @property
    def path(self) -> Path:
        """The notebook file in the server's root."""
        return self.lab.root / f"{self.name}.ipynb"

    def settle(self, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
        """Wait for kernel idle, no ``[*]`` prompt, and a DOM quiet for 0.5 s (running views aside: ``QUIET_JS``)."""
        self.page.wait_for_function(_IDLE_JS, timeout=timeout_ms)
        self.page.evaluate(QUIET_JS, [500, 15_000])
        self.page.wait_for_function(_IDLE_JS, timeout=timeout_ms)

    def shot(self, label: str = "", selector: str | None = None) -> Path:
        """Save a screenshot to ``test-artifacts/<name>[-label].png``: the page, or the first
        element matching ``selector`` (scrolled into view, whole even if taller than the window)."""
        ARTIFACTS.mkdir(exist_ok=True)
        target = ARTIFACTS / (f"{self.name}-{label}.png" if label else f"{self.name}.png")
        if selector is None:
            self.page.screenshot(path=str(target), full_page=True)
        else:
            self.page.locator(selector).first.screenshot(path=str(target))
        return target

    def output_texts(self) -> list[str]:
        """The visible text of each code cell's output area, in cell order."""
        return self.page.eval_on_selector_all(
            ".jp-Notebook .jp-CodeCell",
            "cells => cells.map(c => [...c.querySelectorAll('.jp-OutputArea-output')]"
            ".map(o => o.innerText).join('\\n'))",
        )

    def error_outputs(self) -> list[str]:
        """Text of every traceback or stderr output shown in the notebook."""
        return self.page.eval_on_selector_all(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']", "els => els.map(e => e.innerText)"
        )

    def execute(self, code: str, timeout_ms: int = 60_000) -> str:
        """Run ``code`` in the notebook's kernel (outside any cell); its stdout, or ``Name: message``
        of the exception it raised."""
        return self.page.evaluate(_EXECUTE_JS, [code, timeout_ms])

    def xss_hits(self) -> dict[str, Any]:
        """Every XSS marker set on the page (see ``xss.py``): window hits and DOM attribute."""
        return self.page.evaluate(XSS_HITS_JS)

    def set_theme(self, theme: str) -> None:
        """Switch the page to a theme (``JupyterLab Light``, ``JupyterLab Dark``) and wait until it applies (at
        once if it has)."""
        if _theme(self.page) == theme:
            return
        self.page.evaluate(
            "async (theme) => await window.jupyterapp.commands.execute('apputils:change-theme', {theme})", theme
        )
        self.page.wait_for_function(
            "(theme) => document.body.dataset.jpThemeName === theme",
            arg=theme,
            timeout=30_000,
        )
        self.page.evaluate(QUIET_JS, [300, 5_000])

    def theme_order(self) -> tuple[str, str]:
        """Both themes, the one the page shows first: checking a notebook in both then takes one switch (a
        page keeps its theme for the next notebook it opens)."""
        return (DARK, LIGHT) if _theme(self.page) == DARK else (LIGHT, DARK)

    def close(self) -> None:
        """Close the notebook: its JupyterLab page is kept for the next notebook (``LabPages``) or closed."""
        if self.closed:
            return
        self.closed = True
        if self.pages is not None:
            self.pages.put_away(self)
        elif not self.page.is_closed():
            self.page.close()

    def save(self) -> str:
        """Save the notebook from JupyterLab (with widget state) and return the file's text."""
        self.page.evaluate("async () => await window.jupyterapp.commands.execute('docmanager:save')")
        self.page.wait_for_function("() => !window.jupyterapp.shell.currentWidget.context.model.dirty", timeout=30_000)
        return self.path.read_text()


def _write_notebook(target: Path, source: Sequence[str] | Path) -> None:
    if isinstance(source, Path):
        shutil.copyfile(source, target)
        return
    notebook = nbformat.v4.new_notebook()
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    notebook.cells = [nbformat.v4.new_code_cell(cell) for cell in source]
    nbformat.write(notebook, target)


def marked_context(browser: Browser) -> BrowserContext:
    """A 1280x900 browser context whose pages carry the XSS markers (``MARKER_INIT_JS``) and whose waits
    without a timeout of their own get the run deadline, ``RUN_TIMEOUT_MS``, a hang guard, not Playwright's
    default of 30 s, which would bound the speed of a loaded machine."""
    return _marked(browser.new_context(viewport=VIEWPORT))


def _marked(context: BrowserContext) -> BrowserContext:
    """``context`` with the XSS markers in its pages and the run deadline as its default wait."""
    context.add_init_script(MARKER_INIT_JS)
    context.set_default_timeout(RUN_TIMEOUT_MS)
    return context


def profile_context(playwright: Playwright, profile: Path) -> BrowserContext:
    """A headless Chromium whose one context keeps its profile in ``profile`` (a new folder), as a user's
    browser does, and is otherwise ``marked_context``'s. Its cache keeps V8's compiled code, which a context
    without a profile does not: after the first page loads, the frontend's scripts are not compiled again.
    Chromium's CPU a page load on the 2-core machine (docs/testing.md): JupyterLab 5.1-5.8 s against 6.9-7.1 s,
    Notebook 7 4.0-4.6 s against 5.8-6.1 s."""
    return _marked(
        playwright.chromium.launch_persistent_context(
            profile, executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, viewport=VIEWPORT
        )
    )


@pytest.fixture(scope="package")
def lab_context(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    """One browser context for every JupyterLab page (``profile_context``), so Lab's static files and their
    compiled code come from its cache."""
    context = profile_context(playwright, tmp_path_factory.mktemp("chromium-lab"))
    yield context
    context.close()


@pytest.fixture(scope="package")
def notebook7_context(playwright: Playwright, tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserContext]:
    """The browser context of every Notebook 7 page (``profile_context``): apart from JupyterLab's, whose
    saved layout (commands of JupyterLab's file browser) Notebook 7 would try to restore."""
    context = profile_context(playwright, tmp_path_factory.mktemp("chromium-notebook7"))
    yield context
    context.close()


LAB_PAGE_SHOWS = 12
"""How many notebooks one JupyterLab page shows, one after the other, before it is closed (``LabPages``): a
bound on what a long-lived page may keep of earlier tests."""

_PUT_AWAY_JS = """() => {
  const app = window.jupyterapp;
  if (!app || document.querySelector('.jp-Dialog')) return 'dialog';
  for (const widget of Array.from(app.shell.widgets('main'))) widget.dispose();
  if (window.__xssHits) window.__xssHits.length = 0;
  document.documentElement.removeAttribute('data-xss');
  return Array.from(app.shell.widgets('main')).length === 0 && !document.querySelector('.jp-Dialog') ? 'kept' : 'left';
}"""
"""Close a page's notebooks (dispose them) and clear its XSS markers: ``kept``, or why not. JupyterLab puts a
Launcher in the emptied main area a moment later (its launcher extension): ``open_notebook`` closes it."""
_ONLY_CURRENT_JS = """(path) => {
  const app = window.jupyterapp, widgets = Array.from(app.shell.widgets('main'));
  const notebook = widgets.find(w => w.context && w.context.path === path);
  if (!notebook) return;
  for (const widget of widgets) if (widget !== notebook) widget.dispose();
  app.shell.activateById(notebook.id);
}"""
PUT_AWAY_MS = 30_000
"""A page's put-away: a hang guard (it takes milliseconds)."""


@dataclass
class LabPages:
    """A JupyterLab page of one browser context kept loaded for the next notebook a test opens there.

    Loading JupyterLab costs a page about 5 s of renderer CPU on the 2-core machine, opening a notebook in a
    page that has it loaded a fraction of that (docs/testing.md), and most browser tests open JupyterLab
    notebooks: as in a user's JupyterLab, the next opens in the same app. When a test ends, its
    notebooks' pages come back (``put_away``): the notebooks closed (disposed; their kernels are shut down by
    the test's teardown), the XSS markers cleared, the test's routes removed, the viewport reset; the Launcher
    JupyterLab then opens in the empty page is closed when the next notebook opens there. One page is kept;
    one that shows a dialog, failed to be put away, stopped answering or has shown ``LAB_PAGE_SHOWS``
    notebooks is closed. What else a test leaves in its page's ``window`` stays, up to ``LAB_PAGE_SHOWS``.
    """

    idle: list[LabNotebook] = field(default_factory=list)

    def take(self, server: LabServer) -> LabNotebook | None:
        """The last notebook of a page kept for the next, still open and loaded with ``server``'s settings as
        they are now, or None."""
        while self.idle:
            kept = self.idle.pop()
            if kept.lab is server and kept.settings_version == server.settings_version and not kept.page.is_closed():
                return kept
            with contextlib.suppress(Error):
                kept.page.close()
        return None

    def put_away(self, notebook: LabNotebook) -> None:
        """Close ``notebook`` in its page and keep the page for the next notebook, or close the page (what
        ``LabNotebook.close`` does)."""
        page = notebook.page
        if page.is_closed():
            return
        keep = notebook.shown < LAB_PAGE_SHOWS and not self.idle
        try:
            if keep:
                page.unroute_all(behavior="ignoreErrors")
                page.set_viewport_size(VIEWPORT)
                keep = page.wait_for_function(_PUT_AWAY_JS, timeout=PUT_AWAY_MS).json_value() == "kept"
        except Error:  # a crashed or hung page (Playwright's TimeoutError is an Error too)
            keep = False
        if keep:
            self.idle.append(notebook)
        else:
            with contextlib.suppress(Error):
                page.close()


def open_notebook(
    server: LabServer,
    context: BrowserContext,
    source: Sequence[str] | Path | None,
    name: str,
    *,
    run_all: bool = True,
    frontend: str = "lab",
    workspace: str | None = None,
    pages: LabPages | None = None,
) -> LabNotebook:
    """Write ``source`` (if given) as ``<name>.ipynb``, open it (in a JupyterLab page ``pages`` kept, or a new
    page of ``context``), Run All (unless ``run_all=False``) and wait until it has settled (what
    ``run_notebook_in_lab`` does)."""
    if frontend not in ("lab", "notebook"):
        raise ValueError(f"unknown frontend {frontend!r}: 'lab' or 'notebook'")
    if source is not None:
        _write_notebook(server.root / f"{name}.ipynb", source)
    pages = pages if frontend == "lab" else None
    kept = pages.take(server) if pages is not None else None
    if kept is not None and not _flushed(kept):
        kept = None
    if kept is not None:
        assert kept.watch is not None  # every page open_notebook opens is watched
        notebook = LabNotebook(
            server, name, kept.page, frontend=frontend, watch=kept.watch, shown=kept.shown + 1,
            settings_version=kept.settings_version,
        )  # fmt: skip
        kept.watch.console_errors, kept.watch.server_errors = notebook.console_errors, notebook.server_errors
        notebook.page.evaluate(
            "async (path) => { await window.jupyterapp.commands.execute('docmanager:open', {path}); }",
            f"{name}.ipynb",
        )
    else:
        page = context.new_page()
        notebook = LabNotebook(server, name, page, frontend=frontend, settings_version=server.settings_version)
        notebook.watch = _watch_console(
            page,
            notebook.console_errors,
            NOTEBOOK7_OWN_ERRORS if frontend == "notebook" else (),
            server_errors=notebook.server_errors,
        )
        if frontend == "lab":
            page.goto(server.url(f"lab/workspaces/{workspace or name}/tree/{name}.ipynb", "reset"))
        else:
            page.goto(server.url(f"notebooks/{name}.ipynb"))
    notebook.pages = pages
    page = notebook.page
    page.wait_for_function(
        """(name) => { const w = window.jupyterapp && window.jupyterapp.shell.currentWidget;
             return !!(w && w.context && w.context.path === name && w.sessionContext); }""",
        arg=f"{name}.ipynb",
        timeout=RUN_TIMEOUT_MS,
    )
    page.evaluate(
        """async () => { const w = window.jupyterapp.shell.currentWidget;
             await w.context.ready; await w.sessionContext.ready;
             if (window.jupyterapp.shell.collapseLeft) window.jupyterapp.shell.collapseLeft(); }"""
    )
    if kept is not None:  # the Launcher JupyterLab put in the emptied page
        page.evaluate(_ONLY_CURRENT_JS, f"{name}.ipynb")
    if run_all:
        page.evaluate("async () => await window.jupyterapp.commands.execute('notebook:run-all-cells')")
    notebook.settle()
    notebook.screenshot = notebook.shot("reopened" if source is None else "")
    return notebook


def _theme(page: Page) -> str:
    """The theme ``page`` shows, read within ``PUT_AWAY_MS`` (a page that stopped answering raises)."""
    shown = page.wait_for_function("() => document.body.dataset.jpThemeName || 'none'", timeout=PUT_AWAY_MS)
    return str(shown.json_value())


def _flushed(kept: LabNotebook) -> bool:
    """Whether the kept page still answers: a call on it delivers what it logged since it was put away to the
    last notebook's lists (Playwright's sync API delivers events only during its calls), before they are
    pointed at the next notebook's. A page that does not answer is closed."""
    try:
        kept.page.evaluate("() => true")
    except Error:
        with contextlib.suppress(Error):
            kept.page.close()
        return False
    return True


@pytest.fixture(scope="package")
def lab_pages(lab_context: BrowserContext) -> LabPages:
    """The JupyterLab page kept for the next notebook (closed with ``lab_context``)."""
    return LabPages()


@pytest.fixture
def run_notebook_in_lab(
    lab: LabServer, lab_context: BrowserContext, lab_pages: LabPages, request: pytest.FixtureRequest
) -> Iterator[Callable[..., LabNotebook]]:
    """Open notebooks in JupyterLab (or Notebook 7) and Run All; close them (a JupyterLab page is kept for the
    next, ``LabPages``) and their kernels afterwards."""
    opened: list[LabNotebook] = []
    servers = [lab]

    def run(
        source: Sequence[str] | Path | None, name: str, *, run_all: bool = True, frontend: str = "lab"
    ) -> LabNotebook:
        server, context = lab, lab_context
        if frontend == "notebook":
            server, context = request.getfixturevalue("notebook7"), request.getfixturevalue("notebook7_context")
            if server not in servers:
                servers.append(server)
        notebook = open_notebook(
            server,
            context,
            source,
            name,
            run_all=run_all,
            frontend=frontend,
            workspace=f"{name}-{len(opened) + 1}",
            pages=lab_pages,
        )
        opened.append(notebook)
        return notebook

    yield run
    try:
        for notebook in opened:
            with contextlib.suppress(Error):  # the server's theme setting back to Light, whatever failed
                if not notebook.page.is_closed() and _theme(notebook.page) == DARK:
                    notebook.set_theme(LIGHT)
            with contextlib.suppress(Error):
                notebook.close()
    finally:
        for server in servers:
            for session in server.api("GET", "api/sessions") or []:
                server.api("DELETE", f"api/sessions/{session['id']}")


@dataclass
class StaticPage:
    """A static HTML file opened in Chromium."""

    page: Page
    console_errors: list[str] = field(default_factory=list)

    def xss_hits(self) -> dict[str, Any]:
        """Every XSS marker set on the page (see ``xss.py``)."""
        return self.page.evaluate(XSS_HITS_JS)


@pytest.fixture
def open_static_html(browser: Browser) -> Iterator[Callable[[Path], StaticPage]]:
    """Open local HTML files with the network cut off; close them afterwards."""
    contexts: list[BrowserContext] = []

    def open_file(path: Path) -> StaticPage:
        context = marked_context(browser)
        contexts.append(context)
        context.route(
            "**/*", lambda route: route.continue_() if route.request.url.startswith("file:") else route.abort()
        )
        page = context.new_page()
        static = StaticPage(page)
        _watch_console(page, static.console_errors)
        page.goto(path.resolve().as_uri(), wait_until="load")
        page.evaluate(QUIET_JS, [300, 5_000])
        return static

    yield open_file
    for context in contexts:
        context.close()
