"""In a real Jupyter kernel (issue 27): nbagent's agent with AutoGen's model client, and an AutoGen
team of nbagent's agents, shown live (nbagent.show), stepped (nbagent.step) and run (nbagent.run),
with only AutoGen's imports besides nbagent's; the saved notebook shows each finished view."""

from __future__ import annotations

import nbformat
import pytest

from ..notebooks._kernel import error_outputs, execute, leftover_tasks, this_python, write_kernelspec

pytestmark = pytest.mark.kernel

SETUP = """
import logging
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient
from autogen_agentchat.conditions import TextMentionTermination
from autogen_agentchat.teams import Swarm
from autogen_ext.models.replay import ReplayChatCompletionClient as AutoGenReplay

logging.getLogger("autogen_core.events").setLevel(logging.ERROR)

def team():
    handoff = CreateResult(finish_reason="function_calls",
                           content=[FunctionCall(id="h1", name="transfer_to_expert", arguments="{}")])
    triage = AssistantAgent("triage", ReplayChatCompletionClient([handoff]), handoffs=["expert"])
    expert = AssistantAgent("expert", ReplayChatCompletionClient(["It is <b>solved</b>. TERMINATE"]),
                            model_client_stream=True)
    return Swarm([triage, expert], termination_condition=TextMentionTermination("TERMINATE"))
"""

CELLS = [
    SETUP,
    "solo = AssistantAgent('solo', AutoGenReplay(['Hello from **AutoGen**']), model_client_stream=True)\n"
    "view = await nbagent.show(solo, 'hi')\nprint(view.status, type(solo.model_client).__name__)",
    "tv = await nbagent.show(team(), 'help')\nprint(tv.status, tv.response.chat_message.source)",
    "r = nbagent.run(team(), 'help')\nprint(type(r).__module__, r.stop_reason)",
    "stepper = nbagent.step(team(), 'help')\nstepper",
    "steps = await stepper.run_to_end()\nprint(stepper.status, sorted({s.kind for s in steps} & {'Move', 'LLMCall'}))",
]


@pytest.fixture(scope="module")
def run_all(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    folder = tmp_path_factory.mktemp("bridge_kernel")
    kernels = write_kernelspec(folder, this_python())
    path = folder / "bridge.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(cell) for cell in CELLS]), path)
    return execute(path, kernels)


def texts(cell: nbformat.NotebookNode) -> str:
    return "".join(output.get("text", "") for output in cell.outputs if output.output_type == "stream")


def test_every_cell_runs_and_the_saved_views_show_the_runs(run_all: nbformat.NotebookNode) -> None:
    cells = run_all.cells[1:-1]  # without the harness's first and last cells
    assert error_outputs(run_all) == []
    assert leftover_tasks(run_all) == "leftover tasks: []"
    assert texts(cells[1]) == "ok BridgedClient\n"
    assert texts(cells[2]) == "ok expert\n"
    assert texts(cells[3]) == "autogen_agentchat.base._task Text 'TERMINATE' mentioned\n"
    assert texts(cells[5]) == "finished ['LLMCall', 'Move']\n"
    (solo,) = [o.data for o in cells[1].outputs if o.output_type == "display_data"]
    assert "<p>Hello from <strong>AutoGen</strong></p>" in solo["text/html"]
    (shown,) = [o.data for o in cells[2].outputs if o.output_type == "display_data"]
    page = shown["text/html"]
    assert 'data-from="triage"' in page and 'data-agent="expert"' in page  # the handoff, turn by turn
    assert "<p>It is &lt;b&gt;solved&lt;/b&gt;. TERMINATE</p>" in page and "<b>solved" not in page  # escaped
    assert 'data-move="call_llm"' in page  # the nbagent agents' moves in the team's view
