"""One seaborn look for every figure, and the figure kinds the notebooks share.

Figures carry units in their labels and CIs as error bars; the notebook names the profile
in the caption through the paper's macros.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

from pagelab.fit import FitResult  # noqa: E402


def theme() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette="colorblind", font_scale=1.1)
    plt.rcParams.update({"pdf.fonttype": 42, "figure.dpi": 110, "savefig.bbox": "tight"})


def save(fig: plt.Figure, path: Path | str) -> None:
    """Save as PDF (for the paper) and PNG (for the HTML), each written then renamed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for target in (path, path.with_suffix(".png")):
        tmp = target.with_name(f".{target.stem}.tmp{target.suffix}")
        fig.savefig(tmp)
        tmp.replace(target)


def errorbar_fit(
    summary: pd.DataFrame,
    x: str,
    y: str,
    lo: str,
    hi: str,
    fit: FitResult | None,
    fit_scale: float = 1.0,
    xlabel: str = "",
    ylabel: str = "",
    logx: bool = True,
    points: pd.DataFrame | None = None,
) -> plt.Figure:
    """Measured means with CI error bars, the individual trials faintly, and a fitted curve."""
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    if points is not None:
        sns.stripplot(data=points, x=x, y=y, native_scale=True, ax=ax, color="0.6",
                      size=3, jitter=False, alpha=0.7, label="trials")
    yerr = np.vstack([summary[y] - summary[lo], summary[hi] - summary[y]])
    ax.errorbar(summary[x], summary[y], yerr=yerr, fmt="o", capsize=3, label="mean, 95 % CI")
    if fit is not None:
        xs = np.geomspace(summary[x].min() / 1.5, summary[x].max() * 1.5, 200)
        ax.plot(xs, fit.predict(xs) * fit_scale, "-", label="fit")
    if logx:
        ax.set_xscale("log", base=2)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=True))
    ax.legend(uniq.values(), uniq.keys(), frameon=False)
    return fig
