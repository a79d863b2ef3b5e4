"""Fixtures for running the notebooks: a kernelspec of this interpreter, and one of the README's first
command's venv, made once per session."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ..install.venvs import venv_python
from ._kernel import this_python, write_kernelspec


@pytest.fixture(scope="session")
def kernels_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernels folder whose ``nbagent-test`` kernel runs this Python, offline (no API key)."""
    return write_kernelspec(tmp_path_factory.mktemp("kernelspec"), this_python())


@pytest.fixture(scope="session")
def binder_python() -> Path:
    """The Python of a venv holding what ``pip install -r binder/requirements.txt`` (``-e .[lab]``) installs,
    and this checkout (``tests/install/venvs.py``: the packages installed once for every checkout).
    ``NBAGENT_SKIP_BINDER=1`` skips its tests locally; CI (``CI=true``) always builds it."""
    if os.environ.get("NBAGENT_SKIP_BINDER") == "1" and os.environ.get("CI") != "true":
        pytest.skip("NBAGENT_SKIP_BINDER=1: the README's lab venv is not built locally")
    return venv_python("lab")


@pytest.fixture(scope="session")
def binder_kernels(binder_python: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernels folder whose ``nbagent-test`` kernel runs the lab venv's Python, offline."""
    return write_kernelspec(tmp_path_factory.mktemp("binder-kernelspec"), str(binder_python))
