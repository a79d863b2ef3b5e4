"""A saved notebook opened untrusted (issue 33.1), in JupyterLab and Notebook 7, and the loop diagram
in a narrow notebook (issue 29.4).

Each of the eight shipped notebooks, run as ``nbconvert --execute`` runs it (nbclient) and saved, is
opened untrusted in both frontends too (one server each; in JupyterLab one after the other in one page,
in Notebook 7 a page each): the same checks hold, in the light and the dark theme (the theme a page shows
first, then the other: one switch a notebook).

Run All, once in JupyterLab, makes every kind of view (finished, stopped, failed, a stepper three moves
in, a batch, a trace with its timeline) and the notebook is saved. Its copy with one metadata field changed no
longer matches the signature the server keeps, as a notebook from a clone, an email or a download:
JupyterLab and Notebook 7 show its HTML outputs through their sanitizer (no ``<style>``, no
``<svg>``, no ``data-*``, no ``var()``). From the DOM of that page: the outputs really are
sanitized, labels and values are apart (on screen and in the text), each diagram is a picture (an
``<img>``) whose SVG holds an arrowhead for every arrow, no SVG text runs on as words, and every text
has a contrast of at least 4.5:1, in the light and the dark theme.

The live stepper at 800 px, in JupyterLab and Notebook 7: the arrowheads are drawn inside their
own SVG (no ``<marker>`` shared by two diagrams), the diagram's smallest text is at least 11 px (it
scrolls rather than shrinks) and every button is inside the output.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import unquote

import nbformat
import pytest

from nbagent.records import MOVES

from ..kernels import execute_notebook, kernel_manager
from ..notebooks._kernel import KERNEL_NAME, NOTEBOOKS, write_kernelspec
from .conftest import LabNotebook, LabServer
from .measure import CONTRAST_JS
from .test_reopen_browser import CELLS

pytestmark = pytest.mark.browser

BATCH = (
    "batch = await nbagent.Batch(lambda task: adder('batched'), ['Sum the four pairs.'] * 3, concurrency=2).run()\n"
    "print(batch.state)"
)
ALL_CELLS = [*CELLS, BATCH, "shown_agent.trace.timeline()"]
EDGES = sum(len(info.edges) for info in MOVES.values())

_UNTRUSTED_JS = r"""() => {
  const outputs = document.querySelector('.jp-Notebook');
  const visible = (e) => e.checkVisibility();
  const roots = [...outputs.querySelectorAll('.nba-view, .nba-stepper, .nba-trace, .nbagent-timeline')]
    .filter(visible);
  // Apart on screen: a badge, label, metric or title and what follows it on its line.
  const glued = [];
  for (const el of outputs.querySelectorAll('.nba-step, .nba-label, .nba-metric, .nba-title')) {
    if (!visible(el)) continue;
    let next = el.nextSibling;
    while (next && next.nodeType === 3 && !next.textContent.trim()) next = next.nextSibling;
    if (!next) continue;
    let rect;
    if (next.nodeType === 3) {
      const range = document.createRange();
      const start = next.textContent.search(/\S/);
      range.setStart(next, start); range.setEnd(next, start + 1);
      rect = range.getClientRects()[0];
    } else {
      if (!visible(next) || !next.getClientRects().length) continue;
      rect = next.getClientRects()[0];  // its first line
    }
    const own = el.getBoundingClientRect();
    const sameLine = Math.abs(rect.top - own.top) < own.height;
    if (sameLine && rect.left - own.right < 3) {
      glued.push(el.textContent.trim() + '|' + (next.textContent || '').trim().slice(0, 20));
    }
  }
  const pictures = [...outputs.querySelectorAll('.nba-svg-picture img')].filter(visible).map(img => ({
    width: img.naturalWidth, complete: img.complete, src: img.getAttribute('src'), alt: img.alt,
  }));
  return {
    roots: roots.length,
    styles: outputs.querySelectorAll('.jp-OutputArea-output style').length,
    svgs: [...outputs.querySelectorAll('.jp-OutputArea-output svg')].length,
    dataAttributes: outputs.querySelectorAll(
      '.jp-OutputArea-output [data-status], .jp-OutputArea-output [data-metric]').length,
    liveSvgBoxes: [...outputs.querySelectorAll('.nba-svg-live')].filter(visible).length,
    glued, pictures,
    text: roots.map(r => r.innerText).join('\n'),
  };
}"""

_DIAGRAM_JS = r"""() => {
  const svg = document.querySelector('.jp-OutputArea .nba-stepper-live svg.nba-pipeline');
  const scale = svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
  const sizes = [...svg.querySelectorAll('text')].map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
  const references = [...document.querySelectorAll('svg [marker-end], svg [marker-start], svg [marker-mid]')]
    .map(e => e.getAttribute('marker-end') || e.getAttribute('marker-start') || e.getAttribute('marker-mid'));
  const outside = [];
  for (const one of document.querySelectorAll('svg')) {
    for (const e of one.querySelectorAll('*')) {
      for (const name of ['marker-end', 'marker-start', 'marker-mid', 'fill', 'stroke', 'href']) {
        const value = e.getAttribute(name) || '';
        const found = name === 'href' ? value.match(/^#(.+)$/) : value.match(/url\(#([^)]+)\)/);
        if (found && !one.querySelector('#' + CSS.escape(found[1]))) outside.push(found[0]);
      }
    }
  }
  const heads = [...svg.querySelectorAll('.nba-edge-group')].map(g => {
    const head = g.querySelector('.nba-arrowhead');
    const box = head && head.getBBox();
    return !!head && head.checkVisibility() && box.width > 4 && box.height > 4
      && getComputedStyle(head).fill !== 'none';
  });
  const output = svg.closest('.jp-OutputArea-output').getBoundingClientRect();
  const buttons = [...document.querySelectorAll('.jp-OutputArea .nba-stepper-live .nba-stepper-bar button')]
    .map(b => {
      const r = b.getBoundingClientRect();
      return [b.textContent.trim(), r.left >= output.left - 1 && r.right <= output.right + 1];
    });
  const scroller = svg.closest('.nba-diagram');
  return {
    width: [scroller.scrollWidth, scroller.clientWidth, output.width],
    smallest: Math.min(...sizes), scale, references, outside, heads, buttons,
    scrolls: scroller.scrollWidth > scroller.clientWidth, fits: svg.getBoundingClientRect().width <= output.width,
  };
}"""


def untrusted_copy(nb: LabNotebook, name: str) -> str:
    """A copy of ``nb``'s saved file that no server has signed (one metadata field differs)."""
    notebook = json.loads(nb.path.read_text())
    notebook["metadata"]["nbagent_test"] = "received from elsewhere"
    target = nb.lab.root / f"{name}.ipynb"
    target.write_text(json.dumps(notebook, indent=1))
    return name


def check_untrusted(page_state: dict[str, object], where: str) -> None:
    assert page_state["roots"] >= 9, where  # six runs, a stepper, a batch, a trace (and its timeline)
    # Really sanitized: no stylesheet, no inline SVG, no data-* attribute survived.
    assert (page_state["styles"], page_state["svgs"], page_state["dataAttributes"]) == (0, 0, 0), where
    assert page_state["liveSvgBoxes"] == 0, where  # the SVGs' texts do not run on as words
    assert page_state["glued"] == [], where
    text = str(page_state["text"])
    # The run stopped mid-stream: its call reads cancelled, never failed with a CancelledError.
    assert "cancelled after" in text and "CancelledError" not in text, where
    for glued in (r"STEP \d[A-Za-z]", r"tokens\d", r"prompt\d", r"completion\d", r"calls?\d", r"\bresult\d"):
        assert not re.search(glued, text), (where, glued)
    pictures = page_state["pictures"]
    # The diagrams of the two steppers (one walked three moves, one walked to its end and closed), the
    # trace's timeline and the timeline alone.
    assert len(pictures) == 4, (where, [p["alt"][:90] for p in pictures])
    assert sum("STEP" in p["alt"] for p in pictures) == 2, where  # type: ignore[index]
    for picture in pictures:  # type: ignore[attr-defined]
        assert picture["complete"] and picture["width"] > 300, where
    diagram = next(p for p in pictures if "STEP" in p["alt"])  # type: ignore[attr-defined]
    document = unquote(diagram["src"].split(",", 1)[1])
    assert document.count('class="nba-edge-group"') == EDGES and document.count('class="nba-arrowhead"') == EDGES


def test_a_notebook_opened_untrusted_reads_well_and_the_diagram_is_a_picture(
    run_notebook_in_lab: Callable[..., LabNotebook], notebook7: LabServer
) -> None:
    """Run once in JupyterLab and saved; its unsigned copy opened in JupyterLab (a new page), then in Notebook 7."""
    nb = run_notebook_in_lab(ALL_CELLS, name="untrusted_src")
    assert nb.error_outputs() == []
    nb.save()
    for frontend in ("lab", "notebook"):
        untrusted_copy(nb, f"untrusted_{frontend}")
    shutil.move(nb.lab.root / "untrusted_notebook.ipynb", notebook7.root / "untrusted_notebook.ipynb")
    nb.page.close()  # the copy opens in a new page: JupyterLab loaded straight onto an untrusted notebook
    for frontend in ("lab", "notebook"):
        opened = run_notebook_in_lab(None, name=f"untrusted_{frontend}", run_all=False, frontend=frontend)
        opened.page.wait_for_timeout(1500)
        opened.settle()
        for theme in opened.theme_order():
            opened.set_theme(theme)
            state = opened.page.evaluate(_UNTRUSTED_JS)
            check_untrusted(state, f"{frontend}, {theme}")
            contrast = opened.page.evaluate(
                CONTRAST_JS,
                [["views", ".jp-OutputArea .nba-view, .jp-OutputArea .nba-stepper, .jp-OutputArea .nba-trace"]],
            )["views"]
            assert contrast["views"] >= 8 and contrast["min"] >= 4.5, (frontend, theme, contrast["worst"])
            shade = theme.split()[-1].lower()
            for kind in ("nba-view", "nba-stepper", "nba-svg-picture", "nba-batch", "nba-trace"):  # what a reader sees
                opened.shot(f"{shade}-{kind}", f".jp-OutputArea-output .{kind} >> visible=true")
        opened.set_theme("JupyterLab Light")


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_the_live_diagram_has_its_own_arrowheads_and_keeps_its_text_size_at_800_px(
    run_notebook_in_lab: Callable[..., LabNotebook], frontend: str
) -> None:
    cells = [CELLS[0], "stepper = nbagent.step(adder('stepped'), 'Sum the pairs.')\nstepper", CELLS[-2]]
    nb = run_notebook_in_lab(cells, name=f"diagram_800_{frontend}", frontend=frontend)
    page = nb.page
    page.set_viewport_size({"width": 800, "height": 900})
    nb.settle()
    for theme in ("JupyterLab Light", "JupyterLab Dark"):
        nb.set_theme(theme)
        seen = page.evaluate(_DIAGRAM_JS)
        nb.shot(f"800-{frontend}-{theme.split()[-1].lower()}", ".jp-OutputArea .nba-stepper-live .nba-diagram")
        nb.shot(f"800-{frontend}-{theme.split()[-1].lower()}-bar", ".jp-OutputArea .nba-stepper-live .nba-stepper-bar")
        assert seen["references"] == [] and seen["outside"] == [], theme  # no marker, nothing from another SVG
        assert seen["heads"] == [True] * EDGES, theme
        assert seen["smallest"] >= 11, (theme, seen["smallest"])
        assert all(inside for _, inside in seen["buttons"]), seen["buttons"]
        assert seen["scrolls"] and not seen["fits"], seen["width"]  # wider than the output: it scrolls
    nb.set_theme("JupyterLab Light")


SHIPPED = [path for path in NOTEBOOKS if ".zh." not in path.name]  # the eight (02's translation aside)
WALKED = {"02_walkthrough_steps_1_5", "06_batch_runs"}  # the notebooks that show nbagent's stepper

_PICTURES_JS = r"""() => [...document.querySelectorAll('.jp-Notebook .nba-svg-picture img')]
  .filter(img => img.checkVisibility())
  .map(img => ({complete: img.complete, width: img.naturalWidth, src: img.getAttribute('src'), alt: img.alt}))"""


@pytest.fixture(scope="module")
def executed_notebooks(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The eight shipped notebooks run by nbclient (what ``nbconvert --execute`` does: widget state
    stored) and saved, once for both frontends: a file no server has signed, as one received."""
    folder = tmp_path_factory.mktemp("executed")
    kernels = write_kernelspec(folder / "spec", sys.executable)
    saved: dict[str, Path] = {}
    for path in SHIPPED:
        nb = nbformat.read(path, as_version=4)
        execute_notebook(
            nb,
            kernel_manager(KERNEL_NAME, [str(kernels)]),
            timeout=300,
            resources={"metadata": {"path": str(path.parent)}},
        )
        saved[path.stem] = folder / path.name
        nbformat.write(nb, saved[path.stem])
    return saved


def check_shipped(page_state: dict[str, object], pictures: list[dict[str, object]], where: str) -> None:
    """What every untrusted notebook must show: sanitized outputs that still read well."""
    assert page_state["roots"] >= 1, where  # each notebook shows nbagent views
    assert (page_state["styles"], page_state["svgs"], page_state["dataAttributes"]) == (0, 0, 0), where
    assert page_state["liveSvgBoxes"] == 0 and page_state["glued"] == [], (where, page_state["glued"])
    text = str(page_state["text"])
    assert "CancelledError" not in text, where
    for glued in (r"STEP \d[A-Za-z]", r"tokens\d", r"prompt\d", r"completion\d", r"calls?\d", r"\bresult\d"):
        assert not re.search(glued, text), (where, glued)
    for picture in pictures:  # a diagram or a timeline: a picture, drawn whole
        assert picture["complete"] and int(picture["width"]) > 300, (where, picture["alt"])  # type: ignore[call-overload]
        document = unquote(str(picture["src"]).split(",", 1)[1])
        edges = document.count('class="nba-edge-group"')
        assert document.count('class="nba-arrowhead"') == edges, where  # every arrow has its head


@pytest.mark.timeout(900)  # the first of the two also runs the eight notebooks (its fixture): over 300 s loaded
@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_each_shipped_notebook_opened_untrusted_reads_well(
    run_notebook_in_lab: Callable[..., LabNotebook],
    executed_notebooks: dict[str, Path],
    request: pytest.FixtureRequest,
    frontend: str,
) -> None:
    """Each of the eight notebooks, executed and saved, opened untrusted: its outputs are sanitized
    (no style, no SVG, no data-*), labels and values stay apart, each diagram is a picture with an
    arrowhead on every arrow, and every text of the views has a contrast of at least 4.5:1, light and dark."""
    server = request.getfixturevalue("lab" if frontend == "lab" else "notebook7")
    started = time.perf_counter()
    seen: dict[str, tuple[int, int, float]] = {}
    last = list(executed_notebooks)[-1]
    for stem, path in executed_notebooks.items():
        name = f"shipped_{frontend}_{stem}"
        shutil.copyfile(path, server.root / f"{name}.ipynb")
        opened = run_notebook_in_lab(None, name=name, run_all=False, frontend=frontend)  # open and settled
        worst = 21.0
        for theme in opened.theme_order():
            opened.set_theme(theme)
            where = f"{stem} in {frontend}, {theme}"
            state = opened.page.evaluate(_UNTRUSTED_JS)
            pictures = opened.page.evaluate(_PICTURES_JS)
            check_shipped(state, pictures, where)
            if stem in WALKED:  # the stepper's diagram: a picture of the whole loop, every arrow with its head
                diagram = next(p for p in pictures if "STEP" in p["alt"])
                document = unquote(diagram["src"].split(",", 1)[1])
                assert document.count('class="nba-arrowhead"') == EDGES, where
            contrast = opened.page.evaluate(
                CONTRAST_JS,
                [["views", ".jp-OutputArea .nba-view, .jp-OutputArea .nba-stepper, .jp-OutputArea .nba-trace"]],
            )["views"]
            assert contrast["min"] >= 4.5, (where, contrast["worst"])
            worst = min(worst, contrast["min"])
        seen[stem] = (int(state["roots"]), len(pictures), round(worst, 2))  # type: ignore[call-overload]
        if stem == last:
            opened.set_theme("JupyterLab Light")  # the server's setting, for the next test
        opened.close()
        server.shutdown_kernels()
    took = time.perf_counter() - started
    print(f"{frontend}: {len(seen)} notebooks untrusted in {took:.0f} s (views, pictures, lowest contrast): {seen}")
    assert len(seen) == len(SHIPPED) == 8
