"""``CancellationToken``: cancel a run from outside, at whatever it is awaiting.

Cancelling never leaves a stray cancellation behind. ``cancel()`` may be called from anywhere: from
another task (a Stop button), from inside the very call a run awaits (a model client or a tool that
cancels synchronously), from a worker thread (a sync tool): the task that awaits is cancelled only
while it waits (from the event loop's thread), and each cancellation request it gets is withdrawn
when it has been delivered, so the task's next ``await`` (the caller's, after the run) runs normally.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine, Generator
from types import CoroutineType
from typing import Any, Generic, TypeVar

T = TypeVar("T")
CANCELLED = "the cancellation token was cancelled"
"""What the ``CancelledError`` of a run or an await that a token cancelled says."""


class CancellationToken:
    """Cancels the futures linked to it and calls its callbacks, once.

    The agent links every await point of a run to the token (memory query, LLM call, stream, tool
    execution), so ``cancel()`` interrupts the run wherever it is. Callbacks run in the thread that
    calls ``cancel()``; :func:`guarded` and :meth:`link_future` hand the cancellation over to the
    event loop's thread.
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
        """Whether :meth:`cancel` has been called."""
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

    async def guard(self, awaitable: Awaitable[T]) -> T:
        """Await ``awaitable`` so that cancelling this token interrupts it with ``CancelledError``.

        The awaitable runs in the current task (no task is created): cancelling the token cancels the
        current task once, while it waits, and that request is withdrawn (``uncancel``) before this
        returns or raises, so the task is left with no pending cancellation. Once the token has fired,
        this raises ``CancelledError`` however the awaitable ended: :class:`CancelledWithResult`
        (carrying the result) if it completed, chained from its exception if it raised an ``Exception``
        (a ``KeyboardInterrupt`` propagates as it is).

        A coroutine's first step runs at once: one that ends without waiting (a replayed answer, a
        tool that does not wait) is not guarded (nothing can interrupt it), and no task is looked up.
        """
        if self._cancelled:
            if isinstance(awaitable, Coroutine):  # an entry point's too (nbagent.sync.Pending): never awaited
                awaitable.close()
            raise asyncio.CancelledError(CANCELLED)
        if type(awaitable) is CoroutineType and not awaitable.cr_suspended:  # not started (or ended: send says so)
            try:
                waits_on = awaitable.send(None)
            except StopIteration as done:  # ended without waiting: cancelled meanwhile (by itself), its result kept
                if self._cancelled:
                    raise CancelledWithResult(done.value) from None
                return done.value  # type: ignore[no-any-return]
            except Exception as error:
                if self._cancelled:  # a failure the cancellation caused, or met: cancelled all the same
                    raise asyncio.CancelledError(CANCELLED) from error
                raise
            awaitable = _Resumed(awaitable, waits_on)  # it waits: the rest is guarded
        task = asyncio.current_task()
        assert task is not None, "CancellationToken.guard() runs inside a task"
        guard = _Guard()
        guard.task = task
        if self._cancelled:  # fired during the first step (by the awaitable itself): delivered at its wait
            guard()
        else:
            self._callbacks.append(guard)
        try:
            result = await awaitable
        except BaseException as error:
            if guard.fired:
                guard.withdraw()
                if isinstance(error, Exception):  # a failure the cancellation caused, or met: cancelled all the same
                    raise asyncio.CancelledError(CANCELLED) from error
            raise
        finally:
            if not guard.fired:
                try:
                    self._callbacks.remove(guard)
                except ValueError:
                    pass
        if guard.fired:  # the awaitable completed (or swallowed the cancellation): the run still ends here
            guard.withdraw()
            raise CancelledWithResult(result)
        return result

    def link_future(self, future: asyncio.Future[Any]) -> asyncio.Future[Any]:
        """Cancel ``future`` when the token is cancelled; returns it.

        A task cancelled by its own code (a tool that cancels the token and returns) is cancelled
        once it yields, not while it runs: a call that completes keeps its result.
        """
        if self._cancelled:
            future.cancel()
            return future

        def cancel_future() -> None:
            _from_loop(future.get_loop(), future, future.cancel)

        self._callbacks.append(cancel_future)
        future.add_done_callback(lambda _: self.remove_callback(cancel_future))
        return future

    def __repr__(self) -> str:
        return f"CancellationToken(cancelled={self._cancelled})"


def _from_loop(loop: asyncio.AbstractEventLoop, task: asyncio.Future[Any], action: Callable[[], Any]) -> None:
    """Run ``action`` now if ``task`` is waiting and this is its loop's thread, else from the loop soon.

    From inside ``task`` itself (it cancels the token while it runs) or from another thread,
    ``action`` is deferred to the loop's next iteration: a task cancelled while it runs would keep
    the request pending past the await it was meant for.
    """
    try:
        here = asyncio.get_running_loop()
    except RuntimeError:
        here = None
    if here is loop and asyncio.current_task(loop) is not task:
        action()
    else:
        loop.call_soon_threadsafe(action)


class CancelledWithResult(asyncio.CancelledError, Generic[T]):
    """The token was cancelled while the awaited call ran, and the call completed all the same.

    ``result`` is what it returned: the caller keeps it (a model call's answer in its record, a
    tool's result in the context), and the run ends cancelled there.
    """

    def __init__(self, result: T) -> None:
        super().__init__(f"{CANCELLED} while the awaited call completed")
        self.result = result


class _Resumed(Generic[T]):
    """A coroutine whose first step has run and yielded ``waits_on`` (:meth:`CancellationToken.guard`),
    awaited from there: what its task sends or throws goes to the coroutine."""

    __slots__ = ("_coro", "_waits_on")

    def __init__(self, coro: Coroutine[Any, Any, T], waits_on: Any) -> None:
        self._coro = coro
        self._waits_on = waits_on

    def __await__(self) -> Generator[Any, Any, T]:
        coro, value = self._coro, self._waits_on
        while True:
            thrown: BaseException | None = None
            sent = None
            try:
                sent = yield value
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as error:  # the task's cancellation, or another thrown in
                thrown = error
            try:  # (out of the except block: what the coroutine raises is not chained to what was thrown)
                value = coro.send(sent) if thrown is None else coro.throw(thrown)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]


class _Guard:
    """One :meth:`CancellationToken.guard` await: whether its token fired, and whether the task was cancelled for it.

    The flags start as class attributes (no ``__init__``: made on every model call and tool call)."""

    task: asyncio.Task[Any]
    fired = False
    active = True
    delivered = False

    def __call__(self) -> None:  # the token's callback, in whatever thread cancelled it
        if not self.fired:
            self.fired = True
            _from_loop(self.task.get_loop(), self.task, self.deliver)

    def deliver(self) -> None:  # in the loop's thread, while the task waits inside guard()
        if self.active:
            self.delivered = True
            self.task.cancel(CANCELLED)

    def withdraw(self) -> None:
        """The await is over (the token fired): a cancellation not delivered yet will not be, one
        delivered is withdrawn, so the task is left with no pending cancellation."""
        self.active = False
        if self.delivered:
            self.task.uncancel()


def guarded(awaitable: Awaitable[T], token: CancellationToken | None) -> Awaitable[T]:
    """``awaitable`` guarded by ``token`` (:meth:`CancellationToken.guard`), or as it is with no token:
    ``await guarded(call(), token)``. Another library's token (AutoGen's, which its agent gives
    nbagent's model clients and workbenches: ``add_callback`` and ``is_cancelled``) guards it through
    a token of nbagent's that it cancels."""
    if token is None:
        return awaitable
    if isinstance(token, CancellationToken):
        return token.guard(awaitable)
    own = CancellationToken()
    token.add_callback(own.cancel)  # called at once if already cancelled (AutoGen's does so too)
    if token.is_cancelled():
        own.cancel()
    return own.guard(awaitable)
