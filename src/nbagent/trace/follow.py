"""What a live view of a trace reads at each update: a :class:`Follower` (a trace's
:meth:`~nbagent.trace.TraceFrames.follower`) gives the runs new or changed since it was last asked."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Collection

    import pandas as pd

__all__ = ["Follower"]


class Follower(ABC):
    """What changed in a trace since it was last asked: :meth:`changes` gives the rows of ``runs_df()``
    and of the tool calls (at least :data:`~nbagent.trace.explore.TOOL_USE_COLUMNS`) of the runs new or
    changed since, for :meth:`~nbagent.trace.explore.RunTable.update`; ``None`` says to read the whole
    trace again."""

    #: Whether :meth:`changes` reads files: then call it from a worker thread, not on the event loop.
    reads_files: bool = False

    @abstractmethod
    def state(self) -> tuple[object, ...]:
        """Something cheap to read that differs whenever :meth:`changes` would give something new."""

    @abstractmethod
    def changes(self, also: Collection[str] = ()) -> tuple[pd.DataFrame, pd.DataFrame] | None:
        """``(runs, tool_calls)`` of the runs new or changed since the last call (and of the runs ``also``
        names, where the follower holds them); ``None``: read the whole trace again."""
