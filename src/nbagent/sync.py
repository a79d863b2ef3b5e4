"""Drive a coroutine to its end without ``await``: in a plain script and inside a notebook's running event loop.

A notebook cell already runs inside the kernel's event loop, where ``asyncio.run`` fails. There the
loop is patched with nest-asyncio2 (nest_asyncio 1.6 loses queued cells under ipykernel 7, so a
Run All would hang) and the coroutine is driven to its end with ``run_until_complete``. A kernel
interrupt (``KeyboardInterrupt``) cancels it, waits for it to end (a run leaves its context valid),
and propagates.

While it drives a running loop it enters the registered "while driving" hooks
(:func:`register_driving_hook`): inside a kernel, the notebook layer's comm pump dispatches the
kernel's comm messages (a widget's button click: the live view's Stop) as they come; without that
they would wait for the end of the run.

A generic driver: it knows no agent. ``AssistantAgent.run_sync`` and ``nbagent.run`` call it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from typing import TypeVar

__all__ = ["DrivingHook", "driving_hooks", "register_driving_hook", "run_coroutine", "unregister_driving_hook"]

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
    with _driving(loop):
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


DrivingHook = Callable[[asyncio.AbstractEventLoop], AbstractContextManager[object]]
"""A context manager factory entered while :func:`run_coroutine` drives a running ``loop``."""

_DRIVING_HOOKS: list[DrivingHook] = []


def register_driving_hook(hook: DrivingHook) -> None:
    """Enter ``hook(loop)`` while :func:`run_coroutine` drives an already running loop (a notebook
    cell): the notebook layer's kernel comm pump (``nbagent.notebook.kernel.comms_meanwhile``),
    registered by ``nbagent`` at import. A hook registered twice is entered once."""
    if hook not in _DRIVING_HOOKS:
        _DRIVING_HOOKS.append(hook)


def unregister_driving_hook(hook: DrivingHook) -> None:
    """Stop entering ``hook``; a hook that is not registered is ignored."""
    if hook in _DRIVING_HOOKS:
        _DRIVING_HOOKS.remove(hook)


def driving_hooks() -> tuple[DrivingHook, ...]:
    """The registered driving hooks, in the order they are entered."""
    return tuple(_DRIVING_HOOKS)


@contextmanager
def _driving(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
    with ExitStack() as stack:
        for hook in list(_DRIVING_HOOKS):
            stack.enter_context(hook(loop))
        yield
