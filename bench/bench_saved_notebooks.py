"""Benchmark: the shipped notebooks as nbclient saves them (``jupyter nbconvert --execute``, papermill), before
and after :func:`nbagent.notebook.saved.prune_widget_state`.

Each notebook of ``notebooks/`` (or those named) runs top to bottom in a real kernel (``python3`` of this
interpreter, cwd a copy of the folder) through nbclient with its default ``store_widget_state=True``, is
written with nbformat, then pruned. Printed per notebook: the saved bytes and widget models before and after,
and how many of the models saved were closed in the kernel (nbclient keeps them).

    python bench/bench_saved_notebooks.py [01_quickstart.ipynb ...] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from nbagent.notebook.saved import STATE_MIME, prune_widget_state  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
OPEN_MODELS = "import json as _j, ipywidgets.widgets.widget as _w\nprint(_j.dumps(sorted(_w._instances)))"


def measure(source: Path, folder: Path) -> dict[str, Any]:
    nb = nbformat.read(source, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell(OPEN_MODELS))
    started = time.perf_counter()
    NotebookClient(
        nb, timeout=600, kernel_name="python3", allow_errors=True, resources={"metadata": {"path": str(folder)}}
    ).execute()
    seconds = time.perf_counter() - started
    open_models = set(json.loads(nb.cells[-1].outputs[-1]["text"]))
    nb.cells.pop()
    errors = sum(output.output_type == "error" for cell in nb.cells for output in cell.get("outputs", []))
    saved = set(nb.metadata.get("widgets", {}).get(STATE_MIME, {}).get("state", {}))
    path = folder / f"executed-{source.name}"
    nbformat.write(nb, path)
    done = prune_widget_state(path)
    return {
        "notebook": source.name,
        "seconds": round(seconds, 1),
        "errors": errors,
        "bytes_before": done.bytes_before,
        "bytes_after": done.bytes_after,
        "models_before": len(saved),
        "closed_before": len(saved - open_models),
        "models_after": done.kept,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebooks of notebooks/ (default: all)")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sources = [ROOT / "notebooks" / name for name in args.names] or sorted((ROOT / "notebooks").glob("*.ipynb"))
    rows = []
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "notebooks"
        shutil.copytree(ROOT / "notebooks", folder)
        print("| notebook | saved by nbclient | pruned | models (closed) | kept | errors | run |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for source in sources:
            row = measure(source, folder)
            rows.append(row)
            print(
                f"| {row['notebook']} | {row['bytes_before']:,} B | {row['bytes_after']:,} B | "
                f"{row['models_before']} ({row['closed_before']}) | {row['models_after']} | {row['errors']} | "
                f"{row['seconds']} s |",
                flush=True,
            )
    if args.json is not None:
        args.json.write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
