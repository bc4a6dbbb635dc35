"""Nonlinear least-squares fits with parameter confidence intervals (scipy's curve_fit).

The first model is the seed's disk service time, t(b) = t_access + b / BW: a fixed cost per
request (seek, rotation, controller, software) plus the transfer of b bytes at BW bytes/s.
Not for: choosing models or judging claims; the notebooks and the verdict module do that.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pagelab.core import _lazy

# scipy.optimize and scipy.stats (about 0.7 s of imports) load at the first fit: the workflow's
# parse and a trial, which import every experiment's descriptor and fit nothing, start without them
optimize = _lazy("scipy.optimize")
stats = _lazy("scipy.stats")


@dataclass(frozen=True)
class Param:
    name: str
    value: float
    stderr: float
    ci_low: float
    ci_high: float

    def covers(self, x: float) -> bool:
        return self.ci_low <= x <= self.ci_high


@dataclass(frozen=True)
class FitResult:
    model: Callable[..., np.ndarray]
    params: dict[str, Param]
    n: int
    dof: int
    rss: float
    level: float

    def values(self) -> list[float]:
        return [p.value for p in self.params.values()]

    def predict(self, x: Sequence[float] | np.ndarray) -> np.ndarray:
        return self.model(np.asarray(x, dtype=float), *self.values())

    def __getitem__(self, name: str) -> Param:
        return self.params[name]


def nls(
    model: Callable[..., np.ndarray],
    x: Sequence[float] | np.ndarray,
    y: Sequence[float] | np.ndarray,
    p0: Sequence[float],
    names: Sequence[str],
    sigma: Sequence[float] | np.ndarray | None = None,
    level: float = 0.95,
) -> FitResult:
    """Fit y = model(x, *p); CIs are value +- t_{(1+level)/2, n-p} * stderr from the covariance.

    `sigma` gives each point's relative weight (absolute_sigma=False: the scale comes from
    the residuals). Raises ValueError when there are not more points than parameters.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if x.shape != y.shape or x.ndim != 1:
        raise ValueError("x and y must be 1-D and the same length")
    if not np.all(np.isfinite(x)) or not np.all(np.isfinite(y)):
        raise ValueError("x and y must be finite")
    k = len(p0)
    if len(x) <= k:
        raise ValueError(f"need more than {k} points to fit {k} parameters, got {len(x)}")
    popt, pcov = optimize.curve_fit(
        model, x, y, p0=list(p0), sigma=None if sigma is None else np.asarray(sigma, float),
        absolute_sigma=False, maxfev=20000,
    )
    dof = len(x) - k
    tcrit = stats.t.ppf((1 + level) / 2, dof)
    err = np.sqrt(np.clip(np.diag(pcov), 0, None))
    params = {
        n: Param(n, float(v), float(e), float(v - tcrit * e), float(v + tcrit * e))
        for n, v, e in zip(names, popt, err, strict=True)
    }
    resid = y - model(x, *popt)
    return FitResult(model, params, len(x), dof, float(np.sum(resid**2)), level)


def service_time(b: np.ndarray, t_access: float, bandwidth: float) -> np.ndarray:
    """Seconds per request of b bytes: t_access + b / bandwidth."""
    return t_access + b / bandwidth


def group_sigma(x: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Each point's weight from the spread of the points at the same x (sample std).

    Repeated trials per block size are far noisier at large blocks, so an unweighted fit
    would let them drown the intercept. Returns None (unweighted) when a group has fewer than
    two points; a zero spread is floored at 0.1 % of the group mean.
    """
    x = np.asarray(x, float)
    y = np.asarray(y, float)
    sigma = np.empty_like(y)
    for v in np.unique(x):
        sel = x == v
        if sel.sum() < 2:
            return None
        sd = float(np.std(y[sel], ddof=1))
        sigma[sel] = max(sd, 1e-3 * abs(float(np.mean(y[sel]))), np.finfo(float).tiny)
    return sigma


def fit_service_time(
    block_bytes: Sequence[float] | np.ndarray,
    seconds: Sequence[float] | np.ndarray,
    level: float = 0.95,
    weighted: bool = True,
) -> FitResult:
    """Fit t(b) = t_access + b / bandwidth to per-request times; params t_access (s), bandwidth (B/s)."""
    b = np.asarray(block_bytes, float)
    t = np.asarray(seconds, float)
    if np.any(b <= 0) or np.any(t <= 0):
        raise ValueError("block sizes and times must be positive")
    # Start from the straight line through the data (the model is linear in 1/bandwidth).
    slope, intercept = np.polyfit(b, t, 1)
    p0 = [max(intercept, 1e-9), 1.0 / slope if slope > 0 else float(np.max(b) / np.max(t))]
    sigma = group_sigma(b, t) if weighted else None
    return nls(service_time, b, t, p0, ["t_access", "bandwidth"], sigma=sigma, level=level)
