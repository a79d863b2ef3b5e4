"""What a failed run leaves, and retrying it (issue 19.5; docs/contract.md, "A failed run").

A run that ends without an answer keeps its task (and what it completed) in the context, and is the
agent's ``failed_run``; ``retry()`` (or ``run()`` with no task) calls the model again on that context
without adding the task twice; the same task run again warns (STEP 1's pitfall).
"""

from __future__ import annotations

import asyncio
import warnings

import pytest

from nbagent import (
    AssistantAgent,
    CancellationToken,
    CreateResult,
    ModelConnectionError,
    ReplayChatCompletionClient,
    TextMessage,
)
from nbagent.agent import FailedRun, RepeatedTaskWarning
from nbagent.models.base import ModelRequest
from nbagent.stepper import Stepper

from .helpers import calls, every_call_answered


class Flaky(ReplayChatCompletionClient):
    """A replay model whose calls number ``fail_at`` (from 0) raise ModelConnectionError."""

    def __init__(self, script: list[str | CreateResult], fail_at: set[int]) -> None:
        super().__init__(script)
        self.fail_at = set(fail_at)
        self.calls = 0

    async def complete(
        self, request: ModelRequest, cancellation_token: CancellationToken | None = None
    ) -> CreateResult:
        number, self.calls = self.calls, self.calls + 1
        if number in self.fail_at:
            raise ModelConnectionError("the connection was reset")
        return await super().complete(request, cancellation_token)


def texts(agent: AssistantAgent) -> list[str]:
    return [m.content if isinstance(m.content, str) else type(m).__name__ for m in agent.model_context.messages]


async def test_a_failed_run_keeps_its_task_and_retry_does_not_add_it_again() -> None:
    agent = AssistantAgent("a", Flaky(["Nice to meet you, Ada."], {0}))
    assert agent.failed_run is None
    with pytest.raises(ModelConnectionError):
        await agent.run(task="Hi, I'm Ada.")
    failed = agent.failed_run
    assert isinstance(failed, FailedRun)
    assert (failed.status, failed.error) == ("error", "ModelConnectionError: the connection was reset")
    assert [m.content for m in failed.task] == ["Hi, I'm Ada."]
    assert failed.run_id == agent.trace.items[-1].run_id
    assert texts(agent) == ["Hi, I'm Ada."]  # STEP 1 had added it; nothing is taken out

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RepeatedTaskWarning: retry adds nothing
        result = await agent.retry()
    assert texts(agent) == ["Hi, I'm Ada.", "Nice to meet you, Ada."]
    assert [m.content for m in result.messages] == ["Hi, I'm Ada.", "Nice to meet you, Ada."]  # the task first
    assert result.messages[0] is failed.task[0]
    assert agent.failed_run is None
    assert len(agent.model_client.requests[-1].messages) == 2  # system message + the task, once


async def test_the_same_task_again_warns_and_is_in_the_context_twice() -> None:
    agent = AssistantAgent("a", Flaky(["hello"], {0}))
    with pytest.raises(ModelConnectionError):
        await agent.run(task="hi")
    with pytest.warns(RepeatedTaskWarning, match=r"agent 'a': this task is the one of the last run, which failed"):
        await agent.run(task="hi")
    assert texts(agent) == ["hi", "hi", "hello"]  # STEP 1's pitfall, as in AutoGen: warned, not hidden


async def test_another_task_after_a_failure_does_not_warn() -> None:
    agent = AssistantAgent("a", Flaky(["hello"], {0}))
    with pytest.raises(ModelConnectionError):
        await agent.run(task="hi")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await agent.run(task="something else")
    assert texts(agent) == ["hi", "something else", "hello"]


async def test_run_with_no_task_goes_on_too_without_the_task_in_its_result() -> None:
    agent = AssistantAgent("a", Flaky(["hello"], {0}))
    with pytest.raises(ModelConnectionError):
        await agent.run(task="hi")
    result = await agent.run()
    assert [m.content for m in result.messages] == ["hello"]
    assert texts(agent) == ["hi", "hello"] and agent.failed_run is None


async def test_a_failure_after_the_tools_ran_retries_the_model_call_only() -> None:
    ran: list[int] = []

    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append(a + b)
        return a + b

    model = Flaky([calls(("c1", "add", '{"a": 1, "b": 2}')), "three"], {1})
    agent = AssistantAgent("a", model, tools=[add], max_tool_iterations=2)
    with pytest.raises(ModelConnectionError):
        await agent.run(task="add")
    assert texts(agent) == ["add", "AssistantMessage", "FunctionExecutionResultMessage"] and every_call_answered(agent)
    result = await agent.retry()
    assert ran == [3]  # the tool is not run again
    assert [type(m).__name__ for m in result.messages] == ["TextMessage", "TextMessage"]
    assert texts(agent)[-1] == "three"
    kinds = [type(m).__name__ for m in agent.model_client.requests[-1].messages]
    assert kinds == ["SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage"]


async def test_a_retry_that_fails_again_keeps_the_original_task() -> None:
    agent = AssistantAgent("a", Flaky(["hello"], {0, 1}))
    with pytest.raises(ModelConnectionError):
        await agent.run(task="hi")
    first = agent.failed_run
    with pytest.raises(ModelConnectionError):
        await agent.retry()
    assert agent.failed_run is not None and agent.failed_run is not first
    assert [m.content for m in agent.failed_run.task] == ["hi"]
    assert [m.content for m in (await agent.retry()).messages] == ["hi", "hello"]


async def test_a_cancelled_run_is_a_failed_run_too() -> None:
    client = ReplayChatCompletionClient(["hello"], latency=30)
    agent = AssistantAgent("a", client)
    task = asyncio.create_task(agent.run(task="hi"))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert agent.failed_run is not None and (agent.failed_run.status, agent.failed_run.error) == ("cancelled", None)
    client.latency = 0
    assert [m.content for m in (await agent.retry()).messages] == ["hi", "hello"]


async def test_retry_without_a_failed_run_is_refused() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["hello", "again"]))
    with pytest.raises(RuntimeError, match="has no failed run to retry"):
        await agent.retry()
    await agent.run(task="hi")
    with pytest.raises(RuntimeError, match="its last run ended with an answer"):
        await agent.retry()


async def test_reset_load_state_and_an_answer_forget_the_failure() -> None:
    agent = AssistantAgent("a", Flaky(["one", "two"], {0, 1, 3}))
    with pytest.raises(ModelConnectionError):
        await agent.run(task="hi")
    await agent.on_reset()
    assert agent.failed_run is None and texts(agent) == []
    with pytest.raises(ModelConnectionError):
        await agent.run(task="hi")
    state = await agent.save_state()
    await agent.load_state(state)
    assert agent.failed_run is None and texts(agent) == ["hi"]
    assert [m.content for m in (await agent.run(task="more")).messages] == ["more", "one"]
    assert agent.failed_run is None
    agent.failed_run = None  # settable: forget it by hand
    with pytest.raises(TypeError, match="failed_run must be a FailedRun or None, got str"):
        agent.failed_run = "x"  # type: ignore[assignment]


async def test_an_answered_run_closed_early_is_not_a_failed_run() -> None:
    agent = AssistantAgent("a", ReplayChatCompletionClient(["hello"]))
    run = agent.iter([TextMessage(content="hi", source="user")])
    async for item in run:
        if type(item).__name__ == "Response":
            break
    await run.aclose()  # the run ends 'cancelled', after its answer
    assert run.status == "cancelled" and agent.failed_run is None


async def test_the_steppers_reset_puts_the_failed_run_back() -> None:
    agent = AssistantAgent("a", Flaky(["hello", "again"], {0}))
    with pytest.raises(ModelConnectionError):
        await agent.run(task="hi")
    failed = agent.failed_run
    stepper = Stepper(agent, None)  # a walk that goes on from the failed run
    await stepper.next()
    await stepper.next()  # message_id
    await stepper.aclose()  # abandoned before its model call: a failed run of its own
    assert agent.failed_run is not None and agent.failed_run is not failed
    assert [m.content for m in agent.failed_run.task] == ["hi"]
    await stepper.reset()
    assert agent.failed_run is failed
    results = await stepper.run_to_end()
    assert results[-1].response is not None and agent.failed_run is None
