"""The loop's cost in Python bytecodes executed, which the machine's load does not move.

``bench_instructions.py``'s scenarios (``bench_loop.py``'s plain run on one agent, plain run on a fresh
agent and client, tool runs with K=1 and K=5 iterations), each run in this process after ``--warmup``
runs, the bytecodes of ``--runs`` runs counted with ``sys.settrace`` opcode events (every Python frame's,
nbagent's, asyncio's and the standard library's alike; C code runs uncounted) over ``--runs``.

Why beside the instruction count: per instruction, two trees' code need not cost the same. A change
that moves work from C (a dict built in C, a validation in pydantic-core) into Python bytecode can cut the
instructions callgrind counts and still cost more CPU time, each bytecode's dispatch costing more cycles
than the instructions of C's dict and allocator code (bench/RESULTS.md, "The loop against e22d83f: per
instruction, and the tool iteration"). Counts repeat to within a few bytecodes a run (ids are drawn from
a pool refilled every so often), so one round of ``bench/against.py`` gives the ratio:

    python bench/bench_bytecodes.py [--scenarios plain k1 k5] [--json out.json]
    python bench/bench_bytecodes.py --scenarios plain --by-function 30   # where they are: per function
    python bench/against.py e22d83f --script bench_bytecodes.py --rounds 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

from bench_instructions import FIGURE, SCENARIOS


class Counter:
    """A trace function counting the opcode events of every frame it is called for."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Counter:
        if event == "opcode":
            self.count += 1
        elif event == "call":
            frame.f_trace_opcodes = True
        return self


class FunctionCounter(Counter):
    """A :class:`Counter` that also counts each function's bytecodes (by code object) and its calls."""

    def __init__(self) -> None:
        super().__init__()
        self.by_code: dict[CodeType, list[int]] = {}

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Counter:
        if event == "opcode":
            self.count += 1
            self.by_code[frame.f_code][0] += 1
        elif event == "call":
            frame.f_trace_opcodes = True
            self.by_code.setdefault(frame.f_code, [0, 0])[1] += 1  # a generator's resumption counts too
        return self

    def table(self, runs: int, top: int) -> str:
        """The ``top`` functions by bytecodes, each with its bytecodes and calls (or resumptions) a run."""
        rows = sorted(self.by_code.items(), key=lambda item: -item[1][0])[:top]
        lines = [f"{'bytecodes':>10} {'calls':>6}  function (file:line)"]
        for code, (ops, calls) in rows:
            where = f"{Path(code.co_filename).name}:{code.co_firstlineno}"
            lines.append(f"{ops / runs:>10.1f} {calls / runs:>6.2f}  {code.co_qualname} ({where})")
        return "\n".join(lines)


async def count(run: Callable[[], Awaitable[None]], warmup: int, runs: int, counter: Counter | None = None) -> float:
    """Bytecodes per run of ``run`` over ``runs`` runs, after ``warmup`` runs (counted by ``counter``)."""
    for _ in range(warmup):
        await run()
    counter = counter or Counter()
    previous = sys.gettrace()  # (a debugger's or coverage's, given back)
    sys.settrace(counter)
    try:
        for _ in range(runs):
            await run()
    finally:
        sys.settrace(previous)
    return counter.count / runs


def measure(scenarios: list[str], warmup: int, runs: int, by_function: int = 0) -> dict[str, float]:
    """Bytecodes per run of each scenario (and per extra tool iteration when both k1 and k5 ran);
    ``by_function``: also print that many functions with the most bytecodes, per scenario."""
    figures: dict[str, float] = {}
    for name in scenarios:
        counter = FunctionCounter() if by_function else Counter()
        figures[f"{FIGURE[name]}_bytecodes"] = asyncio.run(count(SCENARIOS[name](), warmup, runs, counter))
        print(f"{name:<6} {figures[f'{FIGURE[name]}_bytecodes']:>10,.0f} bytecodes a run", flush=True)
        if isinstance(counter, FunctionCounter):
            print(counter.table(runs, by_function), flush=True)
    if "k1" in scenarios and "k5" in scenarios:
        figures["extra_iteration_bytecodes"] = (figures["tool_k5_run_bytecodes"] - figures["tool_k1_run_bytecodes"]) / 4
        print(f"extra tool iteration {figures['extra_iteration_bytecodes']:>10,.0f}", flush=True)
    return figures


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", nargs="+", choices=list(SCENARIOS), default=list(SCENARIOS))
    parser.add_argument("--warmup", type=int, default=200, help="runs before the counted ones (default 200)")
    parser.add_argument("--runs", type=int, default=200, help="counted runs per scenario (default 200)")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    parser.add_argument(
        "--by-function", type=int, default=0, metavar="N", help="also print the N functions with the most bytecodes"
    )
    args = parser.parse_args(argv)
    if args.warmup < 0 or args.runs < 1:
        raise SystemExit(f"bench_bytecodes: --warmup must be >= 0 and --runs >= 1, got {args.warmup} and {args.runs}")
    if args.by_function < 0:
        raise SystemExit(f"bench_bytecodes: --by-function must be >= 0, got {args.by_function}")
    figures = measure(args.scenarios, args.warmup, args.runs, args.by_function)
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2), encoding="utf-8")
    return figures


if __name__ == "__main__":
    main(sys.argv[1:])
