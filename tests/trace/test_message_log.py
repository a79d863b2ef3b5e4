"""The recorder's message log: snapshots and LLM requests of a long-lived agent, exact at any run,
through resets, loaded states, bounded contexts and a context that rewrites its messages."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from nbagent import (
    AssistantAgent,
    BufferedChatCompletionContext,
    HeadAndTailChatCompletionContext,
    ReplayChatCompletionClient,
    UnboundedChatCompletionContext,
    UserMessage,
)
from nbagent.agent import DEFAULT_SYSTEM_MESSAGE
from nbagent.context import ChatCompletionContext, TokenLimitedChatCompletionContext
from nbagent.messages import LLMMessage
from nbagent.records import LLMCall
from nbagent.trace import SentMessages, Trace

from ..frames import assert_frame_equal
from .helpers import calls as calls_result


def nullable(series: pd.Series) -> list[object]:
    return [None if pd.isna(value) else value for value in series]


def agent_of(runs: int, **kwargs: Any) -> AssistantAgent:
    return AssistantAgent("a", ReplayChatCompletionClient([f"answer {i}" for i in range(runs)]), **kwargs)


async def run_tasks(agent: AssistantAgent, runs: range) -> list[str]:
    for i in runs:
        await agent.run(task=f"task {i}")
    return [str(run) for run in agent.trace.runs_df()["run_id"]]


def conversation(runs: range) -> list[str]:
    return [text for i in runs for text in (f"task {i}", f"answer {i}")]


def calls(trace: Trace) -> list[LLMCall]:
    return [item for item in trace.items if isinstance(item, LLMCall)]


async def test_many_runs_snapshots_and_requests_exact_at_first_middle_and_last_run() -> None:
    n = 40
    agent = agent_of(n)
    runs = await run_tasks(agent, range(n))
    trace = agent.trace
    for i in (0, n // 2, n - 1):
        start = trace.context_df(runs[i], 0)
        assert list(start["text"]) == conversation(range(i))
        assert nullable(start["run_id"]) == [runs[j // 2] for j in range(2 * i)]
        end = trace.context_df(runs[i])
        assert list(end["text"]) == conversation(range(i + 1))
        assert nullable(end["move"]) == ["add_messages", "text_exit"] * (i + 1)
        assert list(end["step"]) == [1, 5] * (i + 1)
        request = trace.request_df(runs[i], 0)
        assert list(request["text"]) == [DEFAULT_SYSTEM_MESSAGE, *conversation(range(i)), f"task {i}"]
        assert list(request["kind"]) == ["system", *["user", "assistant"] * i, "user"]
        assert nullable(request["run_id"]) == [None, *[runs[j // 2] for j in range(2 * i)], runs[i]]
    assert list(trace.llm_calls_df()["n_messages"]) == [2 + 2 * i for i in range(n)]
    assert_frame_equal(agent.context_df(), trace.context_df())
    # One log holds every message once: each snapshot is a prefix of it, long requests slices of it.
    logs = {id(log) for log in trace.store.logs}
    # the empty start, then 2 a run
    assert len(logs) == 1 and len(trace.store.snapshots) == len(trace.store.logs) == 1 + 2 * n
    assert trace.store.logs[-1] == agent.model_context.messages
    kinds = [type(call.request.messages) for call in calls(trace)]
    assert kinds == [list] * 15 + [SentMessages] * (n - 15)  # 2 + 2i messages: shared from 32 on


async def test_shared_request_reads_like_the_list_that_was_sent() -> None:
    agent = agent_of(20)
    client = agent.model_client
    assert isinstance(client, ReplayChatCompletionClient)
    await run_tasks(agent, range(20))
    sent = calls(agent.trace)[-1].request.messages
    assert isinstance(sent, SentMessages)
    expected = list(client.requests[-1].messages)
    assert len(sent) == len(expected) == 40
    assert sent == expected and expected == sent and not (sent != expected)
    assert sent != expected[:-1] and sent != [*expected[:-1], UserMessage(content="other", source="user")]
    assert sent != tuple(expected)  # like a list
    assert list(sent) == expected and sent.to_list() == expected
    assert [sent[i] for i in (0, 1, 39, -1, -40)] == [expected[i] for i in (0, 1, 39, -1, -40)]
    assert sent[0] is expected[0] and sent[-1] is expected[-1]
    assert sent[5:9] == expected[5:9] and sent[::-7] == expected[::-7]
    assert sent.index(expected[7]) == 7 and expected[3] in sent and sent.count(expected[2]) == 1
    assert repr(sent) == repr(expected)
    with pytest.raises(IndexError):
        sent[40]
    with pytest.raises(IndexError):
        sent[-41]
    with pytest.raises(TypeError):
        hash(sent)


async def test_reset_load_state_and_trace_clear_between_runs() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["one", "two", "three", "four", "five"]))
    trace = agent.trace
    await agent.run(task="t1")
    state = await agent.save_state()
    await agent.run(task="t2")
    await agent.on_reset()
    await agent.run(task="t3")
    await agent.load_state(state)
    await agent.run(task="t4")
    r1, r2, r3, r4 = list(trace.runs_df()["run_id"])
    assert list(trace.context_df(r2, 0)["text"]) == ["t1", "one"]
    assert list(trace.context_df(r2)["text"]) == ["t1", "one", "t2", "two"]
    assert len(trace.context_df(r3, 0)) == 0
    third = trace.context_df(r3)
    assert (list(third["text"]), nullable(third["run_id"])) == (["t3", "three"], [r3, r3])
    loaded = trace.context_df(r4, 0)
    assert (list(loaded["text"]), nullable(loaded["run_id"])) == (["t1", "one"], [None, None])
    fourth = trace.context_df(r4)
    assert list(fourth["text"]) == ["t1", "one", "t4", "four"]
    assert nullable(fourth["run_id"]) == [None, None, r4, r4]
    request = trace.request_df(r4, 0)
    assert list(request["text"]) == [DEFAULT_SYSTEM_MESSAGE, "t1", "one", "t4"]
    assert nullable(request["run_id"]) == [None, None, None, r4]
    assert nullable(agent.context_df()["run_id"]) == [None, None, r4, r4]
    # What run 1 saw is unchanged by what came after.
    assert list(trace.context_df(r1)["text"]) == ["t1", "one"]
    assert list(trace.request_df(r1, 0)["text"]) == [DEFAULT_SYSTEM_MESSAGE, "t1"]

    trace.clear()
    await agent.run(task="t5")
    (r5,) = list(trace.runs_df()["run_id"])
    start = trace.context_df(r5, 0)
    assert (list(start["text"]), nullable(start["run_id"])) == (["t1", "one", "t4", "four"], [None] * 4)
    assert nullable(trace.context_df(r5)["run_id"]) == [None] * 4 + [r5, r5]


async def test_buffered_context_requests_are_tail_slices_of_the_log() -> None:
    n = 30
    agent = agent_of(n, model_context=BufferedChatCompletionContext(buffer_size=35))
    runs = await run_tasks(agent, range(n))
    history = conversation(range(n))
    sent = [call.request.messages for call in calls(agent.trace)]
    assert [len(messages) for messages in sent] == [1 + min(2 * i + 1, 35) for i in range(n)]
    assert [type(messages) for messages in sent] == [list] * 15 + [SentMessages] * (n - 15)
    for i in (14, 15, 17, n - 1):
        visible = history[: 2 * i + 1][-35:]
        request = agent.trace.request_df(runs[i], 0)
        assert list(request["text"]) == [DEFAULT_SYSTEM_MESSAGE, *visible]
        assert nullable(request["run_id"]) == [None, *[runs[history.index(text) // 2] for text in visible]]
    assert list(agent.trace.context_df()["text"]) == history


@pytest.mark.parametrize(("head", "kind"), [(2, SentMessages), (5, list)])
async def test_head_and_tail_requests(head: int, kind: type) -> None:
    """With a short head, the request is the system message, head and note, then a slice of the
    log; with a longer one it is kept as sent. Either way it reads the same."""
    n = 25
    agent = agent_of(n, model_context=HeadAndTailChatCompletionContext(head_size=head, tail_size=30))
    runs = await run_tasks(agent, range(n))
    history = conversation(range(n))
    skipped = 2 * n - 1 - head - 30
    last = calls(agent.trace)[-1].request.messages
    assert type(last) is kind and len(last) == 1 + head + 1 + 30
    request = agent.trace.request_df(runs[-1], 0)
    assert list(request["text"]) == [
        DEFAULT_SYSTEM_MESSAGE, *history[:head], f"Skipped {skipped} messages.", *history[head + skipped : 2 * n - 1],
    ]  # fmt: skip
    assert nullable(request["run_id"]) == [
        None, *[runs[j // 2] for j in range(head)], None, *[runs[j // 2] for j in range(head + skipped, 2 * n - 1)],
    ]  # fmt: skip
    assert list(agent.trace.llm_calls_df()["n_messages"])[-1] == 1 + head + 1 + 30
    assert list(agent.trace.context_df()["text"]) == history


class FoldingContext(UnboundedChatCompletionContext):
    """Keeps at most four messages: when a fifth comes, the oldest are folded into a summary."""

    async def add_message(self, message: LLMMessage) -> None:
        self._messages.append(message)
        if len(self._messages) > 4:
            folded = len(self._messages) - 3
            self._messages[:] = [UserMessage(content=f"summary of {folded}", source="fold"), *self._messages[-3:]]


async def test_context_that_rewrites_its_messages_at_the_same_length() -> None:
    agent = agent_of(4, model_context=FoldingContext())
    runs = await run_tasks(agent, range(4))
    trace = agent.trace
    # Run 2 and 3 leave the context at four messages, rewritten: each state is seen.
    assert list(trace.context_df(runs[1])["text"]) == ["task 0", "answer 0", "task 1", "answer 1"]
    start = trace.context_df(runs[2], seq=3)  # at its message_id move: the task went in, the rest folded
    assert list(start["text"]) == ["summary of 2", "task 1", "answer 1", "task 2"]
    assert nullable(start["run_id"]) == [runs[2], runs[1], runs[1], runs[2]]
    assert nullable(start["move"]) == ["add_messages", "add_messages", "text_exit", "add_messages"]
    end = trace.context_df(runs[2])
    assert list(end["text"]) == ["summary of 2", "answer 1", "task 2", "answer 2"]
    assert nullable(end["run_id"]) == [runs[2], runs[1], runs[2], runs[2]]
    assert nullable(end["move"]) == ["text_exit", "text_exit", "add_messages", "text_exit"]
    last = trace.context_df(runs[3])
    assert list(last["text"]) == ["summary of 2", "answer 2", "task 3", "answer 3"]
    assert list(trace.request_df(runs[3], 0)["text"]) == [
        DEFAULT_SYSTEM_MESSAGE, "summary of 2", "task 2", "answer 2", "task 3",
    ]  # fmt: skip
    assert_frame_equal(agent.context_df(), last)


class CopyingContext(UnboundedChatCompletionContext):
    """``messages`` returns copies of the messages (a context that never shares its objects)."""

    @property
    def messages(self) -> list[LLMMessage]:
        return [message.model_copy() for message in self._messages]


async def test_context_whose_messages_are_copies_is_snapshotted_at_each_change() -> None:
    agent = agent_of(3, model_context=CopyingContext())
    runs = await run_tasks(agent, range(3))
    trace = agent.trace
    assert list(trace.context_df(runs[0], 0)["text"]) == []
    assert list(trace.context_df(runs[1], 0)["text"]) == conversation(range(1))
    assert list(trace.context_df(runs[2])["text"]) == conversation(range(3))
    assert list(trace.request_df(runs[2], 0)["text"]) == [DEFAULT_SYSTEM_MESSAGE, *conversation(range(2)), "task 2"]


@pytest.mark.parametrize(
    "make",
    [
        ChatCompletionContext,
        UnboundedChatCompletionContext,
        lambda: BufferedChatCompletionContext(buffer_size=1),
        lambda: TokenLimitedChatCompletionContext(token_limit=5),
        lambda: HeadAndTailChatCompletionContext(head_size=1, tail_size=1),
    ],
)
async def test_nbagent_contexts_only_append_to_their_list(make: Any) -> None:
    """The trace keeps an nbagent context's list as its log: nothing may change it but appending."""
    context = make()
    held = context.message_log
    first, second, third = (UserMessage(content=str(i), source="user") for i in range(3))
    for message in (first, second, third):
        await context.add_message(message)
    await context.get_messages()
    assert context.message_log is held and held == [first, second, third]
    await context.clear()
    assert context.message_log is not held and held == [first, second, third] and len(context) == 0
    await context.add_message(first)
    held = context.message_log
    await context.load_state({"messages": []})
    assert context.message_log is not held and held == [first]


async def test_a_tool_that_clears_the_context_mid_run_at_the_same_length() -> None:
    """The context goes from [task, calls] to [note, results] within one move: same length, new list."""

    async def wipe() -> str:
        """Forget the conversation, keep a note."""
        await agent.model_context.clear()
        await agent.model_context.add_message(UserMessage(content="note", source="wipe"))
        return "wiped"

    agent = AssistantAgent(
        "a", ReplayChatCompletionClient([calls_result(("c1", "wipe", "{}")), "done"]), tools=[wipe],
        reflect_on_tool_use=True,
    )  # fmt: skip
    await agent.run(task="go")
    trace = agent.trace
    (run,) = list(trace.runs_df()["run_id"])
    events = trace.events_df()
    moves = list(events["move"].astype("object").where(events["kind"] == "Move"))
    at_execution, at_reflect = moves.index("tool_execution"), moves.index("reflect")
    before = trace.context_df(run, at_execution)
    assert list(before["text"]) == ["go", "wipe({})"]
    after = trace.context_df(run, at_reflect)
    assert list(after["text"]) == ["note", "wiped"]
    assert nullable(after["move"]) == ["tool_execution", "tool_execution"]
    assert list(trace.request_df(run, 1)["text"]) == [DEFAULT_SYSTEM_MESSAGE, "note", "wiped"]
    end = trace.context_df(run)
    assert (list(end["text"]), nullable(end["move"])) == (
        ["note", "wiped", "done"],
        ["tool_execution"] * 2 + ["reflect"],
    )
