"""nbagent._imports.when_imported: a callback when a module is imported, or at once if it already is."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from nbagent._imports import when_imported


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    # nbagent waits for autogen_agentchat.base itself (its agents join AutoGen's protocol): imported, that
    # wait is over, and the finder is on sys.meta_path only for this test's module.
    import autogen_agentchat.base  # noqa: F401

    (tmp_path / "hooked_pkg").mkdir()
    (tmp_path / "hooked_pkg" / "__init__.py").write_text("")
    (tmp_path / "hooked_pkg" / "base.py").write_text("VALUE = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "hooked_pkg.base"
    for name in ("hooked_pkg.base", "hooked_pkg"):
        sys.modules.pop(name, None)


def test_the_callback_runs_once_the_module_has_executed_and_the_finder_leaves(package: str) -> None:
    seen: list[ModuleType] = []
    when_imported(package, lambda module: seen.append(module))
    assert not seen and any(type(f).__module__ == "nbagent._imports" for f in sys.meta_path)
    import hooked_pkg.base  # type: ignore[import-not-found]

    assert seen == [hooked_pkg.base] and hooked_pkg.base.VALUE == 1
    assert not any(type(f).__module__ == "nbagent._imports" for f in sys.meta_path)
    assert hooked_pkg.base.__loader__.get_filename().endswith("base.py")  # the module's own loader answers
    when_imported(package, lambda module: seen.append(module))  # already imported: at once
    assert seen == [hooked_pkg.base, hooked_pkg.base]


def test_a_failing_callback_warns_and_the_import_goes_on(package: str) -> None:
    def fail(module: ModuleType) -> None:
        raise ValueError("no")

    when_imported(package, fail)
    with pytest.warns(RuntimeWarning, match=r"after importing hooked_pkg\.base: ValueError\('no'\)"):
        import hooked_pkg.base  # type: ignore[import-not-found]  # noqa: F401
    assert "hooked_pkg.base" in sys.modules
