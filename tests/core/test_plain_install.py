"""The plain install (no pyarrow) runs the core steps (issue 42.2): ``tests/install/smoke_core.py`` in a
process where pyarrow cannot be imported (``.ci/run`` runs the same script in real venvs with no extra
and with only ``[autogen]``)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

SMOKE = Path(__file__).resolve().parents[1] / "install" / "smoke_core.py"
NO_PYARROW = (
    "import runpy, sys; sys.modules['pyarrow'] = None; sys.argv = ['smoke_core', '--expect-no-pyarrow']; "
    f"runpy.run_path({str(SMOKE)!r}, run_name='__main__')"
)


@pytest.mark.subprocess
def test_every_core_step_runs_without_pyarrow() -> None:
    done = subprocess.run([sys.executable, "-c", NO_PYARROW], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    steps = [line for line in done.stdout.splitlines() if line.startswith("smoke: ")]
    assert len(steps) == 14 and all(line.startswith("smoke: ok ") for line in steps), done.stdout
