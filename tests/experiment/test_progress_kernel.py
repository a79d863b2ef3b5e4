"""An experiment's live progress in a real kernel: one row and bar per variant, left as static HTML in the
saved notebook (what nbconvert and GitHub show), every name escaped."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..kernels import execute_cells, kernel_manager
from ..kernels import kernel_dirs as make_kernel_dirs

pytestmark = pytest.mark.kernel

CELL = """
import nbagent, pandas as pd
from nbagent import AssistantAgent, ReplayChatCompletionClient

tasks = pd.DataFrame({"task_id": ["t0", "t1", "t2"], "task": ["1?", "2?", "3?"], "expected": ["1", "2", "3"]})
variants = {
    "short": AssistantAgent("short", ReplayChatCompletionClient(["1"])),
    "<i>long": AssistantAgent("long", ReplayChatCompletionClient(["2"])),
}
exp = nbagent.Experiment(tasks, variants, [nbagent.exact_match()], repeats=2)
await exp.run()
print(exp.results["exact_match"].tolist())
"""


def test_the_progress_shows_each_variant_and_leaves_a_static_copy(
    tmp_path_factory: pytest.TempPathFactory, tmp_path: Path
) -> None:
    dirs = make_kernel_dirs(tmp_path_factory, "nbagent-experiment-test", "nbagent experiment tests")
    notebook = execute_cells([CELL], kernel_manager("nbagent-experiment-test", dirs), tmp_path / "run.ipynb")
    outputs = notebook.cells[0].outputs
    html = "".join(str(output.get("data", {}).get("text/html", "")) for output in outputs)
    printed = "".join(output.text for output in outputs if output.output_type == "stream")
    assert "[True, True, False, False, False, False, False, False, True, True, False, False]" in printed
    assert "nba-batch-static" in html and "nba-batch-groups" in html  # the widget's static copy, saved
    assert 'data-group="short"' in html and "6/6" in html
    assert "&lt;i&gt;long" in html and "<i>long" not in html
