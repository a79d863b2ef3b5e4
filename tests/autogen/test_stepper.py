"""Step by step through AutoGen agents and teams (nbagent.autogen.stepper), without a kernel."""

from __future__ import annotations

import pytest

from nbagent import Trace
from nbagent.autogen.client import RecordingClient
from nbagent.autogen.show import AgentTurn
from nbagent.autogen.stepper import AutoGenStepper, StepperFinished
from nbagent.records import LLMCall

from .helpers import model_client, swarm, tool_agent


async def test_an_agent_step_by_step() -> None:
    agent = tool_agent()
    inner = model_client(agent)
    trace = Trace()
    stepper = AutoGenStepper(agent, "Weather in Paris and Rome?", trace=trace)
    kinds = []
    while not stepper.done:
        step = await stepper.next()
        kinds.append(step.kind)
        if isinstance(step.item, LLMCall):
            # Paused before the call is sent: the request is the wrapped client's, the client not called.
            assert step.request is not None and step.item.duration_s is None
            assert len(inner.create_calls) == 0  # type: ignore[attr-defined]  # the replay client streams
    assert kinds == [
        "RunStarted", "LLMCall", "ToolCallRequestEvent", "ToolCallExecutionEvent", "LLMCall", "TextMessage",
        "RunFinished",
    ]  # fmt: skip
    steps = stepper.history
    assert [len(step.context) for step in steps] == [0, 1, 2, 3, 3, 4, 4]
    assert steps[5].streamed == "Sunny in Paris and in Rome."  # the streamed text, with the answer's pause
    assert len(steps[2].tool_executions) == 2  # the batch's records, with its request
    assert [m.type for m in steps[4].request.messages] == [  # type: ignore[union-attr]
        "SystemMessage", "UserMessage", "AssistantMessage", "FunctionExecutionResultMessage",
    ]  # fmt: skip
    assert steps[4].context_df()["kind"].tolist() == ["user", "assistant", "tool_result"]
    assert stepper.status == "finished" and stepper.result is not None
    assert not isinstance(model_client(agent), RecordingClient)  # the run ended: the agent is as it was
    assert len(trace.runs_df()) == 1
    with pytest.raises(StepperFinished):
        await stepper.next()


async def test_a_swarm_step_by_step_shows_each_speaker_and_its_context() -> None:
    team, _, _ = swarm()
    stepper = AutoGenStepper(team, "Weather in Oslo?", trace=Trace())
    steps = await stepper.run_to_end()
    assert [(step.agent, step.kind) for step in steps] == [
        ("Swarm", "RunStarted"),
        ("triage", "AgentTurn"), ("triage", "LLMCall"), ("triage", "ToolCallRequestEvent"),
        ("triage", "ToolCallExecutionEvent"), ("triage", "HandoffMessage"),
        ("specialist", "AgentTurn"), ("specialist", "LLMCall"), ("specialist", "ToolCallRequestEvent"),
        ("specialist", "ToolCallExecutionEvent"), ("specialist", "LLMCall"), ("specialist", "TextMessage"),
        ("Swarm", "RunFinished"),
    ]  # fmt: skip
    handover = steps[6].item
    assert isinstance(handover, AgentTurn) and handover.handed_from == "triage"
    assert steps[6].context == []  # the specialist before its turn
    assert [m.type for m in steps[7].context] == ["UserMessage", "UserMessage"]  # the task and the handoff
    assert [m.type for m in steps[7].request.messages][0] == "SystemMessage"  # type: ignore[union-attr]


async def test_stop_ends_the_run_cancelled() -> None:
    agent = tool_agent()
    trace = Trace()
    stepper = AutoGenStepper(agent, "Weather?", trace=trace)
    await stepper.next()
    await stepper.next()  # paused before the first model call
    await stepper.aclose()
    assert stepper.status == "cancelled" and stepper.done
    assert list(trace.runs_df()["status"]) == ["cancelled"]
    assert not isinstance(model_client(agent), RecordingClient)


async def test_the_widget_buttons_are_enabled_again_after_each_step() -> None:
    from nbagent.notebook.autogen_stepper import NotebookAutoGenStepper

    team, _, _ = swarm()
    stepper = NotebookAutoGenStepper(team, "Weather in Oslo?", trace=Trace())
    widget = stepper.widget()
    for expected in ("RunStarted", "AgentTurn", "LLMCall"):
        widget.next_button.click()
        task = widget.task
        assert task is not None and widget.next_button.disabled  # busy while the step is made
        await task
        assert not widget.next_button.disabled
        assert f'data-kind="{expected}"' in widget.panel.value
    assert "nba-ag-request" in widget.panel.value  # at the model call: the request
    # Paused before the call is sent: it says so, not a frozen "waiting for the model... 1.7 s".
    assert 'data-state="paused"' in widget.panel.value and "waiting for the model" not in widget.panel.value
    await widget.click(stepper.run_to_end)  # type: ignore[misc]
    assert widget.next_button.disabled and stepper.status == "finished"
    assert 'data-kind="RunFinished"' in stepper._repr_mimebundle_()["text/html"]
