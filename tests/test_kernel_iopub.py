"""The tests' kernel clients have no ZeroMQ high-water mark (tests/kernels.py: ``unbounded_queues``), so a
reader far behind the kernel still gets every IOPub message, where a client with the default mark loses
some: a loaded CI run lost a cell's ``idle`` that way and waited 600 s for it."""

from __future__ import annotations

import queue
from typing import Any

import pytest

DISPLAYS = 5_000
"""Displays of one cell: far more than the default marks hold (1,000 queued at each end, and what the
Unix socket buffers)."""
READ_DEADLINE_S = 120.0
"""How long the test waits for each next message once the cell has replied: a hang guard (every display
is then in a queue)."""


def _displays_until_idle(client: Any, msg_id: str) -> tuple[int, bool]:
    """The ``display_data`` messages of cell ``msg_id`` on ``client``'s IOPub, and whether its ``idle``
    came: reading stops at the idle, or when nothing came for :data:`READ_DEADLINE_S`."""
    displays = 0
    while True:
        try:
            message = client.get_iopub_msg(timeout=READ_DEADLINE_S)
        except queue.Empty:
            return displays, False
        if message["parent_header"].get("msg_id") != msg_id:
            continue
        if message["msg_type"] == "display_data":
            displays += 1
        if message["msg_type"] == "status" and message["content"]["execution_state"] == "idle":
            return displays, True


@pytest.mark.kernel
def test_a_client_that_reads_after_the_cell_still_gets_every_message() -> None:
    """A cell displays 5,000 values; the test reads its IOPub only once the cell has replied, as a reader
    far behind would. The tests' client gets every display and the idle. (Without ``unbounded_queues`` the
    same test received 1,994 of them and no idle (measured by hand, idle): the drop this guards against.)"""
    from .kernels import IOPUB_DEADLINE_S, running_kernel

    with running_kernel("python3", None) as (_, client):
        msg_id = client.execute(f"from IPython.display import display\nfor i in range({DISPLAYS}):\n display(i)")
        reply = client.get_shell_msg(timeout=IOPUB_DEADLINE_S)
        while reply["parent_header"].get("msg_id") != msg_id:  # a late reply to wait_for_ready's kernel_info
            reply = client.get_shell_msg(timeout=IOPUB_DEADLINE_S)
        assert reply["content"]["status"] == "ok"
        assert _displays_until_idle(client, msg_id) == (DISPLAYS, True)


def test_the_clients_nbclient_and_the_tests_make_have_no_high_water_mark() -> None:
    """Both managers of tests/kernels.py, the blocking one (``kernel_manager``) and nbclient's asynchronous
    one (``execute_notebook``), give their clients a context whose new sockets have no receive mark."""
    pytest.importorskip("nbclient")
    import zmq

    from .kernels import kernel_manager, nbclient_manager

    for manager in (kernel_manager("python3"), nbclient_manager(kernel_manager("python3"))):
        client = manager.client()
        try:
            assert client.context.getsockopt(zmq.RCVHWM) == 0, type(manager).__name__
        finally:
            client.context.destroy(linger=0)
