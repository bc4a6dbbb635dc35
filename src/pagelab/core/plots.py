"""One seaborn look for every figure, and the figure kinds the notebooks share (an experiment's
own figure is drawn in its module, from these).

Figures carry units in their labels and CIs as error bars; the notebook names the profile
in the caption through the paper's macros.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter

from pagelab.core.fit import FitResult  # noqa: E402
from pagelab.core.stats import ci_label, coverages_label  # noqa: E402


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
    ax: plt.Axes | None = None,
    label: str = "",
    color: Any = None,
    logy: bool = False,
) -> plt.Figure:
    """Measured medians with CI error bars, the individual trials faintly, and a fitted curve;
    call again with the same `ax` to add another series (label names it). The legend names the
    intervals by their coverage at the summary's n (stats.ci_label)."""
    fig, ax = plt.subplots(figsize=(4.8, 3.2)) if ax is None else (ax.figure, ax)
    prefix = f"{label}: " if label else ""
    if points is not None:
        ax.scatter(points[x], points[y], s=6, color="0.6", alpha=0.7, label="trials", zorder=1)
    yerr = np.vstack([summary[y] - summary[lo], summary[hi] - summary[y]])
    ax.errorbar(summary[x], summary[y], yerr=yerr, fmt="o", capsize=3, color=color,
                label=fold_intervals(f"{prefix}median, {ci_label(summary['n'] if 'n' in summary else [])}"))
    if fit is not None:
        xs = np.geomspace(summary[x].min() / 1.5, summary[x].max() * 1.5, 200)
        ax.plot(xs, fit.predict(xs) * fit_scale, "-", color=color, label=f"{prefix}fit")
    if logx:
        ax.set_xscale("log", base=2)
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    handles, labels = ax.get_legend_handles_labels()
    uniq = dict(zip(labels, handles, strict=True))
    ax.legend(uniq.values(), uniq.keys(), frameon=False, fontsize="x-small")
    return fig


def fold_intervals(label: str, per_line: int = 2) -> str:
    """A legend label naming intervals at several n (stats.ci_label) on lines of `per_line`
    names each, so that the legend stays as wide as the axes it sits in."""
    parts = label.split("), ")
    return "),\n".join("), ".join(parts[i:i + per_line]) for i in range(0, len(parts), per_line))


def bars_ci(summary: pd.DataFrame, x: str, y: str, lo: str, hi: str, xlabel: str = "",
            ylabel: str = "", reference: float | None = None, reference_label: str = "",
            points: pd.DataFrame | None = None, logy: bool = False) -> plt.Figure:
    """Medians as bars with CI whiskers, named by their coverage at the summary's n
    (stats.ci_label), the trials as dots, and a published value as a line."""
    fig, ax = plt.subplots(figsize=(4.8, 3.2))
    xs = np.arange(len(summary))
    ax.bar(xs, summary[y], color=sns.color_palette()[0], alpha=0.75,
           label=fold_intervals(f"median, {ci_label(summary['n'] if 'n' in summary else [])}"))
    yerr = np.vstack([summary[y] - summary[lo], summary[hi] - summary[y]])
    ax.errorbar(xs, summary[y], yerr=yerr, fmt="none", ecolor="black", capsize=3)
    if points is not None:
        pos = {v: i for i, v in enumerate(summary[x])}
        ax.scatter([pos[v] for v in points[x]], points[y], s=8, color="0.3", zorder=3, label="trials")
    if reference is not None:
        ax.axhline(reference, color=sns.color_palette()[3], linestyle="--", label=reference_label)
    ax.set_xticks(xs, summary[x])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.legend(frameon=False, fontsize="small")
    return fig


def message(text: str) -> plt.Figure:
    """A figure that says why there is no data (an experiment skipped on this machine)."""
    fig, ax = plt.subplots(figsize=(4.8, 1.2))
    ax.axis("off")
    ax.text(0.5, 0.5, text, ha="center", va="center", wrap=True)
    return fig


def lines_by_group(summary: pd.DataFrame, x: str, y: str, hue: str, xlabel: str = "", ylabel: str = "",
                   references: dict[str, float] | None = None, ax: plt.Axes | None = None) -> plt.Figure:
    """One line per group (medians with CI whiskers when <y>_lo/<y>_hi exist); published
    values as dashed horizontal lines."""
    if ax is None:
        fig, ax = plt.subplots(figsize=(4.8, 3.2))
    else:
        fig = ax.figure
    for i, (name, g) in enumerate(summary.groupby(hue, sort=True)):
        g = g.sort_values(x)
        color = sns.color_palette()[i % 10]
        if f"{y}_lo" in g:
            yerr = np.vstack([g[y] - g[f"{y}_lo"], g[f"{y}_hi"] - g[y]])
            ax.errorbar(g[x], g[y], yerr=yerr, marker="o", capsize=2, color=color, label=name)
        else:
            ax.plot(g[x], g[y], marker="o", color=color, label=name)
    for label, value in (references or {}).items():
        ax.axhline(value, linestyle="--", color="0.4", linewidth=0.8)
        ax.annotate(label, (ax.get_xlim()[0], value), fontsize="x-small", va="bottom")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.legend(frameon=False, fontsize="x-small")
    return fig


def bars_grouped(summary: pd.DataFrame, x: str, y: str, lo: str, hi: str, hue: str, xlabel: str = "",
                 ylabel: str = "", logy: bool = False) -> plt.Figure:
    """Grouped bars (one group per x, one bar per hue) with CI whiskers."""
    fig, ax = plt.subplots(figsize=(6.4, 3.2))
    groups = list(dict.fromkeys(summary[x]))
    hues = list(dict.fromkeys(summary[hue]))
    width = 0.8 / len(hues)
    for i, h in enumerate(hues):
        s = summary[summary[hue] == h].set_index(x).reindex(groups)
        xs = np.arange(len(groups)) + (i - (len(hues) - 1) / 2) * width
        ax.bar(xs, s[y], width, label=str(h).replace("_", " "), color=sns.color_palette()[i % 10])
        ax.errorbar(xs, s[y], yerr=np.vstack([s[y] - s[lo], s[hi] - s[y]]), fmt="none", ecolor="black",
                    capsize=2, linewidth=0.8)
    ax.set_xticks(np.arange(len(groups)), groups, rotation=20, ha="right")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if logy:
        ax.set_yscale("log")
    ax.legend(frameon=False, fontsize="x-small", ncol=2)
    return fig


def intervals_by_host(frame: pd.DataFrame, host: str = "host", key: str = "measurement") -> plt.Figure:
    """One panel per measurement: each host's median as a dot with its CI as whiskers
    (frame: host, measurement, value, ci_low, ci_high, unit, and optionally coverage), hosts in
    the frame's order; a panel's title names its intervals by their coverage where known."""
    keys = list(dict.fromkeys(frame[key]))
    hosts = list(dict.fromkeys(frame[host]))
    cols = min(3, len(keys))
    rows = -(-len(keys) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(3.2 * cols, 2.4 * rows), squeeze=False)
    for ax, k in zip(axes.flat, keys, strict=False):
        g = frame[frame[key] == k].set_index(host).reindex(hosts).dropna(subset=["value"])
        xs = [hosts.index(h) for h in g.index]
        yerr = np.vstack([g["value"] - g["ci_low"], g["ci_high"] - g["value"]])
        ax.errorbar(xs, g["value"], yerr=yerr, fmt="o", color=sns.color_palette()[0], capsize=3)
        ax.set_xticks(range(len(hosts)), hosts, rotation=30, ha="right")
        unit = g["unit"].iloc[0] if "unit" in g and len(g) else ""
        ax.set_title(k + (f" ({coverages_label(g['coverage'])})" if "coverage" in g else ""),
                     fontsize="small")
        ax.set_ylabel(unit)
    for ax in list(axes.flat)[len(keys):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


COMPARE_COLOURS = {"same": "0.6", "faster": 2, "slower": 3, "different": 0}


def ratios_by_experiment(frame: pd.DataFrame, noise: float, a_name: str = "A", b_name: str = "B",
                         interval: str = "CI") -> plt.Figure:
    """pagelab compare's figure: every comparison's ratio B/A (frame: experiment, ratio,
    ratio_low, ratio_high, word) as a dot with its interval (`interval` names it), on a log scale. Each experiment has a
    band of its own, its comparisons sorted by ratio; the colour is the verdict word, and the
    noise band 1 +- noise, inside which no change is claimed, is shaded. An interval the data
    cannot bound (a zero in a denominator) runs to the edge."""
    fig, ax = plt.subplots(figsize=(7.2, 3.6))
    palette = sns.color_palette()
    shown = frame[np.isfinite(frame["ratio"]) & (frame["ratio"] > 0)] if len(frame) else frame
    experiments = sorted(set(shown["experiment"])) if len(shown) else []
    ax.axhspan(1 - noise, 1 + noise, color="0.9", zorder=0, label=f"noise band 1 ± {noise:g}")
    ax.axhline(1.0, color="0.5", linewidth=0.6, zorder=1)
    finite = shown[["ratio_low", "ratio_high"]].to_numpy(float).ravel() if len(shown) else np.array([1.0])
    finite = finite[np.isfinite(finite) & (finite > 0)]
    lo = min(float(finite.min()) if finite.size else 1.0, 1 - noise) / 1.3
    hi = max(float(finite.max()) if finite.size else 1.0, 1 + noise) * 1.3
    counts: dict[str, int] = {}
    for i, name in enumerate(experiments):
        g = shown[shown["experiment"] == name].sort_values("ratio")
        xs = i + (np.arange(len(g)) + 0.5) / max(len(g), 1) * 0.8 - 0.4
        low = g["ratio_low"].to_numpy(float)
        high = g["ratio_high"].to_numpy(float)
        low = np.where(np.isfinite(low) & (low > 0), low, lo)
        high = np.where(np.isfinite(high), high, hi)
        for word in COMPARE_COLOURS:
            sel = (g["word"] == word).to_numpy()
            if not sel.any():
                continue
            counts[word] = counts.get(word, 0) + int(sel.sum())
            c = COMPARE_COLOURS[word]
            colour = palette[c] if isinstance(c, int) else c
            ax.vlines(xs[sel], low[sel], high[sel], color=colour, linewidth=0.6, alpha=0.7, zorder=2)
            ax.scatter(xs[sel], g["ratio"].to_numpy(float)[sel], s=6, color=colour, zorder=3,
                       label=word if counts[word] == int(sel.sum()) else None)
        if i:
            ax.axvline(i - 0.5, color="0.85", linewidth=0.6, zorder=0)
    ax.set_yscale("log")
    ax.set_ylim(lo, hi)
    ax.set_xlim(-0.5, max(len(experiments), 1) - 0.5)
    ax.grid(axis="x", visible=False)
    ax.set_xticks(range(len(experiments)), experiments, rotation=20, ha="right")
    ax.set_ylabel(f"ratio {b_name} / {a_name} of the medians, {interval}")
    handles, labels = ax.get_legend_handles_labels()
    labels = [f"{lab} ({counts[lab]})" if lab in counts else lab for lab in labels]
    ax.legend(handles, labels, frameon=False, fontsize="x-small", ncol=5, loc="upper center",
              bbox_to_anchor=(0.5, 1.14))
    if not experiments:
        ax.text(0.5, 0.5, "no measurement in common", transform=ax.transAxes, ha="center", va="center")
    return fig


# --------------------------------------------------------------------------- the verdict figure
_CB = sns.color_palette("colorblind")
VERDICT_COLOURS = {"reproduced": _CB[2], "not reproduced": _CB[3], "inconclusive": _CB[1], "by construction": _CB[0],
                   "not measurable here": _CB[4], "not applicable here": (0.6, 0.6, 0.6)}
RUN_MARKERS = ["o", "s", "D", "^", "v", "P"]


def verdict_forest(rows: pd.DataFrame, runs: list[str]) -> plt.Figure:
    """Every claim (a row per step of an order) with its window and our median and its CI on
    each run (`runs`, top to bottom within a claim: quick, full, seed, this run), on an axis of
    ours over the published value (log where the values span a decade or more), each marker
    coloured by that run's verdict; a hollow marker where the run has no value for it.
    rows: label, run, x, x_lo, x_hi (NaN: no value), w_lo, w_hi (the window, same scale),
    verdict, gid."""
    labels = list(dict.fromkeys(rows["label"]))
    fig, ax = plt.subplots(figsize=(7.0, 0.085 * len(labels) * max(1, len(runs)) + 1.0))
    finite = pd.concat([rows[c] for c in ("x", "x_lo", "x_hi", "w_lo", "w_hi")])
    finite = finite[np.isfinite(finite) & (finite > 0)]
    log = len(finite) > 0 and finite.max() / finite.min() >= 10
    lo_edge = (finite.min() / 1.5) if log else min(0.0, finite.min() - 0.1)
    hi_edge = finite.max() * 1.5 if log else finite.max() + 0.1
    step = 1.0 / (len(runs) + 1)
    for i, label in enumerate(labels):
        y0 = len(labels) - 1 - i
        g = rows[rows["label"] == label]
        w_lo, w_hi = g["w_lo"].iloc[0], g["w_hi"].iloc[0]
        if np.isfinite(w_lo) or np.isfinite(w_hi):
            a = w_lo if np.isfinite(w_lo) and w_lo > (0 if log else -np.inf) else lo_edge
            b = w_hi if np.isfinite(w_hi) else hi_edge
            if a == b:
                ax.plot([a, a], [y0 - 0.4, y0 + 0.4], color="0.55", linewidth=2, zorder=1)
            else:
                ax.fill_between([a, b], y0 - 0.42, y0 + 0.42, color="0.88", zorder=0, linewidth=0)
        for j, run in enumerate(runs):
            r = g[g["run"] == run]
            if r.empty:
                continue
            r = r.iloc[0]
            y = y0 + 0.5 - (j + 1) * step
            colour = VERDICT_COLOURS[r["verdict"]]
            marker = RUN_MARKERS[j % len(RUN_MARKERS)]
            if np.isfinite(r["x"]):
                xerr = [[max(r["x"] - r["x_lo"], 0)], [max(r["x_hi"] - r["x"], 0)]]
                eb = ax.errorbar([r["x"]], [y], xerr=xerr, fmt=marker, color=colour, markersize=4.5,
                                 capsize=1.5, linewidth=1, zorder=3)
                eb.lines[0].set_gid(r["gid"])
            else:
                (line,) = ax.plot([1.0], [y], marker, mfc="none", color=colour, markersize=4.5, zorder=3)
                line.set_gid(r["gid"])
    ax.axvline(1.0, color="0.3", linestyle="--", linewidth=0.8, zorder=2)
    if log:
        ax.set_xscale("log")
        ticks = [t * 10.0 ** e for e in range(-4, 5) for t in (1, 2, 5) if lo_edge <= t * 10.0 ** e <= hi_edge]
        ax.xaxis.set_major_locator(FixedLocator(ticks))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlim(lo_edge, hi_edge)
    ax.set_ylim(-0.6, len(labels) - 0.4)
    ax.set_yticks(range(len(labels)), list(reversed(labels)), fontsize="x-small")
    ax.set_xlabel("ours / published value (an order's steps: ours / the seed's step)", fontsize="small")
    ax.grid(axis="y", visible=False)
    handles = [Patch(color=c, label=v) for v, c in VERDICT_COLOURS.items()]
    handles += [Line2D([], [], marker=RUN_MARKERS[j % len(RUN_MARKERS)], color="0.3", linestyle="", label=run)
                for j, run in enumerate(runs)]
    handles.append(Patch(color="0.88", label="window"))
    ax.legend(handles=handles, frameon=False, fontsize="x-small", loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return fig
