"""Summary statistics with confidence intervals, seeded so every number can be reproduced.

Not for: model fits (fit.py) or verdicts on claims.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats as _st


@dataclass(frozen=True)
class Estimate:
    value: float
    ci_low: float
    ci_high: float
    n: int
    method: str

    @property
    def half_width(self) -> float:
        return (self.ci_high - self.ci_low) / 2


def bootstrap_ci(
    values: Sequence[float] | np.ndarray,
    statistic: Callable[[np.ndarray], float] = np.mean,
    level: float = 0.95,
    n_resamples: int = 10_000,
    seed: int = 0,
) -> Estimate:
    """The statistic and its bootstrap CI (BCa; percentile where BCa is undefined).

    With one value the CI is that value; with none, ValueError.
    """
    x = np.asarray(values, dtype=float)
    if x.size == 0:
        raise ValueError("no values")
    point = float(statistic(x))
    if x.size == 1 or np.all(x == x[0]):
        return Estimate(point, point, point, int(x.size), "degenerate")

    def stat(sample: np.ndarray, axis: int = -1) -> np.ndarray:
        return np.apply_along_axis(statistic, axis, sample)

    for method in ("BCa", "percentile"):
        with np.errstate(all="ignore"):
            res = _st.bootstrap(
                (x,), stat, confidence_level=level, n_resamples=n_resamples,
                method=method, rng=np.random.default_rng(seed), vectorized=True,
            )
        lo, hi = float(res.confidence_interval.low), float(res.confidence_interval.high)
        if np.isfinite(lo) and np.isfinite(hi):
            return Estimate(point, lo, hi, int(x.size), method)
    return Estimate(point, float(np.min(x)), float(np.max(x)), int(x.size), "range")
