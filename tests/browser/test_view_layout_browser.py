"""How the views read and behave in the page (issue 16.4, 16.5, 16.6, 16.8), in JupyterLab and
Notebook 7.

One notebook (``views16.VIEWS`` plus a live run of four parallel tool calls and, last, an
``await nbagent.show`` the test interrupts), checked while the background runs still go:

* text at its own line height (not ipywidgets' 28 px), Markdown tables and code styled;
* a long stream in a box of bounded height that keeps its end in view as text arrives and grows
  to its whole text with "expand"; the trace keeps every chunk of it;
* a live status that ticks: the elapsed time and the LLM row's "streaming · N chunks" go up;
* four parallel tool cards inside their STEP 5 group, live and in the stepper's panel, with a
  STEP badge of one line's height; in the static copy the title and the status apart;
* cancelled, interrupted and failed told apart, each with its colour; the stopped run's text marked
  as never having entered the context;
* the stepper's diagram: every arrow of ``records.MOVES`` starts on its move's box and ends on its
  target's, and none that the run could take touches a box it cannot;
* a kernel interrupt of ``lost = await nbagent.show(...)``: one line, ``nbagent.last_view()``.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from nbagent.records import MOVES

from .conftest import RUN_TIMEOUT_MS, LabNotebook
from .measure import EDGES_JS, on_border
from .views16 import VIEWS

pytestmark = pytest.mark.browser

CELLS = [
    *VIEWS,
    # Four parallel tool calls still running: the live widget's tool group.
    "parallel = AssistantAgent('parallel', ReplayChatCompletionClient([CreateResult(finish_reason='function_calls',"
    " content=[FunctionCall(id=f'p{i}', name='wait_forever', arguments=f'{{\"x\": {10 + i}}}') for i in range(4)])]),"
    " tools=[wait_forever])\nfour = nbagent.start(parallel, 'Wait four times.')\n"
    "await started.setdefault(13, asyncio.Event()).wait()",
    # Last: an awaited show the test interrupts.
    "lost = await nbagent.show(waiter('interrupted', 3), 'Wait.')",
]

_VIEW = """(title) => [...document.querySelectorAll('.nba-view')].filter(v => v.checkVisibility()).find(v => {
  const t = v.querySelector('.nba-title'); return t && t.textContent.trim() === title; })"""

_LINE_HEIGHTS_JS = """() => {
  const out = {};
  for (const [name, sel] of [
    ['answer paragraph (static)', '.jp-RenderedHTMLCommon .nba-view .nba-markdown p'],
    ['answer list item (static)', '.jp-RenderedHTMLCommon .nba-view .nba-markdown li'],
    ['tool arguments (static)', '.jp-RenderedHTMLCommon .nba-view .nba-tool-args'],
    ['explanation (stepper widget)', '.nba-stepper-live .nba-stepper-explanation'],
    ['next line (stepper widget)', '.nba-stepper-live .nba-stepper-next'],
    ['context cell (stepper widget)', '.nba-stepper-live .nba-stepper-context td'],
    ['streamed text (live widget)', '.nba-view.widget-vbox .nba-stream-text'],
    ['LLM row (live widget)', '.nba-view.widget-vbox .nba-llm-call'],
  ]) {
    const el = [...document.querySelectorAll(sel)].find(e => e.checkVisibility());
    if (!el) { out[name] = null; continue; }
    const s = getComputedStyle(el);
    out[name] = [parseFloat(s.lineHeight), parseFloat(s.fontSize)];
  }
  return out;
}"""

_MARKDOWN_JS = """() => {
  const root = document.querySelector('.jp-RenderedHTMLCommon .nba-view .nba-markdown');
  const s = (sel) => getComputedStyle(root.querySelector(sel));
  return {
    td_border: [s('td').borderTopWidth, s('td').borderTopStyle], th_background: s('th').backgroundColor,
    table_margin_left: s('table').marginLeft, td_align: s('td').textAlign,
    code_font: s('p code').fontFamily, code_background: s('p code').backgroundColor,
    pre_background: s('pre').backgroundColor, pre_border: s('pre').borderTopWidth,
    link: s('a').color, strong: s('strong').fontWeight,
  };
}"""

_STREAM_JS = (
    """(title) => {
  const view = ("""
    + _VIEW
    + """)(title);
  const scroll = view.querySelector('.nba-scroll');
  const spans = [...scroll.querySelectorAll('.nba-stream-text')];
  const last = spans[spans.length - 1];
  const range = document.createRange();
  range.selectNodeContents(last);
  const rects = [...range.getClientRects()];
  const end = rects[rects.length - 1], box = scroll.getBoundingClientRect();
  const row = view.querySelector('.nba-llm-call');
  return {
    height: scroll.clientHeight, full: scroll.scrollHeight, fontSize: parseFloat(getComputedStyle(scroll).fontSize),
    endInView: end.bottom <= box.bottom + 1 && end.bottom >= box.top,
    elapsed: Number(view.querySelector('.nba-footer [data-metric=elapsed]').dataset.value),
    streamingChunks: Number(view.querySelector('.nba-footer [data-metric=streaming_chunks]')?.dataset.value),
    row: row.innerText, rowState: row.dataset.state,
    text: spans.map(s => s.textContent).join(''),
  };
}"""
)

# The footer's "+ N chunks streaming" equals the LLM row's "streaming · N chunks".
_FOOTER_AGREES_JS = (
    """(title) => {
  const view = ("""
    + _VIEW
    + """)(title);
  const found = view.querySelector('.nba-llm-call').innerText.match(/streaming · ([\\d,]+) chunks/);
  const footer = view.querySelector('.nba-footer [data-metric=streaming_chunks]');
  return found !== null && footer !== null && Number(footer.dataset.value) === Number(found[1].replace(/,/g, ''));
}"""
)

_CARDS_JS = """(selector) => [...document.querySelectorAll(selector)].filter(g => g.checkVisibility()).map(group => {
  const box = group.getBoundingClientRect();
  const cards = [...group.querySelectorAll('.nba-tool-card')].map(c => c.getBoundingClientRect());
  const badge = group.querySelector('.nba-step').getBoundingClientRect();
  return {
    cards: cards.length,
    inside: cards.every(c => c.left >= box.left - 0.5 && c.right <= box.right + 0.5
                             && c.top >= box.top - 0.5 && c.bottom <= box.bottom + 0.5),
    badgeHeight: badge.height, badgeWidth: badge.width,
  };
})"""

_ENDINGS_JS = (
    """() => Object.fromEntries(['adder', 'cutter', 'canceller', 'failing'].map(title => {
  const view = ("""
    + _VIEW
    + """)(title);
  const chip = view.querySelector('.nba-status-text');
  const header = view.querySelector('.nba-header');
  const [name, status] = [view.querySelector('.nba-title'), chip].map(e => e.getBoundingClientRect());
  return [title, {
    status: view.dataset.status, text: chip.textContent, border: getComputedStyle(view).borderLeftColor,
    chip: getComputedStyle(chip).borderLeftColor, gap: status.left - name.right, header: header.innerText,
    discarded: [...view.querySelectorAll('.nba-discarded .nba-discarded-note')].map(e => e.textContent),
    struck: [...view.querySelectorAll('.nba-discarded .nba-stream-text')].map(
      e => getComputedStyle(e).textDecorationLine),
    discardedText: [...view.querySelectorAll('.nba-discarded .nba-stream-text')].map(e => e.textContent).join(''),
  }];
}))"""
)


def wait_for_view(nb: LabNotebook, title: str, state: str) -> None:
    nb.page.wait_for_function(
        "([title, state]) => { const v = (" + _VIEW + ")(title); return v && v.dataset.status === state"
        " || v && v.classList.contains('nba-state-' + state); }",
        arg=[title, state],
        timeout=120_000,
    )


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_views_read_and_behave_in_the_page(run_notebook_in_lab: Callable[..., LabNotebook], frontend: str) -> None:
    nb = run_notebook_in_lab(CELLS, name=f"layout_{frontend}", run_all=False, frontend=frontend)
    page = nb.page
    page.set_viewport_size({"width": 1280, "height": 4000})
    page.evaluate("() => { window.jupyterapp.commands.execute('notebook:run-all-cells'); }")
    wait_for_view(nb, "interrupted", "running")
    page.wait_for_function("() => document.querySelectorAll('.nba-tool-card[data-state=running]').length >= 6")
    page.evaluate("() => new Promise(r => setTimeout(r, 1000))")

    # Line heights: each text at about 1.45 times its size, nowhere ipywidgets' 28 px.
    heights = page.evaluate(_LINE_HEIGHTS_JS)
    print(frontend, "line heights (px, font px):", heights)
    for name, found in heights.items():
        assert found is not None, name
        line, size = found
        assert line < 1.7 * size and line < 24, (name, found)

    # Markdown: tables with borders, header cells tinted, left-aligned; code in a monospace chip, blocks in a box.
    md = page.evaluate(_MARKDOWN_JS)
    assert md["td_border"] == ["1px", "solid"] and md["td_align"] == "left" and md["table_margin_left"] == "0px"
    assert md["th_background"] not in ("rgba(0, 0, 0, 0)", "transparent")
    assert "mono" in md["code_font"].lower() and md["code_background"] not in ("rgba(0, 0, 0, 0)", "transparent")
    assert md["pre_background"] not in ("rgba(0, 0, 0, 0)", "transparent") and md["pre_border"] == "1px"

    # The long stream: a box of bounded height, its end in view as text arrives; the status ticks (waited for:
    # the footer's elapsed passes the first reading by 0.75 s; at a load of 23, 1.2 s of page time showed 0.62).
    before = page.evaluate(_STREAM_JS, "talker")
    page.wait_for_function(
        f"(title) => ({_STREAM_JS})(title).elapsed >= {before['elapsed'] + 0.75}", arg="talker", timeout=RUN_TIMEOUT_MS
    )
    after = page.evaluate(_STREAM_JS, "talker")
    print(frontend, "stream box:", {k: v for k, v in after.items() if k != "text"})
    assert after["height"] <= 16 * after["fontSize"] + 2 < after["full"]
    assert before["endInView"] and after["endInView"] and len(after["text"]) > len(before["text"])
    assert after["elapsed"] >= before["elapsed"] + 0.75
    assert after["rowState"] == "streaming"
    counts = [int(re.findall(r"streaming · ([\d,]+) chunks", s["row"])[0].replace(",", "")) for s in (before, after)]
    assert counts[1] > counts[0] > 0
    # The footer counts the chunks the row counts. A tick sends the row, then the footer: between the
    # two messages the page has the new row and the old footer, so the two agree once a tick has landed.
    page.wait_for_function(_FOOTER_AGREES_JS, arg="talker", timeout=RUN_TIMEOUT_MS)
    # "expand" lifts the bound: the box shows its whole text.
    page.locator(".nba-view.widget-vbox", has=page.locator(".nba-title", has_text="talker")).locator(
        "label.nba-expand"
    ).click()
    expanded = page.evaluate(_STREAM_JS, "talker")
    assert expanded["height"] >= expanded["full"] - 1 and expanded["height"] > 16 * expanded["fontSize"] + 2

    # Parallel tool cards: four inside their group, live and in the stepper; a badge of one line.
    groups = page.evaluate(_CARDS_JS, ".nba-tool-group")
    print(frontend, "tool groups:", groups)
    four = [group for group in groups if group["cards"] == 4]
    assert len(four) >= 3  # the finished view's static copy, the live run, the stepper's events panel
    assert all(group["inside"] for group in groups)
    assert all(group["badgeHeight"] <= 20 and group["badgeWidth"] <= 60 for group in groups)

    # Endings told apart, each with its colour; the stopped run's text never entered the context.
    endings = page.evaluate(_ENDINGS_JS)
    print(frontend, "endings:", {k: {n: v[n] for n in ("status", "text", "border")} for k, v in endings.items()})
    assert [endings[t]["status"] for t in ("adder", "cutter", "canceller", "failing")] == [
        "ok", "cancelled", "interrupted", "error"
    ]  # fmt: skip
    assert endings["cutter"]["text"] == "cancelled: stopped with the Stop button"
    assert endings["canceller"]["text"] == "interrupted: task cancelled"
    assert endings["failing"]["text"] == "error"  # the error itself is shown once, in the failed call's line
    assert len({ending["border"] for ending in endings.values()}) == 4
    assert len({ending["chip"] for ending in endings.values()}) == 4
    assert all(ending["gap"] >= 4 for ending in endings.values())
    assert endings["adder"]["header"].split() == ["adder", "ok"]  # not "adderok"
    assert endings["cutter"]["discarded"] == [
        "never entered the model context: the run ended before this message was complete"
    ]
    assert endings["cutter"]["struck"] and all("line-through" in d for d in endings["cutter"]["struck"])
    assert all(not ending["discarded"] for title, ending in endings.items() if title != "cutter")

    # The diagram: every arrow of MOVES, from its move's box to its target's.
    edges = page.evaluate(EDGES_JS, ".nba-stepper-live")
    assert sorted((e["from"], e["to"]) for e in edges) == sorted(
        (name, edge.target) for name, info in MOVES.items() for edge in info.edges
    )
    for edge in edges:
        assert edge["visible"], edge
        assert on_border(edge["start"], edge["source"]), ("start", edge)
        assert on_border(edge["end"], edge["target"]), ("end", edge)
        if edge["source"]["state"] == "unused" or edge["target"]["state"] == "unused":
            assert edge["state"] == "unused", edge
        if edge["state"] == "unused":
            assert edge["stroke"] != "none"
    states = {e["from"]: e["source"]["state"] for e in edges}
    assert states["memory"] == states["handoff_check"] == "unused"  # no memory, no handoffs
    assert states["reflect"] == "idle" and states["tool_request"] == "current"

    # A kernel interrupt of `lost = await nbagent.show(...)` (the last cell, still running): one line;
    # the view stays reachable.
    page.evaluate("async () => await window.jupyterapp.commands.execute('notebook:interrupt-kernel')")
    wait_for_view(nb, "interrupted", "interrupted")
    nb.settle()
    assert nb.error_outputs() == [
        "RunInterrupted: the run of 'interrupted' was interrupted; its view: nbagent.last_view()"
    ]
    assert nb.execute("print('lost' in dir(), nbagent.last_view().status, nbagent.last_view().detail)") == (
        "False interrupted kernel interrupt\n"
    )
    # The trace keeps every chunk of the discarded text (the box showed the same text).
    kept = nb.execute(
        "frame = cut_agent.trace.events_df()\nchunks = frame[frame.kind == 'ModelClientStreamingChunkEvent'].text\n"
        "print(len(chunks), len(''.join(chunks)))"
    )
    chunks, length = (int(part) for part in kept.split())
    assert chunks > 10 and length == len(endings["cutter"]["discardedText"])
    nb.execute("for run in (streaming, waiting, four):\n    run.stop()\n    await run.wait()")
    assert nb.console_errors == []
