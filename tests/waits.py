"""Waits with a deadline that say what they waited for when they give up (docs/testing.md, "Time in tests").

A deadline here is a hang guard, far above what a loaded machine takes (a load average of 20 on 2 cores
made waits of well under a second take tens of seconds): a test that reaches it is stuck, and its failure
names what never happened rather than failing later on a missing result."""

from __future__ import annotations

import asyncio
import inspect
import threading
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from nbagent.trace.sender import OTLPRecorder

T = TypeVar("T")

HANG_GUARD_S = 60.0
"""The default deadline of a wait whose idle figure is well under a second."""


def waited(event: threading.Event, what: str, timeout: float = HANG_GUARD_S) -> None:
    """Wait until ``event`` is set; fail naming ``what`` after ``timeout`` seconds."""
    assert event.wait(timeout), f"gave up after {timeout:g} s waiting for {what}"


def joined(thread: threading.Thread, what: str, timeout: float = HANG_GUARD_S) -> None:
    """Wait until ``thread`` ends; fail naming ``what`` (what the thread does) after ``timeout`` seconds."""
    thread.join(timeout)
    assert not thread.is_alive(), f"gave up after {timeout:g} s waiting for {what} to end"


def until(condition: Callable[[], bool], what: str, timeout: float = HANG_GUARD_S, every: float = 0.05) -> None:
    """Poll ``condition`` every ``every`` seconds until it holds; fail naming ``what`` after ``timeout`` seconds
    (for a state only polling can see: a file another process writes, a server's port)."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"gave up after {timeout:g} s waiting for {what}"
        time.sleep(every)


async def eventually(
    condition: Callable[[], bool | Awaitable[bool]], what: str, timeout: float = HANG_GUARD_S, every: float = 0.05
) -> None:
    """:func:`until` for a test on the event loop: ``condition`` may be a coroutine function, and the loop
    goes on between two polls."""
    deadline = time.monotonic() + timeout
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        assert time.monotonic() < deadline, f"gave up after {timeout:g} s waiting for {what}"
        await asyncio.sleep(every)


async def within(awaitable: Awaitable[T], what: str, timeout: float = HANG_GUARD_S) -> T:
    """What ``awaitable`` gives (or raises, ``CancelledError`` included); fail naming ``what`` if it has not
    ended after ``timeout`` seconds (it is then cancelled)."""
    task = asyncio.ensure_future(awaitable)
    done, _ = await asyncio.wait({task}, timeout=timeout)
    if not done:
        task.cancel()
        raise AssertionError(f"gave up after {timeout:g} s waiting for {what}")
    return task.result()


def sent_all(recorder: OTLPRecorder, timeout: float = HANG_GUARD_S) -> None:
    """Wait until ``recorder`` has sent (or dropped) every ended run (its ``flush``, which blocks: call it
    through ``asyncio.to_thread`` from the loop); fail naming what it still holds after ``timeout`` seconds."""
    assert recorder.flush(timeout), (
        f"gave up after {timeout:g} s waiting for the OTLP recorder to send its ended runs: "
        f"{recorder.pending_runs} pending, errors {recorder.errors[-3:]}"
    )
