"""The trace's notebook views: the summary table and the timeline of the last run."""

from __future__ import annotations

import html
import math
from typing import TYPE_CHECKING, Any

from .summary import summarize

if TYPE_CHECKING:
    from .schema import TraceView


def _figure(value: Any) -> str:
    if isinstance(value, float):
        return "–" if math.isnan(value) else f"{value:.4g}"
    return str(value)


def summary_html(trace: TraceView) -> str:
    """The notebook view of a trace: its summary table and the timeline of its last run."""
    summary = summarize(trace.runs_df(), trace.llm_calls_df(), trace.tool_calls_df())
    rows = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(key))}</th><td>{html.escape(_figure(value))}</td></tr>"
        for key, value in summary.items()
    )
    parts = [f"<div><b>trace {html.escape(trace.trace_id)}</b><table>{rows}</table>"]
    if summary["runs"]:
        parts.append(trace.timeline().to_html())
    parts.append("</div>")
    return "".join(parts)
