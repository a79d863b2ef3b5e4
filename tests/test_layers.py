"""The import contract: each layer imports only itself and the layers below it.

Read from grimp's graph of ``nbagent``, which holds every import statement: at module level, inside
functions (lazy imports) and under ``if TYPE_CHECKING:``. No exception is listed.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import grimp
import pytest

# Bottom to top. A module may import modules of its own layer and of the layers below.
LAYERS: list[set[str]] = [
    {
        "nbagent._ids",
        "nbagent._check",
        "nbagent._imports",
        "nbagent.messages",
        "nbagent.cancellation",
        "nbagent.redact",
        "nbagent.components",
        "nbagent.interrupts",
    },
    {"nbagent.context", "nbagent.memory", "nbagent.tools", "nbagent.mcp"},
    {"nbagent.models"},
    {"nbagent.records", "nbagent.language"},
    {"nbagent.render"},
    {"nbagent.trace"},
    {
        "nbagent.agent",
        "nbagent.agent_input",
        "nbagent.interventions",
        "nbagent.stepper",
        "nbagent.sync",
        "nbagent.autogen",
        "nbagent.batch",
        "nbagent.console",
    },
    {"nbagent.notebook"},
    {"nbagent.demo", "nbagent.entry", "nbagent.__main__", "nbagent"},
]


def layer_of(module: str) -> int:
    """The layer a module belongs to: that of its longest listed prefix (the package ``nbagent`` itself
    only by its exact name, so that a new module nobody placed has no layer and fails the test)."""
    best = -1, -1
    for index, layer in enumerate(LAYERS):
        for name in layer:
            inside = name != "nbagent" and module.startswith(name + ".")
            if (module == name or inside) and len(name) > best[1]:
                best = index, len(name)
    return best[0]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    return grimp.build_graph("nbagent", include_external_packages=False)


def test_every_module_has_a_layer(graph: grimp.ImportGraph) -> None:
    assert [module for module in sorted(graph.modules) if layer_of(module) < 0] == []


def test_no_import_goes_up_a_layer(graph: grimp.ImportGraph) -> None:
    upward = []
    for importer in sorted(graph.modules):
        for imported in sorted(graph.find_modules_directly_imported_by(importer)):
            if layer_of(imported) > layer_of(importer):
                lines = graph.get_import_details(importer=importer, imported=imported)
                where = ", ".join(f"line {detail['line_number']}" for detail in lines)
                upward.append(f"{importer} -> {imported} ({where})")
    assert upward == []


def test_no_import_cycles(graph: grimp.ImportGraph) -> None:
    """No two modules import each other, directly or through others (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.find_modules_directly_imported_by(module):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []


@pytest.mark.subprocess
def test_import_nbagent_loads_no_pandas_pyarrow_or_ipywidgets() -> None:
    """Nor IPython, nor markdown-it and nh3 (loaded when a Markdown answer is first rendered)."""
    code = textwrap.dedent(
        """
        import sys
        import nbagent
        heavy = {"pandas", "pyarrow", "ipywidgets", "numpy", "IPython", "markdown_it", "nh3"}
        heavy = sorted({m.split(".")[0] for m in sys.modules} & heavy)
        print(",".join(heavy))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""


def test_widgets_and_ipython_only_in_the_notebook_layer_and_above() -> None:
    """Views are the notebook layer's: no module below it imports ipywidgets or IPython, lazily or not."""
    graph = grimp.build_graph("nbagent", include_external_packages=True)
    notebook = layer_of("nbagent.notebook")
    below = sorted(
        f"{module} -> {package}"
        for package in ("ipywidgets", "IPython")
        if package in graph.modules
        for module in graph.find_modules_that_directly_import(package)
        if module.startswith("nbagent") and layer_of(module) < notebook
    )
    assert below == []
