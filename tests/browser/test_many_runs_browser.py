"""A cell showing 1,000 runs in a loop, in JupyterLab and Notebook 7 under a real jupyter_server with its
default IOPub rate limit (issue 43.1).

Before, a cell of 100 shown runs sent 60-105 counted IOPub messages a run (widget models opened, updated
and closed), 2,000-2,800 a second: runs were lost (54-98 of 100 shown) and cells stayed at ``[*]`` (the
kernel-to-server socket dropped the cell's idle message). Now a run that ends before ``GO_LIVE_S`` is one
output, its static copy: every run's answer is on the page, the cell ends and the next cell runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from .conftest import LabNotebook

pytestmark = [pytest.mark.browser, pytest.mark.slow]

RUNS = 1000

SETUP = """
import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient

def shout(text: str) -> str:
    \"\"\"Echo the text.\"\"\"
    return text

def make(i):
    answer = f"answer {i} done"
    if i % 3 == 0:  # plain
        return AssistantAgent(f"p{i}", ReplayChatCompletionClient([answer]))
    request = FunctionCall(id="c", name="shout", arguments='{"text": "hi"}')
    call = CreateResult(finish_reason="function_calls", content=[request])
    stream = i % 3 == 2  # a tool call, then the answer streamed (or not)
    return AssistantAgent(f"t{i}", ReplayChatCompletionClient([call, answer]), tools=[shout], reflect_on_tool_use=True,
                          model_client_stream=stream)
"""
LOOP = f"for i in range({RUNS}):\n    await nbagent.show(make(i), 'go')"
AFTER = "print('the next cell ran')"


@pytest.mark.parametrize("frontend", ["lab", "notebook"])
def test_a_cell_of_1000_shown_runs_shows_every_answer_and_ends(
    run_notebook_in_lab: Callable[..., LabNotebook], frontend: str
) -> None:
    nb = run_notebook_in_lab([SETUP, LOOP, AFTER], name=f"many-runs-{frontend}", frontend=frontend)
    texts = nb.output_texts()
    assert "the next cell ran" in texts[2]
    # Every output reached the page's notebook model (what a save writes)...
    saved = nb.page.evaluate(
        """() => window.jupyterapp.shell.currentWidget.context.model.cells.get(1).outputs.toJSON()
                   .map(o => (o.data || {})['text/html'] || '')"""
    )
    assert len(saved) == RUNS, len(saved)
    assert {int(n) for html in saved for n in re.findall(r"answer (\d+) done", html)} == set(range(RUNS))
    # ...and, past the first 50 (the frontends' default, maxNumberOutputs), shows with "Show more outputs".
    more = nb.page.locator(".jp-Notebook .jp-CodeCell:nth-child(2) .jp-TrimmedOutputs button")
    if more.count():
        more.first.click()
        nb.settle()
    views = nb.page.eval_on_selector_all(
        ".jp-Notebook .jp-CodeCell:nth-child(2) .nba-view",
        "views => views.map(v => [v.dataset.status || v.className, v.innerText])",
    )
    answers = {int(number) for _, text in views for number in re.findall(r"answer (\d+) done", text)}
    assert len(views) == RUNS, len(views)
    assert answers == set(range(RUNS)), sorted(set(range(RUNS)) - answers)[:20]
    assert all("ok" in status for status, _ in views)
    assert not any("IOPub message rate exceeded" in text for text in texts)
    assert "IOPub message rate exceeded" not in nb.lab.log.read_text()
    assert nb.error_outputs() == []
