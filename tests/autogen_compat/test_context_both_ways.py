"""Issue 40.2: nbagent's model context inside AutoGen's ``AssistantAgent`` with AutoGen's own clients.

AutoGen's agent adds AutoGen's LLM messages to its context and sends what ``get_messages()`` gives to
its client, and AutoGen's OpenAI client accepts only AutoGen's types ("Unknown message type"). A
context fed AutoGen's messages gives AutoGen's back; it holds nbagent's (its ``messages``, the trace).
"""

from __future__ import annotations

import pytest
from autogen_agentchat.agents import AssistantAgent as AgAssistantAgent
from autogen_agentchat.base import TaskResult as AgTaskResult
from autogen_core import models as agm
from autogen_ext.models.openai import OpenAIChatCompletionClient as AgOpenAI
from autogen_ext.models.replay import ReplayChatCompletionClient as AgReplay

import nbagent
from nbagent import (
    AssistantAgent,
    BufferedChatCompletionContext,
    ChatCompletionContext,
    HeadAndTailChatCompletionContext,
    ReplayChatCompletionClient,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
)

from .test_seam_dumps import INFO, weather_over_http

CONTEXTS = {
    "unbounded": lambda: UnboundedChatCompletionContext(),
    "buffered": lambda: BufferedChatCompletionContext(buffer_size=3),
    "head_and_tail": lambda: HeadAndTailChatCompletionContext(head_size=1, tail_size=2),
    "token_limited": lambda: TokenLimitedChatCompletionContext(token_limit=10_000),
}


@pytest.mark.parametrize("kind", list(CONTEXTS))
async def test_nbagents_context_in_autogens_agent_with_autogens_replay_client(kind: str) -> None:
    context: ChatCompletionContext = CONTEXTS[kind]()
    agent = AgAssistantAgent(
        "ag", model_client=AgReplay(["one", "two", "three"], model_info=INFO), model_context=context
    )
    for task in ("hi", "again", "more"):
        result = await agent.run(task=task)
        assert isinstance(result, AgTaskResult)
    assert [m.content for m in result.messages] == ["more", "three"]
    view = await context.get_messages()  # what went in comes out: AutoGen's messages
    assert {type(m) for m in view} <= {agm.UserMessage, agm.AssistantMessage}
    assert [m.content for m in view][-2:] == ["more", "three"]
    # it holds nbagent's: what nbagent's trace and DataFrames read
    assert [type(m) for m in context.messages] == [nbagent.UserMessage, nbagent.AssistantMessage] * 3
    assert await context.save_state() == {"messages": [m.model_dump(mode="json") for m in context.messages]}
    await agent.on_reset(cancellation_token=None)  # type: ignore[arg-type]  # AutoGen's signature
    await context.add_message(nbagent.UserMessage(content="mine", source="user"))
    assert [type(m) for m in await context.get_messages()] == [nbagent.UserMessage]  # cleared: nbagent's again


@pytest.mark.parametrize("stream", [False, True], ids=["create", "create_stream"])
async def test_nbagents_context_in_autogens_agent_with_autogens_openai_client_over_http(stream: bool) -> None:
    """AutoGen's OpenAI client raised "Unknown message type" for nbagent's messages."""
    context = BufferedChatCompletionContext(buffer_size=5)
    result, server = await weather_over_http(AgOpenAI, "gpt-4o-2024-08-06", stream, model_context=context)
    assert result.messages[-1].content == "Sunny in Paris."
    sent = server.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool"]
    assert [type(m).__name__ for m in context.messages] == [
        "UserMessage",
        "AssistantMessage",
        "FunctionExecutionResultMessage",
        "AssistantMessage",
    ]
    assert all(type(m).__module__ == "nbagent.messages" for m in context.messages)


async def test_nbagents_agent_reads_its_context_in_nbagents_types_whatever_was_added() -> None:
    context = UnboundedChatCompletionContext()
    await context.add_message(agm.UserMessage(content="from AutoGen", source="user"))
    assert [type(m) for m in await context.get_messages()] == [agm.UserMessage]
    client = ReplayChatCompletionClient(["answer"])
    agent = AssistantAgent("nb", client, model_context=context)
    result = await agent.run(task="and mine")
    assert type(result.messages[-1]) is nbagent.TextMessage and result.messages[-1].content == "answer"
    sent = client.requests[0].messages
    assert [(type(m), m.content) for m in sent][1:] == [
        (nbagent.UserMessage, "from AutoGen"),
        (nbagent.UserMessage, "and mine"),
    ]


async def test_a_subclass_calling_super_gets_nbagents_messages() -> None:
    seen: list[type] = []

    class LastTwo(UnboundedChatCompletionContext):
        async def get_messages(self) -> list[nbagent.LLMMessage]:
            messages = await super().get_messages()
            seen.extend(type(m) for m in messages)
            return messages[-2:]

    context = LastTwo()
    for text in ("a", "b", "c"):
        await context.add_message(agm.UserMessage(content=text, source="user"))
    got = await context.get_messages()
    assert [(type(m), m.content) for m in got] == [(agm.UserMessage, "b"), (agm.UserMessage, "c")]
    assert set(seen) == {nbagent.UserMessage}
