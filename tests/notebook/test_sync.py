"""The sync entry point outside any event loop (a plain script); the in-loop path is in test_kernel."""

from __future__ import annotations

import asyncio

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
