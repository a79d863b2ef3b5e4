"""bench/bench_bytecodes.py: the bytecodes of one run, counted by opcode events, and its arguments."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest

from .scripts import load_script

bytecodes = load_script("bench_bytecodes.py", "bench_bytecodes")


def work(steps: int) -> int:
    total = 0
    for step in range(steps):
        total += step
    return total


def test_a_run_is_its_bytecodes_over_the_runs_counted() -> None:
    async def short() -> None:
        work(10)

    async def long() -> None:
        work(30)

    one, again = asyncio.run(bytecodes.count(short, 2, 10)), asyncio.run(bytecodes.count(short, 0, 5))
    assert one == again and one > 0  # the same code, the same count a run
    assert asyncio.run(bytecodes.count(long, 0, 10)) > one  # 20 more turns of the loop


def test_the_trace_function_in_place_is_given_back() -> None:
    def tracer(*args: object) -> None:
        return None

    async def run() -> None:
        work(1)

    previous = sys.gettrace()
    sys.settrace(tracer)
    try:
        asyncio.run(bytecodes.count(run, 0, 1))
        assert sys.gettrace() is tracer
    finally:
        sys.settrace(previous)


def test_a_plain_run_is_counted_and_written(tmp_path: Path) -> None:
    out = tmp_path / "figures.json"
    figures = bytecodes.main(["--scenarios", "plain", "--warmup", "5", "--runs", "5", "--json", str(out)])
    assert 1_000 < figures["plain_run_bytecodes"] < 50_000  # a replay run is some thousands
    assert json.loads(out.read_text(encoding="utf-8")) == figures


def test_bad_counts_are_refused_naming_the_parameters() -> None:
    with pytest.raises(SystemExit, match=r"--warmup must be >= 0 and --runs >= 1, got 0 and 0"):
        bytecodes.main(["--runs", "0", "--warmup", "0"])
    with pytest.raises(SystemExit, match=r"--by-function must be >= 0, got -1"):
        bytecodes.main(["--by-function", "-1"])


def test_the_count_by_function_names_each_function_with_its_bytecodes_and_calls() -> None:
    async def run() -> None:
        work(10)
        work(10)

    counter = bytecodes.FunctionCounter()
    total = asyncio.run(bytecodes.count(run, 0, 4, counter))
    table = counter.table(4, 10).splitlines()
    assert table[0].split() == ["bytecodes", "calls", "function", "(file:line)"]
    [line] = [line for line in table if " work (" in line]
    ops, calls = line.split()[:2]
    assert float(calls) == 2.0 and float(ops) > 0  # two calls a run
    assert sum(float(line.split()[0]) for line in table[1:]) == pytest.approx(total)  # every frame counted once
