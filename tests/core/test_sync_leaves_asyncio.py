"""A sync entry point inside a running loop (a notebook cell) leaves asyncio as it found it: nest_asyncio2's
process-wide patch lasts only as long as the call."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient
from nbagent.sync import run_coroutine

from ..waits import joined, waited


def _asyncio_state(loop: asyncio.AbstractEventLoop) -> dict[str, Any]:
    policy = type(asyncio.get_event_loop_policy())
    return {
        "Task": asyncio.Task,
        "tasks.Task": asyncio.tasks.Task,
        "Future": asyncio.Future,
        "futures.Future": asyncio.futures.Future,
        "run": asyncio.run,
        "get_event_loop": asyncio.get_event_loop,
        "events.get_event_loop": asyncio.events.get_event_loop,
        "patched": hasattr(asyncio, "_nest_patched"),
        "policy": policy.__dict__.get("get_event_loop"),
        "loop class": {name: type(loop).__dict__.get(name) for name in ("run_until_complete", "_run_once")},
        "loop patched": hasattr(loop, "_nest_patched"),
    }


def _run_closes_its_loop() -> bool:
    """Whether ``asyncio.run`` (in a thread with no loop, as a script's) closes the loop it made."""
    made: list[asyncio.AbstractEventLoop] = []

    async def main() -> None:
        made.append(asyncio.get_running_loop())

    thread = threading.Thread(target=asyncio.run, args=(main(),))
    thread.start()
    joined(thread, "asyncio.run in a thread of its own")
    return made[0].is_closed()


async def test_a_sync_run_inside_a_running_loop_leaves_asyncio_as_it_was() -> None:
    loop = asyncio.get_running_loop()
    before = _asyncio_state(loop)
    assert before["Task"] is asyncio.tasks._CTask  # noqa: SLF001 (the C class, as the process starts)
    assert _run_closes_its_loop()
    result = nbagent.run(AssistantAgent("a", ReplayChatCompletionClient(["hello"])), "hi")
    assert result.messages[-1].to_text() == "hello"
    assert _asyncio_state(loop) == before
    assert _run_closes_its_loop()
    task = asyncio.ensure_future(asyncio.sleep(0))
    assert type(task) is before["Task"]
    await task


async def test_nested_sync_calls_keep_the_patch_until_the_outermost_ends() -> None:
    loop = asyncio.get_running_loop()
    before = _asyncio_state(loop)
    seen: list[bool] = []

    async def inner() -> str:
        seen.append(hasattr(asyncio, "_nest_patched"))
        return "inner"

    async def outer() -> str:
        first = run_coroutine(inner)  # a sync call inside a sync call (a sync tool calling nbagent.run)
        seen.append(hasattr(asyncio, "_nest_patched"))  # the inner call's end keeps the outer's patch
        return first

    assert run_coroutine(outer) == "inner"
    assert seen == [True, True]
    assert _asyncio_state(loop) == before


async def test_an_error_in_the_call_restores_asyncio_too() -> None:
    loop = asyncio.get_running_loop()
    before = _asyncio_state(loop)

    async def fails() -> None:
        raise ValueError("boom")

    try:
        run_coroutine(fails)
    except ValueError as error:
        assert str(error) == "boom"
    assert _asyncio_state(loop) == before


def test_a_loop_that_cannot_be_patched_leaves_asyncio_as_it_was() -> None:
    """nest_asyncio2 patches asyncio, then finds it cannot patch uvloop's loop: before, the call failed with
    "Can't patch loop of type <class 'uvloop.Loop'>" and asyncio.Task stayed the pure-Python class."""
    uvloop = pytest.importorskip("uvloop")
    seen: dict[str, Any] = {}

    async def main() -> None:
        before = _asyncio_state(asyncio.get_running_loop())
        with pytest.raises(RuntimeError, match="cannot drive the running uvloop.Loop loop") as raised:
            nbagent.run(AssistantAgent("a", ReplayChatCompletionClient(["hello"])), "hi")
        seen["error"] = raised.value
        seen["same"] = _asyncio_state(asyncio.get_running_loop()) == before
        seen["Task"] = asyncio.Task

    thread = threading.Thread(target=uvloop.run, args=(main(),))  # a loop of its own, as a uvloop app's
    thread.start()
    joined(thread, "uvloop.run in a thread of its own")
    assert "await agent.run(...)" in str(seen["error"])
    assert seen["same"] and seen["Task"] is asyncio.tasks._CTask  # noqa: SLF001 (the C class, as the process starts)
    assert _run_closes_its_loop()


async def test_a_loop_another_thread_started_during_the_call_ends_cleanly_after_it() -> None:
    """An ipykernel subshell's thread may start its loop while a sync call has the loop class patched: that loop
    runs nest_asyncio2's ``run_forever`` and, ending after the call put the class back, still reads the data it
    keeps on the class (the saved notebooks of CI run 2026-12-06 held "AttributeError: '_UnixSelectorEventLoop'
    object has no attribute '_is_proactorloop'" from a subshell thread)."""
    other = asyncio.new_event_loop()
    running = threading.Event()
    errors: list[BaseException] = []

    def serve() -> None:
        try:
            other.call_soon(running.set)
            other.run_forever()
        except BaseException as error:  # what the thread ended with is the answer
            errors.append(error)

    thread = threading.Thread(target=serve)

    async def start_the_other_loop() -> str:
        thread.start()
        await asyncio.to_thread(waited, running, "the other thread's loop to run")
        return "started"

    assert run_coroutine(start_the_other_loop) == "started"
    other.call_soon_threadsafe(other.stop)
    joined(thread, "the other thread's loop")
    other.close()
    assert errors == []
