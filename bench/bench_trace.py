"""Benchmark of the trace: frame building at scale, memory per chunk, recording overhead.

* frame building (``--only frames`` runs this alone): CPU ms per frame (median of ``--repeats``
  rounds of 20 builds) of each frame and of all five, on a trace of one tool run (two parallel calls,
  then reflection: the few-row frames a test, a view or the explorer's first paint builds) and on a
  trace of ``--frame-runs`` such runs (10,000: 110,000 events), with the load average. Against an
  earlier commit: ``python bench/against.py 0ce88cd --script bench_trace.py -- --only frames``;
* ``events_df`` on a trace of about 100,000 recorded items (100 streamed runs of 1,000 words each),
  and the other frames on the same trace (median of ``--repeats``);
* memory per recorded chunk event: ``tracemalloc`` memory still held after streamed runs with the
  trace vs. with no recorder (the chunk objects themselves included, since the trace is what keeps
  them), divided by the number of chunks;
* recording overhead on a fresh agent per run (as bench/compare_autogen.py, with many more runs):
  trace vs ``agent.recorders = []`` alternating batch by batch, ``--fresh-runs`` runs a side, median
  CPU time per run, for a plain answer and a 1,000-word answer through ``run`` and ``run_stream``;
* recording overhead: the same replay-model runs with the default recorder (``agent.trace``) and
  with ``agent.recorders = []``, interleaved, median CPU time per run, for a plain text run, a tool
  run (two parallel calls, then reflection) and a 200-word streamed run. Two figures each:
  ``kept`` lets the trace grow over the batch (the trace keeps the run's records, events and LLM
  requests alive, which costs memory traffic, and the garbage collector's time, printed apart: a
  batch whose kept objects grow the heap by a quarter triggers a full collection, which scans every
  object of the process), ``cleared`` clears it after each run (the cost of the recording work
  itself), and ``append_only`` is the floor for any recorder that keeps the items: a recorder whose
  ``record`` is a bare ``list.append``;
* what a trace keeps per run (the ``kept`` case), for the same scenarios: objects the cyclic garbage
  collector tracks (what each full collection scans again; tracked after 1,000 more runs minus
  before, over 1,000) and bytes (``tracemalloc`` over those runs), with the trace and with
  ``agent.recorders = []`` (the trace's own rows are plain values but one per event: the rest is
  the items it keeps, their messages and the context logs);
* dataset evaluation: one trace keeps ``--dataset-runs`` plain runs, the context reset after each
  (an agent evaluated over a dataset of tasks, the trace analysed afterwards): CPU us per run, the
  garbage collector's us per run and its full collections, with the trace, with the ``list.append``
  recorder (keeping the items costs any recorder this much), with the trace and ``gc.freeze()``
  every 1,000 runs, and with no recorder. As the trace grows, a full collection
  comes each time the long-lived heap has grown by a quarter and scans all it keeps, so what a run
  leaves alive is scanned about five times in the end; ``gc.freeze()`` takes it out of later scans;
* long-lived trace: one agent (unbounded context) makes ``--long-runs`` plain runs in a row, so its
  context and its trace grow all along; CPU time per run (median over the first and the last quarter
  of the runs) with the trace, with ``agent.recorders = []`` and with the ``list.append`` recorder,
  and the bytes each run leaves allocated (``tracemalloc``, over the first and the second half of the
  runs): with the trace keeping each message once, both stay flat as the context grows.

    python bench/bench_trace.py [--repeats 5] [--runs 2000] [--long-runs 2000] [--dataset-runs 20000]
                                [--frame-runs 10000] [--only frames] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from functools import partial
from typing import Any

from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, Trace

WORDS = 1000
RUNS_FOR_100K = 100


async def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def answer(words: int) -> str:
    return " ".join(f"w{i}" for i in range(words))


def streaming_agent(runs: int, words: int) -> AssistantAgent:
    client = ReplayChatCompletionClient([answer(words)] * runs, keep_requests=1)
    return AssistantAgent("streamer", client, model_client_stream=True)


async def big_trace() -> Trace:
    agent = streaming_agent(RUNS_FOR_100K, WORDS)
    for _ in range(RUNS_FOR_100K):
        await agent.run(task="talk")
        await agent.on_reset()
    return agent.trace


def median_time(func: Callable[[], Any], repeats: int) -> dict[str, float]:
    """Median wall-clock and CPU seconds of ``func()`` (they differ on a loaded machine)."""
    wall, cpu = [], []
    for _ in range(repeats):
        start, start_cpu = time.perf_counter(), time.process_time()
        func()
        wall.append(time.perf_counter() - start)
        cpu.append(time.process_time() - start_cpu)
    return {"wall_s": statistics.median(wall), "cpu_s": statistics.median(cpu)}


async def retained_bytes(with_trace: bool, runs: int, words: int) -> tuple[int, int]:
    """Bytes still allocated after ``runs`` streamed runs, and the chunks recorded."""
    gc.collect()
    tracemalloc.start()
    agent = streaming_agent(runs, words)
    if not with_trace:
        agent.recorders = []
    before = tracemalloc.get_traced_memory()[0]
    for _ in range(runs):
        await agent.run(task="talk")
        await agent.on_reset()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    chunks = sum(1 for item in agent.trace.items if type(item).__name__ == "ModelClientStreamingChunkEvent")
    return after - before, chunks


def tool_agent(runs: int, keep_requests: int = 100) -> AssistantAgent:
    """An agent for ``runs`` tool runs: each asks for two tool calls at once, then reflects on their results."""
    call = CreateResult(
        finish_reason="function_calls",
        content=[
            FunctionCall(id="c1", name="add", arguments='{"a": 1, "b": 2}'),
            FunctionCall(id="c2", name="add", arguments='{"a": 3, "b": 4}'),
        ],
    )
    script: list[str | CreateResult] = [call, "3 and 7"] * runs
    client = ReplayChatCompletionClient(script, keep_requests=keep_requests)
    return AssistantAgent("tools", client, tools=[add], reflect_on_tool_use=True)


def scenarios() -> dict[str, Callable[[int], AssistantAgent]]:
    def plain(n: int) -> AssistantAgent:
        return AssistantAgent("plain", ReplayChatCompletionClient(["the answer"] * n, keep_requests=1))

    def tools(n: int) -> AssistantAgent:
        return tool_agent(n, keep_requests=1)

    def streamed(n: int) -> AssistantAgent:
        return streaming_agent(n, 200)

    return {"plain": plain, "tools": tools, "streamed_200_words": streamed}


class GcPauses:
    """Wall seconds the cyclic garbage collector ran, and its full collections, while active."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.full = 0
        self._start = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
            return
        self.seconds += time.perf_counter() - self._start
        self.full += info["generation"] == 2

    def __enter__(self) -> GcPauses:
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


async def run_batch(
    agent: AssistantAgent, runs: int, clear: bool = False, freeze_every: int = 0
) -> tuple[float, float, int]:
    """CPU seconds per run (only ``agent.run`` is timed; the context is reset between runs so that
    every run does the same work, ``clear`` clears the trace, and ``freeze_every`` runs
    ``gc.freeze()`` moves what is alive out of the collector's reach), and the garbage collector's
    seconds per run and full collections meanwhile."""
    cpu = 0.0
    with GcPauses() as pauses:
        for index in range(1, runs + 1):
            start = time.process_time()
            await agent.run(task="go")
            cpu += time.process_time() - start
            await agent.on_reset()
            if clear:
                agent.trace.clear()
            if freeze_every and index % freeze_every == 0:
                gc.freeze()
    gc.unfreeze()
    return cpu / runs, pauses.seconds / runs, pauses.full


async def kept_per_run(agent: AssistantAgent, warmup: int = 50, runs: int = 1000) -> tuple[float, float]:
    """Objects the garbage collector tracks and bytes (``tracemalloc``) that ``runs`` runs (context
    reset after each) leave alive, per run."""

    async def batch(n: int) -> int:
        for _ in range(n):
            await agent.run(task="go")
            await agent.on_reset()
        gc.collect()
        return len(gc.get_objects())

    before = await batch(warmup)
    tracemalloc.start()
    objects = await batch(runs) - before
    kept_bytes = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return objects / runs, kept_bytes / runs


async def tracked(runs: int = 1000) -> dict[str, dict[str, float]]:
    """Per scenario: GC-tracked objects and bytes kept per run with the trace and with no recorder."""
    results = {}
    for name, make in scenarios().items():
        bare = make(runs + 50)
        bare.recorders = []
        objects, kept_bytes = await kept_per_run(make(runs + 50), runs=runs)
        objects_off, bytes_off = await kept_per_run(bare, runs=runs)
        results[name] = {"trace": objects, "off": objects_off, "trace_bytes": kept_bytes, "off_bytes": bytes_off}
    return results


async def dataset(runs: int) -> dict[str, dict[str, float]]:
    """One trace keeping ``runs`` plain runs (context reset after each), the same with ``gc.freeze()``
    every 1,000 runs, the ``list.append`` recorder (the floor for any recorder that keeps the items)
    and no recorder: CPU and garbage collector us per run, full collections."""
    results = {}
    for mode in ("trace", "append_only", "trace_gc_freeze", "off"):
        agent = scenarios()["plain"](runs)
        if mode == "off":
            agent.recorders = []
        elif mode == "append_only":
            agent.recorders = [AppendOnly()]
        gc.collect()
        cpu, gc_s, full = await run_batch(agent, runs, freeze_every=1000 if mode == "trace_gc_freeze" else 0)
        results[mode] = {"cpu_us": cpu * 1e6, "gc_us": gc_s * 1e6, "full_collections": full}
        del agent
    return results


class AppendOnly:
    """The cheapest recorder that keeps every item: ``record`` is ``list.append``."""

    def __init__(self) -> None:
        self.items: list[Any] = []
        self.record = self.items.append


async def overhead(runs: int, repeats: int) -> dict[str, dict[str, float]]:
    results: dict[str, dict[str, float]] = {}
    for name, make in scenarios().items():
        n = runs if name != "streamed_200_words" else max(runs // 10, 50)
        kept, cleared, without, floor = [], [], [], []
        kept_gc: list[float] = []
        kept_full: list[int] = []
        for _ in range(repeats):
            bare = make(n)
            bare.recorders = []
            gc.collect()
            without.append((await run_batch(bare, n))[0])
            appending = make(n)
            appending.recorders = [AppendOnly()]
            gc.collect()
            floor.append((await run_batch(appending, n))[0])
            gc.collect()
            cpu, gc_s, full = await run_batch(make(n), n)
            kept.append(cpu)
            kept_gc.append(gc_s)
            kept_full.append(full)
            gc.collect()
            cleared.append((await run_batch(make(n), n, clear=True))[0])
        off, append_only = statistics.median(without), statistics.median(floor)
        on, on_cleared = statistics.median(kept), statistics.median(cleared)
        results[name] = {
            "kept_gc_us": statistics.median(kept_gc) * 1e6,
            "kept_full_collections": statistics.median(kept_full),
            "without_us": off * 1e6,
            "append_only_us": append_only * 1e6,
            "append_only_pct": (append_only - off) / off * 100,
            "kept_us": on * 1e6,
            "kept_pct": (on - off) / off * 100,
            "cleared_us": on_cleared * 1e6,
            "cleared_pct": (on_cleared - off) / off * 100,
        }
    return results


LONG_MODES = ("trace", "off", "append_only")


def long_lived_agent(runs: int, mode: str) -> AssistantAgent:
    agent = AssistantAgent("long", ReplayChatCompletionClient(["the answer"] * runs, keep_requests=1))
    if mode == "off":
        agent.recorders = []
    elif mode == "append_only":
        agent.recorders = [AppendOnly()]
    return agent


async def long_lived_times(runs: int, mode: str) -> list[float]:
    """CPU seconds of each of ``runs`` plain runs in a row on one agent."""
    agent = long_lived_agent(runs, mode)
    times = []
    for _ in range(runs):
        start = time.process_time()
        await agent.run(task="go")
        times.append(time.process_time() - start)
    return times


async def long_lived_bytes(runs: int, mode: str) -> tuple[float, float]:
    """Bytes left allocated per run over the first and over the second half of ``runs`` runs."""
    gc.collect()
    tracemalloc.start()
    agent = long_lived_agent(runs, mode)
    marks = [tracemalloc.get_traced_memory()[0]]
    for index in range(runs):
        await agent.run(task="go")
        if index + 1 in (runs // 2, runs):
            gc.collect()
            marks.append(tracemalloc.get_traced_memory()[0])
    tracemalloc.stop()
    half = runs // 2
    return (marks[1] - marks[0]) / half, (marks[2] - marks[1]) / (runs - half)


async def long_lived(runs: int, repeats: int) -> dict[str, dict[str, float]]:
    """Per mode: median CPU us per run in the first and last quarter, retained bytes per run."""
    quarter = max(runs // 4, 1)
    first: dict[str, list[float]] = {mode: [] for mode in LONG_MODES}
    last: dict[str, list[float]] = {mode: [] for mode in LONG_MODES}
    for _ in range(repeats):
        for mode in LONG_MODES:
            gc.collect()
            times = await long_lived_times(runs, mode)
            first[mode].append(statistics.median(times[:quarter]))
            last[mode].append(statistics.median(times[-quarter:]))
    results: dict[str, dict[str, float]] = {}
    for mode in LONG_MODES:
        early, late = await long_lived_bytes(runs, mode)
        results[mode] = {
            "first_quarter_us": statistics.median(first[mode]) * 1e6,
            "last_quarter_us": statistics.median(last[mode]) * 1e6,
            "bytes_per_run_first_half": early,
            "bytes_per_run_second_half": late,
        }
    return results


async def fresh_run(trace: bool, consume: str, text: str) -> float:
    """CPU seconds of one run on a fresh agent (built outside the timed region)."""
    agent = AssistantAgent("bench", ReplayChatCompletionClient([text], keep_requests=1))
    if not trace:
        agent.recorders = []
    start = time.process_time()
    if consume == "run_stream":
        async for _ in agent.run_stream(task="go"):
            pass
    else:
        await agent.run(task="go")
    return time.process_time() - start


async def fresh(runs: int, batches: int = 20) -> dict[str, dict[str, float]]:
    """Recording overhead on a fresh agent per run, trace vs no recorder alternating batch by batch:
    ``runs`` runs a side, median CPU us (plain answer; 1,000-word answer through run and run_stream)."""
    cases = {
        "plain": ("run", "The answer is 42."),
        "long": ("run", answer(1000)),
        "long_run_stream": ("run_stream", answer(1000)),
    }
    results: dict[str, dict[str, float]] = {}
    for name, (consume, text) in cases.items():
        samples: dict[bool, list[float]] = {True: [], False: []}
        for batch in range(batches):
            for trace in (True, False) if batch % 2 == 0 else (False, True):
                gc.collect()
                for _ in range(runs // batches):
                    samples[trace].append(await fresh_run(trace, consume, text))
        on, off = statistics.median(samples[True]) * 1e6, statistics.median(samples[False]) * 1e6
        results[name] = {"trace_us": on, "off_us": off, "pct": (on - off) / off * 100}
    return results


FRAMES = ("events_df", "llm_calls_df", "tool_calls_df", "runs_df", "context_df")


async def tool_trace(runs: int) -> Trace:
    """A trace of ``runs`` tool runs of one agent (its context reset after each)."""
    agent = tool_agent(runs, keep_requests=1)
    for _ in range(runs):
        await agent.run(task="go")
        await agent.on_reset()
    return agent.trace


def frame_ms(trace: Trace, repeats: int, builds: int) -> dict[str, float]:
    """CPU ms per build of each frame of ``trace`` and of all of them (median of ``repeats`` rounds)."""
    calls = {name: getattr(trace, name) for name in FRAMES}
    for call in calls.values():  # pandas' own first-call costs out of the figures
        call()

    def every() -> None:
        for call in calls.values():
            call()

    out: dict[str, float] = {}
    for name, build in [*calls.items(), ("all", every)]:
        times = []
        for _ in range(repeats):
            start = time.process_time()
            for _ in range(builds):
                build()
            times.append((time.process_time() - start) / builds)
        out[f"{name}_ms"] = statistics.median(times) * 1000
    return out


async def frames(runs: int, repeats: int) -> dict[str, Any]:
    """Frame building on a one-run trace and on a ``runs``-run trace (CPU ms per frame)."""
    small, large = await tool_trace(1), await tool_trace(runs)
    return {
        "small": {"items": len(small), **frame_ms(small, repeats, 20)},
        "large": {"runs": runs, "items": len(large), **frame_ms(large, repeats, 1)},
    }


def print_frames(figures: dict[str, Any]) -> None:
    for row in figures.values():
        what = f"{row['runs']:,} tool runs" if "runs" in row else "one tool run"
        shown = ", ".join(f"{name[:-3]} {row[name]:.2f}" for name in row if name.endswith("_ms"))
        print(f"frames of a trace of {what} ({row['items']:,} items), CPU ms per build: {shown}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--runs", type=int, default=2000, help="runs per batch for the overhead figures")
    parser.add_argument("--long-runs", type=int, default=2000, help="runs in a row for the long-lived figures")
    parser.add_argument("--dataset-runs", type=int, default=20000, help="runs one trace keeps, context reset")
    parser.add_argument("--fresh-runs", type=int, default=3000, help="runs a side for the fresh-agent overhead")
    parser.add_argument("--frame-runs", type=int, default=10000, help="tool runs of the large trace of the frames")
    parser.add_argument("--only", choices=["frames"], help="run this section alone")
    parser.add_argument("--json", help="write the figures to this file")
    args = parser.parse_args()
    if args.only == "frames":
        figures = {"frames": await frames(args.frame_runs, args.repeats), "load_average": os.getloadavg()[0]}
        print_frames(figures["frames"])
        print(f"load average while measuring: {figures['load_average']:.1f} on {os.cpu_count()} CPUs")
        if args.json:
            with open(args.json, "w", encoding="utf-8") as handle:
                json.dump(figures, handle, indent=2)
        return

    trace = await big_trace()
    n_items = len(trace)
    trace.events_df()  # import pandas and warm up
    figures: dict[str, Any] = {
        "python": sys.version.split()[0],
        "items": n_items,
        "events_df_s": median_time(trace.events_df, args.repeats),
        "events_df_no_chunks_s": median_time(partial(trace.events_df, include_chunks=False), args.repeats),
        "llm_calls_df_s": median_time(trace.llm_calls_df, args.repeats),
        "runs_df_s": median_time(trace.runs_df, args.repeats),
        "summary_s": median_time(trace.summary, args.repeats),
    }
    del trace
    with_bytes, chunks = await retained_bytes(True, 20, WORDS)
    without_bytes, _ = await retained_bytes(False, 20, WORDS)
    figures["memory_chunks"] = chunks
    figures["memory_per_chunk_bytes"] = (with_bytes - without_bytes) / chunks
    figures["kept_per_run"] = await tracked()
    figures["dataset"] = await dataset(args.dataset_runs)
    figures["fresh"] = await fresh(args.fresh_runs)
    figures["overhead"] = await overhead(args.runs, args.repeats)
    figures["long_lived"] = await long_lived(args.long_runs, max(args.repeats // 2, 1))
    figures["frames"] = await frames(args.frame_runs, args.repeats)

    print(f"frames on a trace of {n_items:,} items (median wall / CPU ms):")
    for name in ("events_df_s", "events_df_no_chunks_s", "llm_calls_df_s", "runs_df_s", "summary_s"):
        print(
            f"  {name[:-2]}: {figures[name]['wall_s'] * 1000:.0f} / {figures[name]['cpu_s'] * 1000:.0f}"
            + (" (target <= 500)" if name == "events_df_s" else "")
        )
    print(f"memory per recorded chunk event: {figures['memory_per_chunk_bytes']:.0f} bytes ({chunks:,} chunks)")
    for name, row in figures["kept_per_run"].items():
        print(
            f"kept per run, {name}: {row['trace']:.1f} GC-tracked objects and {row['trace_bytes']:,.0f} bytes with "
            f"the trace, {row['off']:.1f} and {row['off_bytes']:,.0f} without"
        )
    print(f"dataset evaluation, one trace keeping {args.dataset_runs:,} plain runs (context reset), CPU us per run:")
    off = figures["dataset"]["off"]["cpu_us"]
    for mode, row in figures["dataset"].items():
        print(
            f"  {mode}: {row['cpu_us']:.1f} us ({(row['cpu_us'] - off) / off * 100:+.1f}%), garbage collector "
            f"{row['gc_us']:.1f} us of it, {row['full_collections']:g} full collections"
        )
    for name, row in figures["fresh"].items():
        print(
            f"recording overhead, fresh agent per run, {name}: {row['trace_us']:.1f} us with the trace, "
            f"{row['off_us']:.1f} us without ({row['pct']:+.1f}%; target < 10%)"
        )
    for name, row in figures["overhead"].items():
        print(
            f"recording overhead, {name}: {row['without_us']:.1f} us per run without; "
            f"list.append only {row['append_only_us']:.1f} us ({row['append_only_pct']:+.1f}%); trace kept "
            f"{row['kept_us']:.1f} us ({row['kept_pct']:+.1f}%; garbage collector {row['kept_gc_us']:.1f} us of it, "
            f"{row['kept_full_collections']:g} full collections), cleared each run {row['cleared_us']:.1f} us "
            f"({row['cleared_pct']:+.1f}%) (target < 10%)"
        )
    long = figures["long_lived"]
    print(
        f"long-lived trace, one agent, {args.long_runs:,} plain runs in a row (CPU us per run, median of "
        "first / last quarter; bytes left allocated per run, first / second half):"
    )
    for mode, row in long.items():
        pct = ""
        if mode != "off":
            off = long["off"]["last_quarter_us"]
            pct = f" ({(row['last_quarter_us'] - off) / off * 100:+.1f}% in the last quarter)"
        print(
            f"  {mode}: {row['first_quarter_us']:.1f} / {row['last_quarter_us']:.1f} us{pct}; "
            f"{row['bytes_per_run_first_half']:,.0f} / {row['bytes_per_run_second_half']:,.0f} bytes"
        )
    print_frames(figures["frames"])
    load = os.getloadavg()[0]
    print(f"load average while measuring: {load:.1f} on {os.cpu_count()} CPUs")
    figures["load_average"] = load
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=2)


if __name__ == "__main__":
    asyncio.run(main())
