"""bench/history.py: what a recorded run keeps, and how a figure's change is said."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from .scripts import load_script

history = load_script("history.py", "bench_history")

STOP_PAUSE = {
    "load_average": 3.0,
    "repeat": 3,
    "figures": {
        "Stop": {"median_s": 0.004, "max_s": 0.006},
        "interrupt": {"median_s": 0.001, "max_s": 0.002},
        "Pause": {"median_s": 0.25, "max_s": 0.3},
    },
}


@pytest.fixture
def path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(history, "commit_name", lambda: "abc1234")  # no git in a unit test
    return tmp_path / "history.jsonl"


def test_a_run_is_appended_with_its_tracked_figures_and_the_next_says_how_they_moved(path: Path) -> None:
    first = history.record("bench_stop_pause.py", STOP_PAUSE, path, load=4.0)
    assert first[0] == "bench_stop_pause.py against its last recorded run:"
    assert "  figures.Pause.median_s: 0.25 (first recorded)" in first
    slower = json.loads(json.dumps(STOP_PAUSE))
    slower["figures"]["Pause"]["median_s"] = 0.3
    second = history.record("bench_stop_pause.py", slower, path)
    pause = next(line for line in second if "Pause.median_s" in line)
    assert pause.startswith("  figures.Pause.median_s: 0.3, was 0.25 (+20.0%; abc1234, ")
    runs = history.entries(path, "bench_stop_pause.py")
    assert [run["figures"]["figures.Pause.median_s"] for run in runs] == [0.25, 0.3]
    assert set(runs[0]) == {"script", "commit", "date", "load_average", "cpus", "figures"}
    assert runs[0]["commit"] == "abc1234" and len(runs[0]["figures"]) == 6
    assert runs[0]["load_average"] == 4.0  # the load when the script started, as run_all gives it


def test_scripts_histories_are_apart_and_an_untracked_script_is_not_recorded(path: Path) -> None:
    history.record("bench_import.py", {"import_s": 0.2, "first_run_s": 0.3, "goal_s": 0.25}, path)
    assert history.record("bench_trace.py", {"x": 1.0}, path) == []
    first_loop = history.record("bench_loop.py", {"plain_run_us": 30.0}, path)
    assert first_loop[1:] == ["  plain_run_us: 30 (first recorded)"]
    assert [run["script"] for run in history.entries(path)] == ["bench_import.py", "bench_loop.py"]
    assert history.entries(path, "bench_import.py")[0]["figures"] == {"import_s": 0.2, "first_run_s": 0.3}


def test_output_without_any_tracked_figure_is_said_and_not_recorded(path: Path) -> None:
    lines = history.record("bench_loop.py", {"runs": 3000}, path)
    assert lines[0].startswith("bench_loop.py: none of its tracked figures (plain_run_us, ")
    assert not path.exists()


def test_a_damaged_history_line_is_named(path: Path) -> None:
    path.write_text('{"script": "bench_loop.py", "figures": {}}\nnot json\n', encoding="utf-8")
    with pytest.raises(SystemExit, match=r"history.jsonl:2 is not JSON"):
        history.entries(path)
    path.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"history.jsonl:1 is not a recorded run"):
        history.entries(path)


def test_the_command_names_a_wrong_script(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        history.main(["bench_nothing.py"])
    assert "script must be one of bench_loop.py, bench_stop_pause.py, bench_import.py, got 'bench_nothing.py'" in (
        capsys.readouterr().err
    )
