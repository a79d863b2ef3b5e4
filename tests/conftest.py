"""How the suite is spread over pytest-xdist workers (pyproject's ``addopts``: 4 workers, ``--dist=loadgroup``).

Each test belongs to a group (``group_of``), each group runs whole on one worker, so its expensive
session- or module-scoped fixtures start once:

- ``browser``, ``browser-b`` and ``browser-c``: the files under ``tests/browser``, in three parts
  (``BROWSER_GROUPS``), each with its own JupyterLab, Notebook 7 server and Chromium: the browser tests
  are a third of the suite's time, mostly waiting on kernels and pages;
- ``realserver``: ``tests/servers`` (the llama-servers, fakellm); ``receivers``: ``tests/receivers``
  (MLflow, Phoenix, Spark);
- a test listed in ``ALONE`` (a long test with function-scoped fixtures only) is a group of its own;
- any other test: its file (its module-scoped kernels start once).

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

import os
from collections import defaultdict
from typing import Any

import pytest

GROUPED_FOLDERS = {"browser": "browser", "servers": "realserver", "receivers": "receivers"}
BROWSER_GROUPS = {
    "browser-b": ("reopen_browser", "theme_contrast", "explorer_browser", "security"),
    "browser-c": ("screenshots_script", "view_layout_browser", "autogen_browser", "stepper_pause_browser")
    + ("fork_browser", "stop_browser", "live_view"),
}
"""The browser test files of the second and third browser groups (by file name ``test_<name>.py``); the
others are the first group. Balanced by their seconds in one run (first 343 s, second 326 s, third 359 s
on two idle workers)."""
BROWSER_GROUP_OF = {f"test_{name}.py": group for group, names in BROWSER_GROUPS.items() for name in names}
ALONE = (
    "trace/test_atomic_writes.py::test_a_trace_part_killed_at_every_file_operation",
    "trace/test_atomic_writes.py::test_a_batch_killed_at_every_file_operation_resumes_with_each_task_once",
)
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
)


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
    return test if test in ALONE else relative


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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Under xdist, order the groups longest first (every worker collects the same order)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        rank = {group: index for index, group in enumerate(LONGEST_FIRST)}
        items.sort(key=lambda item: rank.get(group_of(item.nodeid), len(rank)))  # stable: the rest keep their order


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
