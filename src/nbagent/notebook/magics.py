"""IPython magics, loaded with ``%load_ext nbagent``.

``%%agent NAME``: the cell body is the task sent to the agent bound to ``NAME`` in the user
namespace; the run is shown live and the cell returns its view when the answer is there.
``%agent_reset NAME``: clears that agent's model context.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from ..agent import AssistantAgent
from ..sync import run_coroutine
from .view import AgentRunView, show


@magics_class
class AgentMagics(Magics):
    """``%%agent`` and ``%agent_reset``."""

    def _agent(self, line: str) -> tuple[str, AssistantAgent]:
        name = line.strip()
        if not name.isidentifier():
            raise UsageError("usage: %%agent NAME (the name of an AssistantAgent variable), then the task")
        agent = self.shell.user_ns.get(name) if self.shell is not None else None
        if agent is None:
            raise UsageError(f"no variable named {name!r} in the notebook")
        if not isinstance(agent, AssistantAgent):
            raise UsageError(f"{name!r} is a {type(agent).__name__}, not an AssistantAgent")
        return name, agent

    @cell_magic
    def agent(self, line: str, cell: str) -> AgentRunView:
        """Send the cell body as a task to the agent named on the first line; show the run live."""
        _, agent = self._agent(line)
        task = cell.strip()
        if not task:
            raise UsageError("the cell body is the task: it is empty")
        return run_coroutine(lambda: show(agent, task))

    @line_magic
    def agent_reset(self, line: str) -> None:
        """Clear the model context of the agent named ``line``."""
        name, agent = self._agent(line)
        run_coroutine(agent.on_reset)
        print(f"{name}: context cleared")


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(AgentMagics)
