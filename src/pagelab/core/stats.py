"""Summary statistics with confidence intervals, seeded so every number can be reproduced.

Not for: model fits (fit.py) or verdicts on claims.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pagelab.core import _lazy

# scipy.stats (about 0.7 s of imports) loads at the first bootstrap or test: the medians'
# order-statistic intervals need none of it (median_rank), so a trial process, which looks at them
# to stop, and most commands start without it
_st = _lazy("scipy.stats")


@dataclass(frozen=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float
    n: int
    method: str
    coverage: float = float("nan")  # the interval's exact coverage where it is known
    censored: int = 0  # of the n values, how many were censored (censored_median_ci)

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2

    @property
    def label(self) -> str:
        """The interval's name by its coverage, "93.75 % CI" (coverage_label)."""
        return f"{coverage_label(self.coverage)} CI"


# A censored value's place in the order of the measured ones: a criterion already met when the
# clock started lies below every measured value, one never met within the watch above them.
AT_START, OVER_WATCH = -math.inf, math.inf


def coverage_label(coverage: float, latex: bool = False) -> str:
    """The name of an interval by its exact coverage, as the text, tables and captions give
    it: 0.9375 -> "93.75 %", 0.96875 -> "96.88 %" (LaTeX: "93.75\\,\\%"); "?" where the
    coverage is unknown."""
    if coverage != coverage:
        return "?"
    return f"{100 * coverage:.2f}".rstrip("0").rstrip(".") + ("\\,\\%" if latex else " %")


def interval_name(ns: Sequence[int], level: float = 0.95, latex: bool = False) -> str:
    """The order-statistic intervals of medians of `ns` values, named by their coverage from
    the one function that computes them (median_rank): "93.75 % (n = 5)", or "93.75 % (n = 5),
    96.88 % (n = 6)" for several n."""
    ns = sorted({int(n) for n in ns if int(n) >= 2})
    return ", ".join(f"{coverage_label(median_rank(n, level)[1], latex)} (n = {n})" for n in ns) or "none"


def ci_label(ns: Sequence[float], level: float = 0.95, latex: bool = False) -> str:
    """A legend's or a heading's name for the order-statistic intervals of medians of `ns`
    values (interval_name): "93.75 % CI, n = 5" for one n, "CI 93.75 % (n = 5), 96.88 % (n = 6)"
    for several, "CI" where no n has an interval."""
    ns = sorted({int(n) for n in ns if n == n and int(n) >= 2})
    if len(ns) == 1:
        return f"{coverage_label(median_rank(ns[0], level)[1], latex)} CI, n = {ns[0]}"
    return f"CI {interval_name(ns, level, latex)}" if ns else "CI"


def coverages_label(coverages: Sequence[float], latex: bool = False) -> str:
    """The name of intervals by the exact coverages they carry (an Estimate's, a summary's
    `_coverage` column): "93.75 % CI", "93.75 %/96.88 % CI" for several, "CI" for none known."""
    labels = sorted({coverage_label(float(c), latex) for c in coverages if c == c})
    return "/".join(labels) + " CI" if labels else "CI"


def median_ci(values: Sequence[float] | np.ndarray, level: float = 0.95) -> Estimate:
    """The median with its distribution-free order-statistic CI [x(k), x(n-k+1)].

    The interval is the one scipy's `quantile_test(x, p=0.5).confidence_interval(level)` gives:
    the ranks k and n-k+1 whose interval covers the population median with probability >= `level`
    (binomial(n, 1/2)); the exact coverage of those ranks is returned beside it (median_rank),
    computed here in integers, so that a trial process, which looks at its intervals to stop,
    starts without scipy.stats.
    Where even [min, max] covers less than `level` (n < 6 at level 0.95: 0.9375 at n = 5, 0.5 at n = 2),
    scipy has no interval (NaN); this one is then [min, max] with the coverage it has, so that
    few trials give a visibly weak interval rather than none.
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = x.size
    if n == 0:
        raise ValueError("no values")
    point = float(np.median(x))
    if n == 1:
        return Estimate(point, point, point, 1, "order statistics", 0.0)
    k, coverage = median_rank(n, level)   # k = 1, [min, max], where no rank reaches `level`
    return Estimate(point, float(x[k - 1]), float(x[n - k]), int(n), "order statistics", coverage)


def censored_median_ci(values: Sequence[float] | np.ndarray, level: float = 0.95) -> Estimate:
    """The median of values some of which are censored, with median_ci's order-statistic interval.

    A value is measured (finite), AT_START (met before the clock started: below every measured
    value), OVER_WATCH (not met within the watch: above every one), or NaN (censored where its
    place in the order is unknown: left out of the interval). The median and the interval are
    order statistics, so they stay exact while they fall on measured values; where one falls on
    a censored value it is that value (-inf, +inf: the reader shows "at the start", "> watch").
    `censored` counts every non-finite value; `n` counts them all, `coverage` is of the placed
    ones. A measurement whose median is censored (median_censored) is not measurable (the judge)."""
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values")
    censored = int((~np.isfinite(x)).sum())
    placed = np.sort(x[~np.isnan(x)])
    m = placed.size
    if m == 0:
        return Estimate(math.nan, math.nan, math.nan, int(x.size), "order statistics, censored", math.nan, censored)
    with np.errstate(invalid="ignore"):
        point = float(placed[m // 2]) if m % 2 else float((placed[m // 2 - 1] + placed[m // 2]) / 2)
    if m == 1:
        return Estimate(point, point, point, int(x.size), "order statistics, censored", 0.0, censored)
    k, coverage = median_rank(m, level)
    return Estimate(point, float(placed[k - 1]), float(placed[m - k]), int(x.size), "order statistics, censored",
                    coverage, censored)


def median_censored(censored: int, n: int) -> bool:
    """Whether the median of n values of which `censored` are censored is itself censored: with
    half or more censored, a middle value (one of the two for an even n) is a censored one, so
    the median is a bound or has no place, not a number. Every reader of a censored median
    (the judge, the sequential rule, the tables and the text) asks this one question."""
    return n > 0 and 2 * censored >= n


def censored_ratio(a: float, b: float) -> float:
    """One round's ratio a / b of two possibly censored values (censored_median_ci's coding):
    measured over measured; AT_START over measured lies below every measured ratio (AT_START);
    measured over AT_START above every one (OVER_WATCH); any other censored pair, or a
    denominator of 0, has no place in the order (NaN)."""
    fa, fb = math.isfinite(a), math.isfinite(b)
    if fa and fb:
        return a / b if b > 0 else math.nan
    if a == AT_START and fb and b > 0:
        return AT_START
    if b == AT_START and fa and a > 0:
        return OVER_WATCH
    return math.nan


@functools.lru_cache(maxsize=256)
def median_rank(n: int, level: float = 0.95) -> tuple[int, float]:
    """For median_ci of n >= 2 values: the rank k of its interval [x(k), x(n-k+1)] (the
    largest whose coverage is still >= `level`, else 1: [min, max]) and that coverage.

    P(x(k) <= m <= x(n-k+1)) = 1 - 2 P(Bin(n, 1/2) <= k-1), summed exactly in integers and
    compared with `level` as the exact value of its float."""
    num, den = float(level).as_integer_ratio()   # the exact value of the float
    whole = 2 ** n
    term, below = 1, 0          # C(n, k-1), and the sum of C(n, i) for i <= k-1
    best_k, best_below = 1, 1   # [min, max]: below = C(n, 0)
    for k in range(1, n // 2 + 1):
        below += term
        if (whole - 2 * below) * den < num * whole:   # coverage (whole - 2 below) / whole < level
            break
        best_k, best_below = k, below
        term = term * (n - k + 1) // k
    return best_k, (whole - 2 * best_below) / whole


def paired_ratio_ci(a: Sequence[float] | np.ndarray, b: Sequence[float] | np.ndarray,
                    level: float = 0.95) -> Estimate:
    """The median of the per-round ratios a[i] / b[i] with median_ci's interval: for arms run
    interleaved, round i of one against round i of the other (so drifts of the machine cancel)."""
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if x.size != y.size:
        raise ValueError(f"paired ratio needs as many values of each arm ({x.size} != {y.size})")
    if x.size == 0:
        raise ValueError("no values")
    if np.any(y == 0):
        raise ValueError("paired ratio: a denominator is 0")
    est = median_ci(x / y, level)
    return Estimate(est.value, est.ci_low, est.ci_high, est.n, "paired ratio, order statistics", est.coverage)


def ratio_ci(
    a: Sequence[float] | np.ndarray,
    b: Sequence[float] | np.ndarray,
    statistic: Callable[..., float] = np.median,  # a numpy reduction that takes axis=
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Estimate:
    """statistic(a) / statistic(b) with scipy's bootstrap CI, resampling a and b independently
    (percentile method: BCa's jackknife is not defined across two samples of any sizes).

    A resample whose denominator's statistic is 0 gives an infinite ratio, and the interval then
    reaches infinity: the data cannot bound the ratio (a denominator sample with zeros)."""
    x = np.asarray(a, dtype=float)
    y = np.asarray(b, dtype=float)
    if x.size == 0 or y.size == 0:
        raise ValueError("no values")

    def ratio(xs: np.ndarray, ys: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.asarray(statistic(xs, axis=axis), dtype=float) / np.asarray(statistic(ys, axis=axis), dtype=float)

    with np.errstate(divide="ignore", invalid="ignore"), warnings.catch_warnings():
        # all resamples equal (identical trials): the interval is that one value, said quietly
        warnings.simplefilter("ignore", _st.DegenerateDataWarning)
        point = float(ratio(x, y))
        res = _st.bootstrap((x, y), ratio, vectorized=True, paired=False, confidence_level=level,
                            n_resamples=n_resamples, method="percentile", rng=np.random.default_rng(seed))
    ci = res.confidence_interval
    # the percentile interval's coverage is its nominal level (no exact one for a bootstrap)
    return Estimate(point, float(ci.low), float(ci.high), int(x.size + y.size), "percentile", level)


@dataclass(frozen=True)
class Test:
    name: str
    statistic: float
    p: float


def mann_whitney(a: Sequence[float], b: Sequence[float]) -> Test:
    """Two-sided Mann-Whitney U (exact for small samples without ties, as scipy chooses)."""
    res = _st.mannwhitneyu(a, b, alternative="two-sided")
    return Test("mann-whitney", float(res.statistic), float(res.pvalue))


def welch(a: Sequence[float], b: Sequence[float]) -> Test:
    """Welch's unequal-variance t-test, two-sided."""
    res = _st.ttest_ind(a, b, equal_var=False)
    return Test("welch", float(res.statistic), float(res.pvalue))


def holm(pvalues: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1), in input order:
    statsmodels' multipletests(method="holm")."""
    # statsmodels costs 0.3 s at import (python -X importtime) beyond scipy: only Holm needs it
    from statsmodels.stats.multitest import multipletests

    p = np.asarray(pvalues, dtype=float)
    if p.size == 0:
        return []
    return [float(v) for v in multipletests(p, method="holm")[1]]


def tukey_outliers(values: Sequence[float], k: float = 1.5) -> list[str]:
    """Tukey's labels per value: "" inside the fences, "mild" beyond k*IQR, "severe" beyond
    2k*IQR. Labels only: nothing is removed."""
    x = np.asarray(values, float)
    q1, q3 = np.percentile(x, [25, 75])
    iqr = q3 - q1
    labels = []
    for v in x:
        dist = max(q1 - v, v - q3, 0.0)
        labels.append("severe" if dist > 2 * k * iqr else "mild" if dist > k * iqr else "")
    return labels


@dataclass(frozen=True)
class Change:
    """The verdict on b against a (the baseline), Criterion-style."""

    ratio: Estimate  # median(b) / median(a)
    test: Test
    verdict: str  # "lower", "higher" or "no change"


def compare(a: Sequence[float], b: Sequence[float], alpha: float = 0.05, noise: float = 0.02,
            seed: int = 0, p_adjusted: float | None = None, level: float = 0.95) -> Change:
    """A change is claimed only when the test rejects at `alpha` (using `p_adjusted` when a
    family correction was applied) AND the whole CI of the ratio (ratio_ci's percentile
    bootstrap at the nominal `level`) lies outside 1 +- noise."""
    r = ratio_ci(b, a, level=level, seed=seed)
    t = mann_whitney(a, b)
    p = t.p if p_adjusted is None else p_adjusted
    if p < alpha and r.ci_high < 1 - noise:
        verdict = "lower"
    elif p < alpha and r.ci_low > 1 + noise:
        verdict = "higher"
    else:
        verdict = "no change"
    return Change(r, t, verdict)
