"""The intervals the verdicts use cover as they claim: drawn from distributions whose median
is known (normal, lognormal, bimodal), with a fixed seed, at the trial counts the profiles use
(5 in quick, 10 in full). A percentile bootstrap of the median at n = 2 is the counter-example:
its interval is [min, max] and covers half the time."""

import numpy as np
import pytest

from pagelab.core import stats

DRAWS = 2000
RNG_SEED = 20261124


def _samplers():
    def bimodal(rng, size):
        # Two modes (as a trial that sometimes hits a cache): 60 % near 1, 40 % near 5.
        pick = rng.random(size) < 0.6
        return np.where(pick, rng.normal(1, 0.1, size), rng.normal(5, 0.3, size))

    # Medians: normal 10; lognormal exp(0) = 1; the bimodal one by a large sample.
    big = bimodal(np.random.default_rng(1), 2_000_000)
    return {
        "normal": (lambda rng, size: rng.normal(10, 2, size), 10.0),
        "lognormal": (lambda rng, size: rng.lognormal(0, 0.8, size), 1.0),
        "bimodal": (bimodal, float(np.median(big))),
    }


def coverage(interval, sampler, truth, n, draws=DRAWS):
    rng = np.random.default_rng(RNG_SEED)
    hits = 0
    for _ in range(draws):
        est = interval(sampler(rng, n))
        hits += est.ci_low <= truth <= est.ci_high
    return hits / draws


@pytest.mark.parametrize("dist", ["normal", "lognormal", "bimodal"])
@pytest.mark.parametrize("n", [5, 10])
def test_median_ci_covers_at_least_93_percent(dist, n):
    sampler, truth = _samplers()[dist]
    cov = coverage(stats.median_ci, sampler, truth, n)
    assert cov >= 0.93, f"{dist} n={n}: coverage {cov:.3f}"
    assert stats.median_ci(np.arange(n)).coverage >= 0.93


@pytest.mark.parametrize("dist", ["normal", "lognormal", "bimodal"])
@pytest.mark.parametrize("n", [5, 10])
def test_paired_ratio_ci_covers_the_median_ratio(dist, n):
    # Paired rounds: arm b = arm a times a noisy factor whose median is 2, so the per-round
    # ratio's median is 2 whatever the distribution of a.
    sampler, _ = _samplers()[dist]

    def draw(rng, size):
        a = sampler(rng, size)
        return a, a / (2 * rng.lognormal(0, 0.3, size))

    rng = np.random.default_rng(RNG_SEED)
    hits = 0
    for _ in range(DRAWS):
        a, b = draw(rng, n)
        est = stats.paired_ratio_ci(a, b)
        hits += est.ci_low <= 2.0 <= est.ci_high
    assert hits / DRAWS >= 0.93


def test_the_check_catches_an_interval_that_does_not_cover():
    sampler, truth = _samplers()["normal"]

    def half_a_standard_error(x):
        # an interval a quarter as wide as a normal-theory 95 % one: it covers far less often
        m, se = float(np.median(x)), float(np.std(x, ddof=1) / np.sqrt(len(x)))
        return stats.Estimate(m, m - 0.5 * se, m + 0.5 * se, len(x), "too narrow")

    cov = coverage(half_a_standard_error, sampler, truth, 10, draws=300)
    assert cov < 0.93
    assert stats.median_ci([1.0, 2.0]).coverage == pytest.approx(0.5)


def test_median_ci_exact_ranks():
    x = np.arange(1, 11, dtype=float)  # n = 10: k = 2, coverage 1 - 2 * P(Bin(10,.5) <= 1)
    est = stats.median_ci(x)
    assert (est.ci_low, est.ci_high) == (2.0, 9.0)
    assert est.coverage == pytest.approx(1 - 2 * 11 / 1024)
    assert stats.median_ci([3.0]).ci_low == 3.0
    with pytest.raises(ValueError, match="no values"):
        stats.median_ci([])
    with pytest.raises(ValueError, match="as many"):
        stats.paired_ratio_ci([1, 2], [1])
