"""XSS and secrets in a real browser (issue 9, item 6).

The payload corpus (``xss.py``) goes into every place a model or a tool writes: the task, both
thoughts, tool arguments, tool results, tool errors and the streamed answer (Markdown). The same
script is rendered by the live view (``nbagent.show``) and by the step-by-step widget
(``nbagent.step``, walked with its Next button), then the saved notebook is exported with nbconvert
and opened as a static page, with and without its widget state. A positive control (a raw
``widgets.HTML`` with one payload) proves the markers do fire when HTML is not escaped.

Secrets: a random fake key in the kernel's environment is passed to an OpenAI client pointed at a
dead local port; the run fails, and the key appears neither in the page, nor in the saved notebook
(widget state included) nor in either HTML export.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

from tests.ports import free_port

from .conftest import LabNotebook, LabServer, StaticPage, reopened_with_widgets
from .xss import DANGEROUS_DOM_JS, KERNEL_TOOLS, PAYLOAD_COUNT, PLACES, corpus, xss_payloads

pytestmark = pytest.mark.browser

ESCAPED_PLACES = ("u", "h", "k", "r", "e")
"""Places shown as escaped text: each payload must appear there literally."""

SETUP = (
    """
import json, os
import ipywidgets as widgets
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient
"""
    + KERNEL_TOOLS
    + """
def make_agent(name: str) -> AssistantAgent:
    calls = [
        FunctionCall(id=f"l{i}", name="lookup", arguments=json.dumps({"key": i, "note": a}))
        for i, a in enumerate(corpus["a"])
    ]
    calls += [
        FunctionCall(id=f"x{i}", name="explode", arguments=json.dumps({"key": i})) for i in range(len(corpus["e"]))
    ]
    script = [
        CreateResult(finish_reason="function_calls", content=calls, thought="\\n\\n".join(corpus["h"])),
        CreateResult(finish_reason="stop", content="\\n\\n".join(corpus["t"]), thought="\\n\\n".join(corpus["k"])),
    ]
    return AssistantAgent(
        name, ReplayChatCompletionClient(script), tools=[lookup, explode],
        reflect_on_tool_use=True, model_client_stream=True,
    )

TASK = "\\n\\n".join(corpus["u"])
"""
)

CONTROL_MS = 120_000
"""How long the reopened notebook's control may take to render from the saved widget state (a hang guard)."""

CONTROL = """control = widgets.HTML("<img src='data:,' onerror=\\"__xss('control')\\">")
control"""

VIEW = 'view = await nbagent.show(make_agent("hostile"), TASK)'

STEPPER = """stepper = nbagent.step(make_agent("stepped"), TASK)
stepper"""

SECRET = """
from nbagent.models.openai import OpenAIChatCompletionClient

leaky = OpenAIChatCompletionClient(
    "gpt-4o-mini", api_key=os.environ["NBAGENT_TEST_API_KEY"], base_url="http://127.0.0.1:{port}/v1",
    max_retries=0, timeout=5,
)
keyed = AssistantAgent("keyed", leaky, model_client_stream=True)
try:
    await nbagent.show(keyed, "hello")
except nbagent.ModelError as error:
    print("run failed:", type(error).__name__, "key length", len(os.environ["NBAGENT_TEST_API_KEY"]))
leaky
"""

CHECK = "print(view.status, len(view.tool_executions), stepper.status)"

_TEXT_JS = "(sel) => [...document.querySelectorAll(sel)].map(e => e.textContent).join('\\n')"
_OPEN_DETAILS_JS = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"
# [index, STEP, move] of the head, the highlighted diagram node, and the context rows by change.
_HEAD_JS = """() => { const h = document.querySelector('.nba-stepper-live .nba-stepper-head');
  const rows = [...document.querySelectorAll('.nba-stepper-live .nba-ctx-row')];
  const current = [...document.querySelectorAll('.nba-stepper-live .nba-node[data-state=current]')]
    .map(n => n.dataset.move);
  return [h.dataset.index, h.dataset.step, h.dataset.move, current.join(','),
          rows.map(r => r.dataset.kind + (r.dataset.change ? '+' : '')).join(' ')]; }"""
_NOT_BUSY_JS = """(index) => { const s = document.querySelector('.nba-stepper-status [data-busy]');
  const h = document.querySelector('.nba-stepper-live .nba-stepper-head');
  return s && s.dataset.busy === 'false' && h && h.dataset.index !== index; }"""


def _export(notebook_path: Path, target: Path, *, keep_widget_state: bool) -> str:
    notebook = nbformat.read(notebook_path, as_version=4)
    if not keep_widget_state:
        notebook.metadata.pop("widgets", None)
    body, _ = HTMLExporter().from_notebook_node(notebook)
    target.write_text(body)
    return body


@pytest.mark.timeout(900)  # a hang guard: a run, six stepper moves, a save, a reopen and two exports
def test_no_payload_runs_and_no_key_leaks(
    run_notebook_in_lab: Callable[..., LabNotebook],
    open_static_html: Callable[[Path], StaticPage],
    lab: LabServer,
    tmp_path: Path,
) -> None:
    (lab.root / "xss_corpus.json").write_text(json.dumps(corpus()))
    cells = [SETUP, CONTROL, VIEW, STEPPER, SECRET.replace("{port}", str(free_port())), CHECK]
    nb: LabNotebook = run_notebook_in_lab(cells, name="security")
    page = nb.page
    outputs = nb.output_texts()
    assert nb.error_outputs() == []
    assert f"run failed: ModelConnectionError key length {len(lab.secret)}" in outputs[4]
    assert "OpenAIChatCompletionClient(model='gpt-4o-mini'" in outputs[4]
    assert outputs[5].strip() == f"ok {2 * PAYLOAD_COUNT} ready"

    # The control proves the markers work on this page: raw HTML in a widget does execute.
    assert nb.xss_hits() == {"window": ["control"], "dom": "control"}

    # Live view: every escaped place shows each payload as text; nothing became an element.
    page.evaluate(_OPEN_DETAILS_JS)
    nb.settle()
    view_text = page.evaluate(_TEXT_JS, ".nba-view")
    for place in ESCAPED_PLACES:
        missing = [p.kind for p in xss_payloads(place) if p.text not in view_text]
        assert missing == [], f"{PLACES[place]}: not shown as text: {missing}"
    assert [p.pid for p in xss_payloads("a") if p.pid not in view_text] == []
    assert page.locator(".nba-view.nba-state-ok").count() == 1
    assert page.locator(".nba-view.nba-state-error").count() == 1
    assert page.evaluate(DANGEROUS_DOM_JS, ".nba-view") == []

    # Stepper: click Next until the run is over; check the DOM after every move.
    moves: list[list[str]] = []
    head = page.evaluate(_HEAD_JS)
    assert head == ["0", "0", "", "", ""]
    next_button = page.locator(".nba-stepper-live button", has_text="Next")
    while next_button.is_enabled():
        next_button.click()
        page.wait_for_function(_NOT_BUSY_JS, arg=head[0], timeout=30_000)
        nb.settle()
        page.evaluate(_OPEN_DETAILS_JS)
        head = page.evaluate(_HEAD_JS)
        moves.append(head)
        assert page.evaluate(DANGEROUS_DOM_JS, ".nba-stepper") == [], f"after move {head}"
        assert len(moves) < 30
    # Each click made one move: the head, the highlighted node and the context's new rows follow.
    assert moves == [
        ["1", "1", "add_messages", "add_messages", "user+"],
        ["2", "3", "message_id", "message_id", "user"],
        ["3", "4", "call_llm", "call_llm", "user"],
        ["4", "5", "tool_request", "tool_request", "user assistant+"],
        ["5", "5", "tool_execution", "tool_execution", "user assistant tool_result+"],
        ["6", "5", "reflect", "reflect", "user assistant tool_result assistant+"],
    ]
    stepper_text = page.evaluate(_TEXT_JS, ".nba-stepper")
    # The last move (reflection) shows the streamed answer and its thought as escaped text.
    for place in ("t", "k"):
        assert [p.kind for p in xss_payloads(place) if p.text not in stepper_text] == [], PLACES[place]
    nb.shot("stepper", ".nba-stepper-live")

    assert nb.xss_hits() == {"window": ["control"], "dom": "control"}
    assert lab.secret not in page.content()

    # The saved notebook and its HTML exports: no key, and no payload runs in the static page.
    saved = nb.save()
    assert '"application/vnd.jupyter.widget-state+json"' in saved
    assert lab.secret not in saved
    # Reopened in JupyterLab on a fresh kernel, the widgets come back from the saved state: the
    # control runs again (so this path is exercised), no payload does.
    for session in lab.api("GET", "api/sessions") or []:
        lab.api("DELETE", f"api/sessions/{session['id']}")
    nb.page.close()

    # The control's widget is rebuilt from the saved state when its view renders: later on a loaded or
    # cold machine (a cold CI run gave up here once at 30 s), so the guard is far above that.
    def discarded(lost: LabNotebook) -> None:  # a page that lost the control to ipywidgets' race: no payload ran
        assert set(lost.xss_hits()["window"]) <= {"control"}
        assert lost.page.evaluate(DANGEROUS_DOM_JS, ".nba-view, .nba-stepper") == []

    reopened = reopened_with_widgets(
        lambda: run_notebook_in_lab(None, name="security", run_all=False),
        "(window.__xssHits || []).includes('control')",
        on_discard=discarded,
        timeout_ms=CONTROL_MS,
    )
    reopened.page.wait_for_selector(".nba-static-copy .nba-stepper-head")
    reopened.page.evaluate(_OPEN_DETAILS_JS)
    reopened.settle()
    assert reopened.page.locator(".nba-view").count() == 2
    assert reopened.page.evaluate(DANGEROUS_DOM_JS, ".nba-view, .nba-stepper") == []
    assert reopened.xss_hits() == {"window": ["control"], "dom": "control"}
    assert lab.secret not in reopened.page.content()

    for keep_state in (True, False):
        target = tmp_path / f"security-{'state' if keep_state else 'static'}.html"
        body = _export(nb.path, target, keep_widget_state=keep_state)
        assert lab.secret not in body
        static = open_static_html(target)
        static.page.evaluate(_OPEN_DETAILS_JS)
        assert static.xss_hits() == {"window": [], "dom": ""}, target.name
        assert static.page.evaluate(DANGEROUS_DOM_JS, ".jp-OutputArea-output") == [], target.name
        if not keep_state:
            # The fallback really shows both views and the stepper, payloads as text.
            assert static.page.locator(".nba-view").count() == 2
            assert static.page.locator(".nba-stepper").count() == 1
            fallback_text = static.page.evaluate(_TEXT_JS, ".nba-view")
            assert [p.kind for p in xss_payloads("r") if p.text not in fallback_text] == []
