"""Run a function when a module is imported (now if it already is), without importing it; and a
package's names imported on first use (:func:`lazy_names`).

nbagent's agents join AutoGen's ``ChatAgent`` protocol (an ABC registration) the moment
``autogen_agentchat.base`` is imported, whatever the order of the user's imports and agents, and
importing nbagent still imports no AutoGen module. :func:`when_imported` puts a finder first on
``sys.meta_path`` that, for the watched names only, asks the other finders for the module's spec
and wraps its loader so that the callbacks run once the module has executed. A finder inserted in
front of it later is passed again at the next import that reaches it, and ``importlib.reload`` of this
module keeps the callbacks waiting and the finder.
"""

from __future__ import annotations

import importlib
import importlib.abc
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType
from typing import Any

Callback = Callable[[ModuleType], None]

_WAITING: dict[str, list[Callback]] = globals().get("_WAITING", {})
"""The callbacks per module name not imported yet (kept by ``importlib.reload`` of this module, as its finder is)."""


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
        _first()
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


def _first() -> None:
    """Put the finder back in front of a finder inserted before it (asked for any module, it moves). It
    asks the other finders, in their order, for a watched module's spec: the module loads as it would
    without it. Moved while the import system goes through ``sys.meta_path``, no finder is skipped:
    those after it keep their places."""
    meta_path = sys.meta_path
    if meta_path and meta_path[0] is not _FINDER and _FINDER in meta_path:
        meta_path.remove(_FINDER)
        meta_path.insert(0, _FINDER)


_FINDER: _Finder = globals().get("_FINDER") or _Finder()  # one finder, also after importlib.reload


def lazy_names(package: str, names: Mapping[str, str]) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """A package's module ``__getattr__`` and ``__dir__`` (PEP 562) for names imported on first use.

    ``names`` maps each name to the module that defines it, relative to ``package`` (``".mcp"``):
    ``import nbagent`` then loads only what a first run needs, and ``nbagent.McpWorkbench`` imports
    :mod:`nbagent.mcp` when first read (then it is the package's attribute like any other).
    """

    def __getattr__(name: str) -> object:
        module = names.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *names})

    return __getattr__, __dir__
