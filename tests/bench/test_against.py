"""bench/against.py's own logic: which figures it compares and how a ratio and its spread are made
(the alternating subprocess runs themselves are what ``python bench/against.py COMMIT`` does)."""

from __future__ import annotations

from pathlib import Path

import pytest

from .scripts import load_script

against = load_script("against.py", "bench_against")


def test_numeric_figures_are_the_numbers_by_dotted_key() -> None:
    data = {"plain_run_us": 30.5, "runs": 3000, "met": True, "name": "x", "fresh": {"plain": {"pct": 9.5}}, "v": [1]}
    assert against.numeric(data) == {"plain_run_us": 30.5, "runs": 3000.0, "fresh.plain.pct": 9.5}


def test_the_ratio_is_the_median_of_the_rounds_with_its_spread() -> None:
    head = against.Side("head", Path("."), [{"t": 10.0}, {"t": 12.0}, {"t": 9.0}])
    base = against.Side("base", Path("."), [{"t": 10.0}, {"t": 10.0}, {"t": 10.0}])
    row = against.summarize(head, base, ["t", "absent"])["t"]
    assert row == {"head": 10.0, "base": 10.0, "ratio": 1.0, "ratio_min": 0.9, "ratio_max": 1.2}
    assert "absent" not in against.summarize(head, base, ["absent"])


@pytest.mark.subprocess
def test_a_commit_git_does_not_know_is_named_in_the_error() -> None:
    with pytest.raises(SystemExit, match="commit 'no-such-commit' is not a commit"):
        against.resolve("no-such-commit")


def test_rounds_and_script_are_checked_before_anything_runs() -> None:
    with pytest.raises(SystemExit, match="rounds must be at least 1, got 0"):
        against.compare("HEAD", rounds=0)
    with pytest.raises(SystemExit, match="script 'nope.py' is not a file"):
        against.compare("HEAD", script="nope.py")
