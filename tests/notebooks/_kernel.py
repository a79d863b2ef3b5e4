"""Execute notebooks in a real Jupyter kernel of a given Python interpreter."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..kernels import execute_notebook, kernel_manager

if TYPE_CHECKING:  # nbformat is imported where it is used: 3 s, paid by every worker collecting the file
    import nbformat

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
KERNEL_NAME = "nbagent-test"
OFFLINE_ENV = {"OPENAI_API_KEY": "", "NBAGENT_BASE_URL": ""}


def write_kernelspec(folder: Path, python: str, env: dict[str, str] | None = None) -> Path:
    """A kernelspec named ``nbagent-test`` that starts ipykernel with ``python``.

    The kernel runs offline (no API key, no base URL) unless ``env`` sets them.
    """
    spec_dir = folder / "kernels" / KERNEL_NAME
    spec_dir.mkdir(parents=True, exist_ok=True)
    spec = {
        "argv": [python, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "nbagent test kernel",
        "language": "python",
        "env": {**OFFLINE_ENV, **(env or {})},
    }
    (spec_dir / "kernel.json").write_text(json.dumps(spec))
    return folder / "kernels"


def cell_outputs(cell: nbformat.NotebookNode) -> list[dict[str, Any]]:
    """A cell's outputs as Jupyter shows them: consecutive stream outputs of one stream (stdout,
    stderr) merged into one. The kernel sends what a cell writes in pieces, flushed on a timer, so
    one ``print("a:", b)`` can arrive as two outputs, ``"a:"`` then ``" b"`` and the newline, when
    the kernel's flush falls between its writes (seen on a loaded machine)."""
    merged: list[dict[str, Any]] = []
    for output in cell.get("outputs", []):
        last = merged[-1] if merged else None
        if (
            last is not None
            and output.get("output_type") == "stream"
            and last.get("output_type") == "stream"
            and last.get("name") == output.get("name")
        ):
            merged[-1] = {**last, "text": last["text"] + output["text"]}
        else:
            merged.append(dict(output))
    return merged


def error_outputs(nb: nbformat.NotebookNode) -> list[str]:
    """Every error output and every stderr traceback of an executed notebook, as readable text."""
    found = []
    for index, cell in enumerate(nb.cells):
        for output in cell_outputs(cell):
            if output.get("output_type") == "error":
                found.append(f"cell {index}: {output['ename']}: {output['evalue']}")
            elif (
                output.get("output_type") == "stream"
                and output.get("name") == "stderr"
                and "Traceback" in output["text"]
            ):
                found.append(f"cell {index}: stderr traceback:\n{output['text']}")
    return found


def output_text(nb: nbformat.NotebookNode) -> str:
    """Everything the notebook printed or displayed as plain text, cell after cell (a stream's
    consecutive pieces joined as they were written, see :func:`cell_outputs`)."""
    parts = []
    for cell in nb.cells:
        for output in cell_outputs(cell):
            if output.get("output_type") == "stream":
                parts.append(output["text"])
            elif "data" in output:
                parts.append(output["data"].get("text/plain", ""))
    return "\n".join(parts)


BASELINE_TASKS = (
    "import asyncio as _nbagent_test_asyncio\n_nbagent_test_baseline = set(_nbagent_test_asyncio.all_tasks())"
)
LEFTOVER_TASKS = (  # the kernel's own task running this cell (ipykernel's) does not count
    "print('leftover tasks:', sorted(repr(t.get_coro()) for t in _nbagent_test_asyncio.all_tasks()\n"
    "      - _nbagent_test_baseline - {_nbagent_test_asyncio.current_task()}\n"
    "      if not t.done() and '/ipykernel/' not in t.get_coro().cr_code.co_filename))"
)


def leftover_tasks(nb: nbformat.NotebookNode) -> str:
    """What the last cell added by :func:`execute` printed: the tasks still pending after the notebook."""
    return "".join(output.get("text", "") for output in nb.cells[-1].get("outputs", [])).strip()


def execute(path: Path, kernels_dir: Path, timeout: int = 120) -> nbformat.NotebookNode:
    """Run every cell of ``path`` (cwd: its folder) and return the executed notebook.

    A first cell notes the kernel's asyncio tasks and a last cell prints the ones the notebook left
    pending (:func:`leftover_tasks`). Errors do not stop the run (``allow_errors``) so that the
    caller sees all of them at once.
    """
    import nbformat

    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(BASELINE_TASKS))
    nb.cells.append(nbformat.v4.new_code_cell(LEFTOVER_TASKS))
    return execute_notebook(
        nb,
        kernel_manager(KERNEL_NAME, [str(kernels_dir)]),
        timeout=timeout,
        allow_errors=True,
        resources={"metadata": {"path": str(path.parent)}},
    )


def this_python() -> str:
    return os.environ.get("NBAGENT_TEST_PYTHON", sys.executable)
