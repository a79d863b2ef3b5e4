"""The import contract: each layer imports only itself and the layers below it.

Read from grimp's graph of ``nbagent``, which holds every import statement: at module level, inside
functions (lazy imports) and under ``if TYPE_CHECKING:``. No exception is listed.
"""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import grimp
import pytest

# Bottom to top. A module may import modules of its own layer and of the layers below.
LAYERS: list[set[str]] = [
    {
        "nbagent._ids",
        "nbagent._check",
        "nbagent._imports",
        "nbagent.hooks",
        "nbagent.messages",
        "nbagent.cancellation",
        "nbagent.redact",
        "nbagent.components",
        "nbagent.interrupts",
        "nbagent.printable",
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
        "nbagent.predict",
        "nbagent.exercises",
        "nbagent.whatif",
        "nbagent.sync",
        "nbagent.autogen",
        "nbagent.batch",
        "nbagent.spark",
        "nbagent.console",
        "nbagent.experiment",
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


def package_of(module: str) -> str:
    """The package a module is part of: ``nbagent.trace`` for ``nbagent.trace.live``, ``nbagent.agent``
    for itself (a top-level module is its own package)."""
    return ".".join(module.split(".")[:2])


def strongly_connected(nodes: list[str], edges: dict[str, set[str]]) -> list[list[str]]:
    """The groups of nodes that reach each other (Tarjan), each of more than one node."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(edges.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for node in sorted(nodes):
        if node not in index:
            visit(node)
    return groups


def test_no_import_cycles(graph: grimp.ImportGraph) -> None:
    """No two modules import each other, directly or through others (Tarjan's strongly connected components)."""
    edges = {module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules}
    assert strongly_connected(sorted(graph.modules), edges) == []


def test_no_import_cycles_between_packages(graph: grimp.ImportGraph) -> None:
    """No two packages import each other (``nbagent.agent`` -> ``nbagent.autogen.x`` and
    ``nbagent.autogen.y`` -> ``nbagent.agent`` is a cycle even with no module cycle). ``nbagent``
    itself (the top-level names) imports everything and is imported by nothing."""
    edges: dict[str, set[str]] = {}
    for importer in graph.modules:
        for imported in graph.find_modules_directly_imported_by(importer):
            source, target = package_of(importer), package_of(imported)
            if source != target:
                edges.setdefault(source, set()).add(target)
    assert strongly_connected(sorted({package_of(m) for m in graph.modules}), edges) == []


SEAM = "nbagent.autogen"
"""Everything that knows AutoGen. Above it only the application layer (``nbagent``, ``entry``) and the
AutoGen stepper's widget (``notebook.autogen_stepper``, which the seam is given) name it."""
ABOVE_SEAM = {"nbagent", "nbagent.entry", "nbagent.notebook.autogen_stepper"}


def core_modules(graph: grimp.ImportGraph) -> list[str]:
    return sorted(m for m in graph.modules if not m.startswith(SEAM) and m not in ABOVE_SEAM)


def test_the_core_imports_nothing_of_the_autogen_seam(graph: grimp.ImportGraph) -> None:
    """The core (agent, context, tools, models, trace, notebook...) reaches AutoGen only through the
    hooks the seam registers into (``nbagent.hooks``), never by importing it, lazily or not."""
    found = sorted(
        f"{module} -> {imported}"
        for module in core_modules(graph)
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith(SEAM)
    )
    assert found == []


def _autogen_names(tree: ast.AST) -> list[tuple[int, str]]:
    """String constants naming AutoGen's modules, except a docstring and a ``component_aliases``
    entry (the provider names a config may give: data, not a test of an object)."""
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            skipped.add(id(body[0].value))
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "component_aliases" for t in targets):
                skipped.update(id(sub) for sub in ast.walk(node))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value.startswith("autogen")
        and id(node) not in skipped
    ]


def test_the_core_tests_no_autogen_module_name(graph: grimp.ImportGraph, trees: dict[Path, ast.Module]) -> None:
    """No ``type(x).__module__.startswith("autogen")``, no ``sys.modules.get("autogen_core...")`` in the
    core: which objects are AutoGen's is the seam's to say."""
    found = []
    for module in core_modules(graph):
        parts = module.split(".")[1:]
        path = Path(*parts).with_suffix(".py")
        tree = trees.get(path) or trees[Path(*parts, "__init__.py")]
        found += [f"{module}:{line} {text!r}" for line, text in _autogen_names(tree)]
    assert found == []


NAME_COMPARISONS = {
    "nbagent.messages": "MessageFactory knows a registered type by its class name, as AutoGen's does",
    "nbagent.mcp": "anyio's errors of a closed stream, whose classes the MCP SDK does not export",
}
"""Core modules allowed to compare a class's name, with why: not to tell another library's class for
nbagent's (which only the seam may do, through a hook)."""


def _name_comparisons(tree: ast.AST) -> list[tuple[int, str]]:
    """Comparisons (``==``, ``in``...) with a ``.__name__`` or ``.__qualname__`` on either side."""
    return [
        (node.lineno, ast.unparse(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Compare)
        and any(
            isinstance(sub, ast.Attribute) and sub.attr in ("__name__", "__qualname__")
            for side in (node.left, *node.comparators)
            for sub in ast.walk(side)
        )
    ]


def test_the_core_matches_no_class_by_its_name(graph: grimp.ImportGraph, trees: dict[Path, ast.Module]) -> None:
    """No ``kind.__name__ == type(value).__name__`` in the core: taking AutoGen's ``HandoffMessage`` for
    nbagent's because their names agree is the seam's knowledge (``agent_input.MESSAGE_TYPE_IN``)."""
    found = []
    for module in core_modules(graph):
        if module in NAME_COMPARISONS:
            continue
        parts = module.split(".")[1:]
        path = Path(*parts).with_suffix(".py")
        tree = trees.get(path) or trees[Path(*parts, "__init__.py")]
        found += [f"{module}:{line} {text}" for line, text in _name_comparisons(tree)]
    assert found == []


def test_the_name_check_sees_a_comparison_of_names() -> None:
    """The check above finds the comparison it forbids (it is not vacuous)."""
    tree = ast.parse("def f(kinds, value):\n    return any(k.__name__ == type(value).__qualname__ for k in kinds)\n")
    assert [line for line, _ in _name_comparisons(tree)] == [2]


@pytest.mark.subprocess
def test_import_nbagent_loads_no_pandas_pyarrow_or_ipywidgets() -> None:
    """Nor IPython, nor markdown-it and nh3 (loaded when a Markdown answer is first rendered)."""
    code = textwrap.dedent(
        """
        import sys
        import nbagent
        import nbagent.spark  # pyspark only when run_batch is called
        heavy = {"pandas", "pyarrow", "ipywidgets", "numpy", "IPython", "markdown_it", "nh3", "pyspark"}
        heavy = sorted({m.split(".")[0] for m in sys.modules} & heavy)
        print(",".join(heavy))
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60)
    assert out.stdout.strip() == ""


def test_pyspark_only_in_nbagent_spark() -> None:
    graph = grimp.build_graph("nbagent", include_external_packages=True)
    importers = sorted(graph.find_modules_that_directly_import("pyspark"))
    assert importers and all(module == "nbagent.spark" or module.startswith("nbagent.spark.") for module in importers)


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


def test_parquet_files_are_read_and_written_in_the_trace_layer_alone(
    nodes_outside_trace: tuple[tuple[str, ast.AST], ...],
) -> None:
    """``trace/`` is the only owner of run data at rest (issue 42.1): no module outside it imports
    ``pyarrow.parquet`` or ``pyarrow.dataset`` (which reads Parquet too; grimp sees external packages by their
    top-level name only: the sources are read)."""
    found = []
    for where, node in nodes_outside_trace:
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module is not None:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        readers = ("pyarrow.parquet", "pyarrow.dataset")
        if any(name == reader or name.startswith(f"{reader}.") for name in names for reader in readers):
            found.append(f"{where}:{node.lineno}")
    assert found == []


@pytest.fixture(scope="module")
def trees() -> dict[Path, ast.Module]:
    """Every module of nbagent parsed, by its path in the package: parsed once for the tests that read them,
    and let go after them (600,000 objects every later full collection of the run would scan again)."""
    import nbagent

    root = Path(nbagent.__file__).parent
    return {path.relative_to(root): ast.parse(path.read_text(encoding="utf-8")) for path in sorted(root.rglob("*.py"))}


@pytest.fixture(scope="module")
def nodes_outside_trace(trees: dict[Path, ast.Module]) -> tuple[tuple[str, ast.AST], ...]:
    """Every AST node of every module of nbagent outside ``trace/``, with its module's path (walked once)."""
    return tuple(
        (str(path), node) for path, tree in trees.items() if path.parts[0] != "trace" for node in ast.walk(tree)
    )


DATASET_FILES = ("nbagent.trace.parquet", "nbagent.trace.lazy")
"""The modules that know a dataset folder's files: outside trace/, a dataset is reached through
``trace.dataset`` (Dataset, DatasetFollower), ``load_parquet`` and the traces' own methods."""


def test_a_dataset_folder_is_known_in_the_trace_layer_alone(graph: grimp.ImportGraph) -> None:
    """No module outside ``trace/`` imports the modules that know a dataset's files (issue 42.1: Batch
    keeps scheduling, retries and progress; trace/dataset.py owns its parts)."""
    found = sorted(
        f"{module} -> {imported}"
        for module in graph.modules
        if not module.startswith("nbagent.trace")
        for imported in graph.find_modules_directly_imported_by(module)
        if imported in DATASET_FILES
    )
    assert found == []


TRACE_KINDS = {"Trace", "LoadedTrace", "LazyTrace"}


def test_no_module_outside_trace_probes_a_traces_kind(nodes_outside_trace: tuple[tuple[str, ast.AST], ...]) -> None:
    """Outside ``trace/`` no ``isinstance`` names a kind of trace and no ``getattr``/``hasattr`` asks a trace
    for a method: what callers need is on the shared interface (``TraceFrames``: ``follower()``,
    ``reading_code()``, ``run()``, ``table()``, ``span_tables()``), each kind overriding it (issue 42.1)."""
    found = []
    for where, node in nodes_outside_trace:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)):
            continue
        if node.func.id == "isinstance" and len(node.args) == 2:
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if named & TRACE_KINDS:
                found.append(f"{where}:{node.lineno} isinstance")
        elif node.func.id in ("getattr", "hasattr") and len(node.args) >= 2:
            target = ast.unparse(node.args[0])
            if "trace" in target.lower():
                found.append(f"{where}:{node.lineno} {node.func.id}({target}, ...)")
    assert found == []
