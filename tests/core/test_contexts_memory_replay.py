"""Model contexts, memory (STEP 2) and the replay model."""

from __future__ import annotations

import asyncio

import pytest

from nbagent import (
    AssistantAgent,
    AssistantMessage,
    BufferedChatCompletionContext,
    CancellationToken,
    CreateResult,
    FunctionCall,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    HeadAndTailChatCompletionContext,
    ListMemory,
    MemoryContent,
    ReplayChatCompletionClient,
    ReplayExhaustedError,
    SystemMessage,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
    UserMessage,
)
from nbagent.memory import MEMORY_HEADER
from nbagent.messages import LLMMessage

from .helpers import add, calls


def u(i: int) -> UserMessage:
    return UserMessage(content=f"u{i}", source="user")


def call(i: int) -> AssistantMessage:
    return AssistantMessage(content=[FunctionCall(id=f"c{i}", name="add", arguments="{}")], source="a")


def result(i: int) -> FunctionExecutionResultMessage:
    return FunctionExecutionResultMessage(content=[FunctionExecutionResult(content="r", name="add", call_id=f"c{i}")])


CONVERSATION = [u(0), call(1), result(1), u(2), call(3), result(3), AssistantMessage(content="end", source="a")]


async def fill(ctx):
    for message in CONVERSATION:
        await ctx.add_message(message)
    return ctx


async def test_unbounded_keeps_everything_and_state_round_trips() -> None:
    ctx = await fill(UnboundedChatCompletionContext())
    assert await ctx.get_messages() == CONVERSATION
    other = UnboundedChatCompletionContext()
    await other.load_state(await ctx.save_state())
    assert await other.get_messages() == CONVERSATION
    await ctx.clear()
    assert await ctx.get_messages() == [] and len(other) == 7


@pytest.mark.parametrize(
    ("size", "expected"),
    [
        (1, [CONVERSATION[6]]),
        (2, [CONVERSATION[6]]),  # last 2 start with a tool result: dropped
        (3, CONVERSATION[4:]),
        (5, CONVERSATION[2:][1:]),  # result(1) would be an orphan
        (6, CONVERSATION[1:]),
        (50, CONVERSATION),
    ],
)
async def test_buffered_never_starts_with_orphan_result(size: int, expected: list) -> None:
    ctx = await fill(BufferedChatCompletionContext(buffer_size=size))
    view = await ctx.get_messages()
    assert view == expected
    assert not view or not isinstance(view[0], FunctionExecutionResultMessage)
    assert ctx.messages == CONVERSATION


async def test_buffered_state_and_bad_size() -> None:
    ctx = await fill(BufferedChatCompletionContext(buffer_size=3))
    other = BufferedChatCompletionContext(buffer_size=3)
    await other.load_state(await ctx.save_state())
    assert await other.get_messages() == CONVERSATION[4:]
    with pytest.raises(ValueError, match="buffer_size"):
        BufferedChatCompletionContext(buffer_size=0)


async def test_head_and_tail() -> None:
    ctx = await fill(HeadAndTailChatCompletionContext(head_size=2, tail_size=2))
    view = await ctx.get_messages()
    # head u0, call(1) -> call has no result in the head: dropped; tail result(3), end -> orphan dropped
    assert view == [u(0), UserMessage(content="Skipped 5 messages.", source="System"), CONVERSATION[6]]
    small = await fill(HeadAndTailChatCompletionContext(head_size=4, tail_size=3))
    assert await small.get_messages() == CONVERSATION
    wide = await fill(HeadAndTailChatCompletionContext(head_size=3, tail_size=3))
    assert await wide.get_messages() == [
        *CONVERSATION[:3],
        UserMessage(content="Skipped 1 messages.", source="System"),
        *CONVERSATION[4:],
    ]
    with pytest.raises(ValueError):
        HeadAndTailChatCompletionContext(head_size=0, tail_size=1)


async def test_token_limited() -> None:
    ctx = await fill(TokenLimitedChatCompletionContext(token_limit=10, count_tokens=lambda m: 3))
    assert await ctx.get_messages() == CONVERSATION[4:]  # 3 messages fit
    tight = await fill(TokenLimitedChatCompletionContext(token_limit=7, count_tokens=lambda m: 3))
    assert await tight.get_messages() == [CONVERSATION[6]]  # result(3) would be an orphan
    default = await fill(TokenLimitedChatCompletionContext(token_limit=1000))
    assert await default.get_messages() == CONVERSATION
    with pytest.raises(ValueError):
        TokenLimitedChatCompletionContext(token_limit=0)


async def test_buffered_context_in_an_agent_sends_valid_view() -> None:
    script = [calls((f"c{i}", "add", '{"a": 1, "b": 1}')) for i in range(3)] + ["done"]
    client = ReplayChatCompletionClient(script)
    agent = AssistantAgent(
        "a", client, tools=[add], max_tool_iterations=4, model_context=BufferedChatCompletionContext(buffer_size=2)
    )
    await agent.run(task="go")
    for request in client.requests:
        body = [m for m in request.messages if not isinstance(m, SystemMessage)]
        assert not isinstance(body[0], FunctionExecutionResultMessage)
    assert len(agent.model_context) == 8


async def test_list_memory_query_add_clear_state() -> None:
    memory = ListMemory("m")
    with pytest.raises(TypeError):
        await memory.add("text")  # type: ignore[arg-type]
    await memory.add(MemoryContent(content="a"))
    await memory.add(MemoryContent(content={"k": 1}, mime_type="application/json"))
    assert [r.to_text() for r in (await memory.query("x")).results] == ["a", '{"k": 1}']
    other = ListMemory("n")
    await other.load_state(await memory.save_state())
    assert other.content == memory.content
    await memory.clear()
    assert (await memory.query("x")).results == []


async def test_memory_update_context_queries_with_last_message_and_skips_known_hits() -> None:
    queries: list[object] = []

    class Spy(ListMemory):
        async def query(self, query="", cancellation_token=None):
            queries.append(query)
            return await super().query(query, cancellation_token)

    memory = Spy(memory_contents=[MemoryContent(content="x")])
    ctx = UnboundedChatCompletionContext([u(1)])
    first = await memory.update_context(ctx)
    second = await memory.update_context(ctx)
    assert (first.added, second.added) == (1, 0)
    assert [len(r.memories.results) for r in (first, second)] == [1, 1]
    assert queries == ["u1", "\nRelevant memory content (in chronological order):\n1. x\n"]
    assert len(ctx) == 2


async def test_replay_stream_chunks_concatenate_exactly() -> None:
    for content in ["one two  three\n", "  lead", "", "x", "a\tb \n\nc  "]:
        client = ReplayChatCompletionClient([content])
        pieces = [p async for p in client.create_stream([u(0)])]
        assert isinstance(pieces[-1], CreateResult) and pieces[-1].content == content
        assert "".join(pieces[:-1]) == content
        assert all(isinstance(p, str) and p for p in pieces[:-1])
    several = ReplayChatCompletionClient(["one two three"])
    assert [p async for p in several.create_stream([u(0)])][:-1] == ["one ", "two ", "three"]


async def test_replay_records_requests_and_is_bounded() -> None:
    client = ReplayChatCompletionClient(["a", calls(("c1", "add", "{}")), "c"], keep_requests=2)
    tools = [{"name": "add", "description": "", "parameters": {}}]
    await client.create([u(1)])
    await client.create([u(2)], tools=tools, tool_choice="required")
    last = await client.create([u(3)], tool_choice="none", json_output=True)
    assert last.content == "c" and last.usage.completion_tokens == 1
    assert [(r.messages, r.tools, r.tool_choice, r.json_output) for r in client.requests] == [
        ([u(2)], tools, "required", None),
        ([u(3)], [], "none", True),
    ]
    with pytest.raises(ReplayExhaustedError, match="no answer left: all 3"):
        await client.create([u(4)])
    assert client.remaining == 0
    client.reset()
    assert client.remaining == 3 and len(client.requests) == 0
    assert client.total_usage().completion_tokens == 1 + 3 + 1


async def test_replay_exhausted_run_ends_with_clear_error_and_agent_reusable() -> None:
    client = ReplayChatCompletionClient([])
    agent = AssistantAgent("a", client)
    with pytest.raises(ReplayExhaustedError):
        await agent.run(task="go")
    assert not agent.is_running
    client.chat_completions.append("ok")
    assert (await agent.run(task="again")).messages[-1].content == "ok"


async def test_replay_rejects_bad_script_and_honours_token() -> None:
    with pytest.raises(TypeError):
        ReplayChatCompletionClient([3])  # type: ignore[list-item]
    token = CancellationToken()
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await ReplayChatCompletionClient(["x"]).create([u(0)], cancellation_token=token)


async def test_memory_dedup_matches_whole_entries_only() -> None:
    """A hit that is only the tail of an entry already in the context is still added."""
    first, second = ListMemory(), ListMemory()
    await first.add(MemoryContent(content="Use metric units. Prefer km"))
    await second.add(MemoryContent(content="Prefer km"))
    context = UnboundedChatCompletionContext([UserMessage(content="go", source="user")])
    assert (await first.update_context(context)).added == 1
    assert (await second.update_context(context)).added == 1
    assert (await second.update_context(context)).added == 0
    assert [m.content for m in context.messages[1:]] == [
        MEMORY_HEADER + "1. Use metric units. Prefer km\n",
        MEMORY_HEADER + "1. Prefer km\n",
    ]


async def test_the_model_is_sent_what_the_contexts_own_get_messages_gives() -> None:
    """The loop reads the view under the conversion layer when there is nothing to convert: a
    subclass's get_messages, one set on the class later and one set on the instance all still decide."""

    class LastOnly(UnboundedChatCompletionContext):
        async def get_messages(self) -> list[LLMMessage]:
            return (await super().get_messages())[-1:]

    client = ReplayChatCompletionClient(["a", "b", "c", "d"])
    context = LastOnly()
    agent = AssistantAgent("bot", client, model_context=context, system_message=None)
    await agent.run(task="one")
    await agent.run(task="two")
    assert [m.content for m in client.requests[-1].messages] == ["two"]

    async def first_only(self: UnboundedChatCompletionContext) -> list[LLMMessage]:
        return list(self.messages[:1])

    class Later(UnboundedChatCompletionContext):
        pass

    Later.get_messages = first_only  # type: ignore[method-assign]  # set on the class after it was made
    later = ReplayChatCompletionClient(["a", "b"])
    agent = AssistantAgent("later", later, model_context=Later(), system_message=None)
    await agent.run(task="one")
    await agent.run(task="two")
    assert [m.content for m in later.requests[-1].messages] == ["one"]

    async def nothing() -> list[LLMMessage]:
        return [UserMessage(content="the instance's own", source="user")]

    own = UnboundedChatCompletionContext()
    own.get_messages = nothing  # type: ignore[method-assign]  # on the instance
    mine = ReplayChatCompletionClient(["a"])
    await AssistantAgent("own", mine, model_context=own, system_message=None).run(task="one")
    assert [m.content for m in mine.requests[-1].messages] == ["the instance's own"]
