"""IPython magics, loaded with ``%load_ext nbagent``.

``%%agent NAME``: the cell body is the task sent to the agent bound to ``NAME`` in the user
namespace; the run is shown live and the cell returns its view when the answer is there.
``%agent_reset NAME``: clears that agent's model context.
"""

from __future__ import annotations

from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class

from .. import _check as check
from ..agent import AssistantAgent
from ..sync import run_coroutine
from .view import AgentRunView, show_sync


class _MagicError(UsageError):
    """A magic's wrong argument: shown in one line, without a traceback, as IPython shows a UsageError."""

    def _render_traceback_(self) -> list[str]:  # IPython's hook (it shows only UsageError itself that way)
        return [f"{type(self).__name__}: {self}"]


class NotAnAgentError(_MagicError, TypeError):
    """The variable a magic names is not an AssistantAgent."""


class AgentNameError(_MagicError, ValueError):
    """A magic's line is not a variable name, or names no variable of the notebook."""


@magics_class
class AgentMagics(Magics):
    """``%%agent`` and ``%agent_reset``."""

    def _agent(self, line: str, magic: str = "%%agent") -> tuple[str, AssistantAgent]:
        name = line.strip()
        expected = "the name of an AssistantAgent variable"
        if not name.isidentifier():
            usage = f"Usage: {magic} NAME" + (", then the task in the cell" if magic == "%%agent" else "")
            raise AgentNameError(check.message(magic, "NAME", expected, check.short_repr(name), usage))
        names = self.shell.user_ns if self.shell is not None else {}
        if name not in names:
            raise AgentNameError(
                check.message(magic, "NAME", expected, repr(name), "No variable has that name in the notebook")
            )
        agent = names[name]
        if not isinstance(agent, AssistantAgent):
            raise NotAnAgentError(check.message(magic, name, "an AssistantAgent", check.given(agent)))
        return name, agent

    @cell_magic
    def agent(self, line: str, cell: str) -> AgentRunView:
        """Send the cell body as a task to the agent named on the first line; show the run live."""
        _, agent = self._agent(line)
        task = cell.strip()
        if not task:
            raise UsageError("the cell body is the task: it is empty")
        return show_sync(agent, task)

    @line_magic
    def agent_reset(self, line: str) -> None:
        """Clear the model context of the agent named ``line``."""
        name, agent = self._agent(line, "%agent_reset")
        run_coroutine(agent.on_reset)
        print(f"{name}: context cleared")


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(AgentMagics)
