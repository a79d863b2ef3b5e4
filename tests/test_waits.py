"""The tests' waits (tests/waits.py) give up naming what they waited for, and give back what they waited on."""

from __future__ import annotations

import asyncio
import threading

import pytest

from .waits import eventually, joined, until, waited, within


def test_the_thread_waits_name_what_never_happened() -> None:
    with pytest.raises(AssertionError, match=r"after 0\.01 s waiting for the writer to start"):
        waited(threading.Event(), "the writer to start", timeout=0.01)
    release = threading.Event()
    thread = threading.Thread(target=release.wait, args=(60,))
    thread.start()
    try:
        with pytest.raises(AssertionError, match="waiting for the writer's commit to end"):
            joined(thread, "the writer's commit", timeout=0.01)
    finally:
        release.set()
    joined(thread, "the released thread")
    with pytest.raises(AssertionError, match="waiting for a file"):
        until(lambda: False, "a file", timeout=0.01, every=0.001)


async def test_the_loop_waits_give_back_the_result_or_name_what_never_happened() -> None:
    async def answer() -> int:
        return 42

    assert await within(answer(), "the answer") == 42
    never = asyncio.ensure_future(asyncio.sleep(3600))
    with pytest.raises(AssertionError, match="waiting for the hour to pass"):
        await within(never, "the hour to pass", timeout=0.01)
    await asyncio.sleep(0)
    assert never.cancelled()  # what it gave up on is cancelled, not left running

    async def cancelled() -> None:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await within(cancelled(), "the cancelled run")
    ticks: list[int] = []

    async def ready() -> bool:
        ticks.append(1)
        return len(ticks) >= 3

    await eventually(ready, "the third poll", every=0.001)
    with pytest.raises(AssertionError, match="waiting for the server to answer"):
        await eventually(lambda: False, "the server to answer", timeout=0.01, every=0.001)
