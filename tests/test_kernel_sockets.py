"""Every kernel the tests start talks over Unix sockets (tests/kernels.py: ``KERNEL_TRANSPORT``), never TCP
ports jupyter_client picked and released (a CI run lost a kernel to ``Address already in use``). The browser
tests' JupyterLab server is checked in tests/browser/test_harness.py."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
STARTS_A_KERNEL = re.compile(
    r"\b(?:\w*KernelManager|NotebookClient|ExecutePreprocessor|start_new_(?:async_)?kernel|run_kernel)\("
    r"|\b(?:nbclient|papermill)\.execute|[\"'](?:--execute|execute|papermill)[\"']"
)
"""What starts a kernel (or makes a manager or client that does), in code or in a command line: a Python
kernel manager or client of any kind, nbclient's and papermill's entry points, ``jupyter nbconvert
--execute``, ``jupyter execute`` and ``papermill`` as a child process."""


def test_kernels_are_made_in_tests_kernels_alone() -> None:
    """No test file makes a kernel but through tests/kernels.py (its ``kernel_manager``)."""
    exempt = {TESTS / "kernels.py", Path(__file__).resolve()}
    elsewhere = [
        f"{path.relative_to(TESTS)}:{number}: {line.strip()}"
        for path in sorted(TESTS.rglob("*.py"))
        if path not in exempt
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if not line.lstrip().startswith("#") and STARTS_A_KERNEL.search(line)
    ]
    assert elsewhere == [], "a kernel made outside tests/kernels.py (use its kernel_manager):\n" + "\n".join(elsewhere)


@pytest.mark.parametrize(
    "line",
    [
        "km = AsyncIOLoopKernelManager(kernel_name='python3')",
        "with MultiKernelManager() as m:",
        "km, kc = start_new_async_kernel()",
        "NotebookClient(nb).execute()",
        "nbclient.execute(nb)",
        'subprocess.run(["jupyter", "nbconvert", "--execute", path])',
        'subprocess.run(["jupyter", "execute", path])',
        'subprocess.run(["papermill", source, target])',
    ],
)
def test_the_scan_knows_each_way_to_start_a_kernel(line: str) -> None:
    assert STARTS_A_KERNEL.search(line)


def test_the_scan_lets_kernelspecs_and_exports_be() -> None:
    for line in (
        "KernelSpecManager(kernel_dirs=dirs)",
        "HTMLExporter().from_notebook_node(nb)",
        "client.execute(code)",
    ):
        assert not STARTS_A_KERNEL.search(line), line


def test_each_kernel_gets_its_own_absolute_prefix_and_a_long_one_is_refused_by_name() -> None:
    pytest.importorskip("jupyter_client")
    from .kernels import KERNEL_TRANSPORT, ipc_prefix_fits, kernel_manager

    first, second = kernel_manager("python3"), kernel_manager("python3", ["/nowhere"])
    assert first.transport == second.transport == KERNEL_TRANSPORT == "ipc"
    assert first.ip != second.ip and os.path.isabs(first.ip)  # the kernel's working folder is the notebook's
    assert ipc_prefix_fits("/tmp/k", "a short one") == "/tmp/k"
    with pytest.raises(RuntimeError, match=r"^the lab server: kernel socket paths of 213 bytes .* set TMPDIR"):
        ipc_prefix_fits("/" + "x" * 209, "the lab server")


def _unix_listeners() -> dict[str, str]:
    """The path of each bound Unix socket in ``/proc/net/unix``, with its inode."""
    rows = (line.split() for line in Path("/proc/net/unix").read_text().splitlines()[1:])
    return {row[7]: row[6] for row in rows if len(row) == 8}


def _socket_inodes(pid: int) -> set[str]:
    """The inodes of the sockets process ``pid`` holds open."""
    links = (os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir())
    return {link[len("socket:[") : -1] for link in links if link.startswith("socket:[")}


@pytest.mark.kernel
@pytest.mark.skipif(not Path("/proc/net/unix").exists(), reason="reads Linux's /proc")
def test_a_started_kernel_holds_its_five_channels_on_unix_sockets() -> None:
    """The five channels of the connection file are Unix sockets the kernel itself holds, removed at its
    shutdown. (Its IOPub pipe, ``tcp://127.0.0.1:*``, has no such gap: the system picks that port in the bind.)"""
    from .kernels import CHANNELS, run_code, running_kernel

    with running_kernel("python3", None) as (manager, client):
        info = manager.get_connection_info()
        paths = [f"{info['ip']}-{info[name]}" for name in CHANNELS]  # type: ignore[literal-required]
        assert info["transport"] == "ipc"
        assert all(stat.S_ISSOCK(os.stat(path).st_mode) for path in paths)
        assert run_code(client, "print(6 * 7)") == "42\n"
        listeners, held = _unix_listeners(), _socket_inodes(manager.provisioner.pid)  # type: ignore[union-attr]
        assert [path for path in paths if listeners.get(path) not in held] == []
    assert [path for path in paths if os.path.exists(path)] == []


@pytest.mark.kernel
def test_a_notebook_run_by_nbclient_runs_in_a_kernel_on_unix_sockets(tmp_path: Path) -> None:
    """``execute_notebook`` (the path of every notebook test) starts its own manager: its kernel too is on
    Unix sockets, in the notebook's folder as its working folder, and leaves no socket behind."""
    nbformat = pytest.importorskip("nbformat")
    from .kernels import CHANNELS, execute_notebook, kernel_manager

    cell = (
        "import ipykernel, json, os\n"
        "info = ipykernel.get_connection_info(unpack=True)\n"
        "print(json.dumps([{k: v for k, v in info.items() if k != 'key'}, os.getcwd()]))"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell)])
    execute_notebook(nb, kernel_manager("python3"), timeout=120, resources={"metadata": {"path": str(tmp_path)}})
    info, cwd = json.loads(nb.cells[0].outputs[0]["text"])
    assert (info["transport"], cwd) == ("ipc", str(tmp_path))
    assert os.path.isabs(info["ip"])
    assert [name for name in CHANNELS if os.path.exists(f"{info['ip']}-{info[name]}")] == []
