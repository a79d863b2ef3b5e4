"""How long an OTLPRecorder's sends block the event loop, by collector behaviour.

A ticker task sleeps 1 ms in a loop and records how late it wakes (its lag); meanwhile an agent makes
``--runs`` runs (replay model, a tool call and an answer each), recorded by an ``OTLPRecorder`` that
sends them to a collector on 127.0.0.1 that: answers 200 (``ok``), never answers (``silent``),
trickles its answer a byte every 2 s (``trickle``), refuses connections (``refuse``), or answers 503
(``503``). Also ``none``: no recorder, the loop's own lag on this machine (a shared machine's
scheduling and the garbage collector's full collections), measured in every round. The behaviours
are measured in ``--rounds`` rounds, each round all of them in turn (so the baseline sees the same
load). Per behaviour, over the rounds: the ticker's largest lag, its 99th percentile (every sample),
the median of the rounds' largest lags, the longest full (generation 2) garbage collection seen
while it ran, how long the runs took, how long the sender took to build a send's spans, and the
sender thread's CPU time per run (building and posting: what competes with the loop for the
interpreter lock; unlike the lags it hardly moves with the machine's load). The target: the largest
lag no more than 5 ms above ``none``'s (a send never blocks the loop).

The loop's lag moves with the machine's load (a busy 2-core machine stalls the baseline itself by
50-200 ms), so ``--holds`` also measures what does not: the longest stretch the sender thread runs
with no Python call boundary, in its own CPU time (``time.thread_time`` between two consecutive
profiler events of that thread: an upper bound of the longest single C call, each holding the
interpreter lock, so of how long it can keep the loop waiting beyond the 5 ms switch interval; a
preempted thread uses no CPU time, so the machine's load hardly moves it). Runs with a tool output of
``--sizes`` MB each (distinct texts holding the marks redaction looks for, so it scans them), sent to
a collector answering 200; and the same for the request built the former way (one protobuf message
serialized whole), for comparison.

    python bench/bench_otlp.py [--runs 40] [--rounds 3] [--json out.json]
    python bench/bench_otlp.py --holds [--sizes 1 5] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import logging
import os
import statistics
import sys
import threading
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


class _Pauses:
    """Full garbage collections while measuring: the longest, in ms."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.longest = max(self.longest, (time.perf_counter() - self._started) * 1000)


def _timed_sends(recorder: OTLPRecorder, builds: list[float], cpu: list[float]) -> None:
    """Count the time the sender thread spends building spans (``OTLPRecorder._build``) and its CPU
    time building and posting (``time.thread_time``: what competes with the loop for the interpreter
    lock, and does not grow when the machine is busy)."""
    build, post = recorder._build, recorder._post  # noqa: SLF001  (a bench's probes)

    def timed_build(send: Any) -> bool:
        start, used = time.perf_counter(), time.thread_time()
        try:
            return build(send)
        finally:
            builds.append(time.perf_counter() - start)
            cpu.append(time.thread_time() - used)

    def timed_post(send: Any) -> None:
        used = time.thread_time()
        try:
            post(send)
        finally:
            cpu.append(time.thread_time() - used)

    recorder._build = timed_build  # type: ignore[method-assign]  # noqa: SLF001
    recorder._post = timed_post  # type: ignore[method-assign]  # noqa: SLF001


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
    builds: list[float] = []
    cpu: list[float] = []
    subject = agent(runs)
    if behaviour != "none":
        kind, status = {"ok": ("status", 200), "503": ("status", 503)}.get(behaviour, (behaviour, 200))
        collector = Collector(kind, status, every=2.0)  # type: ignore[arg-type]
        recorder = OTLPRecorder(collector.endpoint, content=True, timeout=5).attach(subject)
        _timed_sends(recorder, builds, cpu)
    gc.collect()
    pauses = _Pauses()
    gc.callbacks.append(pauses)
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
    gc.callbacks.remove(pauses)
    out: dict[str, Any] = {
        "lags": lags,
        "gc2_ms": round(pauses.longest, 2),
        "runs_s": round(took, 2),
    }
    if recorder is not None:
        out["build_ms_per_send"] = round(statistics.median(builds) * 1000, 2) if builds else None
        out["sender_cpu_ms_per_run"] = round(sum(cpu) * 1000 / runs, 2)
        out["sent_spans"] = recorder.sent
        out["pending_runs"] = recorder.pending_runs
        recorder.close(0.1)
    if collector is not None:
        collector.close()
    return out


def summarise(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """One behaviour's figures over its rounds."""
    lags = [lag for one in rounds for lag in one["lags"]]
    out: dict[str, Any] = {
        "max_lag_ms": round(max(lags), 2),
        "p99_lag_ms": round(statistics.quantiles(lags, n=100)[98], 2),
        "median_round_max_lag_ms": round(statistics.median(max(one["lags"]) for one in rounds), 2),
        "gc2_max_ms": max(one["gc2_ms"] for one in rounds),
        "runs_s": round(statistics.median(one["runs_s"] for one in rounds), 2),
    }
    if "build_ms_per_send" in rounds[0]:
        out["build_ms_per_send"] = round(statistics.median(one["build_ms_per_send"] or 0 for one in rounds), 2)
        out["sender_cpu_ms_per_run"] = round(statistics.median(one["sender_cpu_ms_per_run"] for one in rounds), 2)
        out["sent_spans"], out["pending_runs"] = rounds[-1]["sent_spans"], rounds[-1]["pending_runs"]
    return out


def _text(size_mb: float, seed: int) -> str:
    """Distinct text of ``size_mb`` MB in lines, with words holding "gh" and a URL per line (marks
    redaction looks for: it scans it)."""
    line = f"run {seed}: the night light through high data, value {{}} see http://example.org/r?q={{}}\n"
    count = int(size_mb * 1e6 / len(line)) + 1
    return "".join(line.format(i, seed) for i in range(count))[: int(size_mb * 1e6)]


class _Holds:
    """Profiles the sender thread (``nbagent-otlp``): the longest stretches of its CPU time with no
    profiler event (no Python call or return), and what ended them."""

    def __init__(self, name: str = "nbagent-otlp") -> None:
        self.name = name
        self.longest: list[tuple[float, str]] = []
        self._last = 0.0

    def __call__(self, frame: Any, event: str, arg: Any) -> None:
        now = time.thread_time()
        held = now - self._last
        if held > 0.0005:
            what = getattr(arg, "__qualname__", None) or frame.f_code.co_name
            self.longest.append((held * 1000, f"{event} {what} ({Path(frame.f_code.co_filename).name})"))
        self._last = time.thread_time()

    def start(self, frame: Any, event: str, arg: Any) -> None:
        """The profile function threads start with: only the sender thread keeps one."""
        if threading.current_thread().name != self.name:
            sys.setprofile(None)
            return
        self._last = time.thread_time()
        sys.setprofile(self)

    def top(self, n: int = 3) -> list[tuple[float, str]]:
        return [(round(ms, 2), what) for ms, what in sorted(self.longest, reverse=True)[:n]]


def long_agent(runs: int, size_mb: float) -> AssistantAgent:
    texts = iter([_text(size_mb, i) for i in range(runs)])

    def fetch(url: str) -> str:
        """A page's text."""
        return next(texts)

    script: list[str | CreateResult] = []
    for i in range(runs):
        call = FunctionCall(id=f"c{i}", name="fetch", arguments='{"url": "http://example.org"}')
        script += [CreateResult(finish_reason="function_calls", content=[call]), f"answer {i}"]
    return AssistantAgent("w", ReplayChatCompletionClient(script), tools=[fetch], reflect_on_tool_use=True)


async def holds(size_mb: float, runs: int) -> dict[str, Any]:
    """The sender's longest stretches while it sends ``runs`` runs with ``size_mb`` MB tool outputs,
    and those of building the last run's request the former way (in a thread of its own)."""
    from nbagent.trace.otlp import export_request, spans_of

    collector = Collector("status", 200)
    subject = long_agent(runs, size_mb)
    probe = _Holds()
    threading.setprofile(probe.start)
    try:
        recorder = OTLPRecorder(collector.endpoint, content=True, timeout=30).attach(subject)
        cpu: list[float] = []
        _timed_sends(recorder, [], cpu)
        for i in range(runs):
            await subject.run(task=f"task {i}")
        await asyncio.to_thread(recorder.flush, 120)
    finally:
        threading.setprofile(None)  # type: ignore[arg-type]
    sent, errors = recorder.sent, recorder.errors[:3]
    recorder.close(1)
    collector.close()
    former = _Holds("former")
    last = {str(subject.trace.runs_df()["run_id"].iloc[-1])}  # one send: one run

    def build_former() -> None:
        sys.setprofile(former.start)
        former.start(None, "call", None)
        export_request(spans_of(subject.trace, True, runs=last)).SerializeToString()
        sys.setprofile(None)

    thread = threading.Thread(target=build_former, name="former")
    thread.start()
    thread.join()
    return {
        "size_mb": size_mb,
        "runs": runs,
        "sent_spans": sent,
        "errors": errors,
        "sender_cpu_ms_per_run": round(sum(cpu) * 1000 / runs, 1),
        "longest_hold_ms": probe.top(1)[0][0] if probe.longest else 0.0,
        "longest_holds": probe.top(),
        "former_longest_hold_ms": former.top(1)[0][0] if former.longest else 0.0,
        "former_longest_holds": former.top(),
    }


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--only", nargs="*", default=["none", "ok", "silent", "trickle", "refuse", "503"])
    parser.add_argument("--holds", action="store_true", help="the sender's longest holds with long outputs")
    parser.add_argument("--sizes", type=float, nargs="*", default=[1.0, 5.0], help="tool output sizes in MB")
    args = parser.parse_args()
    logging.getLogger("nbagent").setLevel(logging.ERROR)  # the failing collectors' warnings: expected here
    if args.holds:
        found: dict[str, Any] = {"load_average_1min": round(os.getloadavg()[0], 2)}
        for size in args.sizes:
            figures = await holds(size, min(args.runs, 5))
            print(figures, flush=True)
            found[f"{size:g}mb"] = figures
        if args.json:
            args.json.write_text(json.dumps(found, indent=2) + "\n")
        return
    measured: dict[str, list[dict[str, Any]]] = {behaviour: [] for behaviour in args.only}
    for _ in range(args.rounds):
        for behaviour in args.only:
            measured[behaviour].append(await measure(behaviour, args.runs))
    results: dict[str, Any] = {"load_average_1min": round(os.getloadavg()[0], 2)}
    for behaviour, rounds in measured.items():
        figures = summarise(rounds)
        for key, value in figures.items():
            results[f"{behaviour}_{key}"] = value
        print(behaviour, figures, flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    asyncio.run(main())
