"""The seek-model fit on synthetic data whose answer is known."""

import numpy as np
import pytest

from pagelab.core.fit import fit_service_time, group_sigma, nls, service_time

SIZES = np.array([4, 16, 64, 256, 1024]) * 1024.0


def synthetic(t_access, bw, reps, rel_noise, seed):
    rng = np.random.default_rng(seed)
    b = np.repeat(SIZES, reps)
    t = service_time(b, t_access, bw) * (1 + rel_noise * rng.standard_normal(b.size))
    return b, t


@pytest.mark.parametrize("t_access,bw", [(12e-3, 50e6), (70e-6, 1.2e9), (1e-3, 20e6)])
def test_recovers_known_parameters_within_their_cis(t_access, bw):
    b, t = synthetic(t_access, bw, reps=5, rel_noise=0.03, seed=7)
    res = fit_service_time(b, t)
    assert res["t_access"].covers(t_access), res["t_access"]
    assert res["bandwidth"].covers(bw), res["bandwidth"]
    # ...and the intervals are informative, not trivially wide.
    assert res["t_access"].ci_high - res["t_access"].ci_low < 0.2 * t_access
    assert res["bandwidth"].ci_high - res["bandwidth"].ci_low < 0.2 * bw


def test_exact_data_gives_exact_parameters():
    t = service_time(SIZES, 5e-3, 40e6)
    res = fit_service_time(np.repeat(SIZES, 2), np.repeat(t, 2), weighted=False)
    assert res["t_access"].value == pytest.approx(5e-3, rel=1e-6)
    assert res["bandwidth"].value == pytest.approx(40e6, rel=1e-6)


def test_ci_coverage_is_near_nominal():
    """Over many synthetic data sets the 95 % CI of t_access holds the truth ~95 % of the time."""
    hits = 0
    n = 300
    for seed in range(n):
        b, t = synthetic(2e-3, 30e6, reps=6, rel_noise=0.05, seed=seed)
        hits += fit_service_time(b, t)["t_access"].covers(2e-3)
    assert 0.88 <= hits / n <= 0.99, hits / n


def test_weights_come_from_each_block_sizes_spread():
    x = np.array([1, 1, 2, 2.0])
    y = np.array([1.0, 3.0, 10.0, 10.0])
    s = group_sigma(x, y)
    assert s[0] == s[1] == pytest.approx(np.sqrt(2))
    assert s[2] == pytest.approx(1e-2)  # zero spread floored at 0.1 % of the mean
    assert group_sigma(np.array([1, 2, 2.0]), np.array([1, 2, 3.0])) is None


def test_rejects_too_few_points_and_bad_values():
    with pytest.raises(ValueError, match="more than 2 points"):
        nls(service_time, [1.0, 2.0], [1.0, 2.0], [1.0, 1.0], ["a", "b"])
    with pytest.raises(ValueError, match="positive"):
        fit_service_time([4096, 8192, 0], [1e-3, 2e-3, 3e-3])
    with pytest.raises(ValueError, match="finite"):
        nls(service_time, [1.0, 2.0, 3.0], [1.0, np.nan, 2.0], [1.0, 1.0], ["a", "b"])
