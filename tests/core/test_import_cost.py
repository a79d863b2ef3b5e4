"""``import nbagent`` loads what a first run needs and leaves the rest for its first use (issue 45.1).

Each test starts a fresh interpreter: what ``import nbagent`` loads can only be seen before anything
else imported it. bench/bench_import.py measures what it costs.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytestmark = pytest.mark.subprocess

BENCH = Path(__file__).resolve().parents[2] / "bench"
LEFT_FOR_LATER = [
    "nbagent.batch",
    "nbagent.console",
    "nbagent.mcp",
    "nbagent.models.azure",
    "nbagent.models.cassette",
    "nbagent.render",
    "nbagent.stepper",
    "nbagent.trace.explore",
    "nbagent.trace.jsonl",
    "nbagent.trace.loaded",
    "nbagent.trace.otlp",
    "nbagent.trace.parquet",
    "nbagent.trace.replay",
    "nbagent.trace.timeline",
]


def first_run_script() -> str:
    """bench/bench_import.py's ``FIRST_RUN``: the script whose time is the first run's."""
    spec = importlib.util.spec_from_file_location("bench_import", BENCH / "bench_import.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return str(module.FIRST_RUN)


def fresh(code: str) -> object:
    """What ``code`` (run in a new interpreter, after ``import sys``) prints as JSON on its last line."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys\n" + textwrap.dedent(code)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_first_run_loads_nothing_import_nbagent_left_for_later() -> None:
    """bench/bench_import.py's first run (``import nbagent``, one tool run on the replay model) loads none of
    them, so none is loaded at import either."""
    loaded = fresh(
        first_run_script()
        + f"""
import json
print(json.dumps([name for name in {LEFT_FOR_LATER!r} if name in sys.modules]))
"""
    )
    assert loaded == []


def test_each_name_left_for_later_loads_on_first_use() -> None:
    found = fresh(
        """
        import json
        import nbagent, nbagent.models, nbagent.trace

        names = {
            nbagent: ["Batch", "run_many", "Console", "McpWorkbench", "Stepper", "LoadedTrace", "load_parquet",
                      "CassetteChatCompletionClient", "AzureOpenAIChatCompletionClient"],
            nbagent.models: ["CassetteChatCompletionClient", "AzureOpenAIChatCompletionClient"],
            nbagent.trace: ["OTLPRecorder", "Timeline", "TraceView", "load_jsonl", "otlp_json", "duckdb_source"],
        }
        listed = all(name in dir(package) for package, some in names.items() for name in some)
        every = {f"{package.__name__}.{name}": getattr(package, name).__module__ for package, some in names.items()
                 for name in some}
        try:
            nbagent.NoSuchThing
        except AttributeError as error:
            missing = str(error)
        print(json.dumps([listed, every, missing]))
        """
    )
    assert isinstance(found, list)
    listed, every, missing = found
    assert listed is True
    assert every["nbagent.Batch"] == "nbagent.batch"
    assert every["nbagent.McpWorkbench"] == "nbagent.mcp"
    assert every["nbagent.models.AzureOpenAIChatCompletionClient"] == "nbagent.models.azure"
    assert every["nbagent.trace.Timeline"] == "nbagent.trace.timeline"
    assert all(module.startswith("nbagent.") for module in every.values())
    assert missing == "module 'nbagent' has no attribute 'NoSuchThing'"


def test_a_config_names_a_component_whose_module_is_not_loaded_yet() -> None:
    """MCP, the cassette and Azure clients are not imported by ``import nbagent``; a config naming them
    (by nbagent's name or AutoGen's) loads them as before."""
    found = fresh(
        """
        import json
        import nbagent
        from nbagent.components import known_providers

        before = [name for name in ("nbagent.mcp", "nbagent.models.azure") if name in sys.modules]
        azure = nbagent.load_component(
            {
                "provider": "autogen_ext.models.openai.AzureOpenAIChatCompletionClient",
                "config": {"model": "gpt-4o", "azure_endpoint": "https://example.invalid", "api_version": "2024-06-01",
                           "api_key": "k"},
            }
        )
        providers = known_providers()
        print(json.dumps([type(azure).__name__, before, providers.get("autogen_ext.tools.mcp.McpWorkbench")]))
        """
    )
    assert found == ["AzureOpenAIChatCompletionClient", [], "nbagent.McpWorkbench"]


def test_the_batches_notebook_side_and_the_consoles_autogen_streams_are_hooked_in_when_they_load() -> None:
    found = fresh(
        """
        import json
        import nbagent
        from nbagent.autogen import seam

        before = "nbagent.batch" in sys.modules or "nbagent.console" in sys.modules
        import nbagent.batch as batch
        import nbagent.console as console

        print(json.dumps([before, sorted(batch._DISPLAYS), len(batch._KERNEL_CHECKS), len(batch._CELL_DISPLAYS),
                          seam.stream in console.FOREIGN_STREAM._converters]))
        """
    )
    assert found == [False, ["widget"], 1, 1, True]
