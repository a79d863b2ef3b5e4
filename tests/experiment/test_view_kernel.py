"""The experiment's view in a real kernel: shown, a task opened and forked at the parting, then closed,
and the saved notebook keeping the static copy (summary, statistics, tasks, the task's two runs) where
widgets don't show, escaped."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..kernels import execute_cells, kernel_manager
from ..kernels import kernel_dirs as make_kernel_dirs

pytestmark = [pytest.mark.slow, pytest.mark.kernel]

KERNEL = "nbagent-experiment-view-test"

CELLS = [
    """
import pandas as pd
import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient

tasks = pd.DataFrame({"task_id": [f"t{i}" for i in range(8)], "task": [f"{i} + {i}?" for i in range(8)]})
tasks["expected"] = [str(2 * i) for i in range(8)]
tasks.loc[1, "task"] = '<img src=x onerror="alert(1)">'

def a(row):
    return AssistantAgent("a", ReplayChatCompletionClient([row["expected"]]))

def b(row):
    return AssistantAgent("b", ReplayChatCompletionClient(["?" if row["task_id"] in ("t1", "t2") else row["expected"]]))

exp = nbagent.Experiment(tasks, {"a": a, "b": b}, [nbagent.contains("expected")], progress=None)
await exp.run()
""",
    "view = exp.view()\nview",
    """
comparison = view.comparison
comparison.pick("t1")
stepper = await comparison.fork_at_parting()
print(stepper.upcoming.name, comparison.comparison.stats.loc["contains", "a_only"])
""",
    "view.close_widgets()",
]


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return make_kernel_dirs(tmp_path_factory, KERNEL, "nbagent experiment view tests")


def test_the_experiment_view_in_a_kernel_and_its_saved_copy(kernel_dirs: list[str], tmp_path: Path) -> None:
    saved = execute_cells(CELLS, kernel_manager(KERNEL, kernel_dirs), tmp_path / "experiment.ipynb")
    errors = [output for cell in saved.cells for output in cell.outputs if output.output_type == "error"]
    assert errors == []
    printed = "".join(output.text for output in saved.cells[2].outputs if output.output_type == "stream")
    assert printed == "call_llm 2\n"
    static, emptied = saved.cells[1].outputs
    assert emptied.data == {"text/plain": ""}  # closed: the saved notebook names no widget model
    html = static.data["text/html"]  # updated as the task was opened: the copy shows the last state
    assert "a vs b: 8 tasks" in html and "McNemar exact" in html
    assert task_rows(html)[:2] == ["t1", "t2"]  # b's losses first
    assert "a: run" in html  # the picked task's two runs side by side
    assert "<img src=x" not in html and re.search(r"<img[^>]*onerror", html) is None  # only escaped text
    assert "&lt;img src=x onerror=" in html
    assert "a vs b: 8 tasks" in static.data["text/plain"]


def task_rows(html: str) -> list[str]:
    return re.findall(r'<tr data-run="([^"]+)"', html)
