"""AutoGen's own teams in JupyterLab (issue 21): nbagent.show draws a Swarm turn by turn with its
handoff, Stop cancels AutoGen's run, nbagent.step's buttons walk AutoGen's stream after the cell has
finished, and notebooks/07 runs top to bottom. Model and tool text with markup never runs."""

from __future__ import annotations

import nbformat
import pytest

from .conftest import REPO, LabNotebook

pytestmark = pytest.mark.browser

SETUP = """
import asyncio, logging
import nbagent, nbagent.autogen
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import Swarm
from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelInfo, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

logging.getLogger("autogen_core.events").setLevel(logging.ERROR)
INFO = ModelInfo(vision=False, function_calling=True, json_output=False, family="unknown", structured_output=False)
HOSTILE = "<img src=x onerror=\\"__xss('ag-tool')\\">"

def weather(city: str) -> str:
    "The weather in a city."
    return f"Sunny in {city} {HOSTILE}"

def calls(*specs):
    content = [FunctionCall(id=i, name=n, arguments=a) for i, n, a in specs]
    return CreateResult(finish_reason="function_calls", content=content, usage=RequestUsage(10, 5), cached=False)

def team():
    triage = AssistantAgent("triage", ReplayChatCompletionClient([calls(("h1", "transfer_to_expert", "{}"))],
                            model_info=INFO), handoffs=["expert"])
    answer = "It is **sunny** in Oslo. <script>__xss('ag-answer')</script> TERMINATE"
    expert = AssistantAgent("expert", ReplayChatCompletionClient(
        [calls(("w1", "weather", '{"city": "Oslo"}')), answer], model_info=INFO),
        tools=[weather], reflect_on_tool_use=True, model_client_stream=True)
    return Swarm([triage, expert], termination_condition=TextMentionTermination("TERMINATE"))

class Slow(ReplayChatCompletionClient):
    async def create(self, *args, **kwargs):
        await asyncio.sleep(60)
        return await super().create(*args, **kwargs)
"""

VIEW_JS = """() => {
  const view = document.querySelector('.jp-OutputArea .nba-view');
  return {
    state: [...view.classList].find(c => c.startsWith('nba-state-')),
    turns: [...view.querySelectorAll('.nba-turn')].map(t => [t.dataset.agent, t.dataset.from || null]),
    handoff: [...view.querySelectorAll('.nba-handoff[data-target]')].map(h => h.dataset.target),
    tools: [...view.querySelectorAll('.nba-tool-card')].map(c => [c.dataset.toolName, c.dataset.state]),
    answer: view.querySelector('.nba-final .nba-markdown strong').textContent,
    title: view.querySelector('.nba-final').textContent,
    order: [...view.querySelectorAll(
      '.nba-turn, .nba-llm-call, .nba-tool-group, .nba-handoff[data-target], .nba-final')]
      .map(e => ['nba-turn', 'nba-llm-call', 'nba-tool-group', 'nba-handoff', 'nba-final']
      .find(c => e.classList.contains(c))),
  };
}"""


def test_show_draws_a_swarm_turn_by_turn_with_the_handoff(run_notebook_in_lab) -> None:
    cells = [SETUP, "view = await nbagent.show(team(), 'Weather in Oslo?')\nprint(view.status)"]
    nb: LabNotebook = run_notebook_in_lab(cells, name="autogen_show")
    assert nb.output_texts()[-1].strip().endswith("ok")
    state = nb.page.evaluate(VIEW_JS)
    assert state["state"] == "nba-state-ok"
    assert state["turns"] == [["triage", None], ["expert", "triage"]]  # the transfer triage -> expert
    assert state["handoff"] == ["expert"]
    assert state["tools"] == [["transfer_to_expert", "ok"], ["weather", "ok"]]
    assert state["answer"] == "sunny" and "expert · answer" in state["title"]
    assert state["order"] == [  # the team's turns in order, each under its agent's header
        "nba-turn", "nba-llm-call", "nba-tool-group", "nba-handoff",
        "nba-turn", "nba-llm-call", "nba-tool-group", "nba-llm-call", "nba-final",
    ]  # fmt: skip
    nb.shot("view", ".jp-OutputArea .nba-view")
    assert nb.xss_hits() == {"window": [], "dom": ""}
    assert nb.error_outputs() == []
    assert nb.console_errors == []


def test_stop_cancels_autogens_run_with_its_own_token(run_notebook_in_lab) -> None:
    cells = [
        SETUP,
        "slow = AssistantAgent('slow', Slow(['never'], model_info=INFO))\nsv = nbagent.start(slow, 'Hello?')",
    ]
    nb: LabNotebook = run_notebook_in_lab(cells, name="autogen_stop")
    page = nb.page
    page.wait_for_selector(".jp-OutputArea .nba-view.nba-state-running")
    page.locator(".jp-OutputArea .nba-stop").click()
    page.wait_for_selector(".jp-OutputArea .nba-view.nba-state-cancelled")
    nb.settle()
    out = nb.execute(
        "await asyncio.sleep(0.2)\n"
        "print(sv.status, list(nbagent.autogen.trace_of(slow).runs_df()['status']), type(slow._model_client).__name__)"
    )
    assert out.strip() == "cancelled ['cancelled'] Slow"
    assert nb.console_errors == []


STEP_JS = """() => {
  const root = document.querySelector('.jp-OutputArea .nba-ag-stepper.nba-stepper-live');
  const step = root.querySelector('.nba-ag-step');
  const context = root.querySelector('.nba-ag-context');
  return {
    index: step.dataset.index, kind: step.dataset.kind, agent: step.dataset.agent,
    request: !!root.querySelector('.nba-ag-request'),
    context: context ? Number(context.dataset.count) : null,
    status: root.querySelector('.nba-stepper-status [data-status]').dataset.status,
    next: root.querySelector('.nba-ag-next').disabled,
  };
}"""
KINDS = [
    ("RunStarted", "Swarm"), ("AgentTurn", "triage"), ("LLMCall", "triage"), ("ToolCallRequestEvent", "triage"),
    ("ToolCallExecutionEvent", "triage"), ("HandoffMessage", "triage"), ("AgentTurn", "expert"),
    ("LLMCall", "expert"),
]  # fmt: skip


def test_step_buttons_walk_autogens_stream_after_the_cell_finished(run_notebook_in_lab) -> None:
    cells = [SETUP, "stepper = nbagent.step(team(), 'Weather in Oslo?')\nstepper", "print('cells done')"]
    nb: LabNotebook = run_notebook_in_lab(cells, name="autogen_step")
    page = nb.page
    assert nb.output_texts()[-1].strip() == "cells done"
    seen = []
    for index, _ in enumerate(KINDS):
        page.locator(".jp-OutputArea .nba-ag-next").click()
        page.wait_for_function(
            "(i) => { const s = document.querySelector('.jp-OutputArea .nba-ag-stepper.nba-stepper-live .nba-ag-step');"
            " return s && s.dataset.index === String(i); }",
            arg=index,
        )
        state = page.evaluate(STEP_JS)
        seen.append((state["kind"], state["agent"]))
        if state["kind"] == "LLMCall":
            assert state["request"]  # the request the wrapped client saw, before the call is sent
        if (state["kind"], state["agent"]) == ("LLMCall", "expert"):
            assert state["context"] == 2  # the task and the handoff
            nb.shot("expert-call", ".jp-OutputArea .nba-ag-stepper.nba-stepper-live")
    assert seen == KINDS
    page.locator(".jp-OutputArea .nba-ag-run").click()
    page.wait_for_function(
        "() => document.querySelector('.jp-OutputArea .nba-ag-stepper.nba-stepper-live .nba-ag-step')"
        ".dataset.kind === 'RunFinished'"
    )
    nb.settle()
    final = page.evaluate(STEP_JS)
    assert (final["status"], final["next"]) == ("finished", True)
    assert nb.execute("print(stepper.status, stepper.result.stop_reason)").strip() == (
        "finished Text 'TERMINATE' mentioned"
    )
    assert nb.xss_hits() == {"window": [], "dom": ""}
    assert nb.error_outputs() == []
    assert nb.console_errors == []


def test_notebook_07_runs_in_lab(run_notebook_in_lab) -> None:
    path = REPO / "notebooks" / "07_autogen_teams.ipynb"
    nb: LabNotebook = run_notebook_in_lab(path, name="autogen_teams")
    assert nb.error_outputs() == []
    assert nb.console_errors == []
    saved = nbformat.reads(nb.save(), as_version=4)
    text = "\n".join(
        output.get("text", "") for cell in saved.cells if cell.cell_type == "code" for output in cell.outputs
    )
    assert "ok | billing answered:" in text and "moves in nbagent's trace: 12 | in AutoGen's: 0" in text
    nb.page.wait_for_selector(".jp-OutputArea .nba-view.nba-state-ok")
