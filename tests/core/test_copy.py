"""``AssistantAgent.copy()``: the same configuration, a fresh context of the same kind, runs of its own."""

from __future__ import annotations

import asyncio
import copy as copy_module
from collections import defaultdict, deque

import pytest

from nbagent import (
    AssistantAgent,
    BufferedChatCompletionContext,
    ChatCompletionContext,
    FunctionExecutionResultMessage,
    HeadAndTailChatCompletionContext,
    ListMemory,
    MemoryContent,
    ReplayChatCompletionClient,
    ReplayExhaustedError,
    TokenLimitedChatCompletionContext,
    UnboundedChatCompletionContext,
    UserMessage,
)
from nbagent.messages import LLMMessage

from .helpers import add, calls, context


def make_agent(**kwargs: object) -> AssistantAgent:
    script = [calls(("c1", "add", '{"a": 1, "b": 2}')), "three", "again"]
    return AssistantAgent(
        "helper",
        ReplayChatCompletionClient(script),
        tools=[add],
        handoffs=["boss"],
        system_message="Be brief.",
        description="adds",
        model_client_stream=True,
        max_tool_iterations=2,
        tool_call_summary_format="{tool_name}: {result}",
        metadata={"team": "maths"},
        **kwargs,  # type: ignore[arg-type]
    )


async def test_copy_has_the_same_configuration() -> None:
    memory = ListMemory(memory_contents=[MemoryContent(content="likes sums", mime_type="text/plain")])
    agent = make_agent(memory=memory)
    copy = agent.copy()
    assert type(copy) is AssistantAgent and copy is not agent
    assert copy.dump_component() == agent.dump_component()
    assert copy.model_client is agent.model_client
    assert copy.tools == agent.tools and [t["name"] for t in copy.tools] == ["add", "transfer_to_boss"]
    assert copy.memory == [memory]
    assert copy.handoffs == agent.handoffs
    assert copy.loop_settings == agent.loop_settings
    assert copy.produced_message_types == agent.produced_message_types
    assert (copy.name, copy.description, copy.metadata) == ("helper", "adds", {"team": "maths"})
    copy.metadata["team"] = "other"  # the copy's containers are its own
    assert agent.metadata == {"team": "maths"}


async def test_copy_starts_with_an_empty_context_and_runs_on_its_own() -> None:
    agent = make_agent()
    assert (await agent.run(task="1 + 2?")).messages[-1].content == "three"
    template_context = context(agent)
    copy = agent.copy()
    assert copy.model_context is not agent.model_context
    assert type(copy.model_context) is UnboundedChatCompletionContext
    assert len(copy.model_context) == 0
    assert agent.trace.items and copy.trace.items == [] and copy.trace.owner is copy
    result = await copy.run(task="again?")
    assert result.messages[-1].content == "again"  # the shared client's script goes on
    assert [m.content for m in copy.model_context.messages] == ["again?", "again"]
    assert context(agent) == template_context
    assert {item.run_id for item in copy.trace.items if hasattr(item, "run_id")}.isdisjoint(
        {item.run_id for item in agent.trace.items if hasattr(item, "run_id")}
    )


async def test_copy_runs_while_the_template_runs_and_keeps_no_failed_run() -> None:
    gate = asyncio.Event()

    async def wait() -> str:
        await gate.wait()
        return "released"

    client = ReplayChatCompletionClient([calls(("c1", "wait", "{}")), "copy's answer"])
    agent = AssistantAgent("a", client, tools=[wait])
    first = asyncio.create_task(agent.run(task="first"))
    while not agent.is_running or len(agent.model_context) < 2:
        await asyncio.sleep(0)
    copy = agent.copy()
    assert not copy.is_running
    assert (await copy.run(task="second")).messages[-1].content == "copy's answer"
    assert agent.is_running
    gate.set()
    assert (await first).messages[-1].content == "released"
    assert [m.content for m in copy.model_context.messages] == ["second", "copy's answer"]
    assert isinstance(agent.model_context.messages[-1], FunctionExecutionResultMessage)

    failing = AssistantAgent("b", ReplayChatCompletionClient([]))
    with pytest.raises(ReplayExhaustedError):
        await failing.run(task="x")
    assert failing.failed_run is not None
    assert failing.copy().failed_run is None


async def test_copy_keeps_the_context_kind_and_settings() -> None:
    first = UserMessage(content="hello", source="user")
    contexts = [
        BufferedChatCompletionContext(3, initial_messages=[first]),
        HeadAndTailChatCompletionContext(2, 4),
        TokenLimitedChatCompletionContext(token_limit=50, count_tokens=lambda message: 1),
    ]
    for model_context in contexts:
        agent = AssistantAgent("a", ReplayChatCompletionClient(["ok"]), model_context=model_context)
        await agent.run(task="go")
        copy = agent.copy()
        fresh = copy.model_context
        assert type(fresh) is type(model_context) and fresh is not model_context
        assert vars(fresh) == vars(model_context)  # the same settings
        expected = [first] if isinstance(model_context, BufferedChatCompletionContext) else []
        assert fresh.messages == expected  # its initial messages, none of the template's run
        assert len(model_context) == len(expected) + 2
        await fresh.add_message(UserMessage(content="more", source="user"))
        assert len(model_context) == len(expected) + 2


async def test_copy_with_another_model_client() -> None:
    agent = make_agent()
    client = ReplayChatCompletionClient(["from the other client"])
    copy = agent.copy(model_client=client)
    assert copy.model_client is client and agent.model_client is not client
    assert copy.workbench == agent.workbench and copy.tools == agent.tools
    assert (await copy.run(task="hi")).messages[-1].content == "from the other client"
    with pytest.raises(TypeError, match=r"^AssistantAgent\.copy: model_client must be a ChatCompletionClient"):
        agent.copy(model_client="gpt-4o")  # type: ignore[arg-type]


def containers(model_context: ChatCompletionContext) -> dict[str, object]:
    """A context's list, dict and set attributes, copied deeply (to compare after a change)."""
    return {k: copy_module.deepcopy(v) for k, v in vars(model_context).items() if isinstance(v, (list, dict, set))}


@pytest.mark.parametrize(
    "model_context",
    [
        UnboundedChatCompletionContext(initial_messages=[UserMessage(content="hello", source="user")]),
        BufferedChatCompletionContext(3, initial_messages=[UserMessage(content="hello", source="user")]),
        HeadAndTailChatCompletionContext(2, 4, initial_messages=[UserMessage(content="hello", source="user")]),
        TokenLimitedChatCompletionContext(
            token_limit=50,
            tool_schema=[{"name": "x", "parameters": {}}],
            initial_messages=[UserMessage(content="hello", source="user")],
        ),
    ],
    ids=["unbounded", "buffered", "head_and_tail", "token_limited"],
)
async def test_fresh_shares_no_container_with_its_original(model_context: ChatCompletionContext) -> None:
    before = containers(model_context)
    assert before  # each kind has containers to compare (its initial messages at least)
    fresh = model_context.fresh()
    assert vars(fresh) == vars(model_context) and fresh.messages == model_context.messages
    for value in vars(fresh).values():
        if isinstance(value, list):
            value.append({"name": "added"})
            for item in value:
                if isinstance(item, dict):
                    item["name"] = "changed"
    await fresh.add_message(UserMessage(content="more", source="user"))
    assert containers(model_context) == before
    assert [m.content for m in model_context.messages] == ["hello"]
    if isinstance(model_context, TokenLimitedChatCompletionContext):
        assert model_context.tool_schema == [{"name": "x", "parameters": {}}]


class Counting(UnboundedChatCompletionContext):
    """A subclass with state of its own, which its ``_start_over`` resets in a fresh copy."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []
        self.resets = 0

    async def add_message(self, message: LLMMessage) -> None:
        self.seen.append(str(message.content))
        await super().add_message(message)

    def _start_over(self) -> None:
        super()._start_over()
        self.resets += 1


async def test_fresh_calls_a_subclass_start_over_and_copies_its_containers() -> None:
    original = Counting()
    await original.add_message(UserMessage(content="hello", source="user"))
    fresh = original.fresh()
    assert type(fresh) is Counting and fresh.resets == 1 and original.resets == 0
    await fresh.add_message(UserMessage(content="other", source="user"))
    assert original.seen == ["hello"] and fresh.seen == ["hello", "other"]
    assert original.messages == [UserMessage(content="hello", source="user")] and len(fresh) == 1


async def test_fresh_copies_other_mutable_containers_too() -> None:
    """A deque, a defaultdict or any other mutable sequence, mapping or set is the copy's own."""

    class Windowed(UnboundedChatCompletionContext):
        def __init__(self) -> None:
            super().__init__()
            self.window: deque[str] = deque(maxlen=3)
            self.counts: defaultdict[str, int] = defaultdict(int)

    original = Windowed()
    original.window.append("a")
    first, second = original.fresh(), original.fresh()
    first.window.append("b")
    first.counts["b"] += 1
    assert list(original.window) == ["a"] and list(second.window) == ["a"] and list(first.window) == ["a", "b"]
    assert first.window.maxlen == 3 and dict(original.counts) == {} and dict(second.counts) == {}


def test_workbench_is_a_copy_of_the_agents_workbenches() -> None:
    agent = make_agent()
    [workbench] = agent.workbench
    assert [tool.name for tool in workbench.tools] == ["add"]  # type: ignore[attr-defined]
    agent.workbench.clear()
    assert len(agent.workbench) == 1
    assert AssistantAgent("b", ReplayChatCompletionClient(["x"])).workbench == []
