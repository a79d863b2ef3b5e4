"""Issue 43.7 in a real kernel: a notebook nbclient ran and saved (``nbconvert --execute``, papermill) keeps
every widget model it saw opened, the closed ones of finished views too; pruned, it keeps only the models
its outputs show (and what they name), which still render."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbconvert import HTMLExporter

from nbagent.notebook.saved import STATE_MIME, VIEW_MIME, prune_widget_state

from ..kernels import execute_notebook, kernel_manager
from ..kernels import kernel_dirs as make_kernel_dirs

pytestmark = [pytest.mark.slow, pytest.mark.kernel]

KERNEL = "nbagent-saved-widgets-test"
CELLS = [
    "import ipywidgets, nbagent\nfrom nbagent import AssistantAgent, ReplayChatCompletionClient\n"
    "def make(name):\n"
    "    return AssistantAgent(name, ReplayChatCompletionClient(['one two three four five six'], chunk_delay=0.08),"
    " model_client_stream=True)",
    "view = await nbagent.show(make('slow'), 'talk slowly')\nprint(view.status)",  # goes live, ends, closes
    "stepper = nbagent.step(make('walked'), 'say it')\ndisplay(stepper)\nawait stepper.next()",  # stays live
    "a, b = ipywidgets.IntSlider(3), ipywidgets.IntText()\nlink = ipywidgets.jslink((a, 'value'), (b, 'value'))\n"
    "out = ipywidgets.Output()\nwith out:\n    display(ipywidgets.HBox([a, b]))\nout",
    "closed = ipywidgets.Button(description='never shown')\nclosed.close()",
    "import json, ipywidgets.widgets.widget as w\nprint(json.dumps(sorted(w._instances)))",
]


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return make_kernel_dirs(tmp_path_factory, KERNEL, "nbagent saved widgets test")


def test_a_notebook_nbclient_saved_keeps_only_the_models_it_shows(kernel_dirs: list[str], tmp_path: Path) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in CELLS])
    execute_notebook(nb, kernel_manager(KERNEL, kernel_dirs), timeout=120, store_widget_state=True)
    assert [o for cell in nb.cells for o in cell.outputs if o.output_type == "error"] == []
    path = tmp_path / "ran.ipynb"
    nbformat.write(nb, path)
    live = set(json.loads(nb.cells[-1].outputs[-1]["text"]))  # the models still open in the kernel at the end
    saved = set(nb.metadata.widgets[STATE_MIME]["state"])
    closed = saved - live
    assert len(closed) > 10  # nbclient saved the finished run view's closed models (and the closed button's)
    assert "".join(nb.cells[1].outputs[-1]["text"]).strip() == "ok"

    done = prune_widget_state(path)
    pruned = nbformat.read(path, as_version=4)
    nbformat.validate(pruned)
    models = pruned.metadata.widgets[STATE_MIME]["state"]
    print(
        f"nbclient's notebook: {done.bytes_before:,} B with {len(saved)} models ({len(closed)} closed) -> "
        f"{done.bytes_after:,} B with {done.kept}"
    )
    assert done.removed >= len(closed) and set(models) <= live  # no closed widget's model saved
    shown = {
        output.data[VIEW_MIME]["model_id"]
        for cell in pruned.cells
        for output in cell.outputs
        if VIEW_MIME in output.get("data", {})
    }
    assert len(shown) == 2 and shown <= set(models)  # the stepper's widget and the Output widget stay
    text = json.dumps(models)
    named = {part.split('"')[0] for part in text.split('"IPY_MODEL_')[1:]}
    assert named <= set(models)  # every model a kept model names is kept: the views render whole
    names = [model["model_name"] for model in models.values()]
    assert {"LinkModel", "IntSliderModel", "IntTextModel", "OutputModel"} <= set(names)  # the linked pair inside
    assert "nba-stepper-live" in text  # the stepper's live widget
    stepper_copy = [o for o in pruned.cells[2].outputs if "nba-static-copy" in o.get("data", {}).get("text/html", "")]
    assert stepper_copy  # its static copy stays beside it
    html = HTMLExporter().from_notebook_node(pruned)[0]
    assert STATE_MIME in html and all(model_id in html for model_id in shown)  # nbconvert renders the views
    assert 'class="nba-view' in html  # the finished run shows its static copy
