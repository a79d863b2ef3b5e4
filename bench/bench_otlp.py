"""How long an OTLPRecorder's sends block the event loop, by collector behaviour.

A ticker task sleeps 1 ms in a loop and records how late it wakes (its lag); meanwhile an agent makes
``--runs`` runs (replay model, a tool call and an answer each), recorded by an ``OTLPRecorder`` that
sends them to a collector on 127.0.0.1 that: answers 200 (``ok``), never answers (``silent``),
trickles its answer a byte every 2 s (``trickle``), refuses connections (``refuse``), or answers 503
(``503``). Also ``none``: no recorder (the loop's own lag). Per behaviour: the ticker's largest and
99th-percentile lag in ms, and how long the runs took. The target: the largest lag no more than
5 ms above ``none``'s (a send never blocks the loop).

    python bench/bench_otlp.py [--runs 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.trace.collectors import Collector  # noqa: E402

from nbagent import AssistantAgent, CreateResult, FunctionCall, ReplayChatCompletionClient  # noqa: E402
from nbagent.trace import OTLPRecorder  # noqa: E402


def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def agent(runs: int) -> AssistantAgent:
    script: list[str | CreateResult] = []
    for i in range(runs):
        call = FunctionCall(id=f"c{i}", name="lookup", arguments='{"city": "Oslo"}')
        script += [CreateResult(finish_reason="function_calls", content=[call]), f"answer {i}"]
    return AssistantAgent(
        "w", ReplayChatCompletionClient(script, latency=0.05), tools=[lookup], reflect_on_tool_use=True
    )


async def measure(behaviour: str, runs: int) -> dict[str, Any]:
    lags: list[float] = []
    stop = False

    async def ticker() -> None:
        while not stop:
            start = time.perf_counter()
            await asyncio.sleep(0.001)
            lags.append((time.perf_counter() - start - 0.001) * 1000)

    collector = None
    recorder = None
    subject = agent(runs)
    if behaviour != "none":
        kind, status = {"ok": ("status", 200), "503": ("status", 503)}.get(behaviour, (behaviour, 200))
        collector = Collector(kind, status, every=2.0)  # type: ignore[arg-type]
        recorder = OTLPRecorder(collector.endpoint, content=True, timeout=5).attach(subject)
    tick = asyncio.create_task(ticker())
    await asyncio.sleep(0.05)
    lags.clear()
    began = time.perf_counter()
    for i in range(runs):
        await subject.run(task=f"task {i}")
    took = time.perf_counter() - began
    await asyncio.sleep(1.0)  # the sender keeps going (retries, trickles) while the loop ticks
    stop = True
    await tick
    out = {
        "max_lag_ms": round(max(lags), 2),
        "p99_lag_ms": round(statistics.quantiles(lags, n=100)[98], 2),
        "runs_s": round(took, 2),
    }
    if recorder is not None:
        out["sent_spans"] = recorder.sent
        out["pending_runs"] = recorder.pending_runs
        recorder.close(0.1)
    if collector is not None:
        collector.close()
    return out


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--json", type=Path)
    results: dict[str, Any] = {}
    parser.add_argument("--only", nargs="*", default=["none", "ok", "silent", "trickle", "refuse", "503"])
    args = parser.parse_args()
    for behaviour in args.only:
        figures = await measure(behaviour, args.runs)
        for key, value in figures.items():
            results[f"{behaviour}_{key}"] = value
        print(behaviour, figures, flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
