"""``tool_calls_df``'s ``concurrent_with``: how many calls of its run overlapped a call in time (itself
included), counted from sorted starts and ends (it compared every pair of a run's calls: a run of
20,600 parallel calls took 130 s to export, 5,000 took 5.3 s in tool_calls_df alone)."""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from nbagent.trace.frames import overlaps


def by_pairs(spans: list[tuple[str, float, float]]) -> list[int]:
    """The definition, pair by pair: j overlaps i when it starts before i ends and ends after i starts."""
    return [
        sum(1 for j, (other, s2, e2) in enumerate(spans) if other == run and (s2 < end and start < e2 or j == i))
        for i, (run, start, end) in enumerate(spans)
    ]


def test_overlaps_match_the_pairwise_definition() -> None:
    rng = random.Random(32)
    for _ in range(3000):
        executions: list[Any] = [
            SimpleNamespace(
                run_id=rng.choice("ab"),
                start_perf=rng.choice([0.0, 1.0, 1.5, 2.0, 3.0]),
                duration_s=rng.choice([0.0, 0.0, 0.5, 1.0, 2.0, None]),  # instants, and calls never ended
            )
            for _ in range(rng.randint(0, 12))
        ]
        spans = [
            (e.run_id, e.start_perf, e.start_perf + (e.duration_s if e.duration_s is not None else float("inf")))
            for e in executions
        ]
        assert overlaps(executions) == by_pairs(spans), spans


def test_many_parallel_calls_of_one_run() -> None:
    executions: list[Any] = [SimpleNamespace(run_id="r", start_perf=0.0, duration_s=1.0) for _ in range(20_000)]
    executions.append(SimpleNamespace(run_id="r", start_perf=5.0, duration_s=1.0))  # after them all
    counts = overlaps(executions)
    assert counts[:20_000] == [20_000] * 20_000 and counts[-1] == 1
