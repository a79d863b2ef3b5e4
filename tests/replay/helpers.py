"""Comparing two runs' frames, ids and times aside (the replay and fork tests)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from nbagent import TraceFrames

# Columns that hold ids, times, or what follows from times (which calls overlapped).
VOLATILE = {
    "events": ["trace_id", "run_id", "event_id", "message_id", "timestamp", "elapsed_s"],
    "llm_calls": ["trace_id", "run_id", "llm_call_id", "message_id", "started_at", "ttft_s", "duration_s"],
    "tool_calls": ["trace_id", "run_id", "llm_call_id", "started_at", "duration_s", "concurrent_with"],
    "runs": ["trace_id", "run_id", "started_at", "ended_at", "duration_s"],
}


def run_frames(trace: TraceFrames, run_id: str | None = None) -> dict[str, pd.DataFrame]:
    """The four frames of one run (the trace's last without ``run_id``) and its context at its end, without
    the volatile columns. Each frame of the trace is built once (they are the costly part of these tests)."""
    runs = trace.runs_df()
    if run_id is None:
        run_id = str(runs["run_id"].iloc[-1])
    out: dict[str, pd.DataFrame] = {}
    for table, columns in VOLATILE.items():
        df = runs if table == "runs" else getattr(trace, f"{table}_df")()
        out[table] = df[df["run_id"] == run_id].drop(columns=columns).reset_index(drop=True)
    context = trace.context_df(run_id=run_id)
    mine = context["run_id"] == run_id
    base = context.drop(columns=["run_id", "step", "move"])
    out["context"] = base.assign(step=context["step"].where(mine), move=context["move"].where(mine), mine=mine)
    return out


Run = TraceFrames | tuple[TraceFrames, str] | dict[str, pd.DataFrame]
"""A run: its trace (its last run), its trace and id, or its frames (``run_frames``, made once for a run
compared many times)."""


def assert_same_run(a: Run, b: Run, *, forks: bool = True) -> None:
    """Run ``a`` and run ``b`` have equal frames and contexts, ids and times aside (and which run
    each was forked from, with ``forks=False``)."""
    left, right = (frames_of(run) for run in (a, b))
    if not forks:
        for frames in (left, right):
            frames["runs"] = frames["runs"].drop(columns=["forked_from", "fork_move"])
    for table in left:
        mine, theirs = plain(left[table]), plain(right[table])
        assert list(mine.items()) == list(theirs.items()), f"the runs' {table} differ: {first_difference(mine, theirs)}"


def plain(df: pd.DataFrame) -> dict[str, list[Any]]:
    """A frame's columns as lists of Python values, each missing value ``None``: two runs' frames are equal
    when these are (their dtypes aside; the categories of two traces differ as their runs do). pandas'
    check boxes every value of a category or arrow column, and the runs are compared hundreds of times."""
    return {
        name: [None if missing else value for value, missing in zip(column.tolist(), column.isna().tolist())]
        for name, column in df.items()
    }


def first_difference(left: dict[str, list[Any]], right: dict[str, list[Any]]) -> str:
    """Where two ``plain`` frames first differ, for an assertion's message."""
    if list(left) != list(right):
        return f"columns {list(left)} != {list(right)}"
    for name, values in left.items():
        if values != right[name]:
            if len(values) != len(right[name]):
                return f"{len(values)} rows != {len(right[name])}"
            row = next(i for i, (a, b) in enumerate(zip(values, right[name], strict=True)) if a != b)
            return f"column {name!r}, row {row}: {values[row]!r} != {right[name][row]!r}"
    return "none found"


def frames_of(run: Run) -> dict[str, pd.DataFrame]:
    """The frames of ``run`` (a copy of the dictionary when given its frames)."""
    if isinstance(run, dict):
        return dict(run)
    return run_frames(*run) if isinstance(run, tuple) else run_frames(run)
