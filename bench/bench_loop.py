"""Microbenchmark of the agent loop on the replay model: cost per run, per tool iteration, per chunk.

Three scripted scenarios, each run thousands of times on one event loop:

* plain: ``agent.run(task=...)`` answered with text (one LLM call, no tools), on one agent reset
  between runs; and the same run on a fresh agent and replay client built in the timed region
  (``fresh_plain_run_us``: what a run costs where each task gets its own agent, as in a batch);
* tools K=1 vs K=5: the model calls a trivial async tool K times, then answers
  (``max_tool_iterations=K``); the difference divided by 4 is the cost of one extra iteration;
* streaming: a 1,000-word streamed answer vs the same answer unstreamed; the difference divided
  by 1,000 is the cost of one chunk. Through ``run()``, which builds no chunk event (nobody would
  see one; the trace records the chunk from the LLM call's stream), and through ``run_stream()``,
  which yields a ``ModelClientStreamingChunkEvent`` per chunk (``chunk_event_us``).

Each figure is the median over several repeats, in CPU time of the process. The agent's trace records
every item, as by default. Every figure is measured in this run; AutoGen's, on the same scripted runs,
are ``bench/compare_autogen.py``'s.

    python bench/bench_loop.py [--runs 3000] [--repeats 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass

from nbagent import AssistantAgent, CreateResult, FunctionCall, FunctionTool, ReplayChatCompletionClient

TARGETS_US = {"plain_run_us": 100.0, "extra_iteration_us": 60.0, "chunk_us": 1.5}
STREAM_WORDS = 1000


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


ADD = FunctionTool(add)


def tool_script(k: int) -> list[str | CreateResult]:
    """K rounds of one tool call each, then a text answer."""
    calls: list[str | CreateResult] = [
        CreateResult(
            finish_reason="function_calls",
            content=[FunctionCall(id=f"c{i}", name="add", arguments='{"a": 1, "b": 2}')],
        )
        for i in range(k)
    ]
    return [*calls, "done"]


def make_runner(
    script: list[str | CreateResult], *, stream: bool = False, k: int = 1, events: bool = False
) -> Callable[[], Awaitable[None]]:
    """One agent whose every run replays ``script`` from a fresh context (``events``: via run_stream)."""
    client = ReplayChatCompletionClient(script, keep_requests=1)
    agent = AssistantAgent(
        "bench",
        client,
        tools=[ADD] if k else None,
        max_tool_iterations=max(k, 1),
        model_client_stream=stream,
    )

    async def one_run() -> None:
        client.reset()
        await agent.on_reset()
        agent.trace.clear()
        if events:
            async for _ in agent.run_stream(task="go"):
                pass
        else:
            await agent.run(task="go")

    return one_run


def make_kept_runner(answer: str, runs: int) -> Callable[[], Awaitable[None]]:
    """One agent whose every run's result is kept, with its context and trace (never cleared): what the
    trace's packing of its finished runs costs (issue 42.5), amortised over the runs it packs."""
    client = ReplayChatCompletionClient([answer] * runs, keep_requests=1)
    agent = AssistantAgent("bench", client)
    kept: list[object] = []

    async def one_run() -> None:
        kept.append(await agent.run(task="go"))

    return one_run


def make_fresh_runner(script: list[str | CreateResult]) -> Callable[[], Awaitable[None]]:
    """A run on a new agent and replay client each time, both built inside the run."""

    async def one_run() -> None:
        agent = AssistantAgent("bench", ReplayChatCompletionClient(script, keep_requests=1))
        await agent.run(task="go")

    return one_run


async def time_runs(run: Callable[[], Awaitable[None]], runs: int) -> float:
    """CPU microseconds per run over ``runs`` runs (after a short warm-up).

    CPU time of the process, not wall time: the loop never sleeps, so on an idle machine both are
    the same, and on a shared one CPU time does not count the time other processes had the core.
    """
    for _ in range(min(50, runs)):
        await run()
    start = time.process_time()
    for _ in range(runs):
        await run()
    return (time.process_time() - start) / runs * 1e6


@dataclass
class Figures:
    plain_run_us: float
    fresh_plain_run_us: float
    tool_k1_run_us: float
    tool_k5_run_us: float
    extra_iteration_us: float
    stream_run_us: float
    unstreamed_long_run_us: float
    chunk_us: float
    stream_events_run_us: float
    unstreamed_long_events_run_us: float
    chunk_event_us: float
    runs: int
    repeats: int


async def measure(runs: int, repeats: int) -> Figures:
    long_text = " ".join(f"w{i}" for i in range(STREAM_WORDS))
    scenarios = {
        "plain": (make_runner(["hello"], k=0), runs),
        "fresh": (make_fresh_runner(["hello"]), runs),
        "k1": (make_runner(tool_script(1), k=1), runs),
        "k5": (make_runner(tool_script(5), k=5), runs),
        "stream": (make_runner([long_text], stream=True, k=0), max(runs // 20, 20)),
        "long": (make_runner([long_text], k=0), max(runs // 20, 20)),
        "stream_events": (make_runner([long_text], stream=True, k=0, events=True), max(runs // 20, 20)),
        "long_events": (make_runner([long_text], k=0, events=True), max(runs // 20, 20)),
    }
    samples: dict[str, list[float]] = {name: [] for name in scenarios}
    for _ in range(repeats):
        for name, (runner, n) in scenarios.items():
            samples[name].append(await time_runs(runner, n))
    med = {name: statistics.median(values) for name, values in samples.items()}
    return Figures(
        plain_run_us=med["plain"],
        fresh_plain_run_us=med["fresh"],
        tool_k1_run_us=med["k1"],
        tool_k5_run_us=med["k5"],
        extra_iteration_us=(med["k5"] - med["k1"]) / 4,
        stream_run_us=med["stream"],
        unstreamed_long_run_us=med["long"],
        chunk_us=(med["stream"] - med["long"]) / STREAM_WORDS,
        stream_events_run_us=med["stream_events"],
        unstreamed_long_events_run_us=med["long_events"],
        chunk_event_us=(med["stream_events"] - med["long_events"]) / STREAM_WORDS,
        runs=runs,
        repeats=repeats,
    )


def report(figures: Figures) -> str:
    values = asdict(figures)
    lines = [f"{'figure':<22}{'nbagent':>12}{'target':>10}"]
    for key, target in TARGETS_US.items():
        lines.append(f"{key:<22}{values[key]:>12.2f}{target:>10.1f}")
    lines.append(
        f"(a plain run on a fresh agent and client, built in the run: {figures.fresh_plain_run_us:.1f} us; "
        f"K=1 run {figures.tool_k1_run_us:.1f} us, K=5 run {figures.tool_k5_run_us:.1f} us, "
        f"{STREAM_WORDS}-chunk stream {figures.stream_run_us:.0f} us "
        f"vs unstreamed {figures.unstreamed_long_run_us:.0f} us; "
        f"through run_stream, with chunk events: {figures.chunk_event_us:.2f} us per chunk; "
        f"median of {figures.repeats} repeats of {figures.runs} runs)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> Figures:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3000, help="runs per repeat (streaming uses runs/20)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    figures = asyncio.run(measure(args.runs, args.repeats))
    print(report(figures))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump({**asdict(figures), "targets_us": TARGETS_US}, out, indent=2)
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
