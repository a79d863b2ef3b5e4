"""The sync entry point outside any event loop (a plain script); the in-loop path is in test_kernel."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

import nbagent
from nbagent import AssistantAgent, ReplayChatCompletionClient, TaskResult, TextMessage
from nbagent.sync import run_coroutine


def test_nbagent_run_and_run_sync_without_a_loop() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["first", "second"]))
    result = nbagent.run(agent, "one")
    assert isinstance(result, TaskResult)
    assert [(type(m).__name__, m.source, m.to_text()) for m in result.messages] == [
        ("TextMessage", "user", "one"),
        ("TextMessage", "bot", "first"),
    ]
    again = agent.run_sync(TextMessage(content="two", source="user"))
    assert [m.to_text() for m in again.messages] == ["two", "second"]
    assert not agent.is_running


def test_run_coroutine_propagates_errors() -> None:
    async def fail() -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        run_coroutine(fail)
    with pytest.raises(RuntimeError):
        asyncio.get_running_loop()


def test_run_coroutine_enters_the_registered_driving_hooks_in_a_running_loop() -> None:
    """The loop layer imports no IPython: the notebook layer's kernel comm pump is a registered hook."""
    import contextlib

    from nbagent import sync
    from nbagent.notebook import kernel

    entered: list[asyncio.AbstractEventLoop] = []

    @contextlib.contextmanager
    def hook(loop: asyncio.AbstractEventLoop) -> Iterator[None]:
        entered.append(loop)
        yield

    async def inner() -> int:
        return 7

    async def outer() -> int:
        return run_coroutine(inner)  # inside a running loop: the nested path

    sync.register_driving_hook(hook)
    try:
        assert asyncio.run(outer()) == 7
        assert run_coroutine(inner) == 7  # no running loop: no hook
    finally:
        sync.unregister_driving_hook(hook)
    assert len(entered) == 1
    # nbagent registers the kernel pump (a no-op outside ipykernel) at import
    assert any(h.__module__ == "nbagent" and h.__name__ == "_kernel_comms" for h in sync.driving_hooks())
    with kernel.comms_meanwhile(asyncio.new_event_loop()):
        pass
