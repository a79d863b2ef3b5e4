"""AutoGen's loader knows nbagent's providers whatever is imported first (issue 40.5).

``nbagent.autogen.loaders`` imports ``autogen_core``; when it is the first to (AutoGen's test shim, a
user's ``from nbagent.autogen.loaders import SharedComponentModel``), the seam's hook at AutoGen's import
ran while the module was half made, failed (a ``RuntimeWarning``), and AutoGen's loader never learned
nbagent's providers. A fresh interpreter checks each order (and that nbagent's memories, contexts, tools
and workbenches are AutoGen's ``Memory``... whichever is imported first).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

CHECK = """
import warnings
warnings.simplefilter("error")
{first}
import autogen_core._component_config as config
from autogen_core import ComponentLoader
import nbagent
dump = nbagent.ListMemory(name="m").dump_component().model_dump()
loaded = ComponentLoader.load_component(dump, object)  # built by AutoGen's loader
from autogen_core.memory import Memory
from autogen_core.model_context import ChatCompletionContext
from autogen_core.tools import BaseTool, Workbench
print("nbagent.ListMemory" in config.WELL_KNOWN_PROVIDERS, type(loaded).__module__)
print(type(Memory.load_component(dump)).__module__)  # AutoGen's loader checks its Memory: nbagent's is one
print(issubclass(nbagent.BufferedChatCompletionContext, ChatCompletionContext),
      issubclass(nbagent.FunctionTool, BaseTool), issubclass(nbagent.StaticWorkbench, Workbench))
"""


@pytest.mark.subprocess
@pytest.mark.parametrize(
    "first",
    [
        "from nbagent.autogen.loaders import SharedComponentModel",
        "import nbagent",
        "import autogen_core",
    ],
)
def test_autogens_loader_knows_nbagents_providers_whatever_is_imported_first(first: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", CHECK.format(first=first)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "nbagent.memory", "nbagent.memory", "True", "True", "True"]
