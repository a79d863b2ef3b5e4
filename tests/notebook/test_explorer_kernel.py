"""The run explorer in a real kernel: a batch's runs explored, filtered, a run opened (replayed offline)
and the saved notebook keeping the static copy (first page, query, run shown) where widgets don't show."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ..kernels import execute_cells, kernel_manager
from ..kernels import kernel_dirs as make_kernel_dirs

pytestmark = pytest.mark.kernel

KERNEL = "nbagent-explorer-test"

CELLS = [
    """
import nbagent, pandas as pd
from nbagent import AssistantAgent, ReplayChatCompletionClient

bot = AssistantAgent("bot", ReplayChatCompletionClient(['fine <img src=x onerror="alert(1)">']))
batch = nbagent.Batch(bot, [f"task {i}" for i in range(12)], progress=None)
await batch.run()
trace = batch.trace
""",
    "explorer = trace.explore(page_size=5)\nexplorer.filter(search='task 1').sort_by('started_at', ascending=False)\n"
    "explorer",
    """
runs, tool_calls = trace.runs_df(), trace.tool_calls_df()
found = eval(explorer.query)
print(len(found), list(found["run_id"]) == list(explorer.selection["run_id"]))
shown = await explorer.open(explorer.selection["run_id"].iloc[0])
print("nba-view" in shown, "<img" in shown, explorer.widget().detail.value == shown)
explorer.changed()
""",
    "closed = trace.explore()\nclosed",
    "closed.close()",
]


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return make_kernel_dirs(tmp_path_factory, KERNEL, "nbagent explorer tests")


def test_the_explorer_in_a_kernel_and_its_saved_copy(kernel_dirs: list[str], tmp_path: Path) -> None:
    saved = execute_cells(CELLS, kernel_manager(KERNEL, kernel_dirs), tmp_path / "explorer.ipynb")
    errors = [output for cell in saved.cells for output in cell.outputs if output.output_type == "error"]
    assert errors == []
    printed = "".join(output.text for output in saved.cells[2].outputs if output.output_type == "stream")
    assert printed == "3 True\nTrue False True\n"  # task 1, task 10, task 11
    static, widget = saved.cells[1].outputs
    assert "application/vnd.jupyter.widget-view+json" in widget.data
    html = static.data["text/html"]  # updated when the run was opened: the saved copy shows it
    assert "Run explorer: 3 of 12 runs, page 1 of 1" in html
    assert len(re.findall(r'class="nba-x-row', html)) == 3
    assert 'class="nba-view nba-state-ok"' in html and "nba-static-copy" in html
    assert "<img src=x" not in html and re.search(r"<[a-z]+[^>]*onerror", html) is None
    assert 'fine &lt;img src=x onerror="alert(1)"&gt;' in html  # the answer, shown as text
    assert all(src.startswith("data:image/") for src in re.findall(r"<img[^>]* src=\"([^\"]*)\"", html))
    # closed, an explorer's widget output is emptied: the saved notebook names no model a reopened one misses
    static, emptied = saved.cells[3].outputs
    assert "Run explorer: 12 of 12 runs" in static.data["text/html"]
    assert emptied.data == {"text/plain": ""}
