"""Benchmark: the live explorer over a Batch writing to ``output=`` (issue: each update re-read every part).

A batch of ``--parts + --updates`` tasks, one task a part (``part_size=1``), one at a time, each run a
tool call and an answer (every trace table filled). The first ``--parts`` tasks run and their parts are
written; then each further task is let go one at a time and, once its part is in the folder, an
update of the followed explorer (``explorer.refresh()``) is timed. Printed: the median and the
spread of those updates, with ``--parts`` parts in the folder.

    python bench/bench_explorer_batch.py [--parts 200] [--updates 10] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import nbagent
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage


async def measure(parts: int, updates: int) -> dict[str, Any]:
    gate = asyncio.Semaphore(parts)  # one task's tool call goes on per release, after the first parts

    async def add(a: int, b: int) -> int:
        """Add two numbers."""
        await gate.acquire()
        return a + b

    def make_agent(task: object) -> AssistantAgent:
        call = CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')],
            usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
        )
        return AssistantAgent("calc", ReplayChatCompletionClient([call, f"answer to {task}"]), tools=[add])

    folder = Path(tempfile.mkdtemp()) / "out"
    total = parts + updates
    batch = nbagent.Batch(
        make_agent, [f"task {i}" for i in range(total)], progress=None, output=folder, part_size=1, timeout=None
    )
    running = asyncio.ensure_future(batch.run())

    def written() -> int:
        return len(list((folder / "results").glob("session=*/part-*.parquet")))

    while written() < parts:
        await asyncio.sleep(0.05)
    explorer = nbagent.explore(batch)
    assert explorer.live
    explorer.refresh()
    times = []
    for step in range(updates):
        gate.release()
        while written() < parts + step + 1:
            await asyncio.sleep(0.01)
        started = time.perf_counter()
        explorer.refresh()
        times.append((time.perf_counter() - started) * 1000)
    ended = int((explorer.table.runs["status"] == "ok").sum())
    await running
    explorer.refresh()
    statuses = explorer.table.runs["status"].astype(str).value_counts().to_dict()
    assert len(explorer.table) == total and statuses == {"ok": total}, (len(explorer.table), statuses)
    return {
        "runs_ended_in_table_at_last_update": ended,
        "parts": parts,
        "updates": updates,
        "update_ms_median": round(statistics.median(times), 2),
        "update_ms_min": round(min(times), 2),
        "update_ms_max": round(max(times), 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parts", type=int, default=200)
    parser.add_argument("--updates", type=int, default=10)
    parser.add_argument("--json")
    args = parser.parse_args()
    figures = asyncio.run(measure(args.parts, args.updates))
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
