"""AssistantAgent end to end on OpenAIChatCompletionClient: the SDK, real HTTP, the validating server.

Every request the agent sends passes the server's validator (it answers 400 otherwise), so these
tests also prove that each context the loop builds is one the Chat Completions API accepts. The
model-fault tests (issue 9, item 2) check that after each fault the context is what it was, and
that the next run succeeds.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from pydantic import BaseModel

from nbagent import (
    AssistantAgent,
    CancellationToken,
    Handoff,
    HandoffMessage,
    ModelClientStreamingChunkEvent,
    StructuredMessage,
    ToolCallExecutionEvent,
    ToolCallRequestEvent,
    ToolCallSummaryMessage,
)
from nbagent.models import (
    ModelConnectionError,
    ModelError,
    ModelRateLimitError,
    ModelResponseError,
    ModelServerError,
    ModelTimeoutError,
    OpenAIChatCompletionClient,
)

from .chat_server import ChatServer, Reply, validate_request
from .conftest import TEST_KEY


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def kinds(items: Any) -> list[str]:
    return [type(item).__name__ for item in items]


def dumped(agent: AssistantAgent) -> list[dict[str, Any]]:
    return [message.model_dump(mode="json") for message in agent.model_context.messages]


async def test_tool_loop_with_summary(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, tools=[add])
    server.script(Reply.call(("add", {"a": 2, "b": 3})))
    result = await agent.run(task="2+3?")
    assert kinds(result.messages) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallSummaryMessage",
    ]
    assert result.messages[-1].content == "5"
    assert result.messages[1].models_usage.prompt_tokens == 10
    calls = agent.trace.llm_calls_df()
    assert calls[["model", "provider"]].astype(str).values.tolist() == [["gpt-4o", "openai"]]
    tools = server.requests[0].body["tools"]
    assert tools[0]["function"]["name"] == "add" and tools[0]["function"]["parameters"]["required"] == ["a", "b"]


async def test_two_rounds_then_text_each_request_valid(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, tools=[add], max_tool_iterations=3)
    server.script(
        Reply.call(("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4}), call_ids=("c1", "c2")),
        Reply.call(("add", {"a": 3, "b": 7}), call_ids=("c3",)),
        Reply.text("The total is 10."),
    )
    result = await agent.run(task="sum things")
    assert kinds(result.messages) == [
        "TextMessage",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "TextMessage",
    ]
    assert [r.content for r in result.messages[2].content] == ["3", "7"]
    assert result.messages[-1].content == "The total is 10."
    last = server.requests[2].body["messages"]
    assert [m["role"] for m in last] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    assert [r.status for r in server.requests] == [200, 200, 200]


async def test_streaming_reflection_and_thought(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, tools=[add], reflect_on_tool_use=True, model_client_stream=True)
    server.script(
        Reply.call(("add", {"a": 2, "b": 3}), reasoning="I should add"),
        Reply.text("<think>the tool said 5</think>It is 5.", pieces=3),
    )
    items = [item async for item in agent.run_stream(task="2+3?")]
    events = [item for item in items if not isinstance(item, ModelClientStreamingChunkEvent)]
    assert kinds(events) == [
        "TextMessage",
        "ThoughtEvent",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "ThoughtEvent",
        "TextMessage",
        "TaskResult",
    ]
    result = items[-1]
    assert events[1].content == "I should add"
    # Each call's reasoning streamed as AutoGen's client streams it, before its thought
    before, after = items[: items.index(events[1])], items[items.index(events[3]) :]
    assert "".join(c.content for c in before if isinstance(c, ModelClientStreamingChunkEvent)) == (
        "<think>I should add</think>"
    )
    chunks = [m for m in after if isinstance(m, ModelClientStreamingChunkEvent)]
    assert "".join(c.content for c in chunks) == "<think>the tool said 5</think>It is 5."
    assert {c.full_message_id for c in chunks} == {result.messages[-1].id}
    assert events[4].content == "the tool said 5" and result.messages[-1].content == "It is 5."
    reflection = server.requests[1].body
    assert "tools" not in reflection and "tool_choice" not in reflection
    assert reflection["stream_options"] == {"include_usage": True}
    assert result.messages[-1].models_usage.prompt_tokens == 10


async def test_handoff(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, tools=[add], handoffs=[Handoff(target="planner")])
    server.script(Reply.call(("add", {"a": 1, "b": 1}), ("transfer_to_planner", {}), call_ids=("c1", "h1")))
    result = await agent.run(task="plan it")
    handoff = result.messages[-1]
    assert isinstance(handoff, HandoffMessage) and handoff.target == "planner"
    assert [m.type for m in handoff.context] == ["AssistantMessage", "FunctionExecutionResultMessage"]
    names = [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert names == ["add", "transfer_to_planner"]
    server.script(Reply.text("back"))
    follow = await agent.run(task="and now?")
    assert follow.messages[-1].content == "back"


class Sum(BaseModel):
    total: int
    explanation: str


async def test_structured_output_after_tools(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, tools=[add], output_content_type=Sum)
    server.script(Reply.call(("add", {"a": 2, "b": 3})), Reply.text('{"total": 5, "explanation": "2+3"}'))
    result = await agent.run(task="2+3?")
    answer = result.messages[-1]
    assert isinstance(answer, StructuredMessage) and answer.content == Sum(total=5, explanation="2+3")
    assert server.requests[1].body["response_format"]["json_schema"]["name"] == "Sum"


# --------------------------------------------------------------------------- model faults (issue 9)

FAULTS = {
    "429 after retries": (
        Reply.error(429, "Rate limit reached", headers={"retry-after-ms": "1"}),
        ModelRateLimitError,
        False,
    ),
    "500": (Reply.error(500, "internal error"), ModelServerError, False),
    "timeout": (Reply.text("late", delay=3.0), ModelTimeoutError, False),
    "reset mid-stream": (Reply.text("partial answer here", cut_after=3), ModelConnectionError, True),
    "reset mid tool-call stream": (Reply.call(("add", {"a": 1, "b": 2}), cut_after=4), ModelConnectionError, True),
    "malformed SSE line": (Reply.text("partial answer", malformed_at=3), ModelResponseError, True),
    "empty choices": (Reply.text("x", empty_choices=True), ModelResponseError, False),
    "empty choices streamed": (Reply.text("x", empty_choices=True), ModelResponseError, True),
    "error event in stream": (Reply.text("x", error_event_at=2, error_message="overloaded"), ModelError, True),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_model_fault_leaves_the_context_clean_and_the_agent_usable(server: ChatServer, fault: str) -> None:
    reply, error_type, stream = FAULTS[fault]
    # A short timeout only where it is the fault, so that a loaded machine does not time out the rest.
    timeout = 1.0 if error_type is ModelTimeoutError else 30.0
    client = OpenAIChatCompletionClient(
        "gpt-4o", base_url=server.base_url, api_key=TEST_KEY, timeout=timeout, max_retries=0
    )
    agent = AssistantAgent("agent", client, tools=[add], model_client_stream=stream)
    server.script(Reply.text("first answer"))
    await agent.run(task="warm up")
    before = dumped(agent)

    server.script(reply)
    with pytest.raises(error_type):
        await agent.run(task="this call fails")
    after = dumped(agent)
    assert after[: len(before)] == before
    assert after[len(before) :] == [{"content": "this call fails", "source": "user", "type": "UserMessage"}]
    assert not agent.is_running

    server.script(Reply.call(("add", {"a": 1, "b": 2})))
    result = await agent.run(task="try again")
    assert kinds(result.messages)[-1] == "ToolCallSummaryMessage" and result.messages[-1].content == "3"
    assert validate_request(server.requests[-1].body) == []
    await client.close()


async def test_429_then_success_is_retried_inside_one_run(server: ChatServer) -> None:
    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=2)
    agent = AssistantAgent("agent", client)
    server.script(Reply.error(429, "slow down", headers={"retry-after-ms": "1"}), Reply.text("done"))
    result = await agent.run(task="go")
    assert kinds(result.messages) == ["TextMessage", "TextMessage"] and result.messages[-1].content == "done"
    assert [r.status for r in server.requests] == [429, 200]
    await client.close()


@pytest.mark.parametrize("stream", [False, True])
async def test_bad_tool_arguments_and_unknown_tool_become_error_results(
    server: ChatServer, client: OpenAIChatCompletionClient, stream: bool
) -> None:
    agent = AssistantAgent("agent", client, tools=[add], reflect_on_tool_use=True, model_client_stream=stream)
    server.script(
        Reply.call(("add", '{"a": 1, "b":'), ("divide", {"a": 1}), call_ids=("c1", "c2")),
        Reply.text("Sorry, both failed."),
    )
    result = await agent.run(task="go")
    execution = next(m for m in result.messages if isinstance(m, ToolCallExecutionEvent))
    assert [(r.call_id, r.is_error) for r in execution.content] == [("c1", True), ("c2", True)]
    assert execution.content[0].content.startswith("Error: arguments for tool 'add' are not valid JSON")
    assert execution.content[1].content == "Error: tool 'divide' not found in any workbench"
    assert result.messages[-1].content == "Sorry, both failed."
    tool_messages = [m for m in server.requests[1].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]
    assert isinstance(result.messages[1], ToolCallRequestEvent)


async def test_summary_message_type_for_tool_only_run(server: ChatServer, client: OpenAIChatCompletionClient) -> None:
    agent = AssistantAgent("agent", client, tools=[add], model_client_stream=True)
    server.script(Reply.call(("add", {"a": 20, "b": 22}), pieces=2))
    result = await agent.run(task="go")
    assert isinstance(result.messages[-1], ToolCallSummaryMessage) and result.messages[-1].content == "42"


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("how", ["token", "task"])
async def test_cancelled_llm_call_leaves_a_context_the_api_accepts(
    server: ChatServer, client: OpenAIChatCompletionClient, stream: bool, how: str
) -> None:
    agent = AssistantAgent("agent", client, tools=[add], max_tool_iterations=2, model_client_stream=stream)
    slow = Reply.text("never finished", chunk_delay=30.0) if stream else Reply.text("never sent", delay=30.0)
    server.script(Reply.call(("add", {"a": 1, "b": 2})), slow)
    token = CancellationToken()
    run = asyncio.ensure_future(agent.run(task="go", cancellation_token=token))
    while len(server.requests) < 2:
        await asyncio.sleep(0.01)
    token.cancel() if how == "token" else run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    assert [m["type"] for m in dumped(agent)] == ["UserMessage", "AssistantMessage", "FunctionExecutionResultMessage"]
    assert not agent.is_running
    server.script(Reply.text("fresh answer"))
    result = await agent.run(task="next")
    assert result.messages[-1].content == "fresh answer"
    assert server.requests[-1].status == 200


def test_one_client_serves_runs_on_successive_event_loops(server: ChatServer) -> None:
    """``nbagent.run`` in a script runs each call in a new loop: the client must not reuse the old loop's
    connections."""
    import nbagent

    client = OpenAIChatCompletionClient("gpt-4o", base_url=server.base_url, api_key=TEST_KEY, max_retries=0)
    server.script(Reply.text("one"), Reply.text("two"), Reply.text("three"))
    assert nbagent.run(AssistantAgent("a", client), "first").messages[-1].content == "one"
    assert nbagent.run(AssistantAgent("b", client), "second").messages[-1].content == "two"
    assert nbagent.run(AssistantAgent("c", client, model_client_stream=True), "third").messages[-1].content == "three"
