"""standby (seed 004): pages trimmed from a working set come back for free while their data is
still in memory (Windows' standby list; Linux's swap cache), until buffered IO flushes it;
then each one is a hard fault, fewer seconds of them with memory compression.

One trial: in a memory cgroup of working_set + headroom, `hog victim` builds a working set;
the harness trims it from outside (process_madvise MADV_PAGEOUT, EmptyWorkingSet's analogue);
for the flooded arms `cacheflood` pushes flood_factor x working_set of buffered reads through
the same cgroup; then the victim re-touches every page and verifies its content. Arms:
trim_only, flooded (swap file on this machine's disk), zswap (same, zswap on), zram (swap on
zram). Counters bracket each phase.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab import counters, experiment, state, trials
from pagelab.provenance import block_device_of
from pagelab.stats import bootstrap_ci
from pagelab.tools import tool_path
from pagelab.units import parse_size
from pagelab.victim import Victim

NAME = "standby"
PAGE = os.sysconf("SC_PAGE_SIZE")


REQUIRED_COLUMNS = ["result.retouch_s", "result.retouch_majflt", "result.pswpin_retouch",
                    "result.counters.retouch.vmstat.pgfault"]


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in cfg["arms"]]


def skip_reason(cfg: dict[str, Any]) -> str | None:
    """Why this experiment cannot run here, in one line, or None."""
    if os.geteuid() != 0:
        return "skipped: needs root to turn on swap and make a memory cgroup"
    if not (Path("/sys/fs/cgroup/memory").is_dir() or Path("/sys/fs/cgroup/cgroup.controllers").exists()):
        return "skipped: no memory cgroup controller"
    if "zswap" in cfg["arms"] and not Path("/sys/module/zswap").exists():
        return "skipped: kernel without zswap (drop the zswap arm to run the rest)"
    if "zram" in cfg["arms"] and not Path("/sys/block/zram0").exists():
        return "skipped: no zram0 (modprobe zram, or drop the zram arm)"
    return None


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    arm = trial.params["arm"]
    ws = parse_size(cfg["working_set"])
    work = scratch / f"{NAME}-{trial.trial_id}"
    work.mkdir(parents=True, exist_ok=True)
    with st.scope():
        if arm == "zram":
            swapdev = st.zram(2 * ws, cfg["zram_algorithm"])
            st.swapon(swapdev)
            blockdev = swapdev.name
        else:
            st.swap_file(work / "swapfile", 2 * ws)
            blockdev = block_device_of(work)["disk"]
        if arm == "zswap":
            st.set_knob("zswap.compressor", cfg["zswap_compressor"])
            st.set_knob("zswap.enabled", "Y")
        cg = st.cgroup(NAME, memory_limit=ws + parse_size(cfg["headroom"]))
        c = counters.Counters(block_devices=[blockdev], memcg=cg.path("memory"),
                              zram=["zram0"] if arm == "zram" else [])
        with Victim(ws, f"ratio:{cfg['fill_ratio']}", trial.seed, work, cg) as victim:
            s0 = c.snapshot()
            trim = victim.trim()
            s1 = c.snapshot()
            flood: dict[str, Any] = {}
            if arm != "trim_only":
                fcmd = [str(tool_path("cacheflood")), "--make-set", str(scratch / f"{NAME}-floodset"),
                        "--set-size", str(int(cfg["flood_factor"] * ws)), "--keep-set", "--cold",
                        "--bytes", str(int(cfg["flood_factor"] * ws)), "--output-format", "json"]
                fl = subprocess.run(fcmd, capture_output=True, text=True, timeout=600,
                                    preexec_fn=cg.preexec())
                if fl.returncode != 0:
                    raise trials.TrialFailed(f"cacheflood failed: {fl.stderr.strip()}")
                flood = json.loads(fl.stdout)
            s2 = c.snapshot()
            rep = victim.retouch()
            s3 = c.snapshot()
        retouch = c.delta(s2, s3)
        retouch_s = rep["retouch"]["ns"] / 1e9
        result = {
            "arm": arm, "working_set": ws, "command": victim.command,
            "trim_s": trim["trim_s"], "swapped_after_trim_bytes": trim["swapped_bytes"],
            "retouch_s": retouch_s,
            "retouch_s_per_ref": retouch_s * parse_size(cfg["reference_size"]) / ws,
            "retouch_majflt": rep["retouch"]["majflt"], "retouch_minflt": rep["retouch"]["minflt"],
            "retouch_p99_us": rep["retouch"]["latency_ns"].get("p99", float("nan")) / 1e3,
            "pswpout_trim": c.delta(s0, s1)["vmstat"].get("pswpout", 0),
            "pswpin_retouch": retouch["vmstat"].get("pswpin", 0),
            "zswpin_retouch": retouch["vmstat"].get("zswpin", 0),
            "zswpout_trim": c.delta(s0, s1)["vmstat"].get("zswpout", 0),
            "flood_bytes": flood.get("read", {}).get("bytes", 0),
            "counters": {"trim": c.delta(s0, s1), "flood": c.delta(s1, s2), "retouch": retouch},
            "effective": dict(st.effective),
        }
    work.rmdir()
    return result


def run(cfg: dict[str, Any], outdir: Path, scratch_dir: Path) -> pd.DataFrame:
    try:
        return experiment.execute(
            NAME, cfg, outdir, scratch_dir, configurations(cfg), lambda c: c["arm"],
            lambda st, t, scratch: run_trial(st, cfg, t, scratch), lambda r: r["retouch_s"], SCALARS,
            tools=["hog", "cacheflood"], skip_reason=skip_reason(cfg), warmups=[{"arm": "trim_only"}])
    finally:
        experiment.clean_dir(scratch_dir.resolve() / f"{NAME}-floodset")


SCALARS = ["retouch_s", "retouch_s_per_ref", "retouch_majflt", "retouch_minflt", "retouch_p99_us",
           "pswpout_trim", "pswpin_retouch", "zswpin_retouch", "zswpout_trim", "trim_s",
           "swapped_after_trim_bytes", "flood_bytes", "working_set"]
load = experiment.load


ARMS = ["trim_only", "flooded", "zswap", "zram"]


def summarise(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    rows = []
    for arm in [a for a in ARMS if a in set(frame["arm"])]:
        g = frame[frame["arm"] == arm]
        t = bootstrap_ci(g["retouch_s"], np.median, seed=seed)
        tr = bootstrap_ci(g["retouch_s_per_ref"], np.median, seed=seed)
        rows.append({"arm": arm, "n": t.n, "retouch_s": t.value, "retouch_s_lo": t.ci_low,
                     "retouch_s_hi": t.ci_high, "per_ref_s": tr.value, "per_ref_lo": tr.ci_low,
                     "per_ref_hi": tr.ci_high, "majflt": float(np.median(g["retouch_majflt"])),
                     "minflt": float(np.median(g["retouch_minflt"])),
                     "pswpin": float(np.median(g["pswpin_retouch"])),
                     "zswpin": float(np.median(g["zswpin_retouch"])),
                     "pswpout": float(np.median(g["pswpout_trim"]))})
    return pd.DataFrame(rows)


def measurements(summary: pd.DataFrame, device: str = "own") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _, r in summary.iterrows():
        base = f"{NAME}.{device}.{r['arm']}"
        out[f"{base}.retouch_s"] = {"value": r["retouch_s"], "ci_low": r["retouch_s_lo"],
                                    "ci_high": r["retouch_s_hi"], "unit": "s", "n": int(r["n"])}
        out[f"{base}.retouch_s_per_2gb"] = {"value": r["per_ref_s"], "ci_low": r["per_ref_lo"],
                                            "ci_high": r["per_ref_hi"], "unit": "s", "n": int(r["n"])}
        out[f"{base}.pswpin_pages"] = {"value": r["pswpin"], "unit": "pages", "n": int(r["n"])}
        out[f"{base}.majflt"] = {"value": r["majflt"], "unit": "faults", "n": int(r["n"])}
    return out


def table(summary: pd.DataFrame) -> pd.DataFrame:
    from pagelab.latex import fmt

    return pd.DataFrame({
        "Arm": summary["arm"].str.replace("_", " "),
        "Trials": summary["n"].astype(int),
        "Re-touch (s)": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                         zip(summary["retouch_s"], summary["retouch_s_lo"], summary["retouch_s_hi"], strict=True)],
        "per 2 GB (s)": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                         zip(summary["per_ref_s"], summary["per_ref_lo"], summary["per_ref_hi"], strict=True)],
        "Major faults": summary["majflt"].map(lambda v: f"{v:.0f}"),
        "Swap-ins (pages)": summary["pswpin"].map(lambda v: f"{v:.0f}"),
        "zswap loads": summary["zswpin"].map(lambda v: f"{v:.0f}"),
    })


def macros(summary: pd.DataFrame, cfg: dict[str, Any] | None, profile: str, skipped: str | None) -> dict[str, str]:
    from pagelab.latex import escape, fmt

    words = {"trim_only": "TrimOnly", "flooded": "Flooded", "zswap": "Zswap", "zram": "Zram"}
    m = {"StandbyProfile": profile, "StandbyStatus": escape(skipped or "ran")}
    if cfg:
        m["StandbyWorkingSetMiB"] = fmt(parse_size(cfg["working_set"]) / 2**20)
        m["StandbyFloodFactor"] = fmt(float(cfg["flood_factor"]))
    for arm, word in words.items():
        row = summary[summary["arm"] == arm] if len(summary) else summary
        if len(row):
            r = row.iloc[0]
            m[f"Standby{word}RetouchS"] = fmt(r["retouch_s"])
            m[f"Standby{word}PerTwoGBS"] = fmt(r["per_ref_s"])
            m[f"Standby{word}PerTwoGBLoS"] = fmt(r["per_ref_lo"])
            m[f"Standby{word}PerTwoGBHiS"] = fmt(r["per_ref_hi"])
            m[f"Standby{word}Majflt"] = f"{r['majflt']:.0f}"
            m[f"Standby{word}Pswpin"] = f"{r['pswpin']:.0f}"
        else:
            for k in ("RetouchS", "PerTwoGBS", "PerTwoGBLoS", "PerTwoGBHiS", "Majflt", "Pswpin"):
                m[f"Standby{word}{k}"] = "n/a"
    return m
