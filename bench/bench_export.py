"""Benchmark of the exports and loads on a trace of about 100,000 recorded items.

The trace: one agent's runs, each asking for two tools at once, then streaming a reflection of
``--words`` words (so about 60 items a run, a third of them chunks), as many runs as it takes to
pass ``--events`` items. Median of ``--repeats`` wall-clock seconds for:

* the frames (``events_df`` ... ``runs_df`` and the context tables), which every export builds;
* ``to_parquet`` (the Hive-style dataset by table) and ``load_parquet`` of it, and DuckDB counting
  the events of the dataset;
* ``to_jsonl`` (one file per table) and ``load_jsonl``, and polars reading the events file whole;
* OTLP: building the protobuf request with content off and on, its size, and ``to_otlp_json``.

    python bench/bench_export.py [--events 100000] [--words 20] [--repeats 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from nbagent import (
    AssistantAgent,
    CreateResult,
    FunctionCall,
    ReplayChatCompletionClient,
    Trace,
    load_jsonl,
    load_parquet,
)


async def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


async def build(events: int, words: int) -> Trace:
    """One agent's runs (two parallel tool calls, then a streamed reflection) until ``events`` items."""
    answer = " ".join(f"word{i}" for i in range(words))
    calls = [FunctionCall(id="c1", name="lookup", arguments='{"city": "Paris"}'),
             FunctionCall(id="c2", name="lookup", arguments='{"city": "Oslo"}')]  # fmt: skip
    client = ReplayChatCompletionClient([])
    agent = AssistantAgent("bench", client, tools=[lookup], reflect_on_tool_use=True, model_client_stream=True)
    trace = agent.trace
    run = 0
    while len(trace) < events:
        client.chat_completions += [CreateResult(finish_reason="function_calls", content=calls), answer]
        await agent.run(task=f"weather {run}")
        await agent.model_context.clear()  # a task per run: the context does not grow without bound
        run += 1
    return trace


def median_s(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--words", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    started = time.perf_counter()
    trace = asyncio.run(build(args.events, args.words))
    build_s = time.perf_counter() - started
    runs = trace.runs_df()
    results: dict[str, Any] = {
        "items": len(trace),
        "runs": len(runs),
        "llm_calls": int(runs["n_llm_calls"].sum()),
        "tool_calls": int(runs["n_tool_calls"].sum()),
        "record_s": round(build_s, 2),
    }
    r = args.repeats
    scratch = Path(tempfile.mkdtemp(prefix="nbagent-bench-export-"))
    try:
        results["frames_s"], _ = median_s(
            lambda: (trace.events_df(), trace.llm_calls_df(), trace.tool_calls_df(), trace.runs_df(),
                     trace.context_tables()), r)  # fmt: skip

        def parquet() -> Path:
            shutil.rmtree(scratch / "pq", ignore_errors=True)
            return trace.to_parquet(scratch / "pq")

        results["to_parquet_s"], folder = median_s(parquet, r)
        results["parquet_mb"] = round(sum(p.stat().st_size for p in folder.rglob("*.parquet")) / 1e6, 2)
        results["load_parquet_s"], loaded = median_s(lambda: load_parquet(folder), r)
        assert len(loaded.events_df()) == len(trace), "the dataset loads back whole"
        import duckdb

        query = f"SELECT count(*) FROM read_parquet('{folder}/events/**/*.parquet', hive_partitioning = true)"
        results["duckdb_count_events_s"], rows = median_s(lambda: duckdb.sql(query).fetchall(), r)
        assert rows[0][0] == len(trace)

        def jsonl() -> Path:
            shutil.rmtree(scratch / "jsonl", ignore_errors=True)
            return trace.to_jsonl(scratch / "jsonl")

        results["to_jsonl_s"], out = median_s(jsonl, r)
        results["jsonl_mb"] = round(sum(p.stat().st_size for p in out.glob("*.jsonl")) / 1e6, 2)
        results["load_jsonl_s"], _ = median_s(lambda: load_jsonl(out), r)
        try:
            import polars as pl

            results["polars_read_events_jsonl_s"], df = median_s(lambda: pl.read_ndjson(out / "events.jsonl"), r)
            assert df.height == len(trace)
        except ImportError:
            results["polars_read_events_jsonl_s"] = None

        from nbagent.trace.otlp import export_request, spans_of

        for content in (False, True):
            label = "content" if content else "no_content"
            seconds, request = median_s(lambda c=content: export_request(spans_of(trace, c)), r)
            results[f"otlp_request_{label}_s"] = seconds
            results[f"otlp_spans_{label}"] = sum(len(s.spans) for rs in request.resource_spans for s in rs.scope_spans)
            results[f"otlp_protobuf_{label}_mb"] = round(len(request.SerializeToString()) / 1e6, 2)
        results["to_otlp_json_s"], _ = median_s(lambda: trace.to_otlp_json(), r)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    results = {key: round(value, 3) if isinstance(value, float) else value for key, value in results.items()}
    results["machine"] = f"{platform.machine()} {platform.python_version()} ({platform.system()})"
    width = max(len(key) for key in results)
    for key, value in results.items():
        print(f"{key:<{width}}  {value}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
