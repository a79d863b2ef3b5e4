"""AutoGen teams recorded by nbagent.autogen: one run per agent turn, under the team's run."""

from __future__ import annotations

import asyncio

from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.base import TaskResult
from autogen_agentchat.conditions import MaxMessageTermination
from autogen_agentchat.messages import HandoffMessage as AgHandoffMessage
from autogen_agentchat.teams import RoundRobinGroupChat

import nbagent.autogen as na
from nbagent import HandoffMessage, Trace
from nbagent.records import LLMCall, RunStarted

from ..frames import assert_frame_equal
from .helpers import model_client, replay, round_robin, swarm


async def test_round_robin_one_run_per_turn_in_order_under_the_team_run() -> None:
    team, writer, critic = round_robin()
    trace = Trace()
    run = na.iter(team, "Write a haiku.", trace=trace)
    async for _ in run:
        pass
    assert isinstance(run.result, TaskResult)
    assert [message.source for message in run.result.messages] == ["user", "writer", "critic", "writer"]

    runs = trace.runs_df()
    assert list(runs["agent"]) == ["RoundRobinGroupChat", "writer", "critic", "writer"]
    assert list(runs["status"]) == ["ok"] * 4
    assert [agent for agent, _ in run.turns] == ["writer", "critic", "writer"]
    assert list(runs["run_id"][1:]) == [run_id for _, run_id in run.turns]
    assert runs["run_id"].iloc[0] == run.run_id
    assert runs["parent_run_id"].isna().iloc[0]  # the team's run is a run of its own
    assert list(runs["parent_run_id"][1:]) == [run.run_id] * 3  # each turn, under it
    # Each turn was given what the team gave the agent: the messages since its last turn.
    assert list(runs["task"]) == [
        "Write a haiku.", "Write a haiku.", "Write a haiku.\nA first draft.", "Make it shorter.",
    ]  # fmt: skip
    assert list(runs["final_text"][1:]) == ["A first draft.", "Make it shorter.", "A second draft."]
    team_row = runs.iloc[0]
    assert (runs["started_at"][1:] >= team_row["started_at"]).all()
    assert (runs["ended_at"][1:] <= team_row["ended_at"]).all()

    # The events in order, each with its run's agent; the team's run holds its start and end.
    events = trace.events_df()
    assert list(events["agent"]) == ["RoundRobinGroupChat"] + ["writer"] * 4 + ["critic"] * 4 + ["writer"] * 4 + [
        "RoundRobinGroupChat"
    ]
    assert list(events["kind"][1:5]) == ["RunStarted", "LLMCall", "Response", "RunFinished"]
    llm = trace.llm_calls_df()
    assert list(llm["agent"]) == ["writer", "critic", "writer"]
    assert list(llm["call_index"]) == [0, 0, 0]
    # The writer's second call was sent its first turn, the critic's words and its system message.
    assert list(trace.request_df(run.turns[2][1], 0)["text"]) == [
        "You write.", "Write a haiku.", "A first draft.", "Make it shorter.",
    ]  # fmt: skip
    # Each agent's context at the end of each of its turns.
    assert list(trace.context_df(run.turns[1][1])["text"]) == ["Write a haiku.", "A first draft.", "Make it shorter."]
    assert list(trace.context_df(run.turns[0][1])["text"]) == ["Write a haiku.", "A first draft."]
    assert list(trace.context_df(agent="writer")["source"]) == ["user", "writer", "critic", "writer"]


async def test_swarm_handoff_from_triage_to_the_specialist() -> None:
    team, triage, specialist = swarm()
    trace = Trace()
    result = await na.run(team, "Weather in Oslo?", trace=trace)
    assert [type(m).__name__ for m in result.messages] == [
        "TextMessage", "ToolCallRequestEvent", "ToolCallExecutionEvent", "HandoffMessage",
        "ToolCallRequestEvent", "ToolCallExecutionEvent", "TextMessage",
    ]  # fmt: skip
    assert isinstance(result.messages[3], AgHandoffMessage)

    runs = trace.runs_df()
    assert list(runs["agent"]) == ["Swarm", "triage", "specialist"]
    assert list(runs["final_type"][1:]) == ["HandoffMessage", "TextMessage"]
    assert runs["handoff_target"].iloc[1] == "specialist"
    assert runs["final_text"].iloc[2] == "Sunny in Oslo. TERMINATE"
    # The handoff is the triage turn's Response: an nbagent HandoffMessage to the specialist.
    handoffs = [item.chat_message for item in trace.items if type(item).__name__ == "Response"]
    assert isinstance(handoffs[0], HandoffMessage) and handoffs[0].target == "specialist"
    assert handoffs[0].source == "triage"

    tools = trace.tool_calls_df()
    assert list(tools["agent"]) == ["triage", "specialist"]
    assert list(tools["tool_name"]) == ["transfer_to_specialist", "weather"]
    llm = trace.llm_calls_df()
    assert list(zip(llm["agent"], llm["purpose"])) == [
        ("triage", "initial"), ("specialist", "initial"), ("specialist", "reflection"),
    ]  # fmt: skip
    # The specialist starts with an empty context and is given the task and the handoff.
    specialist_run = runs["run_id"].iloc[2]
    assert trace.context_df(specialist_run, 0).empty
    assert list(trace.context_df(specialist_run)["kind"]) == ["user", "user", "assistant", "tool_result", "assistant"]
    handed = "Transferred to specialist, adopting the role of specialist immediately."
    assert runs["task"].iloc[2] == f"Weather in Oslo?\n{handed}"


async def test_a_team_run_again_continues_into_the_same_trace() -> None:
    writer = AssistantAgent("writer", replay("Draft 1.", "Draft 2.", "Draft 3."))
    critic = AssistantAgent("critic", replay("Shorter.", "Good.", "Done."))
    team = RoundRobinGroupChat([writer, critic], max_turns=3)
    trace = Trace()
    await na.run(team, "Write a haiku.", trace=trace)
    await na.run(team, "Again.", trace=trace)
    runs = trace.runs_df()
    assert list(runs["agent"]) == ["RoundRobinGroupChat", "writer", "critic", "writer"] * 1 + [
        "RoundRobinGroupChat", "critic", "writer", "critic",
    ]  # fmt: skip
    # What the team gave the critic: the writer's last draft of the first run, then the new task.
    assert runs["task"].iloc[5] == "Draft 2.\nAgain."
    assert list(trace.context_df(agent="critic")["text"]) == [
        "Write a haiku.", "Draft 1.", "Shorter.", "Draft 2.", "Again.", "Good.", "Draft 3.", "Done.",
    ]  # fmt: skip
    # After team.reset() the agents start afresh, and so do the messages they are given.
    await team.reset()
    model_client(writer).chat_completions.extend(["Draft 5.", "Draft 6."])  # type: ignore[attr-defined]
    model_client(critic).chat_completions.append("Fine.")  # type: ignore[attr-defined]
    await na.run(team, "Anew.", trace=trace)
    assert list(trace.runs_df()["task"][-3:]) == ["Anew.", "Anew.\nDraft 5.", "Fine."]


async def test_step_mode_in_a_team_holds_each_agent_before_its_model_call() -> None:
    team, writer, critic = round_robin()
    clients = {"writer": model_client(writer), "critic": model_client(critic)}
    run = na.iter(team, "Write a haiku.", trace=Trace(), step=True)
    sent_before: list[int] = []
    started: list[str] = []
    async for item in run:
        if isinstance(item, RunStarted):
            started.append(item.agent)
        if isinstance(item, LLMCall):
            agent = started[-1]
            sent_before.append(len(clients[agent].create_calls))  # type: ignore[attr-defined]
            await asyncio.sleep(0.05)  # the run waits meanwhile: the call is not sent
            assert len(clients[agent].create_calls) == sent_before[-1]  # type: ignore[attr-defined]
    assert sent_before == [0, 0, 1]


async def test_team_rows_are_exported_like_any_others(tmp_path: object) -> None:
    import pytest

    pytest.importorskip("pyarrow")
    from pathlib import Path

    import nbagent

    team, _, _ = swarm()
    trace = Trace()
    await na.run(team, "Weather in Oslo?", trace=trace)
    loaded = nbagent.load_parquet(trace.to_parquet(Path(str(tmp_path)) / "swarm"))
    assert_frame_equal(loaded.runs_df(), trace.runs_df())
    assert_frame_equal(loaded.events_df(), trace.events_df())
    spans = trace.to_otlp_json()["resourceSpans"][0]["scopeSpans"][0]["spans"]
    agents = {span["name"]: span for span in spans if span["name"].startswith("invoke_agent")}
    assert sorted(agents) == ["invoke_agent Swarm", "invoke_agent specialist", "invoke_agent triage"]
    team_span = agents["invoke_agent Swarm"]
    for turn in ("invoke_agent triage", "invoke_agent specialist"):  # the turns are children of the team's span
        assert agents[turn]["parentSpanId"] == team_span["spanId"]
        assert agents[turn]["traceId"] == team_span["traceId"]


async def test_markers_mode_marks_each_turn_and_the_handoff_for_a_view() -> None:
    from nbagent.autogen.show import AgentTurn
    from nbagent.records import RunFinished
    from nbagent.render import to_html, to_text

    team, _, _ = swarm()
    trace = Trace()
    run = na.iter(team, "Weather in Oslo?", trace=trace, markers=True)
    items = [item async for item in run]
    turns = [item for item in items if isinstance(item, AgentTurn)]
    assert [(turn.content, turn.handed_from, turn.turn) for turn in turns] == [
        ("triage", None, 0), ("specialist", "triage", 1),
    ]  # fmt: skip
    assert [turn.run_id for turn in turns] == [run_id for _, run_id in run.turns]
    # Only the team's own start and end are yielded; the trace has every turn's.
    assert [item.run_id for item in items if isinstance(item, (RunStarted, RunFinished))] == [run.run_id] * 2
    assert list(trace.runs_df()["agent"]) == ["Swarm", "triage", "specialist"]
    html = str(to_html(turns[1]))
    assert 'data-from="triage"' in html and 'data-agent="specialist"' in html and "nba-turn" in html
    assert to_text(turns[1]) == "== specialist takes over from triage (handoff)"


async def test_selector_group_chat_its_speaker_events_named_as_autogen_names_them() -> None:
    from autogen_agentchat.teams import SelectorGroupChat

    from nbagent.autogen.convert import ForeignEvent

    planner = AssistantAgent("planner", replay("Plan: ask the coder."), description="Plans.")
    coder = AssistantAgent("coder", replay("print('hi')"), description="Codes.")
    team = SelectorGroupChat(
        [planner, coder],
        model_client=replay("planner", "coder"),
        termination_condition=MaxMessageTermination(3),
        emit_team_events=True,
    )
    trace = Trace()
    await na.run(team, "Write hello world.", trace=trace)
    events = trace.events_df(include_chunks=False)
    selections = events[events["kind"] == "SelectSpeakerEvent"]
    assert list(selections["agent"]) == ["SelectorGroupChat"] * 2  # the team's own run holds them
    assert list(selections["text"]) == ["['planner']", "['coder']"]
    assert all(isinstance(item, ForeignEvent) for item in trace.items if type(item).__name__ == "SelectSpeakerEvent")
    assert list(trace.runs_df()["agent"]) == ["SelectorGroupChat", "planner", "coder"]
