"""bench/bench_instructions.py: the instructions of one run from two callgrind counts, and its arguments."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from .scripts import load_script

instructions = load_script("bench_instructions.py", "bench_instructions")


def test_a_run_is_the_difference_of_two_counts_over_their_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    per_run = {"plain": 300_000, "k1": 460_000, "k5": 1_700_000}
    counted: list[tuple[str, int, int]] = []

    def count(name: str, warmup: int, runs: int, timeout: float) -> int:
        counted.append((name, warmup, runs))
        return 5_000_000_000 + warmup * 7 + runs * per_run[name]  # the start, the warm-up, then the runs

    monkeypatch.setattr(instructions, "count", count)
    figures = instructions.main(["--scenarios", "plain", "k1", "k5", "--warmup", "10", "--runs", "20", "70"])
    assert figures == {
        "plain_run_instr": 300_000,
        "tool_k1_run_instr": 460_000,
        "tool_k5_run_instr": 1_700_000,
        "extra_iteration_instr": 310_000,
    }
    assert counted == [(name, 10, runs) for name in ("plain", "k1", "k5") for runs in (20, 70)]


def test_runs_out_of_order_are_refused_naming_the_parameter() -> None:
    with pytest.raises(SystemExit, match=r"--runs LOW HIGH needs 0 <= LOW < HIGH, got 30 10"):
        instructions.main(["--runs", "30", "10"])


@pytest.mark.subprocess
@pytest.mark.timeout(2400)  # a hang guard over both counts' own (900 s each)
@pytest.mark.skipif(
    shutil.which("valgrind") is None or shutil.which("callgrind_control") is None, reason="valgrind is not installed"
)
def test_callgrind_counts_a_plain_run(tmp_path: Path) -> None:
    """Two processes under callgrind, counted from the end of their imports (which run uninstrumented): 17.6 s
    in all, idle, on the 2-core machine of 2026-12-07, where counting from the start took 63.8 s (and 185-218 s
    on a slower day, over the suite's 300 s guard in both runs of a loaded pair)."""
    out = tmp_path / "figures.json"
    arguments = ["--scenarios", "plain", "--warmup", "5", "--runs", "5", "15", "--timeout", "900", "--json", str(out)]
    figures = instructions.main(arguments)
    assert 50_000 < figures["plain_run_instr"] < 5_000_000  # a replay run is some hundred thousand
    assert out.read_text(encoding="utf-8").startswith("{")
