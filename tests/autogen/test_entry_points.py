"""nbagent.run / show / start / step take AutoGen's own agents and teams (the live view driven without
a kernel here; in a real kernel in test_kernel.py, in JupyterLab in tests/browser)."""

from __future__ import annotations

import asyncio

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult

import nbagent
import nbagent.autogen as na
from nbagent.autogen.stepper import AutoGenStepper
from nbagent.notebook.view import AgentRunView

from ..waits import within
from .helpers import SlowReplay, model_client, swarm, tool_agent


def test_nbagent_run_gives_autogens_task_result_and_records_into_its_trace() -> None:
    agent = tool_agent()
    result = nbagent.run(agent, "Weather in Paris and Rome?")
    assert isinstance(result, TaskResult)
    assert result.messages[-1].content == "Sunny in Paris and in Rome."  # type: ignore[union-attr]
    assert list(na.trace_of(agent).runs_df()["status"]) == ["ok"]


def test_nbagent_step_gives_the_autogen_stepper() -> None:
    team, _, _ = swarm()
    stepper = nbagent.step(team, "Weather in Oslo?")
    assert isinstance(stepper, AutoGenStepper)
    steps = asyncio.run(stepper.run_to_end())
    assert steps[-1].kind == "RunFinished" and stepper.status == "finished"


def test_predict_mode_is_refused_for_an_autogen_team_naming_the_parameter() -> None:
    team, _, _ = swarm()
    with pytest.raises(ValueError, match=r"nbagent.step: predict must be False for an AutoGen agent or team"):
        nbagent.step(team, "Weather in Oslo?", predict=True)


async def test_the_live_view_shows_a_swarm_turn_by_turn_with_the_handoff() -> None:
    team, _, _ = swarm()
    view = AgentRunView(team.name)
    response = await view.run(team, "Weather in Oslo?")
    assert view.status == "ok"
    assert response is not None and response.chat_message.source == "specialist"
    classes = [child._dom_classes for child in view.body.children]  # noqa: SLF001 ipywidgets' CSS classes
    kinds = [next(c for c in names if c.startswith("nba-item-")) for names in classes]
    assert kinds == [
        "nba-item-user",  # the task
        "nba-item-event", "nba-item-llm", "nba-item-tools", "nba-item-handoff",  # triage's turn
        "nba-item-event", "nba-item-llm", "nba-item-tools", "nba-item-llm", "nba-item-final",  # the specialist's
    ]  # fmt: skip
    html = view.to_html()
    assert 'data-agent="triage"' in html
    assert 'data-from="triage"' in html and 'data-agent="specialist"' in html  # the transfer
    assert 'data-target="specialist"' in html  # the handoff message
    assert "specialist · answer" in html  # the answer, labelled with its agent
    assert 'data-metric="llm_calls" data-value="3"' in html
    assert 'data-metric="tool_calls" data-value="2"' in html
    assert view.to_text().startswith("Swarm · ok")


async def test_the_live_view_of_one_agent_streams_and_shows_its_tools() -> None:
    view = AgentRunView()
    await view.run(tool_agent(), "Weather in Paris and Rome?")
    html = view.to_html()
    assert view.status == "ok" and "forecaster · answer" in html
    assert html.count('data-tool-name="weather"') == 2 and 'data-state="ok"' in html
    assert "Sunny in Paris and in Rome." in html


async def test_stop_cancels_autogens_run_with_its_own_token() -> None:
    slow = SlowReplay(["never sent"])
    agent = AssistantAgent("waiting", slow)
    view = AgentRunView()
    task = view.start(agent, "Hello?")
    await within(slow.started.wait(), "the slow model call to start")
    view.stop()  # the Stop button
    assert await within(task, "the stopped view's run to end") is None
    assert view.status == "cancelled"
    assert list(na.trace_of(agent).runs_df()["status"]) == ["cancelled"]
    assert model_client(agent) is slow


async def test_an_autogen_run_can_be_shown_as_it_is() -> None:
    team, _, _ = swarm()
    trace = nbagent.Trace()
    run = na.iter(team, "Weather in Oslo?", trace=trace, markers=True)
    view = AgentRunView()
    await view.run(run)
    assert view.status == "ok" and len(trace.runs_df()) == 3


def test_check_entry_still_rejects_what_is_neither() -> None:
    import nbagent.agent

    if not hasattr(nbagent.agent, "check_entry"):
        pytest.skip("the entry points' argument checks (issue 19.3) are not in this tree yet")
    with pytest.raises(TypeError):
        nbagent.step(object(), "task")  # type: ignore[arg-type]
