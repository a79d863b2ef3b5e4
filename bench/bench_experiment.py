"""Benchmark of an Experiment against the same runs as one plain Batch, and of rescoring (issue 38).

* **Experiment against a plain Batch.** ``--tasks`` tasks, two variants (replay agents, copied per run:
  a text answer), so ``2 x tasks`` runs. The experiment (``Experiment(tasks, {"a": ..., "b": ...},
  [exact_match()])``: its grid, its keys, its row and score per run) against the same runs as one plain
  ``Batch`` over a DataFrame of ``2 x tasks`` rows whose ``make_agent`` picks the variant's copy (what a
  user writes by hand, scoring nothing). Both in memory, ``progress=None``, ``concurrency=16``; the
  rounds alternate which goes first. The figure: the experiment's seconds over the batch's, per round
  (target: at most 1.2).
* **Rescoring.** ``exp.rescore(scorer, variants=["a"])``: a Python scorer over the ``tasks`` recorded
  runs of one variant, no model called (in memory); and the same on the experiment written with
  ``output=`` and read back by ``load_experiment`` (the score written whole to the folder). Target:
  under 2 s for 10,000 runs.

    python bench/bench_experiment.py [--tasks 10000] [--rounds 2] [--json out.json]
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

import pandas as pd

import nbagent
from nbagent import AssistantAgent, Batch, Experiment, ReplayChatCompletionClient, load_experiment
from nbagent.batch import agent_copier


def tasks_frame(n: int) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "task_id": [f"t{i}" for i in range(n)],
            "task": [f"What is {i} + {i}?" for i in range(n)],
            "expected": [str(2 * i) for i in range(n)],
        }
    )


def variants() -> dict[str, AssistantAgent]:
    return {
        "a": AssistantAgent("a", ReplayChatCompletionClient(["42"]), system_message="Be short."),
        "b": AssistantAgent("b", ReplayChatCompletionClient(["The answer is 42."]), system_message="Be careful."),
    }


async def plain_batch(tasks: pd.DataFrame) -> float:
    """The same runs as one plain Batch (make_agent picks each row's variant): seconds."""
    agents = variants()
    copiers = {name: agent_copier(agent) for name, agent in agents.items()}
    frame = pd.concat([tasks.assign(variant=name) for name in agents], ignore_index=True)
    batch = Batch(lambda row: copiers[row["variant"]](row), frame, progress=None, concurrency=16, timeout=None)
    start = time.perf_counter()
    await batch.run()
    seconds = time.perf_counter() - start
    assert (batch.results["status"] == "ok").all()
    return seconds


async def experiment(tasks: pd.DataFrame, output: Path | None = None) -> tuple[float, Experiment]:
    exp = Experiment(
        tasks, variants(), [nbagent.exact_match()], progress=None, concurrency=16, timeout=None, output=output
    )
    start = time.perf_counter()
    await exp.run()
    seconds = time.perf_counter() - start
    return seconds, exp


def has_digit(output: str, row: Any) -> bool:
    return any(ch.isdigit() for ch in output)


def timed_rescore(exp: Experiment) -> float:
    start = time.perf_counter()
    results = exp.rescore(has_digit, variants=["a"])
    seconds = time.perf_counter() - start
    assert int(results["has_digit"].notna().sum()) == int((results["variant"] == "a").sum())
    return seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    tasks = tasks_frame(args.tasks)
    ratios, batch_s, exp_s = [], [], []
    exp: Experiment | None = None
    for round_ in range(args.rounds):
        if round_ % 2 == 0:
            b = asyncio.run(plain_batch(tasks))
            e, exp = asyncio.run(experiment(tasks))
        else:
            e, exp = asyncio.run(experiment(tasks))
            b = asyncio.run(plain_batch(tasks))
        batch_s.append(b)
        exp_s.append(e)
        ratios.append(e / b)
        print(f"round {round_}: batch {b:.2f} s, experiment {e:.2f} s, ratio {e / b:.3f}", file=sys.stderr)
    assert exp is not None
    rescore_memory = timed_rescore(exp)
    with tempfile.TemporaryDirectory() as folder:
        written_s, _ = asyncio.run(experiment(tasks, Path(folder) / "exp"))
        loaded = load_experiment(Path(folder) / "exp")
        rescore_folder = timed_rescore(loaded)
    runs = 2 * args.tasks
    figures = {
        "tasks": args.tasks,
        "runs": runs,
        "rounds": args.rounds,
        "batch_s": batch_s,
        "experiment_s": exp_s,
        "ratio_median": statistics.median(ratios),
        "ratio_max": max(ratios),
        "batch_runs_per_s": runs / statistics.median(batch_s),
        "experiment_runs_per_s": runs / statistics.median(exp_s),
        "experiment_output_s": written_s,
        "rescore_memory_s": rescore_memory,
        "rescore_loaded_folder_s": rescore_folder,
        "rescored_runs": args.tasks,
        "python": platform.python_version(),
    }
    print(json.dumps(figures, indent=2))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
