"""The view in a real kernel: Run All never hangs, the saved notebook and its HTML export show the
finished run (its static copy alone), the saved size does not grow with the number of chunks,
interrupts cancel (in one line), and the Stop button's click is handled on every entry point
while the run goes, awaited or driven synchronously (a comm message sent as the browser sends it)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from nbconvert import HTMLExporter

from ..kernels import (
    NOT_COUNTED,
    execute_cells,
    execute_notebook,
    highest_rate,
    kernel_manager,
    next_iopub,
    run_code,
    running_kernel,
)
from ..kernels import kernel_dirs as make_kernel_dirs
from ..notebooks._kernel import cell_outputs

pytestmark = pytest.mark.kernel

KERNEL = "nbagent-notebook-test"

SETUP = """
import asyncio, nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient, CreateResult, FunctionCall

def shout(text: str) -> str:
    "Echo the text."
    return text

def make(name, answer="The **answer** is 3."):
    script = [
        CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id="c1", name="shout", arguments='{"text": "<img src=x onerror=alert(1)>"}')],
        ),
        answer,
    ]
    client = ReplayChatCompletionClient(script, chunk_delay=0.001)
    return AssistantAgent(name, client, tools=[shout], reflect_on_tool_use=True, model_client_stream=True)

bot, b2, b3, b4, b5 = (make(name) for name in ("bot", "b2", "b3", "b4", "b5"))
"""

CELLS = [
    SETUP,
    "%load_ext nbagent",
    "%%agent bot\nsay it",
    "r = nbagent.run(b2, 'say it')\nprint(type(r).__name__, r.messages[-1].content)",
    "print(b3.run_sync('say it').messages[-1].content)",
    "view = await nbagent.show(b4, 'say it')\nprint(view.status, view.response.chat_message.content)",
    "bg = nbagent.start(b5, 'say it')\nprint('started')",
    "answer = await bg.wait()\nprint(bg.status, answer.chat_message.content)",
    "%agent_reset bot",
    "print(len(bot.model_context.messages), 'messages left')",
    "%%agent missing\nhello",
    "%%agent shout\nhello",
    "%agent_reset 1x",
]
FAILING = {10, 11, 12}  # the UsageError cells: Run All goes on past them


@pytest.fixture(scope="module")
def kernel_dirs(tmp_path_factory: pytest.TempPathFactory) -> list[str]:
    return make_kernel_dirs(tmp_path_factory, KERNEL, "nbagent notebook tests")


def execute(
    cells: list[str], kernel_dirs: list[str], tmp_path: Path, failing: frozenset[int] = frozenset()
) -> nbformat.NotebookNode:
    return execute_cells(cells, kernel_manager(KERNEL, kernel_dirs), tmp_path / "run.ipynb", failing)


def printed(cell: nbformat.NotebookNode) -> str:
    """What a cell printed to stdout, stripped: one print can arrive as several stream outputs (its text and
    its newline are two writes, and a warning on stderr between them splits the output)."""
    return "".join(
        output.text for output in cell.outputs if output.output_type == "stream" and output.name == "stdout"
    ).strip()


def result(cell: nbformat.NotebookNode) -> str:
    """The ``text/plain`` of a cell's result (its last expression)."""
    found = [output for output in cell.outputs if output.output_type == "execute_result"]
    assert len(found) == 1, cell.outputs
    return str(found[0].data["text/plain"])


def outputs(cell: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(output type, plain text) of each output of a cell as Jupyter shows them (``cell_outputs``: the
    consecutive pieces of one stream are one output)."""
    found: list[tuple[str, str]] = []
    for output in cell_outputs(cell):
        if output["output_type"] == "stream":
            found.append((output["name"], output["text"]))
        elif output["output_type"] == "error":
            found.append(("error", f"{output['ename']}: {output['evalue']}"))
        else:
            found.append((output["output_type"], output["data"].get("text/plain", "")))
    return found


@pytest.fixture(scope="module")
def run_all(kernel_dirs: list[str], tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    return execute(CELLS, kernel_dirs, tmp_path_factory.mktemp("run_all"), frozenset(FAILING))


def test_run_all_runs_every_cell(run_all: nbformat.NotebookNode) -> None:
    texts = [outputs(cell) for cell in run_all.cells]
    assert texts[0] == [] and texts[1] == []
    assert [kind for kind, _ in texts[2]] == ["display_data"]
    assert texts[2][0][1].splitlines()[:2] == ["bot · ok", "The **answer** is 3."]
    assert texts[3] == [("stdout", "TaskResult The **answer** is 3.\n")]
    assert texts[4] == [("stdout", "The **answer** is 3.\n")]
    assert [kind for kind, _ in texts[5]] == ["display_data", "stdout"]
    assert texts[5][1] == ("stdout", "ok The **answer** is 3.\n")
    assert [kind for kind, _ in texts[6]] == ["display_data", "stdout"]
    assert texts[7] == [("stdout", "ok The **answer** is 3.\n")]
    assert texts[8] == [("stdout", "bot: context cleared\n")]
    assert texts[9] == [("stdout", "0 messages left\n")]
    # IPython shows a magic's UsageError on stderr, without a traceback.
    # The magics' errors are worded as every wrong argument (issue 19: where, what, expected, given), a
    # ValueError or a TypeError (and a UsageError), shown in one line without a traceback.
    expected = "the name of an AssistantAgent variable"
    missing = f"%%agent: NAME must be {expected}, got 'missing'. No variable has that name in the notebook"
    assert texts[10] == [("error", f"AgentNameError: {missing}")]
    assert texts[11] == [("error", "NotAnAgentError: %%agent: shout must be an AssistantAgent, got function shout")]
    usage = f"%agent_reset: NAME must be {expected}, got '1x'. Usage: %agent_reset NAME"
    assert texts[12] == [("error", f"AgentNameError: {usage}")]
    assert [len(cell.outputs[0].traceback) for cell in run_all.cells[10:13]] == [1, 1, 1]


def test_saved_notebook_holds_the_final_state_of_every_view(run_all: nbformat.NotebookNode) -> None:
    for index in (2, 5, 6):
        (display,) = [output for output in run_all.cells[index].outputs if output.output_type == "display_data"]
        # The run has ended: its output is the static copy alone, nothing needs the widget manager.
        assert set(display.data) == {"text/plain", "text/html"}
        html = display.data["text/html"]
        assert html.startswith('<div class="nba-view nba-state-ok" data-status="ok" style="')
        assert "<p>The <strong>answer</strong> is 3.</p>" in html
        assert 'data-metric="llm_calls" data-value="2"' in html
        assert 'data-metric="tool_calls" data-value="1"' in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html


def test_html_export_shows_the_finished_run(run_all: nbformat.NotebookNode) -> None:
    body, _ = HTMLExporter().from_notebook_node(run_all)
    assert body.count('<div class="nba-view nba-state-ok" data-status="ok" style="') == 3
    assert body.count("<p>The <strong>answer</strong> is 3.</p>") == 3
    assert "<img src=x onerror" not in body and '<img src="x"' not in body
    assert 'data-tool-name="shout"' in body


def test_saved_size_does_not_grow_with_the_number_of_chunks(kernel_dirs: list[str], tmp_path: Path) -> None:
    cell = (
        "from nbagent import AssistantAgent, ReplayChatCompletionClient\nimport nbagent\n"
        "words = ' '.join(f'w{{i}}' for i in range({n}))\n"
        "agent = AssistantAgent('bot', ReplayChatCompletionClient([words]), model_client_stream=True)\n"
        "view = await nbagent.show(agent, 'talk')"
    )
    sizes = []
    for count in (1000, 1800):  # both answers long enough for the "expand" toggle, shorter than ANSWER_CHARS
        nb = execute([cell.format(n=count)], kernel_dirs, tmp_path)
        (display,) = nb.cells[0].outputs
        assert display.output_type == "display_data"
        assert f"w{count - 1}</p>" in display.data["text/html"]
        sizes.append(len(display.data["text/html"]))
    text_growth = len(" ".join(f"w{i}" for i in range(1800))) - len(" ".join(f"w{i}" for i in range(1000)))
    # The answer's text grows; the rest differs only by the digits of the token and time figures.
    assert abs(sizes[1] - sizes[0] - text_growth) < 40


def wait_idle(client: object, msg_id: str) -> list[str]:
    """Error names of the execution ``msg_id``, once its kernel is idle again."""
    errors = []
    while True:
        message = next_iopub(client, "the cell to end")
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "error":
            errors.append(message["content"]["ename"])
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return errors


@pytest.fixture
def kernel(kernel_dirs: list[str]) -> Iterator[tuple[KernelManager, object]]:
    with running_kernel(KERNEL, kernel_dirs) as (manager, client):
        yield manager, client


SLOW = """
import asyncio, nbagent, time
import ipywidgets as widgets
from nbagent import AssistantAgent, CancellationToken, ReplayChatCompletionClient, CreateResult, FunctionCall
from nbagent.notebook.view import AgentRunView

async def slow(x: int) -> int:
    "Takes ten minutes."
    print("STARTED", flush=True)
    await asyncio.sleep(600)
    return x

def make(name):
    call = FunctionCall(id="c1", name="slow", arguments='{"x": 1}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
    return AssistantAgent(name, ReplayChatCompletionClient(script), tools=[slow], reflect_on_tool_use=True)

awaited, synced, shown, magic = make("awaited"), make("synced"), make("shown"), make("magic")
view = AgentRunView()

def ended_at(view):
    "The wall-clock time the view's run ended."
    return time.time() - (time.perf_counter() - view._finished_perf)
"""
CONTEXT = (
    "print({name}.is_running, [type(m).__name__ for m in {name}.model_context.messages],"
    " {name}.model_context.messages[-1].content[0].is_error)"
)
VALID = "False ['UserMessage', 'AssistantMessage', 'FunctionExecutionResultMessage'] True\n"


def wait_errors(client: object, msg_id: str) -> list[tuple[str, list[str]]]:
    """(name, traceback lines) of each error of the execution ``msg_id``, once its kernel is idle again."""
    errors = []
    while True:
        message = next_iopub(client, "the cell's errors and its end")
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "error":
            errors.append((message["content"]["ename"], message["content"]["traceback"]))
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return errors


def interrupt_when_started(manager: KernelManager, client: object, code: str) -> list[tuple[str, list[str]]]:
    msg_id = client.execute(code)  # type: ignore[attr-defined]
    wait_for_stdout(client, "STARTED")
    time.sleep(0.3)
    manager.interrupt_kernel()
    return wait_errors(client, msg_id)


def wait_for_stdout(client: object, text: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        message = next_iopub(client, f"{text!r} printed by the cell")
        if message["msg_type"] == "stream" and text in message["content"]["text"]:
            return
    raise TimeoutError(f"{text!r} never printed")


def test_kernel_interrupt_cancels_awaited_and_sync_runs(kernel: tuple[KernelManager, object]) -> None:
    manager, client = kernel
    assert run_code(client, SLOW) == ""

    # An awaited view: the cell ends in one line (RunInterrupted, a CancelledError), the view stays reachable.
    errors = interrupt_when_started(manager, client, "await view.run(awaited, 'go')")
    assert [(name, len(lines)) for name, lines in errors] == [("RunInterrupted", 1)]
    assert errors[0][1][0] == ("RunInterrupted: the run of 'awaited' was interrupted; its view: nbagent.last_view()")
    assert run_code(client, "print(view.status, view.detail)") == "interrupted kernel interrupt\n"
    assert run_code(client, CONTEXT.format(name="awaited")) == VALID

    # `view = await nbagent.show(...)` interrupted: `view` is never assigned; nbagent.last_view() is the view.
    errors = interrupt_when_started(manager, client, "lost = await nbagent.show(shown, 'go')")
    assert [(name, len(lines)) for name, lines in errors] == [("RunInterrupted", 1)]
    assert run_code(client, "print('lost' in dir(), nbagent.last_view().status)") == "False interrupted\n"
    assert run_code(client, CONTEXT.format(name="shown")) == VALID

    # Driven without await: nbagent.run(..., show=True) and %%agent end in one line too.
    errors = interrupt_when_started(manager, client, "nbagent.run(synced, 'go', show=True)")
    assert [(name, len(lines)) for name, lines in errors] == [("RunKeyboardInterrupt", 1)]
    assert errors[0][1][0].startswith("KeyboardInterrupt: the run of 'synced' was interrupted")
    assert run_code(client, CONTEXT.format(name="synced")) == VALID
    run_code(client, "%load_ext nbagent")
    errors = interrupt_when_started(manager, client, "%%agent magic\ngo")
    assert [(name, len(lines)) for name, lines in errors] == [("RunKeyboardInterrupt", 1)]
    assert run_code(client, "print(nbagent.last_view().status)") == "interrupted\n"
    assert run_code(client, CONTEXT.format(name="magic")) == VALID

    # A plain sync run (no view) is interrupted as before.
    errors = interrupt_when_started(manager, client, "again = make('again')\nnbagent.run(again, 'go')")
    assert [name for name, _ in errors] == ["KeyboardInterrupt"]
    assert run_code(client, CONTEXT.format(name="again")) == VALID
    assert run_code(client, "print('still alive')") == "still alive\n"


def test_interrupting_a_wait_stops_the_run_it_waits_for(kernel: tuple[KernelManager, object]) -> None:
    """``await view.wait()`` interrupted: the background run is stopped too (not left streaming with the
    agent busy), the cell ends in one line, and the agent runs again at once."""
    manager, client = kernel
    assert run_code(client, SLOW) == ""
    started = time.monotonic()
    errors = interrupt_when_started(manager, client, "waited = make('waited')\nbg = nbagent.start(waited, 'go')\n"
                                    "await bg.wait()")  # fmt: skip
    assert time.monotonic() - started < 120  # a hang guard: the 600 s tool was not waited for
    assert [(name, len(lines)) for name, lines in errors] == [("RunInterrupted", 1)]
    assert errors[0][1][0] == "RunInterrupted: the run of 'waited' was interrupted; its view: nbagent.last_view()"
    assert run_code(client, "print(bg.status, bg.detail, bg.task.done())") == "interrupted kernel interrupt True\n"
    assert run_code(client, CONTEXT.format(name="waited")) == VALID  # not busy, every tool call answered
    assert run_code(client, "print(waited.run_sync('again').messages[-1].content)") == "done\n"


STOP_CASES = {
    # entry point: (cell that runs it, cell that prints "<name> <status> <time the run ended>")
    "await show": ("v = await nbagent.show(a, 'go')", "print('await show', v.status, ended_at(v))"),
    "start": ("v = nbagent.start(a, 'go')", "await v.wait()\nprint('start', v.status, ended_at(v))"),
    "run(show=True)": ("v = nbagent.run(a, 'go', show=True)", "print('run(show=True)', v.status, ended_at(v))"),
    "%%agent": ("%%agent a\ngo", "v = nbagent.last_view()\nprint('%%agent', v.status, ended_at(v))"),
    "run_sync": (
        "try:\n    a.run_sync('go', cancellation_token=token)\n"
        "except asyncio.CancelledError:\n    stopped = time.time()",
        "print('run_sync', 'cancelled' if 'stopped' in dir() else 'ran', stopped)",
    ),
}
STOP_SETUP = """
a = make('a')
token = CancellationToken()
stop = widgets.Button(description='Stop')  # run_sync has no view: a button of the notebook's cancels its token
stop.on_click(lambda _: token.cancel())
"""


def click_stop(client: object, msg_id: str, button: str | None = None) -> tuple[float, list[str], bool]:
    """Wait for the run's tool to start, click the Stop button (``button``, else the last one the
    cell made): a comm message, as ipywidgets sends it from the browser. The wall-clock time of the
    click, the cell's errors so far and whether it has ended already (a background run's cell)."""
    started, idle, errors = False, False, []
    while button is None or not started:
        message = next_iopub(client, "the tool to start and the Stop button")
        kind, mine = message["msg_type"], message["parent_header"].get("msg_id") == msg_id
        if kind == "comm_open":
            state = message["content"]["data"].get("state", {})
            if state.get("_model_name") == "ButtonModel" and state.get("description") == "Stop":
                button = message["content"]["comm_id"]
        elif kind == "stream" and "STARTED" in message["content"]["text"]:
            started = True
        elif kind == "error" and mine:
            errors.append(message["content"]["ename"])
        elif kind == "status" and mine and message["content"]["execution_state"] == "idle":
            idle = True
    time.sleep(0.3)  # the run waits in its tool
    session = client.session  # type: ignore[attr-defined]
    click = session.msg("comm_msg", {"comm_id": button, "data": {"method": "custom", "content": {"event": "click"}}})
    clicked = time.time()
    client.shell_channel.send(click)  # type: ignore[attr-defined]
    return clicked, errors, idle


@pytest.mark.parametrize("entry", list(STOP_CASES))
def test_stop_ends_the_run_on_every_entry_point(
    kernel: tuple[KernelManager, object], entry: str, record_property: Callable[[str, object], None]
) -> None:
    _, client = kernel
    run_cell, report = STOP_CASES[entry]
    assert run_code(client, SLOW + STOP_SETUP + ("%load_ext nbagent" if entry == "%%agent" else "")) == ""
    button = run_code(client, "display(stop)\nprint(stop.model_id)").strip() if entry == "run_sync" else None
    msg_id = client.execute(run_cell)  # type: ignore[attr-defined]
    clicked, errors, ended_already = click_stop(client, msg_id, button)
    if not ended_already:
        errors += [name for name, _ in wait_errors(client, msg_id)]
    assert errors == []
    name, status, ended = run_code(client, report).rsplit(" ", 2)
    seconds = float(ended) - clicked
    record_property("seconds_to_stop", round(seconds, 3))
    print(f"{entry}: stopped {seconds:.3f} s after the click")
    assert (name, status) == (entry, "cancelled")
    # The 1 s target is a figure (seconds_to_stop, bench/bench_stop_pause.py); this is a hang guard: the
    # tool sleeps 600 s, so a run that ended within 120 s was stopped, not finished.
    assert 0 <= seconds < 120, f"{entry}: the run ended {seconds:.3f} s after the click"
    # The context is valid and the next cell runs a new run to its end.
    assert run_code(client, CONTEXT.format(name="a")) == VALID
    assert run_code(client, "r = await a.run(task='again')\nprint(r.messages[-1].content)") == "done\n"


PAUSE_SETUP = """
import asyncio, time, nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient

def add(a: int, b: int) -> int:
    "Add two integers."
    print("ADDED", flush=True)
    return a + b

def looper():
    calls = [CreateResult(finish_reason="function_calls",
                          content=[FunctionCall(id=f"c{i}", name="add", arguments='{"a": 1, "b": 2}')])
             for i in range(12)]
    client = ReplayChatCompletionClient([*calls, "done"], latency=0.3)
    return AssistantAgent("looper", client, tools=[add], max_tool_iterations=13)

stepper, second = nbagent.step(looper(), "Add up."), nbagent.step(looper(), "Add up.")
display(stepper)
w = stepper.widget()
print(w.run_button.model_id, w.pause_button.model_id)
"""
WATCH = """
async def paused_at():
    while w.busy:
        await asyncio.sleep(0.002)
    return time.time()
watcher = asyncio.ensure_future(paused_at())
"""


CLICK = {"method": "update", "state": {"value": True}, "buffer_paths": []}
"""The comm message of a browser's click on a ``ClickButton`` (the stepper's buttons): its value turned on."""


def send_comm(client: object, comm_id: str, data: dict[str, object]) -> None:
    """A comm message to a widget, as ipywidgets sends it from the browser."""
    session = client.session  # type: ignore[attr-defined]
    client.shell_channel.send(session.msg("comm_msg", {"comm_id": comm_id, "data": data}))  # type: ignore[attr-defined]


def moves_made(client: object, name: str, at_least: int) -> int:
    """The moves the stepper ``name`` has made, once at least ``at_least`` (asked every 0.1 s, 60 s at most;
    between cells: a walk the widget runs goes on in the background)."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        made = int(run_code(client, f"print(len({name}.history))"))
        if made >= at_least:
            return made
        time.sleep(0.1)
    raise AssertionError(f"{name} made fewer than {at_least} moves in 60 s")


def test_pause_and_a_kernel_interrupt_end_run_to_end_at_a_move_boundary(
    kernel: tuple[KernelManager, object], record_property: Callable[[str, object], None]
) -> None:
    """Issue 33.2 in a real kernel: the stepper widget's Pause, clicked (a comm message, as from the
    browser) during "Run to end", leaves the walk paused at a move boundary; a kernel interrupt of
    ``await second.run_to_end()`` ends the cell with one line, the walk paused. How soon (the 1 s target) is
    a figure: ``seconds_to_pause`` here and bench/bench_stop_pause.py; the bounds below are hang guards."""
    manager, client = kernel
    run_button, pause_button = run_code(client, PAUSE_SETUP).split()

    send_comm(client, run_button, CLICK)
    moves_made(client, "stepper", 5)
    assert run_code(client, WATCH + "print(w.busy)") == "True\n"
    clicked = time.time()
    send_comm(client, pause_button, CLICK)  # a ClickButton: the browser's click turns its value on
    report = "paused = await watcher\nprint(stepper.status, len(stepper.history), paused)"
    status, made, paused = run_code(client, report).split()
    paused_in = float(paused) - clicked
    assert (status, 5 <= int(made) < 26) == ("paused", True), (status, made)  # a walk of 26 moves
    assert run_code(client, "print(stepper.moving, w.error)") == "False None\n"

    msg_id = client.execute("await second.run_to_end()")  # type: ignore[attr-defined]
    wait_for_stdout(client, "ADDED")  # the walk is going: the cell runs, so no other cell can ask
    asked = time.time()
    manager.interrupt_kernel()
    errors = wait_errors(client, msg_id)
    interrupted_in = time.time() - asked
    assert [(name, len(lines)) for name, lines in errors] == [("WalkInterrupted", 1)], errors
    assert run_code(client, "print(second.status, second.moving)") == "paused False\n"

    record_property("seconds_to_pause", {"Pause": round(paused_in, 3), "interrupt": round(interrupted_in, 3)})
    print(f"Pause to paused: {paused_in:.3f} s; interrupt to the cell's end: {interrupted_in:.3f} s")
    assert 0 <= paused_in < 30, paused_in
    assert 0 <= interrupted_in < 30, interrupted_in


def test_a_stream_and_its_ticking_status_stay_far_under_the_iopub_limit(
    kernel: tuple[KernelManager, object], record_property: Callable[[str, object], None]
) -> None:
    """jupyter_server drops iopub messages above 1,000/s: the streamed text's coalescer (at most ~22
    updates a second) and the live status (footer and LLM row, at most 4 each a second) stay near 30.
    The messages are timed where they are sent, in the kernel: their arrival here bunches up on a loaded
    machine (a rate measured by arrival once read above 35 a second where the kernel sent 30)."""
    _, client = kernel
    setup = (
        "import time, nbagent, ipywidgets\nfrom nbagent import AssistantAgent, ReplayChatCompletionClient\n"
        "words = ' '.join(f'w{i}' for i in range(1500))\n"
        "client = ReplayChatCompletionClient([words], chunk_delay=0.002)\n"
        "talker = AssistantAgent('talker', client, model_client_stream=True)\n"
        "sent = []\n"
        "Comm = type(ipywidgets.Label().comm)\n"
        "publish = Comm.publish_msg\n"
        "def stamped(self, msg_type, *args, **kwargs):\n"
        "    if msg_type == 'comm_msg':\n"
        "        sent.append(time.monotonic())\n"
        "    return publish(self, msg_type, *args, **kwargs)\n"
        "Comm.publish_msg = stamped"
    )
    assert run_code(client, setup) == ""
    assert run_code(client, "view = await nbagent.show(talker, 'talk')\nComm.publish_msg = publish") == ""
    times = [float(t) for t in run_code(client, "print(*sent)").split()]
    seconds = times[-1] - times[0]
    rate = len(times) / seconds
    # While the text streams (the first and last half second, with the run's start and end, left out):
    middle = [t for t in times if times[0] + 0.5 <= t <= times[-1] - 0.5]
    steady = len(middle) / (seconds - 1)
    record_property("widget_messages_per_second", {"whole run": round(rate, 1), "while streaming": round(steady, 1)})
    print(f"{len(times)} widget messages in {seconds:.2f} s: {rate:.1f} a second, {steady:.1f} while streaming")
    assert seconds > 2 and steady < 35 and rate < 60
    assert run_code(client, "print(view.status, len(view.response.chat_message.content))") == (
        f"ok {len(' '.join(f'w{i}' for i in range(1500)))}\n"
    )


def test_finished_views_close_their_widgets(kernel_dirs: list[str], tmp_path: Path) -> None:
    """After 100 shown runs (awaited and in the background), the widget models alive in the kernel are
    those of the views still running: none (each view's, its children's, layouts' and styles')."""
    count = "import gc, comm\ngc.collect()\nlen(comm.get_comm_manager().comms)"
    cells = [
        SETUP,
        count,
        # Back to back: a run that ends before GO_LIVE_S opens no widget model (one message, its static copy).
        "for i in range(50):\n    await nbagent.show(make(f'shown{i}', 'done'), 'say it')",
        "views = []\nfor i in range(50):\n    views.append(nbagent.start(make(f'bg{i}', 'done'), 'say it'))\n"
        "    await asyncio.sleep(0.1)\n"
        "for view in views:\n    await view.wait()\n{view.status for view in views}",
        count,
        "views[0].to_text().splitlines()[0], len(views[0].to_html()) > 1000",
    ]
    nb = execute(cells, kernel_dirs, tmp_path)
    before, after = (int(result(nb.cells[index])) for index in (1, 4))
    assert result(nb.cells[3]) == "{'ok'}"
    assert after - before == 0, (before, after)
    assert result(nb.cells[5]) == "('bg0 · ok', True)"  # what a closed view showed stays readable


def test_in_voila_finished_views_keep_their_widgets(kernel_dirs: list[str], tmp_path: Path) -> None:
    """Voila's page does not apply a display update made after its cell has ended (measured with voila
    0.5.13, bench/anywidget_probe): a background run's view that closed its widgets there vanished from
    the page. In a kernel where Voila set ``VOILA_KERNEL_ID``, a shown run's view and a batch's progress
    keep their widgets open once they end, showing how they ended; their displays are still updated."""
    cells = [
        "import os\nos.environ['VOILA_KERNEL_ID'] = 'a-voila-kernel'",  # what Voila runs before the notebook
        SETUP
        + "from nbagent.notebook.batch_view import BatchView\nfrom nbagent.notebook.static_display import descendants",
        "view = nbagent.start(make('bg', 'done'), 'say it')\nawait view.wait()\n"
        "print(view.status, view.stop_button.disabled, all(w.comm is not None for w in descendants(view)))",
        "batch = nbagent.Batch(make('b', 'done'), ['say it'] * 2, progress=None)\nprogress = BatchView(batch)\n"
        "await batch.run()\nprogress.finish(batch.progress())\n"
        "print(progress.stop_button.disabled, all(w.comm is not None for w in descendants(progress)))",
    ]
    nb = execute(cells, kernel_dirs, tmp_path)
    assert printed(nb.cells[2]) == "ok True True"
    assert printed(nb.cells[3]) == "True True"
    # The run's output was still replaced by its static copy (what a frontend that applies it shows).
    shown = [output for output in nb.cells[2].outputs if output.output_type == "display_data"]
    assert "application/vnd.jupyter.widget-view+json" not in shown[0].data
    assert "nba-state-ok" in shown[0].data["text/html"]


def test_every_kind_of_view_finishes_as_its_static_copy_with_no_comm_open(
    kernel_dirs: list[str], tmp_path: Path
) -> None:
    """Issue 43.2: one finish path (``static_display.finish``) for a run's view, a batch's progress, a
    stepper, a comparison and an explorer: each live output is replaced by the static copy (or emptied where
    the copy is an output of its own) and no comm of theirs stays open in the kernel. Saved with widget
    state (as nbclient saves), the notebook shows that each went live."""
    count = "import comm\nprint(len(comm.get_comm_manager().comms))"
    cells = [
        SETUP + "slow = AssistantAgent('slow', ReplayChatCompletionClient(['one two three four five six'], "
        "chunk_delay=0.08), model_client_stream=True)",
        count,
        "view = await nbagent.show(slow, 'talk slowly')\nprint(view.status)",
        "batch = nbagent.Batch(make('b'), ['say it'] * 3, progress='widget')\nawait batch.run()\nprint('batch')",
        "stepper = nbagent.step(make('s'), 'say it')\ndisplay(stepper)\nawait stepper.run_to_end()\n"
        "stepper.close_widgets()\nprint(stepper.status)",
        "comparison = nbagent.compare(stepper, slow)\ndisplay(comparison)\ncomparison.close_widgets()",
        "explorer = nbagent.explore(slow.trace, live=False)\ndisplay(explorer)\nexplorer.close()",
        count,
    ]
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in cells])
    execute_notebook(nb, kernel_manager(KERNEL, kernel_dirs), timeout=120, store_widget_state=True)
    errors = [output for cell in nb.cells for output in cell.outputs if output.output_type == "error"]
    assert errors == []
    before, after = int(printed(nb.cells[1])), int(printed(nb.cells[7]))
    assert after == before, (before, after)
    assert (printed(nb.cells[2]), printed(nb.cells[4])) == ("ok", "finished")
    widget_view = "application/vnd.jupyter.widget-view+json"
    for index, copy_class in (
        (2, "nba-view"),
        (3, "nba-batch"),
        (4, "nba-static-copy"),
        (5, "nba-compare-table"),
        (6, "nba-explorer"),
    ):
        shown = [output for output in nb.cells[index].outputs if output.output_type == "display_data"]
        assert shown and not any(widget_view in output.data for output in shown), (index, shown)
        assert any(copy_class in output.data.get("text/html", "") for output in shown), (index, shown)
    models = nb.metadata.get("widgets", {}).get("application/vnd.jupyter.widget-state+json", {}).get("state", {})
    assert len(models) > 10  # they went live (nbclient kept the models it saw open)


def test_views_never_shown_close_their_widgets_too(kernel_dirs: list[str], tmp_path: Path) -> None:
    """Views built and dropped, and views run without ever being displayed (a view run by hand, a stepper
    walked in code, a batch without its progress widget) leave no widget model behind: the models alive in
    the kernel (ipywidgets' registry) are as many after 100 of each as before. A view's widgets open when
    it is first displayed (one displayed view's models are counted too)."""
    count = "import gc, ipywidgets.widgets.widget as w\ngc.collect()\nprint(len(w._instances))"
    cells = [
        SETUP,
        count,
        "for i in range(100):\n    view = nbagent.AgentRunView(f'never shown {i}')\ndel view",
        count,
        "shown = nbagent.AgentRunView('shown')\nshown",
        count,
        "shown.close_widgets()\ndel shown",
        "for i in range(100):\n    view = nbagent.AgentRunView()\n    await view.run(make(f'v{i}', 'done'), 'say it')",
        "for i in range(100):\n    stepper = nbagent.step(make(f's{i}', 'done'), 'say it')\n"
        "    await stepper.run_to_end()",
        "batch = nbagent.Batch(make('b', 'done'), ['say it'] * 100, progress=None)\nawait batch.run()\n"
        "print(view.status, stepper.status, view.to_text().splitlines()[0])",
        count,
    ]
    nb = execute(cells, kernel_dirs, tmp_path)
    before, built, displayed, after = (int(printed(nb.cells[index])) for index in (1, 3, 5, 10))
    print(
        f"widget models alive: {before} before, {built} after 100 views built and dropped, {displayed} with one"
        f" view displayed, {after} after 100 views run, 100 steppers walked, 100 batch runs"
    )
    assert built == before, (before, built)
    assert displayed > before  # displayed, a view's widgets are live
    assert printed(nb.cells[9]) == "ok finished v99 · ok"  # what a closed view showed stays readable
    assert after == before, (before, after)


def test_a_closed_stepper_leaves_no_widget_output(kernel_dirs: list[str], tmp_path: Path) -> None:
    """``stepper.close_widgets()`` (done with a stepper's widget): the output that showed the widget is
    emptied, so the saved notebook names no widget model (a reopened page has none to miss), its models are
    closed, and its static copy still follows moves made in code."""
    count = "import gc, ipywidgets.widgets.widget as w\ngc.collect()\nprint(len(w._instances))"
    cells = [
        SETUP,
        count,
        "stepper = nbagent.step(make('stepped', 'done'), 'say it')\nstepper",
        "await stepper.run_to_end()\nstepper.close_widgets()",
        count,
        "await stepper.reset()\nawait stepper.next()\nprint(stepper.status)",
    ]
    nb = execute(cells, kernel_dirs, tmp_path)
    before, after = (int(printed(nb.cells[index])) for index in (1, 4))
    assert after == before, (before, after)
    shown = nb.cells[2].outputs
    assert not any("application/vnd.jupyter.widget-view+json" in output.get("data", {}) for output in shown)
    copy, live = shown
    assert live.data == {"text/plain": ""}
    assert 'data-index="1"' in copy.data["text/html"] and "nba-static-copy" in copy.data["text/html"]


def _cell_messages(kernel: tuple[KernelManager, Any], code: str) -> list[tuple[float, dict[str, Any]]]:
    """Every IOPub message of the cell ``code``, run after ``SETUP`` (with when it came), until it is idle."""
    _, client = kernel
    assert run_code(client, SETUP) == ""
    msg_id = client.execute(code)
    messages = []
    while True:
        message = client.get_iopub_msg(timeout=120)  # a hang guard: the cell takes seconds
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        messages.append((time.monotonic(), message))
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return messages


@pytest.mark.slow
def test_a_cell_of_many_fast_runs_sends_one_message_a_run(
    kernel: tuple[KernelManager, object], record_property: Callable[[str, object], None]
) -> None:
    """300 runs shown back to back (plain, and a tool call with a streamed answer) that each end before
    ``GO_LIVE_S``: each is one ``display_data``, its static copy with its answer, no widget opened; the
    stylesheet comes once, in the first. Before, a run sent 60-105 counted messages and 100 runs peaked at
    2,023 a second, past jupyter_server's 1,000 (runs were lost, cells stayed at ``[*]``)."""
    code = (
        "plain = lambda i: AssistantAgent(f'p{i}', ReplayChatCompletionClient([f'answer {i}']))\n"
        "for i in range(300):\n"
        "    await nbagent.show(plain(i) if i % 2 else make(f'b{i}', f'answer {i}'), 'say it')"
    )
    messages = _cell_messages(kernel, code)
    counted = [when for when, message in messages if message["msg_type"] not in NOT_COUNTED]
    final: dict[str, dict[str, Any]] = {}  # each output's last state, by its display id
    shown = []
    for _, message in messages:
        if message["msg_type"] in ("display_data", "update_display_data"):
            content = message["content"]
            key = content.get("transient", {}).get("display_id") or str(len(final))
            if message["msg_type"] == "display_data":
                shown.append(content["data"])
            final[key] = content["data"]
    rate = highest_rate(counted)
    record_property("fast_runs", {"counted_per_run": len(counted) / 300, "highest_rate_per_s": round(rate, 1)})
    static = [data for data in shown if "application/vnd.jupyter.widget-view+json" not in data]
    # Each run one output, ending as its static copy; under load a run may last past GO_LIVE_S and go live.
    assert len(shown) == len(final) == 300
    ends = list(final.values())
    assert all(
        f"answer {i}" in data["text/html"] and "nba-state-ok" in data["text/html"] for i, data in enumerate(ends)
    )
    assert len(static) >= 270, len(static)
    assert len(counted) <= 300 + 90 * (300 - len(static)), len(counted)  # a live view: about 90
    assert sum("<style>" in data["text/html"] for data in shown) == 1 and "<style>" in shown[0]["text/html"]
    assert rate < 700, rate


@pytest.mark.slow
def test_a_longer_run_goes_live_then_ends_as_its_static_copy(
    kernel: tuple[KernelManager, object], record_property: Callable[[str, object], None]
) -> None:
    """A run that goes on past ``GO_LIVE_S`` shows its live view (widgets, an enabled Stop button) while it
    runs, then its output is replaced by its static copy and its widget models are closed."""
    code = (
        "slow = AssistantAgent('slow', ReplayChatCompletionClient(['w ' * 100], chunk_delay=0.01), "
        "model_client_stream=True)\n"
        "view = await nbagent.show(slow, 'talk')"
    )
    messages = _cell_messages(kernel, code)
    live = [(when, m) for when, m in messages if m["msg_type"] == "display_data"]
    assert len(live) == 1 and "application/vnd.jupyter.widget-view+json" in live[0][1]["content"]["data"]
    updates = [m for _, m in messages if m["msg_type"] == "update_display_data"]
    assert len(updates) == 1 and set(updates[0]["content"]["data"]) == {"text/html", "text/plain"}
    assert "nba-state-ok" in updates[0]["content"]["data"]["text/html"]
    closed = [m for _, m in messages if m["msg_type"] == "comm_close"]
    opened = [m for _, m in messages if m["msg_type"] == "comm_open"]
    assert len(closed) == len(opened) > 0
    record_property("live_after_s", round(live[0][0] - messages[0][0], 3))  # from the cell's busy status
    record_property("live_run_counted_messages", sum(m["msg_type"] not in NOT_COUNTED for _, m in messages))
