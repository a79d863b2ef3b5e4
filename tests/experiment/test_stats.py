"""The paired statistics (nbagent.experiment.stats) against scipy's, and their edge cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from nbagent.experiment.stats import (
    bootstrap_ci,
    mcnemar_exact,
    paired,
    paired_t,
    wilcoxon_signed_rank,
)


@pytest.mark.parametrize(
    ("a_only", "b_only"),
    [(1, 0), (0, 1), (3, 7), (7, 3), (5, 5), (0, 12), (40, 61), (17, 2), (1000, 1100), (3000, 3333)],
)
def test_mcnemar_exact_is_the_binomial_test_of_the_discordant_pairs(a_only: int, b_only: int, scipy_stats: Any) -> None:
    expected = scipy_stats.binomtest(a_only, a_only + b_only, 0.5).pvalue
    assert mcnemar_exact(a_only, b_only) == pytest.approx(expected, rel=1e-9, abs=1e-300)


def test_mcnemar_without_discordant_pairs_is_one() -> None:
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_refuses_a_negative_count_naming_it() -> None:
    with pytest.raises(ValueError, match="b_only"):
        mcnemar_exact(1, -1)


def _samples() -> list[np.ndarray]:
    rng = np.random.default_rng(7)
    return [
        rng.normal(0.1, 1.0, 8),
        rng.normal(0.3, 1.0, 30),
        rng.normal(0.0, 0.2, 200),
        rng.normal(-0.05, 0.3, 10_000),
        np.array([0.5, -0.25, 1.0, 2.0, -3.0]),
    ]


@pytest.mark.parametrize("index", range(5))
def test_paired_t_matches_ttest_rel(index: int, scipy_stats: Any) -> None:
    deltas = _samples()[index]
    expected = scipy_stats.ttest_rel(deltas, np.zeros_like(deltas))
    got = paired_t(deltas)
    assert got.statistic == pytest.approx(expected.statistic, rel=1e-10)
    assert got.p_value == pytest.approx(expected.pvalue, rel=1e-8, abs=1e-300)


def _wilcoxon_cases() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    return [
        rng.normal(0.2, 1.0, 12),  # exact, no ties
        rng.normal(0.4, 1.0, 50),  # exact up to 50
        rng.normal(0.1, 1.0, 51),  # normal approximation from 51
        rng.normal(0.0, 1.0, 3000),
        np.array([1.0, 1.0, -2.0, 0.0, 3.0, 3.0, 3.0, -1.0]),  # ties and a zero, 8 pairs: every sign flip
        np.array([0.5, 0.5, -0.5, 1.0, 1.5, 0.0, 2.0, 0.5, -1.0, 1.0, 0.5, 2.5, 3.0]),  # 13 with ties
        rng.choice([-1.0, 0.0, 1.0, 0.5], 40),  # ties past 13: the approximation with the tie correction
        np.array([1.0, 0.0, 0.0]),  # zeros, one nonzero
        np.array([2.0]),
    ]


@pytest.mark.parametrize("index", range(9))
def test_wilcoxon_matches_scipy(index: int, scipy_stats: Any) -> None:
    deltas = _wilcoxon_cases()[index]
    expected = scipy_stats.wilcoxon(deltas)
    got = wilcoxon_signed_rank(deltas)
    assert got.statistic == pytest.approx(expected.statistic, rel=1e-12)
    assert got.p_value == pytest.approx(expected.pvalue, rel=1e-9)


def test_all_deltas_zero_is_no_evidence() -> None:
    zeros = np.zeros(20)
    assert wilcoxon_signed_rank(zeros).p_value == 1.0
    assert math.isnan(paired_t(zeros).p_value)
    assert bootstrap_ci(zeros) == (0.0, 0.0)
    result = paired("f1", [0.5] * 20, [0.5] * 20, kind="number")
    assert (result.mean_delta, result.p_value, result.n) == (0.0, 1.0, 20)


def test_equal_nonzero_deltas_give_an_infinite_t() -> None:
    got = paired_t([0.5, 0.5, 0.5])
    assert got.statistic == math.inf
    assert got.p_value == 0.0


def test_one_pair() -> None:
    one = paired("ok", [False], [True], kind="pass/fail")
    assert (one.n, one.a_only, one.b_only, one.p_value, one.mean_delta) == (1, 0, 1, 1.0, 1.0)
    assert (one.ci_low, one.ci_high) == (1.0, 1.0)
    number = paired("f1", [0.2], [0.7], kind="number")
    assert number.p_value == 1.0  # scipy.stats.wilcoxon([0.5]).pvalue
    assert math.isnan(number.t_p_value)
    assert number.mean_delta == pytest.approx(0.5)


def test_missing_scores_are_left_out_and_counted() -> None:
    a = [1.0, None, 0.0, 1.0, math.nan, 0.0, 1.0]
    b = [1.0, 1.0, 1.0, 0.0, 0.0, None, 1.0]
    result = paired("exact", a, b, kind="pass/fail")
    assert (result.n, result.missing) == (4, 3)
    assert (result.a_only, result.b_only) == (1, 1)
    assert result.mean_a == pytest.approx(0.75)
    assert result.mean_delta == 0.0
    assert result.p_value == 1.0
    nothing = paired("exact", [None, None], [1.0, None], kind="pass/fail")
    assert (nothing.n, nothing.missing) == (0, 2)
    assert math.isnan(nothing.p_value) and math.isnan(nothing.ci_low)


def test_pass_fail_uses_mcnemar_on_the_discordant_pairs(scipy_stats: Any) -> None:
    rng = np.random.default_rng(3)
    a = rng.random(300) < 0.6
    b = rng.random(300) < 0.7
    result = paired("correct", list(a), list(b), kind="pass/fail")
    a_only, b_only = int((a & ~b).sum()), int((~a & b).sum())
    assert (result.a_only, result.b_only) == (a_only, b_only)
    assert result.p_value == pytest.approx(scipy_stats.binomtest(a_only, a_only + b_only).pvalue, rel=1e-9)
    assert result.mean_delta == pytest.approx(b.mean() - a.mean())
    assert result.test == "McNemar exact"


def test_numbers_use_wilcoxon_and_report_the_t_test(scipy_stats: Any) -> None:
    rng = np.random.default_rng(5)
    a = rng.random(80)
    b = np.clip(a + rng.normal(0.05, 0.1, 80), 0, 1)
    result = paired("f1", a, b, kind="number")
    assert result.test == "Wilcoxon signed-rank"
    assert result.p_value == pytest.approx(scipy_stats.wilcoxon(b - a).pvalue, rel=1e-9)
    assert result.t_p_value == pytest.approx(scipy_stats.ttest_rel(b, a).pvalue, rel=1e-8)


@pytest.mark.parametrize("values", [np.r_[np.ones(30), np.zeros(50), -np.ones(20)], np.linspace(-1, 2, 500)])
def test_bootstrap_is_seeded_and_near_scipys_percentile_interval(values: np.ndarray, scipy_stats: Any) -> None:
    mine = bootstrap_ci(values, confidence=0.9, resamples=4000, seed=1)
    assert bootstrap_ci(values, confidence=0.9, resamples=4000, seed=1) == mine
    assert bootstrap_ci(values, confidence=0.9, resamples=4000, seed=2) != mine
    theirs = scipy_stats.bootstrap(
        (values,), np.mean, confidence_level=0.9, n_resamples=4000, method="percentile", random_state=1
    ).confidence_interval
    width = theirs.high - theirs.low
    assert mine[0] == pytest.approx(theirs.low, abs=0.1 * width)  # two samplers: the same interval within noise
    assert mine[1] == pytest.approx(theirs.high, abs=0.1 * width)
    assert mine[0] < values.mean() < mine[1]


def test_bootstrap_checks_its_parameters_by_name() -> None:
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_ci([1.0], confidence=95)
    with pytest.raises(ValueError, match="resamples"):
        bootstrap_ci([1.0], resamples=0)
    with pytest.raises(ValueError, match="kind"):
        paired("x", [1.0], [1.0], kind="ratio")  # type: ignore[arg-type]
