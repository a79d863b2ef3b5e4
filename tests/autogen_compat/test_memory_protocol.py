"""AutoGen's Memory protocol, accepted as it is (``autogen_core.memory.Memory``).

AutoGen's documentation: a memory has ``query(query, cancellation_token=None)``,
``update_context(model_context)`` (one argument) returning an ``UpdateContextResult`` whose
``memories.results`` are the hits, ``add(content, cancellation_token=None)``, ``clear()`` and
``close()``. ``AssistantAgent(memory=[...])`` calls ``update_context`` on each memory before the model
call; a memory with hits yields a ``MemoryQueryEvent`` holding them, first; a result that is falsy
(``None``) or has no hits yields nothing. ``memory`` is a list of memories (or ``None``).
"""

from __future__ import annotations

from typing import Any

import pytest

from nbagent import (
    AssistantAgent,
    CancellationToken,
    ListMemory,
    MemoryContent,
    MemoryQueryEvent,
    MemoryQueryResult,
    ReplayChatCompletionClient,
    SystemMessage,
    UpdateContextResult,
)
from nbagent.memory import MemoryAdapter


class OneArgumentMemory:
    """A memory written for AutoGen: no nbagent base class, ``update_context(model_context)``."""

    def __init__(self, facts: list[str]) -> None:
        self.facts = facts
        self.updates = 0

    async def query(self, query: str | MemoryContent, cancellation_token: CancellationToken | None = None) -> Any:
        return MemoryQueryResult(results=[MemoryContent(content=fact) for fact in self.facts])

    async def update_context(self, model_context: Any) -> UpdateContextResult:
        self.updates += 1
        messages = await model_context.get_messages()
        assert messages[-1].content  # it reads the context, as AutoGen's memories do
        hits = (await self.query(messages[-1].content)).results
        lines = "\n".join(f"- {hit.content}" for hit in hits)
        await model_context.add_message(SystemMessage(content=f"Facts about the user:\n{lines}"))
        return UpdateContextResult(memories=MemoryQueryResult(results=hits))

    async def add(self, content: MemoryContent, cancellation_token: CancellationToken | None = None) -> None:
        self.facts.append(str(content.content))

    async def clear(self) -> None:
        self.facts.clear()

    async def close(self) -> None:
        pass


class NoneMemory(OneArgumentMemory):
    """A memory whose ``update_context`` returns ``None`` (no hits, nothing said)."""

    async def update_context(self, model_context: Any) -> None:  # type: ignore[override]
        self.updates += 1
        return None


async def test_a_one_argument_memory_adds_to_the_context_and_yields_its_hits_first() -> None:
    memory = OneArgumentMemory(["likes tea", "lives in Lyon"])
    model = ReplayChatCompletionClient(["Tea in Lyon, then."])
    agent = AssistantAgent("host", model, memory=[memory])
    result = await agent.run(task="What should I drink?")
    assert memory.updates == 1
    first = result.messages[1]  # after the task
    assert isinstance(first, MemoryQueryEvent)
    assert [hit.content for hit in first.content] == ["likes tea", "lives in Lyon"]
    sent = model.requests[0].messages
    assert any(isinstance(m, SystemMessage) and "lives in Lyon" in m.content for m in sent)
    assert result.messages[-1].content == "Tea in Lyon, then."


async def test_a_memory_returning_none_means_no_hits() -> None:
    memory = NoneMemory(["unused"])
    agent = AssistantAgent("host", ReplayChatCompletionClient(["Hello."]), memory=[memory])
    result = await agent.run(task="Hi")
    assert memory.updates == 1
    assert [type(m).__name__ for m in result.messages] == ["TextMessage", "TextMessage"]


async def test_a_single_memory_and_nbagents_two_argument_signature_are_accepted() -> None:
    class TwoArgumentMemory(OneArgumentMemory):
        async def update_context(self, model_context: Any, cancellation_token: Any = None) -> UpdateContextResult:  # type: ignore[override]
            self.token = cancellation_token
            return await super().update_context(model_context)

    memory = TwoArgumentMemory(["is a cat"])
    agent = AssistantAgent("host", ReplayChatCompletionClient(["Meow."]), memory=memory)  # type: ignore[arg-type]
    token = CancellationToken()
    result = await agent.run(task="Who am I?", cancellation_token=token)
    assert isinstance(result.messages[1], MemoryQueryEvent)
    assert isinstance(memory.token, CancellationToken)  # nbagent fix 4: memory receives the run's token


async def test_nbagents_own_memories_are_used_as_they_are() -> None:
    store = ListMemory(memory_contents=[MemoryContent(content="prefers short answers")])
    agent = AssistantAgent("host", ReplayChatCompletionClient(["Ok.", "Ok."]), memory=[store])
    assert agent.memory == [store]
    await agent.run(task="one")
    await agent.run(task="two")
    memory_messages = [m for m in agent.model_context.messages if isinstance(m, SystemMessage)]
    assert len(memory_messages) == 1  # nbagent fix 4: the same content is not added again


async def test_a_foreign_memory_does_not_pile_up_either() -> None:
    memory = OneArgumentMemory(["likes tea"])
    agent = AssistantAgent("host", ReplayChatCompletionClient(["a", "b", "c"]), memory=[memory])
    for task in ("one", "two", "three"):
        result = await agent.run(task=task)
        assert isinstance(result.messages[1], MemoryQueryEvent)  # its hits are reported every turn
    system = [m for m in agent.model_context.messages if isinstance(m, SystemMessage)]
    assert len(system) == 1 and memory.updates == 3


@pytest.mark.parametrize(
    ("memory", "message"),
    [
        (
            ["likes tea"],
            r"memory\[0\] must be a Memory \(an object with query, update_context, add, clear and close\), "
            r"got str: 'likes tea'",
        ),
        ([ListMemory(), 42], r"memory\[1\] must be a Memory .*got int: 42"),
        ("likes tea", r"Expected Memory, List\[Memory\], or None, got <class 'str'>: the memory argument must be"),
        ((ListMemory(),), r"Expected Memory, List\[Memory\], or None, got <class 'tuple'>"),
    ],
)
def test_a_wrong_memory_argument_names_the_parameter_and_the_items_type(memory: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        AssistantAgent("host", ReplayChatCompletionClient(["x"]), memory=memory)


def test_an_object_missing_a_method_is_not_a_memory_and_the_error_says_which() -> None:
    class NoClose:
        async def query(self, query: str) -> None: ...
        async def update_context(self, model_context: Any) -> None: ...
        async def add(self, content: Any) -> None: ...
        async def clear(self) -> None: ...

    with pytest.raises(TypeError, match=r"memory\[0\] must be a Memory .*got NoClose.*it has no close"):
        AssistantAgent("host", ReplayChatCompletionClient(["x"]), memory=[NoClose()])  # type: ignore[list-item]


async def test_autogens_own_list_memory_works_on_nbagent() -> None:
    core = pytest.importorskip("autogen_core.memory")
    memory = core.ListMemory(name="prefs")
    await memory.add(core.MemoryContent(content="The user likes tea", mime_type=core.MemoryMimeType.TEXT))
    model = ReplayChatCompletionClient(["Tea it is.", "Still tea."])
    agent = AssistantAgent("host", model, memory=[memory])
    [adapter] = agent.memory
    assert isinstance(adapter, MemoryAdapter) and adapter.memory is memory

    result = await agent.run(task="What should I drink?")
    event = result.messages[1]
    assert isinstance(event, MemoryQueryEvent)
    assert [(hit.content, hit.mime_type) for hit in event.content] == [("The user likes tea", "text/plain")]
    # AutoGen's memory added AutoGen's SystemMessage: the context holds nbagent's, with its text.
    [system] = [m for m in agent.model_context.messages if isinstance(m, SystemMessage)]
    assert "1. The user likes tea" in system.content
    agent.model_context.messages[0].model_dump_json()  # the context still serializes

    await agent.run(task="And tomorrow?")
    assert len([m for m in agent.model_context.messages if isinstance(m, SystemMessage)]) == 1
    state = await agent.save_state()
    assert "The user likes tea" in str(state)

    # Its other methods, through nbagent's view of it.
    hits = await adapter.query("tea")
    assert [hit.content for hit in hits.results] == ["The user likes tea"]
    await adapter.clear()
    assert (await adapter.query("tea")).results == []
    await adapter.close()
