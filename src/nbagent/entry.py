"""``nbagent.run(agent, task)``: a run to its end without ``await``, optionally shown live.

It sits above the notebook layer (its ``show=True`` needs the live view) and imports that layer
only when asked to show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .agent import AssistantAgent, Task
from .cancellation import CancellationToken
from .messages import TaskResult
from .sync import run_coroutine

if TYPE_CHECKING:
    from .notebook.view import AgentRunView


def run(
    agent: AssistantAgent,
    task: Task = None,
    *,
    cancellation_token: CancellationToken | None = None,
    show: bool = False,
) -> TaskResult | AgentRunView:
    """Run ``task`` on ``agent`` to its end, synchronously.

    Returns the :class:`TaskResult`; with ``show=True`` (in a notebook) displays the live view
    while it runs and returns the :class:`~nbagent.notebook.view.AgentRunView` instead.
    """
    if not show:
        return agent.run_sync(task, cancellation_token=cancellation_token)
    from .notebook.view import show as show_view

    view: AgentRunView = run_coroutine(lambda: show_view(agent, task, cancellation_token=cancellation_token))
    return view
