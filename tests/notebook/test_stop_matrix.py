"""The view's Stop button at every await point of a run (issue 9's cancellation matrix, third column).

The cases and the checks are the core cancellation matrix's (``tests/core/test_cancellation.py``):
the run ends on the click, not when its blocking point would (a hang guard of a minute), no task is
left, every tool call in the context has a result that the Chat Completions validator accepts, and the
next run on the same agent succeeds.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from nbagent.notebook.view import AgentRunView
from nbagent.records import Move
from tests.core.test_cancellation import CASES, LONG, Case, Trigger, check_after, expected_results
from tests.waits import within


class StopTrigger(Trigger):
    """Sets ``reached`` at the case's point; slows the second LLM call for the 'between' case."""

    def record(self, item: Any) -> None:
        if getattr(self.case, "slow_second_call", False) and isinstance(item, Move) and item.name == "next_llm_call":
            self.case.client.latency = LONG
        super().record(item)


@pytest.mark.parametrize("point", list(CASES))
async def test_stop_button_at_every_await_point(point: str) -> None:
    case: Case = CASES[point]()
    case.agent.recorders.append(StopTrigger(case))
    before = asyncio.all_tasks()
    view = AgentRunView(case.agent.name)
    task = view.start(case.agent, "go")
    await within(case.reached.wait(), f"the run to block at {point}")
    await asyncio.sleep(0.01)  # let the run settle into the blocking await
    assert not task.done() and not view.stop_button.disabled
    view.stop_button.click()
    assert await within(task, f"the run to end on Stop at {point}") is None
    assert view.status == "cancelled"
    await check_after(case, before, expected_results(point))
