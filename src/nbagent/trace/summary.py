"""The at-a-glance figures of a trace (``trace.summary()``)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd


def _quantile(values: pd.Series, q: float) -> float:
    """The ``q`` quantile of the durations ``values`` in range (:func:`~nbagent.trace.schema.seconds_column`:
    one inf, 1e300 or negative is missing, not a figure); NaN when none is."""
    from .schema import seconds_column

    kept = seconds_column(values).dropna()
    return float(kept.quantile(q)) if len(kept) else math.nan


def summarize(runs: pd.DataFrame, llm_calls: pd.DataFrame, tool_calls: pd.DataFrame) -> pd.Series:
    """The figures of ``trace.summary()``, as a Series."""
    import pandas as pd

    status = runs["status"].astype("object")
    n_tools = len(tool_calls)
    errors = int(tool_calls["is_error"].fillna(False).sum())
    return pd.Series(
        {
            "runs": len(runs),
            "runs_ok": int((status == "ok").sum()),
            "runs_error": int((status == "error").sum()),
            "runs_cancelled": int((status == "cancelled").sum()),
            "llm_calls": len(llm_calls),
            "prompt_tokens": int(llm_calls["prompt_tokens"].sum()),
            "completion_tokens": int(llm_calls["completion_tokens"].sum()),
            "tool_calls": n_tools,
            "tool_errors": errors,
            "tool_error_rate": errors / n_tools if n_tools else math.nan,
            "run_p50_s": _quantile(runs["duration_s"], 0.5),
            "run_p95_s": _quantile(runs["duration_s"], 0.95),
            "llm_p50_s": _quantile(llm_calls["duration_s"], 0.5),
            "llm_p95_s": _quantile(llm_calls["duration_s"], 0.95),
            "ttft_p50_s": _quantile(llm_calls["ttft_s"], 0.5),
            "ttft_p95_s": _quantile(llm_calls["ttft_s"], 0.95),
            "tool_p50_s": _quantile(tool_calls["duration_s"], 0.5),
            "tool_p95_s": _quantile(tool_calls["duration_s"], 0.95),
        },
        dtype="object",
        name="trace summary",
    )
