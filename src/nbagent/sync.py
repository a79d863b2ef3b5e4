"""Drive a coroutine to its end without ``await``: in a plain script and inside a notebook's running event loop.

A notebook cell already runs inside the kernel's event loop, where ``asyncio.run`` fails. There the
loop is patched with nest-asyncio2 (nest_asyncio 1.6 loses queued cells under ipykernel 7, so a
Run All would hang) and the coroutine is driven to its end with ``run_until_complete``. A kernel
interrupt (``KeyboardInterrupt``) cancels it, waits for it to end (a run leaves its context valid),
and propagates.

A generic driver: it knows no agent. ``AssistantAgent.run_sync`` and ``nbagent.run`` call it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

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
