"""Drive a coroutine to its end without ``await``: in a plain script and inside a notebook's running event loop.

A notebook cell already runs inside the kernel's event loop, where ``asyncio.run`` fails. There the
loop is patched with nest-asyncio2 (nest_asyncio 1.6 loses queued cells under ipykernel 7, so a
Run All would hang) and the coroutine is driven to its end with ``run_until_complete``. A kernel
interrupt (``KeyboardInterrupt``) cancels it, waits for it to end (a run leaves its context valid),
and propagates.

While it drives the loop inside a kernel, the kernel's comm messages (a widget's button click: the
live view's Stop) are dispatched as they come (:func:`_comms_meanwhile`); without that they would
wait for the end of the run.

A generic driver: it knows no agent. ``AssistantAgent.run_sync`` and ``nbagent.run`` call it.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

T = TypeVar("T")


def run_coroutine(factory: Callable[[], Awaitable[T]]) -> T:
    """Drive the awaitable that ``factory`` makes to its end, whether or not a loop is running."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(_as_coroutine(factory))
    import nest_asyncio2

    nest_asyncio2.apply(loop)
    task = loop.create_task(_as_coroutine(factory))
    with _comms_meanwhile(loop):
        try:
            return loop.run_until_complete(task)
        except KeyboardInterrupt:
            task.cancel()
            try:
                loop.run_until_complete(task)
            except (asyncio.CancelledError, KeyboardInterrupt):
                pass
            raise


async def _as_coroutine(factory: Callable[[], Awaitable[T]]) -> T:
    return await factory()


_COMMS = frozenset({"comm_open", "comm_msg", "comm_close"})


@contextmanager
def _comms_meanwhile(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
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
        stream: Any = kernel.shell_channel_thread.manager._shell_channel_to_main.to_stream
        original = stream._recv_callback
        copy = stream._recv_copy
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
