"""A run's timeline as self-contained HTML/SVG: LLM calls and tool calls on a time axis.

LLM calls share one lane; tool calls get as many lanes as ran at once, so parallel calls show as
overlapping bars. Hovering a bar shows its details. It is drawn with the one renderer
(:mod:`nbagent.render`): every text (tool names, arguments and results come from the model and the
tools, untrusted) is escaped by :func:`~nbagent.render.el`, and the colours are the stylesheet's
(each shape also carries its light colour, for pages that drop the stylesheet).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..render import STYLE, Markup, el, fallback, portable
from .schema import seconds

if TYPE_CHECKING:
    import pandas as pd

WIDTH = 800
GUTTER = 90
MARGIN = 16
LANE = 22
GAP = 6
AXIS = 28


@dataclass(frozen=True)
class Bar:
    """One call on the timeline: lane, start and duration (seconds from the run's start)."""

    lane: int
    start_s: float
    duration_s: float
    kind: str
    label: str
    details: str


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _missing(value: Any) -> bool:
    import pandas as pd

    return value is None or bool(pd.isna(value))


def _offset(at: Any, start: Any) -> float:
    """Seconds from the run's start to ``at``; a missing time (NaT) or an offset out of range: 0."""
    import pandas as pd

    if at is pd.NaT or start is pd.NaT or pd.isna(at) or pd.isna(start):
        return 0.0
    return seconds((at - start).total_seconds()) or 0.0


def _tick_step(total: float) -> float:
    raw = total / 5
    power = 10.0 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


@dataclass(frozen=True)
class Timeline:
    """The timeline of one run; shows itself in a notebook (``_repr_html_``) or as ``to_html()``."""

    run_id: str
    agent: str
    status: str
    total_s: float
    bars: tuple[Bar, ...]
    lanes: tuple[str, ...]

    @classmethod
    def of(
        cls, runs: pd.DataFrame, llm_calls: pd.DataFrame, tool_calls: pd.DataFrame, run_id: str | None = None
    ) -> Timeline:
        """The timeline of ``run_id`` (the last run started if None) from a trace's frames."""
        if not len(runs):
            raise LookupError("the trace has no run to show")
        if run_id is None:
            run = runs.sort_values("started_at", kind="stable").iloc[-1]
        else:
            matches = runs[runs["run_id"].astype("object") == run_id]
            if not len(matches):
                raise KeyError(f"no run {run_id!r} in this trace")
            run = matches.iloc[0]
        rid = str(run["run_id"])
        start = run["started_at"]
        bars: list[Bar] = []
        for call in llm_calls[llm_calls["run_id"].astype("object") == rid].itertuples(index=False):
            offset = _offset(call.started_at, start)
            duration = seconds(call.duration_s) or 0.0  # missing or out of range: drawn as an instant
            lines = [
                f"{call.purpose} call to {call.model}, iteration {call.iteration}",
                f"{duration * 1000:.1f} ms"
                if seconds(call.duration_s) is not None
                else "duration missing"
                + ("" if _missing(call.ttft_s) else f", first token {call.ttft_s * 1000:.1f} ms"),
            ]
            if not _missing(call.finish_reason):  # the call has a result
                lines.append(
                    f"tokens: {call.prompt_tokens} in, {call.completion_tokens} out; finish: {call.finish_reason}"
                )
            if not _missing(call.error):
                lines.append(f"error: {call.error}")
            kind = "error" if call.status == "error" else "llm"
            bars.append(Bar(0, offset, duration, kind, f"{call.purpose}", _short("\n".join(lines), 600)))
        lane_ends: list[float] = []
        tools = tool_calls[tool_calls["run_id"].astype("object") == rid].sort_values("started_at", kind="stable")
        for tool in tools.itertuples(index=False):
            offset = _offset(tool.started_at, start)
            duration = seconds(tool.duration_s) or 0.0
            lane = next((i for i, end in enumerate(lane_ends) if end <= offset), len(lane_ends))
            if lane == len(lane_ends):
                lane_ends.append(0.0)
            lane_ends[lane] = offset + duration
            arguments = json.dumps(tool.arguments, ensure_ascii=False)
            details = (
                f"{tool.tool_name}({_short(arguments, 200)})\n{duration * 1000:.1f} ms, "
                f"{tool.concurrent_with} at once\n-> {_short('' if _missing(tool.result) else str(tool.result), 300)}"
            )
            kind = "error" if not _missing(tool.is_error) and bool(tool.is_error) else "tool"
            bars.append(Bar(1 + lane, offset, duration, kind, str(tool.tool_name), details))
        ends = [bar.start_s + bar.duration_s for bar in bars]
        total = max([seconds(run["duration_s"]) or 0.0, *ends])
        lanes = ("LLM", *(f"tools {i + 1}" for i in range(len(lane_ends))))
        return cls(rid, str(run["agent"]), str(run["status"]), total, tuple(bars), lanes)

    def svg(self) -> Markup:
        """The timeline as one ``<svg>`` element (markup)."""
        height = len(self.lanes) * (LANE + GAP) + AXIS
        span = WIDTH - GUTTER - MARGIN
        total = self.total_s if self.total_s > 0 else 1e-3
        scale = span / total
        fg = fallback("fg")
        parts: list[Markup] = []
        for index, name in enumerate(self.lanes):
            y = index * (LANE + GAP)
            parts.append(el("text", name, class_="nba-lane-name", x=4, y=f"{y + LANE * 0.7:.1f}", fill=fg))
            parts.append(el("rect", class_="nba-lane", x=GUTTER, y=y, width=span, height=LANE, fill=fallback("chip")))
        for bar in self.bars:
            parts.append(self._bar(bar, scale))
        axis_y = len(self.lanes) * (LANE + GAP)
        axis = {"class_": "nba-axis", "stroke": fg}
        parts.append(el("line", x1=GUTTER, y1=axis_y, x2=GUTTER + span, y2=axis_y, **axis))
        step = _tick_step(total)
        in_ms = total < 1
        tick = 0.0
        while tick <= total * 1.0001:
            x = f"{GUTTER + tick * scale:.2f}"
            label = f"{tick * 1000:g} ms" if in_ms else f"{tick:g} s"
            parts.append(el("line", x1=x, y1=axis_y, x2=x, y2=axis_y + 4, **axis))
            parts.append(el("text", label, class_="nba-tick-label", x=x, y=axis_y + 16, text_anchor="middle", fill=fg))
            tick = round(tick + step, 12)
        return el(
            "svg",
            parts,
            xmlns="http://www.w3.org/2000/svg",
            width=WIDTH,
            height=height,
            viewBox=f"0 0 {WIDTH} {height}",
            font_family="sans-serif",
            font_size=11,
            role="img",
            aria_label=f"timeline of run {self.run_id} of {self.agent}: its LLM calls and tool calls over time",
        )

    @staticmethod
    def _bar(bar: Bar, scale: float) -> Markup:
        x = GUTTER + bar.start_s * scale
        width = max(bar.duration_s * scale, 2.0)
        y = bar.lane * (LANE + GAP)
        label = None
        if width > 30:
            label = el(
                "text",
                _short(bar.label, max(int(width / 7), 2)),
                class_="nba-bar-label",
                x=f"{x + 3:.2f}",
                y=f"{y + LANE * 0.68:.1f}",
                fill=fallback("bar-text"),
            )
        rect = el(
            "rect",
            class_=f"nba-bar nba-bar-{bar.kind}",
            x=f"{x:.2f}",
            y=y + 2,
            width=f"{width:.2f}",
            height=LANE - 4,
            rx=3,
            fill=fallback(f"bar-{bar.kind}"),
            stroke=fallback("fg"),
            stroke_width=0.5,
        )
        return el("g", el("title", bar.details), rect, label)

    def figure(self) -> Markup:
        """The titled ``<div>`` holding the SVG, without the stylesheet (a view that holds it adds it once)."""
        title = f"run {self.run_id} of {self.agent}: {self.status}, {self.total_s * 1000:.1f} ms"
        return el("div", el("div", title, class_="nba-timeline-title"), self.svg(), class_="nbagent-timeline")

    def to_svg(self) -> str:
        """The timeline as one ``<svg>`` element."""
        return str(self.svg())

    def to_html(self) -> str:
        """The stylesheet and a titled ``<div>`` holding the SVG; no script, no external resource."""
        return str(portable(STYLE + self.figure()))

    def _repr_html_(self) -> str:
        return self.to_html()
