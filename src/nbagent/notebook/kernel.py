"""What the notebook layer does to ipykernel while a cell drives the event loop itself.

:func:`comms_meanwhile` is registered (by ``nbagent`` at import) as a "while driving" hook of
:func:`nbagent.sync.run_coroutine`, so that a sync run's Stop button works; :func:`in_kernel` tells
the batch whether its progress widget can show.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
import signal
import socket
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["comms_meanwhile", "in_kernel", "in_voila", "wake_on_signals"]

_COMMS = frozenset({"comm_open", "comm_msg", "comm_close"})


def in_kernel() -> bool:
    """Whether this code runs in an IPython kernel (IPython is not imported if nothing else did)."""
    if "IPython" not in sys.modules:
        return False
    from IPython import get_ipython

    return getattr(get_ipython(), "kernel", None) is not None


def in_voila() -> bool:
    """Whether this kernel serves a Voila page (Voila sets ``VOILA_KERNEL_ID`` in it before any cell runs).

    Voila's page does not apply a display update made after its cell has ended (measured with voila
    0.5.13, by default and with progressive rendering): a background run's view is never replaced by
    its static copy there, so it keeps its widgets, which show how the run ended.
    """
    return "VOILA_KERNEL_ID" in os.environ


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


_WAKER: list[socket.socket] = []  # the socket pair of wake_on_signals, kept open while the kernel lives


def wake_on_signals() -> bool:
    """Wake the kernel's event loop as soon as a signal arrives: a kernel interrupt then acts at once.

    ipykernel 7 turns a kernel interrupt of an awaiting cell into a cancellation of the cell's task,
    from its SIGINT handler; the handler runs only when the main thread next runs Python code. The
    signal may reach another of the kernel's threads, and the main thread sleeps in its event loop
    until a timer or a message wakes it: ``await agent.run(...)`` over a tool that sleeps 60 s took
    60 s to be interrupted. Here the C-level signal handler writes to a socket the loop watches
    (``signal.set_wakeup_fd``, what asyncio's own ``add_signal_handler`` does), which wakes the loop.
    Done once, from the main thread, with a running loop, and only if no wakeup fd is set already;
    returns whether it is in place.
    """
    if _WAKER:
        return True
    if threading.current_thread() is not threading.main_thread():
        return False
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return False
    reader, writer = socket.socketpair()
    reader.setblocking(False)
    writer.setblocking(False)
    try:
        previous = signal.set_wakeup_fd(writer.fileno(), warn_on_full_buffer=False)
    except (ValueError, OSError):
        previous = None
    if previous != -1:  # another wakeup fd is set (or none can be): leave it
        if previous is not None:
            signal.set_wakeup_fd(previous)
        reader.close()
        writer.close()
        return False
    try:
        loop.add_reader(reader.fileno(), _drain, reader)
    except (NotImplementedError, RuntimeError):  # a loop that watches no file descriptors (Windows' proactor)
        signal.set_wakeup_fd(-1)
        reader.close()
        writer.close()
        return False
    _WAKER.extend((reader, writer))
    return True


def _drain(reader: socket.socket) -> None:
    try:
        while reader.recv(4096):
            pass
    except (BlockingIOError, InterruptedError):
        pass
