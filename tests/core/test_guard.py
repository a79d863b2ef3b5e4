"""``CancellationToken.guard``: a coroutine's first step runs at once; one that ends without waiting is not
guarded (no task looked up, nothing registered on the token), one that waits is guarded from its first
wait, and the token fired by the awaited call itself, before or after its first wait, ends the await as
before (cancelled, its result or its failure kept)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nbagent import CancellationToken
from nbagent.cancellation import CANCELLED, CancelledWithResult

from ..waits import within

LONG = 3600.0  # a wait the cancellation must interrupt: far past the hang guard


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The tasks ``asyncio.current_task()`` gave while the test ran."""
    seen: list[Any] = []
    original = asyncio.current_task

    def counted(loop: Any = None) -> Any:
        task = original(loop)
        seen.append(task)
        return task

    monkeypatch.setattr(asyncio, "current_task", counted)
    return seen


async def answer(token: CancellationToken, *, cancel: bool = False, fail: bool = False) -> str:
    if cancel:
        token.cancel()
    if fail:
        raise ValueError("broken")
    return "answer"


async def test_a_call_that_ends_without_waiting_is_not_guarded(lookups: list[Any]) -> None:
    token = CancellationToken()
    assert await token.guard(answer(token)) == "answer"
    assert lookups == [] and token._callbacks == []  # noqa: SLF001 (nothing was registered)
    with pytest.raises(ValueError, match="broken"):
        await token.guard(answer(token, fail=True))
    assert not token.is_cancelled()


async def test_a_call_that_fires_the_token_and_ends_keeps_its_result_or_failure() -> None:
    token = CancellationToken()
    with pytest.raises(CancelledWithResult) as ended:
        await token.guard(answer(token, cancel=True))
    assert ended.value.result == "answer"
    other = CancellationToken()
    with pytest.raises(asyncio.CancelledError, match=CANCELLED) as failed:
        await other.guard(answer(other, cancel=True, fail=True))
    assert isinstance(failed.value.__cause__, ValueError)
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]  # no request left behind


async def test_a_call_that_waits_is_guarded_and_gets_what_its_task_sends_and_throws(lookups: list[Any]) -> None:
    token = CancellationToken()
    steps: list[str] = []

    async def waits() -> str:
        await asyncio.sleep(0)
        steps.append("woke")
        future = asyncio.get_running_loop().create_future()
        asyncio.get_running_loop().call_soon(future.set_result, "from the future")
        return await future

    assert await token.guard(waits()) == "from the future"
    assert steps == ["woke"] and len(lookups) == 1 and token._callbacks == []  # noqa: SLF001

    caught: list[str] = []

    async def cleans_up() -> None:
        try:
            await asyncio.sleep(LONG)
        except asyncio.CancelledError:
            caught.append("cancelled")
            raise

    task = asyncio.ensure_future(token.guard(cleans_up()))
    await asyncio.sleep(0)
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(task, "the guarded wait to end once the token fired")
    assert caught == ["cancelled"]  # thrown into the awaited coroutine at its wait

    outside = asyncio.ensure_future(CancellationToken().guard(cleans_up()))
    await asyncio.sleep(0)
    outside.cancel()  # the task cancelled from outside: the awaited coroutine gets it too
    with pytest.raises(asyncio.CancelledError):
        await within(outside, "the guarded wait to end once its task was cancelled")
    assert caught == ["cancelled", "cancelled"]


async def test_a_call_that_fires_the_token_then_waits_is_cancelled_at_its_wait() -> None:
    token = CancellationToken()

    async def fires_then_waits() -> None:
        token.cancel()
        await asyncio.sleep(LONG)

    with pytest.raises(asyncio.CancelledError, match=CANCELLED):
        await within(token.guard(fires_then_waits()), "the wait after the token fired to be cancelled")
    assert asyncio.current_task().cancelling() == 0  # type: ignore[union-attr]


async def test_a_coroutine_another_task_awaits_is_refused_and_left_to_it() -> None:
    """A started coroutine is not stepped by the guard: awaiting it again fails as a plain ``await`` does,
    and the task that awaits it gets its result, every step of it run in that task."""
    ran_in: list[str] = []

    async def steps() -> str:
        for _ in range(3):
            await asyncio.sleep(0)
            ran_in.append(asyncio.current_task().get_name())  # type: ignore[union-attr]
        return "done"

    coro = steps()
    owner = asyncio.create_task(coro, name="owner")
    await asyncio.sleep(0)  # the owner has started it: suspended at its first wait
    with pytest.raises(RuntimeError, match="awaited already"):
        await CancellationToken().guard(coro)
    assert await within(owner, "the owner's coroutine to end") == "done"
    assert ran_in == ["owner"] * 3


async def test_what_a_waiting_call_raises_after_a_thrown_cancellation_is_not_chained_to_it() -> None:
    """A call that catches the cancellation its task got and raises its own error: that error comes out as
    the call raised it, with no cancellation as its context (as awaiting the call unguarded gives)."""
    handled = asyncio.Event()

    async def recovers_then_fails() -> None:
        try:
            await asyncio.sleep(LONG)
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # type: ignore[union-attr]
            handled.set()
        raise ValueError("after the cancellation")

    async def guarded_call() -> None:
        await CancellationToken().guard(recovers_then_fails())

    task = asyncio.create_task(guarded_call())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(ValueError, match="after the cancellation") as raised:
        await within(task, "the call's own error")
    assert handled.is_set() and raised.value.__context__ is None
