"""Agents and scripted models for the trace tests."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    RequestUsage,
    UnboundedChatCompletionContext,
)

KEY = "sk-" + "proj-abcdefghijklmnop0123456789"  # a fake key, made at run time
BEARER = "Bearer eyJhbGciOiJIUzI1NiJ9.secretpart"


class KeyedClient(ReplayChatCompletionClient):
    """A replay client that holds a secret, as a client with an API key does (``secrets``)."""

    def __init__(self, chat_completions: Sequence[str | CreateResult], key: str) -> None:
        super().__init__(chat_completions)
        self.key = key

    @property
    def secrets(self) -> tuple[str, ...]:
        return (self.key,)


def calls(*pairs: tuple[str, str, str]) -> CreateResult:
    """A model answer asking for tool calls (id, name, arguments)."""
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=i, name=n, arguments=a) for i, n, a in pairs],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
    )


def text(content: str, prompt: int = 20, completion: int = 7, thought: str | None = None) -> CreateResult:
    return CreateResult(
        finish_reason="stop",
        content=content,
        usage=RequestUsage(prompt_tokens=prompt, completion_tokens=completion),
        thought=thought,
    )


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    await asyncio.sleep(0.01)
    return a + b


async def fail(reason: str) -> str:
    """Always fails."""
    raise RuntimeError(f"failed: {reason}")


class PiecesClient(ReplayChatCompletionClient):
    """Streams each text answer in the given pieces (to split a secret over chunks)."""

    def __init__(self, answers: Sequence[str | CreateResult], pieces: Sequence[str]) -> None:
        super().__init__(answers)
        self.pieces = list(pieces)

    async def create_stream(self, messages: Any, **kwargs: Any) -> AsyncIterator[str | CreateResult]:
        result = await self.create(messages, **kwargs)
        if isinstance(result.content, str):
            for piece in self.pieces:
                yield piece
        yield result


def tool_agent(name: str = "calc", *answers: str | CreateResult, **kwargs: Any) -> AssistantAgent:
    client = kwargs.pop("client", None) or ReplayChatCompletionClient(list(answers), latency=kwargs.pop("latency", 0.0))
    return AssistantAgent(name, client, tools=[add, fail], **kwargs)


class SlottedSource:
    """A bare run source (the protocol alone), small and slotted: one made right after another is freed
    takes its memory, so its ``id()`` (what traces and OTLP recorders key their sources by)."""

    __slots__ = ("name", "model_context", "secrets", "recorders", "__weakref__")

    def __init__(self, name: str) -> None:
        self.name = name
        self.model_context = UnboundedChatCompletionContext()
        self.secrets: tuple[str, ...] = ()
        self.recorders: list[Any] = []


def sources_taking_freed_ids(attach: Callable[[SlottedSource], object], tries: int = 20) -> Iterator[SlottedSource]:
    """New sources, each made right after a source given to ``attach`` was freed, that got its ``id()``
    (CPython gives a freed object's memory to the next one of its size: most of ``tries`` do)."""
    for _ in range(tries):
        gone = SlottedSource("gone")
        attach(gone)
        gone_id = id(gone)
        del gone
        new = SlottedSource("new")
        if id(new) == gone_id:
            yield new
        del new
