"""Synthetic runs for the explorer's frame logic: ``runs_df()``/``tool_calls_df()`` of ``n`` runs.

The frames have exactly the trace's columns and dtypes (built by ``schema.frame``), with every kind
of value the explorer filters on: statuses, agents, tools, errors, tasks of several lines, answers,
forks and team turns, nulls.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pandas as pd

from nbagent import Trace
from nbagent.trace.schema import COLUMNS, frame

from .helpers import calls, text, tool_agent

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


async def record_runs(trace: Trace, session: int, count: int) -> None:
    """``count`` runs (and a second run of one agent every 5) of scripted agents into ``trace``: text
    answers (some streamed, some with a thought), tool calls, a failing tool, runs that fail."""
    for i in range(count):
        name = ("calc", "writer", "planner")[i % 3]
        if i % 4 == 1:
            answers = [calls((f"s{session}c{i}", "add", f'{{"a": 1, "b": {i}}}')), text(f"it is {i + 1}")]
        elif i % 4 == 2:
            answers = [calls((f"s{session}f{i}", "fail", f'{{"reason": "no {i}"}}')), text("it failed")]
        else:
            answers = [text(f"answer {i} for session {session}", thought="hmm" if i % 5 == 0 else None)]
        again = i % 5 == 3 and i % 6 != 5  # a second run of the same agent: from the context of the first
        if again:
            answers.append(text(f"again {i}"))
        if i % 6 == 5:  # no answer: the run fails
            answers = []
        agent = tool_agent(name, *answers, model_client_stream=i % 3 == 0)
        with trace.recording(agent):
            try:
                await agent.run(task=f"task {i} of session {session}\nsecond line")
            except Exception:  # the failed run is recorded with its error
                assert i % 6 == 5
            if again:
                await agent.run(task=f"again {i}")


async def write_sessions(folder: Path) -> None:
    """A dataset of two sessions (21 runs), the first in two parts (exported, cleared, run on, exported
    again): ``session-a`` (15 runs), ``session-b`` (6)."""
    first = Trace(trace_id="session-a")
    await record_runs(first, 1, 7)
    first.to_parquet(folder)
    second = Trace(trace_id="session-b")
    await record_runs(second, 2, 5)
    second.to_parquet(folder)
    first.clear()
    await record_runs(first, 3, 6)
    first.to_parquet(folder)


def tiled(tables: dict[str, pd.DataFrame], copies: int, sessions: int = 1) -> dict[str, pd.DataFrame]:
    """``copies`` copies of a trace's tables (every table, context ones included), each copy's runs
    renamed (``<run>.<copy>``) and moved on in time past the copy before, the copies split into
    ``sessions`` trace ids (``s0``, ``s1``...) in blocks: a big dataset of real rows for the benchmark."""
    import numpy as np

    n_events = len(tables["events"])
    logs = tables["context_logs"]["log"].dropna()
    n_logs = int(logs.max()) + 1 if len(logs) else 0
    times = [
        t
        for df in tables.values()
        for c in df.columns
        if str(df[c].dtype).startswith("datetime")
        for t in df[c].dropna()
    ]
    span = (max(times) - min(times)) + pd.Timedelta(seconds=1) if times else pd.Timedelta(seconds=1)
    block = -(-copies // sessions)
    out: dict[str, pd.DataFrame] = {}
    for name, df in tables.items():
        copy = np.repeat(np.arange(copies), len(df))
        big = pd.concat([df] * copies, ignore_index=True) if copies else df.iloc[:0]
        for column in ("run_id", "parent_run_id", "forked_from"):
            if column in big.columns:
                values = big[column].astype("object")
                renamed = [None if v is None or v is pd.NA or v != v else f"{v}.{c}" for v, c in zip(values, copy)]
                big[column] = pd.Series(renamed, dtype="object").astype("category")
        if "llm_call_id" in big.columns:
            ids = big["llm_call_id"].astype("object")
            big["llm_call_id"] = pd.Series(
                [None if not isinstance(v, str) else v.replace("/", f".{c}/", 1) for v, c in zip(ids, copy)],
                dtype="string",
            )
        for column in big.columns:
            if str(big[column].dtype).startswith("datetime"):
                big[column] = big[column] + pd.to_timedelta(copy * span.value, unit="ns")
        if name == "snapshots":
            big["event_row"] = (big["event_row"] + pd.Series(copy * n_events, dtype="Int64")).astype("Int64")
        if name in ("snapshots", "context_logs"):
            big["log"] = (big["log"] + pd.Series(copy * n_logs, dtype="Int64")).astype("Int64")
        big["trace_id"] = pd.Series([f"s{c // block}" for c in copy], dtype="object").astype("category")
        out[name] = big
    return out
