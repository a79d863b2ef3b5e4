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
