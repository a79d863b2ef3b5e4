"""Paired statistics of two variants scored on the same tasks, written with the standard library and numpy.

Two variants run over the same tasks give *pairs* of scores (task by task), so their difference is
judged on the pairs, not on two independent means:

- :func:`mcnemar_exact`: pass/fail scores. Only the discordant pairs tell the variants apart (``a``
  passed and ``b`` failed, or the other way); under "no difference" each is either way with probability
  1/2, so the two-sided p-value is the exact binomial test of the discordant counts against 1/2
  (``scipy.stats.binomtest(a_only, a_only + b_only)``).
- :func:`wilcoxon_signed_rank`: numeric scores, the p-value :func:`paired` reports. Zero deltas are
  dropped (Wilcoxon's method); the p-value is exact for up to 50 pairs without ties or zeros, made from
  every sign flip of the ranks for up to 13 pairs with them, else the normal approximation with the tie
  correction and no continuity correction: ``scipy.stats.wilcoxon``'s defaults. It assumes no normal
  distribution, which scores bounded in 0..1 seldom have.
- :func:`paired_t`: the paired t-test (``scipy.stats.ttest_rel``), reported beside it.
- :func:`bootstrap_ci`: a percentile bootstrap confidence interval of the mean delta (fixed seed).

When every pair agrees (no discordant pair, every delta 0) there is no evidence of a difference: the
p-value is 1.0 (scipy refuses or gives NaN there). A t-test needs two pairs and deltas that vary (NaN
otherwise; deltas all equal and not 0 give ``t = ±inf``, p 0.0).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal

from .. import _check as check

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Floats = npt.NDArray[np.float64]

__all__ = [
    "PairedStats",
    "TestResult",
    "bootstrap_ci",
    "mcnemar_exact",
    "paired",
    "paired_t",
    "pass_at_k",
    "pass_hat_k",
    "wilcoxon_signed_rank",
    "wilson_ci",
]

Kind = Literal["pass/fail", "number"]
_EXACT_MAX = 50  # Wilcoxon: the exact distribution up to this many pairs (without ties or zeros)
_FLIPS_MAX = 13  # Wilcoxon with ties or zeros: every sign flip up to this many pairs (2**13 of them)
_MULTINOMIAL_MAX = 256  # bootstrap: deltas with at most this many distinct values are resampled as counts


@dataclass(frozen=True)
class TestResult:
    """A test's statistic and two-sided p-value."""

    statistic: float
    p_value: float


def mcnemar_exact(a_only: int, b_only: int) -> float:
    """The two-sided p-value of McNemar's exact test: ``a_only`` pairs where only ``a`` passed, ``b_only``
    where only ``b`` did (the binomial test of ``a_only`` of ``a_only + b_only`` against 1/2). No
    discordant pair: 1.0."""
    where = "mcnemar_exact"
    a = int(check.integer(where, "a_only", a_only, minimum=0) or 0)
    b = int(check.integer(where, "b_only", b_only, minimum=0) or 0)
    n, low = a + b, min(a, b)
    if n == 0 or a == b:
        return 1.0
    term, tail = 1, 0  # the binomial coefficients C(n, k), exact integers
    for k in range(low + 1):
        tail += term
        term = term * (n - k) // (k + 1)
    return min(1.0, float(2 * tail / 2**n))  # an int over an int: a correctly rounded float, whatever n


def paired_t(deltas: Sequence[float] | Floats) -> TestResult:
    """The paired t-test of ``deltas`` (``b - a`` per pair) against a mean of 0, two-sided, ``n - 1``
    degrees of freedom. Fewer than two deltas: NaN; deltas all equal: ``t = ±inf`` (p 0.0) or, all 0, NaN."""
    import numpy as np

    values = np.asarray(deltas, dtype=np.float64)
    n = len(values)
    if n < 2:
        return TestResult(math.nan, math.nan)
    mean = float(values.mean())
    sd = float(values.std(ddof=1))
    if sd == 0.0 or not math.isfinite(sd):
        if mean == 0.0:
            return TestResult(math.nan, math.nan)
        return TestResult(math.copysign(math.inf, mean), 0.0)
    t = mean / (sd / math.sqrt(n))
    df = n - 1
    return TestResult(t, _betainc(df / 2, 0.5, df / (df + t * t)))  # P(|T| >= |t|) of Student's t


def wilcoxon_signed_rank(deltas: Sequence[float] | Floats) -> TestResult:
    """The Wilcoxon signed-rank test of ``deltas`` (two-sided; see the module's text for the method).
    The statistic is the smaller of the sums of the ranks of the positive and the negative deltas. No
    delta: NaN; no delta other than 0: statistic 0, p-value 1.0."""
    import numpy as np

    values = np.asarray(deltas, dtype=np.float64)
    if not len(values):
        return TestResult(math.nan, math.nan)
    nonzero = values[values != 0]
    n = len(nonzero)
    if n == 0:
        return TestResult(0.0, 1.0)
    ranks, tie_sizes = _midranks(np.abs(nonzero))
    r_plus = float(ranks[nonzero > 0].sum())
    r_minus = float(ranks[nonzero < 0].sum())
    statistic = min(r_plus, r_minus)
    ties = bool((tie_sizes > 1).any())
    if not ties and n == len(values) and n <= _EXACT_MAX:
        counts = _rank_sum_counts(n)  # how many sign patterns give each rank sum 0..n(n+1)/2
        total = 2**n
        below = sum(counts[: math.ceil(r_plus) + 1])  # P(T <= r_plus), as a count of sign patterns
        above = sum(counts[math.floor(r_plus) :])  # P(T >= r_plus)
        return TestResult(statistic, min(1.0, 2 * min(below, above) / total))
    if len(values) <= _FLIPS_MAX:  # every sign flip of the ranks: the exact null distribution with ties
        signs = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
        sums = signs @ ranks
        gamma = max(abs(r_plus), 1.0) * 1e-14  # rank sums equal up to rounding count as equal
        share_below = float(np.mean(sums <= r_plus + gamma))
        share_above = float(np.mean(sums >= r_plus - gamma))
        return TestResult(statistic, min(1.0, 2 * min(share_below, share_above)))
    mean = n * (n + 1) / 4
    variance = (n * (n + 1) * (2 * n + 1) - float((tie_sizes**3 - tie_sizes).sum()) / 2) / 24
    z = (r_plus - mean) / math.sqrt(variance)
    return TestResult(statistic, min(1.0, math.erfc(abs(z) / math.sqrt(2))))


def bootstrap_ci(
    deltas: Sequence[float] | Floats, *, confidence: float = 0.95, resamples: int = 2000, seed: int | None = 0
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``deltas``: ``resamples`` resamples with
    replacement drawn from ``numpy.random.default_rng(seed)`` (the same ``seed``, the same interval). No
    delta: NaN, NaN."""
    import numpy as np

    where = "bootstrap_ci"
    level = float(check.number(where, "confidence", confidence) or 0.0)
    if not 0 < level < 1:
        raise check.wrong_value(where, "confidence", "a number between 0 and 1 (0.95: a 95% interval)", confidence)
    count = int(check.integer(where, "resamples", resamples, minimum=1) or 1)
    check.integer(where, "seed", seed, minimum=0, none=True)
    values = np.asarray(deltas, dtype=np.float64)
    n = len(values)
    if n == 0:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    distinct, counts = np.unique(values, return_counts=True)
    if len(distinct) <= _MULTINOMIAL_MAX:  # a resample is how many of each value it draws: O(distinct)
        drawn = rng.multinomial(n, counts / n, size=count)
        means = drawn @ distinct / n
    else:
        means = np.empty(count)
        chunk = max(1, 2**22 // n)  # at most ~4 million draws in memory at once
        for start in range(0, count, chunk):
            rows = min(chunk, count - start)
            drawn = rng.integers(0, n, size=(rows, n), dtype=np.int32 if n < 2**31 else np.int64)
            means[start : start + rows] = np.take(values, drawn).sum(axis=1) / n
    tail = (1 - level) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


@dataclass(frozen=True)
class PairedStats:
    """The paired statistics of one score over the pairs (or tasks) of two variants ``a`` and ``b``.

    ``delta`` is ``b - a``. ``n`` pairs had both scores, ``missing`` had one or none (left out). For a
    pass/fail score ``a_only``/``b_only`` count the discordant pairs and ``test`` is McNemar's exact test;
    for a number ``test`` is the Wilcoxon signed-rank test, and ``t_statistic``/``t_p_value`` the paired
    t-test's.
    """

    score: str
    kind: Kind
    n: int
    missing: int
    mean_a: float
    mean_b: float
    mean_delta: float
    ci_low: float
    ci_high: float
    confidence: float
    test: str
    statistic: float
    p_value: float
    a_only: int | None = None
    b_only: int | None = None
    t_statistic: float = math.nan
    t_p_value: float = math.nan

    def row(self) -> dict[str, Any]:
        """The fields as a dict (a row of a comparison's ``stats``)."""
        return asdict(self)


def paired(
    score: str,
    a: Sequence[float | None] | Floats,
    b: Sequence[float | None] | Floats,
    *,
    kind: Kind,
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int | None = 0,
) -> PairedStats:
    """The paired statistics of ``score``: ``a[i]`` and ``b[i]`` the two variants' scores of pair ``i``
    (``None``, ``pd.NA`` or NaN: missing, that pair is left out and counted). ``kind="pass/fail"``: scores are 0/1
    (or bools) and the p-value is McNemar's exact test's; ``"number"``: the Wilcoxon signed-rank test's."""
    import numpy as np

    where = "paired"
    check.choice(where, "kind", kind, ("pass/fail", "number"))
    left, right = _scores(a), _scores(b)
    if left.shape != right.shape:
        raise check.wrong_value(where, "b", f"as many scores as a ({len(left)})", f"{len(right)} scores")
    both = ~(np.isnan(left) | np.isnan(right))
    left, right = left[both], right[both]
    deltas = right - left
    n = len(deltas)
    low, high = bootstrap_ci(deltas, confidence=confidence, resamples=resamples, seed=seed)
    common: dict[str, Any] = {
        "score": score,
        "kind": kind,
        "n": n,
        "missing": int((~both).sum()),
        "mean_a": float(left.mean()) if n else math.nan,
        "mean_b": float(right.mean()) if n else math.nan,
        "mean_delta": float(deltas.mean()) if n else math.nan,
        "ci_low": low,
        "ci_high": high,
        "confidence": float(confidence),
    }
    if kind == "pass/fail":
        a_only = int(((left != 0) & (right == 0)).sum())
        b_only = int(((left == 0) & (right != 0)).sum())
        p = mcnemar_exact(a_only, b_only) if n else math.nan
        statistic = float(min(a_only, b_only))
        return PairedStats(**common, test="McNemar exact", statistic=statistic, p_value=p, a_only=a_only, b_only=b_only)
    wilcoxon = wilcoxon_signed_rank(deltas)
    t = paired_t(deltas)
    return PairedStats(
        **common,
        test="Wilcoxon signed-rank",
        statistic=wilcoxon.statistic,
        p_value=wilcoxon.p_value,
        t_statistic=t.statistic,
        t_p_value=t.p_value,
    )


def _scores(values: Sequence[float | None] | Floats) -> Floats:
    """Scores as floats, missing ones (``None``, ``pd.NA``, NaN) NaN; bools count 1 and 0."""
    import numpy as np
    import pandas as pd

    floats: Floats = pd.array(values, dtype="Float64").to_numpy(dtype=np.float64, na_value=np.nan)
    return floats


def _midranks(values: Floats) -> tuple[Floats, Floats]:
    """The ranks of ``values`` from 1 (ties get the mean of their ranks) and the size of each group of ties."""
    import numpy as np

    order = np.argsort(values, kind="stable")
    ordered = values[order]
    starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
    sizes = np.diff(np.r_[starts, len(values)])
    group_rank = starts + (sizes + 1) / 2  # the mean of ranks start+1 .. start+size
    ranks = np.empty(len(values))
    ranks[order] = np.repeat(group_rank, sizes)
    return ranks, sizes.astype(np.float64)


def _rank_sum_counts(n: int) -> list[int]:
    """For each total 0..n(n+1)/2: how many of the 2**n subsets of the ranks 1..n sum to it."""
    counts = [1] + [0] * (n * (n + 1) // 2)
    top = 0
    for rank in range(1, n + 1):
        top += rank
        for total in range(top, rank - 1, -1):
            counts[total] += counts[total - rank]
    return counts


def _betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its continued fraction (Lentz's method)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1) / (a + b + 2):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (converges fast for x < (a+1)/(a+b+2))."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    fraction = d
    for m in range(1, 10_000):
        for numerator in (
            m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
            -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            fraction *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return fraction


def wilson_ci(successes: int, n: int, *, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson's score interval of a proportion: ``successes`` of ``n`` trials (no trial: NaN, NaN); what
    ``statsmodels.stats.proportion.proportion_confint(method="wilson")`` gives."""
    from statistics import NormalDist

    level = float(check.number("wilson_ci", "confidence", confidence) or 0.0)
    if not 0 < level < 1:
        raise check.wrong_value(
            "wilson_ci", "confidence", "a number between 0 and 1 (0.95: a 95% interval)", confidence
        )
    if n <= 0:
        return math.nan, math.nan
    z = NormalDist().inv_cdf((1 + level) / 2)
    p = successes / n
    scale = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / scale
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / scale
    return max(0.0, centre - half), min(1.0, centre + half)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The unbiased estimate of pass@k from ``n`` runs of a task, ``c`` of which passed: the chance that
    at least one of ``k`` runs drawn without replacement passes, ``1 - C(n-c, k) / C(n, k)``."""
    if not 0 < k <= n:
        raise check.wrong_value("pass_at_k", "k", f"an int from 1 to n ({n})", k)
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """pass^k from ``n`` runs of a task, ``c`` of which passed: the chance that ``k`` runs drawn without
    replacement all pass, ``C(c, k) / C(n, k)`` (how reliably the agent passes, where pass@k is whether
    it can)."""
    if not 0 < k <= n:
        raise check.wrong_value("pass_hat_k", "k", f"an int from 1 to n ({n})", k)
    return math.comb(c, k) / math.comb(n, k)
