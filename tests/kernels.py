"""A real Jupyter kernel for the tests: its kernelspec, its manager, a started kernel, code run in it."""

from __future__ import annotations

import json
import queue
import sys
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pytest
import zmq
from jupyter_client.asynchronous import AsyncKernelClient
from jupyter_client.blocking import BlockingKernelClient
from jupyter_client.client import KernelClient
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager, KernelManager

from nbagent.notebook.saved import prune_widget_state

if TYPE_CHECKING:  # nbformat is imported where it is used: 3 s, paid by every worker collecting the file
    import nbformat

KernelClientT = TypeVar("KernelClientT", bound=KernelClient)

SLOW_AGENT = """
import asyncio, nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient

async def slow(x: int) -> int:
    "Takes a minute."
    print("STARTED", flush=True)
    await asyncio.sleep(60)
    return x

def make(name):
    call = FunctionCall(id="c1", name="slow", arguments='{"x": 1}')
    script = [CreateResult(finish_reason="function_calls", content=[call]), "done"]
    return AssistantAgent(name, ReplayChatCompletionClient(script), tools=[slow])
"""
"""Kernel code: ``make(name)``, an agent whose one tool call sleeps a minute (printing ``STARTED`` as it begins):
what Stop, Pause and interrupts are tried on."""


def kernel_dirs(tmp_path_factory: pytest.TempPathFactory, name: str, display_name: str) -> list[str]:
    """A kernelspec ``name`` for this interpreter (no OpenAI key in its environment), in a folder of its own."""
    folder = tmp_path_factory.mktemp("kernels") / name
    folder.mkdir()
    spec = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name,
        "language": "python",
        "env": {"OPENAI_API_KEY": ""},
    }
    (folder / "kernel.json").write_text(json.dumps(spec))
    return [str(folder.parent)]


KERNEL_TRANSPORT = "ipc"
"""How the tests' kernels talk to their clients: ZeroMQ over Unix sockets. Over TCP jupyter_client picks
each kernel's five ports by binding port 0 and closing the socket, and the kernel binds them a moment
later; meanwhile any process may take the port (an outgoing connection's ephemeral port is drawn from the
same range). A CI run saw it: a kernel died with ``Address already in use`` before its first reply. The
JupyterLab servers of the browser tests are given the same transport (``tests/browser/conftest.py``)."""


CHANNELS = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
"""A kernel's five channels, as its connection file names them (over IPC, socket ``{ip}-{port}`` each)."""


def ipc_prefix_fits(prefix: str, whose: str) -> str:
    """``prefix``, if the paths of its kernel's sockets (``prefix-1`` and up) fit in a Unix socket address;
    else a RuntimeError naming ``whose`` sockets they are and the way out (a shorter TMPDIR)."""
    longest = len(f"{prefix}-99".encode())
    if longest > zmq.IPC_PATH_MAX_LEN:
        raise RuntimeError(
            f"{whose}: kernel socket paths of {longest} bytes ({prefix}-N) pass the {zmq.IPC_PATH_MAX_LEN} a "
            "Unix socket address holds: set TMPDIR to a shorter folder"
        )
    return prefix


def ipc_address() -> str:
    """A new absolute prefix for one kernel's Unix sockets (jupyter_client adds ``-1`` to ``-5``; it removes
    them at shutdown): absolute, as the kernel's working folder is the notebook's, not the test's."""
    return ipc_prefix_fits(f"{tempfile.gettempdir()}/nbagent-kernel-{uuid.uuid4().hex[:16]}", "a test's kernel")


def unbounded_queues(client: KernelClientT) -> KernelClientT:
    """``client`` with no high-water mark on the sockets it will open, so that a slow reader loses no IOPub.

    A kernel publishes IOPub on a ZeroMQ XPUB socket, which drops a message, silently, when its queue to a
    subscriber is full: 1,000 messages at each end by default (neither ipykernel nor jupyter_client sets a
    mark), the subscriber's backing up into the kernel's. A reader slower than the kernel then loses
    messages: measured idle, a cell of 50 background views sends 4,054 IOPub messages, and a reader taking
    10 ms a message received 2,261 of them (27 of 50 ``display_data``). Under load the lost one can be the
    cell's ``idle``; nbclient then waits for it until its IOPub deadline (a loaded CI pair: 600 s). With no
    mark on the client, its ZeroMQ I/O thread keeps taking the messages off the socket while the test reads
    the ones before, so the kernel's queue stays short; the same reader received all 4,054. (A client
    process stopped outright, its I/O thread too, still loses what passes the kernel's 1,000.) The option
    is the default of the client's own context for new sockets, so it is set before ``start_channels``."""
    client.context.setsockopt(zmq.RCVHWM, 0)
    return client


class LosslessKernelManager(KernelManager):
    """A blocking kernel manager whose clients have no high-water mark (:func:`unbounded_queues`)."""

    def client(self, **kwargs: Any) -> BlockingKernelClient:
        return unbounded_queues(super().client(**kwargs))


class LosslessAsyncKernelManager(AsyncKernelManager):
    """An asynchronous kernel manager (nbclient's) whose clients have no high-water mark."""

    def client(self, **kwargs: Any) -> AsyncKernelClient:  # type: ignore[override]  # as jupyter_client's
        return unbounded_queues(super().client(**kwargs))


def kernel_manager(name: str, dirs: list[str] | None = None) -> KernelManager:
    """A manager of the kernelspec ``name`` found in ``dirs`` (None: Jupyter's own kernelspec folders), its
    kernel on :data:`KERNEL_TRANSPORT`, its clients with no high-water mark: what each test that starts a
    kernel starts it with (this module's :func:`running_kernel`, :func:`execute_notebook` and the tests
    themselves)."""
    specs = KernelSpecManager() if dirs is None else KernelSpecManager(kernel_dirs=dirs)
    return LosslessKernelManager(
        kernel_name=name, kernel_spec_manager=specs, transport=KERNEL_TRANSPORT, ip=ipc_address()
    )


IOPUB_DEADLINE_S = 600.0
"""How long a test waits for a kernel's next IOPub message, and nbclient for the rest of a cell's output
after its reply: a hang guard. 60 s was once overrun by a cell of 50 ``nbagent.show`` calls at a load
average of 18-21 (issue 45), where it passed alone; 180 s by a cell of 50 background views on a machine 2.4
times slower than usual beside a second full run (load about 23), taken then for slowness. The 600 s a
later loaded run overran on that cell was a lost ``idle`` (:func:`unbounded_queues`); the 180 s may have
been too. A ``kernel`` test gets
``MARKER_TIMEOUT_S["kernel"]`` (tests/conftest.py), above this."""
IOPUB_OPTIONS: dict[str, Any] = {"iopub_timeout": IOPUB_DEADLINE_S, "raise_on_iopub_timeout": True}
"""How long nbclient reads a cell's IOPub output after the cell's execute reply, and an error past it. Its
default, 4 s then a warning, drops the rest of the cell's output: under load a cell that showed 50 runs
(about 160 widget messages each) still had more than 4 s of IOPub to read, and lost its last print (seen
in two CI runs at a load average of 13)."""


def next_iopub(client: Any, waiting_for: str) -> dict[str, Any]:
    """The kernel's next IOPub message; none within :data:`IOPUB_DEADLINE_S`: an AssertionError that says
    what the test was waiting for."""
    try:
        return client.get_iopub_msg(timeout=IOPUB_DEADLINE_S)
    except queue.Empty:
        raise AssertionError(
            f"no IOPub message from the kernel in {IOPUB_DEADLINE_S:g} s: waiting for {waiting_for}"
        ) from None


def execute_notebook(nb: nbformat.NotebookNode, manager: KernelManager, **options: Any) -> nbformat.NotebookNode:
    """Run every cell of ``nb`` in a new kernel of ``manager``'s kernelspec (``options``: NotebookClient's,
    after :data:`IOPUB_OPTIONS`), then shut that kernel down (nbclient leaves running a kernel whose manager
    it was given). nbclient is given an asynchronous manager, as it makes itself: with a blocking one its
    waits for IOPub block its loop and its timeouts never fire (a lost message hung a test until pytest's
    timeout). nbclient is imported here: it loads nbformat whole (3 s), which the fast tier's files that import
    this module never need."""
    from nbclient import NotebookClient

    NotebookClient(nb, km=nbclient_manager(manager), **{**IOPUB_OPTIONS, **options}).execute(cleanup_kc=True)
    return nb


def nbclient_manager(manager: KernelManager) -> LosslessAsyncKernelManager:
    """The asynchronous manager :func:`execute_notebook` gives nbclient: ``manager``'s kernelspec and
    transport, a fresh socket prefix, clients with no high-water mark."""
    return LosslessAsyncKernelManager(
        kernel_name=manager.kernel_name,
        kernel_spec_manager=manager.kernel_spec_manager,
        transport=manager.transport,
        ip=ipc_address() if manager.transport == "ipc" else manager.ip,
    )


def save_notebook(nb: nbformat.NotebookNode, path: Path) -> None:
    """Write ``nb`` to ``path`` as nbagent saves a notebook nbclient ran: without the widget models no output
    shows (:func:`nbagent.notebook.saved.prune_widget_state`: nbclient keeps the closed ones too)."""
    import nbformat

    nbformat.write(nb, path)
    prune_widget_state(path)


def execute_cells(
    cells: list[str], manager: KernelManager, saved: Path, failing: frozenset[int] = frozenset()
) -> nbformat.NotebookNode:
    """A notebook of ``cells`` run in a kernel of ``manager`` (cwd: ``saved``'s folder), as JupyterLab saves it
    by default (no widget state: nbconvert and GitHub then show text/html), written to ``saved`` and read back.
    The cells of ``failing`` are tagged ``raises-exception``: Run All goes on past them."""
    import nbformat

    nb = nbformat.v4.new_notebook(
        cells=[
            nbformat.v4.new_code_cell(source, metadata={"tags": ["raises-exception"]} if index in failing else {})
            for index, source in enumerate(cells)
        ]
    )
    execute_notebook(
        nb, manager, timeout=120, store_widget_state=False, resources={"metadata": {"path": str(saved.parent)}}
    )
    save_notebook(nb, saved)
    return nbformat.read(saved, as_version=4)


@contextmanager
def running_kernel(name: str, dirs: list[str] | None) -> Iterator[tuple[KernelManager, Any]]:
    """A started kernel and its ready client, shut down on exit."""
    manager = kernel_manager(name, dirs)
    manager.start_kernel()
    client = manager.client()
    client.start_channels()
    client.wait_for_ready(timeout=IOPUB_DEADLINE_S)
    try:
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run_code(client: Any, code: str) -> str:
    """Run ``code`` in the kernel: what it printed, and each error as ``name: value``, once it is idle."""
    msg_id = client.execute(code)
    text = []
    while True:
        message = next_iopub(client, f"the end of the cell {code[:60]!r}")
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "stream":
            text.append(message["content"]["text"])
        if message["msg_type"] == "error":
            text.append(f"{message['content']['ename']}: {message['content']['evalue']}")
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return "".join(text)


NOT_COUNTED = frozenset({"status", "comm_open", "execute_input"})
"""The IOPub messages jupyter_server's rate limit (``iopub_msg_rate_limit``) does not count (its
``_limit_rate`` skips them)."""


def highest_rate(times: list[float], window: float = 3.0) -> float:
    """The most of ``times`` (sorted) in any ``window`` seconds, a second: what jupyter_server's rate limit
    measures over its ``rate_limit_window`` (3 s)."""
    most, first = 0, 0
    for last, now in enumerate(times):
        while times[first] < now - window:
            first += 1
        most = max(most, last - first + 1)
    return most / window
