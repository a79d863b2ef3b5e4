"""For a type checker, a misspelt top-level name is an error (``__getattr__`` is hidden from it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.timeout(300)
def test_a_misspelt_name_of_nbagent_is_no_attribute_for_mypy(tmp_path: Path) -> None:
    snippet = tmp_path / "snippet.py"
    snippet.write_text("import nbagent\n\nnbagent.shwo\nreveal_type(nbagent.show)\n", encoding="utf-8")
    out = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-error-summary", "--cache-dir", str(tmp_path), str(snippet)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = out.stdout.splitlines()
    assert any(':3: error: Module has no attribute "shwo"' in line for line in lines), out.stdout
    assert any(":4: note: Revealed type" in line and "AgentRunView" in line for line in lines), out.stdout
