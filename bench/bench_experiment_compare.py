"""Benchmark of comparing two variants of an experiment task by task (issue 38, point 8).

An experiment of ``--tasks`` tasks and two replay variants (``a`` looks the city up and answers; ``b``
does the same but, on every third task, answers without the tool, and on every fifth, looks up another
city), two scorers (a pass/fail and a number), written with ``output=`` to a dataset folder. Then:

* **compare**: ``exp.compare("a", "b")``: the pairs, the per-task frame and the paired statistics per
  score, tokens and latency (McNemar, Wilcoxon, paired t, bootstrap intervals of 2,000 resamples).
  Target: under 1 s for 10,000 tasks. Measured on the experiment read back by ``load_experiment``
  (its results read from the folder before the clock starts) and on the live one.
  Wall and process CPU time, and ``exp.results`` alone (compare reads it: an experiment builds it each time).
* **partings**: ``comparison.parting``, read once when first asked for: every run's moves read in bulk
  (the events and tool calls of the 2 x tasks runs) and the first move where each pair parts.

    PYTHONPATH=src python bench/bench_experiment_compare.py [--tasks 10000] [--rounds 3] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any

import pandas as pd

import nbagent
from nbagent import (
    AssistantAgent,
    CreateResult,
    Experiment,
    FunctionCall,
    FunctionTool,
    ReplayChatCompletionClient,
    load_experiment,
)


def lookup(city: str) -> str:
    """The weather of a city."""
    return f"sunny in {city}"


def _call(city: str) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id="c1", name="lookup", arguments=f'{{"city": "{city}"}}')],
    )


def variant(name: str) -> Any:
    def make(row: Mapping[str, Any]) -> AssistantAgent:
        city, number = str(row["task"]), int(str(row["task_id"])[1:])
        script: list[str | CreateResult] = [_call(city), f"It is sunny in {city}."]
        if name == "b" and number % 3 == 0:
            script = [f"{city} is probably sunny."]
        elif name == "b" and number % 5 == 0:
            script = [_call("Atlantis"), f"It is sunny in {city}."]
        client = ReplayChatCompletionClient(script)
        return AssistantAgent(name, client, tools=[FunctionTool(lookup)], reflect_on_tool_use=True)

    return make


def correct(output: str | None, row: Mapping[str, Any]) -> bool:
    return f"sunny in {row['task']}" in (output or "")


def brevity(output: str | None, row: Mapping[str, Any]) -> float:
    return 1.0 / (1 + len(output or ""))


def timed(action: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    result = action()
    return time.perf_counter() - start, result


def cpu_timed(action: Any) -> tuple[float, float, Any]:
    """Wall and process CPU seconds of ``action()`` (on a shared machine the CPU time is the figure that holds)."""
    wall, cpu = time.perf_counter(), time.process_time()
    result = action()
    return time.perf_counter() - wall, time.process_time() - cpu, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    tasks = pd.DataFrame(
        {"task_id": [f"t{i}" for i in range(args.tasks)], "task": [f"City{i}" for i in range(args.tasks)]}
    )
    figures: dict[str, Any] = {"tasks": args.tasks, "runs": 2 * args.tasks}
    with tempfile.TemporaryDirectory() as folder:
        exp = Experiment(
            tasks,
            {"a": variant("a"), "b": variant("b")},
            [correct, brevity],
            output=folder,
            progress=None,
            concurrency=32,
            timeout=None,
        )
        figures["experiment_s"], _ = timed(exp.run_sync)
        loaded = load_experiment(folder)
        for name, source in (("loaded", loaded), ("live", exp)):
            source.results  # noqa: B018 read once before the clock starts (a loaded experiment reads its files)
            seconds, cpus, results_cpus = [], [], []
            for _ in range(args.rounds):
                results_cpus.append(cpu_timed(lambda source=source: source.results)[1])
                took, cpu, comparison = cpu_timed(lambda source=source: source.compare("a", "b"))
                seconds.append(took)
                cpus.append(cpu)
            figures[f"compare_{name}_s"] = seconds
            figures[f"compare_{name}_cpu_s"] = cpus
            figures[f"compare_{name}_median_s"] = statistics.median(seconds)
            figures[f"compare_{name}_median_cpu_s"] = statistics.median(cpus)
            figures[f"results_{name}_median_cpu_s"] = statistics.median(results_cpus)
            figures[f"compared_{name}"] = [str(score) for score in comparison.stats.index]  # what was compared
            took, cpu, parting = cpu_timed(lambda comparison=comparison: comparison.parting)
            figures[f"partings_{name}_s"] = took
            figures[f"partings_{name}_cpu_s"] = cpu
            figures[f"partings_{name}"] = {str(k): int(v) for k, v in parting["pairs"].items() if v}
        stats = comparison.stats
        figures["correct_p_value"] = float(stats.loc["correct", "p_value"])
    figures["python"] = platform.python_version()
    figures["nbagent"] = nbagent.__version__
    print(f"experiment of {args.tasks:,} tasks x 2 variants: {figures['experiment_s']:.1f} s to run")
    for name in ("loaded", "live"):
        rounds = ", ".join(f"{s:.3f}" for s in figures[f"compare_{name}_s"])
        cpus = ", ".join(f"{s:.3f}" for s in figures[f"compare_{name}_cpu_s"])
        print(
            f"compare ({name}): median wall {figures[f'compare_{name}_median_s']:.3f} s (rounds {rounds}), "
            f"CPU {figures[f'compare_{name}_median_cpu_s']:.3f} s (rounds {cpus}); target < 1 s; of which "
            f"exp.results alone CPU {figures[f'results_{name}_median_cpu_s']:.3f} s; "
            f"compared: {', '.join(figures[f'compared_{name}'])}"
        )
        print(
            f"partings ({name}): wall {figures[f'partings_{name}_s']:.2f} s, "
            f"CPU {figures[f'partings_{name}_cpu_s']:.2f} s, {figures[f'partings_{name}']}"
        )
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=2)


if __name__ == "__main__":
    sys.exit(main())
