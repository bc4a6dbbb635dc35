import numpy as np
import pytest

from pagelab.stats import bootstrap_ci


def test_mean_ci_of_normal_sample_matches_theory():
    x = np.random.default_rng(1).normal(10.0, 1.0, size=200)
    est = bootstrap_ci(x, seed=3)
    assert est.value == pytest.approx(np.mean(x))
    assert est.ci_low < 10.0 < est.ci_high
    # The t-interval half-width is 1.96 * s / sqrt(n); BCa should agree within 15 %.
    expected = 1.96 * np.std(x, ddof=1) / np.sqrt(x.size)
    assert est.half_width == pytest.approx(expected, rel=0.15)


def test_seeded_bootstrap_is_reproducible():
    x = [3.0, 5.0, 4.0, 8.0, 6.0]
    assert bootstrap_ci(x, seed=5) == bootstrap_ci(x, seed=5)


def test_degenerate_and_empty_samples():
    assert bootstrap_ci([2.0, 2.0, 2.0]).ci_low == 2.0
    assert bootstrap_ci([7.0]).method == "degenerate"
    with pytest.raises(ValueError):
        bootstrap_ci([])


def test_median_statistic():
    x = [float(v) for v in range(1, 41)] + [1000.0]  # one wild outlier
    est = bootstrap_ci(x, statistic=np.median, seed=0)
    assert est.value == 21.0
    assert 10.0 < est.ci_low < 21.0 < est.ci_high < 32.0


from pagelab.stats import (  # noqa: E402
    compare,
    holm,
    mann_whitney,
    ratio_ci,
    tukey_outliers,
    welch,
)


def test_bca_coverage_on_simulated_data():
    """The 95 % CI of the mean of skewed (exponential) samples holds the true mean ~95 % of
    the time (BCa is second-order accurate; with n=30, 88-99 % is the acceptable band)."""
    rng = np.random.default_rng(0)
    n = 200
    hits = 0
    for i in range(n):
        e = bootstrap_ci(rng.exponential(2.0, 30), seed=i, n_resamples=2000)
        hits += e.ci_low <= 2.0 <= e.ci_high
    assert 0.88 <= hits / n <= 0.99, hits / n


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


def test_holm_matches_statsmodels():
    from statsmodels.stats.multitest import multipletests

    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    assert holm(p) == pytest.approx(list(multipletests(p, method="holm")[1]))
    assert holm([0.01, 0.02]) == pytest.approx([0.02, 0.02])


def test_tukey_labels_not_removes():
    labels = tukey_outliers([10, 11, 12, 11, 10, 12, 11, 30, 100])
    assert labels[-1] == "severe" and labels[0] == "" and len(labels) == 9


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
