"""The walkthrough and its Chinese twin run in a real kernel with their exercises as shipped (every check says
"not done yet", nothing raises) and solved (every check says done), in the notebook's language (issue 44.5)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from ._kernel import ROOT, cell_outputs, error_outputs, execute, output_text
from .exercise_solutions import SOLUTIONS
from .test_notebooks import EXPECTED_OUTPUT

if TYPE_CHECKING:  # nbformat is imported where it is used: 3 s, paid by every worker collecting the file
    import nbformat

WALKTHROUGHS = ["02_walkthrough_steps_1_5.ipynb", "02_walkthrough_steps_1_5.zh.ipynb"]
# How a check's first line starts, per language: done, and not done yet.
HEADS = {
    "02_walkthrough_steps_1_5.ipynb": ("✓ Exercise {n} · ", "… Exercise {n} · ", ": done", ": not done yet"),
    "02_walkthrough_steps_1_5.zh.ipynb": ("✓ 练习 {n} · ", "… 练习 {n} · ", ": 完成", ": 还没做"),
}


# The predict mode's first question and the what-if forks' sentences (issue 44.1 and 44.3), per language.
PRINTED = {
    "02_walkthrough_steps_1_5.ipynb": [
        "After STEP 1 · New messages into model_context, what comes next?",
        "  message_id   STEP 3 · Make a message id (no memory)",
        "0 of 0 predictions right",
        "What if the tool fails?\n    At move 6, get_weather gives walk the result '12 °C, cloudy' and fork an error "
        "'Error: the tool failed (a what-if fork)'.",
        "What if the model calls a second tool?",
        "What if the iteration limit is 2?\n    At move 7, walk goes to STEP 5 · Reflect on the tool results and "
        "fork to "
        "STEP 5 · Call the LLM again with the results.",
        "walk answers 'It is 12 °C and cloudy in Paris: take a jacket.'; fork answers '12 °C, cloudy'",
    ],
    "02_walkthrough_steps_1_5.zh.ipynb": [
        "STEP 1 · 新消息进 model_context 之后,接下来是哪一步?",
        "  message_id   STEP 3 · 生成 message_id (没有记忆)",
        "0 个预测里对了 0 个",
        "如果工具失败了?\n    第 6 步,get_weather 给 walk 的是结果 '12 °C, cloudy',给 fork 的是错误 "
        "'Error: the tool failed (a what-if fork)'。",
        "如果关掉反思(reflect)?",
        "walk 的答案是 'It is 12 °C and cloudy in Paris: take a jacket.';fork 的答案是 '12 °C, cloudy'",
    ],
}


def tagged(nb: nbformat.NotebookNode, tag: str) -> list[nbformat.NotebookNode]:
    return [cell for cell in nb.cells if tag in cell.get("metadata", {}).get("tags", [])]


def check_lines(nb: nbformat.NotebookNode) -> list[str]:
    """What each check cell showed (its result's text)."""
    shown = []
    for cell in tagged(nb, "exercise-check"):
        texts = [out["data"]["text/plain"] for out in cell_outputs(cell) if out.get("output_type") == "execute_result"]
        shown.append("\n".join(texts))
    return shown


def test_each_walkthrough_has_seven_exercises_each_with_its_check() -> None:
    for name in WALKTHROUGHS:  # read as JSON, its cells' sources as their lists of lines: no nbformat to import
        cells = json.loads((ROOT / "notebooks" / name).read_text(encoding="utf-8"))["cells"]
        exercises, checks = (
            [at for at, cell in enumerate(cells) if tag in cell["metadata"].get("tags", [])]
            for tag in ("exercise", "exercise-check")
        )
        assert len(exercises) == len(checks) == len(SOLUTIONS) == 7
        for at in exercises:  # each follows its explanation, and its check follows it
            assert cells[at - 1]["cell_type"] == "markdown" and at + 1 in checks
        assert ["".join(cells[at]["source"]).split("(")[0] for at in checks] == [
            "exercises.check_context",
            "exercises.check_memory",
            "exercises.check_message_id",
            "exercises.check_request",
            "exercises.check_branches",
            "exercises.check_tool",
            "exercises.check_fork",
        ]


@pytest.mark.slow
@pytest.mark.kernel
@pytest.mark.timeout(900)
@pytest.mark.parametrize("solved", [False, True], ids=["as-shipped", "solved"])
@pytest.mark.parametrize("name", WALKTHROUGHS, ids=["en", "zh"])
def test_the_walkthrough_runs_with_its_exercises(name: str, solved: bool, kernels_dir: Path, tmp_path: Path) -> None:
    import nbformat

    nb = nbformat.read(ROOT / "notebooks" / name, as_version=4)
    if solved:
        for cell, source in zip(tagged(nb, "exercise"), SOLUTIONS, strict=True):
            cell.source = source
    path = tmp_path / name
    nbformat.write(nb, path)
    executed = execute(path, kernels_dir)
    assert error_outputs(executed) == []
    done, not_done, done_word, not_done_word = HEADS[name]
    lines = check_lines(executed)
    assert len(lines) == 7
    for number, line in enumerate(lines, 1):
        head = (done if solved else not_done).format(n=number)
        assert line.startswith(head), line
        assert (done_word if solved else not_done_word) in line.split("\n")[0], line
        assert ("✗" not in line) if solved else (line.count("\n  ✗ ") == 1), line
    text = output_text(executed)
    missing = [line for line in [*EXPECTED_OUTPUT[name], *PRINTED[name]] if line not in text]
    assert missing == [], f"the rest of {name} did not print: {missing}"
