"""An experiment's folder: one dataset, resumed exactly, read back offline, rescored whole without a model."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest

import nbagent
from nbagent import AssistantAgent, Experiment, ReplayChatCompletionClient, load_experiment
from tests.experiment.helpers import arithmetic, constant, right, tool_variant

from ..frames import assert_frame_equal


class Counted:
    """A variant that builds ``right`` agents and counts them (by task id)."""

    def __init__(self, latency: float = 0.0) -> None:
        self.built: list[str] = []
        self.latency = latency

    def __call__(self, row: dict[str, Any]) -> AssistantAgent:
        self.built.append(str(row["task_id"]))
        client = ReplayChatCompletionClient([str(row["expected"])], latency=self.latency)
        return AssistantAgent("right", client)


def test_one_dataset_with_the_experiment_table_and_a_second_run_runs_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    counted = Counted()
    exp = Experiment(
        arithmetic(), {"a": counted, "b": constant("0")}, [nbagent.exact_match()], repeats=2, output=folder,
        progress=None, part_size=3,
    )  # fmt: skip
    exp.run_sync()
    first = exp.results
    assert len(counted.built) == 8
    assert {p.name for p in folder.iterdir()} >= {"runs", "results", "attempts", "experiment", "tasks.parquet"}
    stored = pd.concat([pq.read_table(p).to_pandas() for p in sorted((folder / "experiment").rglob("*.parquet"))])
    assert len(stored) == 16 and set(stored["variant"]) == {"a", "b"}
    assert {"task_key", "task_id", "repeat", "exact_match", "exact_match_error"} <= set(stored.columns)

    again = Experiment(
        arithmetic(), {"a": counted, "b": constant("0")}, [nbagent.exact_match()], repeats=2, output=folder,
        progress=None,
    )  # fmt: skip
    again.run_sync()
    assert len(counted.built) == 8  # nothing already committed ran again
    assert again.batch is not None and again.batch.progress().skipped == 16
    assert_frame_equal(again.results, first)
    assert len(again.trace.runs_df()) == 16  # the trace: every session of the folder


def test_a_stopped_run_keeps_what_ended_and_the_next_runs_the_rest_once(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    counted = Counted(latency=0.05)
    tasks = arithmetic(12)

    async def stop_midway() -> Experiment:
        exp = Experiment(tasks, {"a": counted}, [nbagent.exact_match()], output=folder, concurrency=2, progress=None)
        running = asyncio.ensure_future(exp.run())
        while exp.batch is not None and exp.batch.progress().ok < 4:
            await asyncio.sleep(0.01)
        exp.stop()
        await running
        return exp

    stopped = asyncio.run(stop_midway())
    results = stopped.results
    done = int((results["status"] == "ok").sum())
    assert 4 <= done < 12
    assert results.loc[results["status"] == "ok", "exact_match"].all()
    assert (results.loc[results["status"] != "ok", "exact_match"].isna()).all()
    built = len(counted.built)

    resumed = Experiment(tasks, {"a": counted}, [nbagent.exact_match()], output=folder, progress=None).run_sync()
    final = resumed.results
    assert (final["status"] == "ok").all() and final["exact_match"].all()
    assert len(counted.built) - built == 12 - done  # each task not done ran once more; none done ran again
    ok_runs = final["run_id"].tolist()
    assert final.loc[results["status"] == "ok", "run_id"].tolist() == [
        r for r, s in zip(ok_runs, results["status"]) if s == "ok"
    ]


def test_load_experiment_gives_the_same_results_and_summary_offline(tmp_path: Path) -> None:
    folder = tmp_path / "exp"

    def length(output: str, row: dict[str, Any]) -> float:
        return float(len(output))

    exp = Experiment(
        arithmetic(6), {"right": right, "tools": tool_variant}, [nbagent.exact_match(), length], repeats=2,
        output=folder, progress=None,
    )  # fmt: skip
    exp.run_sync()
    loaded = load_experiment(folder)
    assert_frame_equal(loaded.results, exp.results)
    assert_frame_equal(loaded.summary(), exp.summary())
    compared, again = exp.compare("right", "tools"), loaded.compare("right", "tools")
    assert list(again.stats.index) == ["exact_match", "length", "tokens", "latency_s"]
    assert_frame_equal(again.stats, compared.stats)  # the scores of the folder, not of scorers
    assert_frame_equal(again.frame, compared.frame)
    assert list(loaded.variants) == ["right", "tools"] and loaded.variants["right"] is None
    assert loaded.batch is None
    run_id = str(loaded.results["run_id"].iloc[0])
    assert loaded.trace.run(run_id).runs_df()["run_id"].astype(str).tolist() == [run_id]
    with pytest.raises(RuntimeError, match="no agents to run"):
        loaded.run_sync()


def test_load_experiment_of_a_folder_that_is_none() -> None:
    with pytest.raises(TypeError, match="load_experiment: folder must be a str or pathlib.Path"):
        load_experiment(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="folder must be the output folder of an Experiment"):
        load_experiment(Path(__file__).parent)


def test_another_experiment_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    Experiment(arithmetic(2), {"a": right}, output=folder, progress=None).run_sync()
    with pytest.raises(ValueError, match="output must be a new folder, or one of an experiment of the same tasks"):
        Experiment(arithmetic(3), {"a": right}, output=folder, progress=None)
    with pytest.raises(ValueError, match="same tasks .* and repeats"):
        Experiment(arithmetic(2), {"a": right}, output=folder, repeats=2, progress=None)
    # another variant over the same tasks joins the folder: both are in the loaded experiment
    Experiment(arithmetic(2), {"b": constant("0")}, output=folder, progress=None).run_sync()
    assert load_experiment(folder).results["variant"].tolist() == ["a", "a", "b", "b"]


def test_rescore_adds_and_replaces_a_score_without_calling_a_model(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    counted = Counted()
    exp = Experiment(arithmetic(4), {"right": counted, "zero": constant("0")}, [nbagent.exact_match()], output=folder,
                     progress=None)  # fmt: skip
    exp.run_sync()
    runs = len(exp.trace.runs_df())

    def has_digit(output: str, row: dict[str, Any]) -> bool:
        return any(ch.isdigit() for ch in output)

    def tools_used(run: Any) -> float:
        return float(len(run.tool_calls_df()))

    results = exp.rescore(has_digit)
    assert results["has_digit"].all() and results["has_digit"].dtype == "boolean"
    assert (folder / "rescored" / "has_digit.parquet").is_file()
    # replace exact_match by a stricter one of the same name: its column is replaced, not added
    strict = nbagent.exact_match(field="task_id", name="exact_match")
    results = exp.rescore(strict)
    assert list(results.columns).count("exact_match") == 1 and not results["exact_match"].any()

    loaded = load_experiment(folder)
    assert_frame_equal(loaded.results, results)
    again = loaded.rescore(tools_used, variants=["zero"])
    assert again.loc[again["variant"] == "zero", "tools_used"].tolist() == [0.0] * 4
    assert again.loc[again["variant"] == "right", "tools_used"].isna().all()
    assert "tools_used" in load_experiment(folder).results.columns
    assert len(counted.built) == 4 and len(exp.trace.runs_df()) == runs  # no agent built, no run made

    # in memory too
    memory = Experiment(arithmetic(2), {"right": right}, [nbagent.exact_match()], progress=None).run_sync()
    assert memory.rescore(has_digit)["has_digit"].tolist() == [True, True]
    assert "has_digit" in memory.scorers


def test_rescore_with_a_scorer_that_raises_records_it_and_writes_nothing_half(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    exp = Experiment(arithmetic(3), {"right": right}, output=folder, progress=None).run_sync()

    def odd(output: str, row: dict[str, Any]) -> bool:
        if row["task_id"] == "t1":
            raise ValueError("t1 is odd")
        return True

    results = exp.rescore(odd)
    assert results["odd"].isna().tolist() == [False, True, False]
    assert results["odd_error"].tolist()[1] == "ValueError: t1 is odd"
    assert [p.name for p in (folder / "rescored").iterdir()] == ["odd.parquet"]  # no file left aside


def test_rescoring_one_variant_then_another_keeps_both(tmp_path: Path) -> None:
    folder = tmp_path / "exp"
    exp = Experiment(arithmetic(2), {"a": right, "b": constant("0")}, output=folder, progress=None).run_sync()

    def short(output: str, row: dict[str, Any]) -> bool:
        return len(output) < 2

    exp.rescore(short, variants=["a"])
    results = exp.rescore(short, variants=["b"])
    assert results["short"].tolist() == [True, True, True, True]
    assert_frame_equal(load_experiment(folder).results, results)


def test_the_explorer_shows_an_experiments_variant_as_a_column_and_a_filter(tmp_path: Path) -> None:
    from nbagent.notebook.explorer import RunExplorer, table_html

    folder = tmp_path / "exp"
    Experiment(arithmetic(3), {"right": right, "zero": constant("0")}, output=folder, progress=None).run_sync()
    explorer = nbagent.explore(folder)
    assert isinstance(explorer, RunExplorer)
    assert explorer.table.choices("variant") == ["right", "zero"]
    page = explorer.page()
    assert list(page.columns).index("variant") == list(page.columns).index("agent") + 1
    assert 'data-column="variant"' in str(table_html(page))
    explorer.filter(variant="zero").sort_by("variant")
    kept = explorer.selection
    assert len(kept) == 3 and set(kept["variant"]) == {"zero"}
    namespace: dict[str, object] = {"trace": explorer.trace}
    exec(explorer.code, namespace)  # noqa: S102 the code the explorer gives to paste
    assert namespace["selection"]["run_id"].tolist() == kept["run_id"].tolist()  # type: ignore[index]
    widget = explorer.widget()
    assert widget.variant.options == ("right", "zero") and widget.variant.layout.display is None
    widget.variant.value = ("right",)
    assert set(explorer.selection["variant"]) == {"right"}


def test_the_explorer_of_a_dataset_of_no_experiment_has_no_variant(tmp_path: Path) -> None:
    batch = nbagent.Batch(right, arithmetic(2), output=tmp_path / "batch", progress=None).run_sync()
    explorer = nbagent.explore(tmp_path / "batch")
    assert "variant" not in explorer.page().columns and batch.state == "done"
    assert explorer.table.choices("variant") == []
    assert explorer.widget().variant.layout.display == "none"
    with pytest.raises(ValueError, match="sort must be one of"):
        explorer.sort_by("variant")


@pytest.mark.subprocess
@pytest.mark.timeout(300)
def test_an_experiment_killed_mid_run_resumes_running_each_missing_task_once(tmp_path: Path) -> None:
    import os
    import signal
    import subprocess
    import sys
    import time

    from nbagent.trace import committed_files
    from tests.experiment.kill_experiment import TASKS

    root = tmp_path / "exp"
    repo = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(repo / "src"), str(repo)])}
    child = subprocess.Popen([sys.executable, "-m", "tests.experiment.kill_experiment", str(root)], cwd=repo, env=env)
    try:
        deadline = time.monotonic() + 240
        while not root.exists() or len(committed_files(root, "experiment")) < 2:  # two parts committed
            assert child.poll() is None, "the experiment ended before it was killed"
            assert time.monotonic() < deadline, "no part committed in time"
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=60)
    assert child.returncode == -signal.SIGKILL

    counted = Counted()
    exp = Experiment(arithmetic(TASKS), {"a": counted}, [nbagent.exact_match()], output=root, progress=None)
    # opening the folder finished or removed what the kill left half written: what is done now is kept
    done = int((load_experiment(root).results["status"] == "ok").sum())
    assert 8 <= done < TASKS
    exp.run_sync()
    assert len(counted.built) == TASKS - done  # each task not committed ran once; none committed ran again
    results = exp.results
    assert (results["status"] == "ok").all() and results["exact_match"].all()
    stored = pd.concat([pq.read_table(p).to_pandas() for p in committed_files(root, "experiment")])
    ok = stored[stored["status"] == "ok"]
    assert ok["task_key"].is_unique and len(ok) == TASKS  # one ok run per task in the dataset
