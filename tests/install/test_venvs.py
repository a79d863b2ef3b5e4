"""The install venvs' cache (``venvs.py``): one set of packages for every checkout of the same files, a
small venv per checkout, and only venvs no checkout will use again removed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from . import venvs
from .venvs import IDLE_S, INSTALLS, ROOT, install_key, prune, venv_key, venv_python


def _venv(cache: Path, name: str, checkout: Path, packages: str = "", idle_s: float = 0.0) -> None:
    venv = cache / name
    venv.mkdir(parents=True)
    marker = venv / "complete"
    marker.write_text(f"{checkout}\n{packages}\n" if packages else f"{checkout}\n")
    used = time.time() - idle_s
    os.utime(marker, (used, used))


def test_the_packages_key_ignores_the_checkout_and_the_venv_key_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    packages, own = install_key(INSTALLS["lab"]), venv_key(INSTALLS["lab"])
    assert install_key(INSTALLS["core"]) != packages  # each install its own packages
    monkeypatch.setattr(venvs, "ROOT", Path("/elsewhere/a-fresh-clone"))
    assert install_key(INSTALLS["lab"]) == packages  # a fresh clone of the same files reuses them
    assert venv_key(INSTALLS["lab"]) != own  # but gets a venv of its own, its editable install pointing at it


def test_an_unknown_venv_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="name must be one of"):
        venv_python("everything")


def test_prune_removes_only_what_no_checkout_will_use(tmp_path: Path) -> None:
    cache, other, gone = tmp_path / "cache", tmp_path / "other-checkout", tmp_path / "gone"
    other.mkdir()
    day = IDLE_S + 60
    _venv(cache, "lab-mine", ROOT, "deps-new")
    _venv(cache, "deps-new", ROOT, "deps-new")
    _venv(cache, "lab-my-old-key", ROOT, "deps-old")  # this checkout, built for other files
    _venv(cache, "core-mine", ROOT, "deps-core")  # this checkout, another install: kept
    _venv(cache, "deps-core", ROOT, "deps-core", idle_s=day)
    _venv(cache, "lab-other", other, "deps-other", idle_s=day)  # a checkout that is there
    _venv(cache, "deps-other", other, "deps-other", idle_s=day)
    _venv(cache, "lab-gone-recent", gone, "deps-recent")  # another mount of the cache may use it
    _venv(cache, "deps-recent", gone, "deps-recent", idle_s=day)
    _venv(cache, "lab-gone-idle", gone, "deps-old", idle_s=day)
    _venv(cache, "deps-old", gone, "deps-old", idle_s=day)
    _venv(cache, "deps-unused-recent", gone, "deps-unused-recent")
    (cache / "half-built").mkdir()  # another process's build under way: no marker yet
    before = {path.name for path in cache.iterdir()}
    prune(cache, keep={"lab-mine", "deps-new"}, mine="lab-")
    assert {path.name for path in cache.iterdir()} == before - {"lab-my-old-key", "lab-gone-idle", "deps-old"}
