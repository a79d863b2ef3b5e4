"""AutoGen's own agents and teams, recorded and shown by nbagent (the ``nbagent-loop[autogen]`` extra).

``result = await nbagent.autogen.run(agent_or_team, task=..., trace=trace)`` runs AutoGen's own
``run_stream`` and returns AutoGen's ``TaskResult``; the trace gets the same rows as for nbagent's
own agents (``events_df``, ``llm_calls_df``, ``tool_calls_df``, ``runs_df``, the context of each
agent at each item), one run per agent turn. :func:`iter` gives the run item by item, as the live
view and the stepper read it. See :mod:`nbagent.autogen.session` for how.

Importing this package registers its converters into the core's hooks (:mod:`.seam`: the one place
where nbagent meets AutoGen's objects) and imports no AutoGen module: :func:`is_autogen` tells whether an object is an
AutoGen agent or team without importing AutoGen (an object of a module never imported cannot be
one), and the rest is imported on first use.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from collections.abc import Callable

    from autogen_agentchat.base import ChatAgent, TaskResult, Team
    from autogen_core import CancellationToken

    from ..cancellation import CancellationToken as NbCancellationToken
    from ..trace import Trace
    from .client import RecordingClient
    from .session import AutoGenRun, Task
    from .stepper import AutoGenStepper

    AgentOrTeam: TypeAlias = ChatAgent | Team
    """What nbagent's entry points take from AutoGen: an agent or a team."""
    Runnable: TypeAlias = ChatAgent | Team | AutoGenRun
    """What nbagent's live view takes from AutoGen: an agent, a team, or a run of one."""
    AutoGenTaskResult: TypeAlias = TaskResult
    """What AutoGen's ``run`` returns (and ``nbagent.run`` for an AutoGen agent or team)."""

__all__ = [
    "AutoGenRun",
    "AutoGenStepper",
    "RecordingClient",
    "is_autogen",
    "iter",
    "run",
    "register_notebook_stepper",
    "step",
    "trace_of",
    "view_run",
]


from .. import records
from . import seam as _seam

_seam.register()  # the core's hooks answered for AutoGen (imports no AutoGen)


def is_autogen(obj: object) -> bool:
    """Whether ``obj`` is an AutoGen agent (``ChatAgent``) or team (``Team``); imports no AutoGen."""
    base = sys.modules.get("autogen_agentchat.base")
    if base is None or not isinstance(obj, (base.ChatAgent, base.Team)):
        return False
    # nbagent's AssistantAgent is a virtual ChatAgent (AutoGen's teams take it): not one of AutoGen's own.
    return any(cls.__module__.startswith("autogen") for cls in type(obj).__mro__[:-1])


def trace_of(agent_or_team: ChatAgent | Team) -> Trace:
    """The trace nbagent keeps for an AutoGen agent or team: where its runs are recorded when no
    other trace is given (an nbagent agent's ``agent.trace``)."""
    from .traces import trace_of as kept

    return kept(agent_or_team)


def iter(  # noqa: A001 (nbagent.autogen.iter, as AssistantAgent.iter)
    agent_or_team: ChatAgent | Team,
    task: Task = None,
    *,
    trace: Trace | None = None,
    cancellation_token: CancellationToken | NbCancellationToken | None = None,
    step: bool = False,
    markers: bool = False,
) -> AutoGenRun:
    """One run of an AutoGen agent or team as an async iterator over nbagent run items, recorded
    into ``trace`` (by default :func:`trace_of` the agent or team). ``step=True``: every model call
    waits until the consumer has taken its ``LLMCall`` and asks for the next item; ``markers=True``:
    a team's turns are marked for a view (:class:`~nbagent.autogen.show.AgentTurn`)."""
    from .session import AutoGenRun
    from .traces import trace_of as kept

    chosen = trace if trace is not None else kept(agent_or_team)
    return AutoGenRun(
        agent_or_team, task, trace=chosen, cancellation_token=cancellation_token, step=step, markers=markers
    )


async def run(
    agent_or_team: ChatAgent | Team,
    task: Task = None,
    *,
    trace: Trace | None = None,
    cancellation_token: CancellationToken | NbCancellationToken | None = None,
) -> TaskResult:
    """Run AutoGen's own ``run_stream`` to its end, recorded into ``trace``; AutoGen's ``TaskResult``."""
    run_ = iter(agent_or_team, task, trace=trace, cancellation_token=cancellation_token)
    async with run_:
        async for _ in run_:
            pass
    assert run_.result is not None
    return run_.result


def view_run(
    source: object, task: object = None, cancellation_token: CancellationToken | NbCancellationToken | None = None
) -> AutoGenRun | None:
    """For nbagent's live view: a run of ``source`` if it is an AutoGen agent or team (marked turns;
    an :class:`AutoGenRun` is taken as it is), else ``None``."""
    session = sys.modules.get(__name__ + ".session")  # loaded once any AutoGen run was made
    if session is not None and isinstance(source, session.AutoGenRun):
        return source  # type: ignore[no-any-return]
    if not is_autogen(source):
        return None
    return iter(source, task, cancellation_token=cancellation_token, markers=True)  # type: ignore[arg-type]


_NOTEBOOK_STEPPER: list[Callable[[], type[AutoGenStepper]]] = []


def register_notebook_stepper(stepper_class: Callable[[], type[AutoGenStepper]]) -> None:
    """Make :func:`step` give the stepper class ``stepper_class()`` returns (an
    :class:`~nbagent.autogen.stepper.AutoGenStepper` with a widget): the notebook layer's
    ``NotebookAutoGenStepper``, registered by ``nbagent`` at import (this layer knows no view)."""
    _NOTEBOOK_STEPPER[:] = [stepper_class]


def step(
    agent_or_team: ChatAgent | Team,
    task: Task = None,
    *,
    trace: Trace | None = None,
    cancellation_token: CancellationToken | NbCancellationToken | None = None,
) -> AutoGenStepper:
    """Walk one run of an AutoGen agent or team item by item; display it to get its widget (the
    registered notebook stepper, see :func:`register_notebook_stepper`; a plain
    :class:`~nbagent.autogen.stepper.AutoGenStepper` if none is)."""
    from .convert import autogen_token
    from .stepper import AutoGenStepper

    token = autogen_token(cancellation_token)
    stepper_class = _NOTEBOOK_STEPPER[0]() if _NOTEBOOK_STEPPER else AutoGenStepper
    return stepper_class(agent_or_team, task, trace=trace, cancellation_token=token)


def _stepper_of(source: object, task: object, token: object) -> AutoGenStepper | None:
    """For ``nbagent.step``: :func:`step` for AutoGen's agent or team, else ``None``."""
    if not is_autogen(source):
        return None
    return step(source, task, cancellation_token=token)  # type: ignore[arg-type]


def _run_of(source: object, task: object, token: object) -> AutoGenRun | None:
    """For nbagent's live view: :func:`view_run`."""
    return view_run(source, task, token)  # type: ignore[arg-type]  # the view checks nbagent's own tokens


records.FOREIGN_RUN.register(_run_of)
records.FOREIGN_STEPPER.register(_stepper_of)


def __getattr__(name: str) -> Any:
    if name == "AutoGenRun":
        from .session import AutoGenRun

        return AutoGenRun
    if name == "AutoGenStepper":
        from .stepper import AutoGenStepper

        return AutoGenStepper
    if name == "RecordingClient":
        from .client import RecordingClient

        return RecordingClient
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
