"""Recording: every item of every run an agent makes, kept for analysis."""

from __future__ import annotations

from .run import RunItem


class Trace:
    """Records the items of the runs of the agents it is attached to (each agent has one)."""

    def __init__(self) -> None:
        self.items: list[RunItem] = []

    def record(self, item: RunItem) -> None:
        self.items.append(item)
