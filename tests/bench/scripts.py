"""Loading a script of ``bench/`` as a module, as it runs from there (its folder first on the path, so that
it imports its sibling scripts)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "bench"


def load_script(file: str, name: str) -> ModuleType:
    """``bench/<file>`` loaded as the module ``name`` (registered: dataclasses read their class's module)."""
    if str(BENCH) not in sys.path:
        sys.path.insert(0, str(BENCH))
    spec = importlib.util.spec_from_file_location(name, BENCH / file)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
