"""The venv of the README's first command (``pip install -r binder/requirements.txt``: ``-e .[lab]``),
built once per content of the files pip reads and kept outside the clone."""

from __future__ import annotations

import fcntl
import hashlib
import json
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..servers.realservers import cache_root
from ._kernel import ROOT

REQUIREMENTS = ROOT / "binder" / "requirements.txt"
PYPROJECT = ROOT / "pyproject.toml"

BUILD_TIMEOUT_S = 900.0
"""How long a test waits for another process building the same venv."""


def binder_venv_key() -> str:
    """What the venv is made of: what pip reads (pyproject.toml's ``[project]`` and ``[build-system]``,
    the requirements), this checkout's path (the editable install points at it) and this interpreter.
    Equal keys, equal venvs (a change to pyproject's tool settings alone keeps the venv)."""
    pyproject = tomllib.loads(PYPROJECT.read_text())
    install = json.dumps({name: pyproject.get(name) for name in ("project", "build-system")}, sort_keys=True)
    digest = hashlib.sha256()
    for part in (install, REQUIREMENTS.read_text(), str(ROOT), sys.executable, sys.version):
        digest.update(hashlib.sha256(part.encode()).digest())
    return digest.hexdigest()[:16]


@contextmanager
def locked(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (another process building the same venv: wait, at most ``timeout``)."""
    with path.open("a") as handle:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"{path}: still locked after {timeout:.0f} s") from None
                time.sleep(1.0)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def build_binder_venv(venv: Path) -> None:
    """A new venv at ``venv`` where only ``pip install -r binder/requirements.txt`` (``-e .[lab]``) was run."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "-q",
            "--disable-pip-version-check",
            "-r",
            str(REQUIREMENTS),
        ],
        cwd=ROOT,  # as repo2docker does: "." in the requirements is the repository root
        check=True,
    )


def binder_venv_python() -> Path:
    """The Python of a venv where only ``pip install -r binder/requirements.txt`` (``-e .[lab]``) was run.

    Built once per :func:`binder_venv_key` and kept outside the clone (``$NBAGENT_CACHE/binder-venv``, as
    the llama-server and the receivers are): a warm run reuses the venv the same files built (pip's
    install of about 130 packages took most of this test's minutes). A venv counts once its ``complete``
    marker is written (a build killed half-way is removed and built again); this checkout's venvs of
    other keys go (those of other checkouts stay: their tests may be using them).
    """
    cache = cache_root() / "binder-venv"
    cache.mkdir(parents=True, exist_ok=True)
    key = binder_venv_key()
    venv = cache / key
    with locked(cache / ".lock", BUILD_TIMEOUT_S):
        if not (venv / "complete").exists():
            shutil.rmtree(venv, ignore_errors=True)
            build_binder_venv(venv)
            (venv / "complete").write_text(f"{ROOT}\n")
        for other in cache.iterdir():
            marker = other / "complete"
            if other.name != key and marker.exists() and marker.read_text().strip() == str(ROOT):
                shutil.rmtree(other, ignore_errors=True)
    return venv / "bin" / "python"
