"""The README's first command's environment (``pip install -e ".[lab]"``) runs every notebook, offline.

``binder/requirements.txt`` is ``-e .[lab]``, so this is also what mybinder.org builds. The venv is
built once per session (pip's cache makes later builds fast). Set ``NBAGENT_SKIP_BINDER=1`` to skip
it locally; CI (``CI=true``) always runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ._kernel import NOTEBOOKS, ROOT, error_outputs, execute, leftover_tasks, write_kernelspec

REQUIREMENTS = ROOT / "binder" / "requirements.txt"

pytestmark = [
    pytest.mark.kernel,
    pytest.mark.skipif(
        os.environ.get("NBAGENT_SKIP_BINDER") == "1" and os.environ.get("CI") != "true",
        reason="NBAGENT_SKIP_BINDER=1: the binder venv test is skipped locally",
    ),
    pytest.mark.timeout(900),
]


@pytest.fixture(scope="session")
def binder_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The Python of a new venv where only ``pip install -r binder/requirements.txt`` (``-e .[lab]``) was run."""
    venv = tmp_path_factory.mktemp("binder") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    python = venv / "bin" / "python"
    subprocess.run(
        [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r", str(REQUIREMENTS)],
        cwd=ROOT,  # as repo2docker does: "." in the requirements is the repository root
        check=True,
    )
    return python


@pytest.fixture(scope="session")
def binder_kernels(binder_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_kernelspec(tmp_path_factory.mktemp("binder-kernelspec"), str(binder_python))


def test_lab_venv_is_isolated(binder_python: Path) -> None:
    """The venv sees nbagent from this checkout, has what the notebooks import, and none of the test tools."""
    probe = (
        "import sys, nbagent, duckdb, pyarrow, ipykernel, jupyterlab; "
        "print(nbagent.__file__); print(sys.prefix != sys.base_prefix); "
        "import importlib.util as u; print(u.find_spec('pytest') is None)"
    )
    lines = subprocess.run([str(binder_python), "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert lines == [str(ROOT / "src" / "nbagent" / "__init__.py"), "True", "True"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_in_the_lab_venv(path: Path, binder_kernels: Path) -> None:
    nb = execute(path, binder_kernels)
    assert error_outputs(nb) == []
    assert leftover_tasks(nb) == "leftover tasks: []"
