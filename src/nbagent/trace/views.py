"""The trace's notebook views: the summary table and the timeline of the last run (:mod:`nbagent.render`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Protocol

from ..render import STYLE, el, portable
from .schema import TraceTables
from .summary import summarize

if TYPE_CHECKING:
    from .timeline import Timeline


class TraceView(TraceTables, Protocol):
    """What a trace's notebook views read of it: its tables and its timeline."""

    def timeline(self, run_id: str | None = None) -> Timeline: ...


def _figure(value: Any) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def summary_html(trace: TraceView) -> str:
    """The notebook view of a trace: its summary table and the timeline of its last run."""
    summary = summarize(trace.runs_df(), trace.llm_calls_df(), trace.tool_calls_df())
    rows = [el("tr", el("th", str(key)), el("td", _figure(value))) for key, value in summary.items()]
    timeline = trace.timeline().figure() if summary["runs"] else None
    table = el("table", rows, class_="nba-table nba-trace-summary")
    return str(portable(STYLE + el("div", el("b", f"trace {trace.trace_id}"), table, timeline, class_="nba-trace")))
