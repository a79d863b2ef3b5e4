"""Every view in JupyterLab Light and Dark, in JupyterLab and Notebook 7 (issue 16.3): the contrast
of every text element, computed from the DOM, is at least 4.5:1 (WCAG AA).

The views (``views16.VIEWS``): a finished run (its static copy), runs still streaming and waiting in
a tool (the live widget, Stop enabled), a run stopped mid-stream (its discarded text), one cancelled
from outside (interrupted), a failed one, a stepper mid-walk (panels, diagram, context table) and
its static copy, a trace's summary and timeline. The minimum per view and theme is printed and
kept as a ``record_property`` (``contrast``) of the test.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from .conftest import LabNotebook
from .measure import CONTRAST_JS
from .views16 import VIEW_GROUPS, VIEWS

pytestmark = pytest.mark.browser

AA = 4.5
THEMES = ["JupyterLab Light", "JupyterLab Dark"]


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_every_text_of_every_view_has_aa_contrast_in_light_and_dark(
    run_notebook_in_lab: Callable[..., LabNotebook], frontend: str, record_property: Callable[[str, object], None]
) -> None:
    nb = run_notebook_in_lab(VIEWS, name=f"contrast_{frontend}", frontend=frontend)
    page = nb.page
    page.set_viewport_size({"width": 1280, "height": 4000})
    nb.page.evaluate("() => new Promise(r => setTimeout(r, 500))")
    figures: dict[str, dict[str, float | None]] = {}
    failures = []
    for theme in THEMES:
        nb.set_theme(theme)
        assert page.evaluate("() => document.body.dataset.jpThemeLight") == str(theme.endswith("Light")).lower()
        seen = page.evaluate(CONTRAST_JS, VIEW_GROUPS)
        for name, found in seen.items():
            figures.setdefault(name, {})[theme] = found["min"]
            print(
                f"{frontend} · {theme} · {name}: {found['views']} views, {found['texts']} texts, "
                f"min {found['min']}:1 (disabled buttons left out: {found['disabled']})"
            )
            assert found["views"] >= 1 and found["texts"] >= 3, (theme, name, found)
            if found["min"] < AA:
                failures.append((theme, name, found["worst"]))
        nb.shot(f"{theme.split()[-1].lower()}")
    record_property("contrast", figures)
    nb.set_theme("JupyterLab Light")
    assert failures == []
    # The running views are still live: stop them, so the kernel is left with no task.
    nb.execute("streaming.stop()\nwaiting.stop()\nprint(await streaming.wait(), await waiting.wait())")
    assert nb.console_errors == []
    assert nb.error_outputs() == []
