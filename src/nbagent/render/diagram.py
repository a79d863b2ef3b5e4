"""The loop as an SVG diagram, drawn from its own description: :data:`nbagent.records.MOVES`.

Every move of ``MOVES`` is a box and every one of its ``edges`` an arrow (an edge to ``"end"``
goes to the box where the run ends with its ``Response``). Only where the boxes sit is this
module's choice (:data:`LAYOUT`); the arrows' paths are computed from those places, a few with a
lane to run in (:data:`ROUTES`) so that they go around the boxes between their ends.

A box or arrow that no :class:`~nbagent.records.LoopSettings` given allows is drawn faded
(``data-state="unused"``); so is an arrow into or out of such a box. Moves made so far are
``visited``, the last one ``current`` and the next one ``upcoming``; arrows the walk went along are
``taken``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from ..language import words
from ..records import END, MOVES, LoopSettings, MoveName
from .markup import Markup, el
from .style import fallback

__all__ = ["END_BOX", "LAYOUT", "NODE_H", "NODE_W", "ROUTES", "Route", "edge_states", "node_states", "pipeline"]

Target = MoveName | Literal["end"]
Box = tuple[float, float, float, float]
Side = Literal["top", "bottom", "left", "right"]

NODE_W, NODE_H = 120, 46
_COLUMNS = (10, 150, 290, 430, 640)
_ROWS = (30, 150, 280)
LAYOUT: dict[MoveName, tuple[int, int]] = {
    # move: (x, y) of its box's top-left corner
    "add_messages": (_COLUMNS[0], _ROWS[0]),
    "memory": (_COLUMNS[1], _ROWS[0]),
    "message_id": (_COLUMNS[2], _ROWS[0]),
    "call_llm": (_COLUMNS[3], _ROWS[0]),
    "text_exit": (_COLUMNS[4], _ROWS[0]),
    "tool_request": (_COLUMNS[1], _ROWS[1]),
    "tool_execution": (_COLUMNS[2], _ROWS[1]),
    "handoff_check": (_COLUMNS[3], _ROWS[1]),
    "next_llm_call": (_COLUMNS[4], _ROWS[1]),
    "reflect": (_COLUMNS[2], _ROWS[2]),
    "summarize": (_COLUMNS[3], _ROWS[2]),
}
END_BOX = (816, _ROWS[0], 76, _ROWS[2] + NODE_H - _ROWS[0])
"""Where runs end (x, y, width, height): one tall box every exit arrow reaches from its left or below."""
WIDTH, HEIGHT = END_BOX[0] + END_BOX[2] + 8, _ROWS[2] + NODE_H + 34
FONT_PX = 12
"""The size of every text of the diagram. The diagram shrinks to the width it has, down to 11/12 of its
size (825 px: its text stays at 11 px or more; at 1280 px with JupyterLab's file browser open an output
has 848 px), and scrolls in a narrower output."""
ARROW_LENGTH, ARROW_HALF_WIDTH = 9.0, 4.5


@dataclass(frozen=True)
class Route:
    """How an arrow runs: the sides it leaves and enters by (shifted by ``*_dx`` along a top or
    bottom side), and the ``lane`` (a y) of its horizontal run, if it goes around boxes.

    ``label_at`` (x, y, text-anchor) places the label where the automatic place is crowded; arrows
    with the same label at the same place share it.
    """

    leave: Side = "right"
    enter: Side = "left"
    lane: float | None = None
    leave_dx: float = 0
    enter_dx: float = 0
    label_at: tuple[float, float, str] | None = None


# The four "iterations used up" arrows: one label by each box they reach.
_USED_UP_REFLECT = (_COLUMNS[2] - 4, _ROWS[2] - 8, "end")
_USED_UP_SUMMARY = (_COLUMNS[3] + NODE_W + 4, _ROWS[2] - 8, "start")
ROUTES: dict[tuple[MoveName, Target], Route] = {
    ("add_messages", "memory"): Route(label_at=(_COLUMNS[1] - 10, _ROWS[0] - 4, "middle")),
    ("add_messages", "message_id"): Route("top", "top", lane=14, label_at=(_COLUMNS[1] + NODE_W / 2, 10, "middle")),
    ("call_llm", "tool_request"): Route("bottom", "top", lane=100, enter_dx=-20),
    ("next_llm_call", "tool_request"): Route("top", "top", lane=118, leave_dx=-30, enter_dx=20),
    ("next_llm_call", "text_exit"): Route("top", "bottom", leave_dx=24, enter_dx=24),
    # Around "handoff?" by the top, under "tool calls again" and entering left of where it leaves.
    ("tool_execution", "next_llm_call"): Route(
        "top", "top", lane=136, leave_dx=40, enter_dx=-45, label_at=(_COLUMNS[3] + NODE_W / 2, 132, "middle")
    ),
    ("tool_execution", "reflect"): Route("bottom", "top", label_at=_USED_UP_REFLECT),
    ("tool_execution", "summarize"): Route(
        "bottom", "top", lane=232, leave_dx=20, enter_dx=-40, label_at=_USED_UP_SUMMARY
    ),
    ("handoff_check", "end"): Route("bottom", "left", lane=222, leave_dx=40, label_at=(720, 218, "middle")),
    ("handoff_check", "reflect"): Route(
        "bottom", "top", lane=252, leave_dx=-20, enter_dx=40, label_at=_USED_UP_REFLECT
    ),
    ("handoff_check", "summarize"): Route("bottom", "top", label_at=_USED_UP_SUMMARY),
    ("reflect", "end"): Route("bottom", "bottom", lane=_ROWS[2] + NODE_H + 20),
}
"""The arrows that do not simply go straight from one box's side to the facing side of the next."""


def _box(target: Target) -> Box:
    if target == END:
        return END_BOX
    x, y = LAYOUT[target]
    return x, y, NODE_W, NODE_H


def _anchor(box: Box, side: Side, dx: float, y: float | None = None) -> tuple[float, float]:
    x0, y0, w, h = box
    if side == "top":
        return x0 + w / 2 + dx, y0
    if side == "bottom":
        return x0 + w / 2 + dx, y0 + h
    return (x0 if side == "left" else x0 + w), (y0 + h / 2 if y is None else y)


def _route(source: MoveName, target: Target) -> Route:
    """The arrow's route: as :data:`ROUTES` says, else straight between facing sides of two boxes
    in one row or one column."""
    route = ROUTES.get((source, target))
    if route is not None:
        return route
    (x, y, _, _), (tx, ty, _, _) = _box(source), _box(target)
    if target == END or y == ty:
        return Route("right", "left") if tx > x else Route("left", "right")
    if x == tx:
        return Route("bottom", "top") if ty > y else Route("top", "bottom")
    raise ValueError(f"no route for the arrow {source} -> {target}: add one to ROUTES")


def _points(source: MoveName, target: Target) -> list[tuple[float, float]]:
    """The corners of the arrow from ``source`` to ``target``: straight, or through its lane."""
    route = _route(source, target)
    start = _anchor(_box(source), route.leave, route.leave_dx)
    if route.enter in ("left", "right"):
        # A side entry keeps the height it arrives at (the end box spans the rows).
        end = _anchor(_box(target), route.enter, 0, route.lane if route.lane is not None else start[1])
    else:
        end = _anchor(_box(target), route.enter, route.enter_dx)
    if route.lane is None:
        return [start, end]
    points = [start, (start[0], route.lane), (end[0], route.lane)]
    return points if end[1] == route.lane else [*points, end]


def _label_at(source: MoveName, target: Target, points: list[tuple[float, float]]) -> tuple[float, float, str]:
    """Where an arrow's label goes: as its route says, else above the middle of its longest
    horizontal run, else beside its longest vertical one (x, y, text-anchor)."""
    route = _route(source, target)
    if route.label_at is not None:
        return route.label_at
    runs = list(zip(points, points[1:]))
    flat = [(abs(b[0] - a[0]), a, b) for a, b in runs if a[1] == b[1]]
    if flat and max(flat)[0] >= 40:
        _, a, b = max(flat)
        return (a[0] + b[0]) / 2, a[1] - 4, "middle"
    _, a, b = max((abs(b[1] - a[1]), a, b) for a, b in runs)
    return a[0] + 4, (a[1] + b[1]) / 2 + 3, "start"


def _path(points: list[tuple[float, float]]) -> str:
    (x, y), *rest = points
    parts = [f"M{x:g},{y:g}"]
    for (_, py), (qx, qy) in zip(points, rest):
        parts.append(f"H{qx:g}" if py == qy else f"V{qy:g}")
    return " ".join(parts)


_RAISED, _LINE = fallback("raised"), fallback("line")


def _arrowhead(points: list[tuple[float, float]]) -> str:
    """A filled triangle whose tip is the arrow's last point, pointing along its last run.

    Drawn inline with its arrow (no ``<marker>``): an id shared by two diagrams on one page would
    draw one diagram's heads from the other's marker, which is not drawn when its diagram is hidden.
    """
    (ax, ay), (bx, by) = points[-2], points[-1]
    dx, dy = (bx > ax) - (bx < ax), (by > ay) - (by < ay)
    base_x, base_y = bx - dx * ARROW_LENGTH, by - dy * ARROW_LENGTH
    left = (base_x - dy * ARROW_HALF_WIDTH, base_y + dx * ARROW_HALF_WIDTH)
    right = (base_x + dy * ARROW_HALF_WIDTH, base_y - dx * ARROW_HALF_WIDTH)
    return f"M{bx:g},{by:g} L{left[0]:g},{left[1]:g} L{right[0]:g},{right[1]:g} z"


def _possible(name: MoveName, settings: Sequence[LoopSettings]) -> bool:
    return any(MOVES[name].possible(s) for s in settings)


def node_states(
    settings: Iterable[LoopSettings],
    visited: Sequence[MoveName] = (),
    current: MoveName | None = None,
    upcoming: MoveName | None = None,
) -> dict[MoveName, str]:
    """Each move's state: ``current``, ``upcoming``, ``visited``, ``unused`` (no settings allow it) or ``idle``."""
    allowed = list(settings)
    states: dict[MoveName, str] = {name: "idle" if _possible(name, allowed) else "unused" for name in MOVES}
    for name in visited:
        states[name] = "visited"
    if upcoming is not None:
        states[upcoming] = "upcoming"
    if current is not None:
        states[current] = "current"
    return states


def edge_states(
    settings: Iterable[LoopSettings], visited: Sequence[MoveName] = (), ended: bool = False
) -> dict[tuple[MoveName, Target], str]:
    """Each arrow's state: ``taken`` (the walk went along it), ``unused`` (no settings allow it, or
    one of its boxes) or ``idle``. ``ended``: the last visited move ended the run normally."""
    allowed = list(settings)
    taken: set[tuple[MoveName, Target]] = set(zip(visited, visited[1:]))
    if ended and visited:
        taken.add((visited[-1], END))
    states: dict[tuple[MoveName, Target], str] = {}
    for name, info in MOVES.items():
        for edge in info.edges:
            possible = any(
                edge.possible(s) and info.possible(s) and (edge.target == END or MOVES[edge.target].possible(s))
                for s in allowed
            )
            key = (name, edge.target)
            states[key] = "taken" if key in taken else "idle" if possible else "unused"
    return states


def pipeline(
    settings: Iterable[LoopSettings],
    visited: Sequence[MoveName] = (),
    current: MoveName | None = None,
    upcoming: MoveName | None = None,
    ended: bool = False,
) -> Markup:
    """The loop as one ``<svg>``: a box per move, an arrow per edge of ``MOVES``, states as data attributes.

    ``settings``: the settings the agent may have (more than one when some are not known: a box or
    arrow is unused only if none allows it).
    """
    allowed = list(settings)
    nodes = node_states(allowed, visited, current, upcoming)
    edges = edge_states(allowed, visited, ended)
    drawn: list[Markup] = []
    labels: dict[tuple[str, float, float, str], list[str]] = {}
    for (source, target), state in edges.items():
        points = _points(source, target)
        drawn.append(
            el(
                "g",
                el("path", class_="nba-edge", d=_path(points), fill="none", stroke=_LINE),
                el("path", class_="nba-arrowhead", d=_arrowhead(points), fill=_LINE),
                class_="nba-edge-group",
                data_from=source,
                data_to=target,
                data_state=state,
            )
        )
        text = next(e for e in MOVES[source].edges if e.target == target).label
        if text:
            labels.setdefault((text, *_label_at(source, target, points)), []).append(state)
    for (text, x, y, anchor), states in labels.items():
        shown = "taken" if "taken" in states else "idle" if "idle" in states else "unused"
        drawn.append(
            el(
                "text",
                text,
                class_="nba-edge-label",
                x=f"{x:g}",
                y=f"{y:g}",
                text_anchor=anchor,
                font_size=FONT_PX,
                fill=fallback("muted"),
                data_state=shown,
            )  # fmt: skip
        )
    for name, (x, y) in LAYOUT.items():
        info = MOVES[name]
        cx = x + NODE_W // 2
        drawn.append(
            el(
                "g",
                el("title", f"{info.title} ({info.method})"),
                el(
                    "rect",
                    x=x,
                    y=y,
                    width=NODE_W,
                    height=NODE_H,
                    rx=7,
                    fill=fallback("raised"),
                    stroke=fallback("line"),
                ),
                el(
                    "text",
                    f"STEP {info.step}",
                    class_="nba-node-step",
                    x=cx,
                    y=y + 18,
                    text_anchor="middle",
                    font_size=FONT_PX,
                    font_weight=700,
                ),
                el("text", info.label, x=cx, y=y + 35, text_anchor="middle", font_size=FONT_PX),
                class_="nba-node",
                data_move=name,
                data_step=info.step,
                data_state=nodes[name],
            )
        )
    x, y, w, h = END_BOX
    drawn.append(
        el(
            "g",
            el("title", words("The run ends: its Response holds the final message")),
            el("rect", x=x, y=y, width=w, height=h, rx=20, fill=fallback("surface"), stroke=fallback("handoff")),
            el("text", "Response", x=x + w // 2, y=y + h // 2 - 4, text_anchor="middle", font_size=FONT_PX),
            el("text", words("(run ends)"), x=x + w // 2, y=y + h // 2 + 12, text_anchor="middle", font_size=FONT_PX),
            class_="nba-end",
            data_move=END,
        )
    )
    return el(
        "svg",
        drawn,
        class_="nba-pipeline",
        xmlns="http://www.w3.org/2000/svg",
        viewBox=f"0 0 {WIDTH} {HEIGHT}",
        width=WIDTH,
        height=HEIGHT,
        role="img",
        aria_label="STEP 1 to 5 and the tool loop",
    )
