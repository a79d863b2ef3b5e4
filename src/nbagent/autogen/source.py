"""What a trace reads of an AutoGen agent or team: a :class:`~nbagent.records.RunSource`."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..records import Recorder
from .context import ContextView


@dataclass(eq=False)
class AutoGenSource:
    """An AutoGen agent (or team) as a trace sees it: its name, its context as it was at the item
    being recorded, its client's secrets, and the recorders that record its runs."""

    name: str
    model_context: ContextView = field(default_factory=ContextView)
    secrets: tuple[str, ...] = ()
    recorders: list[Recorder] = field(default_factory=list)

    def record(self, item: object) -> None:
        for recorder in self.recorders:
            recorder.record(item)  # type: ignore[arg-type]  # a RunItem: the run builds nothing else

    def __repr__(self) -> str:
        return f"AutoGenSource({self.name!r})"
