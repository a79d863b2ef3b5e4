"""nbagent._imports.when_imported: a callback when a module is imported, or at once if it already is."""

from __future__ import annotations

import sys
from pathlib import Path
from types import ModuleType

import pytest

from nbagent._imports import when_imported


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    # nbagent's AutoGen seam waits for autogen_agentchat.base and .agents and for autogen_core itself (its
    # agents join AutoGen's protocols, its components AutoGen's loader), and ``import nbagent`` for the modules
    # it leaves for their first use (the batches' notebook side, the console's AutoGen streams, the
    # experiments' views), and nbagent's OpenAI client for the SDK's own chat methods (to tell a patched one):
    # imported,
    # those waits are over, and the finder is on sys.meta_path only for this test's module.
    import autogen_agentchat.agents  # noqa: F401
    import autogen_agentchat.base  # noqa: F401
    import autogen_core  # noqa: F401
    import openai.resources.chat.completions  # noqa: F401

    import nbagent.batch  # noqa: F401
    import nbagent.console  # noqa: F401
    import nbagent.experiment.compare  # noqa: F401

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


_FRESH = """
import importlib, importlib.machinery, importlib.util, sys
import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient

assert "autogen_agentchat.base" not in sys.modules
agent = AssistantAgent("a", ReplayChatCompletionClient(["hi"]))  # made before AutoGen is imported
{setup}
import autogen_agentchat.base
from autogen_agentchat.teams import RoundRobinGroupChat  # noqa: F401  (the next import, as a user's)
print(isinstance(agent, autogen_agentchat.base.ChatAgent), {check})
"""

_FRONT = """
class Front(importlib.abc.MetaPathFinder):  # another finder, in front, serving autogen_agentchat.base itself
    served = []
    def find_spec(self, fullname, path, target=None):
        if fullname != "autogen_agentchat.base":
            return None
        self.served.append(fullname)
        return importlib.machinery.PathFinder.find_spec(fullname, path, target)
import importlib.abc
front = Front()
sys.meta_path.insert(0, front)
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("setup", "check"),
    [
        ("import nbagent._imports; importlib.reload(nbagent._imports)", "True"),
        (_FRONT, "front.served == ['autogen_agentchat.base']"),
    ],
    ids=["reload", "finder_in_front"],
)
def test_agents_join_autogen_at_its_import_whatever_the_finders(setup: str, check: str) -> None:
    import os
    import subprocess
    import textwrap

    import nbagent

    code = textwrap.dedent(_FRESH).replace("{setup}", textwrap.dedent(setup)).replace("{check}", check)
    src = str(Path(nbagent.__file__).resolve().parents[1])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([src, os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True"]
