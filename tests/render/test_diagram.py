"""The loop diagram is drawn from records.MOVES: a box per move, an arrow per edge, each where it says."""

from __future__ import annotations

import re
from itertools import product

import pytest

from nbagent.records import END, MOVES, LoopSettings
from nbagent.render import diagram, edge_states, node_states, pipeline

EVERY_SETTING = [
    LoopSettings(memory=m, handoffs=h, max_tool_iterations=i, reflect_on_tool_use=r)
    for m, h, i, r in product((False, True), (False, True), (1, 3), (False, True))
]
EDGE = re.compile(
    r'<g class="nba-edge-group" data-from="(\w+)" data-to="(\w+)" data-state="(\w+)"><path [^>]*\sd="([^"]+)"'
)


def corners(path: str) -> list[tuple[float, float]]:
    """The points of an ``M x,y H.. V..`` path."""
    start, *moves = path.split()
    x, y = map(float, start[1:].split(","))
    points = [(x, y)]
    for move in moves:
        x, y = (float(move[1:]), y) if move[0] == "H" else (x, float(move[1:]))
        points.append((x, y))
    return points


def on_border(point: tuple[float, float], box: tuple[float, float, float, float]) -> bool:
    x, y = point
    left, top, width, height = box
    inside = left <= x <= left + width and top <= y <= top + height
    return inside and (x in (left, left + width) or y in (top, top + height))


def box(name: str) -> tuple[float, float, float, float]:
    if name == END:
        return diagram.END_BOX
    x, y = diagram.LAYOUT[name]  # type: ignore[index]
    return x, y, diagram.NODE_W, diagram.NODE_H


def test_every_move_is_a_box_and_every_edge_an_arrow_between_its_ends() -> None:
    svg = pipeline(EVERY_SETTING)
    assert re.findall(r'<g class="nba-node" data-move="(\w+)"', svg) == list(MOVES)
    arrows = EDGE.findall(svg)
    assert [(source, target) for source, target, _, _ in arrows] == [
        (name, edge.target) for name, info in MOVES.items() for edge in info.edges
    ]
    for source, target, state, path in arrows:
        points = corners(path)
        assert on_border(points[0], box(source)), f"{source} -> {target} does not start at {source}"
        assert on_border(points[-1], box(target)), f"{source} -> {target} does not end at {target}"
        assert state == "idle"
        for other in diagram.LAYOUT:  # no arrow runs through a box it does not join
            if other in (source, target):
                continue
            x, y, w, h = box(other)
            for (ax, ay), (bx, by) in zip(points, points[1:]):
                crosses = min(ax, bx) < x + w and max(ax, bx) > x and min(ay, by) < y + h and max(ay, by) > y
                assert not crosses, f"{source} -> {target} runs through {other}"


def test_arrows_leave_reflect_and_summarize_and_used_up_starts_where_moves_says() -> None:
    arrows = {(s, t): corners(p) for s, t, _, p in EDGE.findall(pipeline(EVERY_SETTING))}
    assert ("reflect", "end") in arrows and ("summarize", "end") in arrows
    used_up = [
        (name, edge.target) for name, info in MOVES.items() for edge in info.edges if edge.label == "iterations used up"
    ]
    assert {source for source, _ in used_up} == {"tool_execution", "handoff_check"}
    for source, target in used_up:
        assert on_border(arrows[source, target][0], box(source))


@pytest.mark.parametrize("settings", EVERY_SETTING, ids=repr)
def test_unused_is_what_the_settings_make_impossible(settings: LoopSettings) -> None:
    nodes = node_states([settings])
    assert {name for name, state in nodes.items() if state == "unused"} == {
        name for name, info in MOVES.items() if not info.possible(settings)
    }
    for (source, target), state in edge_states([settings]).items():
        edge = next(e for e in MOVES[source].edges if e.target == target)
        ends = MOVES[source].possible(settings) and (target == END or MOVES[target].possible(settings))
        assert (state == "unused") == (not (edge.possible(settings) and ends)), (source, target)


def test_states_of_a_walk() -> None:
    settings = [LoopSettings(max_tool_iterations=3)]
    walk = ["add_messages", "message_id", "call_llm", "tool_request", "tool_execution", "next_llm_call"]
    nodes = node_states(settings, walk, current="next_llm_call", upcoming="text_exit")
    assert (nodes["call_llm"], nodes["next_llm_call"], nodes["text_exit"], nodes["memory"]) == (
        "visited", "current", "upcoming", "unused",
    )  # fmt: skip
    edges = edge_states(settings, [*walk, "text_exit"], ended=True)
    assert {key for key, state in edges.items() if state == "taken"} == {
        *zip(walk, walk[1:]), ("next_llm_call", "text_exit"), ("text_exit", "end"),
    }  # fmt: skip
    assert 'data-state="taken"' in pipeline(settings, walk, ended=False)


def test_labels_come_from_moves_and_shared_places_are_drawn_once() -> None:
    svg = pipeline(EVERY_SETTING)
    labels = re.findall(r'<text class="nba-edge-label"[^>]*>([^<]+)</text>', svg)
    assert set(labels) == {edge.label for info in MOVES.values() for edge in info.edges if edge.label}
    assert labels.count("iterations used up") == 2  # four arrows, one label by each box they reach
    assert 'viewBox="0 0 ' in svg and "<script" not in svg


def segments(path: str) -> list[tuple[tuple[float, float], tuple[float, float]]]:
    points = corners(path)
    return list(zip(points, points[1:]))


def test_every_arrow_has_its_own_head_and_no_marker() -> None:
    svg = pipeline(EVERY_SETTING)
    assert "<marker" not in svg and "url(#" not in svg and " id=" not in svg  # nothing shared between two diagrams
    groups = re.findall(r'<g class="nba-edge-group"[^>]*>(.*?)</g>', svg)
    heads = re.findall(r'<path class="nba-arrowhead" d="M([\d.]+),([\d.]+) ', svg)
    assert len(groups) == len(heads) == sum(len(info.edges) for info in MOVES.values())
    for (_, _, _, path), (x, y) in zip(EDGE.findall(svg), heads):
        assert corners(path)[-1] == (float(x), float(y))  # the head's tip is where the arrow ends


def test_no_two_arrows_run_along_one_another_and_labels_tell_the_branches() -> None:
    arrows = {(s, t): segments(p) for s, t, _, p in EDGE.findall(pipeline(EVERY_SETTING))}
    for (one, first), (other, second) in product(arrows.items(), arrows.items()):
        if one >= other:
            continue
        for (a, b), (c, d) in product(first, second):
            if a[1] == b[1] == c[1] == d[1]:  # both horizontal on one line: they must not overlap
                overlap = min(max(a[0], b[0]), max(c[0], d[0])) - max(min(a[0], b[0]), min(c[0], d[0]))
                assert overlap <= 0, (one, other)
            if a[0] == b[0] == c[0] == d[0]:
                overlap = min(max(a[1], b[1]), max(c[1], d[1])) - max(min(a[1], b[1]), min(c[1], d[1]))
                assert overlap <= 0, (one, other)
    # Where a move can go two ways, each way says when (or its box does: "handoff?").
    for name, info in MOVES.items():
        if len(info.edges) > 1:
            unlabelled = [edge.target for edge in info.edges if not edge.label and edge.target != "handoff_check"]
            assert unlabelled == [], name


def test_no_text_is_smaller_than_11_px() -> None:
    """Drawn at 12 px, so that shrunk to fit an output (down to 11/12 of its size, issue 43.7) it keeps 11."""
    svg = pipeline(EVERY_SETTING)
    assert set(re.findall(r'font-size="(\d+)"', svg)) == {str(diagram.FONT_PX)} and diagram.FONT_PX == 12
    assert len(re.findall(r"<text\b", svg)) == len(re.findall(r'<text\b[^>]*font-size="12"', svg))
