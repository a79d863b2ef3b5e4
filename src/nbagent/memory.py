"""Memory: long-term stores queried at STEP 2, whose hits enter the model context."""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any

from .cancellation import CancellationToken
from .context import ChatCompletionContext
from .messages import MemoryContent, SystemMessage

MEMORY_HEADER = "\nRelevant memory content (in chronological order):\n"


@dataclass
class MemoryQueryResult:
    results: list[MemoryContent] = field(default_factory=list)


@dataclass
class UpdateContextResult:
    """The hits of one store for this turn (``memories``) and how many were new to the context."""

    memories: MemoryQueryResult
    added: int = 0


class Memory(ABC):
    """A memory store. STEP 2 calls ``update_context`` on each store the agent has."""

    @abstractmethod
    async def query(
        self, query: str | MemoryContent, cancellation_token: CancellationToken | None = None
    ) -> MemoryQueryResult: ...

    @abstractmethod
    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None: ...

    @abstractmethod
    async def clear(self) -> None: ...

    async def close(self) -> None:
        """Release resources; nothing by default."""

    async def update_context(
        self, model_context: ChatCompletionContext, cancellation_token: CancellationToken | None = None
    ) -> UpdateContextResult:
        """Query with the last message of the context and add the hits not already in it.

        nbagent fix: the reference adds every hit again on every turn, so the context grows with
        copies; here a hit whose text is already in a memory system message is not added again.
        """
        messages = model_context.messages
        query = messages[-1].content if messages and isinstance(messages[-1].content, str) else ""
        result = await self.query(query, cancellation_token)
        if not result.results:
            return UpdateContextResult(memories=result)
        present = "\n".join(
            message.content[len(MEMORY_HEADER) :]
            for message in messages
            if isinstance(message, SystemMessage) and message.content.startswith(MEMORY_HEADER)
        )
        texts = (item.to_text() for item in result.results)
        new = [text for text in texts if not _has_entry(present, text)]
        if new:
            lines = "".join(f"{i}. {text}\n" for i, text in enumerate(new, 1))
            await model_context.add_message(SystemMessage(content=MEMORY_HEADER + lines))
        return UpdateContextResult(memories=result, added=len(new))

    async def save_state(self) -> dict[str, Any]:
        return {}

    async def load_state(self, state: dict[str, Any]) -> None:
        """Restore from ``save_state`` output; nothing by default."""


def _has_entry(blocks: str, text: str) -> bool:
    """Whether ``text`` is a whole numbered entry (``N. text``) of the memory blocks."""
    return re.search(rf"(?:^|\n)\d+\. {re.escape(text)}\n", blocks) is not None


class ListMemory(Memory):
    """A list of contents, all returned for every query, in the order they were added."""

    def __init__(self, name: str = "list_memory", memory_contents: list[MemoryContent] | None = None) -> None:
        self.name = name
        self._contents: list[MemoryContent] = list(memory_contents or [])

    @property
    def content(self) -> list[MemoryContent]:
        return list(self._contents)

    async def query(
        self, query: str | MemoryContent = "", cancellation_token: CancellationToken | None = None
    ) -> MemoryQueryResult:
        return MemoryQueryResult(results=list(self._contents))

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        if not isinstance(content, MemoryContent):
            raise TypeError(f"ListMemory.add takes a MemoryContent, got {type(content).__name__}")
        self._contents.append(content)

    async def clear(self) -> None:
        self._contents.clear()

    async def save_state(self) -> dict[str, Any]:
        return {"memory_contents": [item.model_dump(mode="json") for item in self._contents]}

    async def load_state(self, state: dict[str, Any]) -> None:
        self._contents = [MemoryContent.model_validate(item) for item in state.get("memory_contents", [])]

    def __repr__(self) -> str:
        return f"ListMemory(name={self.name!r}, {len(self._contents)} items)"
