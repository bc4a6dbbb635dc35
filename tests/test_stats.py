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
