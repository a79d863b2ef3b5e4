"""Concurrency: a busy agent refuses a second run at once; many agents in one loop do not interfere."""

from __future__ import annotations

import asyncio

import pytest

from nbagent import AgentBusyError, AssistantAgent, ReplayChatCompletionClient, TextMessage

from .helpers import calls, context, every_call_answered


async def test_second_run_on_busy_agent_raises_at_once_every_entry_point() -> None:
    gate = asyncio.Event()

    async def wait() -> str:
        await gate.wait()
        return "released"

    agent = AssistantAgent("a", ReplayChatCompletionClient([calls(("c1", "wait", "{}"))]), tools=[wait])
    first = asyncio.create_task(agent.run(task="first"))
    while not agent.is_running or len(agent.model_context) < 2:
        await asyncio.sleep(0)
    snapshot = context(agent)
    attempts = [
        agent.run(task="second"),
        agent.on_messages([TextMessage(content="second", source="user")]),
        agent.on_reset(),
        agent.load_state(await agent.save_state()),
    ]
    for attempt in attempts:
        with pytest.raises(AgentBusyError):
            await asyncio.wait_for(attempt, 0.5)
    with pytest.raises(AgentBusyError):
        await agent.iter([TextMessage(content="x", source="user")]).__anext__()
    with pytest.raises(AgentBusyError):
        async for _ in agent.run_stream(task="second"):
            pass
    assert context(agent) == snapshot
    gate.set()
    assert (await first).messages[-1].content == "released"
    assert not agent.is_running


async def test_hundred_agents_ten_runs_each_do_not_interfere() -> None:
    async def echo(agent_no: int, run_no: int) -> str:
        await asyncio.sleep(0)
        return f"{agent_no}:{run_no}"

    agents = []
    for n in range(100):
        script = []
        for r in range(10):
            script += [calls((f"c{n}-{r}", "echo", f'{{"agent_no": {n}, "run_no": {r}}}')), f"answer {n}/{r}"]
        client = ReplayChatCompletionClient(script)
        agents.append(AssistantAgent(f"agent{n}", client, tools=[echo], max_tool_iterations=2))

    async def drive(n: int) -> list[str]:
        answers = []
        for r in range(10):
            result = await agents[n].run(task=f"task {n}/{r}")
            answers.append(result.messages[-1].content)
            await asyncio.sleep(0)
        return answers

    results = await asyncio.gather(*(drive(n) for n in range(100)))
    for n, answers in enumerate(results):
        assert answers == [f"answer {n}/{r}" for r in range(10)]
        messages = agents[n].model_context.messages
        assert len(messages) == 40
        users = [m.content for m in messages if m.type == "UserMessage"]
        assert users == [f"task {n}/{r}" for r in range(10)]
        tool_results = [m.content[0].content for m in messages if m.type == "FunctionExecutionResultMessage"]
        assert tool_results == [f"{n}:{r}" for r in range(10)]
        assert {m.source for m in messages if m.type == "AssistantMessage"} == {f"agent{n}"}
        assert every_call_answered(agents[n])
        assert not agents[n].is_running
