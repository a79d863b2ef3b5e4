"""Fixtures: a fresh scripted Chat Completions server per test, and a client pointed at it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from nbagent.models.openai import OpenAIChatCompletionClient

from .chat_server import ChatServer

TEST_KEY = "sk-test-4f8a9c2e7b1d6053aa"


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as chat_server:
        yield chat_server


@pytest.fixture
async def client(server: ChatServer) -> AsyncIterator[OpenAIChatCompletionClient]:
    model_client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=0)
    yield model_client
    await model_client.close()
