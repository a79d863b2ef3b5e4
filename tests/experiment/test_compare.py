"""compare_variants on real runs: two variants through one real Batch (replay models) over the same tasks."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from nbagent.experiment.compare import PARTINGS, compare_variants, parting_of
from nbagent.trace.compare import Comparison, MoveView, moves_of, moves_of_runs

from ..frames import assert_frame_equal
from .pairs import PARTS, PairedRuns, make_agent, run_pairs, weather_tasks


@pytest.fixture(scope="module")
def runs() -> PairedRuns:
    return run_pairs(weather_tasks(12))


@pytest.fixture(scope="module")
def repeated() -> PairedRuns:
    return run_pairs(weather_tasks(6), repeats=3)


def test_one_row_per_task_with_both_sides_and_deltas(runs: PairedRuns) -> None:
    comparison = compare_variants(runs, "a", "b")
    frame = comparison.frame
    assert frame["task_id"].tolist() == [f"t{i}" for i in range(12)]
    assert frame["task"].tolist() == runs.tasks["task"].tolist()
    results = runs.results.set_index(["variant", "task_id"])
    for row in frame.itertuples():
        a, b = results.loc[("a", row.task_id)], results.loc[("b", row.task_id)]
        assert row.correct_a == float(a["correct"]) and row.correct_b == float(b["correct"])
        assert row.correct_delta == float(b["correct"]) - float(a["correct"])
        assert row.tokens_delta == b["tokens"] - a["tokens"]
        assert row.latency_s_delta == pytest.approx(b["latency_s"] - a["latency_s"])
        assert (row.run_id_a, row.run_id_b) == (a["run_id"], b["run_id"])
    assert frame["correct_delta"].dtype == "Float64"
    assert frame["parted_at"].dtype == "Int64"


def test_where_each_pair_parts_is_what_the_variants_did(runs: PairedRuns) -> None:
    frame = compare_variants(runs, "a", "b").frame.set_index("task_id")
    for task_id, expected in PARTS.items():
        assert frame.loc[task_id, "parting"] == expected, task_id
    same = [t for t in frame.index if t not in PARTS]
    assert (frame.loc[same, "parting"] == "never").all()
    assert frame.loc[same, "parted_at"].isna().all()
    assert frame.loc["t4", "parting_move"] == "tool_execution"
    assert frame.loc["t1", "parting_move"] == "reflect"


def test_the_parting_is_the_full_comparisons_first_divergence(runs: PairedRuns) -> None:
    comparison = compare_variants(runs, "a", "b")
    for row in comparison.frame.itertuples():
        full = comparison.runs(row.task_id)
        assert isinstance(full, Comparison)
        expected = full.first_divergence
        assert (None if pd.isna(row.parted_at) else int(row.parted_at)) == expected, row.task_id
        if expected is not None:
            left, right = moves_of(*full.left), moves_of(*full.right)
            found = parting_of(left, right)
            assert found is not None and found[2] == row.parting


def test_moves_in_bulk_are_the_moves_run_by_run(runs: PairedRuns) -> None:
    run_ids = runs.results["run_id"].tolist()
    bulk = moves_of_runs(runs.trace, run_ids)
    for run_id in run_ids:
        one = moves_of(runs.trace, run_id)
        assert [(m.key, m.events, m.tool_calls, m.tokens, m.seconds) for m in bulk[run_id]] == [
            (m.key, m.events, m.tool_calls, m.tokens, m.seconds) for m in one
        ]
        assert all(m.context == [] for m in bulk[run_id])


def test_parting_counts_over_the_dataset(runs: PairedRuns) -> None:
    parting = compare_variants(runs, "a", "b").parting
    assert list(parting.index) == list(PARTINGS)
    assert parting.loc["tool_choice", "pairs"] == 2
    assert parting.loc["llm_answer", "pairs"] == 1
    assert parting.loc["never", "pairs"] == 12 - len(PARTS)
    assert parting["pairs"].sum() == 12
    assert parting["share"].sum() == pytest.approx(1.0)


def test_stats_per_score_checked_against_scipy(runs: PairedRuns, scipy_stats: Any) -> None:
    comparison = compare_variants(runs, "a", "b", seed=3)
    stats = comparison.stats
    assert list(stats.index) == ["correct", "brevity", "tokens", "latency_s"]
    correct = stats.loc["correct"]
    assert correct["test"] == "McNemar exact"
    assert (correct["a_only"], correct["b_only"]) == (3, 0)  # t1, t3 and t5 fail with b
    assert correct["p_value"] == pytest.approx(scipy_stats.binomtest(0, 3).pvalue)
    assert correct["mean_delta"] == pytest.approx(-3 / 12)
    assert correct["ci_low"] <= correct["mean_delta"] <= correct["ci_high"]
    frame = comparison.frame
    brevity = stats.loc["brevity"]
    deltas = (frame["brevity_b"] - frame["brevity_a"]).astype(float)
    assert brevity["test"] == "Wilcoxon signed-rank"
    assert brevity["p_value"] == pytest.approx(scipy_stats.wilcoxon(deltas).pvalue)
    assert brevity["t_p_value"] == pytest.approx(
        scipy_stats.ttest_rel(frame["brevity_b"].astype(float), frame["brevity_a"].astype(float)).pvalue
    )
    again = compare_variants(runs, "a", "b", seed=3).stats
    assert_frame_equal(again, stats)


def test_repeats_pair_repeat_r_with_repeat_r(repeated: PairedRuns) -> None:
    comparison = compare_variants(repeated, "a", "b")
    pairs = comparison.pairs
    assert len(pairs) == 18
    assert pairs.groupby("task_id")["repeat"].apply(list).tolist() == [[0, 1, 2]] * 6
    results = repeated.results.set_index(["variant", "task_id", "repeat"])
    for row in pairs.itertuples():
        assert row.run_id_a == results.loc[("a", row.task_id, row.repeat), "run_id"]
        assert row.run_id_b == results.loc[("b", row.task_id, row.repeat), "run_id"]
    frame = comparison.frame
    assert len(frame) == 6 and (frame["pairs"] == 3).all()
    assert frame.set_index("task_id").loc["t1", "correct_b"] == 0.0  # the pass rate over its 3 repeats
    assert frame.set_index("task_id").loc["t1", "parting"] == "llm_answer"
    correct = comparison.stats.loc["correct"]
    assert correct["kind"] == "pass/fail"
    assert correct["test"] == "Wilcoxon signed-rank"  # per-task pass rates: the tasks are the units
    assert correct["n"] == 6
    assert comparison.parting["pairs"].sum() == 18


def test_a_missing_score_is_left_out_and_counted(runs: PairedRuns) -> None:
    results = runs.results.copy()
    results.loc[(results["variant"] == "b") & (results["task_id"] == "t0"), "correct"] = pd.NA
    broken = PairedRuns(results, runs.trace, runs.tasks, runs.scorers)
    stats = compare_variants(broken, "a", "b").stats
    assert (stats.loc["correct", "n"], stats.loc["correct", "missing"]) == (11, 1)


def test_a_task_one_variant_lacks(runs: PairedRuns) -> None:
    results = runs.results[~((runs.results["variant"] == "b") & (runs.results["task_id"] == "t7"))]
    comparison = compare_variants(PairedRuns(results, runs.trace, runs.tasks, runs.scorers), "a", "b")
    row = comparison.frame.set_index("task_id").loc["t7"]
    assert pd.isna(row["correct_b"]) and pd.isna(row["parting"])
    assert comparison.stats.loc["correct", "missing"] == 1
    assert comparison.parting["pairs"].sum() == 11
    with pytest.raises(ValueError, match="task_id"):
        comparison.runs("t7")


def test_unknown_variant_names_the_parameter(runs: PairedRuns) -> None:
    with pytest.raises(ValueError, match=r"\bb\b.*'c'") as info:
        compare_variants(runs, "a", "c")
    assert "'a', 'b'" in str(info.value)
    with pytest.raises(ValueError, match=r"\ba\b"):
        compare_variants(runs, "x", "b")
    with pytest.raises(ValueError, match="other than a"):
        compare_variants(runs, "a", "a")
    with pytest.raises(TypeError, match=r"\bb\b"):
        compare_variants(runs, "a", 2)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match=r"compare.*confidence"):
        compare_variants(runs, "a", "b", confidence=95)
    with pytest.raises(ValueError, match=r"compare.*resamples"):
        compare_variants(runs, "a", "b", resamples=0)
    with pytest.raises(TypeError, match=r"compare.*seed"):
        compare_variants(runs, "a", "b", seed="x")  # type: ignore[arg-type]
    comparison = compare_variants(runs, "a", "b")
    with pytest.raises(ValueError, match="task_id"):
        comparison.runs("nope")
    with pytest.raises(ValueError, match="repeat"):
        comparison.runs("t1", repeat=4)


async def test_walk_to_parting_stops_before_the_move_to_fork_at(runs: PairedRuns) -> None:
    comparison = compare_variants(runs, "a", "b")
    stepper = await comparison.walk_to_parting("t2")  # b asked for another city: the model call that did
    assert stepper.upcoming is not None and stepper.upcoming.name == "call_llm"
    fork = await stepper.fork()
    fork.give_answer("Lima: sunny.")
    await fork.run_to_end()
    assert fork.response is not None and fork.response.chat_message.content == "Lima: sunny."
    at_tool = await comparison.walk_to_parting("t4")  # b's tool answered otherwise: before the tools run
    assert at_tool.upcoming is not None and at_tool.upcoming.name == "tool_execution"
    answered = await comparison.walk_to_parting("t1", side="a")  # the answers differ: before a's reflection
    assert answered.upcoming is not None and answered.upcoming.name == "reflect"
    assert len(answered.history) == int(comparison.frame.set_index("task_id").loc["t1", "parted_at"]) - 1
    walked = await comparison.walk_to_parting("t0")  # never parts: walked to its end
    assert walked.done
    with pytest.raises(ValueError, match="side"):
        await comparison.walk_to_parting("t2", side="c")


def _moves(*specs: tuple[str, list[tuple[str, str]], list[tuple[str, str, str, bool]]]) -> list[MoveView]:
    return [
        MoveView(index, name, None, None, list(events), list(calls))
        for index, (name, events, calls) in enumerate(specs, 1)
    ]


def test_what_differs_where_runs_part() -> None:
    start = [("add_messages", [], []), ("message_id", [], []), ("call_llm", [], [])]
    ask = ("tool_request", [("ToolCallRequestEvent", "lookup(Oslo)")], [])
    ran = ("tool_execution", [], [("lookup", '{"city": "Oslo"}', "sunny", False)])
    answer = ("text_exit", [("Response", "It is sunny.")], [])
    whole = _moves(*start, ask, ran, answer)
    assert parting_of(whole, _moves(*start, ask, ran, answer)) is None
    ended = parting_of(whole, _moves(*start, ask, ran))
    assert ended is not None and (ended[0], ended[2]) == (6, "run_end")
    failed = ("tool_execution", [], [("lookup", '{"city": "Oslo"}', "boom", True)])
    assert parting_of(whole, _moves(*start, ask, failed, answer))[2] == "tool_result"  # type: ignore[index]
    memory = _moves(("add_messages", [], []), ("memory", [("MemoryQueryEvent", "x")], []), *start[1:], ask, ran, answer)
    other = _moves(("add_messages", [], []), ("memory", [("MemoryQueryEvent", "y")], []), *start[1:], ask, ran, answer)
    assert parting_of(memory, other)[2] == "other"  # type: ignore[index]
    said = ("text_exit", [("Response", "It rains.")], [])
    assert parting_of(whole, _moves(*start, ask, ran, said))[2] == "llm_answer"  # type: ignore[index]
    assert parting_of(whole, _moves(*start, said))[2] == "tool_choice"  # answered where the other called a tool


async def test_the_comparisons_coroutines_never_awaited_say_the_fix(runs: PairedRuns) -> None:
    """Issue 43.6: the experiment's coroutine entry points follow the one "forgotten await" rule."""
    from nbagent import Experiment
    from nbagent.notebook.experiment_view import ComparisonView

    from ..core.test_clear_interrupts import assert_each_warns_once_at_its_line

    comparison = compare_variants(runs, "a", "b")
    view = ComparisonView(comparison)
    view.pick("t2")
    trace, run_id = runs.trace, str(runs.results["run_id"].iloc[0])
    exp = Experiment(weather_tasks(1), {"a": make_agent}, progress=None)
    assert_each_warns_once_at_its_line(
        {
            "comparison.walk_to_parting(task_id)": lambda: comparison.walk_to_parting("t2"),
            "comparison.score_run(trace, run_id, task_id)": lambda: comparison.score_run(trace, run_id, "t0"),
            "comparison.fork_at_parting()": view.fork_at_parting,
            "comparison.score_walks()": view.score_walks,
            "exp.arescore(scorer)": lambda: exp.arescore(lambda output, row: True),
        }
    )
    assert view.walk is None  # fork_at_parting never ran
