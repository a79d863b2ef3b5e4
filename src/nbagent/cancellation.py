"""``CancellationToken``: cancel a run from outside, at whatever it is awaiting."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class CancellationToken:
    """Cancels the futures linked to it and calls its callbacks, once.

    The agent links every await point of a run to the token (memory query, LLM call, stream, tool
    execution), so ``cancel()`` interrupts the run wherever it is.
    """

    __slots__ = ("_cancelled", "_callbacks")

    def __init__(self) -> None:
        self._cancelled = False
        self._callbacks: list[Callable[[], Any]] = []

    def cancel(self) -> None:
        """Cancel everything linked now and call every callback; later calls do nothing."""
        if self._cancelled:
            return
        self._cancelled = True
        callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    def is_cancelled(self) -> bool:
        return self._cancelled

    def add_callback(self, callback: Callable[[], Any]) -> None:
        """Call ``callback`` on cancel (at once if already cancelled)."""
        if self._cancelled:
            callback()
        else:
            self._callbacks.append(callback)

    def remove_callback(self, callback: Callable[[], Any]) -> None:
        try:
            self._callbacks.remove(callback)
        except ValueError:
            pass

    def link_future(self, future: asyncio.Future[Any]) -> asyncio.Future[Any]:
        """Cancel ``future`` when the token is cancelled; returns it."""
        if self._cancelled:
            future.cancel()
            return future

        def cancel_future() -> None:
            future.cancel()

        self._callbacks.append(cancel_future)
        future.add_done_callback(lambda _: self.remove_callback(cancel_future))
        return future

    def __repr__(self) -> str:
        return f"CancellationToken(cancelled={self._cancelled})"


async def guarded(awaitable: Awaitable[T], token: CancellationToken | None) -> T:
    """Await ``awaitable`` so that cancelling ``token`` interrupts it with ``CancelledError``.

    The awaitable runs in the current task (no task is created): cancelling the token cancels the
    current task once, and that one cancellation request is withdrawn (``uncancel``) when the
    ``CancelledError`` leaves, so the task is not left half-cancelled.
    """
    if token is None:
        return await awaitable
    if token._cancelled:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise asyncio.CancelledError("the cancellation token was cancelled")
    task = asyncio.current_task()
    assert task is not None, "guarded() runs inside a task"
    fired = False

    def cancel_task() -> None:
        nonlocal fired
        fired = True
        task.cancel("the cancellation token was cancelled")

    token._callbacks.append(cancel_task)
    try:
        result = await awaitable
    except asyncio.CancelledError:
        if fired:
            task.uncancel()
        raise
    finally:
        if not fired:
            token.remove_callback(cancel_task)
    if fired:  # the awaitable swallowed the cancellation: the run still ends here
        task.uncancel()
        raise asyncio.CancelledError("the cancellation token was cancelled")
    return result
