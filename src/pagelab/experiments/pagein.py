"""pagein (seed 000): page-in throughput from swap on the emulated 2008 laptop disk, against
access order and vm.page-cluster (swap read-ahead, 2^N pages; Windows' page-file clustering).

One trial: swap on the emulated HDD; in a memory cgroup, a `hog victim` working set is pushed
out to swap by a `hog run` in the same cgroup (seed 000's memory hog), then re-touched in
sequential or random order and verified. Page-in throughput = bytes read from swap / re-touch
time; the emulator's counters say where the disk's time went (seek, rotation, transfer).

A trial is valid only when the manipulation happened (`validity`): the hog pushed at least 90 %
of the working set out to swap (the victim's own view, /proc/PID/smaps_rollup Swap) and the
re-touch read at least 90 % of its pages back from swap (pswpin).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab.claims import registry
from pagelab.core import plots
from pagelab.core.latex import escape, fmt
from pagelab.core.stats import interval_name, median_ci
from pagelab.core.units import parse_size
from pagelab.experiments import harness
from pagelab.experiments.harness import entry
from pagelab.run import devices, sequential, trials
from pagelab.run.devices import emulated_swap
from pagelab.run.victim import Victim, out_and_back_reason, push_out
from pagelab.system import counters, mm, state

NAME = "pagein"
PAGE = os.sysconf("SC_PAGE_SIZE")
MB = 1e6
REQUIRED_COLUMNS = ["result.pagein_mbps", "result.retouch_s", "result.pswpin", "result.device.reads"]


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"retouch_order": o, "page_cluster": int(pc)} for o in cfg["retouch_orders"] for pc in cfg["page_clusters"]]


def conf_name(c: dict[str, Any]) -> str:
    return f"{c['retouch_order']}-pc{c['page_cluster']}"


def skip_reason(cfg: dict[str, Any]) -> str | None:
    if os.geteuid() != 0:
        return "skipped: needs root to mount the emulated disk and swap on it"
    if not Path("/dev/fuse").exists():
        return "skipped: no /dev/fuse (FUSE is needed for the emulated disk)"
    return None


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    order, pc = trial.params["retouch_order"], trial.params["page_cluster"]
    ws = parse_size(cfg["working_set"])
    with harness.work_dir(scratch / f"{NAME}-{trial.trial_id}") as work, st.scope():
        disk = emulated_swap(st, cfg["disk_profile"], work / "dev", 4 * ws)
        st.set_knob("vm.page-cluster", pc)
        cg = st.cgroup(NAME, memory_limit=ws + parse_size(cfg["headroom"]))
        c = counters.Counters(memcg=cg.path("memory"), extra={"device": disk.flat_stats})
        with Victim(ws, f"ratio:{cfg['fill_ratio']}", trial.seed, work / "victim", cg, retouch_order=order) as v:
            s0 = c.snapshot()
            hog = push_out(cg, ws + parse_size(cfg["headroom"]))
            s1 = c.snapshot()
            swapped = mm.swapped_bytes(v.pid)
            rep = v.retouch()
            s2 = c.snapshot()
        d = c.delta(s1, s2)
        # the trial's own mount: its timing since the mount is the trial's
        summary = devices.mount_timing(disk)
        retouch_s = rep["retouch"]["ns"] / 1e9
        pswpin = d["vmstat"].get("pswpin", 0)
        result = {
            "retouch_order": order, "page_cluster": pc, "working_set": ws, "disk_profile": cfg["disk_profile"],
            "command": v.command, "effective": dict(st.effective),
            "retouch_s": retouch_s, "pswpin": pswpin,
            "pagein_mbps": pswpin * PAGE / retouch_s / MB if retouch_s > 0 else float("nan"),
            "majflt": rep["retouch"]["majflt"], "minflt": rep["retouch"]["minflt"],
            "ms_per_fault": retouch_s * 1e3 / rep["retouch"]["majflt"] if rep["retouch"]["majflt"] else float("nan"),
            "swap_ra": d["vmstat"].get("swap_ra", 0), "swap_ra_hit": d["vmstat"].get("swap_ra_hit", 0),
            "pswpout_pushout": c.delta(s0, s1)["vmstat"].get("pswpout", 0),
            # smaps' Swap also counts the process's own stack and heap pages: capped at the whole set
            "evicted_share": min(1.0, swapped / ws) if ws else float("nan"),
            "pagein_share": pswpin * PAGE / ws if ws else float("nan"),
            "pushout_rounds": len(hog.reports[0].get("rounds", [])) if hog.reports else 0,
            "oom_kills": hog.oom_kills, "killed": hog.invalid_reason(),
            "device": {k.replace(".", "_"): v for k, v in d["device"].items()},
            **devices.timing_columns("retouch", devices.read_timing(d["device"])), **summary,
            "counters": {"pushout": c.delta(s0, s1), "retouch": d},
        }
    return result


SCALARS = ["retouch_s", "pswpin", "pagein_mbps", "majflt", "minflt", "ms_per_fault", "swap_ra",
           "swap_ra_hit", "pswpout_pushout", "evicted_share", "pagein_share", "working_set", "oom_kills",
           *devices.timing_names("retouch")]
MIN_SHARE = 0.9


def validity(params: dict[str, Any], result: dict[str, Any]) -> str | None:
    """The manipulation happened: the working set was out in swap before the re-touch, and the
    re-touch read it back from swap; no task was killed."""
    if result.get("killed"):
        return result["killed"]
    return out_and_back_reason(result["evicted_share"], result["pagein_share"], MIN_SHARE, "the hog")


def summarise(frame: pd.DataFrame) -> pd.DataFrame:
    """Per access order and page-cluster: the median page-in rate with its order-statistic CI
    over the counted trials, and the medians of the per-fault cost and counters."""
    rows = []
    for (order, pc), g in frame.groupby(["retouch_order", "page_cluster"], sort=True):
        e = median_ci(g["pagein_mbps"])
        faults = g["ms_per_fault"].dropna()
        rows.append({"retouch_order": order, "page_cluster": int(pc), "n": e.n, "mbps": e.value, "lo": e.ci_low,
                     "hi": e.ci_high, "ms_per_fault": float(np.median(faults)) if len(faults) else float("nan"),
                     "pswpin": float(np.median(g["pswpin"])), "majflt": float(np.median(g["majflt"])),
                     "evicted_share": float(np.median(g["evicted_share"])) if "evicted_share" in g else float("nan")})
    return pd.DataFrame(rows)


def measurements(summary: pd.DataFrame, device: str) -> dict[str, Any]:
    """pagein.<device>.<order>.page_cluster_<N>.mbps: PG1 reads page-cluster 0 (one page per
    fault), PG2 page-cluster 3 (Linux's default read-around)."""
    return {f"{NAME}.{device}.{r['retouch_order']}.page_cluster_{int(r['page_cluster'])}.mbps":
            entry(r["mbps"], r["lo"], r["hi"], "MB/s", int(r["n"]), "median, order statistics")
            for _, r in summary.iterrows()}


def table(summary: pd.DataFrame, rejected: pd.DataFrame | None = None) -> pd.DataFrame:
    def n_rejected(order: str, pc: int) -> int:
        if rejected is None or rejected.empty:
            return 0
        sel = rejected[(rejected["retouch_order"] == order) & (rejected["page_cluster"].astype(int) == pc)]
        return int(sel["rejected"].sum())

    return pd.DataFrame({
        "Order": summary["retouch_order"], "page-cluster": summary["page_cluster"].astype(int),
        "Trials": summary["n"].astype(int),
        "Rejected": [n_rejected(o, int(p))
                     for o, p in zip(summary["retouch_order"], summary["page_cluster"], strict=True)],
        "Evicted": summary["evicted_share"].map(lambda v: "n/a" if v != v else f"{100 * v:.0f}\\,\\%"),
        "Page-in MB/s": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                         zip(summary["mbps"], summary["lo"], summary["hi"], strict=True)],
        "ms per major fault": summary["ms_per_fault"].map(fmt),
        "Pages read": summary["pswpin"].map(lambda v: f"{v:.0f}"),
        "Major faults": summary["majflt"].map(lambda v: f"{v:.0f}"),
    })


def readahead_sentence(summary: pd.DataFrame, order: str = "random") -> str:
    """Whether Linux's read-around (page-cluster 3) moved the page-in rate of `order` against
    one page per fault (page-cluster 0), from the two intervals; written from the data, in
    words (the rates and their intervals are the table's, and the section's text gives the rates)."""
    rows = {int(r["page_cluster"]): r for _, r in summary[summary["retouch_order"] == order].iterrows()} \
        if len(summary) else {}
    if 0 not in rows or 3 not in rows:
        return "n/a"
    a, b = rows[0], rows[3]
    which = {"random": "random-order", "seq": "address-order"}.get(order, f"{order}-order")
    if b["lo"] > a["hi"]:
        return f"read-around made {which} page-in faster, the two intervals apart"
    if b["hi"] < a["lo"]:
        return f"read-around made {which} page-in slower, the two intervals apart"
    return f"the two intervals overlap, so read-around is not shown to change {which} page-in"


def macros(summary: pd.DataFrame, cfg: dict[str, Any] | None, profile: str, skipped: str | None,
           rejected: pd.DataFrame | None = None) -> dict[str, str]:
    m = {"PageinProfile": profile, "PageinStatus": escape(skipped or "ran"),
         "PageinRejected": str(int(rejected["rejected"].sum())) if rejected is not None and len(rejected) else "0",
         "PageinReadaheadRandom": readahead_sentence(summary, "random"),
         "PageinReadaheadSeq": readahead_sentence(summary, "seq"),
         "PageinEvictedPct": (f"{100 * float(summary['evicted_share'].min()):.0f}"
                              if len(summary) and "evicted_share" in summary else "n/a"),
         # the coverage of the medians' order-statistic intervals at their n
         "PageinIntervals": interval_name(list(summary["n"]) if len(summary) else [], latex=True)}
    if cfg:
        m["PageinWorkingSetMiB"] = fmt(parse_size(cfg["working_set"]) / 2**20)
        m["PageinDevice"] = escape(cfg["disk_profile"])
    for order in ("random", "seq"):
        for pc in (0, 3):
            row = (summary[(summary["retouch_order"] == order) & (summary["page_cluster"] == pc)] if len(summary)
                   else summary)
            key = f"Pagein{'Random' if order == 'random' else 'Seq'}Pc{['Zero', 'One', 'Two', 'Three'][pc]}"
            m[f"{key}MBps"] = fmt(row.iloc[0]["mbps"]) if len(row) else "n/a"
            m[f"{key}MsPerFault"] = fmt(row.iloc[0]["ms_per_fault"]) if len(row) else "n/a"
    m["PageinRotationClause"] = rotation_clause(summary, cfg)
    return m


def rotation_clause(summary: pd.DataFrame, cfg: dict[str, Any] | None) -> str:
    """What half a revolution of the emulated disk (its profile's rpm) is of a random-order fault
    with no read-ahead, as a clause after "the seeks are short": "mostly rotation" only where it
    is half or more (LaTeX); nothing where the disk has no rpm or that fault was not measured."""
    rows = summary[(summary["retouch_order"] == "random") & (summary["page_cluster"] == 0)] if len(summary) else summary
    if not cfg or not len(rows) or not rows.iloc[0]["ms_per_fault"] > 0:
        return ""
    try:
        rpm = float(devices.profile_value(cfg["disk_profile"], "rpm"))
    except (OSError, KeyError, TypeError, ValueError):
        return ""
    half, fault = devices.half_revolution_s(rpm) * 1e3, float(rows.iloc[0]["ms_per_fault"])
    said = (f"half a revolution at {fmt(rpm)} rpm ({fmt(half)} ms) is {100 * half / fault:.0f} % of the "
            f"{fmt(fault)} ms a random-order fault took with no read-ahead")
    return escape((", and a fault costs mostly rotation: " if half >= fault / 2 else ": ") + said)


def analyse(results_dir: Path | str, profile: str) -> harness.Analysis:
    """Page-in throughput by order and read-ahead, the figure, the table and macros."""
    res = harness.open_results(results_dir)
    out, trials_, skipped, cfg = res.out, res.trials, res.skipped, res.cfg
    summary = summarise(trials_) if len(trials_) else trials_
    ran = (out / "trials.csv").exists()
    rejected = harness.rejected(out, ["retouch_order", "page_cluster"]) if ran else None
    tab = table(summary, rejected) if len(summary) else None

    def figure() -> plots.plt.Figure:
        fig = plots.lines_by_group(summary.rename(columns={"lo": "mbps_lo", "hi": "mbps_hi"}), "page_cluster",
                                   "mbps", "retouch_order", xlabel="vm.page-cluster (read-ahead of 2^N pages)",
                                   ylabel="page-in MB/s",
                                   references={"seed 000: worst case (PG1)": registry.value("PG1"),
                                               "seed 000: observed, at most (PG2)": registry.value("PG2")})
        fig.axes[0].set_yscale("log")
        fig.axes[0].set_title(f"page-in from swap on {cfg['disk_profile']}, {profile} profile")
        return fig

    return harness.Analysis(
        res, f"{res.describe(profile)} on {cfg['disk_profile'] if cfg else '-'}", summary,
        measurements(summary, cfg["disk_profile"]) if len(summary) else {},
        macros(summary, cfg, profile, skipped, rejected),
        harness.Table(tab, "lrrrrlrrr") if tab is not None else None, {NAME: figure},
        shown={"rejected trials": harness.rejected(out)[["trial_id", "retouch_order", "page_cluster", "invalid_reason"]]
               if ran else "no trials",
               "outliers (Tukey)": harness.outliers(trials_, ["retouch_order", "page_cluster"], "pagein_mbps")
               if len(trials_) else trials_})


EXPERIMENT = harness.Experiment(
    name=NAME, analyse=analyse, paper_order=50, seeds=("000",), configurations=configurations, trial=run_trial,
    metric=lambda r: r["pagein_mbps"], columns=tuple(SCALARS), required_columns=tuple(REQUIRED_COLUMNS),
    tools=lambda cfg: ["hog", "simdisk"], conf_name=conf_name, skip_reason=skip_reason, validity=validity,
    measures=lambda cfg: {f"{NAME}.{cfg['disk_profile']}.{c['retouch_order']}"
                          f".page_cluster_{int(c['page_cluster'])}.mbps":
                          sequential.column(conf_name(c), "pagein_mbps") for c in configurations(cfg)},
    requires=harness.Requirements(root=True, fuse=True))
