"""What the notebook layer does to ipykernel while a cell drives the event loop itself.

:func:`comms_meanwhile` is registered (by ``nbagent`` at import) as a "while driving" hook of
:func:`nbagent.sync.run_coroutine`, so that a sync run's Stop button works; :func:`in_kernel` tells
the batch whether its progress widget can show.
"""

from __future__ import annotations

import asyncio
import contextvars
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["comms_meanwhile", "in_kernel"]

_COMMS = frozenset({"comm_open", "comm_msg", "comm_close"})


def in_kernel() -> bool:
    """Whether this code runs in an IPython kernel (IPython is not imported if nothing else did)."""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


@contextmanager
def comms_meanwhile(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    """Dispatch the kernel's comm messages while a cell drives ``loop`` with ``run_until_complete``.

    ipykernel 7 runs every shell message in one shared ``Context``, entered while the cell runs;
    nest-asyncio2 defers the handles of an entered ``Context`` until the nested run ends, so a
    click would be handled after the run. Meanwhile comm messages run in a copy of the shell's
    context, as ipykernel itself dispatches them during an awaiting cell (``shell_main``, which
    restores the cell's parent header afterwards); other messages go their usual way. Outside
    ipykernel 7's main-thread shell (another kernel, another thread's loop) nothing changes.
    """
    kernel: Any = None
    try:
        from IPython import get_ipython

        kernel = getattr(get_ipython(), "kernel", None)
        io_loop = getattr(kernel, "io_loop", None)
        # ipykernel 7's internals: no public way to reach the shell channel's stream (see above).
        stream: Any = kernel.shell_channel_thread.manager._shell_channel_to_main.to_stream  # noqa: SLF001 ipykernel
        original = stream._recv_callback  # noqa: SLF001 ipykernel internals
        copy = stream._recv_copy  # noqa: SLF001 ipykernel internals
        usable = io_loop is not None and io_loop.asyncio_loop is loop and original is not None
    except Exception:  # not in a kernel, or a kernel built otherwise
        usable = False
    if not usable:
        yield
        return

    def receive(message: Any) -> Any:
        try:
            _, frames = kernel.session.feed_identities(message, copy=False)
            kind = kernel.session.deserialize(frames, content=False, copy=False)["header"]["msg_type"]
        except Exception:
            kind = None
        if kind not in _COMMS:
            return original(message)
        context = getattr(kernel, "_shell_context", None)
        context = context.copy() if isinstance(context, contextvars.Context) else contextvars.copy_context()
        return loop.create_task(kernel.shell_main(None, message), context=context)

    stream.on_recv(receive, copy=copy)
    try:
        yield
    finally:
        stream.on_recv(original, copy=copy)
