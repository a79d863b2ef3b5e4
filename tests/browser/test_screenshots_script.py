"""The docs/ screenshots can be redone: ``python -m tests.browser.screenshots`` writes all eight
(four views, JupyterLab Light and Dark); the committed ones are there."""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.sync_api import BrowserContext

from .conftest import REPO, LabPages, LabServer
from .screenshots import NAMES, take

pytestmark = pytest.mark.browser

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_the_script_takes_the_eight_screenshots(
    tmp_path: Path, lab: LabServer, lab_context: BrowserContext, lab_pages: LabPages
) -> None:
    written = take(tmp_path, lab, lab_context, lab_pages)  # the session's (run alone, it starts its own)
    assert [path.name for path in written] == NAMES
    for path in written:
        assert path.read_bytes()[:8] == PNG_MAGIC and path.stat().st_size > 20_000, path.name
    for name in NAMES:
        assert (REPO / "docs" / name).read_bytes()[:8] == PNG_MAGIC, name
