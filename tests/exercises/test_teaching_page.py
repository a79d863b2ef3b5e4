"""docs/teaching.md's scenario of one's own runs as a teacher would paste it under the walkthrough's first cell:
each call of an answer has its own id, every tool call gets a real result, and predict mode asks about it."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from nbagent.notebook.stepper_widget import NotebookStepper
from nbagent.sync import run_coroutine

ROOT = Path(__file__).resolve().parents[2]
"""The repository (the notebook is read as JSON: nbformat costs 3 s to import, jupyter_client more)."""


def test_the_teaching_pages_scenario_runs_on_the_walkthroughs_helpers() -> None:
    page = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    scenario = re.search(r"## A scenario of your own.*?```python\n(.*?)```", page, re.S)
    assert scenario is not None
    notebook = json.loads((ROOT / "notebooks" / "02_walkthrough_steps_1_5.ipynb").read_text(encoding="utf-8"))
    first = next(cell for cell in notebook["cells"] if cell["cell_type"] == "code")
    names: dict[str, Any] = {}
    exec("".join(first["source"]), names)  # the walkthrough's helpers: call, tool_calls, get_weather
    exec(scenario.group(1), names)
    stepper = names["nbagent"].step(names["agent"], "How much warmer is Tokyo than Paris?", predict=True)
    assert isinstance(stepper, NotebookStepper)
    run_coroutine(stepper.run_to_end)
    assert stepper.status == "finished"
    batches = [[(r.call_id, r.content, r.is_error) for r in m.tool_results] for m in stepper.history if m.tool_results]
    for batch in batches:
        assert len({call_id for call_id, _, _ in batch}) == len(batch), batch  # results paired by unique ids
    results = [content for batch in batches for _, content, error in batch if not error]
    assert results == ["18 °C, sunny", "12 °C, cloudy", "6.0"]  # the script's final text is true to them
    assert stepper.quiz.score.skipped > 0  # predict mode asked before the moves with a choice
