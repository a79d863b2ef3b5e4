"""For a type checker, a misspelt top-level name is an error (``__getattr__`` is hidden from it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


def mypy_cache() -> Path:
    """mypy's incremental cache for this test, kept outside the clone (``$NBAGENT_CACHE/mypy``): a cold
    ``--strict`` check of nbagent and its dependencies takes about a minute on 2 cores, a warm one 2 s.
    mypy checks each cached module against its source (and its own version and options) before using it,
    and the snippet, in a new folder each time, is always checked again."""
    root = Path(os.environ.get("NBAGENT_CACHE") or Path.home() / ".cache" / "nbagent")
    return root / "mypy"


@pytest.mark.timeout(300)
@pytest.mark.subprocess
def test_a_misspelt_name_of_nbagent_is_no_attribute_for_mypy(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text("import nbagent\n\nnbagent.shwo\nreveal_type(nbagent.show)\n", encoding="utf-8")
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(mypy_cache()),
            str(snippet),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = out.stdout.splitlines()
    assert any(':3: error: Module has no attribute "shwo"' in line for line in lines), out.stdout
    assert any(":4: note: Revealed type" in line and "AgentRunView" in line for line in lines), out.stdout
