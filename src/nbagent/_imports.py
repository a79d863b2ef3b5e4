"""Run a function when a module is imported (now if it already is), without importing it.

nbagent's agents join AutoGen's ``ChatAgent`` protocol (an ABC registration) the moment
``autogen_agentchat.base`` is imported, whatever the order of the user's imports and agents, and
importing nbagent still imports no AutoGen module. :func:`when_imported` puts a finder first on
``sys.meta_path`` that, for the watched names only, asks the other finders for the module's spec
and wraps its loader so that the callbacks run once the module has executed.
"""

from __future__ import annotations

import importlib.abc
import sys
import warnings
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

Callback = Callable[[ModuleType], None]

_WAITING: dict[str, list[Callback]] = {}


def when_imported(name: str, callback: Callback) -> None:
    """Call ``callback(module)`` once module ``name`` is imported: at once if it already is."""
    module = sys.modules.get(name)
    if module is not None:
        callback(module)
        return
    _WAITING.setdefault(name, []).append(callback)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def _fire(module: ModuleType) -> None:
    for callback in _WAITING.pop(module.__name__, []):
        try:
            callback(module)
        except Exception as error:  # the user's import goes on whatever a callback does
            warnings.warn(f"nbagent: after importing {module.__name__}: {error!r}", RuntimeWarning, stacklevel=2)
    if not _WAITING and _FINDER in sys.meta_path:
        sys.meta_path.remove(_FINDER)


class _Loader(importlib.abc.Loader):
    """The module's own loader, then the callbacks (every other attribute is the loader's)."""

    def __init__(self, loader: Any) -> None:
        self._loader = loader

    def create_module(self, spec: ModuleSpec) -> ModuleType | None:
        return self._loader.create_module(spec)  # type: ignore[no-any-return]

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        _fire(module)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: wraps the loader the other finders give for a watched name."""

    def __init__(self) -> None:
        self._finding: set[str] = set()

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in _WAITING or fullname in self._finding:
            return None
        self._finding.add(fullname)
        try:
            spec = _spec_from_others(fullname, path, target)
        finally:
            self._finding.discard(fullname)
        if spec is not None and spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _Loader(spec.loader)
        return spec


def _spec_from_others(fullname: str, path: Sequence[str] | None, target: ModuleType | None) -> ModuleSpec | None:
    for finder in list(sys.meta_path):
        find = getattr(finder, "find_spec", None)
        if finder is _FINDER or find is None:
            continue
        spec: ModuleSpec | None = find(fullname, path, target)
        if spec is not None:
            return spec
    return None


_FINDER = _Finder()
