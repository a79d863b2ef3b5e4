"""The suite's tiers (markers, the child-process guard) and how it is spread over pytest-xdist workers.

Tiers (docs/testing.md): a test that starts a kernel, a browser, a server process, Spark, a receiver, an
MCP server or any other child process is ``slow``, through a sub-marker (``SUB_MARKERS``; the folders of
``GROUPED_FOLDERS`` mark their tests) or ``slow`` itself. ``pytest -m "not slow"`` is the fast tier, on three
workers (``pytest_cmdline_main``). A test not marked ``slow`` that starts a child process fails
(``ChildProcessGuard``): a marker cannot go missing silently. A test that needs a module only an extra
installs is skipped with its reason (``OptionalModule``, ``missing_optional``).

Workers (pyproject's ``addopts``: 4 workers, ``--dist=loadgroup``):

Each test belongs to a group (``group_of``), each group runs whole on one worker, so its expensive
session- or module-scoped fixtures start once:

- ``browser``, ``browser-b`` and ``browser-c``: the files under ``tests/browser``, in three parts
  (``BROWSER_GROUPS``) that run side by side: the browser tests are a third of the suite's time, mostly
  waiting on kernels and pages. Their JupyterLab and Notebook 7 servers are session-scoped
  (``tests/browser/conftest.py``): each worker starts each once, whatever browser groups it is given and
  whatever other groups it runs between them (Chromium is package-scoped: Playwright's sync API keeps its
  event loop running while open, which the asyncio tests of other folders cannot share);
- ``realserver``: ``tests/servers`` (the llama-servers, fakellm); ``receivers``: ``tests/receivers``
  (MLflow, Phoenix, Spark) and tests/spark's two Spark files (``SAME_WORKER_AS``: one JVM);
- a test listed in ``ALONE`` (a long test with function-scoped fixtures only) is a group of its own;
- any other test: its file (its module-scoped kernels start once), or the file or group of ``SAME_WORKER_AS``
  it goes with.

The groups are handed out longest first (``LONGEST_FIRST``, then in collection order): a long group
started last would leave the other workers idle at the end. The scheduler is ``GroupScheduling``
(xdist's own ``xdist_group`` marks do not group under pytest 9, whose node ids xdist can no longer
rename).

At the end of a run under xdist, the terminal summary says how long each worker was busy and with which
groups (``pytest_terminal_summary``): what to look at when the suite's wall time grows.

``-p no:xdist`` runs the suite in one process as before: ``--numprocesses``, ``--dist`` and
``--no-loadscope-reorder`` are then accepted and ignored.
"""

from __future__ import annotations

import ast
import contextlib
import gc
import importlib.util
import multiprocessing.process
import os
import platform
import re
import shlex
import subprocess
import sys
import traceback
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

BYTECODE_CACHE = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nbagent" / "pycache"
"""Where a run's bytecode goes when ``PYTHONDONTWRITEBYTECODE`` is set (``sys.pycache_prefix``): never beside
the sources, and kept, so that a run does not compile nbagent and rewrite the tests' asserts again (9 s of
the fast tier's 21 s of collection CPU, docs/testing.md). ``NBAGENT_TEST_BYTECODE=0`` leaves it as set."""
if sys.dont_write_bytecode and os.environ.get("NBAGENT_TEST_BYTECODE") != "0":
    sys.pycache_prefix = sys.pycache_prefix or str(BYTECODE_CACHE)
    sys.dont_write_bytecode = False

import nbagent  # noqa: E402 (after the bytecode's place is set: nbagent is compiled once)

GROUPED_FOLDERS = {"browser": "browser", "servers": "realserver", "receivers": "receivers"}
"""The folders whose tests are one xdist group (``tests/browser`` in three, ``BROWSER_GROUPS``), each test of
them marked with the group's name (a sub-marker of ``slow``)."""
BROWSER_GROUPS = {
    "browser-b": ("reopen_browser", "theme_contrast", "explorer_browser", "security"),
    "browser-c": ("screenshots_script", "view_layout_browser", "autogen_browser", "stepper_pause_browser")
    + ("fork_browser", "stop_browser", "live_view", "explorer_page_browser", "predict_browser"),
}
"""The browser test files of the second and third browser groups (by file name ``test_<name>.py``); the
others are the first group. Balanced by their seconds in one run of the browser tests alone on three workers
(2026-12-07, JupyterLab pages kept for the next notebook): 619, 529 and 606 s."""
BROWSER_GROUP_OF = {f"test_{name}.py": group for group, names in BROWSER_GROUPS.items() for name in names}
ALONE = (
    "trace/test_atomic_writes.py::test_a_trace_part_killed_at_file_operations",
    "trace/test_atomic_writes.py::test_a_batch_killed_at_file_operations_resumes_with_each_task_once",
)
SAME_WORKER_AS = {
    "notebook/test_saved_widgets.py": "notebooks/test_notebooks.py",  # nbformat: 3.0 s to import
    "test_kernel_iopub.py": "notebooks/test_notebooks.py",  # nbclient, which imports nbformat
    "experiment/test_stats.py": "experiment/test_compare.py",  # scipy.stats: 1.3 s
    # Spark: the worker's one JVM (PySpark keeps it for the process; each module's session starts in it) and
    # its compiled code: these two and tests/receivers' Spark module in one process 88 s, in two 99 s
    "spark/test_run_batch.py": "receivers",
    "spark/test_tcp_sockets.py": "receivers",
}
"""Files grouped with another that imports the same slow module or starts the same slow process, so that one
worker pays for it (seconds measured on the 2-core machine, 2026-12-07 and 08)."""
LONGEST_FIRST = (
    "browser-c",
    "browser",
    "browser-b",
    "notebooks/test_notebooks.py",
    "receivers",
    "notebook/test_kernel.py",
    *ALONE,
    "replay/test_fork.py",
    "realserver",
    # the fast tier's longest files (seconds on three workers, 2026-12-07): 29, 16, 16, 13, 13, 12, 11, 10
    "replay/test_replay.py",
    "experiment/test_compare.py",
    "trace/test_lazy.py",
    "trace/test_interop.py",
    "trace/test_explore.py",
    "trace/test_export.py",
    "core/test_wrong_arguments.py",
    "trace/test_bad_data.py",
)


SUB_MARKERS = ("kernel", "browser", "realserver", "receivers", "spark", "killpoints", "mcp", "subprocess", "long")
"""The markers that imply ``slow`` (each registered in pyproject with what it starts)."""
LONG_TESTS = frozenset(
    line.strip()
    for line in (Path(__file__).parent / "long_tests.txt").read_text(encoding="utf-8").splitlines()
    if line.strip() and not line.startswith("#")
)
"""The node ids of the tests marked ``long`` (``tests/long_tests.txt``: the fast tier's longest, measured)."""
MARKER_TIMEOUT_S = {"spark": 1200, "browser": 900, "kernel": 900}
"""The hang guard of a test with one of these markers and no guard of its own (the suite's is 300 s), which
also bounds the set-up of the fixtures it is the first to need. A ``spark`` test's time includes its
module's JVM start and the JVM compiling its first queries: on two cores beside a second full run (load 25
to 34) the first Parquet ``count()`` of ``tests/receivers/test_engines.py`` passed 300 s in three runs of four,
where idle it takes seconds (docs/testing.md, "Ports in tests"). A ``browser`` test may be the first to need
the JupyterLab server, whose start got up to ``START_TIMEOUT_S`` (tests/browser/conftest.py); a ``kernel``
test's waits on IOPub get up to ``IOPUB_DEADLINE_S`` (tests/kernels.py): both were passed on a machine 2.4
times slower than usual beside a second full run (docs/testing.md, "Time in tests")."""
FAST_TIER = "not slow"
"""The marker expression of the fast tier: ``FAST_TIER_WORKERS`` workers unless told otherwise."""
FAST_TIER_WORKERS = 3
"""The fast tier's xdist workers: three on the 2-core machine, where its tests wait (on deadlines, on threads)
for about a fifth of their time and a third worker fills the core a waiting one leaves. Measured one after
the other there, idle (docs/testing.md, 2026-12-07): three workers 1 min 59 s (230 s of CPU), two 2 min 13 s
(215 s), four 2 min 6 s (246 s); the day before, two workers 2 min 41 s against 4 min 46 s in one process.
The pyproject's four cost more on small selections
(issue 45: ``tests/render`` in 70-77 s on four workers, 14-15 s in one process)."""


class ChildProcessStarted(RuntimeError):
    """A test not marked ``slow`` started a child process."""


class ChildProcessGuard:
    """Wraps every way a test can start a child process (``subprocess.Popen``, which asyncio's subprocesses and
    ``os.popen`` use, ``multiprocessing``'s ``Process.start``, ``os.fork``, ``os.forkpty``, ``os.posix_spawn``,
    ``os.posix_spawnp``, ``os.system``). While armed (a test not marked ``slow`` is running), each call is
    refused with :class:`ChildProcessStarted` and recorded, so the test fails even if its code swallows the
    error (``pytest_runtest_makereport``)."""

    def __init__(self) -> None:
        self.armed_for: str | None = None
        self.attempts: list[str] = []

    def refuse(self, what: str) -> None:
        """Record and refuse ``what`` when armed; do nothing otherwise."""
        if self.armed_for is None:
            return
        message = (
            f"{self.armed_for} is not marked slow but started a child process ({what}): mark it "
            f"@pytest.mark.slow or with a sub-marker ({', '.join(SUB_MARKERS)}), see docs/testing.md"
        )
        self.attempts.append(message)
        raise ChildProcessStarted(message)

    def guarded(self, function: Callable[..., Any], what: str) -> Callable[..., Any]:
        """``function``, refused while armed."""

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            self.refuse(f"{what}{_shown(args)}")
            return function(*args, **kwargs)

        wrapper.__wrapped__ = function  # type: ignore[attr-defined]
        return wrapper

    def install(self) -> None:
        """Wrap the process-starting functions (once per session; they pass through while disarmed)."""
        popen_init = subprocess.Popen.__init__
        guard = self

        def popen(self: subprocess.Popen[Any], args: Any, *rest: Any, **kwargs: Any) -> None:
            guard.refuse(f"subprocess.Popen({args!r})")
            popen_init(self, args, *rest, **kwargs)

        subprocess.Popen.__init__ = popen  # type: ignore[method-assign]
        process_start = multiprocessing.process.BaseProcess.start
        multiprocessing.process.BaseProcess.start = self.guarded(  # type: ignore[method-assign]
            process_start, "multiprocessing Process.start"
        )
        for name in ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system"):
            if hasattr(os, name):
                setattr(os, name, self.guarded(getattr(os, name), f"os.{name}"))

    @contextlib.contextmanager
    def armed(self, nodeid: str) -> Iterator[None]:
        """Refuse child processes while a test not marked ``slow`` runs (its fixtures' setup and teardown too)."""
        self.armed_for, self.attempts = nodeid, []
        try:
            yield
        finally:
            self.armed_for = None


def _shown(args: tuple[Any, ...]) -> str:
    """The first argument of a refused call, for the message (a command line, a path, a process)."""
    return f"({args[0]!r})" if args and not isinstance(args[0], multiprocessing.process.BaseProcess) else "()"


GUARD = ChildProcessGuard()

OPTIONAL_MODULES = {
    "pyarrow": "parquet",
    "duckdb": "test",
    "polars": "test",
    "pyspark": "test",
    "mlflow": "test",
    "fakellm": "test",
    "grimp": "test",
    "playwright": "test",
    "nbformat": "test",
    "nbclient": "test",
    "nbconvert": "test",
    "jupyter_client": "test",
    "ipykernel": "test",
    "jupyterlab": "lab",
    "notebook": "test",
    "mcp": "mcp",
    "mcp_server_time": "test",
    "google": "otlp",
    "opentelemetry": "otlp",
    "autogen_core": "autogen",
    "autogen_agentchat": "autogen",
    "autogen_ext": "autogen",
    "tiktoken": "test",
    "scipy": "test",
}
"""The top-level modules only an extra installs (pyproject), with that extra: a test module whose import stops
on one of them is skipped with its name; any other import error, and one raised inside nbagent itself (the
plain install must work without its extras), fails as before."""
PRODUCT = Path(nbagent.__file__).resolve().parent
FOLDER_NEEDS = {
    "browser": ("nbformat", "playwright", "jupyter_client", "nbclient"),
    "notebooks": ("nbformat", "jupyter_client"),
}
"""The folders whose conftest imports optional modules: left out of collection without them (``collect_ignore``)."""


EXTRA_HINT = re.compile(r"pip install 'nbagent-loop\[(\w+)\]'")
"""The install hint of nbagent's own error for a feature of an extra (``Trace.to_parquet`` without pyarrow)."""


def missing_optional(error: BaseException | None) -> str | None:
    """Why a test cannot run without an extra (a module only an extra installs, or nbagent's own error for a
    feature of an extra), or None if ``error`` is no such import error."""
    if isinstance(error, ImportError) and not isinstance(error, ModuleNotFoundError) and EXTRA_HINT.search(str(error)):
        return f"an optional feature: {error}"
    if not isinstance(error, ModuleNotFoundError) or error.name is None:
        return None
    top = error.name.partition(".")[0]
    frames = traceback.extract_tb(error.__traceback__)
    if top not in OPTIONAL_MODULES or any(Path(frame.filename).resolve().is_relative_to(PRODUCT) for frame in frames):
        return None
    return f"needs {top}, which the {OPTIONAL_MODULES[top]} extra installs: pip install -e '.[{OPTIONAL_MODULES[top]}]'"


class OptionalModule(pytest.Module):
    """A test module skipped, with its reason, when it imports a module only an extra installs."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        try:
            return super().collect()
        except self.CollectError as error:
            reason = missing_optional(error.__cause__)
            if reason is None:
                raise
            raise pytest.skip.Exception(reason, allow_module_level=True) from error


def pytest_pycollect_makemodule(module_path: Path, parent: pytest.Collector) -> pytest.Module:
    """Every test module, skipped with its reason if an optional dependency is missing."""
    return OptionalModule.from_parent(parent, path=module_path)


collect_ignore = [
    f"{folder}" for folder, modules in FOLDER_NEEDS.items() if not all(importlib.util.find_spec(m) for m in modules)
]
"""The folders of ``FOLDER_NEEDS`` whose modules are missing (``pytest_report_header`` says which and why)."""


def pytest_report_header(config: pytest.Config) -> list[str]:
    """The folders left out of collection for a missing optional dependency, with the extra that installs it."""
    return [
        f"not collected: tests/{folder} needs {', '.join(FOLDER_NEEDS[folder])}: pip install -e '.[test]'"
        for folder in collect_ignore
    ]


def group_of(nodeid: str) -> str:
    """The group of a test, from its node id (``tests/<folder>/<file>::<name>[<params>]``)."""
    path, _, name = nodeid.partition("::")
    relative = path.removeprefix("tests/")
    top, _, file = relative.partition("/")
    if top == "browser" and file in BROWSER_GROUP_OF:
        return BROWSER_GROUP_OF[file]
    if file and top in GROUPED_FOLDERS:
        return GROUPED_FOLDERS[top]
    test = f"{relative}::{name.split('[', 1)[0]}"
    return test if test in ALONE else SAME_WORKER_AS.get(relative, relative)


def pytest_addoption(parser: pytest.Parser, pluginmanager: pytest.PytestPluginManager) -> None:
    """Without xdist (``-p no:xdist``): accept pyproject's xdist options and ignore them."""
    if pluginmanager.has_plugin("xdist"):
        return
    group = parser.getgroup("xdist (disabled)")
    group.addoption("--numprocesses", dest="numprocesses", default=None, help="ignored without xdist")
    group.addoption("--dist", dest="dist", default="no", help="ignored without xdist")
    group.addoption("--no-loadscope-reorder", dest="loadscopereorder", action="store_false", help="ignored")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist=loadgroup``: the groups of ``group_of``, whole on one worker each."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return group_of(nodeid)

    return GroupScheduling(config, log)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The fast tier (``-m "not slow"``) with ``FAST_TIER_WORKERS`` workers, not the four the slow
    tests need (docs/testing.md has the figures). ``-n``/``--numprocesses``, on the command line or in
    ``PYTEST_ADDOPTS``, wins; ``--pdb`` and ``--trace`` keep one process (xdist refuses them). Never in a
    worker: xdist turns its workers' ``numprocesses`` off, and a worker given workers would start its own,
    each of them theirs, without end."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return
    given = [*config.invocation_params.args, *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    explicit = any(arg == "-n" or arg.startswith(("-n", "--numprocesses")) for arg in given)
    debugging = bool(getattr(config.option, "usepdb", False) or getattr(config.option, "trace", False))
    if is_fast_tier(config) and not explicit and config.pluginmanager.has_plugin("xdist"):
        config.option.numprocesses = 0 if debugging else FAST_TIER_WORKERS


def is_fast_tier(config: pytest.Config) -> bool:
    """Whether the run is the fast tier: ``-m`` is ``FAST_TIER`` (spaces aside)."""
    return " ".join((config.option.markexpr or "").split()) == FAST_TIER


def _marker_name(node: ast.expr) -> str | None:
    """``X`` of ``pytest.mark.X`` or ``pytest.mark.X(...)``; ``None`` for anything else."""
    if isinstance(node, ast.Call):
        node = node.func
    mark = node.value if isinstance(node, ast.Attribute) else None
    if isinstance(mark, ast.Attribute) and mark.attr == "mark" and isinstance(mark.value, ast.Name):
        return node.attr if isinstance(node, ast.Attribute) and mark.value.id == "pytest" else None
    return None


def wholly_slow(path: Path) -> bool:
    """Whether every test of the test file ``path`` is ``slow`` by its module's ``pytestmark`` (``slow`` or a
    sub-marker), read from its text: the file is not imported. Only a plain assignment, the module's last to
    ``pytestmark``, counts; any other way of setting it, or a file that does not parse, is collected."""
    try:
        text = path.read_text(encoding="utf-8")
        tree = ast.parse(text) if "pytestmark" in text else None
    except (OSError, UnicodeDecodeError, SyntaxError):  # collected: pytest reports what is wrong with the file
        return False
    marks: list[ast.expr] = []
    for node in tree.body if tree is not None else []:
        targets = node.targets if isinstance(node, ast.Assign) else [getattr(node, "target", None)]
        if not any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
            continue
        if not isinstance(node, ast.Assign):  # augmented or annotated: not read here
            return False
        marks = node.value.elts if isinstance(node.value, ast.List | ast.Tuple) else [node.value]
    return any(_marker_name(mark) in {"slow", *SUB_MARKERS} for mark in marks)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """In the fast tier, a folder of ``GROUPED_FOLDERS`` and a test file whose ``pytestmark`` makes every test of
    it slow are not collected: none of their tests would run, and importing them (nbformat, nbclient,
    nbconvert, Playwright, the MCP SDK) cost each worker 5-6 s of its start on the machine of 2026-12-07."""
    if not is_fast_tier(config):
        return None
    tests = Path(__file__).parent
    if collection_path.parent == tests and collection_path.name in GROUPED_FOLDERS:
        return True
    if collection_path.suffix == ".py" and collection_path.name.startswith("test_") and wholly_slow(collection_path):
        return True
    return None


def pytest_configure(config: pytest.Config) -> None:
    """Wrap the process-starting functions for the guard (in each process that runs tests). First,
    ``platform.processor()`` runs ``uname -p`` once and keeps its answer: the openai SDK asks for it in its
    first request's headers, which would otherwise start that child process in whichever test came first."""
    platform.processor()
    GUARD.install()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """A test not marked ``slow`` runs with the guard armed."""
    if item.get_closest_marker("slow"):
        return (yield)
    with GUARD.armed(item.nodeid):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[pytest.TestReport]:
    """A phase in which the guard refused a child process fails with the guard's message; one that stopped on
    importing a module only an extra installs (a fixture's or a test's own import) is skipped with the reason."""
    report: pytest.TestReport = yield
    if GUARD.attempts:
        report.outcome = "failed"
        report.longrepr = "\n".join(dict.fromkeys(GUARD.attempts))
        GUARD.attempts = []
    elif report.failed and call.excinfo is not None and (reason := missing_optional(call.excinfo.value)):
        report.outcome = "skipped"
        report.longrepr = (str(item.path), (item.location[1] or 0) + 1, f"Skipped: {reason}")
    return report


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the tests of ``GROUPED_FOLDERS``' folders, ``slow`` on every test with a sub-marker (first: before
    ``-m`` deselects); under xdist, order the groups longest first (every worker collects the same order)."""
    for item in items:
        top = item.nodeid.removeprefix("tests/").partition("/")[0]
        if top in GROUPED_FOLDERS:
            item.add_marker(GROUPED_FOLDERS[top])
        if item.nodeid in LONG_TESTS:
            item.add_marker("long")
        if any(item.get_closest_marker(name) for name in SUB_MARKERS):
            item.add_marker("slow")
        guards = [seconds for name, seconds in MARKER_TIMEOUT_S.items() if item.get_closest_marker(name)]
        if guards and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(max(guards)))
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {group: index for index, group in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))  # stable: the rest keep their order


def pytest_collection_finish(session: pytest.Session) -> None:
    """What the run holds once collected (the modules, the tests, their parameters: half a million objects)
    stays to its end: ``gc.freeze()`` takes it out of every later full collection, which scanned it each
    time (19 s of the fast tier's CPU in its 49 full collections, docs/testing.md). Garbage first."""
    gc.collect()
    gc.freeze()


_BUSY: defaultdict[str, defaultdict[str, float]] = defaultdict(lambda: defaultdict(float))
"""Under xdist, in the controller: per worker, per group, the seconds its tests' phases took."""


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Under xdist (a report then names the worker that ran it): add the report's phase to its group's time."""
    worker = getattr(getattr(getattr(report, "node", None), "gateway", None), "id", None)
    if worker is not None:
        _BUSY[worker][group_of(report.nodeid)] += report.duration


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Each worker's busy seconds and its longest groups (the suite's wall time is its busiest worker's)."""
    if not _BUSY:
        return
    terminalreporter.section("time per xdist worker (busiest first)")
    for worker, groups in sorted(_BUSY.items(), key=lambda item: -sum(item[1].values())):
        longest = sorted(groups.items(), key=lambda item: -item[1])
        shown = ", ".join(f"{group} {seconds:.0f} s" for group, seconds in longest[:6])
        rest = f", {len(longest) - 6} more groups" if len(longest) > 6 else ""
        terminalreporter.write_line(f"{worker}: {sum(groups.values()):.0f} s busy: {shown}{rest}")
