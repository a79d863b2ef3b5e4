"""The tests' kernel clients keep every IOPub message however slowly they read (tests/kernels.py:
``unbounded_queues``), where a client with ZeroMQ's default high-water mark loses some: a loaded CI run
lost a cell's ``idle`` that way and waited 600 s for it."""

from __future__ import annotations

import queue
from typing import Any

import pytest

DISPLAYS = 5_000
"""Displays of one cell: far more than the default marks hold (1,000 queued at each end, and what the
Unix socket buffers)."""


def _displays_until_idle(client: Any, msg_id: str, deadline_s: float) -> tuple[int, bool]:
    """The ``display_data`` messages of cell ``msg_id`` on ``client``'s IOPub, and whether its ``idle``
    came: reading stops at the idle, or when nothing came for ``deadline_s``."""
    displays = 0
    while True:
        try:
            message = client.get_iopub_msg(timeout=deadline_s)
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
        assert (reply["parent_header"]["msg_id"], reply["content"]["status"]) == (msg_id, "ok")
        assert _displays_until_idle(client, msg_id, IOPUB_DEADLINE_S) == (DISPLAYS, True)
