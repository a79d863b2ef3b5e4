"""Venvs of one install each (``pip install -e .``, ``-e .[autogen]``, ``-r binder/requirements.txt``), kept
outside the clone and shared by every checkout of the same files.

pip takes minutes to install a venv's packages on the 2-core machine (each fresh clone of CI did it again:
the lab venv took 2 to 14 minutes of the suite). Here the packages an install brings are installed once per
:func:`install_key` (``$NBAGENT_CACHE/venvs/deps-<key>``: the install run, then nbagent itself uninstalled);
each checkout gets a small venv of its own (:func:`venv_key`) that sees those packages (a ``.pth`` file) and
holds the checkout, installed editable by pip with no dependency. Its Python imports nbagent from the
checkout and exactly the packages the install brought. A venv counts once its ``complete`` marker is written
(a build killed half-way is removed and built again); each use touches it, and :func:`prune` removes only
venvs no checkout will use again.

    python -m tests.install.venvs core|autogen|lab    # prints the venv's python, building what is missing
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = ROOT / "pyproject.toml"
REQUIREMENTS = ROOT / "binder" / "requirements.txt"
INSTALLS = {
    "core": ("-e", "."),
    "autogen": ("-e", ".[autogen]"),
    "lab": ("-r", str(REQUIREMENTS.relative_to(ROOT))),  # mybinder.org's, the README's first command's
}
"""What each venv installs (pip's arguments, run in the checkout's root as repo2docker does)."""
BUILD_TIMEOUT_S = 900.0
"""How long a process waits for another one building a venv."""
IDLE_S = 86_400.0
"""A venv of a checkout that is gone, or a package venv no venv names, is removed after a day unused."""


def cache_dir() -> Path:
    """``$NBAGENT_CACHE/venvs`` (``~/.cache/nbagent/venvs``)."""
    return Path(os.environ.get("NBAGENT_CACHE") or Path.home() / ".cache" / "nbagent") / "venvs"


def _digest(*parts: str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(hashlib.sha256(part.encode()).digest())
    return digest.hexdigest()[:16]


def install_key(install: Sequence[str]) -> str:
    """What pip reads for ``install``: pyproject.toml's ``[project]`` and ``[build-system]``, the
    requirements file, the arguments, and the base interpreter (not a venv's path, not the checkout's)."""
    pyproject = tomllib.loads(PYPROJECT.read_text())
    project = json.dumps({name: pyproject.get(name) for name in ("project", "build-system")}, sort_keys=True)
    return _digest(project, REQUIREMENTS.read_text(), json.dumps(list(install)), sys.base_prefix, sys.version)


def venv_key(install: Sequence[str]) -> str:
    """The key of this checkout's own venv: :func:`install_key` and the checkout's path (the editable
    install points at it)."""
    return _digest(install_key(install), str(ROOT))


@contextmanager
def locked(path: Path, timeout: float) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (another process building a venv: wait, at most ``timeout``)."""
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


def _site_packages(venv: Path) -> Path:
    (found,) = (venv / "lib").glob("python*/site-packages")
    return found


def build_packages(venv: Path, install: Sequence[str]) -> None:
    """A new venv at ``venv`` where only ``pip install <install>`` ran, then nbagent uninstalled: the
    packages the install brings, for every checkout."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "--disable-pip-version-check"]
    subprocess.run([*pip, "install", "-q", *install], cwd=ROOT, check=True)
    subprocess.run([*pip, "uninstall", "-q", "-y", "nbagent-loop"], check=True)


def build_own(venv: Path, packages: Path) -> None:
    """A new venv at ``venv`` that sees the packages of ``packages`` (:func:`build_packages`) and holds this
    checkout, installed editable by pip (``-e .``, no dependency: ``packages`` has them)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # A .pth line starting with "import" runs; addsitedir also reads the .pth files there. The name sorts
    # after pip's "__editable__" one, so this checkout's sources come first on sys.path.
    shared = _site_packages(packages)
    (_site_packages(venv) / "_nbagent_packages.pth").write_text(f"import site; site.addsitedir({str(shared)!r})\n")
    python = str(venv / "bin" / "python")
    pip = [str(packages / "bin" / "python"), "-m", "pip", "--disable-pip-version-check", "--python", python]
    subprocess.run([*pip, "install", "-q", "--no-deps", "-e", str(ROOT)], check=True)


def venv_python(name: str) -> Path:
    """The Python of this checkout's venv ``name`` (a key of :data:`INSTALLS`), built if missing."""
    if name not in INSTALLS:
        raise ValueError(f"name must be one of {sorted(INSTALLS)}, not {name!r}")
    install = INSTALLS[name]
    cache = cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    packages = cache / f"deps-{install_key(install)}"
    venv = cache / f"{name}-{venv_key(install)}"
    with locked(cache / ".lock", BUILD_TIMEOUT_S):
        for path, build in (
            (packages, lambda: build_packages(packages, install)),
            (venv, lambda: build_own(venv, packages)),
        ):
            marker = path / "complete"
            if not marker.exists():
                shutil.rmtree(path, ignore_errors=True)
                build()
                marker.write_text(f"{ROOT}\n{packages.name}\n")
            marker.touch()
        prune(cache, keep={venv.name, packages.name}, mine=f"{name}-")
    return venv / "bin" / "python"


def prune(cache: Path, keep: set[str], mine: str) -> None:
    """Remove the venvs no checkout will use again (called with the cache's lock held): this checkout's
    others of the same kind (name starting with ``mine``: built for other files); those of checkouts gone
    and a day unused (the cache may be shared with another mount of the same paths); then the package
    venvs no remaining venv names, a day unused."""
    idle_since = time.time() - IDLE_S
    used = set(keep)
    for other in sorted(cache.iterdir()):
        marker = other / "complete"
        if other.name in keep or other.name.startswith("deps-") or not marker.exists():
            continue
        checkout, *named = marker.read_text().split("\n")
        mine_of_old = checkout == str(ROOT) and other.name.startswith(mine)
        if mine_of_old or (not Path(checkout).is_dir() and marker.stat().st_mtime < idle_since):
            shutil.rmtree(other, ignore_errors=True)
        else:
            used.update(name for name in named if name)
    for other in cache.glob("deps-*"):
        marker = other / "complete"
        if other.name not in used and marker.exists() and marker.stat().st_mtime < idle_since:
            shutil.rmtree(other, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in INSTALLS:
        print(f"usage: python -m tests.install.venvs {'|'.join(INSTALLS)}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    python = venv_python(argv[0])
    print(
        f"venv {argv[0]} ({' '.join(INSTALLS[argv[0]])}) ready in {time.perf_counter() - started:.0f} s",
        file=sys.stderr,
    )
    print(python)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
