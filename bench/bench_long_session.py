"""Long sessions: a trace's memory over many runs with ``Trace(max_runs=N)``, and building the frames of
runs with long outputs (redaction included).

* **Memory**: one agent (replay model, plain answers, its context cleared after each run, as an agent
  evaluated over a dataset) makes ``--runs`` runs recorded by ``Trace(max_runs=--keep)``; the heap
  (tracemalloc, after a collection) at 1%, 10%, 50% and 100% of the runs, and the runs kept. Also the
  same without ``max_runs`` up to ``--unbounded-runs`` runs, for comparison.
* **Redaction**: ``--big-runs`` runs whose tool returns a distinct ``--big-mb`` MB text; seconds to build
  every frame (events, llm_calls, tool_calls, runs, context tables) the first time and again (the
  default redactor masks each long text once), and the seconds of that spent redacting.
* **Masking**: ms per MB of ``redact.mask`` and of ``mask_unfiltered`` (no prefilter) on a text with no
  mark, on a pangram (where the prefilter cannot help), on text naming the marks (the patterns run)
  and on the pangram holding a key.

    python bench/bench_long_session.py [--runs 100000] [--keep 1000] [--big-runs 200] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import time
import tracemalloc
from pathlib import Path
from typing import Any

import nbagent.trace.live
from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient, Trace


async def memory(runs: int, keep: int | None) -> dict[str, Any]:
    agent = AssistantAgent("w", ReplayChatCompletionClient([f"answer {i}" for i in range(runs)]))
    trace = Trace(max_runs=keep)
    trace.attach(agent)
    agent.recorders.remove(agent.trace)  # recorded by the bounded trace only
    marks = {max(1, runs // 100), runs // 10, runs // 2, runs}
    out: dict[str, Any] = {}
    tracemalloc.start()
    began = time.perf_counter()
    for i in range(1, runs + 1):
        await agent.run(task=f"task {i}")
        await agent.model_context.clear()
        if i in marks:
            gc.collect()
            out[f"mb_at_{i}"] = round(tracemalloc.get_traced_memory()[0] / 1e6, 2)
    out["us_per_run"] = round((time.perf_counter() - began) / runs * 1e6, 1)
    tracemalloc.stop()
    out["runs_kept"] = len(trace.runs_df())
    return out


async def frames(runs: int, mb: float) -> dict[str, Any]:
    def big(n: int) -> str:
        """A long output."""
        return (f"run {n} " + "lorem ipsum dolor sit amet " * 40_000)[: int(mb * 1e6)]

    script: list[str | CreateResult] = []
    for i in range(runs):
        call = FunctionCall(id=f"c{i}", name="big", arguments=json.dumps({"n": i}))
        script += [CreateResult(finish_reason="function_calls", content=[call]), f"done {i}"]
    agent = AssistantAgent("w", ReplayChatCompletionClient(script), tools=[big], reflect_on_tool_use=True)
    for i in range(runs):
        await agent.run(task=f"task {i}")
        await agent.model_context.clear()
    trace = agent.trace
    spent = [0.0]
    real_mask = nbagent.trace.live.mask

    def timed_mask(text: str, secrets: Any = None) -> str:
        start = time.perf_counter()
        try:
            return real_mask(text, secrets)
        finally:
            spent[0] += time.perf_counter() - start

    nbagent.trace.live.mask = timed_mask  # type: ignore[assignment]
    out: dict[str, Any] = {}
    for label in ("first", "again", "third"):
        spent[0] = 0.0
        start = time.perf_counter()
        trace.events_df()
        trace.llm_calls_df()
        trace.tool_calls_df()
        trace.runs_df()
        trace.context_tables()
        out[f"frames_{label}_s"] = round(time.perf_counter() - start, 3)
        out[f"redact_{label}_s"] = round(spent[0], 3)
    nbagent.trace.live.mask = real_mask  # type: ignore[assignment]
    return out


def mask_speed(mb: float = 1.0, repeats: int = 5) -> dict[str, Any]:
    """ms per MB of ``redact.mask`` (its prefilter) and ``redact.mask_unfiltered`` (every check) on a
    text with no mark (lorem ipsum: no ``k``, ``h``, ``b``, ``-``, ``_``, ``:``), on a pangram (every
    letter: the prefilter cannot rule a mark out), on text naming the marks (``redact``'s docstring:
    Authorization, Bearer, api-key..., so the patterns run) and on the pangram holding a key."""
    import nbagent.redact as redact

    size = int(mb * 1e6)

    def filled(text: str) -> str:
        return (text * (size // len(text) + 1))[:size]

    docs = (redact.__doc__ or "").replace("sk-", "s k").replace("://", ":/ /")  # its words, no secret, no URL
    texts = {
        "plain": filled("lorem ipsum dolor sit amet "),
        "pangram": filled("the quick brown fox jumps over the lazy dog. "),
        "marks": filled(docs),
    }
    texts["pangram_key"] = texts["pangram"] + " sk-" + "abcdefgh12345678"
    out: dict[str, Any] = {}
    for name, text in texts.items():
        for label, function in (("mask", redact.mask), ("unfiltered", redact.mask_unfiltered)):
            start = time.perf_counter()
            for _ in range(repeats):
                function(text, [])
            out[f"{label}_{name}_ms_per_mb"] = round((time.perf_counter() - start) / repeats / mb * 1000, 2)
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=100_000)
    parser.add_argument("--keep", type=int, default=1000)
    parser.add_argument("--unbounded-runs", type=int, default=20_000)
    parser.add_argument("--big-runs", type=int, default=200)
    parser.add_argument("--big-mb", type=float, default=1.0)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    results: dict[str, Any] = {}
    for key, value in (await memory(args.runs, args.keep)).items():
        results[f"max_runs_{key}"] = value
    print("max_runs", results, flush=True)
    for key, value in (await memory(args.unbounded_runs, None)).items():
        results[f"unbounded_{key}"] = value
    print("unbounded", {k: v for k, v in results.items() if k.startswith("unbounded")}, flush=True)
    results.update(mask_speed())
    print("mask", {k: v for k, v in results.items() if k.endswith("_per_mb")}, flush=True)
    results.update(await frames(args.big_runs, args.big_mb))
    print("frames", {k: v for k, v in results.items() if k.startswith(("frames", "redact"))}, flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
