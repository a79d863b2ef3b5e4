"""Experiment: variants x tasks x repeats through one Batch, scored as each run ends; results and summary."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import nbagent
from nbagent import AssistantAgent, Experiment, ReplayChatCompletionClient
from nbagent.experiment import STATUSES, scorer
from tests.experiment.helpers import arithmetic, constant, right, tool_variant

from ..frames import assert_frame_equal

COLUMNS_HEAD = ["variant", "task_id", "repeat", "run_id", "status"]
COLUMNS_TAIL = ["tokens", "latency_s", "tool_calls", "tool_errors", "error"]


def experiment(**options: Any) -> Experiment:
    options.setdefault("progress", None)
    options.setdefault("scorers", [nbagent.exact_match()])
    return Experiment(arithmetic(), {"right": right, "zero": constant("0")}, **options)


def test_results_one_row_per_variant_task_repeat_in_order_with_real_dtypes() -> None:
    exp = experiment(repeats=2).run_sync()
    results = exp.results
    assert list(results.columns) == [*COLUMNS_HEAD, "exact_match", "exact_match_error", *COLUMNS_TAIL]
    assert len(results) == 2 * 4 * 2
    assert results["variant"].tolist() == ["right"] * 8 + ["zero"] * 8
    assert results["task_id"].tolist()[:4] == ["t0", "t0", "t1", "t1"]
    assert results["repeat"].tolist()[:4] == [0, 1, 0, 1]
    dtypes = results.dtypes.astype(str).to_dict()
    assert dtypes == {
        "variant": "category",
        "task_id": "string",
        "repeat": "Int64",
        "run_id": "string",
        "status": "category",
        "exact_match": "boolean",
        "exact_match_error": "string",
        "tokens": "Int64",
        "latency_s": "float64",
        "tool_calls": "Int64",
        "tool_errors": "Int64",
        "error": "string",
    }
    assert list(results["variant"].cat.categories) == ["right", "zero"]
    assert list(results["status"].cat.categories) == list(STATUSES)
    assert (results["status"] == "ok").all()
    # right is right on every task; zero only on t0 (expected "0")
    assert results.loc[results["variant"] == "right", "exact_match"].all()
    zero = results[results["variant"] == "zero"]
    assert zero["exact_match"].tolist() == [True, True] + [False] * 6
    assert results["run_id"].is_unique
    assert (results["tokens"] > 0).all() and (results["latency_s"] > 0).all()


def test_every_run_is_in_the_trace_and_the_batch_ran_them_all() -> None:
    exp = experiment().run_sync()
    runs = exp.trace.runs_df()
    assert set(runs["run_id"].astype(str)) == set(exp.results["run_id"].astype(str))
    assert exp.batch is not None and exp.batch.progress().ok == 8
    run_id = str(exp.results["run_id"].iloc[0])
    assert exp.trace.run(run_id).runs_df()["run_id"].astype(str).tolist() == [run_id]


def test_a_variant_agent_is_copied_for_each_run_and_a_function_gets_the_task_row() -> None:
    seen: list[dict[str, Any]] = []

    def make(row: dict[str, Any]) -> AssistantAgent:
        seen.append(dict(row))
        return right(row)

    template = constant("0")
    exp = Experiment(arithmetic(2), {"made": make, "copied": template}, [], repeats=2, progress=None).run_sync()
    assert sorted(r["task_id"] for r in seen) == ["t0", "t0", "t1", "t1"]
    assert set(seen[0]) == {"task_id", "task", "expected"}
    assert template.model_context.messages == []  # the template never ran: copies did
    assert (exp.results["status"] == "ok").all()


def test_a_tool_error_is_a_status_and_counted() -> None:
    exp = Experiment(arithmetic(2), {"tools": tool_variant}, [nbagent.exact_match()], progress=None).run_sync()
    results = exp.results
    assert results["status"].tolist() == ["tool_error", "tool_error"]
    assert results["tool_calls"].tolist() == [1, 1]
    assert results["tool_errors"].tolist() == [1, 1]
    assert results["exact_match"].tolist() == [True, True]  # it answered: scored


def test_a_failed_run_is_a_row_not_scored_and_the_experiment_goes_on() -> None:
    def failing(row: dict[str, Any]) -> AssistantAgent:
        if row["task_id"] == "t1":
            raise RuntimeError("cannot build")
        return right(row)

    exp = Experiment(arithmetic(3), {"v": failing}, [nbagent.exact_match()], progress=None).run_sync()
    results = exp.results
    assert results["status"].tolist() == ["ok", "error", "ok"]
    assert "cannot build" in str(results["error"].iloc[1])
    assert results["exact_match"].isna().tolist() == [False, True, False]
    assert pd.isna(results["exact_match_error"].iloc[1])  # not scored, not a scorer's error


def _crashing(row: dict[str, Any]) -> AssistantAgent:
    """Right on every task but t0 and t1, where building the agent fails (status error)."""
    if row["task_id"] in ("t0", "t1"):
        raise RuntimeError("cannot build")
    return right(row)


def test_a_variant_that_crashes_more_looks_worse_a_failed_run_counting_as_a_fail() -> None:
    def score(output: str, row: dict[str, Any]) -> float:  # a number: a failed run has none
        return 1.0

    exp = Experiment(
        arithmetic(4), {"right": right, "crashing": _crashing}, [nbagent.exact_match(), score], progress=None
    ).run_sync()
    assert exp.results["status"].tolist() == ["ok"] * 4 + ["error", "error", "ok", "ok"]
    summary = exp.summary()  # default failed="fail": the two crashes are fails of the pass/fail score
    assert summary.loc["crashing", "exact_match_n"] == 4 and summary.loc["crashing", "exact_match_mean"] == 0.5
    assert summary.loc["crashing", "exact_match_pass@1"] == 0.5
    assert summary.loc["crashing", "score_n"] == 2  # a number score has no value for a failed run
    assert summary.attrs["failed"].startswith("a run that failed (error, timeout) counts as a fail")
    left_out = exp.summary(failed="missing")  # the runs that failed left out: it looks as good as right
    assert left_out.loc["crashing", "exact_match_n"] == 2 and left_out.loc["crashing", "exact_match_mean"] == 1.0
    assert "left out" in left_out.attrs["failed"]
    stats = exp.compare("right", "crashing").stats.loc["exact_match"]
    assert (stats["n"], stats["missing"], stats["mean_delta"], stats["a_only"], stats["b_only"]) == (4, 0, -0.5, 2, 0)
    stats = exp.compare("right", "crashing", failed="missing").stats.loc["exact_match"]
    assert (stats["n"], stats["missing"], stats["mean_delta"]) == (2, 2, 0.0)
    # the rule is stated wherever the figures are shown
    comparison = exp.compare("right", "crashing")
    assert "counts as a fail of each pass/fail score" in comparison.text()
    assert "counts as a fail of each pass/fail score" in comparison.html()
    bundle = exp._repr_mimebundle_()
    assert all("counts as a fail of each pass/fail score" in bundle[kind] for kind in ("text/html", "text/plain"))
    with pytest.raises(ValueError, match="Experiment.summary: failed must be one of 'fail', 'missing'"):
        exp.summary(failed="skip")
    with pytest.raises(ValueError, match="compare: failed must be one of 'fail', 'missing'"):
        exp.compare("right", "crashing", failed="skip")


def test_a_scorer_that_raises_is_that_runs_score_error_and_the_others_are_scored() -> None:
    def picky(output: str, row: dict[str, Any]) -> bool:
        if row["task_id"] == "t2":
            raise ValueError("cannot judge t2")
        return True

    exp = experiment(scorers=[picky, nbagent.exact_match()]).run_sync()
    results = exp.results
    t2 = results[results["task_id"] == "t2"]
    assert t2["picky"].isna().all()
    assert t2["picky_error"].tolist() == ["ValueError: cannot judge t2"] * 2
    assert t2["exact_match"].notna().all()  # the other scorer of the same run is kept
    others = results[results["task_id"] != "t2"]
    assert others["picky"].all() and others["picky_error"].isna().all()


def test_scorer_kinds_numbers_async_and_trajectory() -> None:
    def length(output: str, row: dict[str, Any]) -> float:
        return len(output)

    async def later(output: str, row: dict[str, Any]) -> bool:
        return output == row["expected"]

    def calls(run: Any) -> int:
        return len(run.tool_calls_df())

    def steps(output: str, run: Any) -> float:
        return float(len(run.llm_calls_df()))

    def crash(output: str, row: dict[str, Any]) -> bool:
        return bool(1 / 0)

    exp = Experiment(
        arithmetic(3), {"tools": tool_variant}, [length, later, calls, steps, scorer(crash, name="c")], progress=None
    ).run_sync()
    results = exp.results
    assert results["length"].dtype == "float64" and results["length"].tolist() == [1.0, 1.0, 1.0]
    assert results["later"].dtype == "boolean" and results["later"].all()
    assert results["calls"].tolist() == [1.0, 1.0, 1.0]
    assert results["steps"].tolist() == [2.0, 2.0, 2.0]  # the tool call, then the reflection
    assert results["c_error"].tolist() == ["ZeroDivisionError: division by zero"] * 3
    assert set(exp.scorers) == {"length", "later", "calls", "steps", "c"}
    with pytest.raises(ValueError, match="fn must be a function of"):
        scorer(len)  # one parameter, not named output, row or run: refused when made, not at each run


def test_summary_means_intervals_pass_at_k_and_real_dtypes() -> None:
    exp = experiment(repeats=3).run_sync()
    summary = exp.summary()
    assert list(summary.index) == ["right", "zero"]
    right_row, zero = summary.loc["right"], summary.loc["zero"]
    assert right_row["runs"] == 12 and right_row["ok"] == 12
    assert right_row["exact_match_mean"] == 1.0
    assert zero["exact_match_mean"] == pytest.approx(0.25)
    low, high = zero["exact_match_low"], zero["exact_match_high"]
    assert 0 < low < 0.25 < high < 1
    # every repeat agrees: pass@3 = pass^3 = the share of tasks passed
    assert zero["exact_match_pass@3"] == pytest.approx(0.25)
    assert zero["exact_match_pass^3"] == pytest.approx(0.25)
    assert summary["runs"].dtype == "Int64" and summary["exact_match_mean"].dtype == "float64"
    assert "Wilson" in summary.attrs["intervals"]["pass/fail"]
    assert summary.loc["right", "tokens_mean"] > 0 and summary.loc["right", "latency_s_p95"] > 0


def test_summary_pass_at_k_is_the_unbiased_estimator_over_repeats() -> None:
    answers = iter(["0", "wrong", "wrong", "wrong"])  # task t0 passes 1 of 4 repeats

    def flaky(row: dict[str, Any]) -> AssistantAgent:
        return AssistantAgent("flaky", ReplayChatCompletionClient([next(answers)]))

    exp = Experiment(
        arithmetic(1), {"flaky": flaky}, [nbagent.exact_match()], repeats=4, concurrency=1, progress=None
    ).run_sync()
    summary = exp.summary(k=2)
    # n=4, c=1, k=2: pass@2 = 1 - C(3,2)/C(4,2) = 0.5; pass^2 = C(1,2)/C(4,2) = 0
    assert summary.loc["flaky", "exact_match_pass@2"] == pytest.approx(1 - math.comb(3, 2) / math.comb(4, 2))
    assert summary.loc["flaky", "exact_match_pass^2"] == 0.0
    with pytest.raises(ValueError, match="k"):
        exp.summary(k=5)


def test_a_second_run_runs_nothing_already_done(tmp_path: Path) -> None:
    built: list[str] = []

    def counted(row: dict[str, Any]) -> AssistantAgent:
        built.append(str(row["task_id"]))
        return right(row)

    exp = Experiment(arithmetic(), {"v": counted}, [nbagent.exact_match()], progress=None)
    exp.run_sync()
    first = exp.results
    exp.run_sync()
    assert len(built) == 4
    assert_frame_equal(exp.results, first)


def test_results_before_any_run_are_cancelled_rows() -> None:
    results = experiment().results
    assert len(results) == 8
    assert (results["status"] == "cancelled").all()
    assert results["run_id"].isna().all()


# ---------------------------------------------------------------------- bad input


@pytest.mark.parametrize(
    ("tasks", "error", "text"),
    [
        (["a", "b"], TypeError, "tasks must be a pandas DataFrame"),
        (pd.DataFrame({"task": ["a"]}), ValueError, "without task_id"),
        (pd.DataFrame({"task_id": ["a"]}), ValueError, "without task "),
        (pd.DataFrame({"task_id": ["a", "a"], "task": ["x", "y"]}), ValueError, "task_id repeated: 'a'"),
        (pd.DataFrame({"task_id": ["a", None], "task": ["x", "y"]}), ValueError, "null task_id"),
    ],
)
def test_bad_tasks(tasks: object, error: type[Exception], text: str) -> None:
    with pytest.raises(error, match=text):
        Experiment(tasks, {"v": right})  # type: ignore[arg-type]


def test_bad_variants_repeats_and_scorers() -> None:
    tasks = arithmetic(1)
    with pytest.raises(ValueError, match="variants must be a dict of at least one variant"):
        Experiment(tasks, {})
    with pytest.raises(TypeError, match=r"variants\['v'\] must be an AssistantAgent or a function"):
        Experiment(tasks, {"v": "gpt-4o"})  # type: ignore[dict-item]
    with pytest.raises(TypeError, match="variants must be a dict"):
        Experiment(tasks, [right])  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="without '/'"):
        Experiment(tasks, {"a/b": right})
    with pytest.raises(ValueError, match="repeats must be an int greater than or equal to 1"):
        Experiment(tasks, {"v": right}, repeats=0)
    with pytest.raises(TypeError, match=r"scorers\[0\] must be a scorer"):
        Experiment(tasks, {"v": right}, ["exact"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match=r"scorers\[1\] must be a scorer of a name no other scorer has"):
        Experiment(tasks, {"v": right}, [nbagent.exact_match(), nbagent.exact_match()])
    with pytest.raises(ValueError, match="named neither a results column"):
        Experiment(tasks, {"v": right}, [scorer(lambda output, row: True, name="status")])
    with pytest.raises(ValueError, match="no name"):
        Experiment(tasks, {"v": right}, [lambda output, row: True])
    with pytest.raises(TypeError, match="scorers must be a list of scorers"):
        Experiment(tasks, {"v": right}, nbagent.exact_match())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="output must be a folder"):
        Experiment(tasks, {"v": right}, output=3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="k must be an int from 1 to 1"):
        Experiment(tasks, {"v": right}, progress=None).summary(k=2)
    with pytest.raises(ValueError, match="confidence must be a number between 0 and 1"):
        Experiment(tasks, {"v": right}, progress=None).summary(confidence=95)


def test_an_unknown_variant_name_in_rescore() -> None:
    exp = experiment().run_sync()
    with pytest.raises(ValueError, match=r"variants must be names of variants among 'right', 'zero'"):
        exp.rescore(nbagent.contains(), variants=["rigth"])


def test_progress_per_variant_in_the_snapshots_the_text_bar_and_the_widgets_html(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from nbagent.batch import GroupProgress
    from nbagent.notebook.batch_view import progress_html

    def failing(row: dict[str, Any]) -> AssistantAgent:
        raise RuntimeError("no agent")

    seen: list[nbagent.BatchProgress] = []
    variants = {"right": right, "<i>bad": failing}
    Experiment(arithmetic(3), variants, progress=seen.append, repeats=2).run_sync()
    last = seen[-1]
    assert last.groups == (GroupProgress("right", 6, 6, 6, 0), GroupProgress("<i>bad", 6, 6, 0, 6))
    assert last.line().endswith("· right 6/6 · <i>bad 6/6 (6 failed)")
    html = str(progress_html(last, live=False))
    assert 'data-group="right"' in html and "&lt;i&gt;bad" in html and "<i>bad" not in html

    Experiment(arithmetic(2), {"right": right, "zero": constant("0")}, progress="text").run_sync()
    err = capsys.readouterr().err
    assert "right 2/2" in err and "zero 2/2" in err


def test_a_batch_group_must_be_a_column() -> None:
    with pytest.raises(ValueError, match="group must be a column of the tasks DataFrame"):
        nbagent.Batch(right, arithmetic(2), group="variant", progress=None)
    with pytest.raises(ValueError, match="group must be a column of the tasks DataFrame"):
        nbagent.Batch(right, ["a", "b"], group="variant", progress=None)
