"""How nbagent's renderer draws what only AutoGen runs have: a team's turns and AutoGen-only events.

:class:`AgentTurn` marks, in what a live view or the stepper is shown of a team's run, where an
agent's turn begins (and who handed the conversation over, after a handoff); the trace records the
turn as a run of its own instead. The renderer's ``to_html`` and ``to_text`` get one function for
it and for AutoGen's events and messages nbagent has no type for (:mod:`nbagent.autogen.convert`).
"""

from __future__ import annotations

from typing import Literal

from ..messages import BaseAgentEvent
from ..render import PLAIN, Markup, Options, block, el, label, muted, printable, to_html, to_text, value
from .convert import ForeignEvent, ForeignMessage


class AgentTurn(BaseAgentEvent):
    """An agent of a team starts its turn (``source``); ``handed_from``: the agent that handed over."""

    content: str  # the agent's name
    turn: int = 0  # its position among the team run's turns, from 0
    handed_from: str | None = None
    run_id: str = ""  # the turn's run in the trace
    type: Literal["AgentTurn"] = "AgentTurn"

    def to_text(self) -> str:
        if self.handed_from:
            return f"{self.content} takes over from {self.handed_from} (handoff)"
        return f"{self.content}'s turn"


@to_html.register
def _agent_turn(item: AgentTurn, options: Options = PLAIN) -> Markup:
    if item.handed_from:
        transfer = el("span", item.handed_from, " → ", item.content, class_="nba-handoff-target")
        return block(
            "nba-turn nba-handoff",
            transfer,
            muted(f" turn {item.turn + 1} · handoff"),
            data_agent=item.content,
            data_from=item.handed_from,
            data_turn=item.turn,
        )
    return block(
        "nba-turn nba-user",
        label(item.content),
        muted(f" turn {item.turn + 1}"),
        data_agent=item.content,
        data_turn=item.turn,
    )


@to_text.register
def _agent_turn_line(item: AgentTurn, full: bool = False) -> str | None:
    return f"== {printable(item.to_text())}"


@to_html.register
def _foreign_event(item: ForeignEvent, options: Options = PLAIN) -> Markup:
    return block("nba-other", value(item.content), badge=options.badge, title=f"{item.source} · {item.autogen_type}")


@to_html.register
def _foreign_message(item: ForeignMessage, options: Options = PLAIN) -> Markup:
    return block("nba-user", value(item.content), badge=options.badge, title=f"{item.source} · {item.autogen_type}")
