"""AutoGen's own AssistantAgent, recorded by nbagent.autogen: its run replayed offline by an nbagent agent,
and compared with the recording (its run has no moves: both are cut at each model call and event)."""

from __future__ import annotations

import pytest

import nbagent
from nbagent import AssistantAgent
from nbagent import autogen as nbagent_autogen

from ..autogen.helpers import tool_agent

pytestmark = pytest.mark.filterwarnings("ignore")


@pytest.mark.parametrize("stream", [False, True])
async def test_an_autogen_run_replays_and_compares_equal(stream: bool) -> None:
    agent = tool_agent(stream=stream)
    await nbagent_autogen.run(agent, "Weather in Paris and Rome?")
    trace = nbagent_autogen.trace_of(agent)
    replay = trace.replay()
    assert [m.to_text() for m in replay.task] == ["Weather in Paris and Rome?"]
    assert replay.settings.reflect_on_tool_use and len(replay.answers) == 2
    again = AssistantAgent.from_replay(replay)
    result = await again.run(task=list(replay.task))
    assert result.messages[-1].to_text() == "Sunny in Paris and in Rome."
    comparison = nbagent.compare((trace, replay.run_id), again, labels=("autogen", "replay"))
    frame = comparison.frame
    assert comparison.first_divergence is None, frame[["move_autogen", "move_replay", "differences"]]
    assert frame["move_autogen"].tolist() == [
        "llm_call",
        "ToolCallRequestEvent",
        "ToolCallExecutionEvent",
        "llm_call",
        "Response",
    ]


async def test_a_team_run_is_refused_naming_run_id_and_its_agents_runs_replay() -> None:
    from autogen_agentchat.agents import AssistantAgent as AutoGenAssistant
    from autogen_agentchat.conditions import MaxMessageTermination
    from autogen_agentchat.teams import RoundRobinGroupChat
    from autogen_ext.models.replay import ReplayChatCompletionClient

    first = AutoGenAssistant("first", ReplayChatCompletionClient(["hello from first"]))
    second = AutoGenAssistant("second", ReplayChatCompletionClient(["hello from second"]))
    team = RoundRobinGroupChat([first, second], termination_condition=MaxMessageTermination(3))
    trace = nbagent.Trace()
    await nbagent_autogen.run(team, "go", trace=trace)
    runs = trace.runs_df()
    team_run = str(runs["run_id"].iloc[0])
    members = [str(r) for r in runs["run_id"][runs["parent_run_id"] == team_run]]
    assert len(members) == 2
    with pytest.raises(ValueError, match=r"trace\.replay: run_id must be one agent's run") as raised:
        trace.replay(team_run)
    assert all(member in str(raised.value) for member in members)
    for member, text in zip(members, ["hello from first", "hello from second"], strict=True):
        replay = trace.replay(member)
        result = await AssistantAgent.from_replay(replay).run(task=list(replay.task))
        assert result.messages[-1].to_text() == text
