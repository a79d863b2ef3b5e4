"""Memory: long-term stores queried at STEP 2, whose hits enter the model context.

AutoGen's ``Memory`` protocol is accepted as it is, duck-typed (:func:`as_memories`): any object
with ``query``, ``update_context``, ``add``, ``clear`` and ``close``. ``update_context`` may take
AutoGen's one argument ``(model_context)`` or nbagent's ``(model_context, cancellation_token)``, and
may return ``None`` for no hits (:func:`update_memory_context`).
"""

from __future__ import annotations

import inspect
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Self, cast

from pydantic import BaseModel, Field

from . import _check as check
from .cancellation import CancellationToken
from .components import Component, ComponentModel, dump_nested
from .context import ChatCompletionContext, context_view
from .hooks import Hook
from .messages import (
    AssistantMessage,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    Image,
    LLMMessage,
    MemoryContent,
    SystemMessage,
    UserMessage,
)
from .tools import as_image

MEMORY_HEADER = "\nRelevant memory content (in chronological order):\n"


@dataclass
class MemoryQueryResult:
    results: list[MemoryContent] = field(default_factory=list)


@dataclass
class UpdateContextResult:
    """The hits of one store for this turn (``memories``) and how many were new to the context."""

    memories: MemoryQueryResult
    added: int = 0


class Memory(Component, ABC):
    """A memory store. STEP 2 calls ``update_context`` on each store the agent has."""

    component_type = "memory"

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
        return None

    async def update_context(
        self, model_context: ChatCompletionContext, cancellation_token: CancellationToken | None = None
    ) -> UpdateContextResult:
        """Query with the last message of the context and add the hits not already in it.

        nbagent fix: the reference adds every hit again on every turn, so the context grows with
        copies; here a hit whose text is already in a memory system message is not added again.
        Another library's context (AutoGen's agent calling) is read through its ``get_messages``,
        given the memory message in its own types (:func:`~nbagent.context.context_view`), and the
        result is in that library's types too (:data:`RESULT_FOR`: AutoGen's agent reads its own).
        """
        ours = isinstance(model_context, ChatCompletionContext)
        view = context_view(model_context)
        messages = view.messages if ours else await view.get_messages()
        query = messages[-1].content if messages and isinstance(messages[-1].content, str) else ""
        found = await self.query(query, cancellation_token)
        new: list[str] = []
        if found.results:
            present = "\n".join(
                message.content[len(MEMORY_HEADER) :]
                for message in messages
                if isinstance(message, SystemMessage) and message.content.startswith(MEMORY_HEADER)
            )
            texts = (item.to_text() for item in found.results)
            new = [text for text in texts if not _has_entry(present, text)]
        if new:
            lines = "".join(f"{i}. {text}\n" for i, text in enumerate(new, 1))
            await view.add_message(SystemMessage(content=MEMORY_HEADER + lines))
        result = UpdateContextResult(memories=found, added=len(new))
        # In another library's types for its caller: its context, or nbagent's fed its messages (its agent holding it).
        theirs = None if ours and model_context.answers_back is None else RESULT_FOR(model_context, result)
        return result if theirs is None else cast(UpdateContextResult, theirs)

    async def save_state(self) -> dict[str, Any]:
        return {}

    async def load_state(self, state: dict[str, Any]) -> None:
        """Restore from ``save_state`` output; nothing by default."""
        return None


RESULT_FOR: Hook[[object, UpdateContextResult], object] = Hook("memory result")
"""``update_context``'s result in the types of the library whose model context it was given (AutoGen's
``UpdateContextResult`` of AutoGen's ``MemoryContent``, which AutoGen's agent puts in its
``MemoryQueryEvent``; registered by :mod:`nbagent.autogen`); ``None``: nbagent's result as it is."""


def _has_entry(blocks: str, text: str) -> bool:
    """Whether ``text`` is a whole numbered entry (``N. text``) of the memory blocks."""
    return re.search(rf"(?:^|\n)\d+\. {re.escape(text)}\n", blocks) is not None


class ListMemoryConfig(BaseModel):
    """AutoGen's ``ListMemory`` config: its name and contents."""

    name: str | None = None
    memory_contents: list[MemoryContent] = Field(default_factory=list)


class ListMemory(Memory):
    """A list of contents, all returned for every query, in the order they were added."""

    component_config_schema = ListMemoryConfig
    component_provider_override = "nbagent.ListMemory"
    component_aliases = ("autogen_core.memory.ListMemory",)

    def __init__(self, name: str = "list_memory", memory_contents: list[MemoryContent] | None = None) -> None:
        check.string("ListMemory", "name", name)
        self.name = name
        items = (
            []
            if memory_contents is None
            else check.sequence("ListMemory", "memory_contents", memory_contents, "a list of MemoryContent or None")
        )
        for index, item in enumerate(items):
            if not isinstance(item, MemoryContent) and not (hasattr(item, "content") and hasattr(item, "mime_type")):
                check.fail_type("ListMemory", f"memory_contents[{index}]", "a MemoryContent", item)
        self._contents: list[MemoryContent] = [as_memory_content(item) for item in items]  # AutoGen's converted

    @property
    def content(self) -> list[MemoryContent]:
        return list(self._contents)

    def _to_config(self) -> ListMemoryConfig:
        return ListMemoryConfig(name=self.name, memory_contents=list(self._contents))

    @classmethod
    def _from_config(cls, config: ListMemoryConfig) -> Self:
        return cls(name=config.name or "list_memory", memory_contents=config.memory_contents)

    async def query(
        self, query: str | MemoryContent = "", cancellation_token: CancellationToken | None = None
    ) -> MemoryQueryResult:
        return MemoryQueryResult(results=list(self._contents))

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        if not isinstance(content, MemoryContent):
            if isinstance(content, (str, bytes)) or not hasattr(content, "content"):
                raise TypeError(f"ListMemory.add takes a MemoryContent, got {type(content).__name__}")
            content = as_memory_content(content)  # AutoGen's MemoryContent
        self._contents.append(content)

    async def clear(self) -> None:
        self._contents.clear()

    async def save_state(self) -> dict[str, Any]:
        return {"memory_contents": [item.model_dump(mode="json") for item in self._contents]}

    async def load_state(self, state: dict[str, Any]) -> None:
        self._contents = [MemoryContent.model_validate(item) for item in state.get("memory_contents", [])]

    def __repr__(self) -> str:
        return f"ListMemory(name={self.name!r}, {len(self._contents)} items)"


# --------------------------------------------------------------------------- AutoGen's protocol, duck-typed

MEMORY_METHODS = ("query", "update_context", "add", "clear", "close")


def is_memory(value: Any) -> bool:
    """Whether ``value`` follows the Memory protocol: callable query, update_context, add, clear and close."""
    return isinstance(value, Memory) or all(callable(getattr(value, name, None)) for name in MEMORY_METHODS)


def _not_a_memory(where: str, value: Any) -> TypeError:
    missing = [name for name in MEMORY_METHODS if not callable(getattr(value, name, None))]
    return TypeError(
        f"{where} must be a Memory (an object with {', '.join(MEMORY_METHODS[:-1])} and {MEMORY_METHODS[-1]}), "
        f"got {type(value).__name__}: {value!r:.80} (it has no {', '.join(missing)})"
    )


def as_memories(memory: Any) -> list[Memory]:
    """The ``memory`` argument of ``AssistantAgent``: ``None``, one memory, or a list of them (AutoGen
    takes no other sequence).

    nbagent's memories are used as they are; any other object following the protocol (AutoGen's
    ``ListMemory``, autogen-ext's ChromaDB, Redis, Mem0 memories...) is wrapped in a
    :class:`MemoryAdapter`. A wrong argument raises a ``TypeError`` naming the parameter, the item
    and its type.
    """
    if memory is None:
        return []
    if isinstance(memory, list):
        found: list[Memory] = []
        for index, item in enumerate(memory):
            if not is_memory(item):
                raise _not_a_memory(f"memory[{index}]", item)
            found.append(_own(item))
        return found
    if is_memory(memory):
        return [_own(memory)]
    # AutoGen's message (a list is the only sequence it takes), then what was wrong.
    missing = [name for name in MEMORY_METHODS if not callable(getattr(memory, name, None))]
    lacks = f" ({type(memory).__name__} has no {', '.join(missing)})" if len(missing) < len(MEMORY_METHODS) else ""
    raise TypeError(
        f"Expected Memory, List[Memory], or None, got {type(memory)}: the memory argument must be a Memory "
        f"(an object with {', '.join(MEMORY_METHODS[:-1])} and {MEMORY_METHODS[-1]}) or a list of them{lacks}"
    )


def _own(memory: Any) -> Memory:
    """nbagent's memory as it is; anything else (a ``MagicMock(spec=Memory)`` too) by its protocol."""
    return memory if issubclass(type(memory), Memory) else MemoryAdapter(memory)


_TAKES_TOKEN: dict[Any, str] = {}


def _token_mode(method: Callable[..., Any], arity: int) -> str:
    """How ``method`` takes a cancellation token after its ``arity`` positional arguments: by
    keyword, by position, or not at all (AutoGen's one-argument ``update_context``)."""
    key = getattr(method, "__func__", method)
    mode = _TAKES_TOKEN.get(key)
    if mode is None:
        try:
            parameters = list(inspect.signature(method).parameters.values())
        except (TypeError, ValueError):
            mode = "keyword"
        else:
            kinds = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
            positional = [p for p in parameters if p.kind in kinds]
            if any(p.name == "cancellation_token" for p in parameters) or any(
                p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters
            ):
                mode = "keyword"
            elif len(positional) > arity or any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in parameters):
                mode = "positional"
            else:
                mode = "none"
        _TAKES_TOKEN[key] = mode
    return mode


def _with_token(method: Callable[..., Any], args: tuple[Any, ...], token: CancellationToken | None) -> Any:
    mode = _token_mode(method, len(args))
    if mode == "keyword":
        return method(*args, cancellation_token=token)
    if mode == "positional":
        return method(*args, token)
    return method(*args)


def update_memory_context(
    memory: Any, model_context: ChatCompletionContext, cancellation_token: CancellationToken | None = None
) -> Awaitable[UpdateContextResult]:
    """STEP 2 for one store: its ``update_context`` called with the arguments it takes, and what it
    returns read as nbagent's :class:`UpdateContextResult` (``None`` meaning no hits).

    nbagent's own ``ListMemory`` (not a subclass) is called directly: it takes the token by keyword
    and returns nbagent's result, with the contents it holds (each a ``MemoryContent``)."""
    if type(memory) is ListMemory:
        return memory.update_context(model_context, cancellation_token)
    return _converted_update(memory, model_context, cancellation_token)


async def _converted_update(
    memory: Any, model_context: ChatCompletionContext, cancellation_token: CancellationToken | None
) -> UpdateContextResult:
    value = await _with_token(memory.update_context, (model_context,), cancellation_token)
    return as_update_result(value)


def as_memory_content(item: Any) -> MemoryContent:
    """One hit as nbagent's :class:`MemoryContent`: nbagent's, AutoGen's (its ``mime_type`` may be an
    enum, its image AutoGen's ``Image``), a dict of the same fields, or a plain text."""
    if isinstance(item, MemoryContent):
        return item
    if isinstance(item, str):
        return MemoryContent(content=item)
    get = item.get if isinstance(item, Mapping) else lambda key, default=None: getattr(item, key, default)
    content = get("content")
    mime = get("mime_type", "text/plain")
    mime = getattr(mime, "value", mime)
    metadata = get("metadata")
    if not isinstance(content, (str, dict, Image)):
        try:
            content = as_image(content)
        except TypeError:
            content = str(content)
    return MemoryContent(
        content=content,
        mime_type=str(mime or "text/plain"),
        metadata=dict(metadata) if isinstance(metadata, Mapping) else None,
    )


def as_query_result(value: Any) -> MemoryQueryResult:
    """What a store's ``query`` returned, as nbagent's :class:`MemoryQueryResult` (``None``: no hits)."""
    if value is None:
        return MemoryQueryResult()
    results = value if isinstance(value, (list, tuple)) else getattr(value, "results", None)
    if results is None and isinstance(value, Mapping):
        results = value.get("results")
    if results is None:
        raise TypeError(f"a memory query returned {type(value).__name__}, not a MemoryQueryResult (results)")
    if isinstance(value, MemoryQueryResult) and all(isinstance(item, MemoryContent) for item in results):
        return value
    return MemoryQueryResult(results=[as_memory_content(item) for item in results])


def as_update_result(value: Any) -> UpdateContextResult:
    """What a store's ``update_context`` returned, as nbagent's :class:`UpdateContextResult`.

    ``None`` (a store that found nothing, or that says nothing) is no hits; AutoGen's result
    (``memories.results`` holding AutoGen's ``MemoryContent``) is converted.
    """
    if value is None:
        return UpdateContextResult(memories=MemoryQueryResult())
    if isinstance(value, UpdateContextResult) and isinstance(value.memories, MemoryQueryResult):
        if all(isinstance(item, MemoryContent) for item in value.memories.results):
            return value
    memories = value.get("memories") if isinstance(value, Mapping) else getattr(value, "memories", None)
    if memories is None and (hasattr(value, "results") or isinstance(value, (list, tuple))):
        memories = value  # a query result where an update result was due
    if memories is None:
        raise TypeError(
            f"a memory's update_context returned {type(value).__name__}, not an UpdateContextResult (memories) or None"
        )
    result = as_query_result(memories)
    added = getattr(value, "added", None)
    return UpdateContextResult(memories=result, added=added if isinstance(added, int) else len(result.results))


class MemoryAdapter(Memory):
    """A memory that is not nbagent's (AutoGen's ``ListMemory``, autogen-ext's stores, any object
    with the protocol's methods), seen through nbagent's :class:`Memory`.

    Its ``update_context`` gets a view of the model context that turns the messages it adds
    (AutoGen's ``SystemMessage``...) into nbagent's, and does not add a system message already in
    the context (nbagent fix 4: memory does not pile up).
    """

    def __init__(self, memory: Any) -> None:
        if not is_memory(memory):
            raise _not_a_memory("memory", memory)
        self.memory = memory
        self.name = getattr(memory, "name", type(memory).__name__)

    def dump_component(self, *, include_secrets: bool | None = None) -> ComponentModel:
        """The wrapped memory's own config (AutoGen's ``ListMemory`` loads as nbagent's)."""
        return dump_nested(self.memory)

    async def query(
        self, query: str | MemoryContent = "", cancellation_token: CancellationToken | None = None
    ) -> MemoryQueryResult:
        return as_query_result(await _with_token(self.memory.query, (query,), cancellation_token))

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        await _with_token(self.memory.add, (content,), cancellation_token)

    async def clear(self) -> None:
        await self.memory.clear()

    async def close(self) -> None:
        await self.memory.close()

    async def update_context(
        self, model_context: ChatCompletionContext, cancellation_token: CancellationToken | None = None
    ) -> UpdateContextResult:
        view = ForeignContextView(model_context)
        return as_update_result(await _with_token(self.memory.update_context, (view,), cancellation_token))

    async def save_state(self) -> dict[str, Any]:
        save = getattr(self.memory, "save_state", None)
        return dict(await save()) if callable(save) else {}

    async def load_state(self, state: dict[str, Any]) -> None:
        load = getattr(self.memory, "load_state", None)
        if callable(load):
            await load(state)

    def __repr__(self) -> str:
        return f"MemoryAdapter({self.memory!r})"


class ForeignContextView:
    """The model context as a memory written for AutoGen sees it.

    ``get_messages`` gives nbagent's messages (their fields are AutoGen's); ``add_message`` takes
    AutoGen's messages as well and stores nbagent's. Everything else is the context's own.
    """

    def __init__(self, context: ChatCompletionContext) -> None:
        self._context = context

    async def get_messages(self) -> list[LLMMessage]:
        return await self._context.get_messages()

    async def add_message(self, message: Any) -> None:
        converted = as_llm_message(message)
        if isinstance(converted, SystemMessage) and any(
            isinstance(present, SystemMessage) and present.content == converted.content
            for present in self._context.messages
        ):
            return
        await self._context.add_message(converted)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


def as_llm_message(message: Any) -> LLMMessage:
    """An LLM message as nbagent's, from nbagent's or AutoGen's (same type names and fields)."""
    if isinstance(message, (SystemMessage, UserMessage, AssistantMessage, FunctionExecutionResultMessage)):
        return message
    kind = getattr(message, "type", None) or type(message).__name__
    content = getattr(message, "content", None)
    if kind == "SystemMessage" and isinstance(content, str):
        return SystemMessage(content=content)
    source = str(getattr(message, "source", "") or "")
    if kind == "UserMessage" and content is not None:
        items = (
            content
            if isinstance(content, str)
            else [part if isinstance(part, str) else as_image(part) for part in content]
        )
        return UserMessage(content=items, source=source)
    if kind == "AssistantMessage" and content is not None:
        body = (
            content
            if isinstance(content, str)
            else [FunctionCall(id=call.id, name=call.name, arguments=call.arguments) for call in content]
        )
        return AssistantMessage(content=body, thought=getattr(message, "thought", None), source=source)
    if kind == "FunctionExecutionResultMessage" and content is not None:
        return FunctionExecutionResultMessage(
            content=[
                FunctionExecutionResult(
                    content=str(result.content),
                    name=str(getattr(result, "name", "") or ""),
                    call_id=result.call_id,
                    is_error=bool(getattr(result, "is_error", False)),
                )
                for result in content
            ]
        )
    raise TypeError(f"not an LLM message: {type(message).__name__}")
