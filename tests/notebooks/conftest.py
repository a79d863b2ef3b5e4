"""Fixtures for running the notebooks: a kernelspec of this interpreter, made once per session."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._kernel import this_python, write_kernelspec


@pytest.fixture(scope="session")
def kernels_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A kernels folder whose ``nbagent-test`` kernel runs this Python, offline (no API key)."""
    return write_kernelspec(tmp_path_factory.mktemp("kernelspec"), this_python())
