"""The docs/ screenshots can be redone: ``python -m tests.browser.screenshots`` writes all eight
(four views, JupyterLab Light and Dark); the committed ones are there."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import Browser

from .conftest import REPO, LabServer
from .screenshots import take

pytestmark = pytest.mark.browser

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
VIEWS = ("live_view", "stepper", "walkthrough", "explorer")
NAMES = [f"{view}{theme}.png" for theme in ("", "_dark") for view in VIEWS]


def test_the_script_takes_the_eight_screenshots(tmp_path: Path, lab: LabServer, browser: Browser) -> None:
    written = take(tmp_path, lab, browser)  # the session's server and Chromium (run alone, it starts its own)
    assert [path.name for path in written] == NAMES
    for path in written:
        assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 20_000, path.name
    for name in NAMES:
        assert (REPO / "docs" / name).read_bytes()[:8] == PNG_MAGIC, name
