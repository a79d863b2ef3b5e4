"""Issue 43.7: :func:`nbagent.notebook.saved.prune_widget_state` on hand-made notebooks (no kernel).

nbclient saves every widget model it saw opened, closed ones too; the pruning keeps what the outputs show,
what those models name (recursively) and links between kept models, and removes the rest.
"""

from __future__ import annotations

import copy
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from nbagent.__main__ import main
from nbagent.notebook.saved import STATE_MIME, VIEW_MIME, WidgetPruning, prune_widget_state


def model(name: str, view: str | None = "HTMLView", **state: Any) -> dict[str, Any]:
    return {
        "model_module": "@jupyter-widgets/controls",
        "model_module_version": "2.0.0",
        "model_name": name,
        "state": {"_model_name": name, "_view_name": view, **state},
    }


def shown(model_id: str) -> dict[str, Any]:
    return {
        "output_type": "display_data",
        "metadata": {},
        "data": {VIEW_MIME: {"model_id": model_id}, "text/plain": ""},
    }


def notebook(models: dict[str, Any], *outputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "cells": [
            {"cell_type": "markdown", "id": "title", "metadata": {}, "source": "# a title"},
            {
                "cell_type": "code",
                "id": "code",
                "metadata": {},
                "source": "x",
                "outputs": list(outputs),
                "execution_count": 1,
            },
        ],
        "metadata": {"kernelspec": {"name": "python3"}, "widgets": {STATE_MIME: {"state": models, "version_major": 2}}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def saved_models(nb: dict[str, Any]) -> dict[str, Any]:
    return nb["metadata"]["widgets"][STATE_MIME]["state"]


def test_keeps_what_outputs_show_and_what_it_names_recursively_cycles_included() -> None:
    models = {
        "box": model("VBoxModel", "VBoxView", children=["IPY_MODEL_a", "IPY_MODEL_b"], layout="IPY_MODEL_layout"),
        "a": model("HTMLModel", value="<b>IPY_MODEL_closed</b>", layout="IPY_MODEL_layout"),  # text, no reference
        "b": model("VBoxModel", "VBoxView", children=["IPY_MODEL_c"]),
        "c": model("VBoxModel", "VBoxView", children=["IPY_MODEL_box"]),  # a cycle back to the root
        "layout": model("LayoutModel", "LayoutView"),
        "closed": model("HTMLModel", value="", layout="IPY_MODEL_closed_layout"),
        "closed_layout": model("LayoutModel", "LayoutView"),
        "orphan_box": model("VBoxModel", "VBoxView", children=["IPY_MODEL_closed"]),
    }
    nb = notebook(models, shown("box"))
    done = prune_widget_state(nb)
    assert done == WidgetPruning(kept=5, removed=3)
    assert set(saved_models(nb)) == {"box", "a", "b", "c", "layout"}
    assert nb["metadata"]["kernelspec"] == {"name": "python3"}  # the rest of the notebook is untouched
    assert prune_widget_state(nb) == WidgetPruning(kept=5, removed=0)  # idempotent


def test_an_output_widget_keeps_the_widgets_shown_inside_it() -> None:
    inner_output = shown("inside")
    models = {
        "out": model("OutputModel", "OutputView", outputs=[inner_output]),
        "inside": model("ButtonModel", "ButtonView", style="IPY_MODEL_style"),
        "style": model("ButtonStyleModel", "StyleView"),
        "gone": model("ButtonModel", "ButtonView"),
    }
    nb = notebook(models, {"output_type": "execute_result", "data": {VIEW_MIME: {"model_id": "out"}}, "metadata": {}})
    prune_widget_state(nb)
    assert set(saved_models(nb)) == {"out", "inside", "style"}


def test_a_link_between_kept_widgets_is_kept_with_everything_it_names() -> None:
    """A ``jslink`` has no view of its own: no output names it, it names the widgets it links."""
    models = {
        "slider": model("IntSliderModel", "IntSliderView"),
        "text": model("IntTextModel", "IntTextView"),
        "link": model("LinkModel", None, source=["IPY_MODEL_slider", "value"], target=["IPY_MODEL_text", "value"]),
        "stale_link": model("LinkModel", None, source=["IPY_MODEL_x", "value"], target=["IPY_MODEL_y", "value"]),
        "x": model("IntSliderModel", "IntSliderView"),
        "y": model("IntSliderModel", "IntSliderView"),
    }
    nb = notebook(models, shown("slider"))
    prune_widget_state(nb)
    # the link is kept, and so is every model it names (a kept model never names a missing one)
    assert set(saved_models(nb)) == {"slider", "text", "link"}


def test_no_widget_shown_leaves_no_widget_state() -> None:
    nb = notebook({"a": model("HTMLModel"), "b": model("LayoutModel", "LayoutView")})
    nb["cells"][1]["outputs"] = [{"output_type": "display_data", "data": {"text/html": "<p>copy</p>"}, "metadata": {}}]
    assert prune_widget_state(nb) == WidgetPruning(kept=0, removed=2)
    assert "widgets" not in nb["metadata"] and nb["metadata"]["kernelspec"] == {"name": "python3"}
    nb = notebook({"a": model("HTMLModel")})
    nb["metadata"]["widgets"]["other/mime"] = {"kept": True}  # another key under widgets stays
    prune_widget_state(nb)
    assert nb["metadata"]["widgets"] == {"other/mime": {"kept": True}}


@pytest.mark.parametrize(
    "change",
    [
        lambda nb: nb.pop("metadata"),
        lambda nb: nb["metadata"].pop("widgets"),
        lambda nb: nb["metadata"]["widgets"].pop(STATE_MIME),
        lambda nb: nb["metadata"].update(widgets="not an object"),
    ],
)
def test_a_notebook_without_widget_state_is_left_as_it_is(change: Any) -> None:
    nb = notebook({"a": model("HTMLModel")})
    change(nb)
    before = copy.deepcopy(nb)
    assert prune_widget_state(nb) == WidgetPruning(kept=0, removed=0)
    assert nb == before


def test_untrusted_content_is_walked_without_failing() -> None:
    deep: Any = "IPY_MODEL_deep"
    for _ in range(100_000):  # deeper than Python's recursion limit
        deep = [deep]
    models: dict[str, Any] = {
        "root": model(
            "BoxModel", "BoxView", children=["IPY_MODEL_missing", 7, None, {"IPY_MODEL_key": 1}], nested=deep
        ),
        "deep": model("HTMLModel"),
        "not an object": "a string where a model should be",
        "null": None,
        "IPY_MODEL_key": model("HTMLModel"),  # a key is not a reference
        "weird id <script>": model("HTMLModel", children=["IPY_MODEL_root"]),
    }
    outputs = [
        shown("root"),
        {"output_type": "display_data", "data": {VIEW_MIME: {"model_id": 42}}, "metadata": {}},  # not an id
        {"output_type": "display_data", "data": {VIEW_MIME: "root"}, "metadata": {}},
        {"output_type": "stream", "name": "stdout", "text": "IPY_MODEL_null is printed text"},  # not a reference
    ]
    nb = notebook(models, *outputs)
    nb["cells"].append("not a cell")
    done = prune_widget_state(nb)
    assert set(saved_models(nb)) == {"root", "deep"} and done.removed == 4


def test_a_shown_model_that_is_not_an_object_is_kept_as_it_is() -> None:
    nb = notebook({"odd": ["a list"], "gone": model("HTMLModel")}, shown("odd"))
    prune_widget_state(nb)
    assert saved_models(nb) == {"odd": ["a list"]}


@pytest.mark.parametrize("state", [["a", "list"], "text", None, 3])
def test_widget_state_that_is_not_an_object_of_models_is_an_error_and_changes_nothing(state: object) -> None:
    nb = notebook({}, shown("a"))
    nb["metadata"]["widgets"][STATE_MIME]["state"] = state
    before = copy.deepcopy(nb)
    with pytest.raises(ValueError, match=r"prune_widget_state: notebook's metadata.widgets\[.*\]\['state'\] is"):
        prune_widget_state(nb)
    assert nb == before


@pytest.mark.parametrize("bad", [{"cells": "no list"}, {"metadata": {}}, {"cells": None}])
def test_not_a_notebook_is_an_error_naming_the_parameter(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="prune_widget_state: notebook is not a notebook"):
        prune_widget_state(bad)


def test_a_wrong_type_is_a_type_error_naming_the_parameter() -> None:
    with pytest.raises(TypeError, match="prune_widget_state: notebook must be a notebook dict or the path"):
        prune_widget_state(3)  # type: ignore[arg-type]


def closed_and_shown() -> dict[str, Any]:
    models = {
        "box": model("VBoxModel", "VBoxView", children=["IPY_MODEL_a"]),
        "a": model("HTMLModel", value="é ✓ 中文"),
        "closed": model("HTMLModel", value=""),
    }
    return notebook(models, shown("box"))


def test_a_file_is_rewritten_whole_as_nbformat_writes_it_keeping_its_permissions(tmp_path: Path) -> None:
    import nbformat  # here, not at the top: 3 s to import, paid by every worker collecting the file

    path = tmp_path / "run.ipynb"
    nbformat.write(nbformat.from_dict(closed_and_shown()), path)
    os.chmod(path, 0o640)
    size = path.stat().st_size
    done = prune_widget_state(path)
    assert (done.kept, done.removed, done.bytes_before) == (2, 1, size)
    assert done.bytes_after == path.stat().st_size < size
    written = nbformat.read(path, as_version=4)
    assert set(written.metadata.widgets[STATE_MIME]["state"]) == {"box", "a"}
    assert path.read_text(encoding="utf-8") == nbformat.writes(written) + "\n"  # nbformat's own layout
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert [p.name for p in tmp_path.iterdir()] == ["run.ipynb"]  # no temporary file left
    before = path.read_bytes()
    mtime = path.stat().st_mtime_ns
    again = prune_widget_state(str(path))
    assert again == WidgetPruning(2, 0, len(before), len(before))
    assert path.read_bytes() == before and path.stat().st_mtime_ns == mtime  # nothing to remove: not rewritten


@pytest.mark.parametrize("content", [b"{not json", b"\xff\xfe", b"[1, 2]", b'{"cells": 3}', b"[" * 200_000])
def test_a_file_that_is_not_a_notebook_is_an_error_naming_it_and_is_left_as_it_is(
    tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "bad.ipynb"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=r"prune_widget_state: notebook '.*bad\.ipynb' is not a"):
        prune_widget_state(path)
    assert path.read_bytes() == content


def test_a_missing_file_is_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        prune_widget_state(tmp_path / "missing.ipynb")


def test_python_m_nbagent_prune_widgets(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good, bad = tmp_path / "good.ipynb", tmp_path / "bad.ipynb"
    good.write_text(json.dumps(closed_and_shown()), encoding="utf-8")
    bad.write_text("{", encoding="utf-8")
    assert main(["prune-widgets", str(good), str(bad)]) == 1
    out, err = capsys.readouterr()
    assert f"{good}: 1 widget models removed, 2 kept; " in out
    assert f"{bad}: not pruned: prune_widget_state: notebook" in err
    assert main(["prune-widgets", str(good)]) == 0
    assert "0 widget models removed, 2 kept" in capsys.readouterr().out
