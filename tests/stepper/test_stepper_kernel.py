"""In a real kernel: moves made in later cells update the stepper's saved (static) output."""

from __future__ import annotations

import re

import nbformat
import pytest

from ..kernels import execute_notebook, kernel_manager

pytestmark = pytest.mark.kernel

CELLS = [
    "import nbagent\n"
    "from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient\n"
    "def add(a: int, b: int) -> int:\n"
    '    """Add two integers."""\n'
    "    return a + b\n"
    "call = CreateResult(finish_reason='function_calls',\n"
    "                    content=[FunctionCall(id='c1', name='add', arguments='{\"a\": 2, \"b\": 3}')])\n"
    "agent = AssistantAgent('assistant', ReplayChatCompletionClient([call, 'five <b>5</b>']), tools=[add],\n"
    "                       reflect_on_tool_use=True)",
    "stepper = nbagent.step(agent, 'What is 2 + 3?')\nstepper",
    "first = await stepper.next()\nfirst",
    "results = await stepper.run_to_end()\n[r.name for r in results]",
]


def test_saved_output_shows_the_last_move_made_in_any_cell() -> None:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    execute_notebook(notebook, kernel_manager("python3"), timeout=120)
    outputs = [cell.outputs for cell in notebook.cells]
    # The static copy (updated after every move), then the live widget with no copy of its own.
    assert [o.output_type for o in outputs[1]] == ["display_data", "display_data"]
    data, live = outputs[1][0].data, outputs[1][1].data
    assert set(data) == {"text/html", "text/plain"}
    assert set(live) == {"application/vnd.jupyter.widget-view+json", "text/plain"} and live["text/plain"] == ""
    assert data["text/plain"] == "<Stepper agent='assistant' status='finished', 6 moves, at reflect>"
    html = data["text/html"]
    assert re.search(r'nba-stepper-head" data-step="5" data-move="reflect" data-index="6"', html)
    assert 'data-move="reflect" data-step="5" data-state="current"' in html
    assert "five &lt;b&gt;5&lt;/b&gt;" in html and "<b>5</b>" not in html
    assert outputs[2][0].data["text/plain"] == (
        "<StepResult #1 STEP 1 add_messages (_add_messages_to_context): 0 events, +1 context rows>"
    )
    assert outputs[3][0].data["text/plain"] == "['message_id', 'call_llm', 'tool_request', 'tool_execution', 'reflect']"
