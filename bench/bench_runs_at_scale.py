"""Benchmark: what a kept run costs, and what reading one run of a big live Batch costs (issue 42).

- ``kept_bytes_per_run_<n>``: bytes a plain run keeps with its trace, ``n`` runs kept (tracemalloc,
  after a collection): one agent on the replay model (one answer per run) recording into its trace,
  every ``await agent.run(task=...)`` result kept, as pydantic-ai's and OpenAI Agents' own figures
  are measured (their results and their traces kept). Printed beside issue 42's target (2 KB).
  ``kept_tool_bytes_per_run_<n>``: the same for a tool run (two parallel tool calls, then a
  reflection: three messages more in the context, two LLM calls and two tool executions a run).
  The ids the runs keep (messages', runs') are drawn from a pool made in bulk: it is emptied before the
  measure, so that every id a run keeps is counted, and the spare ids it holds after are not (a buffer of
  at most 1,024 ids, not a run's; without both, where the pool's refills fall moved the figure by up to
  90 B a run at 1,000 runs).
- ``replay_s_<n>`` / ``open_s_<n>`` (and their CPU time, ``*_cpu_s_<n>``): a Batch of ``n`` tasks on the
  replay model (no ``output=``: every run in memory), each a tool call and an answer; then, timed,
  ``batch.trace.replay(run)`` of its last run, and ``trace.run(run)`` (one run's rows of every table:
  what the explorer opens, compares and draws); ``explorer_open_s_<n>``: the explorer's open of that
  run (``await nbagent.explore(batch).open(run)``: its rows read, replayed into a view, drawn).

    python bench/bench_runs_at_scale.py [--kept 1000 10000] [--kept-tools 1000 10000] [--runs 1000 10000 100000]
                                        [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.bench_trace import tool_agent  # noqa: E402

import nbagent  # noqa: E402
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, RequestUsage  # noqa: E402
from nbagent._ids import ids_pool  # noqa: E402  (the ids drawn in bulk: counted, see the module's docstring)

TARGET_BYTES = 2048  # issue 42.5: a kept plain run costs at most 2 KB with its trace
TARGET_READ_S = 0.5  # issue 42.6: replaying or opening one run of a live 10,000-run Batch


async def kept_per_run(count: int, tools: bool = False) -> float:
    """Bytes per run kept (results and the trace's rows), ``count`` plain (or tool) runs of one agent."""
    if tools:
        agent = tool_agent(count + 1)
    else:
        agent = AssistantAgent("a", ReplayChatCompletionClient(["warm"] + ["the answer"] * count))
    await agent.run(task="warm up")  # imports and first-call caches outside the measure
    gc.collect()
    pool = ids_pool()
    pool.clear()  # every id a measured run keeps is made in the measure
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        results = [await agent.run(task=f"task {i}") for i in range(count)]
        gc.collect()
        spare = sum(map(sys.getsizeof, pool)) + 8 * len(pool)  # made in the measure, held by no run
        held = tracemalloc.get_traced_memory()[0] - before - spare
    finally:
        tracemalloc.stop()
    assert len(results) == count and len(agent.trace.runs_df()) == count + 1
    return held / count


async def double(n: int) -> int:
    """Double a number."""
    return 2 * n


# Each task's model asks for one tool call, then answers (every trace table gets rows).
ASK = CreateResult(
    finish_reason="function_calls",
    content=[FunctionCall(id="call_0", name="double", arguments='{"n": 21}')],
    usage=RequestUsage(prompt_tokens=12, completion_tokens=4),
)


def make_agent(task: object) -> AssistantAgent:
    """A fresh agent for ``task`` (a Batch's make_agent)."""
    return AssistantAgent("doubler", ReplayChatCompletionClient([ASK, f"{task}: 42"]), tools=[double])


async def read_one(count: int) -> dict[str, float]:
    """Seconds to replay, and to read the rows of, the last run of a live ``count``-run Batch."""
    batch = await nbagent.Batch(make_agent, [f"task {i}" for i in range(count)], progress=None, timeout=None).run()
    trace = batch.trace
    runs = trace.runs_df()
    assert len(runs) == count
    last = str(runs["run_id"].iloc[-1])
    trace.replay(str(runs["run_id"].iloc[0]))  # imports and first-call caches outside the measure
    started, cpu = time.perf_counter(), time.process_time()
    replay = trace.replay(last)
    replay_s, replay_cpu = time.perf_counter() - started, time.process_time() - cpu
    assert replay.task is not None
    started, cpu = time.perf_counter(), time.process_time()
    run_trace = trace.run(last)
    open_s, open_cpu = time.perf_counter() - started, time.process_time() - cpu
    assert len(run_trace.runs_df()) == 1
    explorer = nbagent.explore(batch)
    await explorer.open(str(runs["run_id"].iloc[0]))  # the view's first-call costs outside the measure
    started, cpu = time.perf_counter(), time.process_time()
    shown = await explorer.open(last)
    explorer_s, explorer_cpu = time.perf_counter() - started, time.process_time() - cpu
    assert "cannot be replayed" not in shown
    return {
        f"replay_s_{count}": round(replay_s, 3),
        f"replay_cpu_s_{count}": round(replay_cpu, 3),  # the machine is shared: the CPU time is the cost
        f"open_s_{count}": round(open_s, 3),
        f"open_cpu_s_{count}": round(open_cpu, 3),
        f"explorer_open_s_{count}": round(explorer_s, 3),
        f"explorer_open_cpu_s_{count}": round(explorer_cpu, 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--kept", type=int, nargs="*", default=[1000, 10000])
    parser.add_argument("--kept-tools", type=int, nargs="*", default=[1000, 10000], help="tool runs kept")
    parser.add_argument("--runs", type=int, nargs="*", default=[1000, 10000, 100000])
    parser.add_argument("--quick", action="store_true", help="1,000 kept runs, a 1,000-run batch")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    if args.quick:
        args.kept, args.kept_tools, args.runs = [1000], [1000], [1000]
    figures: dict[str, Any] = {}
    for count in args.kept:
        kept = figures[f"kept_bytes_per_run_{count}"] = round(asyncio.run(kept_per_run(count)))
        print(f"kept plain run, {count:,} kept: {kept:,} bytes (target: at most {TARGET_BYTES:,})", flush=True)
    for count in args.kept_tools:
        kept = figures[f"kept_tool_bytes_per_run_{count}"] = round(asyncio.run(kept_per_run(count, tools=True)))
        print(f"kept tool run, {count:,} kept: {kept:,} bytes", flush=True)
    for count in args.runs:
        found = asyncio.run(read_one(count))
        figures.update(found)
        replay = f"replay {found[f'replay_s_{count}']} s ({found[f'replay_cpu_s_{count}']} s CPU)"
        opened = f"open {found[f'open_s_{count}']} s ({found[f'open_cpu_s_{count}']} s CPU)"
        shown = f"explorer open {found[f'explorer_open_s_{count}']} s ({found[f'explorer_open_cpu_s_{count}']} s CPU)"
        print(f"{count:,}-run live Batch: {replay}, {opened}, {shown} (target: under {TARGET_READ_S} s)")
        print(flush=True)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as file:
            json.dump(figures, file, indent=2)


if __name__ == "__main__":
    main()
