"""The loop's cost in CPU instructions (callgrind), which the machine's load does not move.

``bench_loop.py``'s scenarios (a plain run on one agent, a plain run on a fresh agent and client, tool
runs with K=1 and K=5 iterations, a plain run whose result, context and trace are kept: ``kept``, whose
window packs every 24 finished runs' rows, issue 42.5), each counted by valgrind's callgrind
in two processes that differ only in the number of timed runs: the same imports and warm-up runs, then
``--runs LOW`` or ``--runs HIGH`` runs. Each process starts uninstrumented (``--instr-atstart=no``: the
interpreter's start and the imports run several times faster than counted) and is counted from the end of
its set-up (``callgrind_control --instr=on``) to its exit. The difference of the two counts over ``HIGH -
LOW`` is the instructions of one run, with the warm-up and the shutdown cancelled out. Hash seeds are fixed
(``PYTHONHASHSEED=0``); two counts of one tree differ by about 0.5% (the collector and the id pools fall a
little differently).

Needs ``valgrind`` and its ``callgrind_control`` on the PATH. Counted, the interpreter runs about 50x
slower. Since the counts do not depend on the load, one round of ``bench/against.py`` gives the ratio
against an earlier commit:

    python bench/bench_instructions.py [--scenarios plain k1 k5] [--json out.json]
    python bench/against.py e22d83f --script bench_instructions.py --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import select
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from subprocess import PIPE

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


READY = "ready"
"""What the counted process prints once its imports and set-up are done: the parent then turns callgrind's
instrumentation on (``callgrind_control --instr=on``) and tells it to go on."""


def child(scenario: str, warmup: int, runs: int) -> None:
    """The counted process: the scenario's set-up, then (once the parent has turned the counting on)
    ``warmup`` runs then ``runs`` runs of ``scenario``, on one event loop."""
    run = SCENARIOS[scenario]()
    print(READY, flush=True)
    sys.stdin.readline()

    async def main() -> None:
        for _ in range(warmup + runs):
            await run()

    asyncio.run(main())


def count(scenario: str, warmup: int, runs: int, timeout: float) -> int:
    """Instructions callgrind counts for one process of ``scenario`` with ``runs`` timed runs, from the end of
    its imports and set-up (run uninstrumented, several times faster) to its exit."""
    deadline = time.monotonic() + timeout
    with tempfile.TemporaryDirectory() as tmp:
        command = [
            "valgrind",
            "--tool=callgrind",
            "--cache-sim=no",
            "--branch-sim=no",
            "--instr-atstart=no",
            "--vgdb=yes",  # callgrind_control reaches the process through vgdb
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
        log = Path(tmp) / "stderr.txt"
        with (
            log.open("w") as sink,
            subprocess.Popen(command, env=env, stdin=PIPE, stdout=PIPE, stderr=sink, text=True) as process,
        ):
            try:
                outcome = _count_after_set_up(process, deadline)
            finally:
                if process.poll() is None:
                    process.kill()
                    process.wait()
        stderr = log.read_text()
    found = COLLECTED.search(stderr)
    if outcome != 0 or found is None or int(found.group(1)) == 0:
        why = outcome if isinstance(outcome, str) else f"exit {outcome}" if outcome else "nothing counted"
        raise SystemExit(f"bench_instructions: callgrind of {scenario} failed ({why}):\n{stderr}")
    return int(found.group(1))


def _count_after_set_up(process: subprocess.Popen[str], deadline: float) -> int | str:
    """Wait for the child's ``READY``, turn callgrind's instrumentation on, let it run to its end: its exit
    code, or what went wrong."""
    assert process.stdin is not None and process.stdout is not None
    readable, _, _ = select.select([process.stdout], [], [], max(0.0, deadline - time.monotonic()))
    line = process.stdout.readline() if readable else ""
    if line.strip() != READY:
        ended = process.poll()
        return f"no {READY!r} from the child {'(it exited ' + str(ended) + ')' if ended is not None else 'in time'}"
    control = ["callgrind_control", "--instr=on", str(process.pid)]
    try:
        turned = subprocess.run(control, capture_output=True, text=True, timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return f"{' '.join(control)} did not answer before the deadline"
    # callgrind_control exits 0 even when it found no such process: its answer names the process and says OK
    if turned.returncode != 0 or f"PID {process.pid}:" not in turned.stdout or "OK." not in turned.stdout:
        return f"{' '.join(control)} failed: {turned.stdout}{turned.stderr}"
    try:
        process.communicate("go\n", timeout=max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return "the counted runs passed the deadline"
    return process.returncode


def measure(scenarios: list[str], warmup: int, low: int, high: int, timeout: float) -> dict[str, float]:
    """Instructions per run of each scenario (and per extra tool iteration when both k1 and k5 ran)."""
    figures: dict[str, float] = {}
    for name in scenarios:
        lo, hi = count(name, warmup, low, timeout), count(name, warmup, high, timeout)
        if hi <= lo:
            raise SystemExit(
                f"bench_instructions: {name}: {high} runs counted {hi:,}, not more than {low} runs' {lo:,}"
            )
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
    missing = [tool for tool in ("valgrind", "callgrind_control") if shutil.which(tool) is None]
    if missing:
        raise SystemExit(f"bench_instructions: {' and '.join(missing)} not on the PATH (valgrind installs both)")
    figures = measure(args.scenarios, args.warmup, low, high, args.timeout)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
