"""The trace nbagent keeps for each AutoGen agent or team (held weakly), as ``agent.trace`` for its own."""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..trace import Trace

_TRACES: weakref.WeakKeyDictionary[Any, Trace] = weakref.WeakKeyDictionary()


def trace_of(agent_or_team: Any) -> Trace:
    """The trace of ``agent_or_team`` (made on first use): where its runs are recorded when no other
    trace is given."""
    trace = _TRACES.get(agent_or_team)
    if trace is None:
        from ..trace import Trace

        trace = _TRACES[agent_or_team] = Trace()
    return trace
