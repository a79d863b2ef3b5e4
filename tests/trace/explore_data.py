"""Synthetic runs for the explorer's frame logic: ``runs_df()``/``tool_calls_df()`` of ``n`` runs.

The frames have exactly the trace's columns and dtypes (built by ``schema.frame``), with every kind
of value the explorer filters on: statuses, agents, tools, errors, tasks of several lines, answers,
forks and team turns, nulls.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

import pandas as pd

from nbagent.trace.schema import COLUMNS, frame

AGENTS = ("weather", "calc", "writer", "planner")
TOOLS = ("get_weather", "add", "search", "fail")
STATUSES = ("ok", "ok", "ok", "error", "cancelled", "running")
START = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)


def synthetic(n: int, seed: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``(runs, tool_calls)`` of ``n`` runs."""
    rng = random.Random(seed)
    runs: dict[str, list[object]] = {name: [] for name in COLUMNS["runs"]}
    calls: dict[str, list[object]] = {name: [] for name in COLUMNS["tool_calls"]}
    for i in range(n):
        run_id = f"r{i:06d}"
        status = rng.choice(STATUSES)
        agent = rng.choice(AGENTS)
        started = START + timedelta(seconds=i * 3 + rng.random())
        n_tools = rng.randrange(4)
        prompt = None if i % 17 == 0 else rng.randrange(10, 5000)
        row = {
            "trace_id": "t1",
            "run_id": run_id,
            "agent": agent,
            "parent_run_id": f"r{i - 1:06d}" if i % 11 == 5 else None,
            "forked_from": f"r{i - 2:06d}" if i % 13 == 7 else None,
            "fork_move": 3 if i % 13 == 7 else None,
            "max_tool_iterations": 1,
            "reflect_on_tool_use": False,
            "status": status,
            "error": f"ModelError: rate limit {i % 5}" if status == "error" else None,
            "started_at": started,
            "ended_at": None if status == "running" else started + timedelta(seconds=2),
            "duration_s": None if status == "running" else rng.random() * 10,
            "task": f"Task {i} about {rng.choice(['Paris', 'Tokyo', 'Lima', 'Oslo'])}\nsecond line {i}",
            "final_type": "TextMessage",
            "final_text": f"answer {rng.choice(['sunny', 'rainy', 'cloudy'])} {i}",
            "n_events": 10,
            "n_chunks": 0,
            "n_llm_calls": 1 + n_tools,
            "n_tool_calls": n_tools,
            "n_tool_errors": 0,
            "prompt_tokens": prompt,
            "completion_tokens": rng.randrange(1, 500),
            "handoff_target": None,
        }
        for name, value in row.items():
            runs[name].append(value)
        for k in range(n_tools):
            tool = rng.choice(TOOLS)
            for name, value in {
                "trace_id": "t1",
                "run_id": run_id,
                "agent": agent,
                "iteration": k,
                "batch_size": 1,
                "call_id": f"c{k}",
                "llm_call_id": f"{run_id}/{k}",
                "tool_name": tool,
                "arguments": {},
                "result": "42",
                "is_error": tool == "fail",
                "started_at": started,
                "duration_s": 0.01,
                "concurrent_with": 1,
            }.items():
                calls[name].append(value)
    return frame("runs", runs), frame("tool_calls", calls)
