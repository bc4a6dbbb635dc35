"""pagein (seed 000): page-in throughput from swap on the emulated 2008 laptop disk, against
access order and vm.page-cluster (swap read-ahead, 2^N pages; Windows' page-file clustering).

One trial: swap on the emulated HDD; in a memory cgroup, a `hog victim` working set is pushed
out to swap by a `hog run` in the same cgroup (seed 000's memory hog), then re-touched in
sequential or random order and verified. Page-in throughput = bytes read from swap / re-touch
time; the emulator's counters say where the disk's time went (seek, rotation, transfer).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab import counters, experiment, state, trials
from pagelab.devices import emulated_swap
from pagelab.stats import bootstrap_ci
from pagelab.units import parse_size
from pagelab.victim import Victim, push_out

NAME = "pagein"
PAGE = os.sysconf("SC_PAGE_SIZE")
MB = 1e6
REQUIRED_COLUMNS = ["result.pagein_mbps", "result.retouch_s", "result.pswpin", "result.device.reads"]


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"access": o, "page_cluster": int(pc)} for o in cfg["orders"] for pc in cfg["page_clusters"]]


def conf_name(c: dict[str, Any]) -> str:
    return f"{c['access']}-pc{c['page_cluster']}"


def skip_reason(cfg: dict[str, Any]) -> str | None:
    if os.geteuid() != 0:
        return "skipped: needs root to mount the emulated disk and swap on it"
    if not Path("/dev/fuse").exists():
        return "skipped: no /dev/fuse (FUSE is needed for the emulated disk)"
    return None


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    order, pc = trial.params["access"], trial.params["page_cluster"]
    ws = parse_size(cfg["working_set"])
    work = scratch / f"{NAME}-{trial.trial_id}"
    with st.scope():
        disk = emulated_swap(st, cfg["device"], work / "dev", 4 * ws)
        st.set_knob("vm.page-cluster", pc)
        cg = st.cgroup(NAME, memory_limit=ws + parse_size(cfg["headroom"]))
        c = counters.Counters(memcg=cg.path("memory"), extra={"device": disk.flat_stats})
        with Victim(ws, f"ratio:{cfg['fill_ratio']}", trial.seed, work / "victim", cg, order=order) as v:
            s0 = c.snapshot()
            hog = push_out(cg, ws + parse_size(cfg["headroom"]))
            s1 = c.snapshot()
            rep = v.retouch()
            s2 = c.snapshot()
        d = c.delta(s1, s2)
        retouch_s = rep["retouch"]["ns"] / 1e9
        pswpin = d["vmstat"].get("pswpin", 0)
        result = {
            "access": order, "page_cluster": pc, "working_set": ws, "device_profile": cfg["device"],
            "command": v.command, "effective": dict(st.effective),
            "retouch_s": retouch_s, "pswpin": pswpin,
            "pagein_mbps": pswpin * PAGE / retouch_s / MB if retouch_s > 0 else float("nan"),
            "majflt": rep["retouch"]["majflt"], "minflt": rep["retouch"]["minflt"],
            "ms_per_fault": retouch_s * 1e3 / rep["retouch"]["majflt"] if rep["retouch"]["majflt"] else float("nan"),
            "swap_ra": d["vmstat"].get("swap_ra", 0), "swap_ra_hit": d["vmstat"].get("swap_ra_hit", 0),
            "pswpout_pushout": c.delta(s0, s1)["vmstat"].get("pswpout", 0),
            "hog_rounds": len(hog.get("rounds", [])),
            "device": {k.replace(".", "_"): v for k, v in d["device"].items()},
            "counters": {"pushout": c.delta(s0, s1), "retouch": d},
        }
    experiment.clean_dir(work)
    return result


SCALARS = ["retouch_s", "pswpin", "pagein_mbps", "majflt", "minflt", "ms_per_fault", "swap_ra",
           "swap_ra_hit", "pswpout_pushout", "working_set"]


def run(cfg: dict[str, Any], outdir: Path, scratch_dir: Path) -> pd.DataFrame:
    return experiment.execute(
        NAME, cfg, outdir, scratch_dir, configurations(cfg), conf_name,
        lambda st, t, scratch: run_trial(st, cfg, t, scratch), lambda r: r["pagein_mbps"], SCALARS,
        tools=["hog", "simdisk"], skip_reason=skip_reason(cfg))


load = experiment.load


def summarise(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    rows = []
    for (order, pc), g in frame.groupby(["access", "page_cluster"], sort=True):
        e = bootstrap_ci(g["pagein_mbps"], np.median, seed=seed)
        f = bootstrap_ci(g["ms_per_fault"].dropna(), np.median, seed=seed) if g["ms_per_fault"].notna().any() else None
        rows.append({"access": order, "page_cluster": int(pc), "n": e.n, "mbps": e.value, "lo": e.ci_low,
                     "hi": e.ci_high, "ms_per_fault": f.value if f else float("nan"),
                     "pswpin": float(np.median(g["pswpin"])), "majflt": float(np.median(g["majflt"]))})
    return pd.DataFrame(rows)


def measurements(summary: pd.DataFrame, device: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _, r in summary.iterrows():
        base = f"{NAME}.{device}.{r['access']}"
        m = {"value": r["mbps"], "ci_low": r["lo"], "ci_high": r["hi"], "unit": "MB/s", "n": int(r["n"])}
        out[f"{base}.page_cluster_{int(r['page_cluster'])}.mbps"] = m
    for order in set(summary["access"]):
        best = summary[summary["access"] == order].sort_values("mbps").iloc[-1]
        out[f"{NAME}.{device}.{order}.mbps"] = {"value": best["mbps"], "ci_low": best["lo"], "ci_high": best["hi"],
                                                 "unit": "MB/s", "n": int(best["n"])}
    return out


def table(summary: pd.DataFrame) -> pd.DataFrame:
    from pagelab.latex import fmt

    return pd.DataFrame({
        "Order": summary["access"], "page-cluster": summary["page_cluster"].astype(int),
        "Trials": summary["n"].astype(int),
        "Page-in MB/s": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                         zip(summary["mbps"], summary["lo"], summary["hi"], strict=True)],
        "ms per major fault": summary["ms_per_fault"].map(fmt),
        "Pages read": summary["pswpin"].map(lambda v: f"{v:.0f}"),
        "Major faults": summary["majflt"].map(lambda v: f"{v:.0f}"),
    })


def macros(summary: pd.DataFrame, cfg: dict[str, Any] | None, profile: str, skipped: str | None) -> dict[str, str]:
    from pagelab.latex import escape, fmt

    m = {"PageinProfile": profile, "PageinStatus": escape(skipped or "ran")}
    if cfg:
        m["PageinWorkingSetMiB"] = fmt(parse_size(cfg["working_set"]) / 2**20)
        m["PageinDevice"] = escape(cfg["device"])
    for order in ("random", "seq"):
        for pc in (0, 3):
            row = summary[(summary["access"] == order) & (summary["page_cluster"] == pc)] if len(summary) else summary
            key = f"Pagein{'Random' if order == 'random' else 'Seq'}Pc{['Zero', 'One', 'Two', 'Three'][pc]}"
            m[f"{key}MBps"] = fmt(row.iloc[0]["mbps"]) if len(row) else "n/a"
            m[f"{key}MsPerFault"] = fmt(row.iloc[0]["ms_per_fault"]) if len(row) else "n/a"
    return m
