import math
import re

import numpy as np
import pytest

from pagelab.core.stats import (
    AT_START,
    OVER_WATCH,
    censored_median_ci,
    censored_ratio,
    ci_label,
    compare,
    coverage_label,
    coverages_label,
    holm,
    interval_name,
    mann_whitney,
    median_censored,
    median_ci,
    median_rank,
    ratio_ci,
    tukey_outliers,
    welch,
)


def test_median_ci_covers_on_simulated_data():
    """The order-statistic 95 % CI of the median of skewed (exponential) samples of 30 holds the
    true median (2 ln 2 for scale 2) at least ~95 % of the time: it is exact, its coverage is
    binomial (0.957 at n = 30), so 400 simulations land within 0.93-0.98."""
    rng = np.random.default_rng(0)
    n, truth = 400, 2 * np.log(2)
    hits = sum(e.ci_low <= truth <= e.ci_high for e in (median_ci(rng.exponential(2.0, 30)) for _ in range(n)))
    assert median_ci(np.arange(30.0)).coverage == pytest.approx(0.957, abs=0.001)
    assert 0.93 <= hits / n <= 0.985, hits / n


def test_ratio_ci_covers_on_simulated_data():
    """The bootstrap CI of a ratio of medians (compare's) holds the true ratio ~95 % of the time
    (percentile bootstrap of two normal samples of 20: 0.90-0.99 over 200 simulations)."""
    rng = np.random.default_rng(4)
    n = 200
    hits = sum(e.ci_low <= 2.0 <= e.ci_high
               for e in (ratio_ci(rng.normal(200, 20, 20), rng.normal(100, 10, 20), seed=i, n_resamples=2000)
                         for i in range(n)))
    assert 0.90 <= hits / n <= 0.99, hits / n


def test_ratio_ci_known_ratio():
    rng = np.random.default_rng(2)
    a = rng.normal(200, 5, 40)
    b = rng.normal(100, 2.5, 40)
    r = ratio_ci(a, b, seed=1)
    assert r.ci_low < 2.0 < r.ci_high and r.ci_high - r.ci_low < 0.15


def test_tests_against_known_answers():
    # Completely separated samples of 5 and 5: exact two-sided p = 2 / C(10, 5) = 2/252.
    mw = mann_whitney([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])
    assert mw.p == pytest.approx(2 / 252)
    assert mw.statistic == 0
    w = welch([1, 2, 3, 4, 5], [1, 2, 3, 4, 5])
    assert w.p == pytest.approx(1.0) and w.statistic == pytest.approx(0.0)


def test_holm_known_answers():
    # sorted 0.005, 0.01, 0.03, 0.04, 0.5 times 5, 4, 3, 2, 1, made monotone, capped at 1
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    assert holm(p) == pytest.approx([0.04, 0.09, 0.09, 0.025, 0.5])
    assert holm([0.01, 0.02]) == pytest.approx([0.02, 0.02])
    assert holm([0.6, 0.7]) == pytest.approx([1.0, 1.0])
    assert holm([]) == []


def test_median_ci_is_scipys_quantile_test_interval_and_min_max_below_six():
    """From n = 6 (at 95 %) the interval is scipy's quantile_test(p=0.5).confidence_interval;
    below it scipy has none (NaN) and ours is [min, max] with its lower coverage. So at the other
    levels the code uses (the sequential rule's strict interim level among them), wherever the
    ranks reach the level."""
    from scipy.stats import quantile_test

    rng = np.random.default_rng(9)
    for n in range(2, 41):
        x = rng.lognormal(0, 1, n)
        est = median_ci(x)
        ci = quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(0.95)
        if n < 6:
            assert np.isnan(ci.low) and (est.ci_low, est.ci_high) == (x.min(), x.max()) and est.coverage < 0.95
        else:
            assert (est.ci_low, est.ci_high) == (ci.low, ci.high) and est.coverage >= 0.95
    for level in (0.8, 0.9, 0.99, 0.999):
        for n in [*range(2, 80), 101, 250, 499, 1000]:
            x = rng.normal(0, 1, n)
            est = median_ci(x, level)
            if est.coverage >= level:
                ci = quantile_test(x, q=float(np.median(x)), p=0.5).confidence_interval(level)
                assert (est.ci_low, est.ci_high) == (ci.low, ci.high), (level, n)


def test_median_rank_is_the_binomial_rank_scipy_gives():
    """median_rank sums binomial(n, 1/2) in integers; its rank and coverage are those of scipy's
    binom.cdf at every n to 600 and at the levels the code uses and around them."""
    from scipy.stats import binom

    for n in range(2, 601):
        ks = np.arange(1, n // 2 + 1)
        coverages = 1 - 2 * binom.cdf(ks - 1, n, 0.5)   # of [x(k), x(n-k+1)], decreasing in k
        for level in (0.5, 0.8, 0.9, 0.95, 0.975, 0.99, 0.999, 0.9999):
            reach = ks[coverages >= level]
            want_k = int(reach.max()) if reach.size else 1
            k, cov = median_rank(n, level)
            assert k == want_k and cov == pytest.approx(coverages[want_k - 1], abs=1e-12), (level, n, k, want_k)
    assert median_rank(5) == (1, 0.9375) and median_rank(6) == (1, 0.96875)


def test_a_median_interval_needs_no_scipy():
    """A trial process looks at its medians' intervals to stop: it does so without loading
    scipy.stats (about a second of imports a process here; pagelab registers it lazily, so only
    its code's modules show that it ran)."""
    import subprocess
    import sys

    code = ("import sys; from pagelab.core import stats; e = stats.median_ci(range(40));"
            "c = stats.censored_median_ci([1.0, 2, 3, float('inf')] * 5);"
            "print(e.ci_low, e.ci_high, 'scipy.stats._stats_py' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["13.0", "26.0", "False"], out.stdout + out.stderr


def test_ratio_ci_is_unbounded_when_the_denominator_can_be_zero():
    r = ratio_ci([1.0, 2, 3, 4, 5], [0.0, 0, 0, 1, 2], n_resamples=2000)
    assert np.isinf(r.value) and np.isinf(r.ci_high) and np.isfinite(r.ci_low)


def test_tukey_labels_not_removes():
    labels = tukey_outliers([10, 11, 12, 11, 10, 12, 11, 30, 100])
    assert labels[-1] == "severe" and labels[0] == "" and len(labels) == 9


def test_outliers_shows_the_labelled_trials_and_no_trials_as_they_are():
    import pandas as pd

    from pagelab.experiments import harness

    values = [10, 11, 12, 11, 10, 12, 11, 30, 100]
    frame = pd.DataFrame({"trial_id": range(9), "arm": "a", "s": values, "other": 0})
    shown = harness.outliers(frame, ["arm"], "s")
    assert list(shown.columns) == ["trial_id", "arm", "s", "tukey"]
    assert list(shown["trial_id"]) == [7, 8] and list(shown["tukey"])[-1] == "severe"
    empty = frame.iloc[:0]
    assert harness.outliers(empty, ["arm"], "s") is empty


def test_verdict_needs_both_significance_and_a_change_outside_the_noise_band():
    rng = np.random.default_rng(4)
    base = rng.normal(100, 1, 20)
    assert compare(base, rng.normal(80, 1, 20)).verdict == "lower"
    assert compare(base, rng.normal(120, 1, 20)).verdict == "higher"
    # Significant but tiny (0.5 %): inside a 2 % noise band -> no change claimed.
    tiny = compare(rng.normal(100, 0.1, 50), rng.normal(100.5, 0.1, 50))
    assert tiny.test.p < 0.05 and tiny.verdict == "no change"
    # Large but not significant after a family correction -> no change.
    assert compare(base, rng.normal(80, 1, 20), p_adjusted=0.2).verdict == "no change"


def test_censored_values_keep_their_place_in_the_order():
    """A value met at the start sorts below every measured one, one over the watch above them:
    the median and the interval stay order statistics, and a bound that lands on a censored
    value is that censoring (-inf, +inf), never a 0 or a NaN averaged in."""
    e = censored_median_ci([AT_START, 3.0, 1.0, 2.0, 5.0])
    assert (e.value, e.ci_low, e.ci_high, e.n, e.censored) == (2.0, AT_START, 5.0, 5, 1)
    e = censored_median_ci([OVER_WATCH, OVER_WATCH, OVER_WATCH, 1.0, 2.0])
    assert e.value == OVER_WATCH and e.censored == 3
    # a censored value with no known place is counted but left out of the interval
    e = censored_median_ci([float("nan"), 1.0, 2.0, 3.0])
    assert (e.value, e.n, e.censored) == (2.0, 4, 1) and e.coverage == median_rank(3)[1]
    assert censored_ratio(AT_START, 2.0) == AT_START and censored_ratio(2.0, AT_START) == OVER_WATCH
    assert censored_ratio(OVER_WATCH, 2.0) != censored_ratio(OVER_WATCH, 2.0)      # NaN: no certain place
    assert censored_ratio(3.0, 2.0) == 1.5 and censored_ratio(AT_START, AT_START) != 0


def test_a_median_is_censored_once_half_its_values_are():
    """With half or more of the values censored a middle value is a censored one: 5 of 10 at the
    start puts the median between a bound and the smallest measured value (-inf averaged in), so
    it is censored; 4 of 10, or 5 of 11, leave both middle values measured."""
    assert [median_censored(c, 10) for c in (4, 5, 6)] == [False, True, True]
    assert [median_censored(c, 11) for c in (5, 6)] == [False, True]
    assert not median_censored(0, 0) and median_censored(1, 1) and median_censored(1, 2)
    for n in range(1, 16):
        for c in range(n + 1):
            values = [AT_START] * c + [float(i + 1) for i in range(n - c)]
            assert median_censored(c, n) == (not math.isfinite(censored_median_ci(values).value)), (c, n)


def test_every_interval_label_is_computed_by_the_function_that_computes_the_interval():
    """The label names the coverage median_rank gives at that n, the same ranks median_ci uses:
    [min, max] at n = 5 is 93.75 %, never a nominal 95 %."""
    for n in range(2, 31):
        x = np.arange(float(n))
        e, (k, cov) = median_ci(x), median_rank(n)
        assert (e.ci_low, e.ci_high) == (x[k - 1], x[n - k]) and e.coverage == cov
        assert e.label == f"{coverage_label(cov)} CI"
        assert censored_median_ci(x).coverage == cov
    assert coverage_label(median_rank(5)[1]) == "93.75 %" and median_ci(np.arange(5.0)).label == "93.75 % CI"
    assert coverage_label(median_rank(6)[1], latex=True) == "96.88\\,\\%"
    assert interval_name([5, 6, 5]) == "93.75 % (n = 5), 96.88 % (n = 6)"
    # a legend's name: one n, several, none (a single trial has no interval)
    assert ci_label([5, 5.0]) == "93.75 % CI, n = 5" and ci_label([1, float("nan")]) == "CI"
    assert ci_label([6, 5]) == "CI 93.75 % (n = 5), 96.88 % (n = 6)"
    assert coverages_label([median_rank(6)[1], median_rank(5)[1], float("nan")]) == "93.75 %/96.88 % CI"


# A typed "95 %" in any of its spellings ("95 %", "95%", "95\\,\\%", "95 per cent"), not "0.95" or "1.95 %".
TYPED_95 = re.compile(r"(?<![\d.])95(?:\s*(?:\\{1,2},)?\s*\\{0,2}%|[ -]per ?cent)")
SWEPT = ["src/pagelab", "paper", "notebooks", "docs", "config"]
TEXT = {".py", ".tex", ".ipynb", ".md", ".yaml", ".yml", ".bib", ".cff"}
# The only intervals named by a typed nominal 95 %: those that have no exact coverage, each
# with the phrase that names it and why that level is true (checked below against the code).
FIT = "the fitted parameters' t-interval (fit.nls at level 0.95): asymptotic, no exact coverage"
BOOTSTRAP = "pagelab compare's ratio B/A, a percentile bootstrap at compare.LEVEL: no exact coverage"
NOMINAL = {
    ("notebooks/seekmodel.ipynb", "nominal 95 % t-intervals"): FIT,
    ("notebooks/seekmodel.ipynb", "nominal 95 % CIs from the covariance with Student's t"): FIT,
    ("docs/experiments.md", "nominal 95 % t-intervals"): FIT,
    ("docs/recordings.md", "nominal 95 % percentile-bootstrap interval"): BOOTSTRAP,
}


def typed_levels(text: str, allowed: list[str]) -> list[str]:
    """Every typed 95 % in `text` outside the allowed phrases."""
    spans = [(m.start(), m.start() + len(p)) for p in allowed for m in re.finditer(re.escape(p), text)]
    return [text[max(m.start() - 40, 0):m.end() + 20] for m in TYPED_95.finditer(text)
            if not any(a <= m.start() and m.end() <= b for a, b in spans)]


def test_no_interval_is_labelled_by_a_typed_nominal_level():
    """Every module, paper section, notebook, doc and config names an interval by the coverage
    the code computes at its n (93.75 % at n = 5), never by a typed '95 %'; the allow-list holds
    only the intervals whose nominal level is all they have, and the code still gives them it."""
    from pagelab.analysis import compare as compare_runs
    from pagelab.core import fit
    from pagelab.core.paths import root

    files = sorted(p for d in SWEPT for p in (root() / d).rglob("*")
                   if p.is_file() and p.suffix in TEXT and "__pycache__" not in p.parts)
    assert any(p.name == "stats.py" for p in files) and any(p.suffix == ".ipynb" for p in files)
    found = [f"{p.relative_to(root())}: ...{hit}..." for p in files
             for hit in typed_levels(p.read_text(), [ph for (f, ph) in NOMINAL if root() / f == p])]
    assert not found, "\n".join(found)
    # the allow-list is no wider than the repository: each phrase is still there, and true
    for (f, phrase), reason in NOMINAL.items():
        assert phrase in (root() / f).read_text(), (f, phrase, reason)
    b = np.repeat([4096.0, 65536.0, 1 << 20], 3)
    res = fit.fit_service_time(b, 5e-3 + b / 40e6 * (1 + 0.01 * np.tile([-1.0, 0.0, 1.0], 3)))
    assert coverage_label(res.level) == "95 %" and coverage_label(compare_runs.LEVEL) == "95 %"
    assert compare_runs.RATIO_INTERVAL == "nominal 95 % percentile-bootstrap CI"


def test_the_typed_level_check_finds_every_spelling():
    """The check cannot pass by missing a spelling: each of these is caught, an allowed phrase and
    other numbers are not."""
    for typed in ("95 % CI", "95% CI", "95\\,\\% interval", "95\\\\,\\\\% interval", "a 95 per cent CI"):
        assert typed_levels(f"medians with {typed}", []), typed
    assert not typed_levels("within 1.95 %, at 0.95, 93.75 % CI", [])
    assert not typed_levels("its nominal 95 % t-intervals", ["nominal 95 % t-intervals"])


def test_figures_name_their_intervals_by_the_coverage_at_n():
    """A figure's legend names the medians' intervals by the coverage median_rank gives at the
    summary's n, and the payoff map's ratios by the coverage their rows carry."""
    import pandas as pd

    from pagelab.core import plots
    from pagelab.experiments import payoff

    summary = pd.DataFrame({"arm": ["a", "b"], "n": [5, 5], "v": [1.0, 2.0], "lo": [0.5, 1.5], "hi": [1.5, 2.5]})
    fig = plots.bars_ci(summary, "arm", "v", "lo", "hi")
    assert "median, 93.75 % CI, n = 5" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    fig = plots.bars_ci(summary.assign(n=[5, 6]), "arm", "v", "lo", "hi")
    assert "median, CI 93.75 % (n = 5), 96.88 % (n = 6)" in [t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    # four n: two to a line, so the legend is no wider than the axes
    fig = plots.bars_ci(pd.concat([summary] * 2).assign(n=[10, 15, 17, 20]), "arm", "v", "lo", "hi")
    assert "median, CI 97.85 % (n = 10), 96.48 % (n = 15),\n95.1 % (n = 17), 95.86 % (n = 20)" in [
        t.get_text() for t in fig.axes[0].get_legend().get_texts()]
    legend = fig.axes[0].get_legend().get_window_extent(fig.canvas.get_renderer())
    assert legend.width <= fig.axes[0].get_window_extent().width
    rows = pd.DataFrame({"bare_back_s": [2.0], "bare_back_s_lo": [1.0], "bare_back_s_hi": [3.0],
                         "tier_back_s": [1.0], "tier_back_s_lo": [0.5], "tier_back_s_hi": [1.5],
                         "ratio": [0.5], "ratio_lo": [0.4], "ratio_hi": [0.6], "ratio_coverage": [median_rank(6)[1]]})
    fig = payoff.map_figure({"RAM": (rows, ["1x"])}, 0.05)
    legends = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert "tier / bare, 96.88 % CI" in legends
    plots.plt.close("all")
