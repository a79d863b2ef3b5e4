"""The loop's cost in CPU instructions (callgrind), which the machine's load does not move.

``bench_loop.py``'s scenarios (a plain run on one agent, a plain run on a fresh agent and client, tool
runs with K=1 and K=5 iterations, a plain run whose result, context and trace are kept: ``kept``, whose
window packs every 24 finished runs' rows, issue 42.5), each counted by valgrind's callgrind
in two processes that differ only in the number of timed runs: the same imports and warm-up runs, then ``--runs LOW`` or
``--runs HIGH`` runs. The difference of the two counts over ``HIGH - LOW`` is the instructions of one
run, with the interpreter's start, the imports, the warm-up and the shutdown cancelled out. Hash
seeds are fixed (``PYTHONHASHSEED=0``); two counts of one tree differ by about 0.5% (the collector and
the id pools fall a little differently).

Needs ``valgrind`` on the PATH. Under callgrind the interpreter runs about 50x slower: the default
of 120 warm-up runs and 100/300 timed runs per scenario takes about a minute in all. Since the counts
do not depend on the load, one round of ``bench/against.py`` gives the ratio against an earlier commit:

    python bench/bench_instructions.py [--scenarios plain k1 k5] [--json out.json]
    python bench/against.py e22d83f --script bench_instructions.py --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path

import bench_loop

SCENARIOS: dict[str, Callable[[], Callable[[], Awaitable[None]]]] = {
    "plain": lambda: bench_loop.make_runner(["hello"], k=0),
    "fresh": lambda: bench_loop.make_fresh_runner(["hello"]),
    "k1": lambda: bench_loop.make_runner(bench_loop.tool_script(1), k=1),
    "k5": lambda: bench_loop.make_runner(bench_loop.tool_script(5), k=5),
    "kept": lambda: bench_loop.make_kept_runner("hello", 10_000),
}
FIGURE = {
    "plain": "plain_run",
    "fresh": "fresh_plain_run",
    "k1": "tool_k1_run",
    "k5": "tool_k5_run",
    "kept": "kept_plain_run",
}
COLLECTED = re.compile(r"Collected\s*:\s*(\d+)")


def child(scenario: str, warmup: int, runs: int) -> None:
    """The counted process: ``warmup`` runs then ``runs`` runs of ``scenario``, on one event loop."""
    run = SCENARIOS[scenario]()

    async def main() -> None:
        for _ in range(warmup + runs):
            await run()

    asyncio.run(main())


def count(scenario: str, warmup: int, runs: int, timeout: float) -> int:
    """Instructions callgrind counts for one process of ``scenario`` with ``runs`` timed runs."""
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--cache-sim=no",
            "--branch-sim=no",
            f"--callgrind-out-file={Path(tmp) / 'callgrind.out'}",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            scenario,
            "--warmup",
            str(warmup),
            "--count",
            str(runs),
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    found = COLLECTED.search(done.stderr)
    if done.returncode != 0 or found is None:
        raise SystemExit(f"bench_instructions: callgrind of {scenario} failed (exit {done.returncode}):\n{done.stderr}")
    return int(found.group(1))


def measure(scenarios: list[str], warmup: int, low: int, high: int, timeout: float) -> dict[str, float]:
    """Instructions per run of each scenario (and per extra tool iteration when both k1 and k5 ran)."""
    figures: dict[str, float] = {}
    for name in scenarios:
        lo, hi = count(name, warmup, low, timeout), count(name, warmup, high, timeout)
        figures[f"{FIGURE[name]}_instr"] = (hi - lo) / (high - low)
        print(f"{name:<6} {figures[f'{FIGURE[name]}_instr']:>12,.0f} instructions a run", flush=True)
    if "k1" in scenarios and "k5" in scenarios:
        figures["extra_iteration_instr"] = (figures["tool_k5_run_instr"] - figures["tool_k1_run_instr"]) / 4
        print(f"extra tool iteration {figures['extra_iteration_instr']:>12,.0f}", flush=True)
    return figures


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--warmup", type=int, default=120, help="runs before the counted ones (default 120)")
    parser.add_argument(
        "--runs", type=int, nargs=2, default=[100, 300], metavar=("LOW", "HIGH"), help="timed runs of the two counts"
    )
    parser.add_argument("--timeout", type=float, default=600, help="seconds allowed per counted process")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument("--child", choices=list(SCENARIOS), help=argparse.SUPPRESS)
    parser.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child, args.warmup, args.count)
        return {}
    low, high = args.runs
    if not 0 <= low < high:
        raise SystemExit(f"bench_instructions: --runs LOW HIGH needs 0 <= LOW < HIGH, got {low} {high}")
    if shutil.which("valgrind") is None:
        raise SystemExit("bench_instructions: valgrind is not on the PATH")
    figures = measure(args.scenarios, args.warmup, low, high, args.timeout)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
