"""Benchmark of replaying recorded runs and of forking a walk (issue 26).

* **Replay of a dataset.** ``--runs`` tasks, each on a fresh agent (a tool call, then a reflection,
  as an evaluation over a dataset runs them), recorded into one trace, written to Parquet and loaded
  back. Runs a second for running them on the replay model (agents made and run, the trace
  recording), against replaying every run of the loaded dataset (``trace.replays()``: the frames read
  once; ``AssistantAgent.from_replay`` and ``run`` per run). The goal: the replay at least half as
  fast. The index (reading the frames once) is timed apart too.
* **Fork cost against the context's size.** A walk paused before its tool execution, on a context
  of ``N`` messages from earlier turns; median microseconds of ``await stepper.fork()`` (the copy of
  the agent and its context, and the shared moves made again through the loop's seam).

    python bench/bench_replay.py [--runs 1000] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from nbagent import (
    AssistantAgent,
    AssistantMessage,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    RequestUsage,
    Stepper,
    Trace,
    UnboundedChatCompletionContext,
    UserMessage,
    load_parquet,
)
from nbagent.trace.replay import ReplayIndex


async def weather(city: str) -> str:
    """The weather of a city."""
    return f"{city}: 21 °C, sunny"


def script(i: int) -> list[str | CreateResult]:
    call = FunctionCall(id=f"call_{i}", name="weather", arguments=f'{{"city": "city{i}"}}')
    usage = RequestUsage(prompt_tokens=40, completion_tokens=8)
    return [CreateResult(finish_reason="function_calls", content=[call], usage=usage), f"In city{i} it is sunny."]


def forecaster(i: int) -> AssistantAgent:
    return AssistantAgent(
        "forecaster", ReplayChatCompletionClient(script(i)), tools=[weather], reflect_on_tool_use=True
    )


async def record_dataset(runs: int) -> Trace:
    """The dataset: ``runs`` tasks, a fresh agent each, recorded into one trace (as a batch records them)."""
    trace = Trace()
    for i in range(runs):
        agent = forecaster(i)
        agent.recorders = [trace.attach(agent)]
        await agent.run(task=f"What is the weather in city{i}?")
        trace.detach(agent)
    return trace


async def run_tasks(runs: int) -> float:
    """The same tasks run on the replay model, a fresh agent each (its own trace recording): seconds."""
    start = time.perf_counter()
    for i in range(runs):
        await forecaster(i).run(task=f"What is the weather in city{i}?")
    return time.perf_counter() - start


async def replay_dataset(trace: Any) -> tuple[float, float, int]:
    """Replay every run of ``trace``: seconds for the index, seconds for everything, runs equal to the recording."""
    start = time.perf_counter()
    index = ReplayIndex(trace)
    indexed = time.perf_counter() - start
    same = 0
    for run_id in index.order:
        replay = index.replay(run_id)
        agent = AssistantAgent.from_replay(replay)
        result = await agent.run(task=list(replay.task))
        same += result.messages[-1].to_text() == str(index.runs[run_id]["final_text"])
    return indexed, time.perf_counter() - start, same


async def fork_cost(size: int, repeats: int) -> float:
    """Median microseconds of a fork of a walk paused before its tool execution, on a context of ``size`` messages."""
    history: list[Any] = []
    for i in range(size // 2):
        history += [
            UserMessage(content=f"question {i} " * 10, source="user"),
            AssistantMessage(content=f"answer {i} " * 10, source="a"),
        ]
    times = []
    for _ in range(repeats):
        context = UnboundedChatCompletionContext(history)
        agent = AssistantAgent(
            "a", ReplayChatCompletionClient(script(0)), tools=[weather], model_context=context, reflect_on_tool_use=True
        )
        stepper = Stepper(agent, "What is the weather?")
        await stepper.run_until(move="tool_request")
        start = time.perf_counter()
        fork = await stepper.fork()
        times.append(time.perf_counter() - start)
        await fork.aclose()
        await stepper.aclose()
    return statistics.median(times) * 1e6


async def measure(runs: int, repeats: int) -> dict[str, Any]:
    live_s, replay_s, index_s = [], [], []
    same = 0
    trace = await record_dataset(runs)
    with tempfile.TemporaryDirectory() as folder:
        loaded = load_parquet(trace.to_parquet(Path(folder)))
    for _ in range(repeats):
        live_s.append(await run_tasks(runs))
        indexed, replayed, same = await replay_dataset(loaded)
        index_s.append(indexed)
        replay_s.append(replayed)
    live, replay = statistics.median(live_s), statistics.median(replay_s)
    figures: dict[str, Any] = {
        "runs": runs,
        "run_runs_per_s": round(runs / live, 1),
        "replay_runs_per_s": round(runs / replay, 1),
        "replay_over_run": round(live / replay, 3),
        "replay_index_s": round(statistics.median(index_s), 3),
        "replayed_equal": same,
    }
    for size in (10, 100, 1000):
        figures[f"fork_us_context_{size}"] = round(await fork_cost(size, max(5, repeats * 3)), 1)
    return figures


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures = asyncio.run(measure(args.runs, args.repeats))
    figures["python"] = platform.python_version()
    for key, value in figures.items():
        print(f"{key:>24}: {value}")
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0 if figures["replayed_equal"] == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
