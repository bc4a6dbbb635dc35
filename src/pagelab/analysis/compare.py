"""Two runs side by side: "your machine against ours" (pagelab compare A B).

A and B are results directories (results/) or recordings (data/recorded/<machine>/<profile>/),
both laid out as <experiment>/trials.csv + config.json. For every experiment both have, every
configuration both ran and every numeric result column, the counted trials of A and B give:
both medians with their order-statistic intervals (each named by its coverage at its n), the
ratio B/A of the medians with a percentile bootstrap interval at the nominal level LEVEL, and
Welch's t-test on the logarithms (Mann-Whitney where a value is not positive), Holm-corrected
across the whole family of comparisons. As Criterion decides: a change is claimed only when the
corrected test rejects AND the whole interval of the ratio lies outside 1 +- noise. The default
noise band, 5 %, is the run-to-run spread of a configuration's median on one machine (two quick
runs of the same commit on the reference machine moved medians by up to a few per cent), so
smaller moves are never called a change.

Words: "faster"/"slower" for rates (higher is better) and times (lower is better), "different"
for counts and ratios whose direction has no better side, "same" when no change is shown.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab.core import stats
from pagelab.core.latex import escape, fmt, wide_table
from pagelab.core.records import write_text_atomic
from pagelab.data import recording
from pagelab.experiments import harness
from pagelab.system.config import experiments

NOISE = 0.05
# The ratio B/A's interval is a percentile bootstrap (stats.ratio_ci): its coverage is this nominal
# level, not an exact one, and every text names it so (RATIO_INTERVAL).
LEVEL = 0.95
RATIO_INTERVAL = f"nominal {stats.coverage_label(LEVEL)} percentile-bootstrap CI"
FIGURE = ("\\begin{figure*}[htbp]\n\\centering\n\\includegraphics[width=0.9\\linewidth]{compare/compare.pdf}\n"
          "\\caption{Every comparison of this run with the reference machine's: the ratio of the medians "
          f"(this run over the reference) with its {escape(RATIO_INTERVAL)}, per experiment, sorted; grey: the same, "
          "coloured: a change. The shaded band is the noise band, inside which no change is claimed.}\n"
          "\\label{fig:compare}\n\\end{figure*}\n")
_BOOKKEEPING = {"order", "repetition", "seed", "warmup", "valid", "start", "end", "trial_id", "status",
                "invalid_reason", "tool_version"}
_HIGHER_IS_FASTER = ("mbps", "iops", "bw_bytes", "per_s", "mb_s")
_LOWER_IS_FASTER = ("_s", "_ms", "_us", "_ns", "seconds_per_io", "s_per_2gb", "s_per_ref")


@dataclass
class Row:
    experiment: str
    configuration: str
    metric: str
    n_a: int
    a: float
    a_low: float
    a_high: float
    n_b: int
    b: float
    b_low: float
    b_high: float
    ratio: float
    ratio_low: float
    ratio_high: float
    p: float
    p_holm: float
    word: str


def _experiments(d: Path) -> list[str]:
    return sorted(p.parent.name for p in d.glob("*/trials.csv"))


def _trials(d: Path, name: str) -> tuple[pd.DataFrame, list[str]]:
    """The counted trials and the names of the configuration columns: for an experiment of this
    checkout, the keys of its descriptor's configurations of the run's config.json; for one it
    does not have (a run of another version), the columns that are neither bookkeeping nor
    numbers. ValueError names a config.json that is missing or lacks a key the configurations
    read."""
    frame, _ = harness.load(d / name)
    if name not in experiments():
        keys = [c for c in frame.columns if c not in _BOOKKEEPING and not pd.api.types.is_numeric_dtype(frame[c])
                and not pd.api.types.is_bool_dtype(frame[c])]
        return frame, keys
    block = harness.read_json(d / name, "config.json")
    if not isinstance(block, dict):
        raise ValueError(f"{d / name / 'config.json'}: missing or not a config block")
    try:
        confs = harness.descriptor(name).configurations(block)
    except KeyError as exc:
        raise ValueError(f"{d / name / 'config.json'}: no key {exc} (what {name}'s configurations read)") from exc
    keys = list(dict.fromkeys(k for conf in confs for k in conf))
    return frame, [k for k in keys if k in frame.columns]


def direction(metric: str) -> int:
    """+1 when a larger value is faster, -1 when smaller is faster, 0 when neither."""
    m = metric.lower()
    if any(m.endswith(s) or s in m for s in _HIGHER_IS_FASTER):
        return 1
    if any(m.endswith(s) for s in _LOWER_IS_FASTER):
        return -1
    return 0


def _p_value(xa: np.ndarray, xb: np.ndarray) -> float:
    """Welch's t-test on the logarithms (a ratio scale, as Criterion's t-test on its
    resamples): with 5 trials a side, Mann-Whitney cannot go below p = 0.008 and no change could
    survive Holm's correction over a family of dozens. Values <= 0: Mann-Whitney."""
    if np.array_equal(np.sort(xa), np.sort(xb)):
        return 1.0
    if np.all(xa > 0) and np.all(xb > 0):
        la, lb = np.log(xa), np.log(xb)
        if np.ptp(la) == 0 and np.ptp(lb) == 0:
            return 0.0 if la[0] != lb[0] else 1.0
        p = stats.welch(la, lb).p
        return 1.0 if not np.isfinite(p) else p
    return stats.mann_whitney(xa, xb).p


def compare(a_dir: Path | str, b_dir: Path | str, noise: float = NOISE, alpha: float = 0.05,
            seed: int = 0) -> list[Row]:
    a_dir, b_dir = Path(a_dir), Path(b_dir)
    for d in (a_dir, b_dir):
        if not d.is_dir():
            raise ValueError(f"{d}: not a directory (a results directory or a recording)")
    common = sorted(set(_experiments(a_dir)) & set(_experiments(b_dir)))
    if not common:
        raise ValueError(f"{a_dir} and {b_dir} have no experiment in common (looked for <experiment>/trials.csv)")
    pending: list[dict[str, Any]] = []
    for name in common:
        fa, keys = _trials(a_dir, name)
        fb, _ = _trials(b_dir, name)
        if fa.empty or fb.empty:
            continue
        metrics = [c for c in fa.columns if c in fb.columns and c not in _BOOKKEEPING and c not in keys
                   and pd.api.types.is_numeric_dtype(fa[c]) and pd.api.types.is_numeric_dtype(fb[c])]
        groups_a = fa.groupby(keys, sort=True) if keys else [((), fa)]
        gb = dict(list(fb.groupby(keys, sort=True))) if keys else {(): fb}
        for label, ga in groups_a:
            label_t = label if isinstance(label, tuple) else (label,)
            key = label if keys else ()
            if key not in gb:
                continue
            gbb = gb[key]
            conf = ", ".join(f"{k}={v}" for k, v in zip(keys, label_t, strict=False))
            for metric in metrics:
                xa = ga[metric].dropna().to_numpy(float)
                xb = gbb[metric].dropna().to_numpy(float)
                if len(xa) < 2 or len(xb) < 2 or np.median(xa) == 0 or (np.all(xa == xa[0]) and np.all(xb == xa[0])):
                    continue
                pending.append({"experiment": name, "configuration": conf, "metric": metric, "xa": xa, "xb": xb})
    ps = [_p_value(p["xa"], p["xb"]) for p in pending]
    adjusted = stats.holm(ps) if ps else []
    rows = []
    for p, raw, adj in zip(pending, ps, adjusted, strict=True):
        xa, xb = p["xa"], p["xb"]
        ea, eb = stats.median_ci(xa), stats.median_ci(xb)
        change = stats.compare(xa, xb, alpha=alpha, noise=noise, seed=seed, p_adjusted=adj, level=LEVEL)
        r = change.ratio
        if change.verdict == "no change":
            word = "same"
        else:
            d, up = direction(p["metric"]), change.verdict == "higher"
            word = "different" if d == 0 else ("faster" if up == (d > 0) else "slower")
        rows.append(Row(p["experiment"], p["configuration"], p["metric"], len(xa), ea.value, ea.ci_low, ea.ci_high,
                        len(xb), eb.value, eb.ci_low, eb.ci_high, r.value, r.ci_low, r.ci_high, raw, adj, word))
    return rows


def to_frame(rows: list[Row]) -> pd.DataFrame:
    return pd.DataFrame([asdict(r) for r in rows])


def _ci(v: float, lo: float, hi: float) -> str:
    return f"{fmt(v)} [{fmt(lo)}, {fmt(hi)}]"


def render(rows: list[Row], fmt_name: str, a_name: str, b_name: str, noise: float = NOISE) -> str:
    if fmt_name == "json":
        return json.dumps({"a": a_name, "b": b_name, "noise": noise,
                           "rows": [{k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                                     for k, v in asdict(r).items()} for r in rows]}, indent=1) + "\n"
    table = pd.DataFrame({
        "experiment": [r.experiment for r in rows],
        "configuration": [r.configuration for r in rows],
        "metric": [r.metric for r in rows],
        "A": [_ci(r.a, r.a_low, r.a_high) for r in rows],
        "B": [_ci(r.b, r.b_low, r.b_high) for r in rows],
        "B/A": [_ci(r.ratio, r.ratio_low, r.ratio_high) for r in rows],
        "p (Holm)": [f"{r.p_holm:.3g}" for r in rows],
        "": [r.word for r in rows],
    })
    if fmt_name == "tex":
        tex = table.map(escape) if hasattr(table, "map") else table.applymap(escape)
        body = tex.style.hide(axis="index").to_latex(hrules=True, column_format="lllllllr")
        return "% Generated by pagelab compare; do not edit.\n" + body
    words = table[""].value_counts().to_dict()
    ns = [r.n_a for r in rows] + [r.n_b for r in rows]
    head = (f"A = {a_name}\nB = {b_name}\nA, B = medians with order-statistic CIs, coverage "
            f"{stats.interval_name(ns)}\nchange = Holm-corrected p < 0.05 and the {RATIO_INTERVAL} of B/A "
            f"outside 1 +- {noise:g}\n")
    foot = "\n" + ", ".join(f"{n} {w}" for w, n in sorted(words.items())) + "\n"
    return head + table.to_string(index=False) + foot


def write_figure(rows: list[Row], path: Path | str, a_name: str = "A", b_name: str = "B",
                 noise: float = NOISE) -> None:
    """The comparison as a picture (plots.ratios_by_experiment), PDF and PNG, beside the table."""
    from pagelab.core import plots  # matplotlib and seaborn: 0.4-1.1 s at import, only the figure needs them

    plots.theme()
    frame = to_frame(rows) if rows else pd.DataFrame(columns=["experiment", "ratio", "ratio_low", "ratio_high",
                                                              "word"])
    fig = plots.ratios_by_experiment(frame, noise, a_name, b_name, RATIO_INTERVAL)
    plots.save(fig, path)
    plots.plt.close(fig)


def section(rows: list[Row], reference: str, this: str, limit: int = 15) -> str:
    """The paper's section "This machine against the reference machine": per experiment the
    count of each word, then the measurements that changed (at most `limit`, largest first)."""
    head = ("\\section{This machine against the reference machine}\\label{sec:compare}\n"
            f"The same comparisons, run by \\texttt{{pagelab compare}}, of this run ({escape(this)}) against "
            f"the run recorded on the reference machine ({escape(reference)}): per experiment, configuration "
            f"and result column, the ratio of the medians (this run over the reference) with its "
            f"{escape(RATIO_INTERVAL)}; a change is claimed only when the Holm-corrected test (Welch on "
            f"logarithms) rejects at 0.05 and the whole interval lies outside $1 \\pm {NOISE:g}$ "
            "(Figure~\\ref{fig:compare}).\n")
    if not rows:
        return head + "No experiment ran in both.\n"
    frame = to_frame(rows)
    counts = frame.groupby("experiment")["word"].value_counts().unstack(fill_value=0)
    for w in ("same", "faster", "slower", "different"):
        if w not in counts:
            counts[w] = 0
    summary = pd.DataFrame({"Experiment": [f"\\texttt{{{escape(e)}}}" for e in counts.index],
                            **{w.capitalize(): counts[w].astype(int).astype(str).to_list()
                               for w in ("same", "faster", "slower", "different")}})
    body = summary.style.hide(axis="index").to_latex(hrules=True, column_format="lrrrr")
    changed = frame[frame["word"] != "same"].copy()
    changed["size"] = np.abs(np.log(changed["ratio"].where(changed["ratio"] > 0)))
    changed = changed.sort_values("size", ascending=False).head(limit)
    out = head + "\\begin{table}[htbp]\n\\centering\\small\n" + body + \
        "\\caption{Comparisons per experiment by outcome (this run against the reference).}\n" \
        "\\label{tab:compare-summary}\n\\end{table}\n" + FIGURE
    if len(changed):
        detail = pd.DataFrame({
            "Experiment": changed["experiment"].map(escape), "Configuration": changed["configuration"].map(escape),
            "Metric": changed["metric"].map(escape),
            "Reference": [_ci(r.a, r.a_low, r.a_high) for r in changed.itertuples()],
            "This run": [_ci(r.b, r.b_low, r.b_high) for r in changed.itertuples()],
            "Ratio": [_ci(r.ratio, r.ratio_low, r.ratio_high) for r in changed.itertuples()],
            "": changed["word"],
        })
        # its width follows the data (configuration and metric names)
        out += wide_table(detail.style.hide(axis="index").to_latex(hrules=True, column_format="lllllll"),
                          f"The largest changes (at most {limit}): the medians with their order-statistic "
                          f"intervals (coverage "
                          f"{stats.interval_name(list(changed['n_a']) + list(changed['n_b']), latex=True)}), "
                          f"the ratio with its {escape(RATIO_INTERVAL)}.", "tab:compare-changes")
    return out


def write_reference_section(reference: str, results_dir: Path | str, out: Path | str) -> None:
    """results/compare/section.tex: this run against the reference recording, with the table
    (compare.txt) and the figure (compare.pdf, .png) beside it; without a reference to compare
    with, a comment, and no table or figure."""
    out = Path(out)
    beside = [out.with_name(n) for n in ("compare.txt", "compare.pdf", "compare.png")]
    if not reference:
        for f in beside:
            f.unlink(missing_ok=True)
        write_text_atomic(out, "% no reference recording of this profile to compare with\n")
        return
    rows = compare(reference, results_dir)
    this = recording.source(results_dir)
    name = str(Path(reference).relative_to(recording.recorded_dir().resolve()))
    write_text_atomic(beside[0], render(rows, "text", f"the reference machine's run ({name})", "this run"))
    write_figure(rows, beside[1], "reference", "this run")
    write_text_atomic(out, section(rows, name, f"{this['machine']}, commit {this['commit']}"))
