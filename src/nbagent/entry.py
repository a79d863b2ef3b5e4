"""``nbagent.run(agent, task)``: a run to its end without ``await``, optionally shown live.

It sits above the notebook layer (its ``show=True`` needs the live view) and imports that layer
only when asked to show.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import _check as check
from .agent import AssistantAgent, check_entry, replayed
from .agent_input import Task
from .cancellation import CancellationToken
from .messages import TaskResult
from .sync import run_coroutine

if TYPE_CHECKING:
    from .autogen import AgentOrTeam, AutoGenTaskResult
    from .notebook.view import AgentRunView
    from .trace.replay import Replay


def run(
    agent: AssistantAgent | AgentOrTeam | Replay,
    task: Task = None,
    *,
    cancellation_token: CancellationToken | None = None,
    show: bool = False,
) -> TaskResult | AgentRunView | AutoGenTaskResult:
    """Run ``task`` on ``agent`` to its end, synchronously.

    Returns the :class:`TaskResult`; with ``show=True`` (in a notebook) displays the live view
    while it runs and returns the :class:`~nbagent.notebook.view.AgentRunView` instead. An AutoGen
    agent or team runs with :func:`nbagent.autogen.run` (recorded into ``nbagent.autogen.trace_of``
    it) and gives AutoGen's own ``TaskResult``.
    """
    from . import autogen

    agent, task = replayed("nbagent.run", agent, task)  # a trace's replay: its agent and recorded task
    if autogen.is_autogen(agent):  # AutoGen's own agents and teams: nbagent.autogen (it checks them)
        if not show:
            ran = autogen.run(agent, task, cancellation_token=cancellation_token)  # type: ignore[arg-type]
            return run_coroutine(lambda: ran)
    else:
        check_entry("nbagent.run", agent, task, cancellation_token)
        check.boolean("nbagent.run", "show", show)
    if TYPE_CHECKING:  # past here an AutoGen agent or team is only shown (show_view takes it)
        assert isinstance(agent, AssistantAgent)
    if not show:
        return agent.run_sync(task, cancellation_token=cancellation_token)
    from .notebook.view import show_sync

    view: AgentRunView = show_sync(agent, task, cancellation_token=cancellation_token)
    return view
