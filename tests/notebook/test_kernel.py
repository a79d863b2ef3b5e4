"""The view in a real kernel: Run All never hangs, the saved notebook and its HTML export show the
finished run, the saved size does not grow with the number of chunks, interrupts cancel."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import KernelManager
from nbclient import NotebookClient
from nbconvert import HTMLExporter

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
    folder = tmp_path_factory.mktemp("kernels") / KERNEL
    folder.mkdir()
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "nbagent notebook tests",
        "language": "python",
        "env": {"OPENAI_API_KEY": ""},
    }
    (folder / "kernel.json").write_text(json.dumps(spec))
    return [str(folder.parent)]


def kernel_manager(kernel_dirs: list[str]) -> KernelManager:
    return KernelManager(kernel_name=KERNEL, kernel_spec_manager=KernelSpecManager(kernel_dirs=kernel_dirs))


def execute(
    cells: list[str], kernel_dirs: list[str], tmp_path: Path, failing: frozenset[int] = frozenset()
) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(source, metadata={"tags": ["raises-exception"]} if index in failing else {})
            for index, source in enumerate(cells)
        ]
    )
    # JupyterLab saves no widget state by default; then nbconvert and GitHub use text/html.
    NotebookClient(
        nb,
        km=kernel_manager(kernel_dirs),
        timeout=120,
        store_widget_state=False,
        resources={"metadata": {"path": str(tmp_path)}},
    ).execute()
    path = tmp_path / "run.ipynb"
    nbformat.write(nb, path)
    return nbformat.read(path, as_version=4)


def outputs(cell: nbformat.NotebookNode) -> list[tuple[str, str]]:
    """(output type, plain text) of each output of a cell."""
    found = []
    for output in cell.outputs:
        if output.output_type == "stream":
            found.append((output.name, output.text))
        elif output.output_type == "error":
            found.append(("error", f"{output.ename}: {output.evalue}"))
        else:
            found.append((output.output_type, output.data.get("text/plain", "")))
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
        assert set(display.data) == {"text/plain", "text/html", "application/vnd.jupyter.widget-view+json"}
        html = display.data["text/html"]
        assert html.startswith('<div class="nba-view nba-state-ok">')
        assert "<p>The <strong>answer</strong> is 3.</p>" in html
        assert 'data-metric="llm_calls" data-value="2"' in html
        assert 'data-metric="tool_calls" data-value="1"' in html
        assert "&lt;img src=x onerror=alert(1)&gt;" in html and "<img" not in html


def test_html_export_shows_the_finished_run(run_all: nbformat.NotebookNode) -> None:
    body, _ = HTMLExporter().from_notebook_node(run_all)
    assert body.count('<div class="nba-view nba-state-ok">') == 3
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
    for count in (10, 5000):
        nb = execute([cell.format(n=count)], kernel_dirs, tmp_path)
        (display,) = nb.cells[0].outputs
        assert display.output_type == "display_data"
        assert f"w{count - 1}</p>" in display.data["text/html"]
        sizes.append(len(display.data["text/html"]))
    text_growth = len(" ".join(f"w{i}" for i in range(5000))) - len(" ".join(f"w{i}" for i in range(10)))
    # The answer's text grows; the rest differs only by the digits of the token and time figures.
    assert 0 <= sizes[1] - sizes[0] - text_growth < 40


def wait_idle(client: object, msg_id: str) -> list[str]:
    """Error names of the execution ``msg_id``, once its kernel is idle again."""
    errors = []
    while True:
        message = client.get_iopub_msg(timeout=60)  # type: ignore[attr-defined]
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "error":
            errors.append(message["content"]["ename"])
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return errors


def run_code(client: object, code: str) -> str:
    msg_id = client.execute(code)  # type: ignore[attr-defined]
    text = []
    while True:
        message = client.get_iopub_msg(timeout=60)  # type: ignore[attr-defined]
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "stream":
            text.append(message["content"]["text"])
        if message["msg_type"] == "error":
            text.append(f"{message['content']['ename']}: {message['content']['evalue']}")
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(text)


@pytest.fixture
def kernel(kernel_dirs: list[str]) -> Iterator[object]:
    manager = kernel_manager(kernel_dirs)
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=60)
    yield manager, client
    client.stop_channels()
    manager.shutdown_kernel(now=True)


SLOW = """
import asyncio, nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient, CreateResult, FunctionCall
from nbagent.notebook.view import AgentRunView

async def slow(x: int) -> int:
    "Takes a minute."
    await asyncio.sleep(60)
    return x

def make(name):
    call = FunctionCall(id="c1", name="slow", arguments='{"x": 1}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
    return AssistantAgent(name, ReplayChatCompletionClient(script), tools=[slow], reflect_on_tool_use=True)

awaited, synced = make("awaited"), make("synced")
view = AgentRunView()
"""
CONTEXT = (
    "print({name}.is_running, [type(m).__name__ for m in {name}.model_context.messages],"
    " {name}.model_context.messages[-1].content[0].is_error)"
)


def test_kernel_interrupt_cancels_awaited_and_sync_runs(kernel: tuple[KernelManager, object]) -> None:
    manager, client = kernel
    assert run_code(client, SLOW) == ""

    msg_id = client.execute("await view.run(awaited, 'go')")  # type: ignore[attr-defined]
    time.sleep(1.5)
    manager.interrupt_kernel()
    assert wait_idle(client, msg_id) == ["CancelledError"]
    assert run_code(client, "print(view.status)") == "cancelled\n"
    assert run_code(client, CONTEXT.format(name="awaited")) == (
        "False ['UserMessage', 'AssistantMessage', 'FunctionExecutionResultMessage'] True\n"
    )

    msg_id = client.execute("nbagent.run(synced, 'go')")  # type: ignore[attr-defined]
    time.sleep(1.5)
    manager.interrupt_kernel()
    assert wait_idle(client, msg_id) == ["KeyboardInterrupt"]
    assert run_code(client, CONTEXT.format(name="synced")) == (
        "False ['UserMessage', 'AssistantMessage', 'FunctionExecutionResultMessage'] True\n"
    )
    assert run_code(client, "print('still alive')") == "still alive\n"
