"""The trace views in a real browser: XSS payloads stay text, the API key appears nowhere (issue 4).

One JupyterLab notebook builds an agent on the replay model whose task, both thoughts, tool
arguments, tool results, tool errors, unknown tool names (the model calls a tool that does not
exist, named with a payload), streamed answer and model error carry the payload corpus
(``xss.py``). Another agent, recorded into the same trace, calls an OpenAI client holding a fake key
in the kernel's environment (pointed at a dead local port, so its run fails). Then each view of the
trace is displayed in its own cell: the trace itself (summary table and timeline), ``summary()``,
``timeline()``, the four frames, ``agent.context_df()`` and ``trace.context_df(run_id, seq)``, and
the same views of the trace saved to Parquet and loaded back.

pandas shortens cells to 50 characters, frames to 60 rows and 20 columns by default; the notebook
lifts these limits (``display.max_colwidth`` / ``display.max_rows`` / ``display.max_columns``) so
every payload is in the page in full.
The positive control is a raw ``IPython.display.HTML`` output: the same renderer as the trace
views, so it proves that unescaped HTML does run there (in JupyterLab and in the nbconvert export).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

from tests.ports import free_port

from .conftest import LabNotebook, LabServer, StaticPage
from .xss import DANGEROUS_DOM_JS, KERNEL_TOOLS, PAYLOAD_COUNT, PLACES, corpus, xss_payloads

pytestmark = pytest.mark.browser


SETUP = (
    """
import json, os
import pandas as pd
from IPython.display import HTML
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient
from nbagent.models.openai import OpenAIChatCompletionClient

pd.set_option("display.max_colwidth", None)
pd.set_option("display.max_rows", None)
pd.set_option("display.max_columns", None)
"""
    + KERNEL_TOOLS
    + '''
class Failing(ReplayChatCompletionClient):
    """The replay model, failing with a hostile message once its script is used up."""

    async def create(self, messages, **kwargs):
        if self.remaining == 0:
            raise nbagent.ModelError("\\n\\n".join(corpus["m"]))
        return await super().create(messages, **kwargs)

calls = [
    FunctionCall(id=f"l{i}", name="lookup", arguments=json.dumps({"key": i, "note": a}))
    for i, a in enumerate(corpus["a"])
]
calls += [FunctionCall(id=f"x{i}", name="explode", arguments=json.dumps({"key": i})) for i in range(len(corpus["e"]))]
calls += [FunctionCall(id=f"n{i}", name=name, arguments="{}") for i, name in enumerate(corpus["n"])]
script = [
    CreateResult(finish_reason="function_calls", content=calls, thought="\\n\\n".join(corpus["h"])),
    CreateResult(finish_reason="stop", content="\\n\\n".join(corpus["t"]), thought="\\n\\n".join(corpus["k"])),
]
agent = AssistantAgent(
    "hostile", Failing(script), tools=[lookup, explode], reflect_on_tool_use=True, model_client_stream=True,
)
leaky = OpenAIChatCompletionClient(
    "gpt-4o-mini", api_key=os.environ["NBAGENT_TEST_API_KEY"], base_url="http://127.0.0.1:{port}/v1",
    max_retries=0, timeout=5,
)
keyed = AssistantAgent("keyed", leaky, model_client_stream=True)
trace = agent.trace
trace.attach(keyed)
try:
    await keyed.run(task="hello")
except nbagent.ModelError as error:
    print("keyed run failed:", type(error).__name__, "key length", len(os.environ["NBAGENT_TEST_API_KEY"]))
await agent.run(task="\\n\\n".join(corpus["u"]))
try:
    await agent.run(task="again")
except nbagent.ModelError as error:
    print("second run failed:", type(error).__name__)
runs = trace.runs_df()
first = str(runs["run_id"].iloc[1])
last_seq = int(trace.events_df().query("run_id == @first")["seq"].max())
print(runs["agent"].tolist(), runs["status"].tolist(), len(trace.tool_calls_df()))
'''
)

CONTROL = """HTML("<div class='xss-control'><img alt='control' src='data:,' onerror=\\"__xss('control')\\"></div>")"""

VIEWS = [
    "{t}",
    "{t}.summary()",
    "{t}.timeline(first)",
    "{t}.events_df()",
    "{t}.llm_calls_df()",
    "{t}.tool_calls_df()",
    "{t}.runs_df()",
    "{t}.context_df(first, last_seq)",
]
LOAD = 'loaded = nbagent.load_parquet(trace.to_parquet("trace_parquet"))'
DEFAULTS = """with pd.option_context("display.max_colwidth", 50, "display.max_rows", 60):
    display(trace.events_df(), trace.tool_calls_df(), agent.context_df())"""
"""The frames as pandas shows them by default: texts cut at 50 characters, 10 rows of long frames."""

ALL = tuple(PLACES)
FRAME_PLACES: dict[str, tuple[str, ...]] = {
    "{t}.events_df()": ALL,
    "{t}.llm_calls_df()": ("t", "m"),
    "{t}.tool_calls_df()": ("a", "r", "e", "n"),
    "{t}.runs_df()": ("u", "t", "m"),
    "{t}.context_df(first, last_seq)": ("u", "h", "k", "a", "r", "e", "n", "t"),
    "agent.context_df()": ("u", "h", "k", "a", "r", "e", "n", "t"),
}
"""Where each frame shows a place in full. Arguments are shown as JSON text or a dict's repr,
with the payload's quotes escaped, so for ``a`` only the payload ids are looked for."""

SUMMARY = {
    "runs": 3,
    "runs_ok": 1,
    "runs_error": 2,
    "llm_calls": 4,
    "tool_calls": 3 * PAYLOAD_COUNT,
    "tool_errors": 2 * PAYLOAD_COUNT,
}

OUTPUTS = ".jp-OutputArea-output:not(:has(.xss-control))"
"""Every output but the positive control's."""
_CELL = "[...document.querySelectorAll('.jp-Notebook .jp-CodeCell')][i]"
_TEXT_JS = f"(i) => [...{_CELL}.querySelectorAll('.jp-OutputArea-output')].map(o => o.textContent).join('\\n')"
_TITLES_JS = f"(i) => [...{_CELL}.querySelectorAll('svg title')].map(t => t.textContent)"
_ROWS_JS = (
    f"(i) => [...{_CELL}.querySelectorAll('tr')]"
    ".map(r => [r.querySelector('th').textContent, r.querySelector('td').textContent])"
)
_BARS = (
    'print(json.dumps({{"first": [b.details for b in {t}.timeline(first).bars],'
    ' "last": [b.details for b in {t}.timeline().bars]}}))'
)
CONTROL_HIT = {"window": ["control"], "dom": "control"}


def _cells(port: int) -> tuple[list[str], dict[str, int]]:
    """The notebook's cells and the index of each view's cell (``{t}`` is ``trace`` or ``loaded``)."""
    cells = [SETUP.replace("{port}", str(port)), CONTROL]
    index: dict[str, int] = {}
    for name in ("trace", "loaded"):
        if name == "loaded":
            cells.append(LOAD)
        for view in VIEWS:
            index[view.format(t=name)] = len(cells)
            cells.append(view.format(t=name))
        if name == "trace":
            index["agent.context_df()"] = len(cells)
            cells.append("agent.context_df()")
    index["defaults"] = len(cells)
    cells.append(DEFAULTS)
    return cells, index


def _missing(text: str, place: str, *, frame: bool = False) -> list[str]:
    """The payloads of ``place`` not in ``text`` (by kind; by id for arguments). A frame shows a
    line break as the two characters ``\\n`` (pandas)."""
    if place == "a":
        calls = {p.pid: (f"__xss('{p.pid}')", f"__xss(\\'{p.pid}\\')") for p in xss_payloads(place)}
        return [pid for pid, forms in calls.items() if not any(form in text for form in forms)]
    return [p.kind for p in xss_payloads(place) if (p.text.replace("\n", "\\n") if frame else p.text) not in text]


def test_trace_views_escape_payloads_and_hide_the_key(
    run_notebook_in_lab: Callable[..., LabNotebook],
    open_static_html: Callable[[Path], StaticPage],
    lab: LabServer,
    tmp_path: Path,
) -> None:
    (lab.root / "xss_corpus.json").write_text(json.dumps(corpus()))
    cells, index = _cells(free_port())
    nb = run_notebook_in_lab(cells, name="trace-views")
    page = nb.page
    assert nb.error_outputs() == []
    assert nb.output_texts()[0].splitlines() == [
        f"keyed run failed: ModelConnectionError key length {len(lab.secret)}",
        "second run failed: ModelError",
        f"['keyed', 'hostile', 'hostile'] ['error', 'ok', 'error'] {3 * PAYLOAD_COUNT}",
    ]
    # The control proves the markers fire on this page, through the renderer the views use.
    assert nb.xss_hits() == CONTROL_HIT
    assert page.evaluate(DANGEROUS_DOM_JS, OUTPUTS) == []
    cut = page.evaluate(_TEXT_JS, index["defaults"])
    assert page.locator(".jp-CodeCell").nth(index["defaults"]).locator("table.dataframe").count() == 3
    assert "<img src=x onerror=\"__xss('u00')\">\\n\\n<img src..." in cut

    for name in ("trace", "loaded"):
        # Each frame shows every payload of its places as text.
        for view, places in FRAME_PLACES.items():
            if view == "agent.context_df()" and name == "loaded":
                continue
            cell = index[view.format(t=name)]
            assert page.locator(".jp-CodeCell").nth(cell).locator("table.dataframe").count() == 1, view
            text = page.evaluate(_TEXT_JS, cell)
            for place in places:
                assert _missing(text, place, frame=True) == [], f"{name}: {view}: {PLACES[place]} not shown as text"
        summary = page.evaluate(_TEXT_JS, index[f"{name}.summary()"])
        figures = {parts[0]: parts[1] for parts in map(str.split, summary.splitlines()) if len(parts) == 2}
        assert {key: figures.get(key) for key in SUMMARY} == {key: str(value) for key, value in SUMMARY.items()}
        rows = dict(page.evaluate(_ROWS_JS, index[name]))  # the trace's own view: the same figures
        assert {key: rows.get(key) for key in SUMMARY} == {key: str(value) for key, value in SUMMARY.items()}
        # The timelines: every bar's tooltip is its details, exactly (unescaped once, by the browser).
        bars = json.loads(nb.execute(_BARS.format(t=name)))
        assert len(bars["first"]) == 2 + 3 * PAYLOAD_COUNT and len(bars["last"]) == 1
        assert page.evaluate(_TITLES_JS, index[f"{name}.timeline(first)"]) == bars["first"]
        assert page.evaluate(_TITLES_JS, index[name]) == bars["last"]
        shown = "\n".join(bars["first"] + bars["last"])
        for place in ("n", "r", "e"):
            assert _missing(shown, place) == [], f"{name}: timeline: {PLACES[place]}"
        assert "__xss('m00')" in bars["last"][0]

    assert nb.xss_hits() == CONTROL_HIT
    assert lab.secret not in page.content()
    saved = nb.save()
    assert lab.secret not in saved
    for table in sorted((lab.root / "trace_parquet").rglob("*.parquet")):  # <table>/session=<id>/part-0.parquet
        assert lab.secret.encode() not in table.read_bytes(), table.name

    # The saved notebook exported with nbconvert: the control runs in the static page, no payload does.
    body, _ = HTMLExporter().from_notebook_node(nbformat.read(nb.path, as_version=4))
    assert lab.secret not in body
    target = tmp_path / "trace-views.html"
    target.write_text(body)
    static = open_static_html(target)
    assert static.xss_hits() == CONTROL_HIT
    assert static.page.evaluate(DANGEROUS_DOM_JS, OUTPUTS) == []
    assert static.page.locator("table.dataframe").count() == len(FRAME_PLACES) * 2 - 1 + 3
    assert static.page.locator(".nbagent-timeline svg").count() == 4
    static_text = static.page.evaluate("() => document.body.textContent")
    for place in ALL:
        assert _missing(static_text, place, frame=True) == [], f"static export: {PLACES[place]}"
