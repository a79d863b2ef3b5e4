"""nbagent.show / start / run / step on AutoGen's agents and teams in a real Jupyter kernel: Run All
runs every cell, the saved notebook shows each finished view, Stop ends an AutoGen run."""

from __future__ import annotations

import nbformat
import pytest

from ..notebooks._kernel import error_outputs, execute, leftover_tasks, this_python, write_kernelspec

pytestmark = pytest.mark.kernel

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

def weather(city: str) -> str:
    "The weather in a city."
    return f"<b>Sunny</b> in {city}"

def calls(*specs):
    content = [FunctionCall(id=i, name=n, arguments=a) for i, n, a in specs]
    return CreateResult(finish_reason="function_calls", content=content, usage=RequestUsage(10, 5), cached=False)

def team():
    triage = AssistantAgent("triage", ReplayChatCompletionClient([calls(("h1", "transfer_to_expert", "{}"))],
                            model_info=INFO), handoffs=["expert"])
    expert = AssistantAgent("expert", ReplayChatCompletionClient(
        [calls(("w1", "weather", '{"city": "Oslo"}')), "It is **sunny** in Oslo. TERMINATE"], model_info=INFO),
        tools=[weather], reflect_on_tool_use=True, model_client_stream=True)
    return Swarm([triage, expert], termination_condition=TextMentionTermination("TERMINATE"))

class Slow(ReplayChatCompletionClient):
    async def create(self, *args, **kwargs):
        await asyncio.sleep(30)
        return await super().create(*args, **kwargs)
"""

CELLS = [
    SETUP,
    "view = await nbagent.show(team(), 'Weather in Oslo?')\nprint(view.status, view.response.chat_message.source)",
    "bg = nbagent.start(team(), 'Weather in Oslo?')\nprint('started')",
    "answer = await bg.wait()\nprint(bg.status, answer.chat_message.content)",
    "r = nbagent.run(team(), 'Weather in Oslo?')\nprint(type(r).__module__, r.stop_reason)",
    "v = nbagent.run(team(), 'Weather in Oslo?', show=True)\nprint(type(v).__name__, v.status)",
    "slow = AssistantAgent('slow', Slow(['never'], model_info=INFO))\nsv = nbagent.start(slow, 'Hello?')",
    "await asyncio.sleep(0.3)\nsv.stop()\nawait asyncio.sleep(0.3)\n"
    "print(sv.status, type(slow._model_client).__name__)",
    "stepper = nbagent.step(team(), 'Weather in Oslo?')\nstepper",
    "for _ in range(3):\n    step = await stepper.next()\n"
    "print(step.agent, step.kind, [t['name'] for t in step.request.tools])",
    "steps = await stepper.run_to_end()\nprint(stepper.status, steps[-2].kind, steps[-2].agent)",
]


@pytest.fixture(scope="module")
def run_all(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    folder = tmp_path_factory.mktemp("autogen_kernel")
    kernels = write_kernelspec(folder, this_python())
    path = folder / "autogen.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in CELLS]), path)
    return execute(path, kernels)


def texts(cell: nbformat.NotebookNode) -> str:
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def display_data(cell: nbformat.NotebookNode) -> dict[str, str]:
    (display,) = [output for output in cell.outputs if output.output_type == "display_data"]
    return dict(display.data)


def test_every_cell_runs(run_all: nbformat.NotebookNode) -> None:
    cells = run_all.cells[1:-1]  # without the harness's first and last cells
    assert error_outputs(run_all) == []
    assert leftover_tasks(run_all) == "leftover tasks: []"
    assert texts(cells[1]) == "ok expert\n"
    assert texts(cells[3]) == "ok It is **sunny** in Oslo. TERMINATE\n"
    assert texts(cells[4]) == "autogen_agentchat.base._task Text 'TERMINATE' mentioned\n"
    assert texts(cells[5]) == "AgentRunView ok\n"
    assert texts(cells[7]) == "cancelled Slow\n"  # Stop: AutoGen's run cancelled with its own token
    assert texts(cells[9]) == "triage LLMCall ['transfer_to_expert']\n"
    assert texts(cells[10]) == "finished TextMessage expert\n"


def test_the_saved_views_show_each_turn_the_transfer_and_the_answer(run_all: nbformat.NotebookNode) -> None:
    for index in (2, 3, 6):  # show, start, run(show=True): each display holds the finished run
        data = display_data(run_all.cells[index])
        assert set(data) == {"text/plain", "text/html"}  # a finished view: its static copy alone, as nbagent's
        page = data["text/html"]
        assert page.startswith('<div class="nba-view nba-state-ok"')
        assert 'data-agent="triage"' in page and 'data-from="triage"' in page and 'data-agent="expert"' in page
        assert "<p>It is <strong>sunny</strong> in Oslo. TERMINATE</p>" in page
        assert "expert · answer" in page
        assert "&lt;b&gt;Sunny&lt;/b&gt;" in page and "<b>Sunny</b>" not in page  # the tool's text, escaped
        assert 'data-metric="llm_calls" data-value="3"' in page


def test_the_saved_stepper_shows_its_last_pause(run_all: nbformat.NotebookNode) -> None:
    # Displayed as nbagent's stepper is: its static copy (updated at each step: a display id), then the widget.
    copy, live = [output.data for output in run_all.cells[9].outputs if output.output_type == "display_data"]
    assert set(copy) == {"text/plain", "text/html"}
    assert "application/vnd.jupyter.widget-view+json" in live and live["text/plain"] == ""
    page = copy["text/html"]
    assert "nba-ag-stepper" in page and "nba-static-copy" in page and 'data-kind="RunFinished"' in page
    assert "nba-ag-context" in page
