"""readyboost (seed 000): how long a working set takes to come back after memory hogs, with swap
on a 2008 laptop disk, behind a ReadyBoost-like flash cache (cold and warm), and on today's
alternatives (zswap, zram, this machine's own disk).

The seed's method, scaled: a memory cgroup plays the 3 GB of RAM; a `hog victim` working set
of a third of it is built; two hogs of two thirds of it each run side by side `hog_rounds`
times in the same cgroup and push the victim out (together they ask for more than the "RAM",
so the victim must go, as the seed's two 1 GB hogs did on a 3 GB machine whose system and
applications held the rest); the recovery time is the victim's re-touch of its whole
working set (random order, every page verified). Arms:
  hdd        swap on the emulated hdd5400-2008
  tier_cold  swap on tiered-readyboost (the disk behind a flash cache on the emulated USB
             stick), cache empty at the start, page-outs populate it (on-write)
  tier_warm  the same, starting from the cache state a previous run left (well pre-populated)
  zswap      swap on the emulated disk with zswap in front
  zram       swap on zram
  own        a swap file on this machine's disk
Times are also reported scaled to the seed's machine: recovery x (3 GiB / cgroup limit).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pagelab import counters, experiment, state, trials
from pagelab.devices import emulated_swap
from pagelab.stats import bootstrap_ci, ratio_ci
from pagelab.tools import tool_path
from pagelab.units import parse_size
from pagelab.victim import Victim

NAME = "readyboost"
SEED_RAM = 3 << 30
ARMS = ["hdd", "tier_cold", "tier_warm", "zswap", "zram", "own"]
REQUIRED_COLUMNS = ["result.recovery_s", "result.recovery_s_seed_scale", "result.majflt",
                    "result.counters.retouch.vmstat.pgmajfault"]
SCALARS = ["recovery_s", "recovery_s_seed_scale", "majflt", "minflt", "pswpin", "zswpin", "pswpout_hogs",
           "hog_s", "device_reads", "device_cache_hit_bytes", "device_read_bytes", "working_set", "ram"]


def configurations(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"arm": a} for a in cfg["arms"]]


def skip_reason(cfg: dict[str, Any]) -> str | None:
    if os.geteuid() != 0:
        return "skipped: needs root to swap on the emulated disk and make a memory cgroup"
    if any(a in cfg["arms"] for a in ("hdd", "tier_cold", "tier_warm", "zswap")) and not Path("/dev/fuse").exists():
        return "skipped: no /dev/fuse (FUSE is needed for the emulated disk)"
    if "zram" in cfg["arms"] and not Path("/sys/block/zram0").exists():
        return "skipped: no zram0 (modprobe zram, or drop the zram arm)"
    return None


def _hogs(cg: state.Cgroup, size: int, rounds: int) -> float:
    """Two hogs side by side in the cgroup, each `rounds` times; wall seconds."""
    import time

    cmd = [str(tool_path("hog")), "run", "--size", str(size), "--repeat", str(rounds), "--force",
           "--fill", "random", "--output-format", "json"]
    t0 = time.monotonic()
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              preexec_fn=cg.preexec()) for _ in range(2)]
    errs = [p.communicate(timeout=1800)[1] for p in procs]
    for p, err in zip(procs, errs, strict=True):
        if p.returncode != 0:
            raise trials.TrialFailed(f"hog exited {p.returncode}: {err.strip()}")
    return time.monotonic() - t0


def run_trial(st: state.State, cfg: dict[str, Any], trial: trials.Trial, scratch: Path) -> dict[str, Any]:
    arm = trial.params["arm"]
    ram = parse_size(cfg["ram"])
    third = ram // 3
    swap_size = 2 * ram
    work = scratch / f"{NAME}-{trial.trial_id}"
    work.mkdir(parents=True, exist_ok=True)
    disk = None
    with st.scope():
        if arm in ("hdd", "zswap"):
            disk = emulated_swap(st, cfg["disk_profile"], work / "dev", swap_size)
        elif arm in ("tier_cold", "tier_warm"):
            warm_state = scratch / f"{NAME}-tier.state" if arm == "tier_warm" else None
            disk = emulated_swap(st, cfg["tier_profile"], work / "dev", swap_size, cache_state=warm_state)
        elif arm == "zram":
            st.swapon(st.zram(swap_size, cfg["zram_algorithm"]))
        else:
            st.swap_file(work / "swapfile", swap_size)
        if arm == "zswap":
            st.set_knob("zswap.compressor", cfg["zswap_compressor"])
            st.set_knob("zswap.enabled", "Y")
        cg = st.cgroup(NAME, memory_limit=ram)
        extra = {"device": disk.flat_stats} if disk else {}
        c = counters.Counters(memcg=cg.path("memory"), zram=["zram0"] if arm == "zram" else [], extra=extra)
        with Victim(third, f"ratio:{cfg['fill_ratio']}", trial.seed, work / "victim", cg, order="random",
                    timeout=1800) as v:
            s0 = c.snapshot()
            hog_s = _hogs(cg, 2 * third, cfg["hog_rounds"])
            s1 = c.snapshot()
            rep = v.retouch()
            s2 = c.snapshot()
        d, hogs = c.delta(s1, s2), c.delta(s0, s1)
        recovery = rep["retouch"]["ns"] / 1e9
        dev = d.get("device", {})
        result = {
            "arm": arm, "ram": ram, "working_set": third, "command": v.command, "effective": dict(st.effective),
            "recovery_s": recovery, "recovery_s_seed_scale": recovery * SEED_RAM / ram,
            "majflt": rep["retouch"]["majflt"], "minflt": rep["retouch"]["minflt"],
            "pswpin": d["vmstat"].get("pswpin", 0), "zswpin": d["vmstat"].get("zswpin", 0),
            "pswpout_hogs": hogs["vmstat"].get("pswpout", 0), "hog_s": hog_s,
            "device_reads": dev.get("reads", float("nan")),
            "device_read_bytes": dev.get("read_bytes", float("nan")),
            "device_cache_hit_bytes": dev.get("cache_hit_bytes", float("nan")),
            "counters": {"hogs": hogs, "retouch": d},
        }
    experiment.clean_dir(work)
    return result


def run(cfg: dict[str, Any], outdir: Path, scratch_dir: Path) -> pd.DataFrame:
    warm = [{"arm": "tier_warm"}] if "tier_warm" in cfg["arms"] else [{"arm": cfg["arms"][0]}]
    try:
        return experiment.execute(
            NAME, cfg, outdir, scratch_dir, configurations(cfg), lambda c: c["arm"],
            lambda st, t, scratch: run_trial(st, cfg, t, scratch), lambda r: r["recovery_s"], SCALARS,
            tools=["hog", "simdisk"], skip_reason=skip_reason(cfg), warmups=warm)
    finally:
        (scratch_dir.resolve() / f"{NAME}-tier.state").unlink(missing_ok=True)


load = experiment.load


def summarise(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    rows = []
    for arm in [a for a in ARMS if a in set(frame["arm"])]:
        g = frame[frame["arm"] == arm]
        e = bootstrap_ci(g["recovery_s"], np.median, seed=seed)
        s = bootstrap_ci(g["recovery_s_seed_scale"], np.median, seed=seed)
        hit = g["device_cache_hit_bytes"] / g["device_read_bytes"]
        rows.append({"arm": arm, "n": e.n, "recovery_s": e.value, "lo": e.ci_low, "hi": e.ci_high,
                     "seed_scale_s": s.value, "seed_lo": s.ci_low, "seed_hi": s.ci_high,
                     "majflt": float(np.median(g["majflt"])), "pswpin": float(np.median(g["pswpin"])),
                     "hit_fraction": float(np.nanmedian(hit)) if hit.notna().any() else float("nan")})
    return pd.DataFrame(rows)


def ratios(frame: pd.DataFrame, seed: int = 0) -> dict[str, Any]:
    out = {}
    base = frame.loc[frame["arm"] == "hdd", "recovery_s"]
    for arm in ("tier_cold", "tier_warm", "zswap", "zram", "own"):
        g = frame.loc[frame["arm"] == arm, "recovery_s"]
        if len(base) and len(g):
            r = ratio_ci(g, base, seed=seed)
            out[f"{arm}_vs_hdd"] = {"value": r.value, "ci_low": r.ci_low, "ci_high": r.ci_high, "unit": "ratio",
                                    "n": r.n}
    return out


def measurements(summary: pd.DataFrame, rat: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for _, r in summary.iterrows():
        out[f"{NAME}.{r['arm']}.recovery_s"] = {"value": r["recovery_s"], "ci_low": r["lo"], "ci_high": r["hi"],
                                               "unit": "s", "n": int(r["n"])}
        out[f"{NAME}.{r['arm']}.recovery_s_seed_scale"] = {"value": r["seed_scale_s"], "ci_low": r["seed_lo"],
                                                          "ci_high": r["seed_hi"], "unit": "s", "n": int(r["n"])}
    for k, v in rat.items():
        out[f"{NAME}.ratio.{k}"] = v
    return out


def table(summary: pd.DataFrame) -> pd.DataFrame:
    from pagelab.latex import fmt

    return pd.DataFrame({
        "Arm": summary["arm"].str.replace("_", " "), "Trials": summary["n"].astype(int),
        "Recovery (s)": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                         zip(summary["recovery_s"], summary["lo"], summary["hi"], strict=True)],
        "Seed scale (s)": [f"{fmt(v)} [{fmt(a)}, {fmt(b)}]" for v, a, b in
                           zip(summary["seed_scale_s"], summary["seed_lo"], summary["seed_hi"], strict=True)],
        "Major faults": summary["majflt"].map(lambda v: f"{v:.0f}"),
        "Cache hit share": summary["hit_fraction"].map(lambda v: "--" if not np.isfinite(v) else fmt(v)),
    })


def macros(summary: pd.DataFrame, rat: dict[str, Any], cfg: dict[str, Any] | None, profile: str,
           skipped: str | None) -> dict[str, str]:
    from pagelab.latex import escape, fmt

    words = {"hdd": "Hdd", "tier_cold": "TierCold", "tier_warm": "TierWarm", "zswap": "Zswap", "zram": "Zram",
             "own": "Own"}
    m = {"ReadyboostProfile": profile, "ReadyboostStatus": escape(skipped or "ran")}
    if cfg:
        m["ReadyboostRamMiB"] = fmt(parse_size(cfg["ram"]) / 2**20)
        m["ReadyboostHogRounds"] = str(cfg["hog_rounds"])
    for arm, w in words.items():
        row = summary[summary["arm"] == arm] if len(summary) else summary
        m[f"Readyboost{w}S"] = fmt(row.iloc[0]["recovery_s"]) if len(row) else "n/a"
        m[f"Readyboost{w}SeedS"] = fmt(row.iloc[0]["seed_scale_s"]) if len(row) else "n/a"
    for arm in ("tier_cold", "tier_warm"):
        r = rat.get(f"{arm}_vs_hdd")
        m[f"Readyboost{words[arm]}Ratio"] = fmt(r["value"]) if r else "n/a"
    return m
