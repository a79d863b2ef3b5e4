"""Every kernel the tests start talks over Unix sockets (tests/kernels.py: ``KERNEL_TRANSPORT``), never TCP
ports jupyter_client picked and released (a CI run lost a kernel to ``Address already in use``)."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

import pytest

pytest.importorskip("jupyter_client")
pytest.importorskip("nbclient")

from .kernels import KERNEL_TRANSPORT, kernel_manager, run_code, running_kernel  # noqa: E402

TESTS = Path(__file__).resolve().parent
STARTS_A_KERNEL = re.compile(r"\b(?:(?:Async)?KernelManager|NotebookClient|start_new_kernel|ExecutePreprocessor)\(")
"""What makes a kernel (or a manager that makes one) outside tests/kernels.py."""
SUN_PATH_MAX = 107
"""The longest Unix socket path Linux takes (``sun_path`` is 108 bytes with its NUL)."""


def test_kernels_are_made_in_one_place_and_the_servers_kernels_use_unix_sockets() -> None:
    elsewhere = [
        f"{path.relative_to(TESTS)}:{number}"
        for path in TESTS.rglob("*.py")
        if path.name != "kernels.py" and path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if STARTS_A_KERNEL.search(line)
    ]
    assert elsewhere == [], f"a kernel made outside tests/kernels.py (use kernel_manager): {elsewhere}"
    assert '"--KernelManager.transport={KERNEL_TRANSPORT}"' in (TESTS / "browser" / "conftest.py").read_text()


def test_each_manager_has_its_own_absolute_socket_prefix_short_enough_for_linux() -> None:
    first, second = kernel_manager("python3"), kernel_manager("python3", ["/nowhere"])
    assert first.transport == second.transport == KERNEL_TRANSPORT == "ipc"
    assert first.ip != second.ip
    for manager in (first, second):
        assert os.path.isabs(manager.ip)  # the kernel's working folder is the notebook's
        assert len(f"{manager.ip}-99".encode()) <= SUN_PATH_MAX


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
    """The five channels of the connection file are Unix sockets the kernel itself holds. (Its IOPub pipe, a
    TCP port on 127.0.0.1, is no such race: the kernel binds it itself, retrying a port taken.)"""
    with running_kernel("python3", None) as (manager, client):
        info = manager.get_connection_info()
        names = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
        paths = [f"{info['ip']}-{info[name]}" for name in names]  # type: ignore[literal-required]
        assert info["transport"] == "ipc"
        assert all(stat.S_ISSOCK(os.stat(path).st_mode) for path in paths)
        assert run_code(client, "print(6 * 7)") == "42\n"
        listeners, held = _unix_listeners(), _socket_inodes(manager.provisioner.pid)  # type: ignore[union-attr]
        assert [path for path in paths if listeners.get(path) not in held] == []
    assert [path for path in paths if os.path.exists(path)] == []  # removed at shutdown
