"""The batch's progress widget in a real kernel: shown while the batch runs (awaited and run_sync),
at most 10 updates a second, left as a static HTML summary in the saved notebook; Stop (a comm
message, as the browser sends it) ends every run within a second, the contexts valid."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbconvert import HTMLExporter

from ..kernels import execute_notebook, kernel_manager, next_iopub, run_code, running_kernel
from ..kernels import kernel_dirs as make_kernel_dirs

pytestmark = pytest.mark.kernel

KERNEL = "nbagent-batch-test"
ROOT = Path(__file__).resolve().parents[2]

SETUP = f"""
import sys, asyncio, time
sys.path.insert(0, {str(ROOT)!r})
import nbagent
from tests.batch.helpers import Factory, Gauge, contexts_valid

factory = Factory(latency=0.002)
tasks = [f"<img src=x onerror=alert(1)> {{i}}" for i in range(120)] + [42]
"""


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return make_kernel_dirs(tmp_path_factory, KERNEL, "nbagent batch tests")


def stdout(cell: Any) -> str:
    """A cell's printed text: a print may reach the notebook as several stream outputs (a loaded kernel
    flushes between its writes: "[]" and "\\n" came apart in a CI run at load 21)."""
    return "".join(o.text for o in cell.outputs if o.output_type == "stream" and o.name == "stdout")


def test_the_saved_notebook_holds_the_final_summary(kernel_dirs: list[str], tmp_path: Path) -> None:
    cells = [
        SETUP,
        "batch = await nbagent.Batch(factory, tasks, concurrency=8, title='<img src=x onerror=alert(1)>').run()\n"
        "print(batch.state, batch.progress().ok)",
        "b2 = nbagent.Batch(factory, ['Paris', 'Oslo']).run_sync()\nprint('sync', b2.state, b2.progress().ok)",
        "view = nbagent.batch._DISPLAYS['widget']\nprint(contexts_valid(factory.agents))",
        "await nbagent.Batch(factory, ['Paris']).run()",  # as the last line: no Batch(...) under its view
        "import comm\nprint(len(comm.get_comm_manager().comms))",  # finished views closed their widgets
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    execute_notebook(nb, kernel_manager(KERNEL, kernel_dirs), timeout=120, store_widget_state=False)
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, path)
    nb = nbformat.read(path, as_version=4)
    for index, expected in ((1, "done 120\n"), (2, "sync done 2\n")):
        displays = [o for o in nb.cells[index].outputs if o.output_type == "display_data"]
        assert stdout(nb.cells[index]) == expected
        (display,) = displays
        assert set(display.data) == {"text/html", "text/plain"}  # the widget is gone: the summary alone
        html = display.data["text/html"]
        assert html.startswith(
            '<div class="nba-view nba-batch nba-batch-static nba-state-ok" data-state="done" style="'
        )
        assert "<img" not in html
    html = [o for o in nb.cells[1].outputs if o.output_type == "display_data"][0].data["text/html"]
    assert 'data-metric="done" data-value="121"' in html and 'data-metric="failed" data-value="1"' in html
    assert 'aria-valuenow="100.0"' in html and "got int 42" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html  # the title, escaped
    text = [o for o in nb.cells[1].outputs if o.output_type == "display_data"][0].data["text/plain"]
    assert "done · 121/121 done · 120 ok · 1 failed" in text
    assert stdout(nb.cells[3]) == "[]\n"
    assert [output.output_type for output in nb.cells[4].outputs] == ["display_data"]
    assert stdout(nb.cells[5]).strip() == "0"
    body, _ = HTMLExporter().from_notebook_node(nb)
    assert body.count('class="nba-view nba-batch nba-batch-static nba-state-ok"') == 3


@pytest.fixture
def kernel(kernel_dirs: list[str]) -> Iterator[object]:
    with running_kernel(KERNEL, kernel_dirs) as (_, client):
        yield client


SLOW = """
gauge = Gauge(60.0)
slow = Factory(tool=gauge.tool)
def started():
    print("STARTED", flush=True)
async def watch():
    while gauge.now < 4:
        await asyncio.sleep(0.01)
    started()
"""


@pytest.mark.parametrize("entry", ["await run()", "run_sync()"])
def test_stop_ends_every_run_before_its_tools_end(kernel: object, entry: str) -> None:
    client = kernel
    assert run_code(client, SETUP + SLOW) == ""
    call = "await batch.run()" if entry == "await run()" else "batch.run_sync()"
    code = (
        "batch = nbagent.Batch(slow, [f'c{i}' for i in range(10)], concurrency=4)\n"
        "watcher = asyncio.ensure_future(watch())\n"
        f"{call}\n"
        "ended = time.time()"
    )
    msg_id = client.execute(code)  # type: ignore[attr-defined]
    button, started, updates = None, False, 0
    while button is None or not started:
        message = next_iopub(client, "the batch's tools to start and its Stop button")
        kind = message["msg_type"]
        if kind == "comm_open":
            state = message["content"]["data"].get("state", {})
            if state.get("_model_name") == "ButtonModel" and state.get("description") == "Stop":
                button = message["content"]["comm_id"]
        elif kind == "stream" and "STARTED" in message["content"]["text"]:
            started = True
        elif kind == "error":
            raise AssertionError(message["content"]["evalue"])
    time.sleep(0.5)  # the four runs wait in their tool
    session = client.session  # type: ignore[attr-defined]
    click = session.msg("comm_msg", {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}})
    clicked = time.time()
    client.shell_channel.send(click)  # type: ignore[attr-defined]
    while True:
        message = next_iopub(client, "the stopped batch's cell to end")
        if message["msg_type"] == "comm_msg":
            updates += 1
        if message["parent_header"].get("msg_id") == msg_id and message["msg_type"] == "error":
            raise AssertionError(message["content"]["evalue"])
        if (
            message["parent_header"].get("msg_id") == msg_id
            and message["msg_type"] == "status"
            and message["content"]["execution_state"] == "idle"
        ):
            break
    report = run_code(
        client,
        "print(batch.state, ended, list(batch.results['status']).count('cancelled'), contexts_valid(slow.agents))",
    )
    state, ended, cancelled, problems = report.strip().split(" ", 3)
    assert state == "stopped" and int(cancelled) == 10 and problems == "[]"
    # A hang guard (the tools sleep 60 s); the 1 s target is a figure: bench/bench_stop_pause.py.
    assert 0 <= float(ended) - clicked < 30, f"the batch ended {float(ended) - clicked:.3f} s after the click"
