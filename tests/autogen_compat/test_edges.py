"""AutoGen's objects handed to nbagent's agent at its edges (issue 27): converted exactly or refused
with an error that says they are AutoGen's and what to pass instead (never "must be X, got X").

From AutoGen 0.7.5's public API: ``autogen_core.tools.FunctionTool(func, description)`` in
``tools=``, its model contexts (``UnboundedChatCompletionContext``, ``BufferedChatCompletionContext(
buffer_size, initial_messages)``, ``HeadAndTailChatCompletionContext(head_size, tail_size)``) as
``model_context``, and its ``TextMessage`` as a task.
"""

from __future__ import annotations

import asyncio

import pytest
from autogen_agentchat import messages as ag
from autogen_core import CancellationToken as AgCancellationToken
from autogen_core.model_context import (
    BufferedChatCompletionContext as AgBuffered,
)
from autogen_core.model_context import (
    HeadAndTailChatCompletionContext as AgHeadAndTail,
)
from autogen_core.model_context import (
    UnboundedChatCompletionContext as AgUnbounded,
)
from autogen_core.models import AssistantMessage as AgAssistantMessage
from autogen_core.models import UserMessage as AgUserMessage
from autogen_core.tools import FunctionTool as AgFunctionTool

import nbagent
from nbagent import (
    AssistantAgent,
    BufferedChatCompletionContext,
    CreateResult,
    FunctionCall,
    HeadAndTailChatCompletionContext,
    ReplayChatCompletionClient,
    UnboundedChatCompletionContext,
    UserMessage,
)

from ..waits import within


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def call(name: str, arguments: str) -> CreateResult:
    return CreateResult(finish_reason="function_calls", content=[FunctionCall(id="c1", name=name, arguments=arguments)])


async def test_autogens_function_tool_in_tools_runs_as_itself() -> None:
    tool = AgFunctionTool(add, description="Add two numbers, exactly.")
    agent = AssistantAgent("bot", ReplayChatCompletionClient([call("add", '{"a": 2, "b": 3}')]), tools=[tool])
    assert agent.tools == [tool.schema]  # the schema AutoGen built, as it is
    result = await agent.run(task="2 + 3")
    assert result.messages[-1].to_text() == "5"  # ToolCallSummaryMessage, AutoGen's return_value_as_string
    # Arguments that do not fit are an error result, as for any tool; the run goes on.
    bad = AssistantAgent("bad", ReplayChatCompletionClient([call("add", '{"a": "x"}')]), tools=[tool])
    (execution,) = [m for m in (await bad.run(task="?")).messages if type(m).__name__ == "ToolCallExecutionEvent"]
    assert execution.content[0].is_error


async def test_an_autogen_tool_is_cancelled_with_the_run() -> None:
    started = asyncio.Event()

    async def slow(x: int) -> int:
        """Wait."""
        started.set()
        await asyncio.sleep(3600)  # far past the test's hang guard: only the cancel ends it
        return x

    agent = AssistantAgent(
        "bot", ReplayChatCompletionClient([call("slow", '{"x": 1}')]), tools=[AgFunctionTool(slow, description="Wait.")]
    )
    token = nbagent.CancellationToken()
    run = asyncio.ensure_future(agent.run(task="go", cancellation_token=token))
    await within(started.wait(), "the tool to start")
    token.cancel()
    with pytest.raises(asyncio.CancelledError):
        await within(run, "the cancelled run to end")
    results = agent.model_context.messages[-1]
    assert type(results).__name__ == "FunctionExecutionResultMessage" and results.content[0].is_error


async def test_autogens_model_contexts_become_their_twins_with_their_messages() -> None:
    buffered = AgBuffered(buffer_size=2, initial_messages=[AgUserMessage(content="first", source="u")])
    await buffered.add_message(AgAssistantMessage(content="second", source="bot"))
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["third"]), model_context=buffered)
    context = agent.model_context
    assert type(context) is BufferedChatCompletionContext and context.dump_component().config["buffer_size"] == 2
    assert [m.content for m in context.messages] == ["first", "second"]
    await agent.run(task="go")
    assert [m.content for m in await context.get_messages()] == ["go", "third"]  # the buffer of 2, as AutoGen's

    assert type(AssistantAgent("b", ReplayChatCompletionClient([]), model_context=AgUnbounded()).model_context) is (
        UnboundedChatCompletionContext
    )
    head_tail = AssistantAgent(
        "c", ReplayChatCompletionClient([]), model_context=AgHeadAndTail(head_size=1, tail_size=2)
    )
    assert type(head_tail.model_context) is HeadAndTailChatCompletionContext
    assert head_tail.model_context.dump_component().config["tail_size"] == 2


async def test_a_subclass_of_an_autogen_context_runs_its_own_code_in_autogens_messages() -> None:
    """Issue 40.3: a subclass of AutoGen's context is taken by its protocol (not refused): it is given
    AutoGen's messages, and what its own get_messages returns is what the model is sent."""

    class Mine(AgUnbounded):
        async def get_messages(self) -> list:  # type: ignore[override,type-arg]
            return [AgUserMessage(content="only this", source="mine")]

    mine = Mine()
    client = ReplayChatCompletionClient(["ok"])
    agent = AssistantAgent("bot", client, model_context=mine, system_message=None)
    result = await agent.run(task="hello")
    assert result.messages[-1].content == "ok"
    held = await AgUnbounded.get_messages(mine)  # what it was given, by AutoGen's own method
    assert [type(m) for m in held] == [AgUserMessage, AgAssistantMessage]
    assert held[0].content == "hello" and held[1].content == "ok"
    (request,) = client.requests
    assert request.messages == [UserMessage(content="only this", source="mine")]  # its own view, converted
    assert [m.content for m in agent.model_context.messages] == ["hello", "ok"]  # nbagent's log, the trace's


def test_a_context_missing_members_of_the_protocol_is_refused_naming_them() -> None:
    class Half:
        async def add_message(self, message: object) -> None: ...

        async def get_messages(self) -> list:  # type: ignore[type-arg]
            return []

    with pytest.raises(TypeError) as refused:
        AssistantAgent("bot", ReplayChatCompletionClient([]), model_context=Half())  # type: ignore[arg-type]
    text = str(refused.value)
    assert text.startswith("AssistantAgent: model_context must be a ChatCompletionContext")
    assert "It lacks clear, save_state, load_state of the model context protocol" in text


async def test_autogens_text_message_as_a_task_and_in_on_messages() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["one", "two"]))
    result = await agent.run(task=ag.TextMessage(content="hello", source="user"))
    assert [m.to_text() for m in result.messages] == ["hello", "one"]
    response = await agent.on_messages([ag.TextMessage(content="again", source="user")], AgCancellationToken())
    assert isinstance(response.chat_message, ag.TextMessage) and response.chat_message.content == "two"
    assert isinstance(agent.model_context.messages[0], UserMessage)


def test_an_autogen_event_as_a_task_is_refused_naming_what_to_pass() -> None:
    event = ag.ToolCallRequestEvent(content=[], source="x")
    with pytest.raises(TypeError) as refused:
        asyncio.run(AssistantAgent("bot", ReplayChatCompletionClient([])).run(task=[event]))
    assert "must be a chat message (TextMessage...), got ToolCallRequestEvent" in str(refused.value)


async def test_autogens_llm_messages_in_nbagents_contexts_are_converted() -> None:
    from autogen_core import FunctionCall as AgFunctionCall
    from autogen_core import Image as AgImage
    from autogen_core.models import FunctionExecutionResult as AgResult
    from autogen_core.models import FunctionExecutionResultMessage as AgResults
    from autogen_core.models import SystemMessage as AgSystemMessage

    pixel = AgImage.from_base64(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    context = UnboundedChatCompletionContext(
        initial_messages=[AgSystemMessage(content="Be brief."), AgUserMessage(content=["look", pixel], source="u")]
    )
    await context.add_message(
        AgAssistantMessage(content=[AgFunctionCall(id="c1", name="add", arguments="{}")], source="bot", thought="hm")
    )
    await context.add_message(AgResults(content=[AgResult(content="3", name="add", call_id="c1", is_error=False)]))
    system, user, assistant, results = context.messages
    assert system == nbagent.SystemMessage(content="Be brief.")
    assert user.content[0] == "look" and user.content[1] == nbagent.Image(data=pixel.to_base64(), mime_type="image/png")
    assert assistant.content == [FunctionCall(id="c1", name="add", arguments="{}")] and assistant.thought == "hm"
    assert results.content[0].content == "3" and results.content[0].call_id == "c1"
    with pytest.raises(TypeError, match=r"message must be an LLM message .*, got str 'text'"):
        await context.add_message("text")  # type: ignore[arg-type]


def test_a_handoff_message_built_with_autogens_llm_messages_holds_nbagents_twins() -> None:
    from autogen_core import FunctionCall as AgFunctionCall
    from autogen_core import Image as AgImage
    from autogen_core.models import FunctionExecutionResult as AgResult
    from autogen_core.models import FunctionExecutionResultMessage as AgResults
    from autogen_core.models import SystemMessage as AgSystemMessage

    pixel = AgImage.from_base64(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    context = [
        AgSystemMessage(content="Be brief."),
        AgUserMessage(content=["look", pixel], source="u"),
        AgAssistantMessage(content=[AgFunctionCall(id="c1", name="f", arguments="{}")], source="a", thought="hm"),
        AgResults(content=[AgResult(content="r", name="f", call_id="c1")]),  # AutoGen's is_error=None
    ]
    handoff = nbagent.HandoffMessage(target="b", content="over", source="a", context=context)
    assert handoff.context == [
        nbagent.SystemMessage(content="Be brief."),
        UserMessage(content=["look", nbagent.Image(data=pixel.to_base64(), mime_type="image/png")], source="u"),
        nbagent.AssistantMessage(content=[FunctionCall(id="c1", name="f", arguments="{}")], source="a", thought="hm"),
        nbagent.FunctionExecutionResultMessage(
            content=[nbagent.FunctionExecutionResult(content="r", name="f", call_id="c1", is_error=False)]
        ),
    ]
    assert nbagent.HandoffMessage.model_validate(handoff.model_dump()) == handoff  # and it round-trips


def test_nbagents_messages_built_with_autogens_parts_hold_nbagents_twins() -> None:
    from autogen_core import FunctionCall as AgFunctionCall
    from autogen_core import Image as AgImage
    from autogen_core.memory import MemoryContent as AgMemoryContent
    from autogen_core.memory import MemoryMimeType as AgMime
    from autogen_core.models import FunctionExecutionResult as AgResult

    pixel = AgImage.from_base64(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
    )
    call, result = AgFunctionCall(id="c1", name="f", arguments="{}"), AgResult(content="r", name="f", call_id="c1")
    ours_call = FunctionCall(id="c1", name="f", arguments="{}")
    ours_result = nbagent.FunctionExecutionResult(content="r", name="f", call_id="c1", is_error=False)
    assert CreateResult(finish_reason="function_calls", content=[call]).content == [ours_call]
    assert nbagent.AssistantMessage(content=[call], source="a").content == [ours_call]
    assert nbagent.ToolCallRequestEvent(content=[call], source="a").content == [ours_call]
    assert nbagent.FunctionExecutionResultMessage(content=[result]).content == [ours_result]
    summary = nbagent.ToolCallSummaryMessage(content="r", source="a", tool_calls=[call], results=[result])
    assert (summary.tool_calls, summary.results) == ([ours_call], [ours_result])
    assert UserMessage(content=["see", pixel], source="u").content == [
        "see", nbagent.Image(data=pixel.to_base64(), mime_type="image/png")
    ]  # fmt: skip
    hit = AgMemoryContent(content="likes tea", mime_type=AgMime.TEXT, metadata={"k": 1})
    assert nbagent.MemoryQueryEvent(content=[hit], source="a").content == [
        nbagent.MemoryContent(content="likes tea", mime_type="text/plain", metadata={"k": 1})
    ]


def test_autogens_llm_message_as_a_task_is_refused_saying_it_is_autogens() -> None:
    agent = AssistantAgent("bot", ReplayChatCompletionClient(["x"]))
    with pytest.raises(
        TypeError, match=r"got UserMessage .*AutoGen's UserMessage is a message for the model: an agent"
    ):
        agent.run_sync(AgUserMessage(content="hi", source="user"))  # type: ignore[arg-type]


async def test_autogens_create_result_in_nbagents_replay_script() -> None:
    from autogen_core.models import CreateResult as AgCreateResult
    from autogen_core.models import RequestUsage as AgRequestUsage

    script = [
        AgCreateResult(
            finish_reason="stop",
            content="Hi.",
            usage=AgRequestUsage(prompt_tokens=4, completion_tokens=2),
            cached=False,
        )
    ]
    agent = AssistantAgent("bot", ReplayChatCompletionClient(script))
    result = await agent.run(task="hello")
    assert result.messages[-1].content == "Hi." and result.messages[-1].models_usage.completion_tokens == 2
    assert isinstance(script[0], AgCreateResult)  # the caller's list is left as it was


async def test_autogens_tool_in_nbagents_static_workbench_runs_as_itself() -> None:
    """Issue 40: nbagent's StaticWorkbench (AutoGen's, to configs) takes AutoGen's tools as its own
    agent's tools= does; anything else is refused naming the item."""
    workbench = nbagent.StaticWorkbench([AgFunctionTool(add, description="Add.")])
    agent = AssistantAgent("bot", ReplayChatCompletionClient([call("add", '{"a": 2, "b": 3}')]), workbench=workbench)
    assert (await agent.run(task="2 + 3")).messages[-1].to_text() == "5"
    with pytest.raises(TypeError) as refused:
        nbagent.StaticWorkbench([42])  # type: ignore[list-item]
    assert "tools[0] must be a function or a tool (nbagent's BaseTool, or AutoGen's), got int" in str(refused.value)
